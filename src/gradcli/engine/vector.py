"""Forward values and reverse-mode gradients at many points at once, with NumPy.

The same graph and the same op table as the scalar path (``graph.py``): each node is computed once
for all points with the op's ``vector`` column, and each derivative rule runs once on whole arrays
(rules are written with ``F``, which dispatches arrays to NumPy). A point where some value or
gradient is not finite is marked in ``failed`` instead of raising; callers that need the exact
message re-evaluate that one point on the scalar path, which names the node.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gradcli.engine.graph import Program, last_uses
from gradcli.engine.ops import CONST, VAR, Op, numpy
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
    every_node: bool = False,
) -> VectorEvaluation:
    """Evaluate ``program`` at the points whose coordinates are ``columns`` (name -> array).

    Every column must have the same length (or be a scalar, broadcast to all points); variables
    missing from ``columns`` take the program's defaults. Raises KeyError for a variable with no
    value at all (callers check ``program.unbound`` first).

    The results hold the output's value, the input variables' values and (with ``gradients``)
    their gradients; an intermediate node's value and gradient are dropped once used, so memory
    follows the live part of the graph (at 10^6 points each array is 8 MB, and fresh memory
    costs more than the arithmetic on it). ``every_node`` keeps them all. Either way ``failed``
    covers every value and gradient, dropped or not.

    A value that is the same at every point (a constant, a scalar column, what is computed from
    those alone) stays one NumPy scalar while computing -- ``np.float64``, never a Python float,
    so that ``1/0`` or ``0**-1`` give inf and a flag as arrays do, not an exception. NumPy then
    takes its fast paths (``x ** 2`` squares instead of calling pow) and no array is filled with
    copies. The results are (size,) arrays (read-only broadcast views where the value is
    uniform).
    """
    np = numpy()
    given = {name: np.asarray(value, dtype=float) for name, value in columns.items()}
    size = max((a.size for a in given.values() if a.ndim), default=1)
    if every_node or size < 2 * BLOCK:
        return _evaluate(np, program, given, size, gradients, every_node)
    return _evaluate_in_blocks(np, program, given, size, gradients)


BLOCK = 1 << 16  # points at a time in a large evaluation: a block's arrays stay in the caches


def _evaluate_in_blocks(
    np: Any, program: Program, given: Mapping[str, Any], size: int, gradients: bool
) -> VectorEvaluation:
    """``_evaluate`` a block of points at a time, on every core, into whole-size results.

    Each op is a pass over its operands, which at 10^6 points (8 MB an array) come from main
    memory every time; a block's arrays stay in the CPU's caches between ops. NumPy lets go of
    the GIL inside its loops, so threads (``default_jobs()``) evaluate blocks side by side; each
    block collects its own floating-point flags (NumPy's error state is per thread).
    """
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
                values = [_whole(np, v, size) for v in part.values]
                grads = [_whole(np, g, size) for g in part.grads or ()]
            stop = start + part.size
            pairs = (*zip(values, part.values, strict=True),
                     *zip(grads, part.grads or (), strict=True))
            for whole, piece in pairs:
                if whole is not None:
                    whole[start:stop] = piece
            failed[start:stop] = part.failed
    return VectorEvaluation(size, values, grads if gradients else None, failed)


def _whole(np: Any, piece: Any, size: int) -> Any:
    return None if piece is None else np.empty(size)


def _evaluate(
    np: Any, program: Program, given: Mapping[str, Any], size: int, gradients: bool,
    every_node: bool,
) -> VectorEvaluation:
    """``evaluate_vector`` of one block of points."""
    finite = _Finiteness(np, given, size)
    drop = None if every_node else finite.settle
    flags = {"divide": "call", "over": "call", "invalid": "call", "under": "ignore"}
    with np.errstate(**flags, call=lambda kind, flag: finite.raised.append(kind)):
        kept = _read_backward(program) if gradients else [False] * len(program.nodes)
        operands = _forward_vector(np, program, given, drop, kept)
        grads = _backward_vector(np, program, operands, size, drop) if gradients else []
    output = operands[-1]
    for value in (*operands, *grads):
        finite.settle(value)
    if not every_node:  # what the passes left of uniform intermediates goes too
        nodes = program.nodes
        operands = [v if node.op is VAR else None for node, v in zip(nodes, operands, strict=True)]
        operands[-1] = output
    columns_out = [None if value is None else _column(np, value, size) for value in operands]
    gradients_out = [None if g is None else _column(np, g, size) for g in grads]
    return VectorEvaluation(size, columns_out, gradients_out if gradients else None, ~finite.ok)


class _Finiteness:
    """The points where no value or gradient looked at so far is non-finite (``ok``).

    From finite arrays, NumPy makes a non-finite one only by raising a floating-point flag
    (overflow, division by zero, invalid). Collecting the flags (``raised``) instead of testing
    every array saves a pass over the points per node and per gradient: an array is looked at
    only if its inputs were not all finite or a flag was raised before it was let go. Uniform
    values are always looked at (a Python float raises no flag).
    """

    def __init__(self, np: Any, given: Mapping[str, Any], size: int) -> None:
        self.np = np
        self.ok = np.ones(size, dtype=bool)
        self.raised: list[str] = []
        self.inputs_finite = all(np.isfinite(a).all() for a in given.values())

    def settle(self, value: Any) -> None:
        """Mark the points where ``value`` is not finite, if it may not be."""
        if value is not None and (
            self.raised or not self.inputs_finite or self.np.ndim(value) == 0
        ):
            _mark_finite(self.np, self.ok, value)


def _forward_vector(
    np: Any, program: Program, given: Mapping[str, Any], drop: Callable[[Any], None] | None,
    kept: list[bool],
) -> list[Any]:
    """Per node: its value, a float (the same at every point) or a (size,) array. With ``drop``
    (which settles what it is given), an intermediate value that is not ``kept`` (for the
    backward pass) is let go after its last use."""
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
            value = node.op.apply_vector(*(operands[s.index] for s in node.inputs))
        operands.append(value)
        if drop is not None:
            for source in node.inputs:
                i = source.index
                if last_use[i] == node.index and source.op is not VAR and not kept[i]:
                    drop(operands[i])
                    operands[i] = None
    return operands


def _column(np: Any, value: Any, size: int) -> Any:
    return np.broadcast_to(np.asarray(value, dtype=float), (size,))


def _mark_finite(np: Any, ok: Any, value: Any) -> None:
    """ok &= isfinite(value), in place."""
    if np.ndim(value) == 0:
        if not math.isfinite(value):
            ok[:] = False
    else:
        np.logical_and(ok, np.isfinite(value), out=ok)


def _backward_vector(
    np: Any, program: Program, operands: list[Any], size: int,
    drop: Callable[[Any], None] | None,
) -> list[Any]:
    """Per node: its gradient (a float or an array), or None for nodes that need none. With
    ``drop`` (which settles what it is given), an intermediate node's value and gradient are let
    go once the node has passed its gradient on: only the variables' gradients remain.

    Each point costs a pass over memory per array made, and fresh memory costs more than the
    arithmetic, so products and sums are written into an array that this pass made itself and
    that nothing else holds (``mine``) whenever there is one; operands, the caller's columns and
    a gradient passed on unchanged to an input are never written to.
    """
    nodes = program.nodes
    grads: list[Any] = [None] * len(nodes)  # None: no contribution yet
    mine = [False] * len(nodes)  # grads[i] is an array of this pass that nothing else holds
    grads[-1] = 1.0
    for node in reversed(nodes):
        if not node.inputs or not node.needs_grad:
            continue
        out = operands[node.index]
        args = [operands[source.index] for source in node.inputs]
        for position, source in enumerate(node.inputs):
            if source.needs_grad:
                partial = node.op.rules[position](*args, out)
                # A rule's own result, not an operand it returns (mul's, exp's): ours to write.
                fresh = (_is_fresh(np, partial, size) and partial is not out
                         and all(partial is not arg for arg in args))
                term, fresh = _times(np, grads[node.index], partial, fresh, size)
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


def _reads(op: Op, position: int) -> tuple[bool, ...]:
    """Which of (operands..., out) derivative rule ``position`` of ``op`` reads: found once by
    running the rule on probes; a rule that a probe cannot run reads everything."""
    key = (op.name, position)
    if key not in _READS:
        probes = [_Probe() for _ in range(op.arity + 1)]
        try:
            result = op.rules[position](*probes)
        except Exception:  # a rule beyond arithmetic and F: keep every value it might read
            _READS[key] = (True,) * len(probes)
        else:
            _READS[key] = tuple(probe.read or result is probe for probe in probes)
    return _READS[key]


class _Probe:
    """Stands for one argument of a derivative rule. Arithmetic and ``F.name(...)`` (which calls
    ``apply``) mark the probes they touch as read and give a new probe."""

    def __init__(self) -> None:
        self.read = False

    def _touch(self, *others: Any) -> _Probe:
        for probe in (self, *others):
            if isinstance(probe, _Probe):
                probe.read = True
        return _Probe()

    def apply(self, op: Op, *args: Any) -> _Probe:
        return self._touch(*args)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _touch
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = _touch


def _is_fresh(np: Any, value: Any, size: int) -> bool:
    """A whole (size,) array that owns its memory: writable in place if no one else holds it."""
    return (type(value) is np.ndarray and value.base is None and value.shape == (size,)
            and value.dtype == np.float64)


def _times(np: Any, grad: Any, partial: Any, fresh: bool, size: int) -> tuple[Any, bool]:
    """(grad * partial, whether that is an array only the caller holds).

    No pass over the points when either factor is exactly 1 (sums, the output's own gradient):
    the other factor is shared as it is. A ``fresh`` partial (a rule's own result) takes the
    product in place."""
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
