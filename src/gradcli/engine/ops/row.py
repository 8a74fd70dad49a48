"""One row of the op table (``Op``), the forms a row states, and ``F``, which rules call.

An ``ELEMENTWISE`` row has ``forward(*floats)`` and one partial per operand, ``rule(*operands,
out)`` = d(out)/d(operand), written with arithmetic and ``F.name(...)`` only, so that one rule runs
on floats, complex numbers, NumPy arrays and graph nodes; receiving ``out`` lets exp or tanh reuse
it. An ``ARRAY`` row (products, reductions, linear algebra, indexing) has ``forward(np, *arrays)``
and one VJP per operand, ``rule(xp, g, out, *operands)`` as HIPS autograd's ``defvjp``, written
against ``xp`` (ops/xp.py: NumPy, or the graph for ``gradcli diff``), and ``jvp(np, tangents, out,
*arrays)``. Whatever the kind, ``row.vjp`` is an operand's gradient and ``row.out_shape`` the
value's shape from the operands' shapes alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gradcli.errors import UsageError, no_room_to_load

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any, Final

    Rule = Callable[..., Any]

# Printing precedence: higher binds tighter. An atom (number, name, call) never needs parentheses.
PREC_SUM, PREC_PRODUCT, PREC_UNARY, PREC_POWER, PREC_ATOM = 1, 2, 3, 4, 9
# Looser than arithmetic, as in Python: `or`, `and`, `not`, comparisons (which never chain).
PREC_OR, PREC_AND, PREC_NOT, PREC_COMPARE = -3, -2, -1, 0
PREC_NONE = -9  # a function's argument: nothing needs parentheses there

ELEMENTWISE = "elementwise"  # a row's kind: partial rules, applied element by element
ARRAY = "array"  # a row's kind: VJP rules on whole arrays
# How a row's value moves with its operands (``linear=``): algebra, not a derivative rule, so the
# check's replays (engine/replay.py) stay independent of the rules they check. f(a + h d) = f(a)
# + h f(d) with every operand moved at once (ALL), any one operand (EACH: a product) or the first
# alone (FIRST: a quotient).
LINEAR_ALL, LINEAR_EACH, LINEAR_FIRST = "all", "each", "first"

Shape = tuple[int, ...]


class ShapeError(ValueError):
    """Operands of shapes a row cannot take. A message ``needs ...`` says what the row takes
    (``needs a square matrix, not 2x3``); any other is a mismatch between operands."""


def shape_text(shape: Sequence[int]) -> str:
    """``3``, ``2x3``; ``scalar`` for the empty shape: how messages and tables write shapes."""
    return "x".join(str(n) for n in shape) or "scalar"


def broadcast(*shapes: Shape) -> Shape:
    """The shape rule of every element-wise row: NumPy's broadcasting."""
    rank = max((len(shape) for shape in shapes), default=0)
    padded = [(1,) * (rank - len(shape)) + tuple(shape) for shape in shapes]
    out = []
    for sizes in zip(*padded, strict=True):
        stretched = set(sizes) - {1}
        if len(stretched) > 1:
            raise ShapeError("")
        out.append(stretched.pop() if stretched else 1)
    return tuple(out)


