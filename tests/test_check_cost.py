"""What the array check allocates, draws and recomputes (issue 30: a check of a few evaluations).

A replay recomputes a node as the evaluation did but for the shape rule, which the evaluation
already passed (``arrays.recompute``): the values and the errors are compared with
``arrays.compute``'s. A direction's buffer for x + t v is made only where a replay reads the
moved node: W of W@x moves through the product alone. A small node's directions are drawn
together, distinct and repeatable, each element's magnitude in [0.5, 1) of its step scale.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradcli
from gradcli.engine.arrays import compute, raising, recompute
from gradcli.errors import NumericError
from gradcli.gradcheck.directions import DirectionReplayer, check_direction
from gradcli.limits import ARRAY_CHECK_DIRECTIONS

RNG = np.random.default_rng(31)
N = 300  # W of N x N: past COLUMN_MAX_ELEMENTS, its directions scaled
POINT = {"W": RNG.standard_normal((N, N)), "x": RNG.standard_normal(N),
         "b": RNG.standard_normal(N), "y": RNG.uniform(0.5, 2.0, 50)}
PROGRAMS = ["mean((W@x + b)**2)", "logsumexp(W@x) + sum(softmax(b)*b)",
            "sum(log(y)*sqrt(y)) + norm(W'@x) + max(b)"]


def _program(text: str, values: dict[str, np.ndarray] = POINT) -> gradcli.Program:
    return gradcli.evaluate(text, values, check=False).program


@pytest.mark.parametrize("text", PROGRAMS)
def test_a_replay_recomputes_every_node_as_the_evaluation_did(text):
    for node in _program(text).nodes:
        if node.inputs:
            args = [source.value for source in node.inputs]
            with raising():
                again = recompute(node, args)
            np.testing.assert_array_equal(again, compute(node, args))
            np.testing.assert_array_equal(again, node.value)


@pytest.mark.parametrize(("text", "values"), [
    ("sum(log(y))", {"y": np.array([1.0, -2.0, 3.0])}),  # a domain
    ("sum(exp(y))", {"y": np.array([1.0, 800.0])}),  # an overflow
    ("sum(y/(y - 1))", {"y": np.array([2.0, 1.0])}),  # a division by zero
])
def test_a_replays_errors_are_the_evaluations(text, values):
    with pytest.raises(NumericError) as evaluated:
        gradcli.evaluate(text, values, check=False)
    safe = {name: np.full_like(value, 0.5) for name, value in values.items()}
    program = _program(text, safe)
    program.variables["y"].value = values["y"]
    with pytest.raises(NumericError) as replayed, raising():  # in order, the replay's way
        for node in program.nodes:
            if node.inputs:
                node.value = recompute(node, [source.value for source in node.inputs])
    assert str(replayed.value) == str(evaluated.value)


@pytest.mark.filterwarnings("error")  # silently: NumPy's overflow warning is not printed
def test_a_move_that_overflows_is_a_value_that_is_not_finite():
    program = _program("sum(tanh(y + 1))", {"y": np.full(400, 1e300)})
    replayer = DirectionReplayer(program.nodes)
    replayer.aim(program.variables["y"])
    replayer.along(replayer.draw(0))
    output, largest = replayer.replay(replayer.target.index, 1e308)  # y + 1 moves past 1e308
    assert output == pytest.approx(400 * np.mean(np.sign(replayer.draw(0))), abs=1e-9)
    assert largest == np.inf


@pytest.mark.parametrize(("text", "reads"), [("mean((W@x + b)**2)", False),
                                              ("sum(sin(W)*W)", True)])
def test_a_directions_buffer_is_made_only_where_a_replay_reads_the_moved_node(text, reads):
    program = _program(text)
    node = program.variables["W"]
    replayer = DirectionReplayer(program.nodes)
    replayer.aim(node)
    for k in range(ARRAY_CHECK_DIRECTIONS):
        assert check_direction(replayer, node, replayer.draw(k), 1e-6, 1e-9, "central").ok
    assert (replayer.buffer is not None) == reads


def test_a_small_nodes_directions_are_distinct_repeatable_and_scaled():
    program = _program("mean((W@x + b)**2)")
    node = program.variables["x"]

    def drawn(count: int) -> list[np.ndarray]:
        replayer = DirectionReplayer(program.nodes)
        replayer.aim(node)
        return [replayer.draw(k) for k in range(count)]

    first, again = drawn(ARRAY_CHECK_DIRECTIONS), drawn(ARRAY_CHECK_DIRECTIONS + 2)
    for k, v in enumerate(first):
        np.testing.assert_array_equal(v, again[k])  # the same whatever is drawn after it
        magnitude = np.abs(v) / (np.maximum(1.0, np.abs(node.value)) / 32768) / 32768
        assert magnitude.min() >= 0.5 and magnitude.max() < 1.0
    for a in range(len(again)):
        for b in range(a):
            assert not np.array_equal(np.sign(again[a]), np.sign(again[b]))
