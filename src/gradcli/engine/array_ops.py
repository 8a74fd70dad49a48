"""The array op table: operations on vectors and matrices, each described once.

Element-wise functions and operators need no row here: the scalar table's rows (engine/ops.py)
already run on NumPy arrays (their ``vector`` forms and their rules written with ``F``), and
engine/arrays.py applies them with NumPy broadcasting. This table holds what only exists for
arrays: products, reductions, linear algebra, indexing and constructors.

A row is HIPS autograd's ``defvjp`` line: ``forward(np, *args)`` and one vector-Jacobian product
per operand, ``rule(xp, g, out, *args)``, which receives the gradient ``g`` of the output (the
shape of ``out``) and returns the gradient of that operand (the operand's shape). A rule is
written once, with arithmetic operators and the few array operations of the namespace ``xp``
(``Arrays`` below: ``xp.matmul``, ``xp.transpose``, ``xp.sum_last``, ...), as the scalar table's
rules are written with ``F``: ``NUMPY`` runs it on arrays (the numeric gradient), and
symbolic/array_diff.py's graph namespace runs the very same rule on graph nodes, building the
gradient as an array program (``gradcli diff``, ``--hessian``, ``--hvp``). An op whose value is
an array also has its ``defjvp``, ``jvp(np, tangents, out, *args)``, for forward mode. ``complex``
is the form the complex-step check replays (``SAME``: ``forward`` is analytic on complex
arrays; ``NONE``: ``--check-method complex`` refuses a program where it depends on a variable).
NumPy is imported only when an array program runs, so none of this costs a scalar program
anything.

Conventions (docs/arrays.md): reductions (``sum``, ``mean``, ``prod``, ``max``, ``min``, ``norm``,
``norm1``, ``logsumexp``) reduce every element to a scalar; ``softmax`` and ``log_softmax`` work
along the last axis (rows of a matrix); a tie in ``max``/``min`` splits the gradient equally
between the tied elements; ``dot(x, y)`` is ``sum(x*y)`` of two arrays of one shape (NumPy's
``vdot``); ``x'`` transposes (a vector stays a vector, as in NumPy); ``det``, ``logdet`` and
``inv`` of a singular matrix are numeric errors naming the node.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from gradcli.engine.ops import ARRAY_FUNCTION_NAMES, NONE, PREC_ATOM, PREC_PRODUCT, SAME, Form
from gradcli.errors import UsageError

Vjp = Callable[..., Any]  # rule(xp, g, out, *operands) -> the operand's gradient


class Arrays(Protocol):
    """What a VJP rule may call besides ``+ - * /`` and unary ``-``: the same names on NumPy
    arrays (``NUMPY``) and on graph nodes (symbolic/array_diff.py's ``GraphArrays``, which makes
    the array program's own nodes: ``matmul`` is ``a@b``, ``eq`` is ``x == y``)."""

    def shape(self, x: Any) -> tuple[int, ...]: ...
    def matmul(self, a: Any, b: Any) -> Any: ...
    def outer(self, a: Any, b: Any) -> Any: ...
    def transpose(self, x: Any) -> Any: ...
    def inv(self, x: Any) -> Any: ...
    def eye(self, n: int) -> Any: ...
    def exp(self, x: Any) -> Any: ...
    def sign(self, x: Any) -> Any: ...
    def eq(self, x: Any, y: Any) -> Any: ...  # 1 where x == y, else 0 (its derivative is 0)
    def sum(self, x: Any) -> Any: ...  # of every element: a number

    def sum_last(self, x: Any) -> Any:
        """Sums along the last axis, kept as an axis of length 1 (broadcasts back over it)."""

    def spread(self, g: Any, x: Any) -> Any:
        """A reduction's gradient ``g`` (a number) at every element of ``x``; the graph form
        leaves it a number, since broadcasting spreads it where a shape needs it."""

    def vector(self, x: Any) -> Any:
        """The elements of ``x`` as a vector (NumPy's ravel); ``reshape_as`` goes back."""

    def reshape_as(self, v: Any, x: Any) -> Any: ...

    def others_product(self, x: Any, out: Any) -> Any:
        """At each element, the product of all the other elements (prod's gradient), exact
        where elements are zero: no division by them."""

    def scatter(self, g: Any, key: tuple[Any, ...], x: Any) -> Any:
        """Zeros of the shape of ``x`` with ``g`` at ``x[key]`` (an index's gradient)."""

    def take(self, g: Any, position: int) -> Any:
        """``g[position]`` along the first axis."""


class _NumPyArrays:
    """The ``Arrays`` namespace on NumPy arrays: the numeric gradients (NumPy is imported only
    when the first array program runs, as everywhere on this path)."""

    def __getattr__(self, name: str) -> Any:
        np = _np()
        found = {
            "shape": operator.attrgetter("shape"), "matmul": np.matmul, "outer": np.outer,
            "transpose": np.transpose, "inv": np.linalg.inv, "eye": np.eye, "exp": np.exp,
            "sign": np.sign, "sum": np.sum,
            "eq": lambda x, y: (x == y).astype(float),
            # a vector's sum as a number: NumPy reuses a temporary array fast with a number,
            # slowly with a length-1 array
            "sum_last": lambda x: np.sum(x, axis=-1, keepdims=True) if x.ndim > 1 else x.sum(),
            "spread": lambda g, x: np.broadcast_to(g, np.shape(x)),  # a view: no new array
            "vector": np.ravel,
            "reshape_as": lambda v, x: np.reshape(v, np.shape(x)),
            "others_product": _others_product, "scatter": _scatter,
            "take": lambda g, position: g[position],
        }[name]
        setattr(self, name, found)  # cache: the next lookup is a plain attribute
        return found


NUMPY: Arrays = _NumPyArrays()  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class ArrayOp:
    """One row: what the graph's nodes, the printer and ``gradcli functions`` read of an op."""

    name: str
    arity: int
    forward: Callable[..., Any]  # forward(np, *arrays)
    rules: tuple[Vjp, ...]  # rule(xp, g, out, *operands), one per operand
    complex: Callable[..., Any] | Form = field(kw_only=True)
    summary: str = field(kw_only=True)
    domain: Callable[..., str | None] | None = None  # domain(np, *arrays): a message or None
    symbol: str | None = None  # an infix symbol (@); None prints as name(args)
    postfix: str | None = None  # printed after the operand: ' or [1:3]
    precedence: int = PREC_ATOM
    right_assoc: bool = False
    constant_args: bool = False  # zeros(n): operands are constant whole numbers
    key: Any = None  # the subscript of an index op
    # The Jacobian-vector product for forward mode (engine/jacobian.py): jvp(np, tangents, out,
    # *arrays), ``tangents`` one per operand (None: zero). None here: the op's value is a number,
    # and its JVP is the sum over operands of vjp(1) * tangent (the VJP of 1 is the gradient).
    jvp: Callable[..., Any] | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if len(self.rules) != self.arity:
            raise TypeError(f"array op {self.name}: {self.arity} operands but "
                            f"{len(self.rules)} VJPs")

    @functools.cached_property
    def vjps(self) -> tuple[Callable[..., Any], ...]:
        """The rules on NumPy arrays, ``vjp(g, out, *arrays)``: the numeric gradients."""
        return tuple(functools.partial(rule, NUMPY) for rule in self.rules)

    @property
    def is_function(self) -> bool:
        return self.symbol is None and self.postfix is None

    def apply_complex(self, np: Any, *args: Any) -> Any:
        """The complex-step form on complex arrays (``NONE``: the UsageError below)."""
        if self.complex is NONE:
            raise self.no_complex_form()
        form = self.forward if self.complex is SAME else self.complex
        return form(np, *args)

    def no_complex_form(self) -> UsageError:
        return UsageError(f"{self.name} has no complex-step form, so --check-method complex "
                          "cannot check this program",
                          hint="use --check-method central or --check-method richardson")


def _np() -> Any:
    import numpy as np

    return np


# --- helpers: what several rows need -----------------------------------------------------------

def _matmul_left(xp: Arrays, g: Any, out: Any, a: Any, b: Any) -> Any:
    """d(a@b)/da: vector.vector is the dot product, matrix.vector and vector.matrix as NumPy."""
    if len(xp.shape(b)) == 1:
        return g * b if len(xp.shape(a)) == 1 else xp.outer(g, b)
    return xp.matmul(b, g) if len(xp.shape(a)) == 1 else xp.matmul(g, xp.transpose(b))


def _matmul_right(xp: Arrays, g: Any, out: Any, a: Any, b: Any) -> Any:
    if len(xp.shape(a)) == 1:
        return g * a if len(xp.shape(b)) == 1 else xp.outer(a, g)
    return xp.matmul(xp.transpose(a), g)


def _matmul(np: Any, a: Any, b: Any) -> Any:
    if a.ndim not in (1, 2) or b.ndim not in (1, 2):
        raise ValueError("@ multiplies vectors and matrices (1 or 2 dimensions)")
    return np.matmul(a, b)


def _extreme_vjp(xp: Arrays, g: Any, out: Any, x: Any) -> Any:
    """max/min reductions: the tied elements share the gradient equally."""
    hits = xp.eq(x, out)
    return g * hits / xp.sum(hits)


def _pick(np: Any, x: Any, largest: bool) -> Any:
    """max/min of the real parts (a complex-step replay follows the real values), ties averaged."""
    real = x.real
    best = real.max() if largest else real.min()
    hits = real == best
    return x[hits].mean()


def _others_product(x: Any, out: Any) -> Any:
    """The product of the other elements: exclusive cumulative products from both sides, so
    that a zero element needs no division."""
    np = _np()
    flat = x.ravel()
    left = np.concatenate(([1.0], np.cumprod(flat[:-1])))
    right = np.concatenate((np.cumprod(flat[::-1][:-1])[::-1], [1.0]))
    return (left * right).reshape(x.shape)


def _scatter(g: Any, key: tuple[Any, ...], x: Any) -> Any:
    np = _np()
    grad = np.zeros(x.shape, dtype=np.result_type(g, float))
    grad[subscript_of(key)] = g
    return grad


def subscript_of(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """An index op's key as a NumPy subscript: ``(start, stop)`` pairs are slices."""
    return tuple(slice(*part) if isinstance(part, tuple) else part for part in key)


def _logsumexp(np: Any, x: Any) -> Any:
    top = x.real.max()  # the max subtracted: exp never overflows
    return top + np.log(np.sum(np.exp(x - top)))


def _log_softmax(np: Any, x: Any) -> Any:
    shifted = x - x.real.max(axis=-1, keepdims=True)  # exp never overflows
    shifted -= np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))  # in place: one array
    return shifted


