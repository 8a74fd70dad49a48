"""The table's array rows (ops/row.py's ``ARRAY`` kind): products, reductions, linear algebra,
indexing and constructors; each row's ``shape`` rule says what it takes, before computing.

Conventions are docs/arrays.md's: reductions give a number, softmax works along the last axis,
a tie in max/min splits the gradient, a singular matrix is a numeric error naming the node.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from gradcli.engine.ops.row import (
    ARRAY,
    LINEAR_ALL,
    LINEAR_EACH,
    PREC_PRODUCT,
    SAME,
    Op,
    Shape,
    ShapeError,
    numpy,
    shape_text,
)
from gradcli.engine.ops.xp import scaled_prod, subscript_of

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from gradcli.engine.ops.xp import Arrays

    Vjp = Callable[..., Any]  # rule(xp, g, out, *operands) -> the operand's gradient


def _row(name: str, arity: int, forward: Callable[..., Any], rules: tuple[Vjp, ...],
         **row: Any) -> Op:
    return Op(name, arity, forward, rules, kind=ARRAY, vector=SAME, **row)


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


def _extreme_vjp(xp: Arrays, g: Any, out: Any, x: Any) -> Any:
    """max/min reductions: the tied elements share the gradient equally."""
    hits = xp.eq(x, out)
    return g * hits / xp.sum(hits)


def _pick(np: Any, x: Any, largest: bool) -> Any:
    """max/min of the real parts (a complex-step replay follows them), ties' imaginary parts
    averaged (not their real parts: the mean of [1e308, 1e308] overflows)."""
    real = x.real
    best = real.max() if largest else real.min()
    if not np.iscomplexobj(x):
        return best
    return best + 1j * x.imag[real == best].mean()


def _logsumexp(np: Any, x: Any) -> Any:
    top = x.real.max()  # the max subtracted: exp never overflows
    return top + np.log(np.sum(np.exp(x - top)))


def norm2(np: Any, x: Any, axis: int | None = None) -> Any:
    """sqrt(sum(x*x)) (along ``axis``) without overflow or underflow: x is divided by its largest
    |real part| first, a constant the complex-step perturbation passes through analytically."""
    scale = np.max(np.abs(x.real), axis=axis, keepdims=True)
    scale = np.where(scale > 0, scale, 1.0)
    scaled = x / scale
    return np.sqrt(np.sum(scaled * scaled, axis=axis)) * (
        scale.reshape(()) if axis is None else np.squeeze(scale, axis=axis))


def _log_softmax(np: Any, x: Any) -> Any:
    shifted = x - x.real.max(axis=-1, keepdims=True)  # exp never overflows
    shifted -= np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))  # in place: one array
    return shifted


def _softmax(np: Any, x: Any) -> Any:
    return np.exp(_log_softmax(np, x))


# --- shape rules: the shape of a row's value from its operands' shapes ---------------------------

def _matmul_shape(a: Shape, b: Shape) -> Shape:
    """Vectors and matrices, the inner sizes equal: (m, n) @ (n,) is (m,), (n,) @ (n,) is ()."""
    if len(a) not in (1, 2) or len(b) not in (1, 2) or a[-1] != b[0]:
        raise ShapeError("")
    return a[:-1] + b[1:]


def _matmul_unit(np: Any, position: int, flat: int, a: Any, b: Any) -> Any:
    """a@b with operand ``position`` the unit array at ``flat``: e_ij @ b is b's row j in row i,
    a @ e_jk is a's column j in column k (``Op.unit``)."""
    out = np.zeros(_matmul_shape(np.shape(a), np.shape(b)))
    if position == 0:
        index = np.unravel_index(flat, np.shape(a))
        out[index[:-1]] = b[index[-1]]
    else:
        index = np.unravel_index(flat, np.shape(b))
        out[(..., *index[1:])] = a[..., index[0]]
    return out


def _matmul_scaled(np: Any, position: int, u: Any, v: Any, s: Any, a: Any, b: Any) -> Any:
    """a@b with operand ``position`` the matrix (u v^T) * s (``Op.scaled``; a 2-D V, as matmul
    takes): (V@b)_i is u_i (s @ (v * b))_i and (a@V)_j is ((a * u) @ s)_j v_j, one product with
    s each; without s, the outer products u (v@b) and (a@u) v^T, O(m + n) for a vector."""
    if s is None:
        return np.multiply.outer(u, v @ b) if position == 0 else np.multiply.outer(a @ u, v)
    if position == 0:
        tail = (1,) * (np.ndim(b) - 1)  # b a matrix: u and v scale its rows
        return np.matmul(s, v.reshape(v.shape + tail) * b) * u.reshape(u.shape + tail)
    return np.matmul(a * u, s) * v


