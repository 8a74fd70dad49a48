"""The op table: every operation gradcli knows, each described once.

A row holds an op's arity, forward function, one derivative rule per operand, domain check,
complex and vector forms, printed form and a one-line summary. Everything else -- the parser's
function names, the graph's forward and backward passes, the printer, ``gradcli functions`` and
docs/functions.md, the tests -- reads this table, so adding a function is one row here plus its
test points (and ``python tests/test_op_table.py`` to rewrite docs/functions.md).

A derivative rule receives the operand values and the op's output, ``rule(*operands, out)``, and
returns the local partial derivative d(out)/d(operand). Receiving ``out`` lets exp, tanh, sqrt and
sigmoid reuse their result. Rules are written only with arithmetic operators and table functions
called through ``F`` (``F.cos(x)``), so the same rule works on floats, on complex numbers, on NumPy
arrays and on anything that implements ``apply`` (graph nodes, for symbolic derivatives). The
operands are named by the first rule's parameters (``atan2(y, x)``) wherever a row is listed.

Besides the float ``forward``, every row states two more forms, by keyword and with no default
(a row that leaves one out fails when the table is built):

- ``complex``: the analytic continuation, for complex-step differentiation (``--check-method
  complex``); for ops that are not analytic it follows the real part, so that abs/relu/min/max
  keep the conventions below.
- ``vector``: ``vector(np, *arrays)``, NumPy, for evaluating many points at once (sweeps, check
  files, plots, the check's vectorised first pass); NumPy is imported only when an array arrives.

Either may be ``SAME`` -- ``forward`` itself already takes complex numbers and arrays (the
arithmetic operators) -- or ``NONE``, the row has no such form:

- no ``vector`` form: ``apply_vector`` falls back to ``forward`` point by point
  (``elementwise``): NaN where the domain check refuses a point, ``forward`` raises or its result
  is not finite, and NumPy's "invalid" flag raised for those points, as ``np.log(-1)`` would, so
  that the vector passes mark them failed and callers re-run them on the scalar path for the
  exact message. The values are the scalar path's, bit for bit (the same float function), and
  gradients stay vectorised (the rules run on whole arrays through ``F``); only the speed differs
  (a Python call a point: some ten times slower than a NumPy form), so a row adds a NumPy form
  when its sweeps get large.
- no ``complex`` form: ``--check-method complex`` refuses a program where such an op depends on
  a variable, with a usage error (exit status 2) that names the function and suggests
  ``--check-method central`` or ``richardson`` (see gradcheck/point.py); ``apply_complex`` raises
  the same error for any other caller. Nothing else needs complex numbers.

The float functions of rows that need more than one expression live in engine/special.py
(written against ``math`` alone: ``diff --format python`` copies them), their complex and vector
forms and domain checks in engine/forms.py; the rows, one table, are here, grouped by section.
A row's ``aliases`` are other names people type (``ln`` for log): the parser accepts them, and
everything prints the row's own name.

Conventions where mathematicians shrug and peers disagree (JAX says abs'(0)=1, PyTorch 0):

- kinks: abs'(0) = 0; relu, leaky_relu and selu take the slope of their left side at 0
  (relu'(0) = 0, leaky_relu'(0) = a), as PyTorch and JAX; min/max at a tie split the gradient
  equally (1/2 each), and so do clip and hardtanh at a bound (they are min and max).
- jumps: sign, floor, ceil, round and trunc have slope 0 everywhere, at a jump too; mod's slopes
  are 1 and -floor(x / y) everywhere. The finite-difference check flags a jump.
- pow at a zero base (HIPS autograd, PyTorch, JAX): 0**0 = 1, d/dx x**0 = 0 at x = 0, and
  d/dy 0**y = 0 for y > 0 (xlogy); d/dy at 0**0 is an error (0**y jumps there).
- polygamma(n, x): the order n takes whole values only; d/dn is 0, as JAX has it.
"""

from __future__ import annotations

import cmath
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gradcli.engine import forms, special
from gradcli.errors import NumericError, UsageError

Rule = Callable[..., Any]

# Printing precedence: higher binds tighter. An atom (number, name, call) never needs parentheses.
PREC_SUM, PREC_PRODUCT, PREC_UNARY, PREC_POWER, PREC_ATOM = 1, 2, 3, 4, 9
# Looser than arithmetic, as in Python: `or`, `and`, `not`, comparisons (which never chain).
PREC_OR, PREC_AND, PREC_NOT, PREC_COMPARE = -3, -2, -1, 0
PREC_NONE = -9  # a function's argument: nothing needs parentheses there


class Form:
    """What a row gives for a form that is not a function of its own: ``SAME`` or ``NONE``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


SAME = Form("SAME")  # ``forward`` itself takes complex numbers / NumPy arrays
NONE = Form("NONE")  # the row has no such form (see the module docstring for what happens)


@dataclass(frozen=True)
class Op:
    """One row of the table. ``complex``, ``vector`` and ``summary`` are required keywords."""

    name: str
    arity: int
    forward: Callable[..., float]
    rules: tuple[Rule, ...]
    domain: Callable[..., str | None] | None = None
    symbol: str | None = None  # infix or prefix symbol; None prints as name(args)
    precedence: int = PREC_ATOM
    right_assoc: bool = False
    complex: Callable[..., complex] | Form = field(kw_only=True)  # a function, SAME or NONE
    vector: Callable[..., Any] | Form = field(kw_only=True)  # vector(np, *arrays), SAME or NONE
    summary: str = field(kw_only=True)  # one line: what it computes (gradcli functions)
    aliases: tuple[str, ...] = field(default=(), kw_only=True)  # other names people type: ln

    def __post_init__(self) -> None:
        for form in ("complex", "vector"):
            given = getattr(self, form)
            if not (given is SAME or given is NONE or callable(given)):  # a Form is not
                raise TypeError(f"op {self.name}: {form}= must be a function, SAME or NONE, "
                                f"not {given!r}")
        if len(self.rules) != self.arity:
            raise TypeError(f"op {self.name}: {self.arity} operands but {len(self.rules)} rules")
        if not self.summary.strip():
            raise TypeError(f"op {self.name}: summary= says in one line what it computes")

    @property
    def is_function(self) -> bool:
        """Written as ``name(args)`` in the language (as opposed to an operator symbol)."""
        return self.symbol is None

    def apply_complex(self, *args: complex) -> complex:
        """The complex form on complex operands (``SAME``: forward; ``NONE``: a UsageError)."""
        form = self.complex
        if isinstance(form, Form):
            if form is NONE:
                raise self.no_complex_form()
            return self.forward(*args)
        return form(*args)

    def apply_vector(self, *args: Any) -> Any:
        """The vector form on arrays (``SAME``: forward; ``NONE``: ``elementwise``)."""
        form = self.vector
        if isinstance(form, Form):
            return elementwise(self, numpy(), *args) if form is NONE else self.forward(*args)
        return form(numpy(), *args)

    def no_complex_form(self) -> UsageError:
        """The error for a complex-step evaluation of a row without a complex form."""
        return UsageError(f"{self.name} has no complex-step form, so --check-method complex "
                          "cannot check this program",
                          hint="use --check-method central or --check-method richardson")

    @property
    def operands(self) -> tuple[str, ...]:
        """The operands' names, as the first derivative rule calls them (``y, x`` for atan2)."""
        code = getattr(self.rules[0], "__code__", None) if self.rules else None
        names = code.co_varnames[:self.arity] if code is not None else ()
        return tuple(names) if len(names) == self.arity else ("x", "y", "z")[:self.arity]


