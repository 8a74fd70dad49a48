"""The array check's first pass: many perturbed elements replayed together, one column each.

As ``point._central_at_once`` does for scalar programs, every sampled element of a node is
shifted up and down by its central-difference step, each shift a column along a new leading
axis, and the nodes downstream are replayed once for a block of columns instead of twice per
element. Only the elements whose central difference agrees are settled here; any other goes
through the per-element check (smaller steps, one-sided differences, the exact message).

A column's value of a downstream node has the node's shape behind the leading axis
(``(columns, *shape)``); a value that no perturbation reaches stays as it is and broadcasts.
Element-wise ops broadcast as usual once the column axis is set apart (``_aligned``); each array
op has its column form in ``_COLUMN_FORMS``. A node whose op has none (or whose replay raises)
makes the pass give up for that node: the per-element check then does all of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gradcli.engine import arrays
from gradcli.engine.graph import Node
from gradcli.engine.ops import Op
from gradcli.gradcheck.point import GradientCheck
from gradcli.gradcheck.steps import CENTRAL, base_step, judge, quotient

COLUMN_CELLS = 2**22  # columns x elements of the largest downstream value, per block (32 MB)
COLUMN_MAX_ELEMENTS = 2**16  # a larger node is perturbed in place, an element at a time


def replayable(nodes: list[Node]) -> bool:
    """Every op of ``nodes`` has a column form (element-wise ops always do)."""
    return all(not n.op.is_array or n.op.name in _COLUMN_FORMS for n in nodes)


def central_columns(node: Node, downstream: list[Node], output: Node, flats: list[int],
                    rtol: float, atol: float) -> dict[int, GradientCheck]:
    """The central-difference check of the elements ``flats`` of ``node`` (flat indices), a
    block of columns at a time; only the checks that pass, by flat index."""
    np = arrays.numpy()
    values, grads = np.ravel(node.value), np.ravel(node.grad)
    widest = max([np.size(n.value) for n in downstream] + [np.size(node.value), 1])
    block = max(1, COLUMN_CELLS // (2 * widest))
    passed: dict[int, GradientCheck] = {}
    for start in range(0, len(flats), block):
        chunk = np.asarray(flats[start:start + block])
        steps = base_step(values[chunk], np.maximum)
        shifts = np.concatenate((steps, -steps))
        replayed = _replay(node, downstream, output, np.concatenate((chunk, chunk)), shifts)
        if replayed is None:
            return passed
        out, largest = replayed
        count = len(chunk)
        f0 = abs(float(output.value))
        for k, flat in enumerate(chunk.tolist()):
            most = max(largest[k], largest[k + count], f0)
            numeric = quotient(CENTRAL, (out[k], out[k + count]), steps[k])
            if not (np.isfinite(most) and np.isfinite(numeric)):
                continue
            error, allowed, agrees, _ = judge(float(grads[flat]), float(numeric), float(most),
                                              float(steps[k]), 0, rtol, atol)
            if agrees:
                passed[flat] = GradientCheck(float(grads[flat]), float(numeric), float(error),
                                             float(allowed), True, CENTRAL.method,
                                             float(steps[k]))
    return passed


def _replay(node: Node, downstream: list[Node], output: Node, flats: Any,
            shifts: Any) -> tuple[list[float], list[float]] | None:
    """Column j: ``node`` with element ``flats[j]`` moved by ``shifts[j]``; the output and the
    largest magnitude recomputed, per column (NaN where a value is not finite). None: some op
    could not replay columns."""
    np = arrays.numpy()
    columns = len(flats)
    moved = np.repeat(np.reshape(node.value, (1, -1)), columns, axis=0)
    moved[np.arange(columns), flats] += shifts
    changed: dict[int, Any] = {node.index: moved.reshape((columns, *np.shape(node.value)))}
    largest = np.abs(moved[np.arange(columns), flats])
    with np.errstate(all="ignore"):
        try:
            for user in downstream:
                value = _column_compute(user, changed, columns)
                changed[user.index] = value
                magnitude = np.abs(value).reshape(columns, -1).max(axis=1, initial=0.0)
                largest = np.maximum(largest, magnitude)  # NaN stays: that column failed
        except (ValueError, IndexError, ArithmeticError, np.linalg.LinAlgError):
            return None
    out = changed.get(output.index)
    if out is None:
        return None
    return np.asarray(out, dtype=float).reshape(columns).tolist(), largest.tolist()


def _column_compute(node: Node, changed: dict[int, Any], columns: int) -> Any:
    """``node``'s value in every column: its operands in ``changed`` have the column axis."""
    np = arrays.numpy()
    args = [changed.get(s.index, s.value) for s in node.inputs]
    moving = [s.index in changed for s in node.inputs]
    op = node.op
    if op.is_array:
        return _COLUMN_FORMS[op.name](np, op, args, moving, columns)
    value = op.apply_vector(*_aligned(np, args, moving))
    return np.broadcast_to(value, (columns, *np.shape(value)[1:]))


