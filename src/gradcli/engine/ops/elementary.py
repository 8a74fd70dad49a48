"""The table's elementary rows: the arithmetic operators, exponentials and logarithms,
trigonometric and hyperbolic functions (element-wise; see ops/row.py for what a row holds)."""

from __future__ import annotations

import cmath
import math
import operator

from gradcli.engine import forms, special
from gradcli.engine.ops.row import (
    KERNEL_ADD,
    KERNEL_DIV,
    KERNEL_MUL,
    KERNEL_NEG,
    KERNEL_POW,
    KERNEL_SUB,
    LINEAR_ALL,
    LINEAR_EACH,
    LINEAR_FIRST,
    PREC_POWER,
    PREC_PRODUCT,
    PREC_SUM,
    PREC_UNARY,
    SAME,
    F,
    Op,
    binary,
    is_zero,
    printed,
    unary,
    written,
)
from gradcli.engine.special import TINY_NORMAL

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

LN2 = math.log(2.0)


def _pow_slope(x: Any, y: Any, out: Any) -> Any:
    """d/dx x**y = y x**(y - 1), and 0 where y = 0 (x**0 is 1 everywhere, at x = 0 too): the
    exponent is y - abs(sign(y)). A float y other than 0 -- every x**2 of the scalar backward
    pass -- skips the two table calls that only matter at 0; so does a formula (``_written``).
    Below |y| = 1/2 on numbers y (x**y / x): y - 1 rounds there, which x**(y - 1) takes |log x|
    times (14 ulps at x = 1e-12, y = -1e-12); from 1/2 on y - 1 is exact or its rounding
    is small beside y's own condition number."""
    if type(y) is float and y != 0.0:
        if -0.5 < y < 0.5 and x != 0.0:
            quotient = out / x  # used unless it overflows or is a subnormal short of digits
            if TINY_NORMAL <= abs(quotient) < math.inf:
                return y * quotient
        return y * x ** (y - 1.0)
    if written(y):
        return y * x ** (y - 1.0)
    return y * x ** (y - F.abs(F.sign(y)))


def _pow_log_slope(x: Any, y: Any, out: Any) -> Any:
    """d/dy x**y = x**y log(x), and 0 at a zero base (xlogy) -- written plainly in a formula."""
    return out * F.log(x) if written(x) and not is_zero(x) else F.xlogy(out, x)


# --- rules with a form for numbers and a form for formulas -----------------------------------
# A formula (``gradcli diff``) is printed in the textbook form; a Hessian evaluates that formula's
# gradient with the float rules, so what a formula's own value loses to cancellation (1 - tanh**2
# at x = 20) does not reach it: d/dx (1 - tanh**2) = -2 tanh tanh', with tanh' the float rule.
# Numbers (eval's gradient, arrays, the complex step) take the form that keeps every digit.

def _one_minus_square(x: Any) -> Any:
    """1 - x**2 of asin' and acos', on numbers as (1 - x)(1 + x): both factors are exact near
    +-1, where 1 - x*x cancels (asin' at 1 - 1e-8 kept 8 digits). In a formula 1 - x**2, whose
    gradient -2x keeps its digits near 0 (a Hessian's), where that of (1 - x)(1 + x),
    (1 - x) - (1 + x), would not. (atanh's slope is 1/(1 - x**2) itself: _atanh_slope.)"""
    return 1.0 - x * x if written(x) else (1.0 - x) * (1.0 + x)


def _atanh_slope(x: Any, out: Any) -> Any:
    """1/((1 - x)(1 + x)), printed so; a Hessian's as 1 + x**2/((1 - x)(1 + x)): a sum of two
    positive terms, so its value keeps its digits near +-1 as the product does, and so does
    its derivative, 2x/p + 2x**3/p**2 with p = (1 - x)(1 + x), near 0 too, where the
    product's own, ((1 - x) - (1 + x))/p**2, cancels (no digits left below |x| = 1e-16)."""
    if written(x) and not printed(x):
        return 1.0 + x * x / ((1.0 - x) * (1.0 + x))
    return 1.0 / ((1.0 - x) * (1.0 + x))


def _tanh_slope(x: Any, out: Any) -> Any:
    """sech(x)**2, not 1 - tanh(x)**2, which cancels for |x| > 1 (it is 0 from |x| = 19 on,
    where the answer is 1e-16) -- in a Hessian too, which evaluates this formula (d2/dx dy of
    y*tanh(x)) and differentiates it. On numbers 4 sigmoid(2x) sigmoid(-2x), the same digits."""
    return F.sech(x) ** 2.0 if written(x) else 4.0 * F.sigmoid(2.0 * x) * F.sigmoid(-2.0 * x)