def _same_shapes(x: Shape, y: Shape) -> Shape:
    if x != y:
        raise ShapeError(f"needs two arrays of one shape, not {shape_text(x)} and "
                         f"{shape_text(y)}")
    return ()


def _has_axis(x: Shape) -> Shape:
    if not x:
        raise ShapeError("needs a vector or a matrix (along its last axis), not a number")
    return x


def _square(x: Shape) -> Shape:
    if len(x) != 2 or x[0] != x[1]:
        raise ShapeError(f"needs a square matrix, not {shape_text(x) if x else 'a scalar'}")
    return x


def _square_to_number(x: Shape) -> Shape:
    return _square(x)[:0]


# --- domains: the values a row cannot take (its operands' shapes fit) ---------------------------

def _invertible(np: Any, x: Any) -> str | None:
    real = x.real
    if not np.all(np.isfinite(real)) or np.linalg.cond(real) > 1e15:
        return "singular matrix (not invertible)"
    return None


def _positive_determinant(np: Any, x: Any) -> str | None:
    problem = _invertible(np, x)
    if problem is None and np.linalg.slogdet(x.real)[0] <= 0:
        problem = "logarithm of a non-positive determinant"
    return problem


def _nonzero_norm(np: Any, x: Any) -> str | None:
    return None if np.any(x.real != 0) else "the derivative of norm at 0 is not finite"


def _inv_vjp(xp: Arrays, g: Any, out: Any, x: Any) -> Any:
    """-X^-T g X^-T."""
    inverse_t = xp.transpose(out)
    return -xp.matmul(xp.matmul(inverse_t, g), inverse_t)


def _logdet(np: Any, x: Any) -> Any:
    if np.iscomplexobj(x):
        return np.log(np.linalg.det(x))
    return np.linalg.slogdet(x)[1]


def _product_jvp(product: Callable[..., Any]) -> Callable[..., Any]:
    """The JVP of a bilinear op (``@``, ``outer``): product(ta, b) + product(a, tb)."""

    def jvp(np: Any, tangents: list[Any], out: Any, a: Any, b: Any) -> Any:
        ta, tb = tangents
        parts = ([product(np, ta, b)] if ta is not None else []) + (
            [product(np, a, tb)] if tb is not None else [])
        return parts[0] if len(parts) == 1 else parts[0] + parts[1]

    return jvp


def _reduction(name: str, forward: Callable[..., Any], vjp: Vjp, **row: Any) -> Op:
    """A row of one operand whose value is a number."""
    return _row(name, 1, forward, (vjp,), shape=lambda x: (), **row)


def _constructor(name: str, make: Callable[..., Any], shape: Callable[[int], Shape],
                 **row: Any) -> Op:
    """``name(n)`` of a constant whole number n: no gradient, and a tangent of zeros."""
    return _row(name, 1, lambda np, n: make(np, int(n.real)), (lambda xp, g, out, n: 0.0,),
                shape=shape, constant_args=True,
                jvp=lambda np, tangents, out, n: np.zeros(np.shape(out)), **row)


# The NumPy export's softmax along the last axis, the max subtracted (no overflow).
_SHIFTED = "{0} - np.max({0}, axis=-1, keepdims=True)"
_SUM_EXP = f"np.sum(np.exp({_SHIFTED}), axis=-1, keepdims=True)"

