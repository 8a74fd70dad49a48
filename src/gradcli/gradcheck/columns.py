"""The check's replays of arrays on NumPy: many perturbations at once as columns, or one element.

As ``float_columns`` does for float programs, ``central_columns`` shifts the sampled elements
of one array node up and down by their steps: each shift is a column along a new leading axis,
and the nodes downstream are replayed once for a block of columns instead of twice per element.
Only the differences that agree are settled there; any other goes through
``differences.check_node`` (smaller steps, one-sided differences, the exact message), which
perturbs one element at a time through an ``ElementReplayer``.

A column's value of a downstream array node has the node's shape behind the leading axis
(``(columns, *shape)``), or, while element-wise ops carry one moved element per column, is
``Sparse``: gradcheck/column_forms.py computes both. A node whose op has no column form (or
whose replay raises) makes the pass give up for that node: the per-element check then does
all of it. The array
engine (engine/arrays.py) is imported where it is used: a float program's columns never load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from gradcli.engine.core_ops import LOGICAL
from gradcli.engine.graph import Node
from gradcli.engine.ops import CONDITIONAL, numpy
from gradcli.engine.ops.row import LINEAR_ALL
from gradcli.engine.replay import Moved, Replayer, Scaled, linear_part, reads_whole
from gradcli.gradcheck.steps import (
    CENTRAL,
    KINK_STEPS,
    base_step,
    curve_alone,
    curved,
    judge,
    quotient,
    slope_gap,
)

if TYPE_CHECKING:  # the array columns' module is imported where they are made
    from gradcli.gradcheck.column_forms import Sparse


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
    interface, ``perturbing.Replays``: ``replay(index, value, complex_step)``, ``nodes`` and
    ``switched``, the conditions and truth values a replay turned over). An element's move
    through the nodes linear in it (``replay.Moved``) is computed once for all its replays: for
    W in W@x, x's elements times the step added to one row of W@x."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self.walk = Replayer(nodes)  # its ``affected``: the nodes downstream of the target
        self.target: Node = nodes[-1]
        self.downstream: list[Node] = []
        self.linear: set[int] = set()  # the downstream nodes linear in the target
        self.unit: tuple[int, Moved] | None = None  # the last element moved, and its moves
        # the target's value, real and complex, perturbed
        self.moved: dict[bool, Any] = {}
        self.masked = self.walk.masked
        self.switched: set[int] = set()

    def aim(self, node: Node) -> None:
        """Perturb elements of ``node`` from now on."""
        self.target, self.downstream = node, self.walk.affected(node.index)
        self.linear, self.unit = linear_part(node, self.downstream), None
        # Without linear nodes, the replays perturb an element of a private copy in place, and
        # put it back; the copy is made by the first replay (columns and directions need none).
        self.moved = {False: None, True: None}

    def moving(self, d: Any, unit: int | None = None) -> Moved:
        """The replays of the aimed node moved along ``d`` (None: placed by the caller, or the
        unit array at flat index ``unit``)."""
        note = self._note_switch if self.masked else None
        linear = self.linear if d is not None or unit is not None else set()
        return Moved(self.target, self.downstream, linear, d, self.nodes[-1], self.walk.weights(),
                     note=note, unit=unit, nodes=self.nodes if self.masked else None)

    def replay(self, index: int, value: Any, complex_step: bool = False) -> tuple[Any, float]:
        np = numpy()
        node = self.target
        if self.linear:
            if self.unit is None or self.unit[0] != index:
                self.unit = (index, self.moving(None, unit=index))
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

    def _note_switch(self, node: Node, args: list[Any], result: Any) -> None:
        """Note a truth value or a condition that this replay turned over (in any element)."""
        np = numpy()
        if node.op in LOGICAL:
            if np.any((np.real(result) != 0) != (np.asarray(node.value) != 0)):
                self.switched.add(node.index)
        elif node.op is CONDITIONAL:
            condition = node.inputs[0]
            if np.any((np.real(args[0]) != 0) != (np.asarray(condition.value) != 0)):
                self.switched.add(condition.index)


def replayable(nodes: list[Node]) -> bool:
    """Every op of ``nodes`` has a column form (element-wise ops always do)."""

    from gradcli.gradcheck.column_forms import COLUMN_FORMS

    return all(not n.op.is_array or n.op.name in COLUMN_FORMS for n in nodes)


def central_columns(node: Node, downstream: list[Node], output: Node, weights: list[float],
                    flats: list[int], rtol: float, atol: float,
                    along: tuple[tuple[Any, float], ...] = (), linear: set[int] | None = None,
                    reach: float = 0.0
                    ) -> tuple[dict[int, Settled], dict[int, Settled]]:
    """The central-difference check of the elements ``flats`` of ``node`` (flat indices), a
    block of columns at a time, and in the first block, along each direction v of ``along``
    ((v, v·g) pairs: t = 0 moved by the base step, as ``directions.check_direction`` moves
    it); only the checks that pass: the elements' by flat index, the directions' by number.
    ``weights``: each node's ``replay.rounding_weight``, by index (the noise allowance).
    The ``linear`` nodes (``replay.linear_part``) move as ``replay.Moved`` moves them, by their
    value at each column's move: x's columns in W@x are W's columns and one W@v per direction,
    not a product over all the columns. Elsewhere the elements' columns are ``Sparse``. A
    large matrix's directions (``replay.Scaled``, ``linear`` given) are never formed: only the
    linear nodes move, and its moved magnitude is the bound from ``reach``, max |x|, that
    ``DirectionReplayer.replay`` gives."""
    from gradcli.gradcheck.column_forms import Sparse

    np = numpy()
    values = np.ravel(node.value)
    scaled = any(isinstance(v, Scaled) for v, _ in along)
    widest = max([np.size(n.value) for n in downstream] + [1 if scaled else values.size, 1])
    block = max(1, COLUMN_CELLS // (2 * widest))
    passed: dict[int, Settled] = {}
    lines: dict[int, Settled] = {}
    f0 = abs(float(output.value))
    h = base_step(0.0)
    for start in range(0, max(len(flats), 1), block):
        chunk = np.asarray(flats[start:start + block], dtype=np.intp)
        steps = base_step(values[chunk], np.maximum)
        count, lines_here = len(chunk), len(along) if not start else 0
        vs = [v for v, _ in along[:lines_here]]
        at = np.concatenate((chunk, chunk))
        moved = Sparse(at, values[at] + np.concatenate((steps, -steps)))
        if scaled:  # t = ±h along each direction, x + t v never formed
            ends = None
            tops = np.full(2 * lines_here, reach + h * max(1.0, reach))
        else:
            hv = h * np.reshape(vs, (lines_here, values.size))  # t = ±h along each direction
            ends = values + np.concatenate((hv, -hv))
            tops = np.abs(ends).max(axis=1, initial=0.0)
        largest = np.concatenate((np.abs(moved.values), tops)) * weights[node.index]
        replayed = (_moved_replay(node, downstream, linear, output, (moved, ends, vs, steps),
                                  largest, weights)
                    if linear else _split_replay(node, downstream, output, moved, ends, largest,
                                                 weights))
        if replayed is None:
            break
        out, most = replayed  # the elements' up, down, then the directions' up, down
        out_up, most_up = (np.concatenate((a[:count], a[2 * count:2 * count + lines_here]))
                           for a in (out, most))
        out_down, most_down = (np.concatenate((a[count:2 * count], a[2 * count + lines_here:]))
                               for a in (out, most))
        g = np.concatenate((np.asarray(node.grad).flat[chunk],  # .flat: no copy of a broadcast
                            [grad for _, grad in along[:lines_here]]))
        h_all = np.concatenate((steps, np.full(lines_here, h)))
        with np.errstate(all="ignore"):  # a column that failed is NaN: not settled
            numeric = quotient(CENTRAL, (out_up, out_down), h_all)
            largest = np.maximum(np.maximum(most_up, most_down), f0)
            error, allowed, agrees, _ = judge(g, numeric, largest, h_all, 0, rtol, atol,
                                              np.maximum)
            # a possible kink is the element check's to screen (differences.screened), unless
            # a smaller pair shows a curve's jump
            value = float(output.value)
            flagged = np.flatnonzero(agrees & curved(out_up, out_down, value, h_all, allowed))
            if scaled:  # a large matrix's directions are the element check's
                agrees[flagged[flagged >= count]] = False
                flagged = flagged[flagged < count]
            if flagged.size:
                elements, lines_flagged = flagged[flagged < count], flagged[flagged >= count]
                agrees[flagged] = curve_alone(
                    slope_gap(out_up, out_down, value, h_all)[flagged],
                    _smaller_gaps(node, downstream, output, weights, linear, (
                        chunk[elements], steps[elements], [vs[k - count] for k in lines_flagged])),
                    allowed[flagged])
        agrees &= np.isfinite(largest) & np.isfinite(numeric)
        keys = [*chunk.tolist(), *range(lines_here)]
        found = zip(*(a[agrees].tolist() for a in (numeric, error, allowed, h_all)), strict=True)
        for k, settled in zip(np.flatnonzero(agrees).tolist(), found, strict=True):
            (passed if k < count else lines)[keys[k]] = Settled(*settled)
    return passed, lines


def _smaller_gaps(node: Node, downstream: list[Node], output: Node, weights: list[float],
                  linear: set[int] | None, flagged: tuple[Any, Any, list[Any]]) -> Any:
    """The one-sided slopes' gaps (``slope_gap``) of the ``flagged`` elements (flat indices,
    central steps) and directions at the first of ``KINK_STEPS`` (NaN where a replay fails), in
    one replay of columns rather than two replays each; the elements first, then the
    directions."""
    from gradcli.gradcheck.column_forms import Sparse

    np = numpy()
    flats, steps, vs = flagged
    values, f0, count, lines = np.ravel(node.value), float(output.value), len(flats), len(vs)
    h = base_step(0.0) * KINK_STEPS[0]
    small = np.concatenate((steps * KINK_STEPS[0], np.full(lines, h)))
    at = np.concatenate((flats, flats))
    moved = Sparse(at, values[at] + np.concatenate((small[:count], -small[:count])))
    hv = h * np.reshape(vs, (lines, values.size))
    ends = values + np.concatenate((hv, -hv))
    largest = np.concatenate((np.abs(moved.values), np.abs(ends).max(axis=1, initial=0.0))
                             ) * weights[node.index]
    replayed = (_moved_replay(node, downstream, linear, output,
                              (moved, ends, vs, small[:count]), largest, weights, h)
                if linear else _split_replay(node, downstream, output, moved, ends, largest,
                                             weights))
    if replayed is None:
        return np.full(small.size, np.nan)
    out = replayed[0]
    up = np.concatenate((out[:count], out[2 * count:2 * count + lines]))
    down = np.concatenate((out[count:2 * count], out[2 * count + lines:]))
    with np.errstate(all="ignore"):
        return slope_gap(up, down, f0, small)


def _split_replay(node: Node, downstream: list[Node], output: Node, moved: Sparse, ends: Any,
                  largest: Any, weights: list[float]) -> tuple[Any, Any] | None:
    """``_replay`` of the elements' columns (``Sparse``), then of the directions' (whole)."""
    np = numpy()
    count = len(moved.at)
    first = _replay({node.index: moved}, downstream, output, largest[:count], weights)
    if first is None or not len(ends):
        return first
    second = _replay({node.index: ends.reshape((len(ends), *np.shape(node.value)))},
                     downstream, output, largest[count:], weights)
    return None if second is None else (np.concatenate((first[0], second[0])),
                                        np.concatenate((first[1], second[1])))


def _moved_replay(node: Node, downstream: list[Node], linear: set[int], output: Node,
                  columns: tuple[Sparse, Any, list[Any], Any], largest: Any,
                  weights: list[float], h: float | None = None) -> tuple[Any, Any] | None:
    """``_replay`` of the columns with the ``linear`` nodes moved as ``replay.Moved`` moves
    them, value + t f(d) per column: f(d) by ``_unit_moves`` for the elements and a ``Moved``
    per direction (t: the elements' up then down, then the directions', ``h`` or the base
    step); the moved node itself is formed whole only if a node left to replay reads it."""
    from gradcli.gradcheck.column_forms import dense

    np = numpy()
    moved, ends, vs, steps = columns
    count, h = len(steps), base_step(0.0) if h is None else h
    t = np.concatenate((steps, -steps, np.full(len(vs), h), np.full(len(vs), -h)))
    with np.errstate(all="ignore"):
        try:
            moves = _unit_moves(node, downstream, linear, moved.at[:count].tolist())
            movers = [Moved(node, downstream, linear, v, output, weights) for v in vs]
        except (ValueError, IndexError, ArithmeticError):
            return None
    rest = [user for user in downstream if user.index not in linear]
    changed: dict[int, Any] = {}
    order = np.r_[0:count, 0:count, count:count + len(vs), count:count + len(vs)]
    read = {source.index for user in rest for source in user.inputs} | {output.index}
    for user in downstream:
        if user.index in linear and user.index in read:  # value + t f(d), per column
            shape = np.shape(user.value)
            stacked = np.concatenate((np.broadcast_to(moves[user.index], (count, *shape)),
                                      np.reshape([np.broadcast_to(m.moves[user.index], shape)
                                                  for m in movers], (len(movers), *shape))))
            value = user.value + t.reshape((-1, *(1,) * len(shape))) * stacked[order]
            changed[user.index] = value
            magnitude = np.abs(value).reshape(len(t), -1).max(axis=1, initial=0.0)
            largest = np.maximum(largest, magnitude * weights[user.index])
    if reads_whole(node, rest, output):
        elements = dense(node.value, moved).reshape(len(moved.at), np.size(node.value))
        whole = np.concatenate((elements, ends))
        changed[node.index] = whole.reshape((len(whole), *np.shape(node.value)))
    return _replay(changed, rest, output, largest, weights)


def _unit_moves(node: Node, downstream: list[Node], linear: set[int], flats: list[int]
                ) -> dict[int, Any]:
    """f(d) of each ``linear`` node for d the unit array at each of ``flats``, as
    ``replay.Moved`` moves them one at a time, the column axis first: a row's unit form where
    it has one (W's columns for x in W@x), element-wise ops on all the columns at once."""
    from gradcli.gradcheck.column_forms import aligned

    np = numpy()
    count = len(flats)
    moves: dict[int, Any] = {}

    def units() -> Any:  # made only if a row without a unit form reads the node (not W@x's)
        made = np.zeros((count, np.size(node.value)))
        made[np.arange(count), flats] = 1.0
        return made.reshape((count, *np.shape(node.value)))

    for user in downstream:
        if user.index not in linear:
            continue
        op, sources = user.op, [s.index for s in user.inputs]
        values = [s.value for s in user.inputs]
        if op.unit is not None and node.index in sources:
            position = sources.index(node.index)
            moved = [op.unit(np, position, flat, *values) for flat in flats]
        else:  # an operand that stays moves by zeros, or is itself (``Moved``)
            if node.index in sources and node.index not in moves:
                moves[node.index] = units()
            moving = [i in moves or op.linear == LINEAR_ALL for i in sources]
            args = [moves[i] if i in moves else np.broadcast_to(0.0, (count, *np.shape(v)))
                    if move else v for i, v, move in zip(sources, values, moving, strict=True)]
            if not op.is_array:
                moves[user.index] = np.broadcast_to(op.apply_vector(*aligned(np, args, moving)),
                                                    (count, *np.shape(user.value)))
                continue
            moved = [op.forward(np, *(a[k] if move else a for a, move in zip(
                args, moving, strict=True))) for k in range(count)]
        moves[user.index] = np.reshape(moved, (count, *np.shape(user.value)))
    return moves


def _replay(changed: dict[int, Any], nodes: list[Node], output: Node,
            largest: Any, weights: list[float]) -> tuple[Any, Any] | None:
    """Column j: the values of ``changed`` (the moved nodes', with the column axis first, or
    ``Sparse``) replayed through ``nodes``; the output and the largest rounding scale
    recomputed (``Replayer.replay``; from ``largest``, the moved values'), per column (NaN
    where a value is not finite). None:
    some op could not replay columns."""
    from gradcli.gradcheck.column_forms import Sparse, column_compute, dense, others, sparse_compute

    np = numpy()
    columns = len(largest)
    with np.errstate(all="ignore"):
        try:
            for user in nodes:
                value = sparse_compute(user, changed)
                if value is None:
                    for source in user.inputs:  # a reduction or an array op reads them whole
                        moved = changed.get(source.index)
                        if isinstance(moved, Sparse):
                            changed[source.index] = dense(source.value, moved)
                    value = column_compute(user, changed, columns)
                    magnitude = np.abs(value).reshape(columns, -1).max(axis=1, initial=0.0)
                else:
                    magnitude = np.maximum(np.abs(value.values), others(user.value, value.at))
                changed[user.index] = value
                # NaN stays: that column failed
                largest = np.maximum(largest, magnitude * weights[user.index])
        except (ValueError, IndexError, ArithmeticError, np.linalg.LinAlgError):
            return None
    out = changed.get(output.index)
    if out is None:
        return None
    if isinstance(out, Sparse):
        out = dense(output.value, out)
    return np.asarray(out, dtype=float).reshape(columns), largest
