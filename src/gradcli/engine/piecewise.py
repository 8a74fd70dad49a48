"""Programs with conditionals at many points: the branch not taken is masked, point by point.

Every node is computed at every point with NumPy's errors ignored, then each node's liveness is
a boolean array worked out from the output back (a where node passes its own to its condition,
``c != 0`` of it to ``a``, the rest to ``b``); only live entries count, and dead contributions
are masked with ``np.where`` (0 * inf is NaN). Programs without a conditional never come here.
The forward pass and the result (``VectorEvaluation``) are vector.py's too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gradcli.engine.graph import Program, last_uses
from gradcli.engine.ops import CONDITIONAL, CONST, VAR
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
    """Per node: its value, a float (the same at every point) or a (size,) array; with
    ``drop``, an intermediate not ``kept`` for the backward pass goes after its last use."""
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


def evaluate_masked(
    np: Any, program: Program, given: Mapping[str, Any], size: int, gradients: bool,
    every_node: bool, perturbation: Any = None,
) -> Any:
    """``vector.evaluate_vector`` for a program with conditionals (same arguments and result)."""
    nodes = program.nodes
    with np.errstate(all="ignore"):
        values = forward_vector(np, program, given, None, [True] * len(nodes), perturbation)
        live = _liveness(np, program, values)
        grads = _backward(np, program, values, live) if gradients else []
    ok = np.ones(size, dtype=bool)
    for node in nodes:
        _settle(np, ok, values[node.index], live[node.index])
        if gradients and grads[node.index] is not None:
            _settle(np, ok, grads[node.index], live[node.index])
    keep = [every_node or node.op is VAR or node is nodes[-1] for node in nodes]
    columns = [column(np, _live_part(np, v, m), size) if k else None
               for v, m, k in zip(values, live, keep, strict=True)]
    grads_out = None
    if gradients:
        grads_out = [column(np, g, size) if g is not None and (every_node or node.op is VAR)
                     else None for node, g in zip(nodes, grads, strict=True)]
    return VectorEvaluation(size, columns, grads_out, ~ok)


def _liveness(np: Any, program: Program, values: list[Any]) -> list[Any]:
    """Per node: True (live at every point), False, or a boolean array of the points."""
    nodes = program.nodes
    live: list[Any] = [False] * len(nodes)
    live[-1] = True
    for node in reversed(nodes):
        mine = live[node.index]
        if mine is False or not node.inputs:
            continue
        if node.op is CONDITIONAL:
            condition, taken, other = node.inputs
            chosen = values[condition.index] != 0.0
            _add(np, live, condition.index, mine)
            _add(np, live, taken.index, np.logical_and(mine, chosen))
            _add(np, live, other.index, np.logical_and(mine, ~chosen))
        else:
            for source in node.inputs:
                _add(np, live, source.index, mine)
    return live


def _add(np: Any, live: list[Any], index: int, more: Any) -> None:
    """live[index] |= more, keeping True and False as they are where possible."""
    before = live[index]
    if before is True or more is False:
        return
    if more is True or before is False:
        live[index] = more
    else:
        live[index] = np.logical_or(before, more)


def _backward(np: Any, program: Program, values: list[Any], live: list[Any]) -> list[Any]:
    """Per node: its gradient (None where none is needed), contributions from dead points
    masked to 0."""
    nodes = program.nodes
    grads: list[Any] = [None] * len(nodes)
    grads[-1] = 1.0
    for node in reversed(nodes):
        mine, grad = live[node.index], grads[node.index]
        if not node.inputs or not node.needs_grad or mine is False or grad is None:
            continue
        args = [values[source.index] for source in node.inputs]
        out = values[node.index]
        for position, source in enumerate(node.inputs):
            if not source.needs_grad:
                continue
            term = grad * node.op.rules[position](*args, out)
            if mine is not True:
                term = np.where(mine, term, 0.0)
            before = grads[source.index]
            grads[source.index] = term if before is None else before + term
    return [None if not node.needs_grad else (0.0 if g is None else g)
            for node, g in zip(nodes, grads, strict=True)]


def _live_part(np: Any, value: Any, live: Any) -> Any:
    """``value`` where its node is live and 0 where it is not (a dead value means nothing, and
    a caller measuring magnitudes must not meet its NaN)."""
    if live is True:
        return value
    if live is False:
        return np.float64(0.0)
    with np.errstate(all="ignore"):
        return np.where(live, value, 0.0)


def _settle(np: Any, ok: Any, value: Any, live: Any) -> None:
    """ok &= (value is finite wherever the node is live), in place."""
    if value is None or live is False:
        return
    finite = np.isfinite(value)
    if live is True:
        np.logical_and(ok, finite, out=ok)
    else:
        np.logical_and(ok, np.logical_or(finite, ~live), out=ok)
