"""Forward values and reverse-mode gradients at many points at once, with NumPy.

The same graph and the same op table as the scalar path (``graph.py``): each node is computed once
for all points with the op's ``vector`` column, and each derivative rule runs once on whole arrays
(rules are written with ``F``, which dispatches arrays to NumPy). A point where some value or
gradient is not finite is marked in ``failed`` instead of raising; callers that need the exact
message re-evaluate that one point on the scalar path, which names the node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .graph import Program
from .ops import CONST, VAR, numpy


@dataclass
class VectorEvaluation:
    """Values (and gradients) of every node at ``size`` points, indexed by node index."""

    size: int
    values: list[Any]  # one array of shape (size,) per node
    grads: list[Any] | None  # one array per node (None for nodes that need no gradient)
    failed: Any  # bool array (size,): a value or gradient is not finite at that point

    @property
    def output(self) -> Any:
        return self.values[-1]


def evaluate_vector(
    program: Program, columns: Mapping[str, Any], gradients: bool = True
) -> VectorEvaluation:
    """Evaluate ``program`` at the points whose coordinates are ``columns`` (name -> array).

    Every column must have the same length (or be a scalar, broadcast to all points); variables
    missing from ``columns`` take the program's defaults. Raises KeyError for a variable with no
    value at all (callers check ``program.unbound`` first).
    """
    np = numpy()
    arrays = {name: np.asarray(value, dtype=float) for name, value in columns.items()}
    size = max((a.size for a in arrays.values() if a.ndim), default=1)
    failed = np.zeros(size, dtype=bool)
    values: list[Any] = []
    with np.errstate(all="ignore"):
        for node in program.nodes:
            if node.op is VAR:
                given = arrays.get(str(node.name), program.defaults.get(str(node.name)))
                if given is None:
                    raise KeyError(node.name)
                value = np.broadcast_to(np.asarray(given, dtype=float), (size,))
            elif node.op is CONST:
                value = np.full(size, node.value)
            else:
                value = np.asarray(node.op.apply_vector(*(values[s.index] for s in node.inputs)))
                value = np.broadcast_to(value, (size,))
                failed |= ~np.isfinite(value)
            values.append(value)
        grads = _backward_vector(program, values, failed) if gradients else None
    return VectorEvaluation(size, values, grads, failed)


def _backward_vector(program: Program, values: list[Any], failed: Any) -> list[Any]:
    np = numpy()
    nodes = program.nodes
    size = failed.size
    grads: list[Any] = [np.zeros(size) if node.needs_grad else None for node in nodes]
    grads[-1] = np.ones(size)
    for node in reversed(nodes):
        if not node.inputs or not node.needs_grad:
            continue
        args = [values[source.index] for source in node.inputs]
        for position, source in enumerate(node.inputs):
            if source.needs_grad:
                partial = node.op.rules[position](*args, values[node.index])
                grads[source.index] = grads[source.index] + grads[node.index] * partial
                failed |= ~np.isfinite(grads[source.index])
    return grads
