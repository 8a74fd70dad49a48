"""The check's replays of arrays on NumPy: many perturbations at once as columns, or one element.

As ``float_columns`` does for float programs, ``central_columns`` shifts the sampled elements
of one array node up and down by their steps: each shift is a column along a new leading axis,
and the nodes downstream are replayed once for a block of columns instead of twice per element.
Only the differences that agree are settled there; any other goes through
``differences.check_node`` (smaller steps, one-sided differences, the exact message), which
perturbs one element at a time through an ``ElementReplayer``.

A column's value of a downstream array node has the node's shape behind the leading axis
(``(columns, *shape)``); a value that no perturbation reaches stays as it is and broadcasts.
Element-wise ops broadcast as usual once the column axis is set apart (``_aligned``); each array
op has its column form in ``_COLUMN_FORMS``. A node whose op has none (or whose replay raises)
makes the pass give up for that node: the per-element check then does all of it. The array
engine (engine/arrays.py) is imported where it is used: a float program's columns never load it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from gradcli.engine.graph import Node
from gradcli.engine.ops import CONDITIONAL, LOGICAL, numpy
from gradcli.engine.ops.linear_algebra import norm2
from gradcli.engine.replay import Moved, linear_part, moved_columns
from gradcli.gradcheck.steps import CENTRAL, base_step, judge, quotient

if TYPE_CHECKING:
    from gradcli.engine.ops import Op


class Settled(NamedTuple):
    """A node or element whose central difference at the first step agrees (``check`` makes it
    a ``GradientCheck`` with its gradient)."""

    numeric: float
    abs_error: float
    tolerance: float
    step: float


# --- array nodes -----------------------------------------------------------------------------

COLUMN_CELLS = 2**22  # columns x elements of the largest downstream value, per block (32 MB)
COLUMN_MAX_ELEMENTS = 2**16  # a larger node is perturbed in place, an element at a time


class ElementReplayer:
    """The output's value if one element of one node had another value (``replay.Replayer``'s
    interface, ``steps.Replays``: ``replay(index, value, complex_step)``, ``nodes`` and
    ``switched``, the conditions and truth values a replay turned over). An element's move
    through the nodes linear in it (``replay.Moved``) is computed once for all its replays: for
    W in W@x, x's elements times the step added to one row of W@x."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self.users: list[list[int]] = [[] for _ in nodes]
        for node in nodes:
            for source in node.inputs:
                self.users[source.index].append(node.index)
        self.target: Node = nodes[-1]
        self.downstream: list[Node] = []
        self.linear: set[int] = set()  # the downstream nodes linear in the target
        self.unit: tuple[int, Moved] | None = None  # the last element moved, and its moves
        # the target's value, real and complex, perturbed; None: a unit array of its shape
        self.moved: dict[bool | None, Any] = {}
        self.masked = any(node.op is CONDITIONAL or node.op.name in LOGICAL for node in nodes)
        self.switched: set[int] = set()

    def aim(self, node: Node) -> int:
        """Perturb elements of ``node`` from now on; returns the array elements a replay reads
        and writes (a matrix product reads all of its matrix)."""
        np = numpy()
        seen, stack = {node.index}, [node.index]
        while stack:
            for user in self.users[stack.pop()]:
                if user not in seen:
                    seen.add(user)
                    stack.append(user)
        seen.discard(node.index)
        self.target, self.downstream = node, [self.nodes[i] for i in sorted(seen)]
        self.linear, self.unit = linear_part(node, self.downstream), None
        # Without linear nodes, the replays perturb an element of a private copy in place, and
        # put it back; the copy is made by the first replay (columns and directions need none).
        self.moved = {False: None, True: None, None: None}
        return sum(np.size(n.value) + sum(np.size(s.value) for s in n.inputs)
                   for n in self.downstream)

    def moving(self, d: Any, buffer: Any = None, unit: int | None = None) -> Moved:
        """The replays of the aimed node moved along ``d`` (None: placed by the caller; a unit
        array: 1 at flat index ``unit``)."""
        note = self._note_switch if self.masked else None
        linear = self.linear if d is not None else set()
        return Moved(self.target, self.downstream, linear, d, self.nodes[-1], buffer, note, unit)

    def replay(self, index: int, value: Any, complex_step: bool = False) -> tuple[Any, float]:
        np = numpy()
        node = self.target
        if self.linear:
            if self.unit is None or self.unit[0] != index:
                self.unit = (index, self.moving(self._unit(index), unit=index))
            step = value - np.asarray(node.value).flat[index]  # the step rounding let it take
            return self.unit[1].replay(step, abs(value), complex_step)
        moved = self.moved[complex_step]
        if moved is None:
            kind = complex if complex_step else float
            moved = self.moved[complex_step] = np.array(node.value, dtype=kind, order="C")
        flat = moved.reshape(-1)  # a view: the copy itself changes
        kept = flat[index]
        flat[index] = value
        try:
            return self.moving(None).replay(None, abs(value), complex_step, at=moved)
        finally:
            flat[index] = kept

    def _unit(self, index: int) -> Any:
        """The aimed node's shape, 1 at flat ``index`` and 0 elsewhere: one buffer per aimed
        node, whose previous 1 is put back to 0."""
        np = numpy()
        unit = self.moved.get(None)
        if unit is None:
            unit = self.moved[None] = np.zeros(np.shape(self.target.value))
        flat = unit.reshape(-1)
        if self.unit is not None:
            flat[self.unit[0]] = 0.0
        flat[index] = 1.0
        return unit

    def _note_switch(self, node: Node, args: list[Any], result: Any) -> None:
        """Note a truth value or a condition that this replay turned over (in any element)."""
        np = numpy()
        if node.op.name in LOGICAL:
            if np.any((np.real(result) != 0) != (np.asarray(node.value) != 0)):
                self.switched.add(node.index)
        elif node.op is CONDITIONAL:
            condition = node.inputs[0]
            if np.any((np.real(args[0]) != 0) != (np.asarray(condition.value) != 0)):
                self.switched.add(condition.index)