def elementwise(op: Op, np: Any, *args: Any) -> Any:
    """``op`` on arrays (or NumPy scalars) by its float ``forward``, point by point: the vector
    form of a row that has none (module docstring).

    A point where the domain check refuses, ``forward`` raises or its result is not finite is NaN,
    and NumPy's "invalid" flag is raised for it: the vector passes learn of non-finite values from
    the flags (``vector._Finiteness``), as they do from ``np.log(-1)``. A uniform value (NumPy
    scalars only) stays a NumPy scalar.
    """
    forward, domain = op.forward, op.domain
    isfinite, nan = math.isfinite, math.nan

    def at(*point: float) -> float:
        if domain is not None and domain(*point) is not None:
            return nan
        try:
            value = forward(*point)
        except (ArithmeticError, ValueError):
            return nan
        return value if isfinite(value) else nan

    out = np.asarray(np.frompyfunc(at, op.arity, 1)(*args), dtype=float)
    failed = np.isnan(out)
    if failed.any():
        np.divide(0.0, 0.0, out=out, where=failed)  # NaN again, but with the flag
    return out if out.ndim else out[()]


def numpy() -> Any:
    """NumPy, imported on first use so that the scalar paths never pay for it."""
    import numpy as np

    return np


class _TableFunctions:
    """``F.name(*args)``: apply a table op to floats, complex numbers, arrays or graph nodes.

    This is what lets derivative rules be written once for every kind of value.
    """

    def __getattr__(self, name: str) -> Callable[..., Any]:
        op = OPS[name]
        forward = op.forward

        def call(*args: Any) -> Any:
            # Floats first, in a plain loop: the scalar backward pass calls this in its rules.
            for arg in args:
                kind = type(arg)
                if kind is not float and kind is not int:
                    return _apply_to_values(op, args)
            return forward(*args)

        setattr(self, name, call)  # cache: the next lookup is a plain attribute
        return call


def _apply_to_values(op: Op, args: tuple[Any, ...]) -> Any:
    """``op`` on operands that are not all floats: graph nodes, complex numbers or arrays."""
    for arg in args:
        if hasattr(arg, "apply"):
            return arg.apply(op, *args)
    if any(isinstance(arg, complex) for arg in args):
        return op.apply_complex(*args)
    return op.apply_vector(*args)


F = _TableFunctions()


# --- forward helpers that need more than one expression -----------------------------------------

def _sigmoid(x: float) -> float:
    # Two branches so that exp never overflows: sigmoid(-1000) is 0, not an OverflowError.
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def _softplus(x: float) -> float:
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): exact for large |x|, no overflow.
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def _sign(x: float) -> float:
    return 0.0 if x == 0.0 else math.copysign(1.0, x)


def _relu(x: float) -> float:
    return max(0.0, x)


def _heaviside(x: float) -> float:
    return 1.0 if x > 0.0 else 0.0


# --- derivative rules that need more than one expression ------------------------------------

def _above(x: Any) -> Any:
    """1 where x > 0, else 0 -- relu's kink convention: at 0 the left side's slope."""
    return F.heaviside(x)


GELU_TANH_SCALE = 1.5957691216057308  # 2 sqrt(2/pi): gelu_tanh(x) = x sigmoid(scale (x + c x^3))
SELU_SCALE, SELU_ALPHA = 1.0507009873554805, 1.6732632423543772
LN2 = math.log(2.0)
TWO_OVER_ROOT_PI = 2.0 / math.sqrt(math.pi)
INV_ROOT_TWO_PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_HALF = math.sqrt(0.5)


def _pow_slope(x: Any, y: Any, out: Any) -> Any:
    """d/dx x**y = y x**(y - 1), and 0 where y = 0 (x**0 is 1 everywhere, at x = 0 too): the
    exponent is y - abs(sign(y)). A float y other than 0 -- every x**2 of the scalar backward
    pass -- skips the two table calls that only matter at 0; so does a formula (``_written``)."""
    if (type(y) is float and y != 0.0) or _written(y):
        return y * x ** (y - 1.0)
    return y * x ** (y - F.abs(F.sign(y)))


def _pow_log_slope(x: Any, y: Any, out: Any) -> Any:
    """d/dy x**y = x**y log(x), and 0 at a zero base (xlogy) -- written plainly in a formula."""
    return out * F.log(x) if _written(x) and not _is_zero(x) else F.xlogy(out, x)


def _mod_quotient(x: Any, y: Any, out: Any) -> Any:
    """d/dy mod(x, y) = -floor(x/y), as a formula prints it; on numbers the quotient that
    mod actually took, (x - out)/y rounded, which one ulp from a jump may differ from floor's."""
    if _written(x) or _written(y):
        return -F.floor(x / y)
    return -F.round((x - out) / y)