def _softmax(np: Any, x: Any) -> Any:
    return np.exp(_log_softmax(np, x))


def _has_axis(np: Any, x: Any) -> str | None:
    return None if x.ndim else "needs a vector or a matrix (along its last axis), not a number"


def _square(np: Any, x: Any) -> str | None:
    if x.ndim != 2 or x.shape[0] != x.shape[1]:
        shape = "x".join(map(str, x.shape)) or "a scalar"
        return f"needs a square matrix, not {shape}"
    return None


def _invertible(np: Any, x: Any) -> str | None:
    problem = _square(np, x)
    if problem is not None:
        return problem
    real = x.real
    if not np.all(np.isfinite(real)) or np.linalg.cond(real) > 1e15:
        return "singular matrix (not invertible)"
    return None


def _positive_determinant(np: Any, x: Any) -> str | None:
    problem = _invertible(np, x)
    if problem is not None:
        return problem
    if np.linalg.slogdet(x.real)[0] <= 0:
        return "logarithm of a non-positive determinant"
    return None


def _same_shapes(np: Any, x: Any, y: Any) -> str | None:
    if x.shape != y.shape:
        return f"needs two arrays of one shape, not {_shape(x)} and {_shape(y)}"
    return None


def _nonzero_norm(np: Any, x: Any) -> str | None:
    return None if np.any(x.real != 0) else "the derivative of norm at 0 is not finite"


