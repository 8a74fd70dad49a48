"""The central check's rounding allowance weighs each recomputed value's magnitude by how far it
moves the output (``replay.rounding_weight``, at most 1), so a large value that barely reaches
the output allows nothing. Before, exp(40) = 2.4e17 inside a sigmoid at x = -40 set an
allowance of 3.5e5, and any gradient below it passed; at x*y with x = y = 1e-300 the perturbed
x (6e-6) let any gradient below 3.5e-15 pass. Every path that checks by central differences
-- one node at a time, float columns, sweeps, array elements -- weighs the same way, and gives
a point the same verdict and tolerance."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcli
from gradcli.engine.replay import rounding_weight
from gradcli.gradcheck.check import check_gradients
from gradcli.gradcheck.float_columns import central_at_once
from gradcli.gradcheck.steps import CENTRAL, EPS, central_agrees, judge, quotient
from gradcli.gradcheck.sweep import check_variable, evaluate_sweep

SIGMOID = "1/(1 + exp(-x))"


def _sigmoid_slope(x: float) -> float:
    """d/dx 1/(1 + e^-x), written by hand: e^-x / (1 + e^-x)^2."""
    return math.exp(-x) / (1.0 + math.exp(-x)) ** 2


def _corrupted(text: str, values: dict, name: str, grad: float):
    result = gradcli.evaluate(text, values, check=False)
    result.program.variables[name].grad = grad
    return result.program


@pytest.mark.parametrize("wrong", [1e-6, 1e-3, 1.0, 1e5])
def test_a_wrong_gradient_next_to_a_huge_value_that_barely_reaches_the_output_fails(wrong):
    program = _corrupted(SIGMOID, {"x": -40.0}, "x", wrong)
    report = check_gradients(program)
    assert not report.ok
    check = report.gradients["x"]
    assert check.numeric == pytest.approx(_sigmoid_slope(-40.0), rel=1e-6)
    # atol + rtol |wrong| and a rounding allowance far below the error: the old one was 3.5e5
    assert check.tolerance < 1e-7 + 1e-3 * wrong


def test_the_right_gradient_there_passes_with_no_absolute_tolerance_at_all():
    result = gradcli.evaluate(SIGMOID, {"x": -40.0}, check=False)
    report = check_gradients(result.program, atol=0.0)
    assert report.ok
    check = report.gradients["x"]
    assert check.analytic == pytest.approx(_sigmoid_slope(-40.0), rel=1e-12)
    assert check.numeric == pytest.approx(_sigmoid_slope(-40.0), rel=1e-6)
    # and a gradient 1% off is told apart, 4e-20 away from the right one
    wrong = _corrupted(SIGMOID, {"x": -40.0}, "x", 1.01 * _sigmoid_slope(-40.0))
    assert not check_gradients(wrong, atol=0.0).ok


def test_a_perturbed_value_far_above_the_point_weighs_by_its_effect():
    # x*y at 1e-300: x +- 6e-6 is far larger than x, but moves the output by 6e-6 * y
    result = gradcli.evaluate("x*y", {"x": 1e-300, "y": 1e-300}, check=False)
    assert check_gradients(result.program, atol=0.0).ok
    wrong = _corrupted("x*y", {"x": 1e-300, "y": 1e-300}, "x", 1e-20)
    report = check_gradients(wrong, atol=0.0)
    assert not report.gradients["x"].ok
    assert report.gradients["y"].ok


def test_a_small_output_of_large_values_is_held_to_its_own_scale():
    # 1e-20 (x + 1e8): the sum is 1e8, but its rounding reaches the output times 1e-20
    text = "1e-20*(x + 1e8)"
    assert check_gradients(gradcli.evaluate(text, {"x": 0.5}, check=False).program,
                           atol=0.0).ok
    wrong = _corrupted(text, {"x": 0.5}, "x", 2e-20)
    assert not check_gradients(wrong, atol=0.0).ok


def test_rounding_of_a_value_that_reaches_the_output_is_still_allowed():
    # the noise of (x + 1e8) - 1e8 is real: its allowance stays (weight 1 on 1e8)
    assert gradcli.evaluate("(x + 1e8) - 1e8", {"x": 0.3}).check.ok
    assert gradcli.evaluate("(x + 1e12) - 1e12", {"x": 0.3}).check.ok
    assert gradcli.evaluate("exp(x)", {"x": 30.0}).check.ok


def test_the_weight_of_a_node():
    assert rounding_weight(-0.25) == 0.25
    assert rounding_weight(-2.5) == 1.0  # at most 1: never looser than the bare magnitude
    assert rounding_weight(np.array([[0.1, -0.3], [0.2, 0.05]])) == 0.3
    assert rounding_weight(np.array([[1.0, -3.0], [2.0, 0.5]])) == 1.0
    assert rounding_weight(math.inf) == 1.0  # not finite: the bare magnitude
    assert rounding_weight(math.nan) == 1.0
    assert rounding_weight(np.array([])) == 0.0


def test_float_columns_agree_with_the_one_at_a_time_check():
    result = gradcli.evaluate(SIGMOID, {"x": -40.0}, check=False)
    program = result.program
    one = check_gradients(program, atol=0.0).gradients["x"]
    settled = central_at_once(program, [program.variables["x"]], 1e-5, 0.0)
    assert settled[program.variables["x"].index].tolerance == one.tolerance
    program.variables["x"].grad = 1e-3
    assert central_at_once(program, [program.variables["x"]], 1e-5, 1e-8) == {}


def test_a_few_flagged_nodes_are_walked_as_the_columns_replay_them():
    """The kink screen's smaller pair (float_columns._smaller_gaps): a walk a node for a few
    (W3's one flagged node: 3 ms, against 40 ms for a replay of columns over 30,000 nodes)
    settles what the columns settle: x's curve at 0.001, not y's kink at 0."""
    from gradcli.engine.replay import Replayer

    program = gradcli.evaluate("1e6*x**2 + abs(y) + x*y", {"x": 0.001, "y": 0.0},
                               check=False).program
    targets = list(program.variables.values())
    columns = central_at_once(program, targets, 1e-5, 1e-8)
    walked = central_at_once(program, targets, 1e-5, 1e-8, replayer=Replayer(program.nodes))
    assert columns.keys() == walked.keys() == {program.variables["x"].index}


def test_a_sweep_weighs_as_a_single_point_does():
    program = gradcli.parse(SIGMOID)
    points = np.array([-40.0, -30.0, 0.5, 35.0])
    sweep = evaluate_sweep(program, {"x": points}, atol=0.0)
    assert sweep.check_ok.all()
    for k, x in enumerate(points.tolist()):
        single = gradcli.evaluate(SIGMOID, {"x": x}, check=False)
        scalar = check_gradients(single.program, atol=0.0).gradients["x"]
        assert sweep.checks["x"].tolerance[k] == pytest.approx(scalar.tolerance, rel=1e-9)
    sweep.gradients["x"] = np.full(points.size, 1e-3)  # wrong everywhere
    assert not check_variable(sweep, program.variables["x"], 1e-5, 1e-8).ok.any()


def test_array_elements_weigh_by_the_gradient():
    text = "sum(1/(1 + exp(-x)))"
    values = {"x": [-40.0, -38.0, -36.0]}
    result = gradcli.evaluate(text, values, check=False)
    report = check_gradients(result.program, atol=0.0)
    assert report.ok
    node = result.program.variables["x"]
    node.grad = np.array([1e-3, _sigmoid_slope(-38.0), _sigmoid_slope(-36.0)])
    report = check_gradients(result.program)
    assert not report.ok
    assert report.gradients["x"].where == (0,)


def test_the_allowance_is_the_rounding_a_difference_can_carry():
    # one node's allowance at the first step is 16 eps max |v| |df/dv| / h over the values a
    # replay recomputes: at x = 0 every node's df/dv is 1/4 (the output's 1), and the largest
    # product is 1 + exp(h) times 1/4, a little above the output's 1/(1 + exp(-h))
    result = gradcli.evaluate(SIGMOID, {"x": 0.0}, check=False)
    check = check_gradients(result.program, rtol=0.0, atol=0.0).gradients["x"]
    h = EPS ** (1 / 3)
    assert check.ok and check.step == h
    largest = max(0.25 * (1 + math.exp(h)), 1 / (1 + math.exp(-h)), 0.25 * h)
    assert largest == 0.25 * (1 + math.exp(h))
    assert check.tolerance == pytest.approx(16 * EPS * largest / h, rel=1e-12)


def _jacobian_check(text: str, point: dict, blocks=None, atol: float = 1e-8):
    from gradcli.gradcheck.jacobian_check import check_jacobian

    result = gradcli.evaluate(text, point)
    outputs = result.program.outputs
    return result, check_jacobian(result.program, outputs, list(result.values),
                                  blocks or result.jacobian, 1e-5, atol)


def test_a_jacobian_entry_weighs_as_the_gradient_of_its_output_does():
    text = "f = 1/(1 + exp(-x)); g = x*2; f, g"
    result, check = _jacobian_check(text, {"x": -40.0}, atol=0.0)
    assert check.ok
    entry = check.blocks["f"]["x"]
    alone = check_gradients(gradcli.evaluate(SIGMOID, {"x": -40.0}, check=False).program,
                            atol=0.0).gradients["x"]
    assert entry.tolerance == pytest.approx(alone.tolerance, rel=1e-9)
    wrong = {label: {name: np.asarray(block, dtype=float) for name, block in row.items()}
             for label, row in result.jacobian.items()}
    wrong["f"]["x"] = np.asarray(1e-3)  # before: within an allowance of 3.5e5
    _, check = _jacobian_check(text, {"x": -40.0}, wrong)
    assert not check.ok
    assert check.blocks["f"]["x"].failed == 1 and check.blocks["g"]["x"].failed == 0


def test_past_the_weighed_entries_a_jacobian_keeps_the_bare_magnitudes(monkeypatch):
    from gradcli.gradcheck import jacobian_check

    text = "f = 1/(1 + exp(-x)); g = x*2; f, g"
    _, weighed = _jacobian_check(text, {"x": -40.0})
    monkeypatch.setattr(jacobian_check, "_WEIGHED_ENTRIES", 1)
    _, bare = _jacobian_check(text, {"x": -40.0})
    assert bare.ok and weighed.ok
    assert bare.blocks["f"]["x"].tolerance > 1e5 > 1e-7 > weighed.blocks["f"]["x"].tolerance


def test_an_infinite_gradient_never_agrees():
    """Found by a review: an infinite analytic gradient made the allowance infinite, and the
    check passed it (max abs error inf)."""
    from gradcli.gradcheck.steps import judge

    for analytic in (math.inf, -math.inf):
        assert not judge(analytic, 1.0, 1.0, 1e-6, 0, 1e-5, 1e-8)[2]
    assert judge(1.0, 1.0 + 1e-9, 1.0, 1e-6, 0, 1e-5, 1e-8)[2]


@pytest.mark.parametrize(("text", "values", "unresolved"), [
    ("x**2 + 1e20", {"x": 1.0}, ["x"]),
    ("1e10 + x**2", {"x": 1.0}, ["x"]),
    # y's replays do not recompute x + 1e8: its gradient is resolved
    ("(x + 1e8) - 1e8 + y", {"x": 1.0, "y": 2.0}, ["x"]),
    ("x**2 + 3e5", {"x": 1.0}, []),  # one ulp of 3e5 over the step is below the tolerance
    ("(x*W+b-t)**2", {"x": 2.0, "W": 3.0, "b": 1.0, "t": 8.0}, []),
])
def test_a_gradient_swamped_by_rounding_is_said_unresolved(text, values, unresolved):
    """x**2 + 1e20 passed with a tolerance of 5.9e10 for a gradient of 2, saying nothing (a bug
    hunt): a wrong gradient would have passed as well. The verdict now names such gradients;
    none of W2's 34,900 checked gradients is one."""
    from click.testing import CliRunner

    from gradcli.cli import cli

    result = gradcli.evaluate(text, values)
    assert result.check.ok and result.check.unresolved == unresolved
    args = [text, *(item for name, v in values.items() for item in (f"--{name}", str(v)))]
    table = CliRunner().invoke(cli, ["eval", *args])
    assert ("not resolved for" in table.stdout) == bool(unresolved), table.stdout
    record = CliRunner().invoke(cli, ["eval", *args, "--json"]).stdout
    assert f'"unresolved":{json_list(unresolved)}' in record


def json_list(names: list[str]) -> str:
    return "[" + ",".join(f'"{name}"' for name in names) + "]"


_FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
_SIZES = st.floats(min_value=0.0, max_value=1e300, allow_nan=False)


@settings(max_examples=400, deadline=None)
@given(grad=_FLOATS, up=_FLOATS, down=_FLOATS, most=_FLOATS,
       h=st.floats(min_value=1e-300, max_value=1e10), rtol=_SIZES, atol=_SIZES)
def test_the_float_central_verdict_is_the_generic_one_bit_for_bit(grad, up, down, most, h,
                                                                   rtol, atol):
    """``central_agrees`` writes out ``quotient`` and ``judge`` on floats (compiled: no boxed
    numbers); it must give what they give, to the bit, or None exactly where they disagree."""
    numeric = quotient(CENTRAL, (up, down), h)
    expected = None
    if math.isfinite(most) and math.isfinite(numeric):
        error, allowed, agrees, _ = judge(grad, numeric, most, h, 0, rtol, atol)
        expected = (numeric, error, allowed) if agrees else None
    got = central_agrees(grad, up, down, most, h, rtol, atol)
    assert (got is None) == (expected is None)
    if got is not None:
        assert [x.hex() for x in got] == [x.hex() for x in expected]


def test_the_float_central_verdict_on_hand_made_numbers():
    """f(v + h) = 1.0 + 2e-3, f(v - h) = 1.0 - 2e-3 at h = 1e-3: a slope of 2 (by hand), so a
    gradient of 2 agrees, within atol + rtol * 2 + 16 eps * most / h, and 2.1 does not."""
    numeric, error, allowed = central_agrees(2.0, 1.002, 0.998, 1.0, 1e-3, 1e-5, 1e-8)
    assert numeric == pytest.approx(2.0, rel=1e-12)
    assert error == abs(2.0 - numeric)
    assert allowed == pytest.approx(1e-8 + 2e-5 + 16 * EPS / 1e-3, rel=1e-9)
    assert central_agrees(2.1, 1.002, 0.998, 1.0, 1e-3, 1e-5, 1e-8) is None
    assert central_agrees(2.0, 1.002, 0.998, math.inf, 1e-3, 1e-5, 1e-8) is None