class Form:
    """What a row gives for a form that is not a function of its own: ``SAME`` or ``NONE``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


SAME = Form("SAME")  # ``forward`` itself takes complex numbers / NumPy arrays
NONE = Form("NONE")  # the row has no such form (see the package docstring for what happens)


# Compiled with the core (setup.py), a row is a native class: the passes read its fields per
# node (forward, domain, rules, constants) as C struct members, not by generic attribute lookups.
@dataclass(frozen=True, eq=False)
class Op:
    """One row of the table. ``complex``, ``vector`` and ``summary`` are required keywords."""

    name: str
    arity: int
    forward: Callable[..., Any]  # forward(*floats); an array row's forward(np, *arrays)
    rules: tuple[Rule, ...]  # one per operand: partials, or an array row's VJPs
    domain: Callable[..., str | None] | None = None  # a message or None (array rows: np first)
    symbol: str | None = None  # infix or prefix symbol; None prints as name(args)
    precedence: int = PREC_ATOM
    right_assoc: bool = False
    complex: Callable[..., Any] | Form = field(kw_only=True)  # a function, SAME or NONE
    vector: Callable[..., Any] | Form = field(kw_only=True)  # vector(np, *arrays), SAME or NONE
    summary: str = field(kw_only=True)  # one line: what it computes (gradcli functions)
    aliases: tuple[str, ...] = field(default=(), kw_only=True)  # other names people type: ln
    kind: str = field(default=ELEMENTWISE, kw_only=True)  # ELEMENTWISE or ARRAY
    postfix: str | None = field(default=None, kw_only=True)  # printed after the operand: x'
    constant_args: bool = field(default=False, kw_only=True)  # zeros(n): constant whole n
    key: Any = field(default=None, kw_only=True)  # the subscript of an index row
    # An array row's forward mode, ``tangents`` one per operand (None: zero). None: the value is
    # a number, and its JVP is the sum over operands of vjp(1) * tangent.
    jvp: Callable[..., Any] | None = field(default=None, kw_only=True)
    # shape(*operand_shapes) -> the value's shape or a ShapeError (a constructor's takes its n).
    shape: Callable[..., Shape] | None = field(default=None, kw_only=True)
    # The NumPy export's form over the operands' texts, ``"np.arcsin({0})"``; None: the export
    # runs the row's float function element by element (symbolic/numpy_export.py).
    numpy: str | None = field(default=None, kw_only=True)
    linear: str = field(default="", kw_only=True)  # LINEAR_ALL, _EACH, _FIRST or "": none
    # unit(np, position, flat, *arrays): a LINEAR_EACH row's value with operand ``position`` a
    # unit array (1 at flat index ``flat``), cheaper than the product. None: the row's forward.
    unit: Callable[..., Any] | None = field(default=None, kw_only=True)
    # scaled(np, position, u, v, s, *arrays): the same with operand ``position`` the matrix
    # (u v^T) * s, or u v^T where s is None (``replay.Scaled``, a large matrix's random
    # direction in the check): no such matrix formed. None: the row's forward on it formed.
    scaled: Callable[..., Any] | None = field(default=None, kw_only=True)
    # Per operand: its partial where the table writes it as a number (add's 1, 1), else None;
    # the float backward pass reads it instead of calling the rule made of it (``_rules``).
    constants: tuple[float | None, ...] = field(default=(), kw_only=True)
    # Plain arithmetic on floats, computed by the compiled passes themselves (``kernel_value``):
    # one of the KERNEL_ numbers below, or 0 for none.
    kernel: int = field(default=0, kw_only=True)

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
        if self.kind not in (ELEMENTWISE, ARRAY):
            raise TypeError(f"op {self.name}: kind= must be ELEMENTWISE or ARRAY")
        if self.linear not in ("", LINEAR_ALL, LINEAR_EACH, LINEAR_FIRST):
            raise TypeError(f"op {self.name}: linear= must be LINEAR_ALL, _EACH or _FIRST")
        if self.kernel and (self.kind is ARRAY or self.arity > 2):
            raise TypeError(f"op {self.name}: a float kernel computes one or two floats")
        if self.kind is ARRAY and (self.shape is None or self.numpy is None):
            raise TypeError(f"op {self.name}: an array row says the shape of its value (shape=) "
                            "and its NumPy form (numpy=)")

    @property
    def is_array(self) -> bool:
        return self.kind is ARRAY

    @property
    def is_function(self) -> bool:
        """Written as ``name(args)`` in the language, not as an operator."""
        return self.symbol is None and self.postfix is None

    def vjp(self, xp: Any, position: int, g: Any, out: Any, *args: Any) -> Any:
        """Operand ``position``'s gradient given the output's ``g``, on arrays or graph nodes."""
        if self.kind is ARRAY:
            return self.rules[position](xp, xp.whole(g, out), out, *args)
        return xp.unbroadcast(g * self.rules[position](*args, out), out, args[position])

    def out_shape(self, *operands: Any) -> Shape:
        """The shape of the row's value on ``operands``, before computing it: a ``ShapeError`` (an
        index out of range: ``IndexError``) where the row cannot take them."""
        rule: Callable[..., Shape] = self.shape or broadcast
        if self.constant_args:
            return rule(*(int(n.real) for n in operands))
        return rule(*(numpy().shape(x) for x in operands))

    def apply_complex(self, *args: Any) -> Any:
        """The complex form (``SAME``: forward; ``NONE``: a UsageError); array rows take ``np``."""
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
        return UsageError(f"{self.name} has no complex-step form, so --check-method complex "
                          "cannot check this program",
                          hint="use --check-method central or --check-method richardson")

    @property
    def operands(self) -> tuple[str, ...]:
        """The operands' names as the first rule calls them (``y, x`` for atan2); an array row's
        are ``n`` (a constructor) or ``x, y``."""
        if self.kind is ARRAY:
            return ("n",) if self.constant_args else ("x", "y")[:self.arity]
        written = [rule for k, rule in enumerate(self.rules)  # not a number's (``_rules``)
                   if not self.constants or self.constants[k] is None]
        code = getattr(written[0], "__code__", None) if written else None
        names = code.co_varnames[:self.arity] if code is not None else ()
        return tuple(names) if len(names) == self.arity else ("x", "y", "z")[:self.arity]


# --- float kernels ------------------------------------------------------------------------------
# A call from the compiled passes (forward, backward, the check's replays) to a row's forward or
# rule costs more than the arithmetic it does: x + y, x * y. A row of such arithmetic names its
# kernel (``kernel=KERNEL_MUL``), and the passes compute it here on floats. The row stays the
# definition: a kernel's number, where finite, is the row's to the bit, and None means "ask the
# row" (a domain, a value or slope that is not finite, a case left to it), which then also names
# any error. A test compares the two over every row that has a kernel. Only the compiled passes
# use them (``KERNELS``): in Python, asking a kernel costs two calls more than the row's own
# forward (a W2 line took 11% more instructions), as check.REPLAYS_FIRST also picks by build.
KERNELS: Final = not __file__.endswith(".py")
KERNEL_ADD: Final = 1
KERNEL_SUB: Final = 2
KERNEL_MUL: Final = 3
KERNEL_DIV: Final = 4
KERNEL_NEG: Final = 5
KERNEL_POW: Final = 6
KERNEL_RELU: Final = 7
_ZERO: Final[Any] = float(0)  # relu's 0: one float object (compiled, a literal is boxed anew)


def kernel_value(kernel: int, x: Any, y: Any) -> Any:
    """The value of a row with a float kernel on float objects ``x`` and ``y`` (``y``: unread
    for one operand), or None. Python's own arithmetic on the objects, not unboxed: compiled,
    a float made from a C double is not checked for NULL, and out of memory (a batch under
    RLIMIT_AS) that crashed the process; Python's operators raise MemoryError there."""
    if kernel == KERNEL_ADD:
        value = x + y
    elif kernel == KERNEL_MUL:
        value = x * y
    elif kernel == KERNEL_SUB:
        value = x - y
    elif kernel == KERNEL_NEG:
        value = -x
    elif kernel == KERNEL_RELU:
        size: float = x
        return x if size > 0.0 else _ZERO  # max(0.0, x): the first where neither is larger
    elif kernel == KERNEL_DIV:
        divisor: float = y
        if divisor == 0.0:
            return None
        value = x / y
    elif kernel == KERNEL_POW:
        base: float = x
        if not base > 0.0:  # 0 or below: the row's domain says (x**y would be complex)
            return None
        try:
            value = x ** y  # math.pow's number for a positive base: libm's pow
        except OverflowError:
            return None
    else:
        return None
    finite: float = value
    return value if finite - finite == 0.0 else None


