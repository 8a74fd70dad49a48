"""Many perturbations at once: the finite-difference check's replays as NumPy columns.

``check._central_at_once`` shifts every checked node up and down by its step, one column each,
and replays the graph once for all columns instead of twice per node (``graph.replay``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradcli.engine.graph import Program, last_uses
from gradcli.engine.ops import numpy


@dataclass
class ColumnReplay:
    """The output with one node pinned per column, as ``graph.replay`` gives it one at a time."""

    output: Any  # (columns,) output value
    largest: Any  # (columns,) largest magnitude among the recomputed values; inf/nan: failed

    @property
    def failed(self) -> Any:
        """Columns where a recomputed value is not finite (a domain error on the scalar path)."""
        return ~numpy().isfinite(self.largest)


def replay_columns(program: Program, pinned: Any, values: Any) -> ColumnReplay:
    """Column j replays ``program`` with node ``pinned[j]`` set to ``values[j]``.

    Only nodes downstream of a pinned node get an array; in the columns where a node is not
    downstream of that column's pinned node it keeps exactly its scalar value, so each column
    recomputes what ``graph.replay`` recomputes (and ``largest`` covers just those values). An
    array is dropped after its last user, so memory follows the live part of the graph.
    """
    np = numpy()
    nodes = program.nodes
    pinned = np.asarray(pinned, dtype=np.intp)
    values = np.asarray(values, dtype=float)
    columns = pinned.size
    last_use = last_uses(nodes)
    current: dict[int, Any] = {}  # node index -> (columns,) values, for recomputed nodes
    # node index -> (columns,) bool, the columns that recompute it; None: every column does
    dirty: dict[int, Any] = {}
    pins: dict[int, list[int]] = {}
    for column, index in enumerate(pinned.tolist()):
        pins.setdefault(index, []).append(column)
    largest = np.abs(values)
    with np.errstate(all="ignore"):
        for node in nodes[int(pinned.min()):] if columns else ():
            i = node.index
            sources = [s.index for s in node.inputs if s.index in dirty]
            if sources:
                mask = _union([dirty[k] for k in sources])
                value = node.op.apply_vector(*(current.get(s.index, s.value) for s in node.inputs))
                if mask is None:
                    value = np.broadcast_to(value, (columns,))
                    np.maximum(largest, np.abs(value), out=largest)
                else:  # columns that do not recompute this node keep its exact scalar value
                    value = np.where(mask, value, node.value)
                    np.maximum(largest, np.abs(value), out=largest, where=mask)
                current[i], dirty[i] = value, mask
            if i in pins:
                own = np.zeros(columns, dtype=bool)
                own[pins[i]] = True
                current[i] = np.where(own, values, current.get(i, node.value))
                dirty[i] = _union([own, dirty[i]]) if i in dirty else own
            for source in node.inputs:
                if last_use[source.index] == i and source.index != len(nodes) - 1:
                    current.pop(source.index, None)
                    dirty.pop(source.index, None)
    output = current.get(len(nodes) - 1, nodes[-1].value)
    return ColumnReplay(np.broadcast_to(output, (columns,)), largest)


def _union(masks: list[Any]) -> Any:
    """The columns in any of ``masks``; None stands for every column (and is returned for it)."""
    if any(mask is None for mask in masks):
        return None
    if len(masks) == 1:
        return masks[0]
    union = numpy().logical_or(masks[0], masks[1])
    for mask in masks[2:]:
        union |= mask
    return None if union.all() else union
