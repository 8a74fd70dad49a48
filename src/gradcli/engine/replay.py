"""Replays: the output's value if one node had another value, recomputing only what depends on it.

The finite-difference check at a point perturbs one node at a time and replays the graph below it,
many times per node (central, one-sided, smaller steps) and for many nodes of the same graph. A
``Replayer`` belongs to that one check: it keeps the nodes affected by the last perturbed node
(both signs of a central difference replay them in one walk), and goes away with the check.

An array program's node moved along a fixed direction d, x + t d (one element: d a unit array), is
replayed by ``Moved``. Ops linear in the moving operands (the rows' ``linear``: sums, products
with one factor moving, transposes, indexing) move by their own value at the move, f(x + t d) =
f(x) + t f(d): each such node's move is computed once per direction and serves every step and
both signs, so W@x with W moving costs one product per direction (d@x) and a replay only
f(x) + t f(d) at the first node that is not linear and what follows. That is the forward ops'
algebra, not a derivative rule: the check stays independent of the rules it checks.
gradcheck/columns.py moves them so for many elements and directions at once (x's columns in W@x:
W's columns and one W@v per direction, not a product for every column).
"""

from __future__ import annotations

import math

from gradcli.engine.core_ops import LOGICAL, WHERE
from gradcli.engine.graph import Node, compute, liveness, quick_compute
from gradcli.engine.ops import numpy
from gradcli.engine.ops.row import (
    KERNELS,
    LINEAR_ALL,
    LINEAR_EACH,
    LINEAR_FIRST,
    floats,
    kernel_value,
)
from gradcli.errors import NumericError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any, Final


# Below this many nodes ``_put_back`` copies the values whole (see there).
_MEND_FROM: Final = 4096