def _shape(x: Any) -> str:
    return "x".join(map(str, x.shape)) or "scalar"


def _inv_vjp(xp: Arrays, g: Any, out: Any, x: Any) -> Any:
    """-X^-T g X^-T."""
    inverse_t = xp.transpose(out)
    return -xp.matmul(xp.matmul(inverse_t, g), inverse_t)


def _det(np: Any, x: Any) -> Any:
    return np.linalg.det(x)


def _logdet(np: Any, x: Any) -> Any:
    if np.iscomplexobj(x):
        return np.log(np.linalg.det(x))
    return np.linalg.slogdet(x)[1]


def _constant(make: Callable[..., Any]) -> Callable[..., Any]:
    return lambda np, n: make(np, int(n.real))


def _no_gradient(xp: Arrays, g: Any, out: Any, n: Any) -> Any:
    return 0.0


def _linear(apply: Callable[..., Any]) -> Callable[..., Any]:
    """The JVP of a linear op of one operand: the op applied to the tangent."""
    return lambda np, tangents, out, x: apply(np, tangents[0])


def _product_jvp(product: Callable[..., Any]) -> Callable[..., Any]:
    """The JVP of a bilinear op (``@``, ``outer``): product(ta, b) + product(a, tb)."""

    def jvp(np: Any, tangents: list[Any], out: Any, a: Any, b: Any) -> Any:
        ta, tb = tangents
        parts = ([product(np, ta, b)] if ta is not None else []) + (
            [product(np, a, tb)] if tb is not None else [])
        return parts[0] if len(parts) == 1 else parts[0] + parts[1]

    return jvp


