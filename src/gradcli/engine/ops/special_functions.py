"""The table's special functions, activations and pieces, and steps (element-wise rows; see
ops/row.py for what a row holds). Their float functions live in engine/special.py, their complex
and vector forms and domain checks in engine/forms.py."""

from __future__ import annotations

import cmath
import math

from gradcli.engine import forms, special, special_slopes
from gradcli.engine.ops.row import (
    KERNEL_RELU,
    NONE,
    F,
    Op,
    above,
    binary,
    flagged,
    numpy,
    printed,
    unary,
    written,
)
from gradcli.errors import NumericError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

GELU_TANH_SCALE = 1.5957691216057308  # 2 sqrt(2/pi): gelu_tanh(x) = x sigmoid(scale (x + c x^3))
SELU_SCALE, SELU_ALPHA = 1.0507009873554805, 1.6732632423543772
TWO_OVER_ROOT_PI = 2.0 / math.sqrt(math.pi)
INV_ROOT_TWO_PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_HALF = math.sqrt(0.5)


def _mod_quotient(x: Any, y: Any, out: Any) -> Any:
    """d/dy mod(x, y) = -floor(x/y), as a formula prints it; on numbers the quotient that
    mod actually took, (x - out)/y rounded, which one ulp from a jump may differ from floor's."""
    if written(x) or written(y):
        return -F.floor(x / y)
    return -F.round((x - out) / y)


def _beta_slope(a: Any, b: Any, out: Any) -> Any:
    """d/db beta(a, b) = beta(a, b) (digamma(b) - digamma(a + b)): on floats
    special_slopes._beta_slope, whose factors neither underflow nor lose a subnormal's digits;
    in a Hessian's formula the ``dbeta`` row, whose own derivatives keep their digits (the
    product rule over the written form subtracts beta P Q and beta psi'(a + b), which agree
    where a << b or both are small: 2.06 for 2.404 at a = b = 1e-5); printed, and on arrays,
    the textbook form."""
    if type(a) is float and type(b) is float:
        return special_slopes._beta_slope(a, b, out)
    if _in_a_hessian(a, b):
        return F.dbeta(a, b)
    return out * (F.digamma(b) - F.digamma(a + b))


def _digamma_drop(a: Any, b: Any) -> Any:
    """digamma(b) - digamma(a + b), lbeta's slope in b: on floats without subtracting
    (special_slopes._digamma_difference); in a Hessian's formula the ``dlbeta`` row, whose
    derivative in b, a difference of trigammas, keeps its digits too; printed, and on arrays,
    as written."""
    if type(a) is float and type(b) is float:
        return -special_slopes._digamma_difference(a, b)
    if _in_a_hessian(a, b):
        return F.dlbeta(a, b)
    return F.digamma(b) - F.digamma(a + b)


def _in_a_hessian(*operands: Any) -> bool:
    """The rule builds a formula that a Hessian evaluates (graph nodes, none printed)."""
    return any(written(v) for v in operands) and not any(printed(v) for v in operands)


def _dlbeta_da(a: Any, b: Any, out: Any) -> Any:
    _refuse_a_third_derivative("dlbeta", a, b)
    return -F.polygamma(1.0, a + b)


def _dlbeta_db(a: Any, b: Any, out: Any) -> Any:
    """psi'(b) - psi'(a + b): on floats special_slopes._trigamma_difference (the two agree to
    a/b where a << b: as floats 0 at a = 1e100, b = 3.5, for 3.5e-200)."""
    if type(a) is float and type(b) is float:
        return special_slopes._trigamma_difference(a, b)
    _refuse_a_third_derivative("dlbeta", a, b)
    return F.polygamma(1.0, b) - F.polygamma(1.0, a + b)


def _dbeta_da(a: Any, b: Any, out: Any) -> Any:
    """d2/da db beta = dbeta (digamma(a) - digamma(a + b)) - beta psi'(a + b): on floats
    special_slopes._dbeta_da, a sum of positive terms (the two here agree where a << b or
    both are small)."""
    if type(a) is float and type(b) is float:
        return special_slopes._dbeta_da(a, b)
    _refuse_a_third_derivative("dbeta", a, b)
    return out * (F.digamma(a) - F.digamma(a + b)) - F.beta(a, b) * F.polygamma(1.0, a + b)