class Replayer:
    """Replays of one evaluated graph (``nodes`` in topological order, output last)."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self._index = -1  # the node whose affected nodes are in ``_affected``
        self._affected: list[Node] = []
        # Conditionals or truth values: _replay_masked, which also notes the conditions that
        # a replay switched (``switched``: a finite difference across a piece's boundary).
        self.masked = False
        for node in nodes:  # (rows by identity, from C constants: no lookups per node)
            if node.op is WHERE or node.op in LOGICAL:
                self.masked = True
                break
        self.switched: set[int] = set()
        self._weights: list[float] = []  # ``rounding_weight`` of each node, made by ``weights``
        # Each node's value, by index, twice (``replay_pair``'s up and down copies, put back
        # after each replay), and in a small graph once more, to put them back from.
        self._ups: list[Any] = []
        self._downs: list[Any] = []
        self._values: list[Any] = []

    def weights(self) -> list[float]:
        """Each node's ``rounding_weight``, computed on first use."""
        if not self._weights:
            self._weights = rounding_weights(self.nodes)
        return self._weights

    def replay(self, index: int, value: Any, complex_step: bool = False) -> tuple[Any, float]:
        """The output's value if node ``index`` had ``value``; node values stay untouched.

        Returns the output value and the largest rounding scale among the perturbed and the
        recomputed values, |value| times its ``rounding_weight`` (how much rounding noise a
        finite difference of them can carry). With ``complex_step``, ``value`` is complex and
        so are the recomputed values (see ``graph.compute``).
        """
        changed = {index: value}
        get = changed.get
        weights = self.weights()
        largest = abs(value) * weights[index]
        evaluate = _complex_compute if complex_step else quick_compute
        if self.masked:
            return self._replay_masked(index, changed, largest, evaluate)
        for node in self.affected(index):
            inputs = node.inputs
            if len(inputs) == 2:  # most nodes: no comprehension (a function call in Python 3.11)
                a, b = inputs
                args = [get(a.index, a.value), get(b.index, b.value)]
            else:
                args = [get(source.index, source.value) for source in inputs]
            result = evaluate(node, args)
            changed[node.index] = result
            magnitude = abs(result) * weights[node.index]
            if magnitude > largest:
                largest = magnitude
        last = self.nodes[-1]
        return get(last.index, last.value), largest

    def replay_pair(self, index: int, up: Any, down: Any) -> tuple[float, float, float] | None:
        """``replay`` at ``up`` and at ``down`` in one walk, as a central difference needs them:
        (output at up, output at down, the larger ``largest``), the same numbers to the bit.
        None where the two replays would not both run plainly (a domain, a failure, a result
        that is not finite, a conditional): the caller replays one at a time, which names the
        error. One walk reads each node and its operands once for both values, from two copies
        of the nodes' values by index (lists: no dict of changed values to box indices for),
        kept for the next target and put back after each (``_put_back``)."""
        if self.masked:
            return None
        if not self._ups:
            values = [node.value for node in self.nodes]
            self._ups, self._downs = values[:], values[:]
            if len(values) < _MEND_FROM:
                self._values = values
        affected = self.affected(index)
        ups, downs = self._ups, self._downs
        ups[index], downs[index] = up, down
        # ``up`` and ``down`` stay the caller's float objects: boxing them again (compiled) is
        # not checked for NULL out of memory (see _walk_pair)
        largest: float = max(abs(up), abs(down))
        largest *= float_weight(self.nodes[index].grad)
        try:
            return self._walk_pair(affected, ups, downs, largest)
        finally:
            self._put_back(index, affected)

    def _put_back(self, index: int, affected: list[Node]) -> None:
        """The copies back to the nodes' values: whole, by copies in C, in a small graph
        (quicker in Python than a loop over the nodes written); in a large one only where the
        replay wrote (O(affected), not O(nodes): W3 has 10^5 nodes, an input affects 13,000)."""
        ups, downs = self._ups, self._downs
        if self._values:
            ups[:] = self._values
            downs[:] = self._values
            return
        node = self.nodes[index]
        ups[index] = downs[index] = node.value
        for node in affected:
            ups[node.index] = downs[node.index] = node.value

    def _walk_pair(self, affected: list[Node], ups: list[Any], downs: list[Any],
                   largest: float) -> tuple[float, float, float] | None:
        kernels = KERNELS
        for node in affected:
            op, inputs = node.op, node.inputs
            domain, forward = op.domain, op.forward
            high: Any = None
            if kernels and op.kernel and len(inputs) <= 2:  # the row's arithmetic on floats
                i, j = inputs[0].index, inputs[-1].index
                a_up, b_up, a_down, b_down = ups[i], ups[j], downs[i], downs[j]
                if floats(a_up, b_up) and floats(a_down, b_down):
                    high = kernel_value(op.kernel, a_up, b_up)
                    low = kernel_value(op.kernel, a_down, b_down)
                    if low is None:
                        high = None  # the row says
            if high is None:  # the row: its domain, then its forward
                if len(inputs) == 2:  # most nodes: two calls of two arguments, no tuples
                    a, b = inputs
                    i, j = a.index, b.index
                    a_up, b_up, a_down, b_down = ups[i], ups[j], downs[i], downs[j]
                    if domain is not None and (domain(a_up, b_up) is not None
                                               or domain(a_down, b_down) is not None):
                        return None
                    try:
                        high, low = forward(a_up, b_up), forward(a_down, b_down)
                    except (ArithmeticError, ValueError):
                        return None
                else:
                    above = tuple([ups[s.index] for s in inputs])
                    below = tuple([downs[s.index] for s in inputs])
                    if domain is not None and (domain(*above) is not None
                                               or domain(*below) is not None):
                        return None
                    try:
                        high, low = forward(*above), forward(*below)
                    except (ArithmeticError, ValueError):
                        return None
            k = node.index
            ups[k], downs[k] = high, low
            # Unboxed floats (compiled), finite as x - x == 0 (inf and NaN give NaN): a call
            # such as math.isfinite would box them, and mypyc does not check that boxing for
            # NULL (out of memory under RLIMIT_AS, math.isfinite(NULL) crashed a batch: a test).
            high_size: float = high
            low_size: float = low
            if not (high_size - high_size == 0.0 and low_size - low_size == 0.0):
                return None
            weight: float = node.grad  # float_weight(node.grad), inlined: in Python a call
            weight = abs(weight)  # per node costs more than the rest of this line's work
            if not weight <= 1.0:  # NaN too
                weight = 1.0
            high_size, low_size = abs(high_size) * weight, abs(low_size) * weight
            if high_size > largest:
                largest = high_size
            if low_size > largest:
                largest = low_size
        last = self.nodes[-1].index
        return ups[last], downs[last], largest

    def _replay_masked(self, index: int, changed: dict[int, Any], largest: float,
                       evaluate: Any) -> tuple[Any, float]:
        """``replay``'s walk in a program with conditionals: a node that fails is remembered
        (NaN), and raises only if it is live with the replayed values (``graph.liveness``;
        O(nodes), paid only by replays in which some node failed)."""
        get = changed.get
        weights = self.weights()
        failed = []
        for node in self.affected(index):
            args = [get(source.index, source.value) for source in node.inputs]
            try:
                result = evaluate(node, args)
            except NumericError:
                failed.append((node, args))
                result = math.nan
            changed[node.index] = result
            magnitude = abs(result) * weights[node.index]
            if magnitude > largest:
                largest = magnitude
            self._note_switch(node, args, result)
        if failed:
            live = liveness(self.nodes, lambda node: get(node.index, node.value))
            for node, args in failed:
                if live[node.index]:
                    evaluate(node, args)  # raises its error
        last = self.nodes[-1]
        return get(last.index, last.value), largest

    def _note_switch(self, node: Node, args: list[Any], result: Any) -> None:
        """Note a truth value or a condition that this replay turned over."""
        if node.op in LOGICAL:
            if (result != 0) != (node.value != 0):
                self.switched.add(node.index)
        elif node.op is WHERE:
            condition = node.inputs[0]
            if (args[0] != 0) != (condition.value != 0):
                self.switched.add(condition.index)

    def affected(self, index: int) -> list[Node]:
        """The nodes after ``nodes[index]`` that depend on it, in topological order: one sweep
        down the order, a node hit when one of its operands is (no recursion, no sorting)."""
        if index == self._index:
            return self._affected
        hit = [False] * len(self.nodes)  # a list, not a bytearray: compiled, no boxed ints
        hit[index] = True
        found: list[Node] = []
        for node in self.nodes[index + 1:]:
            for source in node.inputs:
                if hit[source.index]:
                    hit[node.index] = True
                    found.append(node)
                    break
        self._index, self._affected = index, found
        return found


