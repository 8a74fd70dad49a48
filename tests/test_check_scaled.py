"""A large matrix's random directions u v^T and (u v^T) * s (replay.Scaled, directions.py).

The matrix product's scaled form and the directional dot product are compared with the same
matrix formed and multiplied by NumPy; the check along such directions passes right gradients
(HIPS autograd's, an oracle independent of gradcli's rules) and fails a wrong VJP rule swapped
into the op table, naming the element it broke, through the product's scaled form and through
a direction formed whole (an op that is not linear reads the matrix).
"""

from __future__ import annotations

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import gradcli
from gradcli.engine.ops import OPS
from gradcli.engine.replay import Scaled
from gradcli.gradcheck.columns import COLUMN_MAX_ELEMENTS
from gradcli.gradcheck.directions import UNSCALED_REACH, DirectionReplayer
from gradcli.limits import ARRAY_CHECK_DIRECTIONS

N = 300  # N * N elements: past COLUMN_MAX_ELEMENTS, so W's directions are scaled
RNG = np.random.default_rng(12)
POINT = {"W": RNG.standard_normal((N, N)), "x": RNG.standard_normal(N),
         "X": RNG.standard_normal((N, 4)), "b": RNG.standard_normal(N)}
ORACLES = {
    "mean((W@x + b)**2)": lambda m, x, xx, b: anp.mean((anp.dot(m, x) + b) ** 2),
    "sum(tanh(x@W))": lambda m, x, xx, b: anp.sum(anp.tanh(anp.dot(x, m))),
    "sum(sin(W@X))": lambda m, x, xx, b: anp.sum(anp.sin(anp.dot(m, xx))),
    "sum(cos(W'@x))": lambda m, x, xx, b: anp.sum(anp.cos(anp.dot(m.T, x))),
    "sum(sin(W)*W)": lambda m, x, xx, b: anp.sum(anp.sin(m) * m),
}


def test_the_matrix_is_large_enough_to_be_scaled():
    assert N * N > COLUMN_MAX_ELEMENTS


@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("other", [(7,), (7, 3)])
def test_the_products_scaled_form_is_the_product_with_the_matrix_formed(other, scaled):
    rng = np.random.default_rng(3)
    u, v, s = rng.standard_normal(5), rng.standard_normal(7), rng.uniform(1, 2, (5, 7))
    s = s if scaled else None
    direction = Scaled(u, v, s)
    dense = np.outer(u, v) * (1.0 if s is None else s)
    np.testing.assert_allclose(direction.dense(), dense, rtol=1e-15)
    scaled_form = OPS["matmul"].scaled
    b = rng.standard_normal(other)
    np.testing.assert_allclose(scaled_form(np, 0, u, v, s, dense, b), dense @ b, rtol=1e-12)
    a = rng.standard_normal(5) if len(other) == 1 else rng.standard_normal((3, 5))
    np.testing.assert_allclose(scaled_form(np, 1, u, v, s, a, dense), a @ dense, rtol=1e-12)


@pytest.mark.parametrize("spread", [1.0, 10.0, 1e6])
def test_a_scaled_directions_moves_and_dot_product(spread):
    """Each element moves at most its own step scale max(1, |w|) and at least a sixteenth of it
    along u v^T (|W| <= ``UNSCALED_REACH``), or about it along (u v^T) * s (one element a
    million times the rest); the dot product with the gradient is the formed direction's."""
    point = {**POINT, "W": POINT["W"].copy()}
    point["W"][7, 11] *= spread
    program = gradcli.evaluate("mean((W@x + b)**2)", point, check=False).program
    node = program.variables["W"]
    replayer = DirectionReplayer(program.nodes)
    replayer.aim(node)
    own = np.maximum(1.0, np.abs(node.value))
    unscaled = own.max() <= UNSCALED_REACH
    for k in range(3):
        direction = replayer.draw(k)
        assert isinstance(direction, Scaled) and (direction.s is None) == unscaled
        magnitude = np.abs(direction.dense()) / own
        assert magnitude.min() >= 0.25 / (own.max() if unscaled else 1.0)
        assert magnitude.max() < 1.0
        assert replayer.dot(direction, node.grad) == pytest.approx(
            float(np.vdot(direction.dense(), node.grad)), rel=1e-12)


@pytest.mark.parametrize("spread", [1.0, 10.0, 1e4])
@pytest.mark.parametrize("text", ORACLES)
def test_scaled_directions_pass_right_gradients(text, spread):
    """At a point with |W| <= 4.3, with one element 8.7 (both along u v^T) and with one 8,706
    (along (u v^T) * s)."""
    point = {**POINT, "W": POINT["W"].copy()}
    point["W"][7, 11] *= spread
    result = gradcli.evaluate(text, point)
    expected = autograd.grad(ORACLES[text])(*(point[n] for n in ("W", "x", "X", "b")))
    np.testing.assert_allclose(result.gradients["W"], expected, rtol=1e-9, atol=1e-12)
    check = result.check.gradients["W"]
    assert result.check.ok and check.directions == ARRAY_CHECK_DIRECTIONS


def _with_wrong_rule(name: str, at: tuple[int, int], text: str) -> gradcli.Result:
    """``text`` evaluated with the first VJP rule of ``name`` off by 0.5 at element ``at`` of
    its result (the row swapped in place, and back)."""
    row = OPS[name]
    right = row.rules

    def wrong(xp, g, out, *operands):
        part = np.array(right[0](xp, g, out, *operands), dtype=float)
        part[at] += 0.5
        return part

    object.__setattr__(row, "rules", (wrong, *right[1:]))
    try:
        return gradcli.evaluate(text, POINT)
    finally:
        object.__setattr__(row, "rules", right)


# the rule's error at w = W[at] becomes this error of W's gradient (the chain rule by hand)
WRONG = [("matmul", "mean((W@x + b)**2)", lambda w: 0.5),
         ("sum", "sum(sin(W)*W)", lambda w: 0.5 * abs(np.cos(w) * w + np.sin(w)))]


@pytest.mark.parametrize(("name", "text", "error"), WRONG)
@pytest.mark.parametrize("at", [(123, 45), (0, N - 1)])
def test_a_wrong_element_is_found_along_scaled_directions(name, text, error, at):
    result = _with_wrong_rule(name, at, text)
    check = result.check.gradients["W"]
    assert not result.check.ok and not check.ok
    assert check.where == at and check.failed >= 1 and check.directions >= 1
    assert check.abs_error == pytest.approx(error(POINT["W"][at]), rel=1e-4)


def test_a_large_vector_in_a_product_is_not_checked_in_columns():
    """Only a large matrix's rank-one directions join the column replay: a large vector's
    would be formed whole, one per column (x + h v for every direction and sign)."""
    import tracemalloc

    n = 200_000
    rng = np.random.default_rng(1)
    values = {"a": rng.standard_normal(n), "x": rng.standard_normal(n)}
    gradcli.evaluate("tanh(a@x / 1000)", values, check=False)
    tracemalloc.start()
    try:
        result = gradcli.evaluate("tanh(a@x / 1000)", values)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.check.ok
    assert peak < 8 * (8 * n)  # 4.6 vectors' worth; in columns it was 19
