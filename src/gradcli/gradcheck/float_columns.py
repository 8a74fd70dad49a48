"""The check of a float program in one replay of columns: ``check._central_at_once`` shifts every
checked node up and down by its step, one column each, and replays the graph once for all columns
instead of twice per node (``replay_columns``). Only the differences that agree are settled here;
any other goes through ``differences.check_node`` (smaller steps, one-sided differences, the exact
message). Array programs have theirs in ``columns``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gradcli.engine.graph import Node, Program
from gradcli.engine.node import last_uses
from gradcli.engine.ops import OPS, numpy
from gradcli.engine.replay import Replayer, rounding_weights
from gradcli.gradcheck.columns import Settled
from gradcli.gradcheck.steps import (
    CENTRAL,
    KINK_STEPS,
    base_step,
    central_agrees,
    curve_alone,
    curved,
    slope_gap,
)


@dataclass
class ColumnReplay:
    """The output with one node pinned per column, as ``Replayer.replay`` gives it one at a time."""

    output: Any  # (columns,) output value
    # (columns,) the largest rounding scale recomputed (``Replayer.replay``); inf/nan: failed
    # (a recomputed value is not finite: a domain error on the scalar path)
    largest: Any


def central_at_once(program: Program, targets: list[Node], rtol: float, atol: float,
                    replayer: Replayer | None = None) -> dict[int, Settled]:
    """A central difference at the base step for every target node of a float program, in one
    replay of columns (``replay_columns``); only those that agree, by node index. ``replayer``:
    the check's, whose rounding weights serve both (made once), and which walks a few nodes'
    smaller pairs (``_smaller_gaps``)."""
    weights = None if replayer is None else replayer.weights()
    steps = [base_step(node.value) for node in targets]
    pinned = [node.index for node in targets] * len(CENTRAL.offsets)
    shifted = [node.value + offset * h for offset in CENTRAL.offsets
               for node, h in zip(targets, steps, strict=True)]
    replayed = replay_columns(program, pinned, shifted, weights)
    outputs, largest = replayed.output.tolist(), replayed.largest.tolist()
    f0, count = program.nodes[-1].value, len(targets)
    passed: dict[int, Settled] = {}
    flagged: list[tuple[Node, Settled, float]] = []  # and the one-sided slopes' gap
    for k, (node, h) in enumerate(zip(targets, steps, strict=True)):
        most = max(largest[k], largest[k + count], abs(f0))
        up, down = outputs[k], outputs[k + count]
        agreed = central_agrees(node.grad, up, down, most, h, rtol, atol)
        if agreed is not None:
            settled = Settled(*agreed, h)
            if curved(up, down, f0, h, agreed[2]):
                flagged.append((node, settled, slope_gap(up, down, f0, h)))
            else:
                passed[node.index] = settled
    # a possible kink is the node check's to screen (differences.screened), unless a smaller
    # pair shows a curve's jump
    smaller_gaps = _smaller_gaps(program, flagged, weights, replayer)
    for (node, settled, gap), smaller in zip(flagged, smaller_gaps, strict=True):
        if curve_alone(gap, smaller, settled.tolerance):
            passed[node.index] = settled
    return passed


# Up to this many flagged nodes are walked one by one (``Replayer.replay_pair``, compiled):
# W3's one node at 30,000 nodes took 40 ms as a replay of columns over the graph.
WALKED = 8


def _smaller_gaps(program: Program, flagged: list[tuple[Node, Settled, float]],
                  weights: list[float] | None, replayer: Replayer | None) -> list[float]:
    """Each node's one-sided slopes' gap (``slope_gap``) at the first of ``KINK_STEPS`` (NaN
    where a replay fails): a walk a node for a few, else one replay of columns for all."""
    f0 = program.nodes[-1].value
    if replayer is not None and len(flagged) <= WALKED:
        gaps = []
        for node, settled, _ in flagged:
            small = settled.step * KINK_STEPS[0]
            both = replayer.replay_pair(node.index, node.value + small, node.value - small)
            gaps.append(math.nan if both is None else slope_gap(both[0], both[1], f0, small))
        return gaps
    if not flagged:
        return []
    np = numpy()
    small = np.array([settled.step * KINK_STEPS[0] for _, settled, _ in flagged])
    values = np.array([node.value for node, _, _ in flagged])
    output = replay_columns(program, [node.index for node, _, _ in flagged] * 2,
                            np.concatenate((values + small, values - small)), weights).output
    with np.errstate(all="ignore"):
        return slope_gap(output[:small.size], output[small.size:], f0, small).tolist()


def replay_columns(program: Program, pinned: Any, values: Any,
                   weights: list[float] | None = None) -> ColumnReplay:
    """Column j replays ``program`` with node ``pinned[j]`` set to ``values[j]``.

    Only nodes downstream of a pinned node get an array; in the columns where a node is not
    downstream of that column's pinned node it keeps exactly its scalar value, so each column
    recomputes what ``Replayer.replay`` recomputes (and ``largest`` covers just those values,
    weighted as it weights them). An
    array is dropped after its last user, so memory follows the live part of the graph; one
    that waits long for its last user is packed meanwhile (``_Packed``): W3's 11,111
    statements, all read again by the final sum, would hold 18 MB of columns, 95% of them the
    statements' own values.
    """
    np = numpy()
    nodes = program.nodes
    pinned = np.asarray(pinned, dtype=np.intp)
    values = np.asarray(values, dtype=float)
    columns = pinned.size
    last_use, used_before = last_uses(nodes)
    current: dict[int, Any] = {}  # node index -> (columns,) values, for recomputed nodes
    # node index -> (columns,) bool, the columns that recompute it; None: every column does
    dirty: dict[int, Any] = {}
    packed = _Packed(np, columns)
    held = packed.held
    pins: dict[int, list[int]] = {}
    for column, index in enumerate(pinned.tolist()):
        pins.setdefault(index, []).append(column)
    if weights is None:
        weights = rounding_weights(nodes)
    largest = _Largest(np, np.abs(values) * np.asarray(weights)[pinned])
    add, where, ndarray, shape = largest.add, np.where, np.ndarray, (columns,)
    last = len(nodes) - 1

    def pack(k: int) -> None:
        """Node ``k``, idle until its last user, keeps its own columns only (once: ``x*x``
        names it twice)."""
        if dirty.get(k) is not None and k in current:
            packed.put(last_use[k], k, dirty.pop(k), current.pop(k))

    with np.errstate(all="ignore"):
        for i in range(int(pinned.min()), len(nodes)) if columns else ():
            node = nodes[i]
            inputs = node.inputs
            if i in held:  # packed operands, unpacked by their last user: this node
                packed.take(i, nodes, dirty, current)
            masks = [dirty[s.index] for s in inputs if s.index in dirty]
            if masks:
                mask = masks[0] if len(masks) == 1 else _union(masks, np)
                value = node.op.apply_vector(*[current.get(s.index, s.value) for s in inputs])
                if mask is None:
                    if type(value) is not ndarray or value.shape != shape:  # mostly it is
                        value = np.broadcast_to(value, shape)
                elif node.op not in _EXACT:  # columns that do not recompute this node keep
                    value = where(mask, value, node.value)  # its exact scalar value
                add(value, mask, weights[i])
                current[i], dirty[i] = value, mask
            if i in pins:
                own = np.zeros(columns, dtype=bool)
                own[pins[i]] = True
                current[i] = where(own, values, current.get(i, node.value))
                dirty[i] = _union([own, dirty[i]], np) if i in dirty else own
            if used_before[i] == i and last_use[i] - i > _FAR:
                pack(i)
            for source in inputs:
                k = source.index
                if last_use[k] == i and k != last and k in dirty:
                    del current[k], dirty[k]
                elif used_before[k] == i and last_use[k] - i > _FAR:
                    pack(k)
    output = current.get(len(nodes) - 1, nodes[-1].value)
    return ColumnReplay(np.broadcast_to(output, (columns,)), largest.done())


class _Packed:
    """Nodes idle until their last user, each as one ``bytes`` under that user's index: its
    mask a bit per column, then the values of its own columns (W3's 11,111 statements: 135 B
    each, not 650 B of two arrays, a list and dictionary entries)."""

    def __init__(self, np: Any, columns: int) -> None:
        self.np, self.columns = np, columns
        self.bits = (columns + 7) // 8  # the mask's bytes at the front of an entry
        self.held: dict[int, Any] = {}  # last user -> (node, bytes), a list of them if several

    def put(self, user: int, k: int, mask: Any, values: Any) -> None:
        entry = (k, self.np.packbits(mask).tobytes() + values[mask].tobytes())
        other = self.held.setdefault(user, entry)
        if other is not entry:
            self.held[user] = [*other, entry] if type(other) is list else [other, entry]

    def take(self, user: int, nodes: list[Node], dirty: dict[int, Any],
             current: dict[int, Any]) -> None:
        """Unpacks the nodes whose last user is ``user`` into ``dirty`` and ``current``, the
        columns that do not recompute a node holding its own value."""
        held = self.held.pop(user)
        np, columns, bits = self.np, self.columns, self.bits
        for k, blob in held if type(held) is list else (held,):
            mask = np.unpackbits(np.frombuffer(blob, np.uint8, bits), count=columns).view(bool)
            full = np.empty(columns)
            full.fill(nodes[k].value)
            full[mask] = np.frombuffer(blob, float, offset=bits)
            dirty[k], current[k] = mask, full


_FAR = 64  # a replayed node idle for longer than this many nodes is packed meanwhile
_BLOCK_CELLS = 1 << 16  # ``_Largest``'s block: rows x columns (512 KB)


class _Largest:
    """The largest rounding scale per column among the values recomputed in it (|value| times
    its node's ``rounding_weight``): they go into a block of rows, reduced over their
    recomputed columns when it is full (one NumPy call for a block rather than two per node;
    max is exact, so the order changes nothing)."""

    def __init__(self, np: Any, start: Any) -> None:
        self.np, self.largest = np, start
        rows = max(1, _BLOCK_CELLS // max(1, start.size))
        self.block = np.empty((rows, start.size))
        self.chosen = np.empty((rows, start.size), dtype=bool)
        self.weights: list[float] = []  # each row's, applied to the block at once
        self.row = 0

    def add(self, value: Any, mask: Any, weight: float) -> None:
        """``value``'s columns, times ``weight``, where ``mask`` is True (None: all of them)."""
        row = self.row
        self.block[row] = value
        self.weights.append(weight)
        self.chosen[row] = True if mask is None else mask
        self.row = row + 1
        if self.row == len(self.block):
            self._reduce()

    def _reduce(self) -> None:
        np, rows = self.np, self.block[:self.row]
        np.absolute(rows, out=rows)
        rows *= np.array(self.weights).reshape(-1, 1)
        self.weights.clear()
        most = np.maximum.reduce(rows, axis=0, where=self.chosen[:self.row], initial=0.0)
        np.maximum(self.largest, most, out=self.largest)  # NaN stays: that column failed
        self.row = 0

    def done(self) -> Any:
        self._reduce()
        return self.largest


# Rows whose vector form rounds exactly as their float form does (IEEE arithmetic, to the
# bit): a column whose operands keep their scalar values computes the node's own value, so it
# needs no ``where`` to keep it. Other rows' NumPy forms (sin, pow, ...) may differ in the last bit.
_EXACT = frozenset(OPS[name] for name in ("add", "sub", "mul", "div", "neg"))


def _union(masks: list[Any], np: Any) -> Any:
    """The columns in any of two or more ``masks``; None stands for every column (and is
    returned for it)."""
    for mask in masks:
        if mask is None:
            return None
    union = np.logical_or(masks[0], masks[1])
    for mask in masks[2:]:
        union |= mask
    return None if union[union.argmin()] else union  # argmin: the first False, if any
