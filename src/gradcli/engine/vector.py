"""Forward values and reverse-mode gradients at many points at once, with NumPy: the scalar
path's graph and op table, each node computed once for all points (the op's ``vector`` column)
and each derivative rule run on whole arrays. A point where a value or gradient is not finite is
marked in ``failed`` instead of raising (the scalar path, re-run there, names the node).

Programs with conditionals (``Program.masked``) are masked point by point: every node is
computed at every point with NumPy's errors ignored, then each node's liveness is a boolean
array worked out from the output back (a where node passes its own to its condition, ``c != 0``
of it to ``a``, the rest to ``b``); only live entries count, and dead contributions are masked
with ``np.where`` (0 * inf is NaN).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gradcli.engine.graph import Program
from gradcli.engine.masks import live_nodes, live_part
from gradcli.engine.node import last_uses
from gradcli.engine.ops import CONST, OPS, VAR, Op, numpy
from gradcli.engine.perturbation import Perturbation, amplitude, same_bits
from gradcli.errors import UsageError
from gradcli.limits import default_jobs


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


def evaluate_vector(
    program: Program, columns: Mapping[str, Any], gradients: bool = True,
    every_node: bool = False, perturbation: Perturbation | None = None,
) -> VectorEvaluation:
    """Evaluate ``program`` at the points whose coordinates are ``columns`` (name -> array of
    one length, or a scalar; missing variables take their defaults, else a KeyError).

    The results hold the output's and the inputs' values and (with ``gradients``) gradients, as
    (size,) arrays (read-only broadcast views where uniform); intermediates are dropped once
    used, so memory follows the live part of the graph, unless ``every_node``. ``failed`` covers
    every value and gradient. A uniform value stays one ``np.float64`` (never a Python float, so
    ``1/0`` gives inf and a flag, not an exception). With a ``perturbation``, what NumPy may
    round differently from the scalar path is perturbed by it.
    """
    if program.arrays or any(getattr(column, "ndim", 0) > 1 for column in columns.values()):
        raise UsageError("sweeps and plots evaluate scalar programs at many points; this one "
                         "has arrays", hint="evaluate an array program one point at a time")
    np = numpy()
    given = {name: np.asarray(value, dtype=float) for name, value in columns.items()}
    size = max((a.size for a in given.values() if a.ndim), default=1)
    if every_node or size < 2 * BLOCK or perturbation is not None or program.masked:
        return _evaluate(np, program, given, size, gradients, every_node, perturbation)
    return _evaluate_in_blocks(np, program, given, size, gradients)


BLOCK = 1 << 16  # points at a time in a large evaluation: a block's arrays stay in the caches


def _evaluate_in_blocks(
    np: Any, program: Program, given: Mapping[str, Any], size: int, gradients: bool
) -> VectorEvaluation:
    """``_evaluate`` a block of points at a time (its arrays stay in the CPU's caches between
    ops), on ``default_jobs()`` threads (NumPy lets go of the GIL; its error state is per
    thread), into whole-size results."""
    from concurrent.futures import ThreadPoolExecutor

    starts = range(0, size, BLOCK)

    def block(start: int) -> VectorEvaluation:
        part = {name: a[start:start + BLOCK] if a.ndim else a for name, a in given.items()}
        return _evaluate(np, program, part, min(BLOCK, size - start), gradients, False)

    values: list[Any] = []
    grads: list[Any] = []
    failed = np.empty(size, dtype=bool)
    with ThreadPoolExecutor(max_workers=default_jobs()) as pool:
        for start, part in zip(starts, pool.map(block, starts), strict=True):
            if not values:  # the first block says which results there are
                values = [None if v is None else np.empty(size) for v in part.values]
                grads = [None if g is None else np.empty(size) for g in part.grads or ()]
            stop = start + part.size
            pairs = (*zip(values, part.values, strict=True),
                     *zip(grads, part.grads or (), strict=True))
            for whole, piece in pairs:
                if whole is not None:
                    whole[start:stop] = piece
            failed[start:stop] = part.failed
    return VectorEvaluation(size, values, grads if gradients else None, failed)


def _evaluate(
    np: Any, program: Program, given: Mapping[str, Any], size: int, gradients: bool,
    every_node: bool, perturbation: Perturbation | None = None,
) -> VectorEvaluation:
    """``evaluate_vector`` of one block of points; a masked program's (module docstring) with
    NumPy's errors ignored and every value kept until its node's liveness is known."""
    masked = program.masked
    finite = _Finiteness(np, given, size, every=masked)
    drop = None if every_node or masked else finite.settle
    if masked:  # every value is tested below, where its node is live
        state = np.errstate(all="ignore")
    else:
        state = np.errstate(divide="call", over="call", invalid="call", under="ignore",
                            call=lambda kind, flag: finite.raised.append(kind))
    with state:
        read = gradients and drop is not None  # what the backward pass reads is not dropped
        kept = _read_backward(program) if read else [False] * len(program.nodes)
        operands = forward_vector(np, program, given, drop, kept, perturbation)
        live = live_nodes(program.nodes, None, lambda node: operands[node.index],
                          lambda node: (size,)) if masked else None
        grads = (_backward_vector(np, program, operands, size, drop,
                                  None if masked else perturbation, live) if gradients else [])
    if live is None:
        live = [True] * len(operands)
    for k, node_live in enumerate(live):
        finite.settle(operands[k], node_live)
        if grads:
            finite.settle(grads[k], node_live)
    # what the passes left of uniform intermediates goes too, unless ``every_node``
    last = program.nodes[-1]
    keep = [every_node or node.op is VAR or node is last for node in program.nodes]
    columns_out = [column(np, live_part(value, node_live), size) if wanted else None
                   for value, node_live, wanted in zip(operands, live, keep, strict=True)]
    gradients_out = None
    if gradients:
        gradients_out = [column(np, g, size) if g is not None and (every_node or node.op is VAR)
                         else None for node, g in zip(program.nodes, grads, strict=True)]
    return VectorEvaluation(size, columns_out, gradients_out, ~finite.ok)


class _Finiteness:
    """The points where no value or gradient looked at so far is non-finite (``ok``). From
    finite arrays NumPy makes a non-finite one only with a floating-point flag, so an array is
    tested only if the inputs were not all finite or a flag was ``raised``; with the flags
    ignored (``every``: a masked evaluation) every array is."""

    def __init__(self, np: Any, given: Mapping[str, Any], size: int, every: bool = False) -> None:
        self.np = np
        self.ok = np.ones(size, dtype=bool)
        self.raised: list[str] = []
        self.inputs_finite = not every and all(np.isfinite(a).all() for a in given.values())

    def settle(self, value: Any, live: Any = True) -> None:
        """ok &= isfinite(value), in place, if ``value`` may not be finite: wherever its node is
        ``live`` (True, False, or a boolean array of the points)."""
        np = self.np
        if value is None or live is False:
            return
        if live is not True:
            np.logical_and(self.ok, np.logical_or(np.isfinite(value), ~live), out=self.ok)
        elif np.ndim(value) == 0:
            if not math.isfinite(value):
                self.ok[:] = False
        elif self.raised or not self.inputs_finite:
            np.logical_and(self.ok, np.isfinite(value), out=self.ok)


def _backward_vector(
    np: Any, program: Program, operands: list[Any], size: int,
    drop: Callable[[Any], None] | None, perturbation: Perturbation | None = None,
    live: list[Any] | None = None,
) -> list[Any]:
    """Per node: its gradient (a float or an array), or None where none is needed. With
    ``drop``, an intermediate's value and gradient go once it has passed its gradient on. Fresh
    memory costs more than the arithmetic, so products and sums go into an array this pass made
    and nothing else holds (``mine``) when there is one. With a ``perturbation``, a rule's
    result that NumPy may round differently (``_inexact_calls``) is perturbed. With ``live``
    (``masks.live_nodes``), a dead node passes nothing on, and contributions from dead points
    are 0."""
    nodes = program.nodes
    places = len(nodes)
    grads: list[Any] = [None] * len(nodes)  # None: no contribution yet
    mine = [False] * len(nodes)  # grads[i] is an array of this pass that nothing else holds
    grads[-1] = 1.0
    for node in reversed(nodes):
        alive = True if live is None else live[node.index]
        if not node.inputs or not node.needs_grad or alive is False:
            continue
        out = operands[node.index]
        args = [operands[source.index] for source in node.inputs]
        for position, source in enumerate(node.inputs):
            if source.needs_grad:
                partial = node.op.rules[position](*args, out)
                if perturbation is not None and perturbation.covers(node.index):
                    calls = _inexact_calls(node.op, position)
                    if calls:
                        partial = perturbation(partial, places * (position + 1) + node.index,
                                               calls * amplitude(np, node.op, args))
                # A rule's own result, not an operand it returns (mul's, exp's): ours to write.
                fresh = (_is_fresh(np, partial, size) and partial is not out
                         and all(partial is not arg for arg in args))
                term, fresh = _times(np, grads[node.index], partial, fresh, size)
                if alive is not True:
                    term, fresh = np.where(alive, term, 0.0), True
                _accumulate(np, grads, mine, source.index, term, fresh, size)
        if drop is not None and node.index != len(nodes) - 1:
            drop(operands[node.index])
            drop(grads[node.index])
            operands[node.index] = grads[node.index] = None
    return [None if not node.needs_grad or (drop is not None and node.op is not VAR)
            else (0.0 if g is None else g) for node, g in zip(nodes, grads, strict=True)]


def _read_backward(program: Program) -> list[bool]:
    """Per node: whether a derivative rule that the backward pass runs reads its value."""
    read = [False] * len(program.nodes)
    for node in program.nodes:
        if not node.needs_grad:
            continue
        for position, source in enumerate(node.inputs):
            if source.needs_grad:
                *operands, out = _reads(node.op, position)
                read[node.index] = read[node.index] or out
                for other, reads in zip(node.inputs, operands, strict=True):
                    read[other.index] = read[other.index] or reads
    return read


_READS: dict[tuple[str, int], tuple[bool, ...]] = {}
_CALLS: dict[tuple[str, int], tuple[str, ...] | None] = {}


def _reads(op: Op, position: int) -> tuple[bool, ...]:
    """Which of (operands..., out) derivative rule ``position`` of ``op`` reads: found once by
    running the rule on probes; a rule that a probe cannot run reads everything."""
    key = (op.name, position)
    if key not in _READS:
        calls: list[str] = []
        probes = [_Probe(calls) for _ in range(op.arity + 1)]
        try:
            result = op.rules[position](*probes)
        except Exception:  # a rule beyond arithmetic and F: keep every value it might read
            reads, called = (True,) * len(probes), None
        else:
            reads = tuple(probe.read or result is probe for probe in probes)
            called = tuple(calls)
        _CALLS[key] = called  # first: once _READS has the key, another thread reads both
        _READS[key] = reads
    return _READS[key]


def _inexact_calls(op: Op, position: int) -> int:
    """How many results that NumPy may round differently from the scalar path derivative rule
    ``position`` of ``op`` computes from its arguments (table functions not in ``SAME_BITS``,
    and ``**``); a rule the probes cannot follow counts as one."""
    _reads(op, position)
    calls = _CALLS[(op.name, position)]
    if calls is None:
        return 1
    return sum(1 for name in calls if name == "pow" or not same_bits(OPS[name]))


class _Probe:
    """Stands for one argument of a derivative rule. Arithmetic and ``F.name(...)`` (which calls
    ``apply``) mark the probes they touch as read and give a new probe; ``F.name`` and ``**``
    are also listed in ``calls`` (shared by the probes of one rule)."""

    def __init__(self, calls: list[str]) -> None:
        self.read = False
        self.calls = calls

    def _touch(self, *others: Any) -> _Probe:
        for probe in (self, *others):
            if isinstance(probe, _Probe):
                probe.read = True
        return _Probe(self.calls)

    def apply(self, op: Op, *args: Any) -> _Probe:
        self.calls.append(op.name)
        return self._touch(*args)

    def _power(self, *others: Any) -> _Probe:
        self.calls.append("pow")
        return self._touch(*others)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _touch
    __truediv__ = __rtruediv__ = __neg__ = __pos__ = __abs__ = _touch
    __pow__ = __rpow__ = _power


def _is_fresh(np: Any, value: Any, size: int) -> bool:
    """A whole (size,) array that owns its memory: writable in place if no one else holds it."""
    return (type(value) is np.ndarray and value.base is None and value.shape == (size,)
            and value.dtype == np.float64)


def _times(np: Any, grad: Any, partial: Any, fresh: bool, size: int) -> tuple[Any, bool]:
    """(grad * partial, whether that is an array only the caller holds): no pass when a factor
    is exactly 1, and a ``fresh`` partial (a rule's own result) takes the product in place."""
    if type(partial) is float and partial == 1.0:
        return grad, False
    if type(grad) is float and grad == 1.0:
        return partial, fresh
    if fresh:
        return np.multiply(partial, grad, out=partial), True
    product = grad * partial
    return product, _is_fresh(np, product, size)


def _accumulate(np: Any, grads: list[Any], mine: list[bool], i: int, term: Any, fresh: bool,
                size: int) -> None:
    """grads[i] += term (a node used more than once gets every contribution), in place in an
    array that only this pass holds; the first contribution is kept as it is."""
    if grads[i] is None:
        grads[i], mine[i] = term, fresh
    elif mine[i]:
        np.add(grads[i], term, out=grads[i])
    elif fresh:  # a whole array: whatever grads[i] is broadcasts into it
        grads[i] = np.add(term, grads[i], out=term)
        mine[i] = True
    else:
        grads[i] = grads[i] + term
        mine[i] = _is_fresh(np, grads[i], size)


# --- the forward pass, and programs with conditionals ---------------------------------------

def forward_vector(
    np: Any, program: Program, given: Mapping[str, Any], drop: Callable[[Any], None] | None,
    kept: list[bool], perturbation: Perturbation | None = None,
) -> list[Any]:
    """Per node: its value, a float (the same at every point) or a (size,) array; with
    ``drop``, an intermediate not ``kept`` for the backward pass goes after its last use."""
    nodes = program.nodes
    last_use = last_uses(nodes)[0] if drop is not None else []
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
