"""Every row of the op table against mpmath, as benchmarks/accuracy.py measures it: value,
gradient and Hessian the way ``eval`` computes them, a sample of each row's grid per run (the
whole grid is the benchmark's; ``GRADCLI_ACCURACY_SEED`` picks another sample), within the
bounds of issue 28: value and first derivatives within 4 ulps times max(1, condition number),
second derivatives within 1e-13 relatively times the same. Then the issue's own cases, one by one.

A row that cannot meet a bound everywhere is listed in ``RELAXED`` with its factor and the
reason, the same as docs/accuracy.md says; nothing else is widened.
"""

from __future__ import annotations

import importlib.util
import math
import os
import random
import sys
from pathlib import Path

import mpmath
import pytest

import gradcli
from gradcli.engine.graph import forward
from gradcli.engine.ops import ROWS
from gradcli.errors import NumericError

ROOT = Path(__file__).resolve().parent.parent


def _benchmark():
    spec = importlib.util.spec_from_file_location("accuracy", ROOT / "benchmarks" / "accuracy.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["accuracy"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


accuracy = _benchmark()
accuracy.MAX_DPS = 200  # a reference that needs more is left out (the benchmark goes to 400)
SEED = os.environ.get("GRADCLI_ACCURACY_SEED", "28")
SAMPLE = 5  # grid points a row (besides its ``pairs``, which are always measured)
RANDOM = 2

# (case, order) -> (factor on the bound, why). Orders: 0 value, 1 gradient, 2 Hessian. Each
# is in docs/accuracy.md too; an infinite factor is a region where gradcli's numbers are known
# to be wrong (a formula that cancels), which that page names.
BESSEL = ("the Hessian differentiates the slope as written, (I_n-1 + I_n+1)/2 - I_n, whose "
          "terms' slopes cancel: about |x| ulps lost (1e-12 relatively at |x| = 1e4, 6e-11 at "
          "1e6), beyond which it is a numeric error")
RELAXED: dict[tuple[str, int], tuple[float, str]] = {
    **{(text, 2): (1e3, BESSEL) for text in ("i0e(x)", "i1e(x)", "ive(2, x)", "ive(5, x)",
                                                "ive(12, x)", "ive(28, x)")},
    ("atanh(x)", 2): (math.inf, "near 0 the gradient of its slope's (1 - x)(1 + x) is "
                                "(1 - x) - (1 + x): no digits left below |x| = 1e-16"),
    **{(f"ive({n}, x)", 0): (1.5, "the power series' rounding: up to 4.1 ulps (bound 4)")
       for n in (2, 5, 12, 28)},
    ("dsinc(x)", 1): (2.0, "-pi**2 sinc(x) - 2 dsinc(x)/x loses a digit near 0"),
    ("dsinc(x)", 2): (math.inf, "near 0 the terms of order 1/x cancel (its summary says so)"),
    ("hypot(x, y)", 2): (math.inf, "1/h - x**2/h**3 as written: no digits left where one "
                                   "operand is 1e8 times the other"),
    ("mish(x)", 2): (1e9, "1 - tanh(softplus(x))**2 cancels in the Hessian for x > 5"),
    ("mish(x)", 1): (1.2, "1 - tanh(softplus(x))**2 near x = 9: up to 1.1 times the bound"),
    ("sigmoid(x)", 2): (math.inf, "the Hessian differentiates s (1 - s): s' (1 - s) - s s' "
                                  "cancels near 0, about 1e-16/|x| relatively"),
    ("sinc(x)", 1): (1.5, "at |x| = 0.1 (the switch to the series): 5 ulps"),
    ("dsinc(x)", 0): (1.5, "at |x| = 0.1 (the switch to the series): 5 ulps"),
    ("gamma(x)", 2): (2.5, "subnormal second derivatives near x = -180"),
    ("beta(a, b)", 2): (math.inf, "psi(b) - psi(a + b) as a difference of floats in the "
                                  "Hessian: wrong where a << b or both are small"),
    ("lbeta(a, b)", 2): (math.inf, "psi(b) - psi(a + b) as a difference of floats in the "
                                   "Hessian: wrong where a << b or both are small"),
}
# Cases that refuse finite answers somewhere (a numeric error, never a wrong number), and where.
REFUSING = {text: "both derivatives past |x| = 1e6 (BESSEL)" for text in (
    "i0e(x)", "i1e(x)", "ive(2, x)", "ive(5, x)", "ive(12, x)", "ive(28, x)")}
REFUSING["atan2(y, x)"] = "the Hessian where x**2 + y**2 overflows or underflows"


def _sample(case) -> list[tuple]:
    """SAMPLE points of the grid and RANDOM random ones (the rows' ``pairs``, slow references
    far out, are the benchmark's; the cases of the issue among them are tested below)."""
    rng = random.Random(f"{SEED}:{case.text}")
    grid = accuracy.points(case, rng, 0, grid=True)
    grid = [point for point in grid if point not in _pairs(case)]
    return rng.sample(grid, min(len(grid), SAMPLE)) + accuracy.points(case, rng, RANDOM, False)


def _pairs(case) -> list[tuple]:
    return [tuple(v for f, v in zip(case.fixed, pair, strict=True) if f is None)
            for pair in case.reference.pairs
            if all(f is None or f == v for f, v in zip(case.fixed, pair, strict=True))]


def test_every_row_of_the_op_table_has_a_reference():
    assert set(accuracy.REFERENCES) == {op.name for op in ROWS if not op.is_array}


@pytest.mark.parametrize("case", accuracy.cases(), ids=lambda case: case.text)
def test_every_row_is_within_the_bound(case):
    tallies = accuracy.measure(case, _sample(case))
    for order, tally in enumerate(tallies):
        factor = RELAXED.get((case.text, order), (1.0, ""))[0]
        worst = max(tally.ratios, default=0.0)
        assert worst <= factor, "\n".join(tally.failures)
        assert case.text in REFUSING or not tally.missed, "\n".join(tally.failures)


def test_relaxations_name_cases_that_exist():
    texts = {case.text for case in accuracy.cases()}
    assert {text for text, _ in RELAXED} <= texts
    assert set(REFUSING) <= texts


# --- the table, case by case -----------------------------------------------------------

mpmath.mp.dps = 50


def _close(got: float, true, rel: float) -> None:
    """Within ``rel`` relatively, or within the smallest subnormal (an answer that underflows)."""
    slack = max(rel * abs(true), mpmath.mpf(5e-324))
    assert abs(mpmath.mpf(got) - true) <= slack, (got, mpmath.nstr(true, 17))


def _value(text: str, **point: float) -> float:
    """The value as eval's forward pass computes it (even where the gradient overflows)."""
    program = gradcli.parse(text)
    program.bind(point)
    return forward(program.nodes)


def _at(text: str, **point: float):
    return gradcli.evaluate(text, point, check=False, order=2)


@pytest.mark.parametrize(("n", "x"), [(4, -100.5), (10, -100.5), (20, -2.5), (3, -2.5)])
def test_polygamma_reflection_is_exact_at_half_integers(n, x):
    """cot(pi x) is 0 there: 1/tan(pi/2) was 6e-17, which the cotangent's n-th derivative
    multiplied into 6e-06 where the answer is -3e-15 (n = 10)."""
    _close(_at(f"polygamma({n}, x)", x=x).value, mpmath.polygamma(n, x), 1e-13)


@pytest.mark.parametrize(("a", "b"), [(1.0, 1e10), (0.5, 1e12), (3.0, 1e300), (1e3, 1e3),
                                      (1e5, 3e5), (1e-300, 1e-300), (2.5, 1e15)])
def test_beta_and_lbeta_far_out_do_not_cancel(a, b):
    a_, b_ = mpmath.mpf(a), mpmath.mpf(b)
    with mpmath.workdps(700):
        true = +(mpmath.loggamma(a_) + mpmath.loggamma(b_) - mpmath.loggamma(a_ + b_))
    _close(_value("lbeta(a, b)", a=a, b=b), true, 4e-16)
    # exp(lbeta): lbeta's rounding is amplified |lbeta| times, as the condition number says
    _close(_value("beta(a, b)", a=a, b=b), mpmath.exp(true), 4e-16 * max(1, abs(true)))


def test_asin_and_acos_derivatives_near_one_keep_their_digits():
    x = 0.9999999925101855
    true = 1 / mpmath.sqrt((1 - mpmath.mpf(x)) * (1 + mpmath.mpf(x)))
    _close(_at("asin(x)", x=x).gradients["x"], true, 4e-16)
    _close(_at("acos(x)", x=x).gradients["x"], -true, 4e-16)
    _close(_at("atanh(x)", x=x).gradients["x"], true ** 2, 4e-16)


def test_mod_slope_is_the_quotient_taken():
    result = _at("mod(x, y)", x=1.0, y=0.1)
    assert result.value == 1.0 % 0.1
    assert result.gradients["y"] == -9.0  # 1 % 0.1 is 1 - 9*0.1, not 1 - 10*0.1


def test_hypot_slope_at_subnormals():
    gradients = gradcli.evaluate("hypot(x, y)", {"x": 5e-324, "y": 5e-324}, check=False).gradients
    assert gradients["x"] == gradients["y"] == pytest.approx(math.sqrt(0.5), rel=1e-15)


@pytest.mark.parametrize(("text", "x", "true"), [
    ("tanh(x)", 20.0, lambda x: 1 / mpmath.cosh(x) ** 2),
    ("sigmoid(x)", 40.0, lambda x: mpmath.exp(-x) / (1 + mpmath.exp(-x)) ** 2),
    ("asinh(x)", 1e200, lambda x: 1 / mpmath.sqrt(x * x + 1)),
    ("acosh(x)", 1e300, lambda x: 1 / mpmath.sqrt(x * x - 1)),
    ("atan(x)", 1e160, lambda x: 1 / (x * x + 1)),
])
def test_slopes_far_out_are_not_zero(text, x, true):
    _close(_at(text, x=x).gradients["x"], true(mpmath.mpf(x)), 1e-15)


@pytest.mark.parametrize(("text", "x"), [("asinh(x)", 1e200), ("acosh(x)", 1e300),
                                         ("atan(x)", 1e200), ("softsign(x)", 1e200),
                                         ("tanh(x)", 300.0)])
def test_hessians_far_out_are_the_tiny_numbers_they_are(text, x):
    """No x**2 that overflows on the way to an answer that underflows; no 1 - tanh**2."""
    second = {"asinh(x)": lambda t: -t / (t * t + 1) ** 1.5,
              "acosh(x)": lambda t: -t / (t * t - 1) ** 1.5,
              "atan(x)": lambda t: -2 * t / (t * t + 1) ** 2,
              "softsign(x)": lambda t: -2 / (1 + t) ** 3,
              "tanh(x)": lambda t: -2 * mpmath.tanh(t) / mpmath.cosh(t) ** 2}[text]
    _close(_at(text, x=x).hessian.matrix["x"]["x"], second(mpmath.mpf(x)), 1e-13)


def test_atan2_slopes_at_tiny_and_huge_points():
    tiny = gradcli.evaluate("atan2(y, x)", {"y": 1e-300, "x": 1e-300}, check=False).gradients
    assert tiny == {"y": pytest.approx(5e299, rel=1e-15), "x": pytest.approx(-5e299, rel=1e-15)}
    huge = gradcli.evaluate("atan2(y, x)", {"y": 1.0, "x": 1e200}, check=False).gradients
    assert huge["y"] == pytest.approx(1e-200, rel=1e-15)


def test_second_derivative_of_zero_to_a_power_is_zero_as_the_peers_say():
    result = _at("0**y", y=2.0)
    assert (result.gradients["y"], result.hessian.matrix["y"]["y"]) == (0.0, 0.0)


@pytest.mark.parametrize(("text", "order", "limit"), [("polygamma(n, x)", 100, 100),
                                                      ("ive(n, x)", 30, 30)])
def test_the_highest_order_diff_prints_is_one_eval_accepts(text, order, limit):
    below = text.replace("n", str(order - 1), 1)
    printed = gradcli.differentiate(below, ["x"]).texts()["x"]
    assert f"({order}, x)" in printed
    assert math.isfinite(gradcli.evaluate(printed, {"x": 3.0}, check=False).value)
    at = text.replace("n", str(order), 1)
    with pytest.raises(NumericError, match=f"above the largest order .*{limit}"):
        gradcli.differentiate(at, ["x"])
    with pytest.raises(NumericError, match="above the largest order"):
        _at(at, x=3.0)


# --- regions once relaxed, held to the bound point by point --------------------------------------

def _held_to_the_bound(text: str, sample: list[tuple], orders: tuple[int, ...]) -> None:
    """The benchmark's measure of ``text`` at ``sample``: within the bound at ``orders``."""
    (case,) = [case for case in accuracy.cases() if case.text == text]
    tallies = accuracy.measure(case, sample)
    for order in orders:
        assert tallies[order].ratios, f"{text}: nothing measured at order {order}"
        assert max(tallies[order].ratios) <= 1.0, "\n".join(tallies[order].failures)
        assert not tallies[order].missed, "\n".join(tallies[order].failures)


@pytest.mark.parametrize("text", ["polygamma(20, x)", "polygamma(50, x)", "polygamma(98, x)"])
def test_polygamma_of_high_order_keeps_its_digits_near_half_integers(text):
    """The reflection's polynomial in cot has whole coefficients past 2**53 and pi**(n + 1):
    rounded once each (they were rounded at every step, and pi n + 1 times: 20 ulps at n = 99);
    d/dx is polygamma(n + 1, x), so order 1 measures the odd orders next to these."""
    _held_to_the_bound(text, [(-0.50000001,), (-2.4999999750000002,), (-100.4999999998995,),
                              (-0.1,), (-7.3,)], (0, 1))


MINIMUM = [(1.2617,), (1.3,), (1.4616321449683622,), (1.4616321595846837,),
           (1.5107704253336172,), (1.6,), (1.6615,)]


@pytest.mark.parametrize(("text", "orders"), [("lgamma(x)", (0, 1)), ("digamma(x)", (0,))])
def test_lgamma_and_digamma_near_the_minimum_of_gamma(text, orders):
    """lgamma's series about its minimum 1.4616 has no linear term; digamma's is its
    derivative, exact relatively at digamma's zero (lgamma was 7 ulps off at 1.51)."""
    _held_to_the_bound(text, MINIMUM, orders)


def test_digamma_below_4_sums_no_terms_of_both_signs():
    """Below 4 the recurrence into [1, 2) and the series about digamma's zero: the
    recurrence up to 10 and the asymptotic series added terms of both signs a few times the
    answer, up to 1.4 times the bound at these points."""
    _held_to_the_bound("digamma(x)", [(0.509,), (0.824,), (0.945,), (1.081,), (1.117,),
                                      (1.245,), (3.1,), (-2.7,)], (0,))


BESSEL_POINTS = [(15.0,), (37.5,), (-59.9,), (60.1,), (250.3,), (1e4,), (-5e5,)]


@pytest.mark.parametrize("text", ["i0e(x)", "i1e(x)", "ive(5, x)", "ive(28, x)"])
def test_scaled_bessel_slopes_far_out(text):
    """ive's slope by its own series (the power series' or Hankel's, summed exactly): the
    written (I_n-1 + I_n+1)/2 - I_n lost |x| ulps (8e3 at 1e4)."""
    _held_to_the_bound(text, BESSEL_POINTS, (1,))


def test_power_slope_of_tiny_exponents_at_extreme_bases():
    """y x**y / x: y x**(y - 1) rounded y - 1, which x**(y - 1) took |log x| times."""
    _held_to_the_bound("x ** y", [(1e-12, -1e-12), (1e-300, 1e-3), (1e300, 0.25),
                                  (5e-324, 0.25), (3.0, 0.1)], (1,))


def test_beta_of_a_tiny_operand_and_its_slope_at_the_largest_floats():
    """beta = exp(log(a B))/a below a = 1 (exp(lbeta) took lbeta's rounding 345 times at
    a = 1e-150); d/db where the digamma difference underflows (-5.9e-309, not 0)."""
    _held_to_the_bound("beta(a, b)", [(1e-150, 10.0), (2.0418900440601081e-176, 14.88),
                                      (1e-12, 1e200), (1e-15, 1e8), (1e-20, 1.7e308),
                                      (1e-15, 1.7e308), (2e-285, 4e224)], (0, 1))