def linear_part(target: Node, downstream: list[Node]) -> set[int]:
    """The nodes of ``downstream`` (``target``'s, in topological order) that move linearly with
    ``target``: every moving operand is ``target`` or such a node, and the row is linear in
    those operands (``Op.linear``; a product with both factors moving, x*x, is not)."""
    moving, linear = {target.index}, {target.index}
    for node in downstream:
        hit = [i for i, source in enumerate(node.inputs) if source.index in moving]
        moving.add(node.index)
        if any(node.inputs[i].index not in linear for i in hit):
            continue
        kind = node.op.linear
        if (kind == LINEAR_ALL or (kind == LINEAR_EACH and len(hit) == 1)
                or (kind == LINEAR_FIRST and hit == [0])):
            linear.add(node.index)
    linear.discard(target.index)
    return linear


def reads_whole(target: Node, rest: list[Node], output: Node) -> bool:
    """Whether a replay of ``rest`` (what is left past the nodes linear in ``target``) reads
    ``target`` itself, which a move must then form whole, or ``target`` is the output."""
    return output is target or any(source is target for node in rest for source in node.inputs)


class Scaled:
    """The direction (u v^T) * s of a matrix (u along its rows, v its columns, s its shape or
    None: u v^T): a direction of m + n random numbers, where a dense one draws m n. A row with
    a ``scaled`` form (a matrix product) moves by it without forming it (W's direction in W@x:
    u (v@x), O(m + n), or one product with s); ``dense`` forms it where a replay needs it
    whole."""

    __slots__ = ("s", "u", "v")

    def __init__(self, u: Any, v: Any, s: Any = None) -> None:
        self.u, self.v, self.s = u, v, s

    def dense(self) -> Any:
        formed = numpy().multiply.outer(self.u, self.v)
        if self.s is not None:
            formed *= self.s  # in place: one array of the matrix's size
        return formed


