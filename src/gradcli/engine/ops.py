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

Conventions where mathematicians shrug and peers disagree (JAX says abs'(0)=1, PyTorch 0):
abs'(0) = 0, relu'(0) = 0, sign' = 0, and min/max at a tie split the gradient equally (1/2 each).
"""

from __future__ import annotations

import cmath
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gradcli.errors import UsageError

Rule = Callable[..., Any]

# Printing precedence: higher binds tighter. An atom (number, name, call) never needs parentheses.
PREC_SUM, PREC_PRODUCT, PREC_UNARY, PREC_POWER, PREC_ATOM = 1, 2, 3, 4, 9


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

        def call(*args: Any) -> Any:
            if all(type(arg) is float or type(arg) is int for arg in args):
                return op.forward(*args)
            for arg in args:
                if hasattr(arg, "apply"):
                    return arg.apply(op, *args)
            if any(isinstance(arg, complex) for arg in args):
                return op.apply_complex(*args)
            return op.apply_vector(*args)

        setattr(self, name, call)  # cache: the next lookup is a plain attribute
        return call


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


# --- complex forms: analytic continuations; non-analytic ops follow the real part --------------

def _complex_sigmoid(x: complex) -> complex:
    if x.real >= 0.0:
        return 1.0 / (1.0 + cmath.exp(-x))
    z = cmath.exp(x)
    return z / (1.0 + z)


def _complex_softplus(x: complex) -> complex:
    if x.real > 0.0:
        return x + cmath.log(1.0 + cmath.exp(-x))
    return cmath.log(1.0 + cmath.exp(x))


def _complex_atan2(y: complex, x: complex) -> complex:
    # atan(y/x) plus the constant branch offset that the real parts pick (0 or ±pi).
    if x.real != 0.0:
        return cmath.atan(y / x) + (math.atan2(y.real, x.real) - math.atan(y.real / x.real))
    return math.copysign(math.pi / 2.0, y.real) - cmath.atan(x / y)


def _complex_hypot(x: complex, y: complex) -> complex:
    # Scaled like math.hypot, so that hypot(1e200, 1) does not overflow in x * x.
    scale = max(abs(x.real), abs(y.real)) or 1.0
    x, y = x / scale, y / scale
    return scale * cmath.sqrt(x * x + y * y)


def _complex_abs(x: complex) -> complex:
    return x if x.real > 0.0 else (-x if x.real < 0.0 else 0j)


def _complex_relu(x: complex) -> complex:
    return x if x.real > 0.0 else 0j


def _complex_min(x: complex, y: complex) -> complex:
    return x if x.real < y.real else (y if y.real < x.real else (x + y) / 2.0)


def _complex_max(x: complex, y: complex) -> complex:
    return x if x.real > y.real else (y if y.real > x.real else (x + y) / 2.0)


def _is_integer(y: float) -> bool:
    return y == math.floor(y)


# --- domain checks: return a message when the operands are outside the op's domain -------------

def _positive(x: float) -> str | None:
    return None if x > 0.0 else "logarithm of a non-positive number"


def _non_negative(x: float) -> str | None:
    return None if x >= 0.0 else "square root of a negative number"


def _unit_interval(x: float) -> str | None:
    return None if -1.0 <= x <= 1.0 else "argument outside [-1, 1]"


def _nonzero_divisor(x: float, y: float) -> str | None:
    return None if y != 0.0 else "division by zero"


def _power_domain(x: float, y: float) -> str | None:
    if x < 0.0 and not _is_integer(y):
        return "negative base with a non-integer exponent"
    if x == 0.0 and y < 0.0:
        return "zero raised to a negative power"
    return None


def _binary(name: str, forward: Callable[..., float], dx: Rule, dy: Rule, **row: Any) -> Op:
    return Op(name, 2, forward, (dx, dy), **row)


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
            domain=_nonzero_divisor, complex=SAME, vector=SAME, symbol="/",
            precedence=PREC_PRODUCT, summary="quotient (division by zero is an error)"),
    _unary("neg", operator.neg, lambda x, out: -1.0,
           complex=SAME, vector=SAME, symbol="-", precedence=PREC_UNARY, summary="negation"),
    # d/dy needs log(x): the backward pass asks for it only when y depends on a variable, so
    # (-2)**3 is fine and (-2)**y is a domain error there.
    _binary("pow", math.pow, lambda x, y, out: y * x ** (y - 1.0),
            lambda x, y, out: out * F.log(x), domain=_power_domain,
            complex=operator.pow, vector=lambda np, x, y: np.power(x, y),
            symbol="**", precedence=PREC_POWER, right_assoc=True,
            summary="x to the power y (a negative x needs a constant integer y)"),
    # --- exponentials and logarithms --------------------------------------------------------
    _unary("exp", math.exp, lambda x, out: out,
           complex=cmath.exp, vector=lambda np, x: np.exp(x), summary="e ** x"),
    _unary("log", math.log, lambda x, out: 1.0 / x, domain=_positive,
           complex=cmath.log, vector=lambda np, x: np.log(x), summary="natural logarithm"),
    _unary("log2", math.log2, lambda x, out: 1.0 / (x * F.log(2.0)), domain=_positive,
           complex=lambda x: cmath.log(x) / math.log(2.0), vector=lambda np, x: np.log2(x),
           summary="base-2 logarithm"),
    _unary("log10", math.log10, lambda x, out: 1.0 / (x * F.log(10.0)), domain=_positive,
           complex=cmath.log10, vector=lambda np, x: np.log10(x), summary="base-10 logarithm"),
    _unary("sqrt", math.sqrt, lambda x, out: 0.5 / out, domain=_non_negative,
           complex=cmath.sqrt, vector=lambda np, x: np.sqrt(x),
           summary="square root (its derivative at 0 is infinite: an error)"),
    # --- trigonometry -------------------------------------------------------------------------
    _unary("sin", math.sin, lambda x, out: F.cos(x),
           complex=cmath.sin, vector=lambda np, x: np.sin(x), summary="sine (radians)"),
    _unary("cos", math.cos, lambda x, out: -F.sin(x),
           complex=cmath.cos, vector=lambda np, x: np.cos(x), summary="cosine (radians)"),
    _unary("tan", math.tan, lambda x, out: 1.0 + out * out,
           complex=cmath.tan, vector=lambda np, x: np.tan(x), summary="tangent (radians)"),
    _unary("asin", math.asin, lambda x, out: 1.0 / F.sqrt(1.0 - x * x), domain=_unit_interval,
           complex=cmath.asin, vector=lambda np, x: np.arcsin(x), summary="arc sine"),
    _unary("acos", math.acos, lambda x, out: -1.0 / F.sqrt(1.0 - x * x), domain=_unit_interval,
           complex=cmath.acos, vector=lambda np, x: np.arccos(x), summary="arc cosine"),
    _unary("atan", math.atan, lambda x, out: 1.0 / (1.0 + x * x),
           complex=cmath.atan, vector=lambda np, x: np.arctan(x), summary="arc tangent"),
    _binary("atan2", math.atan2, lambda y, x, out: x / (x * x + y * y),
            lambda y, x, out: -y / (x * x + y * y),
            complex=_complex_atan2, vector=lambda np, y, x: np.arctan2(y, x),
            summary="angle of the point (x, y), in C/Python argument order"),
    _binary("hypot", math.hypot, lambda x, y, out: x / out, lambda x, y, out: y / out,
            complex=_complex_hypot, vector=lambda np, x, y: np.hypot(x, y),
            summary="sqrt(x**2 + y**2) without overflow"),
    # --- hyperbolic ----------------------------------------------------------------------------
    _unary("sinh", math.sinh, lambda x, out: F.cosh(x),
           complex=cmath.sinh, vector=lambda np, x: np.sinh(x), summary="hyperbolic sine"),
    _unary("cosh", math.cosh, lambda x, out: F.sinh(x),
           complex=cmath.cosh, vector=lambda np, x: np.cosh(x), summary="hyperbolic cosine"),
    _unary("tanh", math.tanh, lambda x, out: 1.0 - out * out,
           complex=cmath.tanh, vector=lambda np, x: np.tanh(x), summary="hyperbolic tangent"),
    # --- activations and pieces ------------------------------------------------------------
    _unary("sigmoid", _sigmoid, lambda x, out: out * (1.0 - out),
           complex=_complex_sigmoid, vector=lambda np, x: np.exp(-np.logaddexp(0.0, -x)),
           summary="1 / (1 + e ** -x)"),
    _unary("relu", _relu, lambda x, out: F.sign(out),
           complex=_complex_relu, vector=lambda np, x: np.maximum(x, 0.0),
           summary="max(x, 0); relu'(0) = 0"),
    _unary("softplus", _softplus, lambda x, out: F.sigmoid(x),
           complex=_complex_softplus, vector=lambda np, x: np.logaddexp(0.0, x),
           summary="log(1 + e ** x)"),
    _unary("abs", math.fabs, lambda x, out: F.sign(x),
           complex=_complex_abs, vector=lambda np, x: np.abs(x), summary="|x|; abs'(0) = 0"),
    _unary("sign", _sign, lambda x, out: 0.0,
           complex=lambda x: complex(_sign(x.real)), vector=lambda np, x: np.sign(x),
           summary="-1, 0 or 1; its derivative is 0"),
    _binary("min", min, lambda x, y, out: (1.0 - F.sign(x - y)) / 2.0,
            lambda x, y, out: (1.0 + F.sign(x - y)) / 2.0,
            complex=_complex_min, vector=lambda np, x, y: np.minimum(x, y),
            summary="smaller of x and y; a tie splits the gradient equally"),
    _binary("max", max, lambda x, y, out: (1.0 + F.sign(x - y)) / 2.0,
            lambda x, y, out: (1.0 - F.sign(x - y)) / 2.0,
            complex=_complex_max, vector=lambda np, x, y: np.maximum(x, y),
            summary="larger of x and y; a tie splits the gradient equally"),
]

OPS: dict[str, Op] = {row.name: row for row in _ROWS}

FUNCTIONS: dict[str, Op] = {op.name: op for op in OPS.values() if op.is_function}
FUNCTIONS["pow"] = OPS["pow"]  # pow(x, y) is the function spelling of x ** y

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}

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