def _softmax_jvp(np: Any, tangents: list[Any], out: Any, x: Any) -> Any:
    t = tangents[0]
    return out * (t - np.sum(out * t, axis=-1, keepdims=True))


def _log_softmax_jvp(np: Any, tangents: list[Any], out: Any, x: Any) -> Any:
    t = tangents[0]
    return t - np.sum(np.exp(out) * t, axis=-1, keepdims=True)


def _inv_jvp(np: Any, tangents: list[Any], out: Any, x: Any) -> Any:
    return -(out @ tangents[0] @ out)


def _constant_jvp(np: Any, tangents: list[Any], out: Any, n: Any) -> Any:
    return np.zeros(np.shape(out))


_ROWS: list[ArrayOp] = [
    # --- products --------------------------------------------------------------------------
    ArrayOp("matmul", 2, _matmul, (_matmul_left, _matmul_right), complex=SAME, symbol="@",
            precedence=PREC_PRODUCT, jvp=_product_jvp(_matmul),
            summary="matrix product; vector @ vector is the dot product"),
    ArrayOp("dot", 2, lambda np, x, y: np.sum(x * y),
            (lambda xp, g, out, x, y: g * y, lambda xp, g, out, x, y: g * x),
            domain=_same_shapes, complex=SAME,
            summary="sum(x*y) of two arrays of one shape (NumPy's vdot)"),
    # NumPy flattens matrices given to outer (xp.vector); the language cannot, so the graph
    # form of these rules refuses them (a usage error), and their numeric gradient remains
    ArrayOp("outer", 2, lambda np, x, y: np.outer(x, y),
            (lambda xp, g, out, x, y: xp.reshape_as(xp.matmul(g, xp.vector(y)), x),
             lambda xp, g, out, x, y: xp.reshape_as(xp.matmul(xp.transpose(g), xp.vector(x)), y)),
            complex=SAME, jvp=_product_jvp(lambda np, x, y: np.outer(x, y)),
            summary="outer product of two vectors: a matrix"),
    ArrayOp("transpose", 1, lambda np, x: x.T, (lambda xp, g, out, x: xp.transpose(g),),
            postfix="'", complex=SAME, jvp=_linear(lambda np, t: t.T),
            summary="transpose, written x'; a vector stays a vector"),
    # --- reductions: every element to one number --------------------------------------------
    ArrayOp("sum", 1, lambda np, x: np.sum(x), (lambda xp, g, out, x: xp.spread(g, x),),
            complex=SAME, summary="sum of the elements"),
    ArrayOp("mean", 1, lambda np, x: np.mean(x),
            (lambda xp, g, out, x: xp.spread(g / math.prod(xp.shape(x)), x),),
            complex=SAME, summary="mean of the elements"),
    ArrayOp("prod", 1, lambda np, x: np.prod(x),
            (lambda xp, g, out, x: g * xp.others_product(x, out),),
            complex=SAME, summary="product of the elements"),
    ArrayOp("max", 1, lambda np, x: _pick(np, x, True), (_extreme_vjp,),
            complex=SAME, summary="largest element; tied elements share the gradient equally"),
    ArrayOp("min", 1, lambda np, x: _pick(np, x, False), (_extreme_vjp,),
            complex=SAME, summary="smallest element; tied elements share the gradient equally"),
    ArrayOp("norm", 1, lambda np, x: np.sqrt(np.sum(x * x)),
            (lambda xp, g, out, x: g * (x / out),), domain=_nonzero_norm, complex=SAME,
            summary="2-norm of a vector, Frobenius norm of a matrix"),
    ArrayOp("norm1", 1, lambda np, x: np.sum(np.where(x.real < 0, -x, x)),
            (lambda xp, g, out, x: g * xp.sign(x),), complex=SAME,
            summary="sum of absolute values; its derivative at 0 is 0, as abs'"),
    ArrayOp("logsumexp", 1, _logsumexp, (lambda xp, g, out, x: g * xp.exp(x - out),),
            complex=SAME, summary="log(sum(exp(x))) with the max subtracted (no overflow)"),
    # --- along the last axis --------------------------------------------------------------
    ArrayOp("softmax", 1, _softmax,
            (lambda xp, g, out, x: out * (g - xp.sum_last(g * out)),),
            domain=_has_axis, complex=SAME, jvp=_softmax_jvp,
            summary="exp(x) / sum(exp(x)) along the last axis (rows)"),
    ArrayOp("log_softmax", 1, _log_softmax,
            # g - softmax(x)*sum(g), written so that NumPy reuses its temporary arrays
            (lambda xp, g, out, x: xp.exp(out) * -xp.sum_last(g) + g,),
            domain=_has_axis, complex=SAME, jvp=_log_softmax_jvp,
            summary="x - logsumexp(x) along the last axis (rows)"),
    # --- linear algebra -------------------------------------------------------------------
    ArrayOp("tr", 1, lambda np, x: np.trace(x),
            (lambda xp, g, out, x: g * xp.eye(xp.shape(x)[0]),),
            domain=_square, complex=SAME, summary="trace of a square matrix"),
    ArrayOp("det", 1, _det, (lambda xp, g, out, x: g * out * xp.transpose(xp.inv(x)),),
            domain=_invertible, complex=SAME,
            summary="determinant (a singular matrix is an error)"),
    ArrayOp("logdet", 1, _logdet, (lambda xp, g, out, x: g * xp.transpose(xp.inv(x)),),
            domain=_positive_determinant, complex=SAME,
            summary="log(det(x)) by slogdet; the determinant must be positive"),
    ArrayOp("inv", 1, lambda np, x: np.linalg.inv(x), (_inv_vjp,), domain=_invertible,
            complex=SAME, jvp=_inv_jvp, summary="matrix inverse (a singular matrix is an error)"),
    # --- constructors: a constant whole number n ------------------------------------------
    ArrayOp("zeros", 1, _constant(lambda np, n: np.zeros(n)), (_no_gradient,),
            constant_args=True, complex=SAME, jvp=_constant_jvp, summary="a vector of n zeros"),
    ArrayOp("ones", 1, _constant(lambda np, n: np.ones(n)), (_no_gradient,),
            constant_args=True, complex=SAME, jvp=_constant_jvp, summary="a vector of n ones"),
    ArrayOp("eye", 1, _constant(lambda np, n: np.eye(n)), (_no_gradient,),
            constant_args=True, complex=SAME, jvp=_constant_jvp,
            summary="the n x n identity matrix"),
]