class _UnitArray:
    """The unit array of ``shape`` at flat ``unit``, not yet formed (``Moved``)."""

    __slots__ = ("shape", "unit")

    def __init__(self, shape: Any, unit: int) -> None:
        self.shape, self.unit = shape, unit

    def dense(self) -> Any:
        formed = numpy().zeros(self.shape)
        formed.reshape(-1)[self.unit] = 1.0
        return formed


class Moved:
    """The output of an array program with node ``target`` at x + t d, for any t (module
    docstring): ``moves`` holds d and each linear node's f(d), computed once. ``buffer`` (x's
    shape) holds x + t d where a replay needs it; ``note(node, args, result)`` sees every
    recomputed node (the conditions a replay turns over). With ``unit`` (a flat index), d is
    the unit array there, ``d`` None: it is formed only if a node without a unit form reads it
    (W in W@x moves one row of W@x, O(n), never a unit array of W's size). With ``nodes`` (the
    program's, where it has a conditional) a node that fails raises only if it is live with the
    replayed values (``masks.live_nodes``), as ``Replayer._replay_masked`` does for floats."""

    def __init__(self, target: Node, downstream: list[Node], linear: set[int], d: Any,
                 output: Node, weights: list[float], buffer: Any = None, note: Any = None,
                 unit: int | None = None, nodes: list[Node] | None = None) -> None:
        np = numpy()
        self.target, self.output, self.buffer, self.note = target, output, buffer, note
        self.nodes = nodes
        self.weights = weights  # each node's ``rounding_weight``, by index
        if d is None and unit is not None:  # made where a row or a replay reads it whole
            d = _UnitArray(np.shape(target.value), unit)
        moves = self.moves = {target.index: d}
        scaled = d if isinstance(d, Scaled) else None
        for node in downstream:
            op = node.op
            sources = [s.index for s in node.inputs]
            values = [s.value for s in node.inputs]
            if (node.index in linear and unit is not None and op.unit is not None
                    and target.index in sources):  # d, the unit array at flat ``unit``, moves
                moves[node.index] = np.asarray(op.unit(  # the row's operand: its unit form
                    np, sources.index(target.index), unit, *values))
            elif (node.index in linear and scaled is not None and op.scaled is not None
                    and target.index in sources):  # d = (u v^T) * s: the row's scaled form
                moves[node.index] = np.asarray(op.scaled(
                    np, sources.index(target.index), scaled.u, scaled.v, scaled.s, *values))
            elif node.index in linear:  # an operand that stays moves by zeros, or is itself
                lazy = moves[target.index]
                if isinstance(lazy, (Scaled, _UnitArray)) and target.index in sources:
                    moves[target.index] = lazy.dense()  # formed once, where a row needs it
                args = [moves[s.index] if s.index in moves else
                        np.broadcast_to(0.0, np.shape(s.value)) if op.linear == LINEAR_ALL
                        else s.value for s in node.inputs]
                # the forward form alone: the evaluation checked the shapes and the domain (of
                # the operands that stay); a move that overflowed makes replays that are not
                # finite, which the difference treats as a domain's edge, and one of an element
                # in a branch not taken (d/x at x = 0) is never read: neither warns
                with np.errstate(all="ignore"):
                    moves[node.index] = np.asarray(op.forward(np, *args) if op.is_array
                                                   else op.apply_vector(*args))
        self.rest = [node for node in downstream if node.index not in linear]
        # whether a replay forms x + t d (in ``buffer``, when given), or only moves linear nodes
        self.reads_target = reads_whole(target, self.rest, output)
        if isinstance(moves[target.index], (Scaled, _UnitArray)) and self.reads_target:
            moves[target.index] = d.dense()

    def replay(self, t: Any, largest: float, complex_step: bool = False,
               at: Any = None) -> tuple[Any, float]:
        """The output at x + t d (or with the target at ``at``, made by the caller) and the
        largest rounding scale recomputed (``Replayer.replay``), from ``largest``, the moved
        target's magnitude (which the caller knows without a pass)."""
        from gradcli.engine.arrays import masked_value, raising, recompute
        from gradcli.engine.failures import raise_live_failure
        from gradcli.engine.masks import live_nodes

        np = numpy()
        target = self.target.index
        weights = self.weights
        largest = weighed(largest, weights[target])
        changed: dict[int, Any] = {} if at is None else {target: at}
        moves, buffer = self.moves, self.buffer

        def shift(i: int, source: Node) -> Any:
            if i == target and buffer is not None and not complex_step:
                moved = np.multiply(moves[i], t, out=buffer)
                moved += source.value
                return moved
            return source.value + t * moves[i]

        def value(source: Node) -> Any:
            nonlocal largest
            i = source.index
            if i in changed or i not in moves:
                return changed.get(i, source.value)
            try:  # under ``raising()``: no flags set per move, only where one is raised
                moved = shift(i, source)
            except FloatingPointError:  # an overflow is a value that is not finite
                with np.errstate(all="ignore"):
                    moved = shift(i, source)
            if i != target and np.size(moved):
                largest = max(largest, weighed(float(np.max(np.abs(moved))), weights[i]))
            changed[i] = moved
            return moved

        failed: list[tuple[Node, list[Any], Any, NumericError]] = []
        with raising():  # once for the replay, not per node
            for node in self.rest:
                args = [value(source) for source in node.inputs]
                try:
                    result = recompute(node, args, complex_step)
                except NumericError as error:
                    if self.nodes is None:
                        raise
                    result = masked_value(node, args)
                    failed.append((node, args, result, error))
                changed[node.index] = result
                if self.note is not None:
                    self.note(node, args, result)
                if result.size:
                    largest = max(largest, weighed(float(np.max(np.abs(result))),
                                                   weights[node.index]))
            output = value(self.output)
        if failed and self.nodes is not None:  # NaN where dead: the output never reads it
            raise_live_failure(failed, live_nodes(
                self.nodes, [self.output], lambda node: changed.get(node.index, node.value)))
        return output.item() if hasattr(output, "item") else output, largest