def _dbeta_db(a: Any, b: Any, out: Any) -> Any:
    """d2/db2 beta = dbeta (digamma(b) - digamma(a + b)) + beta (psi'(b) - psi'(a + b)): on
    floats special_slopes._dbeta_db, whose trigamma difference is not one of floats."""
    if type(a) is float and type(b) is float:
        return special_slopes._dbeta_db(a, b)
    _refuse_a_third_derivative("dbeta", a, b)
    return out * (F.digamma(b) - F.digamma(a + b)) + F.beta(a, b) * _dlbeta_db(a, b, out)


THIRD_DERIVATIVES = {  # a slope row: whose third derivatives its Hessian would be, and where
    # their formulas (the textbook ones that ``diff`` prints) lose their digits
    "dbeta": ("beta", "where one operand is much smaller than the other or both are small"),
    "dlbeta": ("lbeta", "where one operand is much smaller than the other or both are small"),
    "dive": ("ive", "where |x| is large (terms that agree to 1 - O(1/x))"),
    "dgamma": ("gamma", "where gamma is subnormal"),
}


def _refuse_a_third_derivative(name: str, *operands: Any) -> None:
    """A Hessian of dbeta, dlbeta, dive or dgamma (third derivatives of beta, lbeta, ive and
    gamma) is a NumericError: its formulas, the textbook ones that ``diff`` prints, subtract
    terms that agree (d2/da2 dbeta(1e-5, 1e-5) came out -5515 for -2.706) or multiply gamma's
    subnormal value below x = -171, and no rule of floats takes their place
    (docs/accuracy.md)."""
    if _in_a_hessian(*operands):
        of, where = THIRD_DERIVATIVES[name]
        raise NumericError(
            f"gradcli computes only the value and gradient of {name}: its second derivatives "
            f"(third derivatives of {of}) lose their digits {where}, so none is given",
            hint="gradcli diff prints their formulas")


def _gamma_slope(x: Any, out: Any) -> Any:
    """gamma' = gamma digamma: on floats rounded once where gamma is subnormal (x < -171,
    special_slopes._gamma_times); in a Hessian's formula the ``dgamma`` row, whose own slope
    gamma (digamma**2 + trigamma) is one value rounded so too (the product rule over
    gamma digamma multiplied gamma's subnormal value: 0 from x = -178 on, for 1e-317), and on
    arrays dgamma point by point; printed as written."""
    if type(x) is float:
        return special_slopes._gamma_times(x, special._digamma(x), out)
    if printed(x):
        return out * F.digamma(x)
    return F.dgamma(x)


def _on_arrays(*operands: Any) -> bool:
    """NumPy values (an array Hessian), neither graph nodes nor ``vector._reads``' probes, which
    take a slope row's formula."""
    return not any(hasattr(v, "apply") for v in operands)


def _point_by_point(function: Any, *operands: Any) -> Any:
    """A slope row's float derivative over arrays, one point at a time; NaN where it has no
    value (dgamma's at a pole), with NumPy's flag (``row.flagged``), as a value's."""
    np = numpy()

    def at(*point: float) -> float:
        try:
            return function(*point)
        except (ArithmeticError, ValueError):
            return math.nan

    return flagged(np, np.asarray(np.frompyfunc(at, len(operands), 1)(*operands), dtype=float))


def _dgamma_slope(x: Any, out: Any) -> Any:
    """gamma'' = gamma (digamma**2 + trigamma): on floats special_slopes._dgamma_slope, and on
    arrays point by point."""
    if type(x) is float:
        return special_slopes._dgamma_slope(x)
    if _on_arrays(x):
        return _point_by_point(special_slopes._dgamma_slope, x)
    _refuse_a_third_derivative("dgamma", x)
    return F.gamma(x) * (F.digamma(x) ** 2.0 + F.polygamma(1.0, x))


def _bessel(n: Any, x: Any, out: Any) -> Any:
    """d/dx ive(n, x) = (I_n-1 + I_n+1)/2 - sign(x) I_n, scaled by exp(-|x|), I_-1 = I_1: the
    ``dive`` row (its float function special_slopes._dive, series that do not cancel), whose
    own derivative keeps its digits too; printed, the textbook form, whose two terms agree to
    1 - O(1/x) (16 - log10|x| digits kept), as do those of its own derivative."""
    if type(n) is float and type(x) is float:
        return special_slopes._dive(n, x)
    if printed(n) or printed(x):
        return _written_slope("ive", n, x, out)
    return F.dive(n, x)