ARRAY_OPS: dict[str, ArrayOp] = {op.name: op for op in _ROWS}
# Called by name; max/min with two arguments stay the element-wise rows of ops.py.
ARRAY_FUNCTIONS: dict[str, ArrayOp] = {op.name: op for op in _ROWS if op.is_function}
if set(ARRAY_FUNCTIONS) != ARRAY_FUNCTION_NAMES:
    raise TypeError("ops.ARRAY_FUNCTION_NAMES must list the array functions exactly: "
                    f"{sorted(set(ARRAY_FUNCTIONS) ^ ARRAY_FUNCTION_NAMES)} differ")


def table_rows() -> list[dict[str, Any]]:
    """The array ops as ``ops.table_rows`` lists the scalar ones (``gradcli functions``,
    docs/functions.md), with the subscripts and array literals that are made per use."""
    rows = []
    for op in _ROWS:
        names = ("n",) if op.constant_args else ("x", "y")[:op.arity]
        if op.symbol:
            written = [f" {op.symbol} ".join(names)]
        elif op.postfix:
            written = [f"x{op.postfix}"]
        else:
            written = [f"{op.name}({', '.join(names)})"]
        rows.append(_row(op.name, "array " + ("function" if op.is_function else "operator"),
                         written, op.arity, op.summary, op.complex is not NONE))
    rows.append(_row("index", "array operator", ["x[0]", "W[1, 0]", "x[1:3]", "W[:, 0]"], 1,
                     "indexing and slicing by constant whole numbers (-1: the last)", True))
    rows.append(_row("array", "array literal", ["[1, 2]", "[[1, 2], [3, 4]]", "[x, y]"], 0,
                     "an array of numbers, or of the values of expressions of one shape", True))
    return rows


