"""An array node's value in many columns at once (gradcheck/columns.py's replays).

A column's value has the node's shape behind a leading column axis (``(columns, *shape)``); an
operand that no perturbation reaches has no column axis and broadcasts. Element-wise ops
broadcast as usual once the column axis is set apart (``aligned``); each array op has its
column form in ``COLUMN_FORMS``.

Columns that each move one element of a node (an element-wise check) are ``Sparse``: through
element-wise ops of one shape every column still differs from the node's value in that one
element, so ``sparse_compute`` recomputes just those elements, one per column, and the rest is
the node's value as the evaluation computed it. A reduction, an array op or broadcasting reads
them ``dense``. A column's largest magnitude is the moved element's or the largest of the
others, known from the node's value (``others``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from gradcli.engine.graph import Node
from gradcli.engine.ops import numpy
from gradcli.engine.ops.linear_algebra import norm2

if TYPE_CHECKING:
    from gradcli.engine.ops import Op


class Sparse(NamedTuple):
    """Columns of a node's value that differ from it in one element each: column j has
    ``values[j]`` at flat index ``at[j]`` (the columns of one replay share ``at``)."""

    at: Any
    values: Any


def sparse_compute(node: Node, changed: dict[int, Any]) -> Sparse | None:
    """``node``'s moved elements, if it is an element-wise op of floats whose moving operands
    are ``Sparse`` of its own shape and whose others have its shape or one element; else None
    (``dense`` then)."""
    np = numpy()
    value = node.value
    if node.op.is_array or not isinstance(value, np.ndarray) or value.dtype.kind != "f":
        return None
    shape, at = value.shape, None
    shapes = [np.shape(source.value) for source in node.inputs]
    for source, own in zip(node.inputs, shapes, strict=True):
        moved = changed.get(source.index)
        if moved is None:
            if own != shape and math.prod(own) != 1:
                return None
        elif not isinstance(moved, Sparse) or own != shape or (
                at is not None and moved.at is not at):
            return None
        else:
            at = moved.at
    if at is None:
        return None
    args = [changed[s.index].values if s.index in changed else
            np.ravel(s.value)[at] if own == shape else np.ravel(s.value)
            for s, own in zip(node.inputs, shapes, strict=True)]
    values = np.asarray(node.op.apply_vector(*args))
    return Sparse(at, values) if values.shape == np.shape(at) else None


def others(value: Any, at: Any) -> Any:
    """Per column, the largest magnitude of ``value`` but for its element ``at[j]`` (0 for a
    single element): from the two largest, not a pass per column."""
    np = numpy()
    magnitudes = np.abs(np.ravel(value))  # a copy: the largest is put out of the way
    first = int(np.argmax(magnitudes))  # NaN counts as the largest, as np.max has it
    top = magnitudes[first]
    magnitudes[first] = 0.0
    return np.where(at == first, magnitudes.max(), top)


def dense(value: Any, moved: Sparse) -> Any:
    """The columns ``moved`` of the node whose value is ``value``, whole: ``(columns, *shape)``."""
    np = numpy()
    count = len(moved.at)
    rows = np.repeat(np.reshape(value, (1, -1)), count, axis=0)
    rows[np.arange(count), moved.at] = moved.values
    return rows.reshape((count, *np.shape(value)))


def column_compute(node: Node, changed: dict[int, Any], columns: int) -> Any:
    """``node``'s value in every column: its operands in ``changed`` have the column axis."""

    np = numpy()
    args = [changed.get(s.index, s.value) for s in node.inputs]
    moving = [s.index in changed for s in node.inputs]
    op = node.op
    if op.is_array:
        return COLUMN_FORMS[op.name](np, op, args, moving, columns)
    value = op.apply_vector(*aligned(np, args, moving))
    if isinstance(value, np.ndarray) and value.ndim and value.shape[0] == columns:
        return value  # mostly it has the column axis already
    return np.broadcast_to(value, (columns, *np.shape(value)[1:]))


def aligned(np: Any, args: list[Any], moving: list[bool]) -> list[Any]:
    """The operands of an element-wise op with the column axis set apart: a moving operand
    gets axes of length 1 after it, so that its own axes line up with the others' from the
    right, as NumPy broadcasting lines them up without columns."""
    rank = max(np.ndim(a) - m for a, m in zip(args, moving, strict=True))
    lined = []
    for arg, move in zip(args, moving, strict=True):
        if move:
            core = arg.shape[1:]
            arg = arg.reshape((arg.shape[0], *(1,) * (rank - len(core)), *core))
        lined.append(arg)
    return lined