def _dive_slope(n: Any, x: Any, out: Any) -> Any:
    """d2/dx2 ive(n, x): on floats special_slopes._scaled_bessel of order 2, ive's series
    differentiated twice, and on arrays (an array Hessian of ive) the same point by point;
    printed, the derivative of ive's written slope, (dive(n - 1, x) + dive(n + 1, x))/2 -
    sign(x) dive(n, x), which cancels as that slope does: a Hessian of dive (ive's third
    derivatives) is a NumericError."""
    if type(n) is float and type(x) is float:
        return special_slopes._scaled_bessel(2, n, x)
    if _on_arrays(n, x):
        return _point_by_point(lambda m, t: special_slopes._scaled_bessel(2, m, t), n, x)
    _refuse_a_third_derivative("dive", n, x)
    return _written_slope("dive", n, x, out)


def _written_slope(name: str, n: Any, x: Any, out: Any) -> Any:
    """(f(n - 1, x) + f(n + 1, x))/2 - sign(x) out, f the row ``name`` (ive or dive), out
    f(n, x), f(-1, x) = f(1, x); ive's neighbours of orders 0 and 1 printed i0e and i1e."""
    row = getattr(F, name)
    if name == "ive" and type(n) is float and n == 0.0:
        return F.i1e(x) - F.sign(x) * out
    lower = (F.i0e(x) if name == "ive" and type(n) is float and n == 1.0
             else row(F.abs(n - 1.0), x))
    return 0.5 * (lower + row(_next_order(n, name), x)) - F.sign(x) * out


# sinc''(x) = -pi**2 (1/3 - p/10 + ...), p = (pi x)**2: the k-th coefficient is
# (-1)**(k - 1) 2k (2k - 1)/(2k + 1)!; thirteen reach 1e-20 relatively at |x| = 0.5.
SINC_SECOND_SERIES = tuple((-1) ** (k - 1) * 2 * k * (2 * k - 1) / math.factorial(2 * k + 1)
                           for k in range(1, 14))
SINC_SERIES_LIMIT = 0.5  # |x| below which dsinc and its slope are their series


def _dsinc_slope(x: Any, out: Any) -> Any:
    """sinc''(x) = -pi**2 sinc(x) - 2 dsinc(x)/x, whose terms are 5 times its size near 0: on
    a float below SINC_SERIES_LIMIT its series instead (within 2.6 ulps, 0 included). The
    formula's own derivative, a Hessian's, subtracts terms of order 1/x there: the formula a
    Hessian evaluates (and the form on arrays) takes the series below the limit too, as a
    polynomial, and divides by 1 there instead of x. A printed formula is the quotient, with
    pi named, so that ``diff`` prints pi**2, not 9.869604401089358."""
    if type(x) is float:
        if abs(x) < SINC_SERIES_LIMIT:
            return _sinc_second_series(x)
        return -special.PI_SQUARED * F.sinc(x) - 2.0 * out / x
    if printed(x):
        pi = x.builder.constant(math.pi, "pi")
        return -(pi * pi) * F.sinc(x) - 2.0 * out / x
    near = F.lt(F.abs(x), SINC_SERIES_LIMIT)
    quotient = -special.PI_SQUARED * F.sinc(x) - 2.0 * out / F.where(near, 1.0, x)
    return F.where(near, _sinc_second_series(x), quotient)


def _sinc_second_series(x: Any) -> Any:
    """sinc''(x) by its series (Horner in (pi x)**2), on a float or as a formula."""
    p, total = (math.pi * x) * (math.pi * x), 0.0
    for coefficient in reversed(SINC_SECOND_SERIES):
        total = total * p + coefficient
    return -special.PI_SQUARED * total