def _complex_sech(z: complex) -> complex:
    """1/cosh(z); past |Re z| = 700, where cmath.cosh overflows, 2 e**-z/(1 + e**-2z) with z
    mirrored to a positive real part (near 0 that form's imaginary part cancels)."""
    if abs(z.real) < 700.0:
        return 1.0 / cmath.cosh(z)
    e = cmath.exp(-z if z.real >= 0.0 else z)
    return 2.0 * e / (1.0 + e * e)


def _vector_sech(np: Any, x: Any) -> Any:
    """_sech on arrays: cosh of at most 700 (no overflow flag), 2 e**-|x| past it."""
    size = np.abs(x)
    return np.where(size < 700.0, 1.0 / np.cosh(np.minimum(size, 700.0)), 2.0 * np.exp(-size))


def _atan_slope(x: Any, out: Any) -> Any:
    """1/(1 + x**2) as square(1/hypot(x, 1)): x**2 overflows at 1.3e154, and in a formula (a
    Hessian) so would x**2 or hypot(x, 1)**2, where the answers are tiny floats."""
    return F.square(_inverse_hypot(x))


def _atan2_slope(x: Any, y: Any) -> Any:
    """x/(x**2 + y**2) (d/dy atan2(y, x); d/dx is this of -y, x), on numbers as x/h/h with
    h = hypot(x, y): x**2 + y**2 overflows at 1e154 and underflows to 0 at 1e-162. A Hessian's
    formula is hypot's slope over h: in x/(x**2 + y**2), or x/h**2 as the builder writes x/h/h,
    the derivative's -out/h**2 underflows where the answer does not (0 for -2e-298 at
    (100, -1e100), a wrong sign at (5e-114, 3e121)). It multiplies by reciprocal(h), which
    the builder does not merge with the division into h**2 (or h*h, which overflows)."""
    if written(x) or written(y):
        if printed(x if written(x) else y):
            return x / (x * x + y * y)
        return _hypot_slope(x, y, F.hypot(x, y)) * F.reciprocal(F.hypot(x, y))
    return x / F.hypot(x, y) / F.hypot(x, y)


def _inverse_hypot(x: Any) -> Any:
    """1/sqrt(x**2 + 1) without x**2, which overflows at |x| = 1.3e154."""
    return 1.0 / F.hypot(x, 1.0)


def _hypot_slope(x: Any, y: Any, out: Any) -> Any:
    """d/dx hypot(x, y) = x / hypot(x, y). Where hypot is subnormal it has few digits
    (hypot(5e-324, 5e-324) rounds to 5e-324), so on numbers x and y are first divided by the
    larger: the quotient is the same, and hypot has its digits back. A printed formula is
    x/hypot(x, y); a Hessian's is sign(x)/hypot(1, y/x) where |x| >= |y|, since the derivative
    of x/hypot(x, y), 1/h - x**2/h**3 (= y**2/h**3), has no digits left where |x| >> |y|. (An
    array's Hessian computes both branches everywhere: y/x divides by 1 where not taken.)"""
    if written(x) or written(y):
        if printed(x if written(x) else y):
            return x / out
        taken = F.ge(F.abs(x), F.abs(y))
        return F.where(taken, F.sign(x) / F.hypot(1.0, y / F.where(taken, x, 1.0)), x / out)
    if type(out) is float and out >= TINY_NORMAL:
        return x / out
    larger = F.max(F.abs(x), F.abs(y))
    return x / larger / F.hypot(x / larger, y / larger)


def _xlogy_slope(x: Any, y: Any, out: Any) -> Any:
    """d/dx xlogy(x, y) = log(y); at y = 0, where that is -inf, 0 if x = 0 too (PyTorch's
    xlogy(x != 0, y) there): so the second derivative of 0**y in y, xlogy(0**y != 0, 0)
    d(0**y)/dy, is 0 for y > 0, as PyTorch and JAX have it. A formula is written log(y),
    except at a zero y (0**y's)."""
    if written(x) or written(y):
        return F.xlogy(F.ne(x, 0.0), y) if written(y) and is_zero(y) else F.log(y)
    return F.xlogy(F.logical_or(F.ne(x, 0.0), F.ne(y, 0.0)), y)


