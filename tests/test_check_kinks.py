"""The check's kink screen (gradcheck/steps.py: ``curved``, ``kink``): a central difference
averages the two sides' slopes, so where the rule takes their mean (abs(x) at 0: -1 and 1, the
rule's 0) it agreed and the check called a point without a derivative "checked" (found by an
audit), while relu(x) at 0 failed. Every path screens its agreements: the float replays, the
NumPy columns, array elements, Hessians, Jacobians and sweeps. Smooth functions at stationary
points and kinks a step away still pass."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli


def _eval(*args: str):
    return CliRunner().invoke(cli, ["eval", *args])


@pytest.mark.parametrize(("text", "values", "sides"), [
    ("abs(x)", {"x": 0.0}, (-1.0, 1.0)),
    ("abs(x) + 5*x", {"x": 0.0}, (4.0, 6.0)),
    ("max(x, y)", {"x": 1.0, "y": 1.0}, (0.0, 1.0)),
    ("abs(x)*y", {"x": 0.0, "y": 2.0}, (-2.0, 2.0)),
    ("abs(sin(x))", {"x": 0.0}, (-1.0, 1.0)),
    # a jump small against the slopes, still larger than the tolerance (missed before: the
    # screen wanted a jump of 1e-3 of the slopes)
    ("2000*x + abs(x)", {"x": 0.0}, (1999.0, 2001.0)),
    ("abs(x) + 1e4*x", {"x": 0.0}, (9999.0, 10001.0)),
    ("max(x, 0) + 500*x", {"x": 0.0}, (500.0, 501.0)),
])
def test_a_kink_whose_rule_takes_the_slopes_mean_fails_with_a_side_s_slope(text, values, sides):
    result = gradcli.evaluate(text, values)
    check = result.check.gradients["x"]
    assert not result.check.ok and not check.ok and check.method == "one-sided"
    assert min(abs(check.numeric - side) for side in sides) < 1e-6  # a side's slope, by hand


@pytest.mark.parametrize(("text", "values"), [
    ("x**2", {"x": 0.0}), ("cos(x)", {"x": 0.0}), ("x**3", {"x": 0.0}),
    ("abs(x - 1e-9)", {"x": 0.0}), ("abs(x)", {"x": 1e-7}), ("sin(1000*x)", {"x": 0.3}),
    ("exp(-x**2)*1e6", {"x": 0.0}), ("abs(x)**3", {"x": 0.0}), ("x*abs(x)", {"x": 0.0}),
    # features smaller than the first step (a review found them failed as kinks)
    ("cos(1e7*x)", {"x": 0.0}), ("hypot(z, y)", {"y": 0.0, "z": 1e-8}),
    ("softplus(1e8*x)", {"x": 0.0}), ("x*tanh(1e7*x)", {"x": 0.0}),
])
def test_smooth_points_and_kinks_a_step_away_still_pass(text, values):
    assert gradcli.evaluate(text, values).check.ok, text


@pytest.mark.parametrize("text", ["abs(x) + 1.6e6*x**2", "1.194e+06*x**2 + min(x, 0)",
                                  "abs(x) - 3e6*x**2"])
def test_a_kink_beside_a_strong_curve_still_fails(text):
    """The curve's part of the one-sided slopes' gap shrinks with the step, the kink's does
    not: the first smaller pair tells them apart by taking the curve's part out (a review
    found these passed when the pair's gap was only compared with the central one's)."""
    result = gradcli.evaluate(text, {"x": 0.0})
    assert not result.check.ok and result.check.gradients["x"].method == "one-sided"
    assert _eval(text.replace("x", "x[0]").replace("x[0]**2", "x[0]**2 + sum(x)*0"),
                 "--x", "[0, 0]").exit_code == 1
    # the Hessian's gradient 2|x| + 2.8e6*x**2: a kink of jump 4 beside its curve
    assert _eval("9.237e+05*x**3 + x*abs(x)", "--x", "0", "--hessian").exit_code == 1
    swept = _eval(text, "--x", "-1,0,1", "--csv")
    assert [line.split(",")[-2] for line in swept.stdout.splitlines()[1:]] == [
        "true", "false", "true"]


@pytest.mark.parametrize(("text", "values", "sides"), [
    # a lasso objective at 0: its curve (c = 9e4) makes the first jumps shrink tenfold
    ("0.01*abs(w) + (300*w - 1)**2", {"w": 0.0}, (-600.01, -599.99)),
    ("abs(w) + 1e7*w**2", {"w": 0.0}, (-1.0, 1.0)),
    # a value of 1e5: the smallest step's rounding hides the jump of 2, the one before not
    ("abs(w) + 1e5", {"w": 0.0}, (-1.0, 1.0)),
    ("1000*abs(w) + 1e8", {"w": 0.0}, (-1000.0, 1000.0)),
])
def test_a_kink_beside_a_steep_curve_or_a_large_value_fails(text, values, sides):
    """Both passed as "✓" (a bug hunt): each pair of smaller steps now estimates the jump with
    the curve's part taken out, and the estimates are read down to the smallest step whose
    rounding leaves them readable. The sides by hand."""
    result = gradcli.evaluate(text, values)
    check = result.check.gradients["w"]
    assert not result.check.ok and check.method == "one-sided"
    assert min(abs(check.numeric - side) for side in sides) < 2e-2 * max(map(abs, sides))
    swept = _eval(text, "--w", "-1,0,1", "--csv")
    assert [line.split(",")[-2] for line in swept.stdout.splitlines()[1:]] == [
        "true", "false", "true"]


def test_a_kink_inside_the_tolerance_passes_as_both_sides_agree():
    """Both one-sided slopes within the tolerance of the gradient: the check's claim holds on
    either side (1e6*x + abs(x): 999,999 and 1,000,001, rtol 1e-5 allows 10)."""
    assert gradcli.evaluate("1e6*x + abs(x)", {"x": 0.0}).check.ok
    assert not gradcli.evaluate("1e6*x + abs(x)", {"x": 0.0}, rtol=1e-7).check.ok
    # a jump of 1.4e-8: each side 6.8e-9 from the rule's 0, inside atol (1e-8)
    assert gradcli.evaluate("6.8e-09*abs(x + 2)", {"x": -2.0}).check.ok
    assert not gradcli.evaluate("3e-08*abs(x + 2)", {"x": -2.0}).check.ok


def test_every_path_screens_its_agreements():
    """Arrays (element columns), Hessians (scalar and array), a Jacobian, a sweep's CSV."""
    assert _eval("abs(x)", "--x", "0").exit_code == 1
    vector = _eval("sum(abs(x))", "--x", "[0, 1]", "--json")
    assert vector.exit_code == 1
    assert json.loads(vector.stdout)["check"]["gradients"]["x"]["where"] == [0]
    assert _eval("x*abs(x)", "--x", "0", "--hessian").exit_code == 1  # 2|x|'s kink
    assert _eval("sum(x*abs(x))", "--x", "[0, 1]", "--hessian").exit_code == 1
    assert _eval("sum(2000*x + abs(x))", "--x", "[0, 1]").exit_code == 1  # a small jump too
    jacobian = _eval("f = x*y; g = abs(x); f, g", "--x", "0", "--y", "1", "--json")
    assert jacobian.exit_code == 1, jacobian.output
    swept = _eval("abs(x)*y", "--x", "-1:1:3", "--y", "1", "--csv")
    assert [line.split(",")[-2] for line in swept.stdout.splitlines()[1:]] == [
        "true", "false", "true"]
    assert _eval("abs(x)*y", "--x", "-1:1:2", "--y", "1", "--csv").exit_code == 0