def replayable(nodes: list[Node]) -> bool:
    """Every op of ``nodes`` has a column form (element-wise ops always do)."""

    return all(not n.op.is_array or n.op.name in _COLUMN_FORMS for n in nodes)


def central_columns(node: Node, downstream: list[Node], output: Node, flats: list[int],
                    rtol: float, atol: float, along: tuple[tuple[Any, float], ...] = (),
                    linear: set[int] | None = None
                    ) -> tuple[dict[int, Settled], dict[int, Settled]]:
    """The central-difference check of the elements ``flats`` of ``node`` (flat indices), a
    block of columns at a time, and in the first block, along each direction v of ``along``
    ((v, v·g) pairs: t = 0 moved by the base step, as ``directions.check_direction`` moves
    it); only the checks that pass: the elements' by flat index, the directions' by number.
    The ``linear`` nodes (``replay.linear_part``) move as ``replay.Moved`` moves them, by their
    value at each column's move: x's columns in W@x are W's columns and one W@v per direction,
    not a product over all the columns."""
    np = numpy()
    values, grads = np.ravel(node.value), np.ravel(node.grad)
    widest = max([np.size(n.value) for n in downstream] + [np.size(node.value), 1])
    block = max(1, COLUMN_CELLS // (2 * widest))
    passed: dict[int, Settled] = {}
    lines: dict[int, Settled] = {}
    f0 = abs(float(output.value))
    for start in range(0, max(len(flats), 1), block):
        chunk = np.asarray(flats[start:start + block], dtype=np.intp)
        steps = base_step(values[chunk], np.maximum)
        count, at = len(chunk), np.concatenate((chunk, chunk))
        moved = np.repeat(values.reshape(1, -1), 2 * count, axis=0)
        moved[np.arange(2 * count), at] += np.concatenate((steps, -steps))
        largest = np.abs(moved[np.arange(2 * count), at])
        h = base_step(0.0)
        if not start and along:
            ends = [values + sign * h * np.ravel(v) for sign in (1.0, -1.0) for v, _ in along]
            moved = np.concatenate((moved, ends))
            largest = np.concatenate((largest, np.abs(ends).max(axis=1)))
        lines_here = len(along) if not start else 0
        changed = {node.index: moved.reshape((len(moved), *np.shape(node.value)))}
        rest: list[Node] | None = downstream
        if linear:
            t = np.concatenate((steps, -steps, np.full(lines_here, h), np.full(lines_here, -h)))
            rest, largest = moved_columns(node, downstream, linear, output, chunk.tolist(),
                                            [v for v, _ in along[:lines_here]], t, changed,
                                            largest)
        replayed = None if rest is None else _replay(changed, rest, output, largest)
        if replayed is None:
            break
        ups = np.r_[0:count, 2 * count:2 * count + lines_here]
        downs = np.r_[count:2 * count, 2 * count + lines_here:2 * count + 2 * lines_here]
        out, most = np.asarray(replayed[0]), np.asarray(replayed[1])
        g = np.concatenate((grads[chunk], [grad for _, grad in along[:lines_here]]))
        h_all = np.concatenate((steps, np.full(lines_here, h)))
        with np.errstate(all="ignore"):  # a column that failed is NaN: not settled
            numeric = quotient(CENTRAL, (out[ups], out[downs]), h_all)
            largest = np.maximum(np.maximum(most[ups], most[downs]), f0)
            error, allowed, agrees, _ = judge(g, numeric, largest, h_all, 0, rtol, atol,
                                              np.maximum)
        agrees &= np.isfinite(largest) & np.isfinite(numeric)
        keys = [*chunk.tolist(), *range(lines_here)]
        for k in np.flatnonzero(agrees).tolist():
            (passed if k < count else lines)[keys[k]] = Settled(
                float(numeric[k]), float(error[k]), float(allowed[k]), float(h_all[k]))
    return passed, lines


def _replay(changed: dict[int, Any], nodes: list[Node], output: Node,
            largest: Any) -> tuple[list[float], list[float]] | None:
    """Column j: the values of ``changed`` (the moved nodes', with the column axis first)
    replayed through ``nodes``; the output and the largest magnitude recomputed (from
    ``largest``, the moved values'), per column (NaN where a value is not finite). None: some
    op could not replay columns."""
    np = numpy()
    columns = len(largest)
    with np.errstate(all="ignore"):
        try:
            for user in nodes:
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

    np = numpy()
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


_COLUMN_FORMS: dict[str, Callable[..., Any]] = {
    "matmul": _matmul, "dot": _dot, "outer": _outer, "transpose": _transpose,
    "sum": _reduce("sum"), "mean": _reduce("mean"), "prod": _reduce("prod"),
    "norm": _reduce("norm"), "norm1": _reduce("norm1"), "max": _extreme(True),
    "min": _extreme(False), "logsumexp": _logsumexp, "softmax": _last_axis,
    "log_softmax": _last_axis, "tr": _trace, "det": _last_axis, "logdet": _logdet,
    "inv": _last_axis, "index": _index, "array": _stack,
}
