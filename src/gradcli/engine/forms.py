"""The complex forms (analytic continuations, for complex-step differentiation; a non-analytic op
follows its real part, keeping its kink conventions), vector forms (``vector(np, *arrays)``) and
domain checks (what is wrong with the operands, or None) that the op table's rows name where they
need more than one expression."""

from __future__ import annotations

import cmath
import math
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

# --- complex forms: analytic continuations; non-analytic ops follow the real part --------------

def complex_sigmoid(x: complex) -> complex:
    if x.real >= 0.0:
        return 1.0 / (1.0 + cmath.exp(-x))
    z = cmath.exp(x)
    return z / (1.0 + z)


def complex_softplus(x: complex) -> complex:
    if x.real > 0.0:
        return x + cmath.log(1.0 + cmath.exp(-x))
    return cmath.log(1.0 + cmath.exp(x))


def complex_atan2(y: complex, x: complex) -> complex:
    # atan(y/x) plus the constant branch offset that the real parts pick (0 or ±pi).
    if x.real != 0.0:
        return cmath.atan(y / x) + (math.atan2(y.real, x.real) - math.atan(y.real / x.real))
    return math.copysign(math.pi / 2.0, y.real) - cmath.atan(x / y)


def complex_hypot(x: complex, y: complex) -> complex:
    # Scaled like math.hypot, so that hypot(1e200, 1) does not overflow in x * x.
    scale = max(abs(x.real), abs(y.real)) or 1.0
    x, y = x / scale, y / scale
    return scale * cmath.sqrt(x * x + y * y)


def complex_abs(x: complex) -> complex:
    return x if x.real > 0.0 else (-x if x.real < 0.0 else 0j)


def complex_min(x: complex, y: complex) -> complex:
    return x if x.real < y.real else (y if y.real < x.real else (x + y) / 2.0)


def complex_max(x: complex, y: complex) -> complex:
    return x if x.real > y.real else (y if y.real > x.real else (x + y) / 2.0)


def complex_pow(x: complex, y: complex) -> complex:
    # Python refuses 0 to a complex power; the real path's limits: 0**0 = 1, 0**y = 0 for y > 0.
    if x == 0:
        if y == 0:
            return 1 + 0j
        if y.real > 0.0:
            return 0j
    return x ** y


def complex_log1p(x: complex) -> complex:
    # log(1 + x), its real part log|1 + x| without cancellation: log1p(a (2 + a) + b^2) / 2 for
    # small a, log(hypot(1 + a, b)) elsewhere (where 1 + a loses nothing that matters).
    a, b = complex(x).real, complex(x).imag
    real = (0.5 * math.log1p(a * (2.0 + a) + b * b) if abs(a) < 0.5
            else math.log(math.hypot(1.0 + a, b)))
    return complex(real, math.atan2(b, 1.0 + a))


def complex_expm1(x: complex) -> complex:
    # e^x - 1, its real part as expm1(a) cos b - 2 sin^2(b/2): no cancellation.
    a, b = complex(x).real, complex(x).imag
    return complex(math.expm1(a) * math.cos(b) - 2.0 * math.sin(b / 2.0) ** 2,
                   math.exp(a) * math.sin(b))


def complex_cbrt(x: complex) -> complex:
    # The real cube root continued: the principal root right of 0, its mirror image left of it.
    x = complex(x)
    return x ** (1.0 / 3.0) if x.real >= 0.0 else -((-x) ** (1.0 / 3.0))


def complex_logaddexp(x: complex, y: complex) -> complex:
    x, y = complex(x), complex(y)
    if x.real < y.real:
        x, y = y, x
    return x + complex_log1p(cmath.exp(y - x))


def complex_logit(x: complex) -> complex:
    x = complex(x)
    if 0.25 <= x.real <= 0.75:
        return complex_log1p((2.0 * x - 1.0) / (1.0 - x))
    return cmath.log(x / (1.0 - x))


def complex_clip(x: complex, lo: complex, hi: complex) -> complex:
    return complex_min(complex_max(x, lo), hi)


def complex_mod(x: complex, y: complex) -> complex:
    # x - q y with the integer q of the real parts: the real part is x % y, bit for bit.
    x, y = complex(x), complex(y)
    rest = x.real % y.real
    quotient = round((x.real - rest) / y.real)
    return complex(rest, x.imag - y.imag * quotient)