def _sigmoid_slope(x: Any, out: Any) -> Any:
    """sigmoid(x) sigmoid(-x); out (1 - out) is 0 from x = 37 on, where the answer is 1e-16.
    ``diff`` prints s (1 - s). A Hessian's formula is (sech(x/2)/2)**2: its value keeps every
    digit (d2/dx dy of y*sigmoid(x)), as does its derivative, -2 (sech(x/2)/2)**2 tanh(x/2)/2,
    where that of s (1 - s), s' (1 - 2 s), cancels near 0 (1e-16/|x| relatively) and s (1 - s)
    of a rounded s near 1 keeps eps/(1 - s) (0 for 4e-18 at x = 37). A program that divides by
    its own rounded 1 - s (a log-loss written with log(1 - sigmoid(z))) keeps that rounding in
    its Hessian: its own condition, which softplus forms avoid (docs/accuracy.md)."""
    if not written(x):
        return out * F.sigmoid(-x)
    if printed(x):
        return out * (1.0 - out)
    return F.square(0.5 * F.sech(0.5 * x))


def _silu_slope(x: Any, out: Any) -> Any:
    """sigmoid(x) (1 + x (1 - sigmoid(x))), 1 - sigmoid(x) written sigmoid(-x): its value
    would cancel for x > 1, in a Hessian too (which evaluates it)."""
    return F.sigmoid(x) * (1.0 + x * F.sigmoid(-x))


ORDER_LIMITS = {"polygamma": forms.MAX_POLYGAMMA_ORDER, "ive": forms.MAX_IVE_ORDER,
                "dive": forms.MAX_IVE_ORDER}


def _next_order(n: Any, name: str) -> Any:
    """n + 1, the order of polygamma's and ive's derivative. In a formula (``gradcli diff``, a
    Hessian) a constant n at the largest order is a NumericError: the derivative would be a
    function that ``eval`` refuses. On numbers n + 1 is computed (gradients of the largest
    order: the float function has no limit of its own)."""
    if written(n) and n.op.name == "const" and n.value + 1.0 > ORDER_LIMITS[name]:
        order = f"{n.value:g}"
        raise NumericError(
            f"the derivative of {name}({order}, x) is {name}({n.value + 1.0:g}, x), above the "
            f"largest order of {name}, {ORDER_LIMITS[name]}",
            hint=f"differentiate {name} of an order below {ORDER_LIMITS[name]}")
    return n + 1.0


def _gelu_tanh_slope(x: Any, out: Any) -> Any:
    """s + x s sigmoid(-u) scale (1 + 0.134145 x**2), s = sigmoid(u). On numbers the
    vanishing s sigmoid(-u) multiplies x before x is squared: past |x| = 1e154, x**2 is inf."""
    u = GELU_TANH_SCALE * (x + 0.044715 * x * x * x)  # 1 - sigmoid(u) is sigmoid(-u): no 1 - s
    s = F.sigmoid(u)
    if written(x):
        return s + x * s * F.sigmoid(-u) * GELU_TANH_SCALE * (1.0 + 0.134145 * x * x)
    spread = s * F.sigmoid(-u) * x
    return s + GELU_TANH_SCALE * (spread + 0.134145 * (spread * x) * x)


def _mish_slope(x: Any, out: Any) -> Any:
    """tanh(u) + x sigmoid(x) sech(u)**2, u = softplus(x): 1 - tanh(u)**2 would cancel for
    x > 1, in a Hessian too (which evaluates this formula and differentiates it)."""
    u = F.softplus(x)
    return F.tanh(u) + x * F.sigmoid(x) * F.sech(u) ** 2.0


def _selu_slope(x: Any, out: Any) -> Any:
    inside = above(x)
    return SELU_SCALE * (inside + (1.0 - inside) * SELU_ALPHA * F.exp(F.min(x, 0.0)))


