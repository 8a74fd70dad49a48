"""--check-method: complex-step and Richardson against closed forms, conventions, CLI and JSON."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import sympy as sp
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from test_ops import (  # SymPy closed forms of every op row
    WITH_COMPLEX_FORMS,
    X,
    Y,
    Z,
    _cases,
    _closed,
    _exact,
    _spelled,
)
from test_properties import (  # generated smooth expressions
    analytic_expressions,
    expressions,
    points,
)

import gradcli
from gradcli.cli import cli
from gradcli.engine.graph import Node, Program, backward, compute, forward
from gradcli.engine.ops import OPS
from gradcli.engine.replay import Replayer
from gradcli.gradcheck.check import METHODS, check_gradients

SEED = "(x*W+b-t)**2"
SEED_POINT = {"x": 2, "W": 3, "b": 1, "t": 8}
# Curvy: sin(10x) turns over on a scale of 0.1, so central differences' h^2 term shows.
CURVY = "sin(10*x)*exp(x**2)"
CURVY_POINTS = [-1.3, -0.45, 0.05, 0.2, 0.7, 1.1, 2.0]


def _relative_error(actual: float, expected: float) -> float:
    return abs(actual - expected) / abs(expected) if expected else abs(actual)


# --- complex step: exact to machine precision ------------------------------------------------

@pytest.mark.parametrize("name", WITH_COMPLEX_FORMS)
def test_complex_step_of_every_op_matches_the_closed_form_to_1e_13(name):
    # Every row of the table (a new op is picked up here), at points away from kinks where each
    # op is analytic; the whole check pipeline runs: replay with the complex column.
    closed = _closed(name)
    symbols = (X, Y, Z)[:OPS[name].arity]
    for point in _cases(name):
        values = dict(zip(("x", "y", "z"), point, strict=False))
        result = gradcli.evaluate(_spelled(name), values, check_method="complex")
        at = dict(zip(symbols, map(_exact, point), strict=False))
        for symbol in symbols:
            check = result.check.gradients[str(symbol)]
            expected = float(sp.N(sp.diff(closed, symbol).subs(at), 30))
            assert check.method == "complex" and check.ok, (name, point)
            if abs(expected) < 1e-200:  # Im f(x + ih) with h = 1e-100 |x| underflows (sech(705))
                continue
            assert _relative_error(check.numeric, expected) < 1e-13, (name, point, symbol)


def test_complex_step_is_exact_on_a_smooth_composite_where_central_is_not():
    text = "log(1 + x**2) * atan2(y, 2) + sqrt(hypot(x, y)) / cosh(x*y) - tan(x)**3"
    point = {"x": 0.6, "y": -1.7}
    x, y = sp.symbols("x y", real=True)
    closed = (sp.log(1 + x**2) * sp.atan2(y, 2) + sp.sqrt(sp.sqrt(x**2 + y**2)) / sp.cosh(x * y)
              - sp.tan(x) ** 3)
    at = {x: point["x"], y: point["y"]}
    exact = {"x": float(sp.N(sp.diff(closed, x).subs(at), 30)),
             "y": float(sp.N(sp.diff(closed, y).subs(at), 30))}
    complex_step = gradcli.evaluate(text, point, check_method="complex").check.gradients
    central = gradcli.evaluate(text, point).check.gradients
    for name, value in exact.items():
        assert _relative_error(complex_step[name].numeric, value) < 1e-14
        assert _relative_error(central[name].numeric, value) > 1e-12  # measured ~1e-11..1e-10


def test_complex_step_allows_tolerances_central_differences_cannot_meet():
    # No subtraction, no rounding noise: rtol 1e-12 with atol 0 passes on right gradients and
    # catches an error of one part in 1e9.
    result = gradcli.evaluate(CURVY, {"x": 0.7}, rtol=1e-12, atol=0.0, check_method="complex")
    assert result.check.ok
    result.program.variables["x"].grad *= 1.0 + 1e-9
    report = check_gradients(result.program, rtol=1e-12, atol=0.0, method="complex")
    assert not report.ok and not report.gradients["x"].ok


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(analytic_expressions, points)
def test_complex_step_equals_reverse_mode_on_generated_expressions(expression, point):
    text, _ = expression
    try:
        result = gradcli.evaluate(text, point, check_method="complex")
    except gradcli.NumericError:
        assume(False)  # a generated exp(exp(...)) overflows: a documented, named error
        return
    assume(abs(result.value) < 1e12)
    # Both sides carry a few ulps per op; where the gradient is a difference of larger terms the
    # ulps are those of the largest gradient in the graph, hence that scale in the absolute part.
    scale = max(abs(node.grad) for node in result.program.nodes)
    for name, check in result.check.gradients.items():
        assert check.method == "complex"
        assert math.isclose(check.numeric, check.analytic, rel_tol=1e-13, abs_tol=1e-13 * scale), (
            name, text, point, check)
    assert result.check.ok


def test_hypot_complex_step_does_not_overflow_where_hypot_does_not():
    check = gradcli.evaluate("hypot(x, 1)", {"x": 1e200}, check_method="complex").check
    assert check.gradients["x"].method == "complex" and check.gradients["x"].numeric == 1.0


def test_complex_overflow_falls_back_to_central_and_says_so():
    def overflowing(x: complex) -> complex:
        raise OverflowError

    # exp with a complex column that always overflows: the real evaluation is untouched.
    fragile = replace(OPS["exp"], name="fragile_exp", complex=overflowing)
    x = Node.variable("x", 0.5)
    program = Program.build("fragile_exp(x)", x.apply(fragile, x), [x], {})
    forward(program.nodes)
    backward(program.nodes)
    check = check_gradients(program, method="complex").gradients["x"]
    assert (check.method, check.ok) == ("central", True)
    assert check.numeric == pytest.approx(math.exp(0.5), rel=1e-9)


# --- kinks: complex step reproduces the documented conventions --------------------------------

@pytest.mark.parametrize(("text", "point", "expected"), [
    ("abs(x)", {"x": 0.0}, {"x": 0.0}),
    ("relu(x)", {"x": 0.0}, {"x": 0.0}),
    ("sign(x)", {"x": 0.0}, {"x": 0.0}),
    ("min(x, y)", {"x": 1.5, "y": 1.5}, {"x": 0.5, "y": 0.5}),
    ("max(x, y)", {"x": -2.0, "y": -2.0}, {"x": 0.5, "y": 0.5}),
    ("3*abs(x - 1) + relu(x - 1)", {"x": 1.0}, {"x": 0.0}),
])
def test_complex_step_at_a_kink_gives_the_convention(text, point, expected):
    result = gradcli.evaluate(text, point, check_method="complex")
    assert result.gradients == expected
    assert {name: c.numeric for name, c in result.check.gradients.items()} == expected
    assert result.check.ok


def test_at_a_kink_central_differences_disagree_and_complex_step_does_not():
    assert not gradcli.evaluate("relu(x)", {"x": 0.0}).check.ok  # central: 1/2
    assert gradcli.evaluate("relu(x)", {"x": 0.0}, check_method="complex").check.ok


# --- Richardson --------------------------------------------------------------------------------

def test_richardson_is_far_more_accurate_than_central_on_a_curvy_function():
    x = sp.Symbol("x")
    derivative = sp.diff(sp.sin(10 * x) * sp.exp(x**2), x)
    for value in CURVY_POINTS:
        exact = float(sp.N(derivative.subs(x, value), 30))
        central = gradcli.evaluate(CURVY, {"x": value}).check.gradients["x"]
        richardson = gradcli.evaluate(CURVY, {"x": value}, check_method="richardson")
        extrapolated = richardson.check.gradients["x"]
        # Measured: central 4.6e-10..3.8e-9 relative, Richardson 4e-16..1.9e-14.
        assert _relative_error(central.numeric, exact) > 1e-10, value
        assert _relative_error(extrapolated.numeric, exact) < 1e-12, value
        assert extrapolated.method == "richardson" and richardson.check.ok
        # The reported error estimate bounds the actual error (measured: 1.5 to 50 times over).
        assert abs(extrapolated.numeric - exact) <= extrapolated.error_estimate


def test_richardson_near_a_pole_starts_where_the_steps_make_sense():
    result = gradcli.evaluate("1/x", {"x": 0.001}, check_method="richardson")
    check = result.check.gradients["x"]
    assert check.method == "richardson" and check.ok
    assert _relative_error(check.numeric, -1e6) < 1e-12


def test_richardson_falls_back_to_central_at_the_edge_of_a_domain():
    # sqrt changes on a scale of 1e-7 here: no two halving steps from 1/8 stay in the domain.
    assert gradcli.evaluate("sqrt(x)", {"x": 1e-7}, check_method="richardson").check.ok
    edge = gradcli.evaluate("x + 0*sqrt(x)", {"x": 1e-7}, check_method="richardson")
    assert edge.check.gradients["x"].method == "forward" and edge.check.ok


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions, points)
def test_richardson_passes_on_generated_expressions(expression, point):
    # 800 generated examples passed when this was written; right gradients must never fail.
    try:
        result = gradcli.evaluate(expression[0], point, check_method="richardson")
    except gradcli.NumericError:
        assume(False)
        return
    assume(abs(result.value) < 1e12)
    assert result.check.ok, expression[0]


def test_richardson_catches_a_wrong_gradient():
    result = gradcli.evaluate(CURVY, {"x": 0.7}, check=False)
    result.program.variables["x"].grad += 1e-3
    assert not check_gradients(result.program, method="richardson").ok


# --- every verdict reports its method; errors stay named --------------------------------------

@pytest.mark.parametrize("method", METHODS)
def test_every_verdict_reports_the_method(method):
    result = gradcli.evaluate("u = x*W; z = u + b; err = z - t; err*err", SEED_POINT,
                              check_method=method)
    assert result.check.method == method and result.check.ok
    assert {c.method for c in result.check.checks} == {method}
    assert len(result.check.nodes) == 8


def test_the_default_method_is_central():
    assert gradcli.evaluate(SEED, SEED_POINT).check.method == "central"


def test_an_unknown_method_is_a_usage_error():
    with pytest.raises(gradcli.UsageError, match="unknown check method 'forward'"):
        gradcli.evaluate(SEED, SEED_POINT, check_method="forward")


def test_complex_evaluation_checks_the_domain_on_real_parts():
    # cmath.log(-1 + 1e-100j) is a fine complex number; gradcli must still refuse it.
    x = Node.variable("x")
    log = x.apply(OPS["log"], x)
    Program.build("log(x)", log, [x], {})
    with pytest.raises(gradcli.NumericError, match=r"logarithm of a non-positive.*x = -1"):
        compute(log, [complex(-1.0, 1e-100)], complex_step=True)
    with pytest.raises(gradcli.NumericError, match="division by zero"):
        compute(x.apply(OPS["div"], 1.0, x), [1 + 0j, complex(0.0, 1e-100)], complex_step=True)


# --- the command line ------------------------------------------------------------------------

def _run(*args: str):
    return CliRunner().invoke(cli, ["eval", *args])


@pytest.mark.parametrize("method", METHODS)
def test_json_reports_the_method(method):
    run = _run(SEED, "--x", "2", "--W", "3", "--b", "1", "--t", "8", "--json",
               "--check-method", method)
    assert run.exit_code == 0, run.output
    check = json.loads(run.output)["check"]
    assert check["method"] == method and check["ok"]
    assert {g["method"] for g in check["gradients"].values()} == {method}
    estimates = [g["error_estimate"] for g in check["gradients"].values()]
    assert all((e is not None) == (method == "richardson") for e in estimates)


def test_human_verdict_names_the_method():
    run = _run(CURVY, "--x", "0.7", "--check-method", "complex")
    assert run.exit_code == 0
    assert "6 gradients agree with complex-step derivatives" in run.output
    run = _run(CURVY, "--x", "0.7", "--check-method", "richardson")
    assert "agree with Richardson-extrapolated differences" in run.output


def test_numeric_errors_are_still_named_with_every_method():
    for method in METHODS:
        run = _run("sqrt(x)*log(x)", "--x", "0", "--check-method", method)
        assert run.exit_code == 3
        assert "logarithm of a non-positive number in #2 log(x), where x = 0" in run.output


def test_a_bad_method_is_a_usage_error_with_status_2():
    from gradcli.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "x", "--x", "1", "--check-method", "secant"])
    assert exit_info.value.code == 2


@pytest.mark.parametrize("method", ["complex", "richardson"])
def test_an_overflowing_estimate_never_passes(method, monkeypatch):
    """f(v + h) = 1.7e308 and f(v - h) = -1.7e308 (Im f = 1e308 for the complex step): every
    difference quotient overflows to inf, and inf <= inf once made that a pass, as in central."""
    import gradcli.gradcheck.check as check_module

    program = gradcli.parse("x*3")
    gradcli.evaluate(program, {"x": 1.0}, check=False)
    x = program.nodes[0]

    def overflowing(self, index, value, complex_step=False):
        if complex_step:
            return complex(0.0, 1e308), 1e308
        return (1.7e308 if value > x.value else -1.7e308), 1.7e308

    monkeypatch.setattr(Replayer, "replay", overflowing)
    verdict = check_module.check_node(Replayer(program.nodes), x, 1e-5, 1e-8, method)
    assert verdict.numeric is None or math.isfinite(verdict.numeric), verdict
    assert not verdict.ok


def test_complex_step_at_tiny_values():
    """Found by a helper: at log(x), x = 1e-120, the step 1e-100 was far larger than x (Im f / h
    = pi/2 / h, "next to a pole"), and x*y at 1e-300 underflowed Im f = h y to 0 ("a kink").
    The step is relative to |v| below 1 now, and an underflowed Im f that would fail is no
    estimate: the central check decides. d/dx log(x) = 1/x, d/dx x*y = y, by hand."""
    logged = gradcli.evaluate("log(x)", {"x": 1e-120}, check_method="complex").check
    assert logged.ok and logged.gradients["x"].method == "complex"
    assert logged.gradients["x"].numeric == pytest.approx(1e120, rel=1e-13)
    tiny = gradcli.evaluate("x*y", {"x": 1e-300, "y": 1e-300}, check_method="complex",
                            rtol=1e-12, atol=0).check
    assert tiny.ok and tiny.gradients["x"].method == "central"
    program = gradcli.parse("log(x)")
    gradcli.evaluate(program, {"x": 1e-120}, check=False)
    program.variables["x"].grad *= 1.0001  # 1e-4 off: the complex step at x's scale sees it
    wrong = check_gradients(program, method="complex")
    assert not wrong.gradients["x"].ok and wrong.gradients["x"].method == "complex"