def complex_of_step(function: Callable[[float], float]) -> Callable[[complex], complex]:
    """The complex form of a step function (floor...): the real part's value, derivative 0."""
    return lambda x: complex(function(complex(x).real))


def complex_sinc(z: complex) -> complex:
    """sin(pi z)/(pi z) on complex z: near 0 by its series, where the quotient's imaginary part
    (what the complex step reads) would cancel."""
    if abs(z) >= 0.1:  # sin has period 2 in pi z: reduce the real part exactly, as _sinc does
        return cmath.sin(math.pi * complex(math.fmod(z.real, 2.0), z.imag)) / (math.pi * z)
    square = -(math.pi * z) ** 2
    total, term = 0j, 1 + 0j
    for k in range(1, 13):  # (pi z)^2k / (2k + 1)!, alternating
        total += term
        term *= square / ((2 * k) * (2 * k + 1))
    return total


# --- vector forms that need more than one NumPy call ----------------------------------------

def vector_xlogy(np: Any, x: Any, y: Any) -> Any:
    # log(y) only where x != 0: no flag (and no failed point) for 0 * log(0).
    shape = np.broadcast(x, y).shape
    logs = np.zeros(shape)
    np.log(y, out=logs, where=np.broadcast_to(x != 0.0, shape))
    product = x * logs
    return product if np.ndim(product) else product[()]


def vector_logit(np: Any, x: Any) -> Any:
    middle = np.abs(x - 0.5) <= 0.25
    return np.where(middle, np.log1p((2.0 * x - 1.0) / (1.0 - x)), np.log(x / (1.0 - x)))


def vector_sigmoid(np: Any, x: Any) -> Any:
    return np.exp(-np.logaddexp(0.0, -x))


def vector_clip(np: Any, x: Any, lo: Any, hi: Any) -> Any:
    """clip on arrays; where the bounds are out of order, NaN with NumPy's "invalid" flag (as
    ``np.log(-1)``), so the array and vector paths refuse it as the scalar path does."""
    out = np.minimum(np.maximum(x, lo), hi)
    disordered = np.greater(lo, hi)
    if np.any(disordered):
        out = np.where(disordered, np.sqrt(np.where(disordered, -1.0, 1.0)), out)
    return out


def vector_sinc(np: Any, x: Any) -> Any:
    """_sinc on arrays: the argument reduced exactly (fmod), 1 at 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(x == 0.0, 1.0, np.sin(np.pi * np.fmod(x, 2.0)) / (np.pi * x))


# --- domain checks: return a message when the operands are outside the op's domain -------------

def is_integer(y: float) -> bool:
    return y == math.floor(y)


def positive(x: float) -> str | None:
    return None if x > 0.0 else "logarithm of a non-positive number"


def unit_interval(x: float) -> str | None:
    return None if -1.0 <= x <= 1.0 else "argument outside [-1, 1]"


def nonzero_divisor(x: float, y: float) -> str | None:
    return None if y != 0.0 else "division by zero"


def power_domain(x: float, y: float) -> str | None:
    if x < 0.0 and not is_integer(y):
        return "negative base with a non-integer exponent"
    if x == 0.0 and y < 0.0:
        return "zero raised to a negative power"
    return None


def open_unit_interval(x: float) -> str | None:
    return None if -1.0 < x < 1.0 else "argument outside (-1, 1)"


def not_a_pole(x: float) -> str | None:
    if x <= 0.0 and is_integer(x):
        return "a pole of the gamma function (zero or a negative integer)"
    return None


def polygamma_domain(n: float, x: float) -> str | None:
    return order_problem("polygamma", n, MAX_POLYGAMMA_ORDER) or not_a_pole(x)


def order_problem(name: str, n: float, largest: float) -> str | None:
    if not (0.0 <= n <= largest and is_integer(n)):
        return f"the order n of {name}(n, x) must be an integer from 0 to {largest:g}"
    return None


MAX_POLYGAMMA_ORDER = 100  # the series' cost grows with n, and its values overflow beyond


def ive_domain(n: float, x: float) -> str | None:
    return order_problem("ive", n, MAX_IVE_ORDER)


MAX_IVE_ORDER = 30  # above, both of _ive's series would lose digits near |x| = n^2/4


def positive_pair(a: float, b: float) -> str | None:
    return None if a > 0.0 and b > 0.0 else "beta needs positive arguments"


def ordered_bounds(x: float, lo: float, hi: float) -> str | None:
    return None if lo <= hi else "clip's lower bound is above its upper bound"