def _written(value: Any) -> bool:
    """A graph node: the rule is building a printed derivative (``gradcli diff``). There the
    zero-base limits are left out, so that d/dx x**y prints as ``y*x**(y - 1)`` and d/dy as
    ``x**y*log(x)``, as SymPy and a person write them; they differ from the numbers ``eval``
    computes only at x = 0 (docs/derivatives.md), where the printed forms are undefined."""
    # a graph node has an op; the probes of vector._reads have ``apply`` only, and take the
    # path that numbers take (what they find out is what arrays will read)
    return hasattr(value, "apply") and hasattr(value, "op")


def _is_zero(node: Any) -> bool:
    """The constant 0 in a formula (``0**y``): its limit is the formula, not log(0)."""
    return node.op.name == "const" and node.value == 0.0


# --- rules with a form for numbers and a form for formulas -----------------------------------
# A formula (``gradcli diff``) is printed in the textbook form; a Hessian evaluates that formula's
# gradient with the float rules, so what a formula's own value loses to cancellation (1 - tanh**2
# at x = 20) does not reach it: d/dx (1 - tanh**2) = -2 tanh tanh', with tanh' the float rule.
# Numbers (eval's gradient, arrays, the complex step) take the form that keeps every digit.

def _one_minus_square(x: Any) -> Any:
    """1 - x**2 of asin' and acos', on numbers as (1 - x)(1 + x): both factors are exact near
    +-1, where 1 - x*x cancels (asin' at 1 - 1e-8 kept 8 digits). In a formula 1 - x**2, whose
    gradient -2x keeps its digits near 0 (a Hessian's), where that of (1 - x)(1 + x),
    (1 - x) - (1 + x), would not. (atanh' is written (1 - x)(1 + x) everywhere.)"""
    return 1.0 - x * x if _written(x) else (1.0 - x) * (1.0 + x)


def _digamma_drop(a: Any, b: Any) -> Any:
    """digamma(b) - digamma(a + b), lbeta's slope in b: on floats without subtracting
    (special.digamma_difference), elsewhere (a formula, arrays) as written."""
    if type(a) is float and type(b) is float:
        return -special.digamma_difference(a, b)
    return F.digamma(b) - F.digamma(a + b)


BESSEL_SLOPE_LIMIT = 1e6  # |x| beyond which ive's slope has lost more than 2e-10 relatively


def _bessel(x: Any, neighbours: Any) -> Any:
    """``neighbours`` (the I_n-1 + I_n+1 of ive's slope), or a NumericError on a float x past
    BESSEL_SLOPE_LIMIT: the slope is their half less the function, which agree to
    1 - O(1/x), so it keeps about 16 - log10|x| digits, and none from |x| = 1e16 on."""
    if type(x) is float and abs(x) > BESSEL_SLOPE_LIMIT:
        raise NumericError(f"the derivative of i0e, i1e or ive at |x| = {abs(x):g} would lose its "
                           f"digits (it is a difference of nearly equal terms beyond "
                           f"|x| = {BESSEL_SLOPE_LIMIT:g})")
    return neighbours


def _sigmoid_slope(x: Any, out: Any) -> Any:
    """sigmoid(x) sigmoid(-x); out (1 - out) is 0 from x = 37 on, where the answer is 1e-16."""
    return out * (1.0 - out) if _written(x) else out * F.sigmoid(-x)


def _silu_slope(x: Any, out: Any) -> Any:
    """sigmoid(x) (1 + x (1 - sigmoid(x))), 1 - sigmoid(x) written sigmoid(-x): its value
    would cancel for x > 1, in a Hessian too (which evaluates it)."""
    return F.sigmoid(x) * (1.0 + x * F.sigmoid(-x))


def _tanh_slope(x: Any, out: Any) -> Any:
    """1 - tanh**2, on numbers as 4 sigmoid(2x) sigmoid(-2x): 1 - tanh**2 cancels for |x| > 1
    (it is 0 from |x| = 19 on, where the answer is 1e-16); 1/cosh**2 would overflow."""
    return 1.0 - out * out if _written(x) else 4.0 * F.sigmoid(2.0 * x) * F.sigmoid(-2.0 * x)


def _atan_slope(x: Any, out: Any) -> Any:
    """1/(1 + x**2) as square(1/hypot(x, 1)): x**2 overflows at 1.3e154, and in a formula (a
    Hessian) so would x**2 or hypot(x, 1)**2, where the answers are tiny floats."""
    return F.square(_inverse_hypot(x))


def _atan2_slope(x: Any, y: Any) -> Any:
    """x/(x**2 + y**2) (d/dy atan2(y, x); d/dx is this of -y, x), on numbers as x/h/h with
    h = hypot(x, y): x**2 + y**2 overflows at 1e154 and underflows to 0 at 1e-162."""
    if _written(x) or _written(y):
        return x / (x * x + y * y)
    return x / F.hypot(x, y) / F.hypot(x, y)


def _inverse_hypot(x: Any) -> Any:
    """1/sqrt(x**2 + 1) without x**2, which overflows at |x| = 1.3e154."""
    return 1.0 / F.hypot(x, 1.0)


TINY_NORMAL = 2.2250738585072014e-308


def _hypot_slope(x: Any, y: Any, out: Any) -> Any:
    """d/dx hypot(x, y) = x / hypot(x, y). Where hypot is subnormal it has few digits
    (hypot(5e-324, 5e-324) rounds to 5e-324), so on numbers x and y are first divided by the
    larger: the quotient is the same, and hypot has its digits back. A formula is x/hypot(x, y)."""
    if _written(x) or _written(y) or (type(out) is float and out >= TINY_NORMAL):
        return x / out
    larger = F.max(F.abs(x), F.abs(y))
    return x / larger / F.hypot(x / larger, y / larger)


def _xlogy_slope(x: Any, y: Any, out: Any) -> Any:
    """d/dx xlogy(x, y) = log(y); at y = 0, where that is -inf, 0 if x = 0 too (PyTorch's
    xlogy(x != 0, y) there): so the second derivative of 0**y in y, xlogy(0**y != 0, 0)
    d(0**y)/dy, is 0 for y > 0, as PyTorch and JAX have it. A formula is written log(y),
    except at a zero y (0**y's)."""
    if _written(x) or _written(y):
        return F.xlogy(F.ne(x, 0.0), y) if _written(y) and _is_zero(y) else F.log(y)
    return F.xlogy(F.logical_or(F.ne(x, 0.0), F.ne(y, 0.0)), y)


ORDER_LIMITS = {"polygamma": forms.MAX_POLYGAMMA_ORDER, "ive": forms.MAX_IVE_ORDER}


