"""Every node's value at many points: the forward pass that the plain evaluation (``vector``) and
the masked one of programs with conditionals (``piecewise``) share, and what they return."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gradcli.engine.graph import Program, last_uses
from gradcli.engine.ops import CONST, VAR
from gradcli.engine.perturbation import Perturbation, amplitude, same_bits


@dataclass
class VectorEvaluation:
    """Values (and gradients) at ``size`` points, indexed by node index: of the output and the
    input variables, or of every node (``evaluate_vector(..., every_node=True)``)."""

    size: int
    values: list[Any]  # one array of shape (size,) per node (None for a node not kept)
    grads: list[Any] | None  # the same per node (None also where no gradient is needed)
    failed: Any  # bool array (size,): a value or gradient is not finite at that point

    @property
    def output(self) -> Any:
        return self.values[-1]


def forward_vector(
    np: Any, program: Program, given: Mapping[str, Any], drop: Callable[[Any], None] | None,
    kept: list[bool], perturbation: Perturbation | None = None,
) -> list[Any]:
    """Per node: its value, a float (the same at every point) or a (size,) array. With ``drop``
    (which settles what it is given), an intermediate value that is not ``kept`` (for the
    backward pass) is let go after its last use. With a ``perturbation``, the value of an op
    that is not in ``SAME_BITS`` is perturbed."""
    nodes = program.nodes
    last_use = last_uses(nodes) if drop is not None else []
    operands: list[Any] = []
    for node in nodes:
        if node.op is VAR:
            value = given.get(str(node.name), program.defaults.get(str(node.name)))
            if value is None:
                raise KeyError(node.name)
            value = np.float64(value) if np.ndim(value) == 0 else value
        elif node.op is CONST:
            value = np.float64(node.value)
        else:
            args = [operands[s.index] for s in node.inputs]
            value = node.op.apply_vector(*args)
            if (perturbation is not None and not same_bits(node.op)
                    and perturbation.covers(node.index)):
                value = perturbation(value, node.index, amplitude(np, node.op, args))
        operands.append(value)
        if drop is not None:
            for source in node.inputs:
                i = source.index
                if last_use[i] == node.index and source.op is not VAR and not kept[i]:
                    drop(operands[i])
                    operands[i] = None
    return operands


def column(np: Any, value: Any, size: int) -> Any:
    return np.broadcast_to(np.asarray(value, dtype=float), (size,))