ROWS: list[Op] = [
    # --- products --------------------------------------------------------------------------
    _row("matmul", 2, lambda np, a, b: np.matmul(a, b), (_matmul_left, _matmul_right),
         shape=_matmul_shape, complex=SAME, symbol="@", precedence=PREC_PRODUCT,
         jvp=_product_jvp(lambda np, a, b: np.matmul(a, b)), linear=LINEAR_EACH,
         unit=_matmul_unit, scaled=_matmul_scaled, numpy="{0} @ {1}",
         summary="matrix product; vector @ vector is the dot product"),
    _row("dot", 2, lambda np, x, y: np.sum(x * y),
         (lambda xp, g, out, x, y: g * y, lambda xp, g, out, x, y: g * x),
         shape=_same_shapes, complex=SAME, linear=LINEAR_EACH, numpy="np.sum({0} * {1})",
         summary="sum(x*y) of two arrays of one shape (NumPy's vdot)"),
    # NumPy flattens matrices given to outer (xp.vector); the language cannot, so the graph
    # form of these rules refuses them (a usage error), and their numeric gradient remains
    _row("outer", 2, lambda np, x, y: np.outer(x, y),
         (lambda xp, g, out, x, y: xp.reshape_as(xp.matmul(g, xp.vector(y)), x),
          lambda xp, g, out, x, y: xp.reshape_as(xp.matmul(xp.transpose(g), xp.vector(x)), y)),
         shape=lambda x, y: (math.prod(x), math.prod(y)), complex=SAME,
         jvp=_product_jvp(lambda np, x, y: np.outer(x, y)), linear=LINEAR_EACH,
         numpy="np.outer({0}, {1})", summary="outer product of two vectors: a matrix"),
    _row("transpose", 1, lambda np, x: x.T, (lambda xp, g, out, x: xp.transpose(g),),
         shape=lambda x: x[::-1], postfix="'", complex=SAME, jvp=lambda np, ts, out, x: ts[0].T,
         linear=LINEAR_ALL, numpy="np.transpose({0})",
         summary="transpose, written x'; a vector stays a vector"),
    # --- reductions: every element to one number --------------------------------------------
    _reduction("sum", lambda np, x: np.sum(x), lambda xp, g, out, x: xp.spread(g, x),
               complex=SAME, linear=LINEAR_ALL, numpy="np.sum({0})", summary="sum of the elements"),
    _reduction("mean", lambda np, x: np.mean(x),
               lambda xp, g, out, x: xp.spread(g / math.prod(xp.shape(x)), x),
               complex=SAME, linear=LINEAR_ALL, numpy="np.mean({0})",
               summary="mean of the elements"),
    _reduction("prod", scaled_prod, lambda xp, g, out, x: g * xp.others_product(x, out),
               complex=SAME, numpy="np.prod({0})", summary="product of the elements"),
    _reduction("max", lambda np, x: _pick(np, x, True), _extreme_vjp, numpy="np.max({0})",
               complex=SAME, summary="largest element; tied elements share the gradient equally"),
    _reduction("min", lambda np, x: _pick(np, x, False), _extreme_vjp, numpy="np.min({0})",
               complex=SAME, summary="smallest element; tied elements share the gradient equally"),
    _reduction("norm", lambda np, x: norm2(np, x), lambda xp, g, out, x: g * (x / out),
               domain=_nonzero_norm, complex=SAME, numpy="np.linalg.norm({0})",
               summary="2-norm of a vector, Frobenius norm of a matrix"),
    _reduction("norm1", lambda np, x: np.sum(np.where(x.real < 0, -x, x)),
               lambda xp, g, out, x: g * xp.sign(x), numpy="np.sum(np.abs({0}))",
               complex=SAME, summary="sum of absolute values; its derivative at 0 is 0, as abs'"),
    _reduction("logsumexp", _logsumexp, lambda xp, g, out, x: g * xp.shares(x, out),
               numpy="np.max({0}) + np.log(np.sum(np.exp({0} - np.max({0}))))",
               complex=SAME, summary="log(sum(exp(x))) with the max subtracted (no overflow)"),
    # --- along the last axis --------------------------------------------------------------
    _row("softmax", 1, _softmax,
         (lambda xp, g, out, x: out * (g - xp.sum_last(g * out)),),
         shape=_has_axis, complex=SAME, numpy=f"np.exp({_SHIFTED}) / {_SUM_EXP}",
         jvp=lambda np, ts, out, x: out * (ts[0] - np.sum(out * ts[0], axis=-1, keepdims=True)),
         summary="exp(x) / sum(exp(x)) along the last axis (rows)"),
    _row("log_softmax", 1, _log_softmax,
         # g - softmax(x)*sum(g), written so that NumPy reuses its temporary arrays
         (lambda xp, g, out, x: xp.exp(out) * -xp.sum_last(g) + g,),
         shape=_has_axis, complex=SAME,
         jvp=lambda np, ts, out, x: ts[0] - np.sum(np.exp(out) * ts[0], axis=-1, keepdims=True),
         numpy=f"{_SHIFTED} - np.log({_SUM_EXP})",
         summary="x - logsumexp(x) along the last axis (rows)"),
    # --- linear algebra -------------------------------------------------------------------
    _row("tr", 1, lambda np, x: np.trace(x),
         (lambda xp, g, out, x: g * xp.eye(xp.shape(x)[0]),),
         shape=_square_to_number, complex=SAME, linear=LINEAR_ALL, numpy="np.trace({0})",
         summary="trace of a square matrix"),
    _row("det", 1, lambda np, x: np.linalg.det(x),
         (lambda xp, g, out, x: g * out * xp.transpose(xp.inv(x)),),
         shape=_square_to_number, domain=_invertible, complex=SAME,
         numpy="np.linalg.det({0})", summary="determinant (a singular matrix is an error)"),
    _row("logdet", 1, _logdet, (lambda xp, g, out, x: g * xp.transpose(xp.inv(x)),),
         shape=_square_to_number, domain=_positive_determinant, complex=SAME,
         # log|det| plus the log of det's sign: NaN (no value) for a negative determinant
         numpy="(np.linalg.slogdet({0})[1] + np.log(np.linalg.slogdet({0})[0]))",
         summary="log(det(x)) by slogdet; the determinant must be positive"),
    _row("inv", 1, lambda np, x: np.linalg.inv(x), (_inv_vjp,), shape=_square,
         domain=_invertible, complex=SAME, jvp=lambda np, ts, out, x: -(out @ ts[0] @ out),
         numpy="np.linalg.inv({0})", summary="matrix inverse (a singular matrix is an error)"),
    # --- constructors: a constant whole number n ------------------------------------------
    _constructor("zeros", lambda np, n: np.zeros(n), lambda n: (n,),
                 complex=SAME, numpy="np.zeros(int({0}))", summary="a vector of n zeros"),
    _constructor("ones", lambda np, n: np.ones(n), lambda n: (n,), complex=SAME,
                 numpy="np.ones(int({0}))", summary="a vector of n ones"),
    _constructor("eye", lambda np, n: np.eye(n), lambda n: (n, n),
                 complex=SAME, numpy="np.eye(int({0}))", summary="the n x n identity matrix"),
]