def _next_order(n: Any, name: str) -> Any:
    """n + 1, the order of polygamma's and ive's derivative. In a formula (``gradcli diff``, a
    Hessian) a constant n at the largest order is a NumericError: the derivative would be a
    function that ``eval`` refuses. On numbers n + 1 is computed (gradients of the largest
    order: the float function has no limit of its own)."""
    if _written(n) and n.op.name == "const" and n.value + 1.0 > ORDER_LIMITS[name]:
        order = f"{n.value:g}"
        raise NumericError(
            f"the derivative of {name}({order}, x) is {name}({n.value + 1.0:g}, x), above the "
            f"largest order of {name}, {ORDER_LIMITS[name]}",
            hint=f"differentiate {name} of an order below {ORDER_LIMITS[name]}")
    return n + 1.0


def _gelu_tanh_slope(x: Any, out: Any) -> Any:
    u = GELU_TANH_SCALE * (x + 0.044715 * x * x * x)  # 1 - sigmoid(u) is sigmoid(-u): no 1 - s
    s = F.sigmoid(u)
    return s + x * s * F.sigmoid(-u) * GELU_TANH_SCALE * (1.0 + 0.134145 * x * x)


def _mish_slope(x: Any, out: Any) -> Any:
    t = F.tanh(F.softplus(x))
    return t + x * (1.0 - t * t) * F.sigmoid(x)


def _selu_slope(x: Any, out: Any) -> Any:
    inside = _above(x)
    return SELU_SCALE * (inside + (1.0 - inside) * SELU_ALPHA * F.exp(F.min(x, 0.0)))


def _binary(name: str, forward: Callable[..., float], dx: Rule, dy: Rule, **row: Any) -> Op:
    return Op(name, 2, forward, (dx, dy), **row)


def _op(name: str, forward: Callable[..., float], rules: tuple[Rule, ...], **row: Any) -> Op:
    return Op(name, len(rules), forward, rules, **row)


def _unary(name: str, forward: Callable[..., float], dx: Rule, **row: Any) -> Op:
    return Op(name, 1, forward, (dx,), **row)