def floats(x: Any, y: Any) -> bool:
    """Whether ``x`` and ``y`` are float objects, as a kernel takes them. Asked here, not with
    isinstance in a compiled pass: there mypyc would narrow them to C doubles and box them again
    for ``kernel_value``, unchecked (a batch under RLIMIT_AS crashed on it)."""
    return isinstance(x, float) and isinstance(y, float)


def kernel_slope(kernel: int, position: int, x: float, y: float, out: float) -> float:
    """The partial of a row with a float kernel for operand ``position``, or NaN: a partial the
    row writes as a number is read from its ``constants``, and pow's from its rules (but for
    the base of a square, every ``x**2`` of a batch line: the rule's call is interpreted)."""
    if kernel == KERNEL_MUL:
        return y if position == 0 else x
    if kernel == KERNEL_DIV and y != 0.0:
        return 1.0 / y if position == 0 else -out / y
    if kernel == KERNEL_RELU:
        return 1.0 if x > 0.0 else 0.0  # heaviside(x)
    if kernel == KERNEL_POW and position == 0 and y == 2.0:
        return 2.0 * x  # pow's rule y * x ** (y - 1) at y = 2, where x ** 1.0 is x exactly
    return math.nan


def elementwise(op: Op, np: Any, *args: Any) -> Any:
    """``op`` on arrays by its float ``forward``, point by point: the vector form of a row that
    has none. A point that fails is NaN with NumPy's "invalid" flag raised, as ``np.log(-1)``
    does: the vector passes learn of failures from the flags (``vector._Finiteness``)."""
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

    return flagged(np, np.asarray(np.frompyfunc(at, op.arity, 1)(*args), dtype=float))


def flagged(np: Any, out: Any) -> Any:
    """``out`` (a float array made point by point) with NumPy's "invalid" flag raised where it
    is NaN, as ``np.log(-1)`` raises it: a pass under ``errstate`` learns of the failed points
    (a number for a 0-d array)."""
    failed = np.isnan(out)
    if failed.any():
        np.divide(0.0, 0.0, out=out, where=failed)  # NaN again, but with the flag
    return out if out.ndim else out[()]


