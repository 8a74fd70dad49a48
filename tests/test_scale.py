"""Large programs stay right: values and gradients of wide, deep and vectorised cases against
answers computed independently (dual numbers, closed forms). Nothing here is timed."""

from __future__ import annotations

import math
import random

import pytest

import gradcli
from gradcli.engine.replay import Replayer
from gradcli.engine.vector import evaluate_vector
from gradcli.gradcheck.check import check_node

np = pytest.importorskip("numpy")


def _wide(statements: int, variables: int, seed: int = 6):
    """A wide program and its value and gradient by forward-mode dual numbers (NumPy vectors:
    one derivative per variable), built from the same random choices -- not from the text."""
    rng = random.Random(seed)
    names = [f"x{i}" for i in range(variables)]
    point = {name: 0.5 + (i % 7) * 0.1 for i, name in enumerate(names)}
    duals = {name: (point[name], np.eye(variables)[i]) for i, name in enumerate(names)}
    lines, temps = [], []
    for k in range(statements):
        pool = names + temps[-8:]
        a, b, c, d = (rng.choice(pool) for _ in range(4))
        lines.append(f"t{k} = {a}*{b}/(1 + {c}*{c}) - {d}*0.25")
        (va, ga), (vb, gb), (vc, gc), (vd, gd) = (duals[n] for n in (a, b, c, d))
        q = 1.0 + vc * vc
        value = va * vb / q - vd * 0.25
        grad = (ga * vb + va * gb) / q - va * vb * 2.0 * vc * gc / (q * q) - 0.25 * gd
        duals[f"t{k}"] = (value, grad)
        temps.append(f"t{k}")
    terms = names + temps
    lines.append(" + ".join(terms))
    value = math.fsum(duals[t][0] for t in terms)
    gradient = sum(duals[t][1] for t in terms)
    return "\n".join(lines), point, value, dict(zip(names, gradient, strict=True))


def test_wide_program_values_gradients_and_check():
    text, point, value, gradient = _wide(3_000, 40)
    result = gradcli.evaluate(text, point)
    assert len(result.program.nodes) > 20_000
    assert result.value == pytest.approx(value, rel=1e-12)
    for name, expected in gradient.items():
        assert result.gradients[name] == pytest.approx(expected, rel=1e-10, abs=1e-12), name
    assert result.check.ok and result.check.nodes_skipped
    # The vectorised pass decided these; the scalar check agrees with each of them.
    nodes = result.program.nodes
    for name in ("x0", "x17", "x39"):
        scalar = check_node(Replayer(nodes), result.program.variables[name], 1e-5, 1e-8)
        got = result.check.gradients[name]
        assert got.ok and scalar.ok
        assert got.numeric == pytest.approx(scalar.numeric, rel=1e-12)


@pytest.mark.parametrize("levels", [1_000, 100_000])
def test_deep_nesting_value_and_gradient(levels):
    """(0.5*(1 - (0.5*(1 - ... x ...)))): value and derivative unrolled from the inside out."""
    opening = "".join("(0.5*" if k % 2 == 0 else "(1 - " for k in range(levels))
    text = opening + "x" + ")" * levels
    value, derivative = 0.3, 1.0
    for k in reversed(range(levels)):
        if k % 2 == 0:
            value, derivative = 0.5 * value, 0.5 * derivative
        else:
            value, derivative = 1.0 - value, -derivative
    result = gradcli.evaluate(text, {"x": 0.3}, check=levels <= 1_000)
    assert result.value == pytest.approx(value, rel=1e-12)
    assert result.gradients["x"] == pytest.approx(derivative, rel=1e-12, abs=1e-300)
    if result.check is not None:
        assert result.check.ok


def test_sweep_formula_against_its_hand_written_gradient():
    program = gradcli.parse("sin(x)*exp(-y**2) + log(1+x**2*y**2)")
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-3, 3, 100_000), rng.uniform(-3, 3, 100_000)
    run = evaluate_vector(program, {"x": x, "y": y})
    q = 1.0 + x * x * y * y
    expected_value = np.sin(x) * np.exp(-y * y) + np.log(q)
    dx = np.cos(x) * np.exp(-y * y) + 2.0 * x * y * y / q
    dy = -2.0 * y * np.sin(x) * np.exp(-y * y) + 2.0 * x * x * y / q
    assert not run.failed.any()
    np.testing.assert_allclose(run.output, expected_value, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(run.grads[program.variables["x"].index], dx, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(run.grads[program.variables["y"].index], dy, rtol=1e-12, atol=1e-14)


def test_uniform_columns_and_constants_broadcast_to_every_point():
    program = gradcli.parse("x*y + 2**3 + y")
    run = evaluate_vector(program, {"x": np.array([1.0, 2.0, 3.0]), "y": 4.0}, every_node=True)
    assert run.output.tolist() == [16.0, 20.0, 24.0]
    assert run.grads[program.variables["y"].index].tolist() == [2.0, 3.0, 4.0]
    assert run.grads[program.variables["x"].index].tolist() == [4.0, 4.0, 4.0]
    assert all(value.shape == (3,) for value in run.values)


def test_a_non_finite_gradient_at_one_point_marks_that_point():
    program = gradcli.parse("sqrt(x) + 0*y")
    run = evaluate_vector(program, {"x": np.array([4.0, 0.0, 1.0]), "y": 1.0})
    assert run.failed.tolist() == [False, True, False]


def test_non_finite_inputs_and_silent_float_overflow_still_mark_points():
    """Floating-point flags find most non-finite values; what raises none is still caught: a
    non-finite input (inf + 1 raises nothing) and Python-float constants (1e308 * 10)."""
    program = gradcli.parse("x + 1")
    run = evaluate_vector(program, {"x": np.array([1.0, np.inf, 2.0])})
    assert run.failed.tolist() == [False, True, False]
    program = gradcli.parse("x + 1e308*10")
    run = evaluate_vector(program, {"x": np.array([1.0, 2.0])})
    assert run.failed.tolist() == [True, True]
    program = gradcli.parse("exp(x)*y")
    run = evaluate_vector(program, {"x": np.array([1.0, 800.0]), "y": np.array([2.0, 0.0])})
    assert run.failed.tolist() == [False, True]  # exp(800) overflows although the product is 0