_ROWS: list[Op] = [
    # --- arithmetic: the grammar's operators (forward takes complex numbers and arrays too) ----
    _binary("add", operator.add, lambda x, y, out: 1.0, lambda x, y, out: 1.0,
            complex=SAME, vector=SAME, symbol="+", precedence=PREC_SUM, summary="sum"),
    _binary("sub", operator.sub, lambda x, y, out: 1.0, lambda x, y, out: -1.0,
            complex=SAME, vector=SAME, symbol="-", precedence=PREC_SUM, summary="difference"),
    _binary("mul", operator.mul, lambda x, y, out: y, lambda x, y, out: x,
            complex=SAME, vector=SAME, symbol="*", precedence=PREC_PRODUCT, summary="product"),
    _binary("div", operator.truediv, lambda x, y, out: 1.0 / y, lambda x, y, out: -out / y,
            domain=forms.nonzero_divisor, complex=SAME, vector=SAME, symbol="/",
            precedence=PREC_PRODUCT, summary="quotient (division by zero is an error)"),
    _unary("neg", operator.neg, lambda x, out: -1.0,
           complex=SAME, vector=SAME, symbol="-", precedence=PREC_UNARY, summary="negation"),
    # d/dy needs log(x): the backward pass asks for it only when y depends on a variable, so
    # (-2)**3 is fine and (-2)**y is a domain error there. At a zero base the peers' limits
    # (HIPS autograd, PyTorch, JAX): 0**0 = 1, d/dx x**0 = 0 (_pow_slope) and
    # d/dy 0**y = xlogy(0, 0) = 0 for y > 0.
    _binary("pow", math.pow, _pow_slope, _pow_log_slope, domain=forms.power_domain,
            complex=forms.complex_pow, vector=lambda np, x, y: np.power(x, y),
            symbol="**", precedence=PREC_POWER, right_assoc=True,
            summary="x to the power y (a negative x needs a constant integer y)"),
    # --- exponentials and logarithms --------------------------------------------------------
    _unary("exp", math.exp, lambda x, out: out,
           complex=cmath.exp, vector=lambda np, x: np.exp(x), summary="e ** x"),
    _unary("log", math.log, lambda x, out: 1.0 / x, domain=forms.positive,
           complex=cmath.log, vector=lambda np, x: np.log(x), summary="natural logarithm",
           aliases=("ln",)),
    _unary("log2", math.log2, lambda x, out: 1.0 / (x * F.log(2.0)), domain=forms.positive,
           complex=lambda x: cmath.log(x) / math.log(2.0), vector=lambda np, x: np.log2(x),
           summary="base-2 logarithm"),
    _unary("log10", math.log10, lambda x, out: 1.0 / (x * F.log(10.0)), domain=forms.positive,
           complex=cmath.log10, vector=lambda np, x: np.log10(x), summary="base-10 logarithm"),
    _unary("log1p", math.log1p, lambda x, out: 1.0 / (1.0 + x), domain=forms.above_minus_one,
           complex=forms.complex_log1p, vector=lambda np, x: np.log1p(x),
           summary="log(1 + x), accurate for small x"),
    _unary("expm1", math.expm1, lambda x, out: F.exp(x),
           complex=forms.complex_expm1, vector=lambda np, x: np.expm1(x),
           summary="e ** x - 1, accurate for small x"),
    _unary("exp2", special._exp2, lambda x, out: out * LN2,
           complex=lambda x: cmath.exp(x * LN2), vector=lambda np, x: np.exp2(x),
           summary="2 ** x"),
    _binary("logaddexp", special._logaddexp, lambda x, y, out: F.sigmoid(x - y),
            lambda x, y, out: F.sigmoid(y - x),
            complex=forms.complex_logaddexp, vector=lambda np, x, y: np.logaddexp(x, y),
            summary="log(e ** x + e ** y) without overflow"),
    _binary("logaddexp2", special._logaddexp2, lambda x, y, out: F.sigmoid((x - y) * LN2),
            lambda x, y, out: F.sigmoid((y - x) * LN2),
            complex=lambda x, y: forms.complex_logaddexp(x * LN2, y * LN2) / LN2,
            vector=lambda np, x, y: np.logaddexp2(x, y),
            summary="log2(2 ** x + 2 ** y) without overflow"),
    _binary("xlogy", special._xlogy, _xlogy_slope, lambda x, y, out: x / y,
            domain=forms.log_of_y, complex=forms.complex_xlogy, vector=forms.vector_xlogy,
            summary="x * log(y), and 0 where x = 0 (pow's d/dy at a zero base)"),
    _unary("sqrt", math.sqrt, lambda x, out: 0.5 / out, domain=forms.non_negative,
           complex=cmath.sqrt, vector=lambda np, x: np.sqrt(x),
           summary="square root (its derivative at 0 is infinite: an error)"),
    _unary("cbrt", special._cbrt, lambda x, out: 1.0 / (3.0 * out * out),
           complex=forms.complex_cbrt, vector=lambda np, x: np.cbrt(x),
           summary="real cube root, negative for negative x (derivative at 0: an error)"),
    _unary("rsqrt", special._rsqrt, lambda x, out: -0.5 * out / x, domain=forms.positive_root,
           complex=lambda x: 1.0 / cmath.sqrt(x), vector=lambda np, x: 1.0 / np.sqrt(x),
           summary="1 / sqrt(x)"),
    _unary("square", special._square, lambda x, out: 2.0 * x,
           complex=SAME, vector=SAME, summary="x * x"),
    _unary("reciprocal", special._reciprocal, lambda x, out: -out * out, domain=forms.nonzero,
           complex=SAME, vector=SAME, summary="1 / x (x = 0 is an error)"),
    # --- trigonometry -------------------------------------------------------------------------
    _unary("sin", math.sin, lambda x, out: F.cos(x),
           complex=cmath.sin, vector=lambda np, x: np.sin(x), summary="sine (radians)"),
    _unary("cos", math.cos, lambda x, out: -F.sin(x),
           complex=cmath.cos, vector=lambda np, x: np.cos(x), summary="cosine (radians)"),
    _unary("tan", math.tan, lambda x, out: 1.0 + out * out,
           complex=cmath.tan, vector=lambda np, x: np.tan(x), summary="tangent (radians)"),
    _unary("asin", math.asin, lambda x, out: 1.0 / F.sqrt(_one_minus_square(x)),
           domain=forms.unit_interval,
           complex=cmath.asin, vector=lambda np, x: np.arcsin(x), summary="arc sine",
           aliases=("arcsin",)),
    _unary("acos", math.acos, lambda x, out: -1.0 / F.sqrt(_one_minus_square(x)),
           domain=forms.unit_interval,
           complex=cmath.acos, vector=lambda np, x: np.arccos(x), summary="arc cosine",
           aliases=("arccos",)),
    _unary("atan", math.atan, _atan_slope,
           complex=cmath.atan, vector=lambda np, x: np.arctan(x), summary="arc tangent",
           aliases=("arctan",)),
    _binary("atan2", math.atan2, lambda y, x, out: _atan2_slope(x, y),
            lambda y, x, out: _atan2_slope(-y, x),
            complex=forms.complex_atan2, vector=lambda np, y, x: np.arctan2(y, x),
            summary="angle of the point (x, y), in C/Python argument order",
            aliases=("arctan2",)),
    _binary("hypot", math.hypot, lambda x, y, out: _hypot_slope(x, y, out),
            lambda x, y, out: _hypot_slope(y, x, out),
            complex=forms.complex_hypot, vector=lambda np, x, y: np.hypot(x, y),
            summary="sqrt(x**2 + y**2) without overflow"),
    _unary("deg2rad", math.radians, lambda x, out: math.pi / 180.0,
           complex=lambda x: x * (math.pi / 180.0), vector=lambda np, x: np.deg2rad(x),
           summary="degrees to radians: x * pi / 180", aliases=("radians",)),
    _unary("rad2deg", math.degrees, lambda x, out: 180.0 / math.pi,
           complex=lambda x: x * (180.0 / math.pi), vector=lambda np, x: np.rad2deg(x),
           summary="radians to degrees: x * 180 / pi", aliases=("degrees",)),
    # --- hyperbolic ----------------------------------------------------------------------------
    _unary("sinh", math.sinh, lambda x, out: F.cosh(x),
           complex=cmath.sinh, vector=lambda np, x: np.sinh(x), summary="hyperbolic sine"),
    _unary("cosh", math.cosh, lambda x, out: F.sinh(x),
           complex=cmath.cosh, vector=lambda np, x: np.cosh(x), summary="hyperbolic cosine"),
    _unary("tanh", math.tanh, _tanh_slope,
           complex=cmath.tanh, vector=lambda np, x: np.tanh(x), summary="hyperbolic tangent"),
    _unary("asinh", math.asinh, lambda x, out: _inverse_hypot(x),
           complex=cmath.asinh, vector=lambda np, x: np.arcsinh(x),
           summary="inverse hyperbolic sine", aliases=("arcsinh",)),
    _unary("acosh", math.acosh, lambda x, out: 1.0 / F.sqrt(x - 1.0) / F.sqrt(x + 1.0),
           domain=forms.at_least_one, complex=cmath.acosh, vector=lambda np, x: np.arccosh(x),
           summary="inverse hyperbolic cosine, x >= 1 (derivative at 1: an error)",
           aliases=("arccosh",)),
    _unary("atanh", math.atanh, lambda x, out: 1.0 / ((1.0 - x) * (1.0 + x)),
           domain=forms.open_unit_interval, complex=cmath.atanh, vector=lambda np, x: np.arctanh(x),
           summary="inverse hyperbolic tangent, -1 < x < 1", aliases=("arctanh",)),
    # --- special functions: no complex form (math has none to continue); NumPy has none
    # either, so their sweeps call the float function point by point ------------------------
    _unary("erf", math.erf, lambda x, out: TWO_OVER_ROOT_PI * F.exp(-x * x),
           complex=NONE, vector=NONE, summary="error function"),
    _unary("sinc", special._sinc, lambda x, out: F.dsinc(x),
           complex=forms.complex_sinc,
           vector=forms.vector_sinc, summary="sin(pi*x)/(pi*x), 1 at 0 (NumPy's sinc)"),
    _unary("dsinc", special._dsinc,
           lambda x, out: -(math.pi * math.pi) * F.sinc(x) - 2.0 * out / x, complex=NONE,
           vector=NONE, summary="sinc's derivative, exact near 0 (and so is its own, but "
                                "not at 0 itself; higher orders lose digits near 0)"),
    _unary("erfc", math.erfc, lambda x, out: -TWO_OVER_ROOT_PI * F.exp(-x * x),
           complex=NONE, vector=NONE, summary="1 - erf(x), accurate where erf(x) is near 1"),
    _unary("erfinv", special._erfinv, lambda x, out: F.exp(out * out) / TWO_OVER_ROOT_PI,
           domain=forms.open_unit_interval, complex=NONE, vector=NONE,
           summary="inverse of erf, -1 < x < 1", aliases=("erf_inv",)),
    _unary("gamma", math.gamma, lambda x, out: out * F.digamma(x), domain=forms.not_a_pole,
           complex=NONE, vector=NONE,
           summary="gamma function (0 and the negative integers are poles: an error)"),
    _unary("lgamma", special._lgamma, lambda x, out: F.digamma(x), domain=forms.not_a_pole,
           complex=NONE, vector=NONE, summary="log |gamma(x)|"),
    _unary("digamma", special._digamma, lambda x, out: F.polygamma(1.0, x),
           domain=forms.not_a_pole, complex=NONE, vector=NONE,
           summary="d/dx lgamma(x), the psi function"),
    # The order n changes only in whole steps: d/dn is 0, as for floor (a constant n is usual).
    _binary("polygamma", special._polygamma, lambda n, x, out: 0.0,
            lambda n, x, out: F.polygamma(_next_order(n, "polygamma"), x),
            domain=forms.polygamma_domain,
            complex=NONE, vector=NONE,
            summary="n-th derivative of digamma, n a whole number from 0 to 100"),
    # Scaled Bessel functions exp(-|x|) I_n(x): I_n' = (I_n-1 + I_n+1)/2, I_-1 = I_1, and the
    # factor exp(-|x|) adds -sign(x) times the function (a kink at 0 for even n: slope 0 there,
    # as abs). The order n changes only in whole steps: d/dn is 0, as for polygamma.
    _unary("i0e", special._i0e, lambda x, out: _bessel(x, F.i1e(x)) - F.sign(x) * out,
           complex=NONE,
           vector=NONE, summary="exp(-|x|) I0(x), the scaled modified Bessel function of order 0",
           aliases=("bessel_i0e",)),
    _unary("i1e", special._i1e,
           lambda x, out: 0.5 * _bessel(x, F.i0e(x) + F.ive(2.0, x)) - F.sign(x) * out,
           complex=NONE,
           vector=NONE, summary="exp(-|x|) I1(x), the scaled modified Bessel function of order 1",
           aliases=("bessel_i1e",)),
    _binary("ive", special._ive, lambda n, x, out: 0.0,
            lambda n, x, out: 0.5 * _bessel(x, F.ive(F.abs(n - 1.0), x)
                                            + F.ive(_next_order(n, "ive"), x))
            - F.sign(x) * out, domain=forms.ive_domain, complex=NONE, vector=NONE,
            summary="exp(-|x|) I_n(x), n a whole number from 0 to 30 (SciPy's ive)"),
    _binary("beta", special._beta, lambda a, b, out: out * _digamma_drop(b, a),
            lambda a, b, out: out * _digamma_drop(a, b), domain=forms.positive_pair,
            complex=NONE, vector=NONE,
            summary="beta function gamma(a) gamma(b) / gamma(a + b), a, b > 0"),
    _binary("lbeta", special._lbeta, lambda a, b, out: _digamma_drop(b, a),
            lambda a, b, out: _digamma_drop(a, b), domain=forms.positive_pair,
            complex=NONE, vector=NONE, summary="log of beta(a, b), a, b > 0"),
    # --- activations and pieces ------------------------------------------------------------
    _unary("sigmoid", _sigmoid, _sigmoid_slope,
           complex=forms.complex_sigmoid, vector=lambda np, x: np.exp(-np.logaddexp(0.0, -x)),
           summary="1 / (1 + e ** -x)", aliases=("logistic",)),
    _unary("relu", _relu, lambda x, out: F.heaviside(x),
           complex=forms.complex_relu, vector=lambda np, x: np.maximum(x, 0.0),
           summary="max(x, 0); relu'(0) = 0"),
    _unary("softplus", _softplus, lambda x, out: F.sigmoid(x),
           complex=forms.complex_softplus, vector=lambda np, x: np.logaddexp(0.0, x),
           summary="log(1 + e ** x)"),
    _unary("logit", special._logit, lambda x, out: 1.0 / (x * (1.0 - x)), domain=forms.probability,
           complex=forms.complex_logit, vector=forms.vector_logit,
           summary="log(x / (1 - x)), the inverse of sigmoid, 0 < x < 1"),
    _unary("silu", special._silu, _silu_slope,
           complex=lambda x: x * forms.complex_sigmoid(x),
           vector=lambda np, x: x * forms.vector_sigmoid(np, x),
           summary="x * sigmoid(x)", aliases=("swish",)),
    _unary("gelu", special._gelu,
           lambda x, out: 0.5 * F.erfc(-x * SQRT_HALF) + x * INV_ROOT_TWO_PI * F.exp(-0.5 * x * x),
           complex=NONE, vector=NONE,
           summary="x * Phi(x), Phi the normal distribution function (the exact, erf form)"),
    _unary("gelu_tanh", special._gelu_tanh, _gelu_tanh_slope,
           complex=lambda x: x * forms.complex_sigmoid(
               GELU_TANH_SCALE * (x + 0.044715 * x * x * x)),
           vector=lambda np, x: x * forms.vector_sigmoid(
               np, GELU_TANH_SCALE * (x + 0.044715 * x * x * x)),
           summary="gelu's tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))"),
    _unary("elu", special._elu, lambda x, out: F.exp(F.min(x, 0.0)),
           complex=lambda x: x if x.real > 0.0 else forms.complex_expm1(x), vector=forms.vector_elu,
           summary="x for x > 0, else e ** x - 1"),
    _unary("selu", special._selu, _selu_slope,
           complex=lambda x: SELU_SCALE * (
               x if x.real > 0.0 else SELU_ALPHA * forms.complex_expm1(x)),
           vector=lambda np, x: SELU_SCALE * np.where(
               x > 0.0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0.0))),
           summary="scale * elu with alpha (Klambauer et al.); selu'(0) is the left slope"),
    _binary("leaky_relu", special._leaky_relu, lambda x, a, out: _above(x) + (1.0 - _above(x)) * a,
            lambda x, a, out: F.min(x, 0.0),
            complex=lambda x, a: x if x.real > 0.0 else a * x,
            vector=lambda np, x, a: np.where(x > 0.0, x, a * x),
            summary="x for x > 0, else a * x; at 0 the slope is a (as relu's)"),
    _unary("softsign", special._softsign,
           lambda x, out: F.square(1.0 / (1.0 + F.abs(x))),  # (1 + |x|)**2 would overflow
           complex=lambda x: x / (1.0 + forms.complex_abs(x)),
           vector=lambda np, x: x / (1.0 + np.abs(x)), summary="x / (1 + |x|)"),
    _unary("mish", special._mish, _mish_slope,
           complex=lambda x: x * cmath.tanh(forms.complex_softplus(x)),
           vector=lambda np, x: x * np.tanh(np.logaddexp(0.0, x)),
           summary="x * tanh(softplus(x))"),
    _unary("hardtanh", special._hardtanh,
           lambda x, out: (1.0 + F.sign(x + 1.0)) * (1.0 - F.sign(x - 1.0)) / 4.0,
           complex=lambda x: forms.complex_clip(x, -1.0, 1.0),
           vector=lambda np, x: np.minimum(np.maximum(x, -1.0), 1.0),
           summary="clip(x, -1, 1); at -1 and 1 the slope is 1/2, as min and max at a tie"),
    _unary("abs", math.fabs, lambda x, out: F.sign(x),
           complex=forms.complex_abs, vector=lambda np, x: np.abs(x), summary="|x|; abs'(0) = 0",
           aliases=("absolute", "fabs")),
    _unary("sign", _sign, lambda x, out: 0.0,
           complex=lambda x: complex(_sign(x.real)), vector=lambda np, x: np.sign(x),
           summary="-1, 0 or 1; its derivative is 0"),
    _unary("heaviside", _heaviside, lambda x, out: 0.0,
           complex=lambda x: complex(_heaviside(x.real)),
           vector=lambda np, x: np.heaviside(x, 0.0),
           summary="1 for x > 0, else 0 (relu's derivative); its derivative is 0"),
    _binary("min", min, lambda x, y, out: (1.0 - F.sign(x - y)) / 2.0,
            lambda x, y, out: (1.0 + F.sign(x - y)) / 2.0,
            complex=forms.complex_min, vector=lambda np, x, y: np.minimum(x, y),
            summary="smaller of x and y; a tie splits the gradient equally"),
    _binary("max", max, lambda x, y, out: (1.0 + F.sign(x - y)) / 2.0,
            lambda x, y, out: (1.0 - F.sign(x - y)) / 2.0,
            complex=forms.complex_max, vector=lambda np, x, y: np.maximum(x, y),
            summary="larger of x and y; a tie splits the gradient equally"),
    _op("clip", special._clip, (
        lambda x, lo, hi, out: (1.0 + F.sign(x - lo)) * (1.0 - F.sign(x - hi)) / 4.0,
        lambda x, lo, hi, out: (1.0 - F.sign(x - lo)) * (1.0 - F.sign(F.max(x, lo) - hi)) / 4.0,
        lambda x, lo, hi, out: (1.0 + F.sign(F.max(x, lo) - hi)) / 2.0),
        domain=forms.ordered_bounds, complex=forms.complex_clip,
        vector=forms.vector_clip,
        summary="min(max(x, lo), hi), lo <= hi; at a bound the gradient splits as at a tie",
        aliases=("clamp",)),
    # --- steps: derivative 0, at a jump too (as sign's); the check flags a jump -------------
    _unary("floor", special._floor, lambda x, out: 0.0,
           complex=forms.complex_of_step(special._floor),
           vector=lambda np, x: np.floor(x), summary="largest whole number <= x; slope 0"),
    _unary("ceil", special._ceil, lambda x, out: 0.0,
           complex=forms.complex_of_step(special._ceil),
           vector=lambda np, x: np.ceil(x), summary="smallest whole number >= x; slope 0"),
    _unary("round", special._round, lambda x, out: 0.0,
           complex=forms.complex_of_step(special._round),
           vector=lambda np, x: np.round(x),
           summary="nearest whole number, halves to even (as Python); slope 0"),
    _unary("trunc", special._trunc, lambda x, out: 0.0,
           complex=forms.complex_of_step(special._trunc),
           vector=lambda np, x: np.trunc(x), summary="x without its fraction; slope 0"),
    # d/dy is -q, q the whole number with x = q y + out: round((x - out) / y), not
    # floor(x / y), which rounds 1/0.1 up to 10 where x % y (0.0999...95) took 9.
    _binary("mod", special._mod, lambda x, y, out: 1.0,
            lambda x, y, out: _mod_quotient(x, y, out),
            domain=forms.nonzero_divisor, complex=forms.complex_mod,
            vector=lambda np, x, y: np.mod(x, y),
            summary="x - y * floor(x / y), the sign of y; also written x % y, as in Python and "
                    "NumPy's remainder", aliases=("remainder",)),
]