def _columned(np: Any, arg: Any, move: bool, columns: int) -> Any:
    """An operand with the column axis, whether or not a perturbation reaches it."""
    return arg if move else np.broadcast_to(arg, (columns, *np.shape(arg)))


def _flat(np: Any, args: list[Any], moving: list[bool], columns: int) -> Any:
    return _columned(np, args[0], moving[0], columns).reshape(columns, -1)


def _extreme(largest: bool) -> Callable[..., Any]:
    def form(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
        flat = _flat(np, args, moving, columns)
        best = flat.max(axis=1, keepdims=True) if largest else flat.min(axis=1, keepdims=True)
        hits = flat == best
        return (flat * hits).sum(axis=1) / hits.sum(axis=1)

    return form


def _logsumexp(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    flat = _flat(np, args, moving, columns)
    top = flat.max(axis=1, keepdims=True)
    return top[:, 0] + np.log(np.sum(np.exp(flat - top), axis=1))


def _last_axis(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    """softmax, log_softmax, inv, det: already along the last axes of stacked operands."""
    if op.domain is not None and op.name in ("inv", "det"):
        values = _columned(np, args[0], moving[0], columns)
        if not np.all(np.isfinite(values)) or np.any(np.linalg.cond(values) > 1e15):
            raise ValueError("a singular column")
    return op.forward(np, _columned(np, args[0], moving[0], columns))


def _logdet(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    sign, value = np.linalg.slogdet(_columned(np, args[0], moving[0], columns))
    return np.where(sign > 0, value, np.nan)


def _matmul(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    """A matrix product with a column axis on either operand or both: einsum, by core ranks
    (``optimize`` lets it call BLAS for large operands: many columns are one matrix product)."""
    ca, cb = (np.ndim(arg) - move for arg, move in zip(args, moving, strict=True))
    if ca not in (1, 2) or cb not in (1, 2):
        raise ValueError("@ multiplies vectors and matrices")
    left, right, out = _MATMUL_INDICES[ca, cb]
    left, right = ("c" + left if moving[0] else left), ("c" + right if moving[1] else right)
    large = max(np.size(arg) for arg in args) > _BLAS_ELEMENTS
    return np.einsum(f"{left},{right}->c{out}", *args, optimize=large)


_BLAS_ELEMENTS = 4096  # a product with a larger operand is worth einsum's search for BLAS


# (core rank of a, of b) -> einsum indices of a, b and the product, without the column axis
_MATMUL_INDICES = {(1, 1): ("i", "i", ""), (1, 2): ("i", "ik", "k"),
                   (2, 1): ("ij", "j", "i"), (2, 2): ("ij", "jk", "ik")}


def _dot(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    if np.shape(args[0])[moving[0]:] != np.shape(args[1])[moving[1]:]:
        raise ValueError("shapes differ")
    product = np.multiply(*aligned(np, args, moving))
    return np.broadcast_to(product, (columns, *product.shape[1:])).reshape(columns, -1).sum(1)


def _outer(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    a, b = (_columned(np, arg, move, columns).reshape(columns, -1)
            for arg, move in zip(args, moving, strict=True))
    return a[:, :, None] * b[:, None, :]


def _stack(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    return np.stack([_columned(np, a, m, columns) for a, m in zip(args, moving, strict=True)],
                    axis=1)


def _reduce(name: str) -> Callable[..., Any]:
    def form(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
        flat = _flat(np, args, moving, columns)
        if name == "norm":
            return norm2(np, flat, axis=1)
        if name == "norm1":
            return np.sum(np.abs(flat), axis=1)
        return getattr(np, name)(flat, axis=1)

    return form


def _transpose(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    value = _columned(np, args[0], moving[0], columns)
    return np.swapaxes(value, -1, -2) if value.ndim == 3 else value


def _index(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    key = (slice(None), *(slice(*part) if isinstance(part, tuple) else part for part in op.key))
    return _columned(np, args[0], moving[0], columns)[key]


def _trace(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    return np.trace(_columned(np, args[0], moving[0], columns), axis1=-2, axis2=-1)


COLUMN_FORMS: dict[str, Callable[..., Any]] = {
    "matmul": _matmul, "dot": _dot, "outer": _outer, "transpose": _transpose,
    "sum": _reduce("sum"), "mean": _reduce("mean"), "prod": _reduce("prod"),
    "norm": _reduce("norm"), "norm1": _reduce("norm1"), "max": _extreme(True),
    "min": _extreme(False), "logsumexp": _logsumexp, "softmax": _last_axis,
    "log_softmax": _last_axis, "tr": _trace, "det": _last_axis, "logdet": _logdet,
    "inv": _last_axis, "index": _index, "array": _stack,
}