def rounding_weight(grad: Any) -> float:
    """How much of a node's magnitude counts in a finite difference's rounding allowance:
    |d output / d node| (an array's largest element), at most 1. A value that barely reaches
    the output carries little of its rounding there: exp(40) = 2.4e17 feeding 1/(1 + exp(40))
    moves the output by 1.8e-35 per unit, and allowed 3.5e5 of error before it was weighed.
    Capped at 1, the allowance is never looser than the bare magnitudes gave: a weight above 1
    would tie it to the gradient being checked (a rule wrong by a factor c would scale its own
    allowance), and the 16 eps allowance already covers values that reach the output whole.
    The weights below 1 are first-order: rounding whose effect changes over the step (a
    stationary point behind a cancellation) is not covered. A gradient that is not finite
    weighs 1, the value's bare magnitude."""
    if isinstance(grad, (float, int)):  # NumPy's float64 too
        return float_weight(grad)
    np = numpy()
    return float_weight(float(np.max(np.abs(grad), initial=0.0)))


def float_weight(grad: float) -> float:
    """``rounding_weight`` of a float gradient (``_walk_pair`` weighs each node so, inlined, as
    it goes: no list of weights, a boxed float each, W3: 3 MB)."""
    weight = abs(grad)
    return weight if weight <= 1.0 else 1.0  # NaN too


def rounding_weight_at_points(grad: Any) -> Any:
    """``rounding_weight`` at each of many points (a sweep's): |grad| up to 1, 1 where it is
    not finite; 0 for a node that passes no gradient on (None)."""
    if grad is None:
        return 0.0
    weight = numpy().abs(grad)
    return numpy().where(weight <= 1.0, weight, 1.0)  # NaN: 1


def weighed(magnitude: float, weight: float) -> float:
    """``magnitude`` times its ``rounding_weight``; one that is not finite stays as it is,
    whatever the weight (a replay that overflowed is a value that is not finite, never
    0 * inf = NaN)."""
    return magnitude * weight if magnitude <= 1.7976931348623157e308 else magnitude


def rounding_weights(nodes: list[Node]) -> list[float]:
    """``rounding_weight`` of each of ``nodes``, by position (their indices)."""
    return [rounding_weight(node.grad) for node in nodes]


def _complex_compute(node: Node, args: list[Any]) -> Any:
    return compute(node, args, complex_step=True)