# --- piecewise definitions (issue 15): comparisons, logic and the conditional ------------------
# Truth values are 1.0 and 0.0; any non-zero number counts as true. A comparison's or a logical
# op's derivative is 0 (a step, like sign). where(c, a, b) passes the gradient to the branch
# that c picks; the branch not taken is masked: its nodes are not evaluated at that point
# (graph.forward_masked), so log(x) in where(x > 0, log(x), 0) is no error at x = -1.


def _lt(x: float, y: float) -> float:
    return 1.0 if x < y else 0.0


def _le(x: float, y: float) -> float:
    return 1.0 if x <= y else 0.0


def _gt(x: float, y: float) -> float:
    return 1.0 if x > y else 0.0


def _ge(x: float, y: float) -> float:
    return 1.0 if x >= y else 0.0


def _eq(x: float, y: float) -> float:
    return 1.0 if x == y else 0.0


def _ne(x: float, y: float) -> float:
    return 1.0 if x != y else 0.0


def _on_real_parts(test: Callable[..., float]) -> Callable[..., complex]:
    """A truth-valued op on complex numbers: decided by the real parts, as the check needs."""
    return lambda *args: complex(test(*(arg.real for arg in args)))


def _flat(x: Any, y: Any, out: Any) -> float:
    return 0.0  # a truth value is a step: its derivative is 0 (as sign's)