def _row(name: str, kind: str, written: list[str], arity: int, summary: str,
         complex_step: bool) -> dict[str, Any]:
    return {"name": name, "kind": kind, "written": written, "aliases": [], "arity": arity,
            "summary": summary, "complex_step": complex_step, "vector": True}


# --- ops made per use: a subscript, an array of expressions ------------------------------------

@functools.lru_cache(maxsize=256)
def index_op(key: tuple[Any, ...], text: str) -> ArrayOp:
    """``x[key]``: basic NumPy indexing by constant integers and slices (``text`` is how it is
    written, ``[1:3]``). The gradient scatters ``g`` back into zeros of the operand's shape."""
    subscript = subscript_of(key)

    def forward(np: Any, x: Any) -> Any:
        return np.array(x[subscript])

    def vjp(xp: Arrays, g: Any, out: Any, x: Any) -> Any:
        return xp.scatter(g, key, x)

    return ArrayOp("index", 1, forward, (vjp,), postfix=text, key=key, complex=SAME,
                   jvp=lambda np, tangents, out, x: forward(np, tangents[0]),
                   summary="indexing and slicing by constant integers")


@functools.lru_cache(maxsize=64)
def stack_op(count: int) -> ArrayOp:
    """``[a, b, c]`` with expressions inside: their values stacked into a new first axis."""

    def vjp_for(position: int) -> Vjp:
        return lambda xp, g, out, *args: xp.take(g, position)

    def forward(np: Any, *args: Any) -> Any:
        shapes = {np.shape(arg) for arg in args}
        if len(shapes) > 1:
            listed = ", ".join(sorted("x".join(map(str, s)) or "scalar" for s in shapes))
            raise ValueError(f"the elements of an array have different shapes: {listed}")
        return np.stack(args)

    def jvp(np: Any, tangents: list[Any], out: Any, *args: Any) -> Any:
        return np.stack([np.zeros(np.shape(arg)) if t is None else t
                         for t, arg in zip(tangents, args, strict=True)])

    return ArrayOp("array", count, forward, tuple(vjp_for(i) for i in range(count)),
                   complex=SAME, jvp=jvp, summary="an array of expressions")