ROWS: list[Op] = [
    # --- special functions: no complex form (math has none to continue); NumPy has none
    # either, so their sweeps call the float function point by point ------------------------
    unary("erf", math.erf, lambda x, out: TWO_OVER_ROOT_PI * F.exp(-x * x),
          complex=NONE, vector=NONE, summary="error function"),
    unary("sinc", special._sinc, lambda x, out: F.dsinc(x),
          complex=forms.complex_sinc,
          vector=forms.vector_sinc, summary="sin(pi*x)/(pi*x), 1 at 0 (NumPy's sinc)"),
    unary("dsinc", special._dsinc, _dsinc_slope, complex=NONE, vector=NONE,
          summary="sinc's derivative, exact near 0 (and so are its own two)"),
    unary("erfc", math.erfc, lambda x, out: -TWO_OVER_ROOT_PI * F.exp(-x * x),
          complex=NONE, vector=NONE, summary="1 - erf(x), accurate where erf(x) is near 1"),
    unary("erfinv", special._erfinv, lambda x, out: F.exp(out * out) / TWO_OVER_ROOT_PI,
          domain=forms.open_unit_interval, complex=NONE, vector=NONE,
          summary="inverse of erf, -1 < x < 1", aliases=("erf_inv",)),
    unary("gamma", math.gamma, _gamma_slope, domain=forms.not_a_pole, complex=NONE, vector=NONE,
          summary="gamma function (0 and the negative integers are poles: an error)"),
    # gamma's slope, a row of its own so that a Hessian differentiates it with a rule that
    # keeps its digits where gamma is subnormal (docs/accuracy.md)
    unary("dgamma", special_slopes._dgamma, _dgamma_slope, domain=forms.not_a_pole,
          complex=NONE, vector=NONE,
          summary="gamma's derivative gamma(x) digamma(x), exact where gamma is subnormal"),
    unary("lgamma", special._lgamma, lambda x, out: F.digamma(x), domain=forms.not_a_pole,
          complex=NONE, vector=NONE, summary="log |gamma(x)|"),
    unary("digamma", special._digamma, lambda x, out: F.polygamma(1.0, x),
          domain=forms.not_a_pole, complex=NONE, vector=NONE,
          summary="d/dx lgamma(x), the psi function"),
    # The order n changes only in whole steps: d/dn is 0, as for floor (a constant n is usual).
    binary("polygamma", special._polygamma, 0.0,
           lambda n, x, out: F.polygamma(_next_order(n, "polygamma"), x),
           domain=forms.polygamma_domain, complex=NONE, vector=NONE,
           summary="n-th derivative of digamma, n a whole number from 0 to 100"),
    # Scaled Bessel functions exp(-|x|) I_n(x): I_n' = (I_n-1 + I_n+1)/2, I_-1 = I_1, and the
    # factor exp(-|x|) adds -sign(x) times the function (a kink at 0 for even n: slope 0 there,
    # as abs). The order n changes only in whole steps: d/dn is 0, as for polygamma.
    unary("i0e", special_slopes._i0e, lambda x, out: _bessel(0.0, x, out),
          complex=NONE, aliases=("bessel_i0e",),
          vector=NONE, summary="exp(-|x|) I0(x), the scaled modified Bessel function of order 0"),
    unary("i1e", special_slopes._i1e, lambda x, out: _bessel(1.0, x, out),
          complex=NONE, aliases=("bessel_i1e",),
          vector=NONE, summary="exp(-|x|) I1(x), the scaled modified Bessel function of order 1"),
    binary("ive", special_slopes._ive, 0.0,
           lambda n, x, out: _bessel(n, x, out), domain=forms.ive_domain, complex=NONE,
           vector=NONE, summary="exp(-|x|) I_n(x), n a whole number from 0 to 30 (SciPy's ive)"),
    # ive's slope in x, a row of its own so that a Hessian differentiates it with a rule that
    # keeps its digits (docs/accuracy.md)
    binary("dive", special_slopes._dive, 0.0, _dive_slope,
           domain=forms.ive_domain, complex=NONE, vector=NONE,
           summary="d/dx ive(n, x), n a whole number from 0 to 30"),
    binary("beta", special._beta, lambda a, b, out: _beta_slope(b, a, out),
           lambda a, b, out: _beta_slope(a, b, out), domain=forms.positive_pair,
           complex=NONE, vector=NONE,
           summary="beta function gamma(a) gamma(b) / gamma(a + b), a, b > 0"),
    binary("lbeta", special._lbeta, lambda a, b, out: _digamma_drop(b, a),
           lambda a, b, out: _digamma_drop(a, b), domain=forms.positive_pair,
           complex=NONE, vector=NONE, summary="log of beta(a, b), a, b > 0"),
    # beta's and lbeta's slopes in b (in a: swap a and b), rows of their own so that a
    # Hessian differentiates them with rules that keep their digits (docs/accuracy.md)
    binary("dbeta", special_slopes._dbeta, _dbeta_da, _dbeta_db, domain=forms.positive_pair,
           complex=NONE, vector=NONE,
           summary="d/db beta(a, b) = beta(a, b) (digamma(b) - digamma(a + b)), a, b > 0"),
    binary("dlbeta", special_slopes._dlbeta, _dlbeta_da, _dlbeta_db, domain=forms.positive_pair,
           complex=NONE, vector=NONE,
           summary="d/db lbeta(a, b) = digamma(b) - digamma(a + b), a, b > 0, exact where "
                   "a << b"),
    # --- activations and pieces ------------------------------------------------------------
    unary("sigmoid", special._sigmoid, _sigmoid_slope,
          complex=forms.complex_sigmoid, vector=forms.vector_sigmoid,
          numpy="1 / (1 + np.exp(-{0}))", summary="1 / (1 + e ** -x)", aliases=("logistic",)),
    unary("relu", special._relu, lambda x, out: F.heaviside(x),
          complex=lambda x: x if x.real > 0.0 else 0j, vector=lambda np, x: np.maximum(x, 0.0),
          numpy="np.maximum({0}, 0.0)", summary="max(x, 0); relu'(0) = 0", kernel=KERNEL_RELU),
    unary("softplus", special._softplus, lambda x, out: F.sigmoid(x),
          complex=forms.complex_softplus, vector=lambda np, x: np.logaddexp(0.0, x),
          numpy="np.logaddexp(0.0, {0})", summary="log(1 + e ** x)"),
    unary("logit", special._logit, lambda x, out: 1.0 / (x * (1.0 - x)),
          domain=lambda x: None if 0.0 < x < 1.0 else "argument outside (0, 1)",
          complex=forms.complex_logit, vector=forms.vector_logit,
          summary="log(x / (1 - x)), the inverse of sigmoid, 0 < x < 1"),
    unary("silu", special._silu, _silu_slope,
          complex=lambda x: x * forms.complex_sigmoid(x),
          vector=lambda np, x: x * forms.vector_sigmoid(np, x),
          summary="x * sigmoid(x)", aliases=("swish",)),
    unary("gelu", special._gelu,
          lambda x, out: 0.5 * F.erfc(-x * SQRT_HALF) + x * INV_ROOT_TWO_PI * F.exp(-0.5 * x * x),
          complex=NONE, vector=NONE,
          summary="x * Phi(x), Phi the normal distribution function (the exact, erf form)"),
    unary("gelu_tanh", special._gelu_tanh, _gelu_tanh_slope,
          complex=lambda x: x * forms.complex_sigmoid(
              GELU_TANH_SCALE * (x + 0.044715 * x * x * x)),
          vector=lambda np, x: x * forms.vector_sigmoid(
              np, GELU_TANH_SCALE * (x + 0.044715 * x * x * x)),
          summary="gelu's tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))"),
    unary("elu", special._elu, lambda x, out: F.exp(F.min(x, 0.0)),
          complex=lambda x: x if x.real > 0.0 else forms.complex_expm1(x),
          vector=lambda np, x: np.where(x > 0.0, x, np.expm1(np.minimum(x, 0.0))),
          summary="x for x > 0, else e ** x - 1"),
    unary("selu", special._selu, _selu_slope,
          complex=lambda x: SELU_SCALE * (
              x if x.real > 0.0 else SELU_ALPHA * forms.complex_expm1(x)),
          vector=lambda np, x: SELU_SCALE * np.where(
              x > 0.0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0.0))),
          summary="scale * elu with alpha (Klambauer et al.); selu'(0) is the left slope"),
    binary("leaky_relu", special._leaky_relu, lambda x, a, out: above(x) + (1.0 - above(x)) * a,
           lambda x, a, out: F.min(x, 0.0),
           complex=lambda x, a: x if x.real > 0.0 else a * x,
           vector=lambda np, x, a: np.where(x > 0.0, x, a * x),
           summary="x for x > 0, else a * x; at 0 the slope is a (as relu's)"),
    unary("softsign", special._softsign,
          lambda x, out: F.square(1.0 / (1.0 + F.abs(x))),  # (1 + |x|)**2 would overflow
          complex=lambda x: x / (1.0 + forms.complex_abs(x)),
          vector=lambda np, x: x / (1.0 + np.abs(x)), summary="x / (1 + |x|)"),
    unary("mish", special._mish, _mish_slope,
          complex=lambda x: x * cmath.tanh(forms.complex_softplus(x)),
          vector=lambda np, x: x * np.tanh(np.logaddexp(0.0, x)),
          summary="x * tanh(softplus(x))"),
    unary("hardtanh", special._hardtanh,
          lambda x, out: (1.0 + F.sign(x + 1.0)) * (1.0 - F.sign(x - 1.0)) / 4.0,
          complex=lambda x: forms.complex_clip(x, -1.0, 1.0),
          vector=lambda np, x: np.minimum(np.maximum(x, -1.0), 1.0),
          summary="clip(x, -1, 1); at -1 and 1 the slope is 1/2, as min and max at a tie"),
    unary("abs", math.fabs, lambda x, out: F.sign(x), complex=forms.complex_abs, ufunc="abs",
          summary="|x|; abs'(0) = 0", aliases=("absolute", "fabs")),
    unary("sign", special._sign, 0.0, ufunc="sign",
          complex=lambda x: complex(special._sign(x.real)),
          summary="-1, 0 or 1; its derivative is 0"),
    unary("heaviside", special._heaviside, 0.0,
          complex=lambda x: complex(special._heaviside(x.real)),
          vector=lambda np, x: np.heaviside(x, 0.0), numpy="({0} > 0) * 1.0",
          summary="1 for x > 0, else 0 (relu's derivative); its derivative is 0"),
    binary("min", min, lambda x, y, out: (1.0 - F.sign(x - y)) / 2.0,
           lambda x, y, out: (1.0 + F.sign(x - y)) / 2.0, complex=forms.complex_min,
           ufunc="minimum", summary="smaller of x and y; a tie splits the gradient equally"),
    binary("max", max, lambda x, y, out: (1.0 + F.sign(x - y)) / 2.0,
           lambda x, y, out: (1.0 - F.sign(x - y)) / 2.0, complex=forms.complex_max,
           ufunc="maximum", summary="larger of x and y; a tie splits the gradient equally"),
    Op("clip", 3, special._clip, (
        lambda x, lo, hi, out: (1.0 + F.sign(x - lo)) * (1.0 - F.sign(x - hi)) / 4.0,
        lambda x, lo, hi, out: (1.0 - F.sign(x - lo)) * (1.0 - F.sign(F.max(x, lo) - hi)) / 4.0,
        lambda x, lo, hi, out: (1.0 + F.sign(F.max(x, lo) - hi)) / 2.0),
        domain=forms.ordered_bounds, complex=forms.complex_clip, vector=forms.vector_clip,
        summary="min(max(x, lo), hi), lo <= hi; at a bound the gradient splits as at a tie",
        aliases=("clamp",)),
    # --- steps: derivative 0, at a jump too (as sign's); the check flags a jump -------------
    unary("floor", special._floor, 0.0,
          complex=forms.complex_of_step(special._floor), ufunc="floor",
          summary="largest whole number <= x; slope 0"),
    unary("ceil", special._ceil, 0.0,
          complex=forms.complex_of_step(special._ceil), ufunc="ceil",
          summary="smallest whole number >= x; slope 0"),
    unary("round", special._round, 0.0,
          complex=forms.complex_of_step(special._round),
          vector=lambda np, x: np.round(x),
          summary="nearest whole number, halves to even (as Python); slope 0"),
    unary("trunc", special._trunc, 0.0,
          complex=forms.complex_of_step(special._trunc), ufunc="trunc",
          summary="x without its fraction; slope 0"),
    # d/dy is -q, q the whole number with x = q y + out: round((x - out) / y), not
    # floor(x / y), which rounds 1/0.1 up to 10 where x % y (0.0999...95) took 9.
    binary("mod", special._mod, 1.0,
           lambda x, y, out: _mod_quotient(x, y, out),
           domain=forms.nonzero_divisor, complex=forms.complex_mod,
           vector=lambda np, x, y: np.mod(x, y),
           summary="x - y * floor(x / y), the sign of y; also written x % y, as in Python and "
                   "NumPy's remainder", aliases=("remainder",)),
]