def _where(c: float, a: float, b: float) -> float:
    return a if c else b


_ROWS += [
    _binary("lt", _lt, _flat, _flat, complex=_on_real_parts(_lt),
            vector=lambda np, x, y: (x < y) * 1.0,
            symbol="<", precedence=PREC_COMPARE, summary="1 if x < y else 0"),
    _binary("le", _le, _flat, _flat, complex=_on_real_parts(_le),
            vector=lambda np, x, y: (x <= y) * 1.0,
            symbol="<=", precedence=PREC_COMPARE, summary="1 if x <= y else 0"),
    _binary("gt", _gt, _flat, _flat, complex=_on_real_parts(_gt),
            vector=lambda np, x, y: (x > y) * 1.0,
            symbol=">", precedence=PREC_COMPARE, summary="1 if x > y else 0"),
    _binary("ge", _ge, _flat, _flat, complex=_on_real_parts(_ge),
            vector=lambda np, x, y: (x >= y) * 1.0,
            symbol=">=", precedence=PREC_COMPARE, summary="1 if x >= y else 0"),
    _binary("eq", _eq, _flat, _flat, complex=_on_real_parts(_eq),
            vector=lambda np, x, y: (x == y) * 1.0,
            symbol="==", precedence=PREC_COMPARE, summary="1 if x == y else 0"),
    _binary("ne", _ne, _flat, _flat, complex=_on_real_parts(_ne),
            vector=lambda np, x, y: (x != y) * 1.0,
            symbol="!=", precedence=PREC_COMPARE, summary="1 if x != y else 0"),
    _binary("logical_and", lambda x, y: 1.0 if x and y else 0.0, _flat, _flat,
            complex=_on_real_parts(lambda x, y: 1.0 if x and y else 0.0),
            vector=lambda np, x, y: np.logical_and(x, y) * 1.0,
            symbol="and", precedence=PREC_AND, summary="1 if x and y are both non-zero else 0"),
    _binary("logical_or", lambda x, y: 1.0 if x or y else 0.0, _flat, _flat,
            complex=_on_real_parts(lambda x, y: 1.0 if x or y else 0.0),
            vector=lambda np, x, y: np.logical_or(x, y) * 1.0,
            symbol="or", precedence=PREC_OR, summary="1 if x or y is non-zero else 0"),
    _unary("logical_not", lambda x: 0.0 if x else 1.0, lambda x, out: 0.0,
           complex=_on_real_parts(lambda x: 0.0 if x else 1.0),
           vector=lambda np, x: np.logical_not(x) * 1.0,
           symbol="not ", precedence=PREC_NOT, summary="1 if x is 0 else 0"),
    Op("where", 3, _where, (lambda c, a, b, out: 0.0, lambda c, a, b, out: F.where(c, 1.0, 0.0),
                            lambda c, a, b, out: F.where(c, 0.0, 1.0)),
       complex=lambda c, a, b: a if c.real else b,
       vector=lambda np, c, a, b: np.where(c != 0.0, a, b),
       summary="a if c is non-zero else b (also written a if c else b); the branch not taken "
               "is not evaluated"),
]