# How the listing (``gradcli functions``, docs/functions.md) shows the rows made per use.
MADE_PER_USE: list[dict[str, Any]] = [
    {"name": "index", "kind": "array operator",
     "written": ["x[0]", "W[1, 0]", "x[1:3]", "W[:, 0]"], "aliases": [], "arity": 1,
     "summary": "indexing and slicing by constant whole numbers (-1: the last)",
     "complex_step": True, "vector": True},
    {"name": "array", "kind": "array literal", "written": ["[1, 2]", "[[1, 2], [3, 4]]", "[x, y]"],
     "aliases": [], "arity": 0,
     "summary": "an array of numbers, or of the values of expressions of one shape",
     "complex_step": True, "vector": True},
]


# --- ops made per use: a subscript, an array of expressions ------------------------------------

@functools.lru_cache(maxsize=256)
def index_op(key: tuple[Any, ...], text: str) -> Op:
    """``x[key]``: basic NumPy indexing by constant integers and slices (``text`` is how it is
    written, ``[1:3]``). The gradient scatters ``g`` back into zeros of the operand's shape."""
    subscript = subscript_of(key)

    def forward(np: Any, x: Any) -> Any:
        return np.array(x[subscript])

    def vjp(xp: Arrays, g: Any, out: Any, x: Any) -> Any:
        return xp.scatter(g, key, x)

    def shape(x: Shape) -> Shape:  # a view of one number: nothing is allocated
        return tuple(numpy().broadcast_to(0.0, x)[subscript].shape)

    return _row("index", 1, forward, (vjp,), shape=shape, postfix=text, key=key, complex=SAME,
                linear=LINEAR_ALL, numpy="{0}" + text,
                jvp=lambda np, tangents, out, x: forward(np, tangents[0]),
                summary="indexing and slicing by constant integers")


@functools.lru_cache(maxsize=64)
def stack_op(count: int) -> Op:
    """``[a, b, c]`` with expressions inside: their values stacked into a new first axis."""

    def vjp_for(position: int) -> Vjp:
        return lambda xp, g, out, *args: xp.take(g, position)

    def shape(*shapes: Shape) -> Shape:
        if len(set(shapes)) > 1:
            listed = ", ".join(sorted(shape_text(s) for s in set(shapes)))
            raise ShapeError(f"the elements of an array have different shapes: {listed}")
        return (count, *shapes[0])

    def jvp(np: Any, tangents: list[Any], out: Any, *args: Any) -> Any:
        return np.stack([np.zeros(np.shape(arg)) if t is None else t
                         for t, arg in zip(tangents, args, strict=True)])

    return _row("array", count, lambda np, *args: np.stack(args),
                tuple(vjp_for(i) for i in range(count)), shape=shape, complex=SAME, jvp=jvp,
                linear=LINEAR_ALL,
                numpy="np.stack([" + ", ".join(f"{{{i}}}" for i in range(count)) + "])",
                summary="an array of expressions")
