"""Branches not taken in array programs, element by element: which elements of each node the
outputs read where every condition takes its branch (``live_nodes``). The passes that need it
(``arrays.forward``, ``backward_from``, the Jacobian's tangents, ``replay.Moved``) keep a dead
element's NaN, pass nothing through it, and raise only a live failure
(``failures.raise_live_failure``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gradcli.engine.graph import Node, is_masked
from gradcli.engine.ops import CONDITIONAL, NUMPY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def live_nodes(nodes: list[Node], outputs: list[Node] | None = None,
               value_of: Callable[[Node], Any] | None = None,
               shape_of: Callable[[Node], tuple[int, ...]] | None = None) -> list[Any] | None:
    """Per node of a program with a conditional (None without one): True (live), False (in
    branches not taken only) or a boolean array of its elements, from ``outputs`` (default:
    the last node) back, with the conditions' values ``value_of(node)`` (default:
    ``node.value``; a replay's) -- ``graph.liveness`` element by element. An element-wise op
    passes each element's liveness to its operands' (any, where they broadcast to
    ``shape_of(node)``, default its value's: a sweep's nodes all have its points' shape); an
    array op (sum, @) makes its operands live whole where any of its elements is."""
    if not is_masked(nodes):
        return None
    if shape_of is None:
        shape_of = _own_shape
    live: list[Any] = [False] * len(nodes)
    for output in outputs or nodes[-1:]:
        live[output.index] = True
    for node in reversed(nodes):
        mine = live[node.index]
        if mine is False or not node.inputs:
            continue
        if node.op is CONDITIONAL:
            condition, taken, other = node.inputs
            value = np.asarray(condition.value if value_of is None else value_of(condition))
            shape = shape_of(node)  # the pieces' and the condition's, broadcast
            with np.errstate(invalid="ignore"):
                chosen = (value != 0) & (value == value)  # a NaN condition takes neither
                _mark(live, condition, mine, shape_of(condition))
                _mark(live, taken, np.broadcast_to(np.logical_and(mine, chosen), shape),
                      shape_of(taken))
                _mark(live, other, np.broadcast_to(np.logical_and(mine, value == 0), shape),
                      shape_of(other))
        elif node.op.is_array:
            for source in node.inputs:
                _mark(live, source, bool(mine is True or mine.any()), ())
        else:
            for source in node.inputs:
                _mark(live, source, mine, shape_of(source))
    return live


def _own_shape(node: Node) -> tuple[int, ...]:
    return np.shape(node.value)


def _mark(live: list[Any], source: Node, more: Any, shape: tuple[int, ...]) -> None:
    """live[source] |= more, ``more`` brought to ``shape`` (any element that broadcast to a
    live one is live), as True or False where it is whole."""
    if more is not True and more is not False:
        if np.shape(more) != shape:
            more = NUMPY.unbroadcast(more, more, np.broadcast_to(0.0, shape)) > 0
        if np.ndim(more):
            more = True if more.all() else False if not more.any() else more
        else:
            more = bool(more)
    before = live[source.index]
    if before is True or more is False:
        return
    live[source.index] = more if (more is True or before is False) else before | more


def live_part(value: Any, mask: Any) -> Any:
    """``value`` where its node is live (``mask``, a ``live_nodes`` entry), 0 elsewhere."""
    if mask is True:
        return value
    if mask is False:
        return np.zeros(np.shape(value))
    with np.errstate(all="ignore"):
        return np.where(mask, value, 0.0)