OPS: dict[str, Op] = {row.name: row for row in _ROWS}
CONDITIONAL = OPS["where"]
# Ops whose value is a truth value (1 or 0): their derivative is 0 by convention, and a finite
# difference that perturbs them flips a condition, so the check leaves them out.
LOGICAL = frozenset({"lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or",
                     "logical_not"})

FUNCTIONS: dict[str, Op] = {op.name: op for op in OPS.values() if op.is_function}
FUNCTIONS["pow"] = OPS["pow"]  # pow(x, y) is the function spelling of x ** y
FUNCTIONS.update({alias: op for op in OPS.values() for alias in op.aliases})

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}

# The names of the array table's functions (engine/array_ops.py), so that the parser knows every
# function's name without building that table on the scalar path; array_ops checks at import
# that its rows have exactly these names, so the two cannot drift apart.
ARRAY_FUNCTION_NAMES = frozenset({
    "det", "dot", "eye", "inv", "log_softmax", "logdet", "logsumexp", "max", "mean", "min",
    "norm", "norm1", "ones", "outer", "prod", "softmax", "sum", "tr", "zeros"})


def is_function_name(name: str) -> bool:
    """Whether ``name`` is one of the language's functions (scalar or array), or an alias."""
    return name in FUNCTIONS or name in ARRAY_FUNCTION_NAMES

SYMBOL_ALIASES = {"**": ("^",)}  # the grammar's other spellings of an operator (expr.lark)


def spellings(op: Op) -> list[str]:
    """How ``op`` is written in the language: ``x ** y``, ``x ^ y``, ``pow(x, y)``."""
    names = op.operands
    written = []
    if op.symbol:
        for symbol in (op.symbol, *SYMBOL_ALIASES.get(op.symbol, ())):
            written.append(f"{symbol}{names[0]}" if op.arity == 1
                           else f" {symbol} ".join(names))
    written += [f"{name}({', '.join(names)})" for name, row in FUNCTIONS.items() if row is op]
    return written


def table_rows() -> list[dict[str, Any]]:
    """Every operator and function of the language, in table order: name, how it is written,
    summary and whether it has complex-step and vector forms (``SAME`` counts: it has them). What
    ``gradcli functions`` lists and docs/functions.md shows."""
    return [
        {
            "name": op.name,
            "kind": "function" if op.is_function else "operator",
            "written": spellings(op),
            "aliases": list(op.aliases),
            "arity": op.arity,
            "summary": op.summary,
            "complex_step": op.complex is not NONE,
            "vector": op.vector is not NONE,
        }
        for op in OPS.values()
    ]

# The graph's leaves compute nothing: an input variable gets its value from the caller, a
# constant from the program text.
VAR = Op("var", 0, float, (), symbol="", complex=NONE, vector=NONE,
         summary="an input variable")
CONST = Op("const", 0, float, (), symbol="", complex=NONE, vector=NONE,
           summary="a number written in the program")