def _aligned(np: Any, args: list[Any], moving: list[bool]) -> list[Any]:
    """The operands of an element-wise op with the column axis set apart: a moving operand
    gets axes of length 1 after it, so that its own axes line up with the others' from the
    right, as NumPy broadcasting lines them up without columns."""
    rank = max(np.ndim(a) - m for a, m in zip(args, moving, strict=True))
    aligned = []
    for arg, move in zip(args, moving, strict=True):
        if move:
            core = arg.shape[1:]
            arg = arg.reshape((arg.shape[0], *(1,) * (rank - len(core)), *core))
        aligned.append(arg)
    return aligned


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
    """A matrix product with a column axis on either operand or both: einsum, by core ranks."""
    ca, cb = (np.ndim(arg) - move for arg, move in zip(args, moving, strict=True))
    if ca not in (1, 2) or cb not in (1, 2):
        raise ValueError("@ multiplies vectors and matrices")
    left, right, out = _MATMUL_INDICES[ca, cb]
    left, right = ("c" + left if moving[0] else left), ("c" + right if moving[1] else right)
    return np.einsum(f"{left},{right}->c{out}", *args)


# (core rank of a, of b) -> einsum indices of a, b and the product, without the column axis
_MATMUL_INDICES = {(1, 1): ("i", "i", ""), (1, 2): ("i", "ik", "k"),
                   (2, 1): ("ij", "j", "i"), (2, 2): ("ij", "jk", "ik")}


def _dot(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    if np.shape(args[0])[moving[0]:] != np.shape(args[1])[moving[1]:]:
        raise ValueError("shapes differ")
    product = np.multiply(*_aligned(np, args, moving))
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
            return np.sqrt(np.sum(flat * flat, axis=1))
        if name == "norm1":
            return np.sum(np.abs(flat), axis=1)
        return getattr(np, name)(flat, axis=1)

    return form


def _transpose(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    value = _columned(np, args[0], moving[0], columns)
    return np.swapaxes(value, -1, -2) if value.ndim == 3 else value


def _index(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    key = tuple(slice(*part) if isinstance(part, tuple) else part for part in op.key)
    return _columned(np, args[0], moving[0], columns)[(slice(None), *key)]


def _trace(np: Any, op: Op, args: list[Any], moving: list[bool], columns: int) -> Any:
    return np.trace(_columned(np, args[0], moving[0], columns), axis1=-2, axis2=-1)


_COLUMN_FORMS: dict[str, Callable[..., Any]] = {
    "matmul": _matmul, "dot": _dot, "outer": _outer, "transpose": _transpose,
    "sum": _reduce("sum"), "mean": _reduce("mean"), "prod": _reduce("prod"),
    "norm": _reduce("norm"), "norm1": _reduce("norm1"), "max": _extreme(True),
    "min": _extreme(False), "logsumexp": _logsumexp, "softmax": _last_axis,
    "log_softmax": _last_axis, "tr": _trace, "det": _last_axis, "logdet": _logdet,
    "inv": _last_axis, "index": _index, "array": _stack,
}
