"""The check's pass over a large node in blocks (gradcheck/directions.py ``_scales``).

The scale max(1, |x_i|), max |x_i| and a matrix's directional dot products u^T ((s * g) v) (s
where an element is past ``UNSCALED_REACH``), made block by block of whole rows, are compared
with the same quantities formed whole by NumPy, at sizes that split into several blocks and a
last partial one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradcli
from gradcli.engine.replay import Scaled
from gradcli.gradcheck import directions
from gradcli.gradcheck.directions import BLOCK, DirectionReplayer
from gradcli.limits import ARRAY_CHECK_DIRECTIONS

RNG = np.random.default_rng(5)


def _aimed(text: str, values: dict[str, np.ndarray], name: str) -> DirectionReplayer:
    program = gradcli.evaluate(text, values, check=False).program
    replayer = DirectionReplayer(program.nodes)
    replayer.aim(program.variables[name])
    return replayer


def test_a_vectors_scale_and_reach_over_several_blocks():
    x = RNG.standard_normal(2 * BLOCK + 123) * 3
    replayer = _aimed("sum(x*x)", {"x": x}, "x")
    np.testing.assert_array_equal(replayer.scale, np.maximum(1.0, np.abs(x)) / 32768)
    assert replayer.reach == np.max(np.abs(x))


@pytest.mark.parametrize("largest", [1.0, 1e3])
@pytest.mark.parametrize("rows", [BLOCK // 300 + 1, 3 * (BLOCK // 300) + 7])
def test_a_matrixs_scale_reach_and_dots_over_several_blocks(rows, largest):
    """Within ``UNSCALED_REACH`` no scale (u v^T); past it s = max(1, |W|), made in blocks."""
    values = {"W": RNG.standard_normal((rows, 300)) * 2, "x": RNG.standard_normal(300)}
    values["W"][-1, -1] = largest
    replayer = _aimed("sum(tanh(W@x))", values, "W")
    node = replayer.target
    if largest > directions.UNSCALED_REACH:
        np.testing.assert_array_equal(replayer.scale, np.maximum(1.0, np.abs(values["W"])))
    else:
        assert replayer.scale is None
    assert replayer.reach == np.max(np.abs(values["W"]))
    assert len(replayer.dots) == ARRAY_CHECK_DIRECTIONS
    for k in range(ARRAY_CHECK_DIRECTIONS):
        v = replayer.draw(k)
        assert replayer.dot(v, node.grad) == pytest.approx(float(np.vdot(v.dense(), node.grad)),
                                                           rel=1e-12)


def test_a_direction_not_drawn_by_aim_is_dotted_formed():
    values = {"W": RNG.standard_normal((300, 300)), "x": RNG.standard_normal(300)}
    replayer = _aimed("sum(tanh(W@x))", values, "W")
    node = replayer.target
    u, v = RNG.standard_normal(300), RNG.standard_normal(300)
    expected = float(np.vdot(np.outer(u, v), node.grad))
    assert replayer.dot(Scaled(u, v), node.grad) == pytest.approx(expected, rel=1e-12)
    far = replayer.draw(ARRAY_CHECK_DIRECTIONS + 1)  # past aim's draws: drawn when asked
    expected = float(np.vdot(far.dense(), node.grad))
    assert replayer.dot(far, node.grad) == pytest.approx(expected, rel=1e-12)


def test_a_nan_in_a_later_block_is_the_reach():
    x = np.ones(3 * BLOCK)
    x[2 * BLOCK + 5] = math.nan
    assert math.isnan(directions._scales(x, 1.0, np.empty(x.size), None, [])[0])