def numpy() -> Any:
    """NumPy, imported on first use so that the scalar paths never pay for it. Under a memory
    limit (``prlimit --as``) its first import may find no room for its libraries: that is a
    MemoryError, which a command and a batch line report as such, not an ImportError."""
    try:
        import numpy as np
    except ImportError as error:
        if no_room_to_load(error):
            raise MemoryError(f"NumPy could not be loaded: {error}") from None
        raise
    return np


# The registry, name -> row: filled by ops/__init__.py; ``F`` reads it at a name's first use.
OPS: dict[str, Op] = {}


class _TableFunctions:
    """``F.name(*args)``: a table op on floats, complex numbers, arrays or graph nodes, which
    lets derivative rules be written once for every kind of value."""

    def __init__(self) -> None:
        self._made: dict[str, Callable[..., Any]] = {}  # (compiled, an instance has no __dict__)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        call = self._made.get(name)
        if call is None:
            call = self._made[name] = _table_function(OPS[name])
        return call


def _table_function(op: Op) -> Callable[..., Any]:
    forward = op.forward

    def call(*args: Any) -> Any:
        # Floats first, in a plain loop: the scalar backward pass calls this in its rules.
        for arg in args:
            kind = type(arg)
            if kind is not float and kind is not int:
                return _apply_to_values(op, args)
        return forward(*args)

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


# --- what rules of several sections ask of their operands ----------------------------------------

def written(value: Any) -> bool:
    """A graph node: the rule builds a derivative formula, which leaves out the zero-base limits
    (d/dx x**y prints as ``y*x**(y - 1)``, as SymPy writes it; docs/derivatives.md). The probes
    of vector._reads have ``apply`` but no ``op``: they take the numbers' path."""
    return hasattr(value, "apply") and hasattr(value, "op")


def printed(value: Any) -> bool:
    """A graph node of a formula that ``gradcli diff`` prints, not one a Hessian evaluates: a rule
    may print the textbook form (atanh's 1/((1 - x)(1 + x))) and give a Hessian one that keeps
    its digits (docs/accuracy.md). Number builders keep constants named (``exact_constants``)
    only for printing; array builders are ``exact`` only for a Hessian."""
    if not written(value):
        return False
    arrays = getattr(value.builder, "arrays", None)
    if arrays is not None:
        return not arrays.exact
    return bool(getattr(value.builder, "exact_constants", False))


def is_zero(node: Any) -> bool:
    """The constant 0 in a formula (``0**y``): its limit is the formula, not log(0)."""
    return node.op.name == "const" and node.value == 0.0


def above(x: Any) -> Any:
    """1 where x > 0, else 0 -- relu's kink convention: at 0 the left side's slope."""
    return F.heaviside(x)


def unary(name: str, forward: Callable[..., float], dx: Rule | float, **row: Any) -> Op:
    """An element-wise row of one operand; its partial may be written as a number."""
    return Op(name, 1, forward, _rules((dx,), row), **_ufunc_forms(row, 1))


def binary(name: str, forward: Callable[..., float], dx: Rule | float, dy: Rule | float,
           **row: Any) -> Op:
    """An element-wise row of two operands; a partial may be written as a number."""
    return Op(name, 2, forward, _rules((dx, dy), row), **_ufunc_forms(row, 2))


def _rules(given: tuple[Rule | float, ...], row: dict[str, Any]) -> tuple[Rule, ...]:
    """The rules of partials written as rules or as numbers (d/dx (x + y) = 1): a number
    becomes a rule for every caller that takes one (formulas, arrays, complex steps) and is
    kept in the row's ``constants``, which the float backward pass reads instead."""
    numbers = tuple(None if callable(rule) else float(rule) for rule in given)
    if any(number is not None for number in numbers):
        row["constants"] = numbers
    return tuple(rule if callable(rule) else _constant(float(rule), len(given))
                 for rule in given)


def _constant(slope: float, arity: int) -> Rule:
    if arity == 1:
        return lambda x, out: slope
    return lambda x, y, out: slope


def _ufunc_forms(row: dict[str, Any], arity: int) -> dict[str, Any]:
    """``ufunc="arcsin"``: the row's vector form and its NumPy export are both that NumPy
    function of the operands, named once (``vector`` and ``numpy`` otherwise)."""
    ufunc = row.pop("ufunc", None)
    if ufunc is not None:
        row["vector"] = lambda np, *args: getattr(np, ufunc)(*args)
        row["numpy"] = f"np.{ufunc}(" + ", ".join(f"{{{i}}}" for i in range(arity)) + ")"
    return row
