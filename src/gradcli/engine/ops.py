"""The op table: every operation gradcli knows, each described once.

A row holds an op's arity, forward function, one derivative rule per operand, domain check and
printed form. Everything else -- the parser's function names, the graph's forward and backward
passes, the printer, the tests -- reads this table, so adding a function is one row here plus its
test points.

A derivative rule receives the operand values and the op's output, ``rule(*operands, out)``, and
returns the local partial derivative d(out)/d(operand). Receiving ``out`` lets exp, tanh, sqrt and
sigmoid reuse their result. Rules are written only with arithmetic operators and table functions
called through ``F`` (``F.cos(x)``), so the same rule works on floats, on complex numbers, on NumPy
arrays and on anything that implements ``apply`` (graph nodes, for symbolic derivatives).

Besides the float ``forward``, a row may give ``complex`` (the analytic continuation, for
complex-step differentiation; for ops that are not analytic it follows the real part, so that
abs/relu/min/max keep the conventions below) and ``vector`` (``vector(np, *arrays)``: NumPy, for
evaluating many points at once; NumPy is imported only when an array arrives). Where a column is
missing, ``forward`` itself already works on that kind of number (the arithmetic operators).

Conventions where mathematicians shrug and peers disagree (JAX says abs'(0)=1, PyTorch 0):
abs'(0) = 0, relu'(0) = 0, sign' = 0, and min/max at a tie split the gradient equally (1/2 each).
"""

from __future__ import annotations

import cmath
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Rule = Callable[..., Any]

# Printing precedence: higher binds tighter. An atom (number, name, call) never needs parentheses.
PREC_SUM, PREC_PRODUCT, PREC_UNARY, PREC_POWER, PREC_ATOM = 1, 2, 3, 4, 9


@dataclass(frozen=True)
class Op:
    """One row of the table."""

    name: str
    arity: int
    forward: Callable[..., float]
    rules: tuple[Rule, ...]
    domain: Callable[..., str | None] | None = None
    complex: Callable[..., complex] | None = None  # None: ``forward`` takes complex numbers
    vector: Callable[..., Any] | None = None  # vector(np, *arrays); None: ``forward`` takes arrays
    symbol: str | None = None  # infix or prefix symbol; None prints as name(args)
    precedence: int = PREC_ATOM
    right_assoc: bool = False
    summary: str = ""

    @property
    def is_function(self) -> bool:
        """Written as ``name(args)`` in the language (as opposed to an operator symbol)."""
        return self.symbol is None

    def apply_complex(self, *args: complex) -> complex:
        return (self.complex or self.forward)(*args)

    def apply_vector(self, *args: Any) -> Any:
        return self.forward(*args) if self.vector is None else self.vector(numpy(), *args)


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
            symbol="+", precedence=PREC_SUM, summary="x + y"),
    _binary("sub", operator.sub, lambda x, y, out: 1.0, lambda x, y, out: -1.0,
            symbol="-", precedence=PREC_SUM, summary="x - y"),
    _binary("mul", operator.mul, lambda x, y, out: y, lambda x, y, out: x,
            symbol="*", precedence=PREC_PRODUCT, summary="x * y"),
    _binary("div", operator.truediv, lambda x, y, out: 1.0 / y, lambda x, y, out: -out / y,
            domain=_nonzero_divisor, symbol="/", precedence=PREC_PRODUCT, summary="x / y"),
    _unary("neg", operator.neg, lambda x, out: -1.0,
           symbol="-", precedence=PREC_UNARY, summary="-x"),
    # d/dy needs log(x): the backward pass asks for it only when y depends on a variable, so
    # (-2)**3 is fine and (-2)**y is a domain error there.
    _binary("pow", math.pow, lambda x, y, out: y * x ** (y - 1.0),
            lambda x, y, out: out * F.log(x), domain=_power_domain,
            complex=operator.pow, vector=lambda np, x, y: np.power(x, y),
            symbol="**", precedence=PREC_POWER, right_assoc=True,
            summary="x ** y (also x ^ y and pow(x, y))"),
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
            summary="atan2(y, x): angle of the point (x, y), C/Python order"),
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

# The graph's leaves compute nothing: an input variable gets its value from the caller, a
# constant from the program text.
VAR = Op("var", 0, float, (), symbol="", summary="an input variable")
CONST = Op("const", 0, float, (), symbol="", summary="a number written in the program")