ROWS: list[Op] = [
    # --- arithmetic: the grammar's operators (forward takes complex numbers and arrays too) ----
    binary("add", operator.add, 1.0, 1.0,
           complex=SAME, vector=SAME, symbol="+", precedence=PREC_SUM, summary="sum",
           linear=LINEAR_ALL, numpy="{0} + {1}", kernel=KERNEL_ADD),
    binary("sub", operator.sub, 1.0, -1.0,
           complex=SAME, vector=SAME, symbol="-", precedence=PREC_SUM, summary="difference",
           linear=LINEAR_ALL, numpy="{0} - {1}", kernel=KERNEL_SUB),
    binary("mul", operator.mul, lambda x, y, out: y, lambda x, y, out: x,
           complex=SAME, vector=SAME, symbol="*", precedence=PREC_PRODUCT, summary="product",
           linear=LINEAR_EACH, numpy="{0} * {1}", kernel=KERNEL_MUL),
    binary("div", operator.truediv, lambda x, y, out: 1.0 / y, lambda x, y, out: -out / y,
           domain=forms.nonzero_divisor, complex=SAME, vector=SAME, symbol="/",
           precedence=PREC_PRODUCT, summary="quotient (division by zero is an error)",
           linear=LINEAR_FIRST, numpy="{0} / {1}", kernel=KERNEL_DIV),
    unary("neg", operator.neg, -1.0,
          complex=SAME, vector=SAME, symbol="-", precedence=PREC_UNARY, summary="negation",
          linear=LINEAR_ALL, numpy="-{0}", kernel=KERNEL_NEG),
    # d/dy needs log(x): the backward pass asks for it only when y depends on a variable, so
    # (-2)**3 is fine and (-2)**y is a domain error there. At a zero base the peers' limits
    # (HIPS autograd, PyTorch, JAX): 0**0 = 1, d/dx x**0 = 0 (_pow_slope) and
    # d/dy 0**y = xlogy(0, 0) = 0 for y > 0.
    binary("pow", math.pow, _pow_slope, _pow_log_slope, domain=forms.power_domain,
           complex=forms.complex_pow, vector=lambda np, x, y: np.power(x, y),
           symbol="**", precedence=PREC_POWER, right_assoc=True, numpy="{0} ** {1}",
           summary="x to the power y (a negative x needs a constant integer y)",
           kernel=KERNEL_POW),
    # --- exponentials and logarithms --------------------------------------------------------
    unary("exp", math.exp, lambda x, out: out, complex=cmath.exp, ufunc="exp", summary="e ** x"),
    unary("log", math.log, lambda x, out: 1.0 / x, domain=forms.positive, ufunc="log",
          complex=cmath.log, summary="natural logarithm", aliases=("ln",)),
    unary("log2", math.log2, lambda x, out: 1.0 / (x * F.log(2.0)), domain=forms.positive,
          complex=lambda x: cmath.log(x) / math.log(2.0), ufunc="log2", summary="base-2 logarithm"),
    unary("log10", math.log10, lambda x, out: 1.0 / (x * F.log(10.0)), domain=forms.positive,
          complex=cmath.log10, ufunc="log10", summary="base-10 logarithm"),
    unary("log1p", math.log1p, lambda x, out: 1.0 / (1.0 + x),
          domain=lambda x: None if x > -1.0 else "logarithm of a non-positive number (1 + x <= 0)",
          complex=forms.complex_log1p, ufunc="log1p", summary="log(1 + x), accurate for small x"),
    unary("expm1", math.expm1, lambda x, out: F.exp(x), complex=forms.complex_expm1,
          ufunc="expm1", summary="e ** x - 1, accurate for small x"),
    unary("exp2", special._exp2, lambda x, out: out * LN2,
          complex=lambda x: cmath.exp(x * LN2), ufunc="exp2", summary="2 ** x"),
    binary("logaddexp", special._logaddexp, lambda x, y, out: F.sigmoid(x - y),
           lambda x, y, out: F.sigmoid(y - x), complex=forms.complex_logaddexp,
           ufunc="logaddexp", summary="log(e ** x + e ** y) without overflow"),
    binary("logaddexp2", special._logaddexp2, lambda x, y, out: F.sigmoid((x - y) * LN2),
           lambda x, y, out: F.sigmoid((y - x) * LN2),
           complex=lambda x, y: forms.complex_logaddexp(x * LN2, y * LN2) / LN2,
           ufunc="logaddexp2", summary="log2(2 ** x + 2 ** y) without overflow"),
    binary("xlogy", special._xlogy, _xlogy_slope, lambda x, y, out: x / y,
           domain=lambda x, y: None if x == 0.0 or y > 0.0 else forms.positive(y),
           complex=lambda x, y: 0j if x == 0 else x * cmath.log(y), vector=forms.vector_xlogy,
           summary="x * log(y), and 0 where x = 0 (pow's d/dy at a zero base)"),
    unary("sqrt", math.sqrt, lambda x, out: 0.5 / out,
          domain=lambda x: None if x >= 0.0 else "square root of a negative number",
          complex=cmath.sqrt, ufunc="sqrt",
          summary="square root (its derivative at 0 is infinite: an error)"),
    unary("cbrt", special._cbrt, lambda x, out: 1.0 / (3.0 * out * out),
          complex=forms.complex_cbrt, ufunc="cbrt",
          summary="real cube root, negative for negative x (derivative at 0: an error)"),
    unary("rsqrt", special._rsqrt, lambda x, out: -0.5 * out / x,
          domain=lambda x: None if x > 0.0 else "reciprocal square root of a non-positive number",
          complex=lambda x: 1.0 / cmath.sqrt(x), vector=lambda np, x: 1.0 / np.sqrt(x),
          summary="1 / sqrt(x)"),
    unary("square", special._square, lambda x, out: 2.0 * x,
          complex=SAME, vector=SAME, numpy="np.square({0})", summary="x * x"),
    unary("reciprocal", special._reciprocal, lambda x, out: -out * out,
          domain=lambda x: None if x != 0.0 else "division by zero", complex=SAME, vector=SAME,
          numpy="1.0 / {0}", summary="1 / x (x = 0 is an error)"),
    # --- trigonometry -------------------------------------------------------------------------
    unary("sin", math.sin, lambda x, out: F.cos(x), complex=cmath.sin, ufunc="sin",
          summary="sine (radians)"),
    unary("cos", math.cos, lambda x, out: -F.sin(x), complex=cmath.cos, ufunc="cos",
          summary="cosine (radians)"),
    unary("tan", math.tan, lambda x, out: 1.0 + out * out, complex=cmath.tan, ufunc="tan",
          summary="tangent (radians)"),
    unary("asin", math.asin, lambda x, out: 1.0 / F.sqrt(_one_minus_square(x)),
          domain=forms.unit_interval, complex=cmath.asin, ufunc="arcsin", summary="arc sine",
          aliases=("arcsin",)),
    unary("acos", math.acos, lambda x, out: -1.0 / F.sqrt(_one_minus_square(x)),
          domain=forms.unit_interval, complex=cmath.acos, ufunc="arccos",
          summary="arc cosine", aliases=("arccos",)),
    unary("atan", math.atan, _atan_slope, complex=cmath.atan, ufunc="arctan",
          summary="arc tangent", aliases=("arctan",)),
    binary("atan2", math.atan2, lambda y, x, out: _atan2_slope(x, y),
           lambda y, x, out: _atan2_slope(-y, x), complex=forms.complex_atan2, ufunc="arctan2",
           summary="angle of the point (x, y), in C/Python argument order", aliases=("arctan2",)),
    binary("hypot", math.hypot, lambda x, y, out: _hypot_slope(x, y, out),
           lambda x, y, out: _hypot_slope(y, x, out), complex=forms.complex_hypot,
           ufunc="hypot", summary="sqrt(x**2 + y**2) without overflow"),
    unary("deg2rad", math.radians, lambda x, out: math.pi / 180.0,
          complex=lambda x: x * (math.pi / 180.0), ufunc="deg2rad",
          summary="degrees to radians: x * pi / 180", aliases=("radians",)),
    unary("rad2deg", math.degrees, lambda x, out: 180.0 / math.pi,
          complex=lambda x: x * (180.0 / math.pi), ufunc="rad2deg",
          summary="radians to degrees: x * 180 / pi", aliases=("degrees",)),
    # --- hyperbolic ----------------------------------------------------------------------------
    unary("sinh", math.sinh, lambda x, out: F.cosh(x), complex=cmath.sinh, ufunc="sinh",
          summary="hyperbolic sine"),
    unary("cosh", math.cosh, lambda x, out: F.sinh(x), complex=cmath.cosh, ufunc="cosh",
          summary="hyperbolic cosine"),
    unary("tanh", math.tanh, _tanh_slope, complex=cmath.tanh, ufunc="tanh",
          summary="hyperbolic tangent"),
    # tanh' = sech**2 as a formula: its value and its own derivative (-sech tanh) keep every
    # digit, at 0 and far out
    unary("sech", special._sech, lambda x, out: -out * F.tanh(x),
          complex=_complex_sech, vector=_vector_sech,  # np.cosh overflows, so not 1/np.cosh
          numpy="2 * np.exp(-np.abs({0})) / (1 + np.exp(-2 * np.abs({0})))",
          summary="hyperbolic secant 1/cosh(x), without overflow"),
    unary("asinh", math.asinh, lambda x, out: _inverse_hypot(x), complex=cmath.asinh,
          ufunc="arcsinh", summary="inverse hyperbolic sine", aliases=("arcsinh",)),
    unary("acosh", math.acosh, lambda x, out: 1.0 / F.sqrt(x - 1.0) / F.sqrt(x + 1.0),
          domain=lambda x: None if x >= 1.0 else "argument below 1", complex=cmath.acosh,
          ufunc="arccosh", aliases=("arccosh",),
          summary="inverse hyperbolic cosine, x >= 1 (derivative at 1: an error)"),
    unary("atanh", math.atanh, _atanh_slope, domain=forms.open_unit_interval,
          complex=cmath.atanh, ufunc="arctanh", summary="inverse hyperbolic tangent, -1 < x < 1",
          aliases=("arctanh",)),
]
