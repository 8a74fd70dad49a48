"""Derivatives as graphs: the backward pass run on graph nodes instead of floats.

The op table's derivative rules are written with arithmetic operators and ``F.name(...)``; ``F``
hands anything with an ``apply`` method back to it. ``SymNode`` is a graph ``Node`` whose
operators and ``apply`` go through a ``Builder``, so running the very same rules on SymNodes
builds d(output)/d(x) as a graph (DeZero's double backprop) -- no second list of derivatives. That
graph can be evaluated, printed, or differentiated again.

The builder hash-conses (the same op on the same inputs is the same node, so shared
subexpressions stay shared and printed sizes stay linear) and simplifies locally as it builds:
constant folding (with the table's own forward functions, so folded numbers are the floats the
numeric path computes), x*1, x+0, x*0, x-x, --x, x**1, like terms gathered (2*x + x -> 3*x),
powers of the same base gathered (x * x**2 -> x**3) and common factors pulled (a*b + a*c ->
a*(b + c)). Rewrites only look a fixed number of levels down, so building stays linear. What is
printed is the canonical form of the finished graph (``canonical``); a builder for a formula
(``exact_constants``) keeps log(2), 1/3, pi and e as written instead of folding their digits.

A conditional keeps its branches apart: a factor, a sign or a sum of two conditionals on the same
condition moves into the branches (g*where(c, a, b) -> where(c, g*a, g*b)), so that the
derivative of where(x > 0, log(x), 0) is where(x > 0, 1/x, 0) -- which, like the program, is 0
at x = 0 -- and not where(x > 0, 1, 0)/x, which divides by zero there. Nothing moves out of a
branch, and a condition is folded only when it is a number.

Some rewrites assume the expression they drop is defined (``x - x -> 0`` whatever x is, even
log(-1)), which is right for a formula but not at a point. So derivatives at a point do not
substitute numbers into the simplified graph: ``gradients_at`` runs ``eval``'s own forward and
backward passes on every node that depends only on bound variables (same numbers, same
NumericErrors) and the rules on SymNodes only where a free variable is involved.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from mypy_extensions import mypyc_attr

from gradcli.engine.core_ops import ADD, CONST, DIV, LOG, MUL, NEG, POW, SUB, VAR, WHERE
from gradcli.engine.graph import (
    Node,
    compute,
    is_masked,
    liveness,
    local_derivative,
    nodes_of,
    numeric_error,
    quick_compute,
)
from gradcli.engine.notation import format_number
from gradcli.engine.ops import CONSTANTS, Op
from gradcli.errors import NumericError, UsageError
from gradcli.limits import MAX_NODES


class SymNode(Node):
    """A graph node that builds (simplified, shared) nodes when used in arithmetic."""

    __slots__ = ("builder",)
    builder: Builder
    inputs: tuple[SymNode, ...]  # a builder's nodes are built from its own nodes only

    def apply(self, op: Any, *args: Any) -> SymNode:
        return self.builder.make(op, args)

    # The op table's derivative rules are written as arithmetic (``g * cos(x)``): on these
    # nodes it builds the rule's result. One method each, written out: a compiled class (setup.py)
    # takes its methods from its body, not from a factory.
    def __add__(self, other: Any) -> SymNode:
        return self.builder.make(ADD, (self, other))

    def __radd__(self, other: Any) -> SymNode:
        return self.builder.make(ADD, (other, self))

    def __sub__(self, other: Any) -> SymNode:
        return self.builder.make(SUB, (self, other))

    def __rsub__(self, other: Any) -> SymNode:
        return self.builder.make(SUB, (other, self))

    def __mul__(self, other: Any) -> SymNode:
        return self.builder.make(MUL, (self, other))

    def __rmul__(self, other: Any) -> SymNode:
        return self.builder.make(MUL, (other, self))

    def __truediv__(self, other: Any) -> SymNode:
        return self.builder.make(DIV, (self, other))

    def __rtruediv__(self, other: Any) -> SymNode:
        return self.builder.make(DIV, (other, self))

    def __pow__(self, other: Any) -> SymNode:
        return self.builder.make(POW, (self, other))

    def __rpow__(self, other: Any) -> SymNode:
        return self.builder.make(POW, (other, self))

    def __neg__(self) -> SymNode:
        return self.builder.make(NEG, (self,))


MAX_REWRITE_NESTING = 24


@mypyc_attr(allow_interpreted_subclasses=True)  # array_diff.ArrayBuilder
class Builder:
    """Makes SymNodes: one node per distinct (op, inputs), simplified as it is made."""

    def __init__(self, max_nodes: Any = MAX_NODES, exact_constants: bool = False) -> None:
        self._table: dict[tuple, SymNode] = {}
        self._numbers: dict[float, SymNode] = {}  # nonzero unnamed constants by value
        self._rewriting = 0  # how many rewrites are under way, one inside another
        # What make() gave for each (op, inputs) outside any rewrite: the same again (the rules
        # ask for the same products and sums many times; a rewrite's answer depends only on the
        # inputs and on how deep it runs, so the answer is reused rather than worked out again).
        self._made: dict[tuple, SymNode] = {}
        # Derivatives can grow fast: past this, a UsageError. (int(): a caller's NumPy integer or
        # 1e5 is as good as an int, and the compiled core takes only an int here.)
        self.max_nodes = int(max_nodes)
        # Whether some node made here has only constant operands (a piece that did not fold,
        # such as log(-1) or log(2)): only then need ``check_folded`` look at the graphs.
        self.constant_operands = False
        # A formula keeps log(2) as log(2) (``fold_constants``); a point wants its digits.
        self.exact_constants = exact_constants

    def _intern(self, key: tuple, op: Any, inputs: tuple[SymNode, ...], value: Any = 0.0,
                name: str | None = None) -> SymNode:
        node = self._table.get(key)
        return node if node is not None else self._create(key, op, inputs, value, name)

    def _create(self, key: tuple, op: Any, inputs: tuple[SymNode, ...], value: Any = 0.0,
                name: str | None = None) -> SymNode:
        """A new node under ``key`` (which the table does not hold yet)."""
        if len(self._table) >= self.max_nodes:
            raise UsageError(
                f"the derivatives grow past {self.max_nodes:,} graph nodes",
                hint="ask for a lower --order or fewer --wrt variables, or raise --max-nodes")
        node = SymNode(op, inputs, value, name)
        node.builder = self
        if (inputs and inputs[0].op is CONST and inputs[-1].op is CONST
                and (len(inputs) < 3 or all(s.op is CONST for s in inputs))):
            self.constant_operands = True
        self._table[key] = node
        return node

    def constant(self, value: Any, name: str | None = None) -> SymNode:
        value = float(value)
        if name is None and value:  # the common case, by value (0.0 and -0.0 are two nodes)
            node = self._numbers.get(value)
            if node is None:
                node = self._numbers[value] = self._intern(("const", value.hex(), None), CONST,
                                                           (), value)
            return node
        return self._intern(("const", value.hex(), name), CONST, (), value, name)

    def variable(self, name: str) -> SymNode:
        return self._intern(("var", name), VAR, (), 0.0, name)

    def lift(self, value: Any) -> SymNode:
        if isinstance(value, SymNode) and value.builder is self:
            return value
        if isinstance(value, (int, float)):
            return self.constant(value)
        raise TypeError(f"cannot use {value!r} in a symbolic expression")

    def make(self, op: Any, args: Sequence[Any]) -> SymNode:
        """The node for ``op`` applied to ``args`` (nodes or numbers), simplified."""
        if len(args) == 2:  # the common case, without a generator (this is the hot path)
            first, second = args
            if type(first) is not SymNode or first.builder is not self:
                first = self.lift(first)
            if type(second) is not SymNode or second.builder is not self:
                second = self.lift(second)
            inputs: tuple[SymNode, ...] = (first, second)
            key: tuple = (op.name, first.seq, second.seq)
        elif len(args) == 1:  # negation and functions: the next most common
            (first,) = args
            if type(first) is not SymNode or first.builder is not self:
                first = self.lift(first)
            inputs = (first,)
            key = (op.name, first.seq)
        else:
            inputs = tuple([arg if type(arg) is SymNode and arg.builder is self
                            else self.lift(arg) for arg in args])
            key = (op.name, *[node.seq for node in inputs])
        if self._rewriting:  # inside a rewrite, what it makes depends on how deep it is
            return self._simplified(key, op, inputs)
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = self._simplified(key, op, inputs)
        return made

    def _simplified(self, key: tuple, op: Op, inputs: tuple[SymNode, ...]) -> SymNode:
        """op(inputs), folded or rewritten where a local rule applies, else the node itself."""
        if inputs[0].op is CONST and inputs[-1].op is CONST:  # the first and last: most often
            folded = self._folded(op, inputs)
            if folded is not None:
                return folded
        rewrite = _REWRITES.get(op.name)
        simpler = None
        # A rewrite builds nodes with make() again; bounding how deep that nests keeps Python's
        # stack safe on any graph (deeper pieces are built as they are, just less simplified).
        if rewrite is not None and self._rewriting < MAX_REWRITE_NESTING:
            self._rewriting += 1
            try:
                simpler = rewrite(self, *inputs)
            finally:
                self._rewriting -= 1
        if simpler is not None:
            return simpler
        node = self._table.get(key)
        return node if node is not None else self._create(key, op, inputs)

    def _folded(self, op: Op, inputs: tuple[SymNode, ...]) -> SymNode | None:
        """op on numbers as a number, where it folds (a formula keeps pi and e as names)."""
        exact = self.exact_constants
        for node in inputs:
            if node.op is not CONST or (node.name is not None and exact):
                return None
        folded = fold_constants(op, [node.value for node in inputs], exact)
        return None if folded is None else self.constant(folded)

    def raw(self, op: Op, inputs: tuple[SymNode, ...]) -> SymNode:
        """The node ``op(inputs)`` exactly as given: no folding, no rewrite (shared all the
        same). For callers that built a simplified form themselves (``canonical``)."""
        if len(inputs) == 2:  # keyed as make keys it
            key: tuple = (op.name, inputs[0].seq, inputs[1].seq)
        elif len(inputs) == 1:
            key = (op.name, inputs[0].seq)
        else:
            key = (op.name, *[node.seq for node in inputs])
        node = self._table.get(key)
        return node if node is not None else self._create(key, op, inputs)

    def zero(self) -> SymNode:
        return self.constant(0.0)

    def import_graph(
        self, outputs: Sequence[Node], values: Mapping[str, float] | None = None
    ) -> list[SymNode]:
        """Rebuild ``outputs`` (any graph nodes) here; variables in ``values`` become constants.

        Walks the nodes in topological order (no recursion), so every node is simplified and
        folded again: this is how bound variables are substituted.
        """
        values = values or {}
        made: dict[Node, SymNode] = {}
        make, image = self.make, made.__getitem__
        for node in nodes_of(outputs):
            op = node.op
            if op is VAR:
                name = str(node.name)
                new = self.constant(values[name]) if name in values else self.variable(name)
            elif op is CONST:
                keep = node.name if node.name in CONSTANTS else None
                new = self.constant(node.value, keep)
            else:
                new = make(op, tuple(map(image, node.inputs)))
            made[node] = new
        return [made[node] for node in outputs]


def substitute(outputs: Sequence[Node], values: Mapping[str, float]) -> list[SymNode]:
    """``outputs`` with the variables in ``values`` replaced by numbers and folded.

    A piece that is all numbers yet does not fold (log(-1) once x = -1) raises the NumericError
    that evaluating it would raise, naming that piece, rather than being printed as if fine.
    """
    result = Builder().import_graph(outputs, values)
    check_folded(result)
    return result


def check_folded(outputs: Sequence[Node]) -> None:
    """Raise the NumericError of the first piece of ``outputs`` that is all numbers yet did not
    fold (log(-1) once x = -1), naming that piece, rather than print it as if fine."""
    if all(type(node) is SymNode and not node.builder.constant_operands for node in outputs):
        return  # the usual case: their builders made no such piece, so none is in the graphs
    if not _any_unfolded(outputs):  # no need to order the nodes
        return
    for node in nodes_of(outputs):
        if node.inputs and all(source.op is CONST for source in node.inputs):
            compute(node, [source.value for source in node.inputs])


def _any_unfolded(outputs: Sequence[Node]) -> bool:
    """Whether some node of ``outputs`` has only constant operands (a walk in no order)."""
    stack = list(outputs)
    seen = set(stack)
    while stack:
        node = stack.pop()
        inputs = node.inputs
        if inputs and all(source.op is CONST for source in inputs):
            return True
        for source in inputs:
            if source not in seen:
                seen.add(source)
                stack.append(source)
    return False


def fold(op: Op, values: list[float]) -> float | None:
    """``op`` on constant operands, or None where that is not a finite float (left unfolded,
    so evaluating the expression reports the error at that node)."""
    if op.domain is not None and op.domain(*values) is not None:
        return None
    try:
        result = op.forward(*values)
        return float(result) if math.isfinite(result) else None
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    except TypeError:  # array constants (vectorized derivatives): not folded into a number
        return None


# Ops whose value on numbers is written as a number: arithmetic, and the piecewise functions whose
# results are their operands or small integers. Other functions of numbers (log(2), sqrt(3))
# stay calls in a formula unless the result is an integer (log(1) is 0, sqrt(4) is 2).
_ALWAYS_FOLDED = frozenset({"add", "sub", "mul", "div", "neg", "abs", "sign", "relu", "min",
                            "max"})


def fold_constants(op: Op, values: list[float], exact_constants: bool) -> float | None:
    """``fold``, except that with ``exact_constants`` a function of numbers whose value is not
    an integer (log(2), 2**0.5) and a quotient that is no short number (1/3) are left as
    written: a derivative rule's log(2) stays log(2)."""
    folded = fold(op, values)
    if folded is None or not exact_constants:
        return folded
    if op.name == "div":  # 1/4 is 0.25, but 1/3 stays 1/3
        return folded if is_short(folded, *values) else None
    if op.name in _ALWAYS_FOLDED:
        return folded
    if op.name == "pow" and values[1] == math.floor(values[1]):
        return folded
    return folded if folded == math.floor(folded) else None


def is_short(quotient: float, numerator: float, divisor: float) -> bool:
    """Whether a quotient of numbers reads as well as the division does: 0.25, not 1/4; but 1/3
    rather than 0.3333333333333333."""
    return len(format_number(quotient)) <= max(len(format_number(numerator)),
                                               len(format_number(divisor))) + 3


def gradients(output: SymNode, wrt: Iterable[SymNode]) -> list[SymNode]:
    """d(output)/d(each of ``wrt``) as SymNodes: reverse mode with the op table's rules."""
    builder = output.builder
    make = builder.make
    grads: dict[Node, SymNode] = {output: builder.constant(1.0)}
    for node in reversed(nodes_of([output])):
        grad = grads.get(node)
        inputs = node.inputs
        if grad is None or not inputs or not node.needs_grad:
            continue
        rules = node.op.rules
        for position, source in enumerate(inputs):
            if source.needs_grad:
                contribution = _chained(builder, grad, rules[position](*inputs, node))
                before = grads.get(source)
                grads[source] = (contribution if before is None
                                 else make(ADD, (before, contribution)))
    return [grads.get(node, builder.zero()) for node in wrt]


def _chained(builder: Builder, grad: SymNode, local: Any) -> SymNode:
    """grad * local, the chain rule's product, as ``make`` gives it. A sum's rules are the
    number 1 and its gradient is often the number 1, so a factor 1 (and a local -1, a negation)
    is taken care of here without the builder's lookups and rewrites, with the same result: a
    number times 1 folds to that number, except a name (pi) that a point's builder writes out."""
    unit = grad.op is CONST and grad.value == 1.0 and grad.name is None
    if type(local) is float:
        if local == 1.0 and (grad.op is not CONST or grad.name is None):
            return grad  # g*1 -> g
        if unit:
            return builder.constant(local)  # 1*c -> c
        if local == -1.0 and grad.op is not CONST and grad.op is not WHERE:
            return builder.make(NEG, (grad,))  # g*-1 -> -g (a conditional takes it inside)
    elif unit:
        local = builder.lift(local)
        if local.op is not CONST or local.name is None:
            return local  # 1*l -> l
    return builder.make(MUL, (grad, local))


# --- at a point: eval's passes on the bound nodes, the rules on SymNodes for the rest -----------

def bound_values(nodes: Sequence[Node], values: Mapping[str, float]) -> dict[Node, float]:
    """The value of every node of ``nodes`` (a topological order) that depends only on constants
    and the variables in ``values``, computed as ``eval``'s forward pass computes it
    (``quick_compute``, in the same order), so a node outside its domain raises the NumericError
    ``eval`` raises, naming it -- before any rewrite could drop it. Sets those nodes' ``value``
    (as ``eval`` does: ``local_derivative`` reads it)."""
    masked = is_masked(nodes)
    numbers: dict[Node, float] = {}
    failed: list[Node] = []
    for node in nodes:
        op = node.op
        if op is VAR:
            if node.name in values:
                numbers[node] = float(values[str(node.name)])
        elif op is CONST:
            numbers[node] = node.value
        else:
            inputs = node.inputs
            if all(source in numbers for source in inputs):
                args = [numbers[source] for source in inputs]
                try:
                    node.value = quick_compute(node, args)
                except NumericError:
                    if not masked:
                        raise
                    node.value = math.nan
                    failed.append(node)
                numbers[node] = node.value
    return _live_numbers(nodes, numbers, failed) if masked else numbers


def _live_numbers(nodes: Sequence[Node], numbers: dict[Node, float],
                  failed: list[Node]) -> dict[Node, float]:
    """``numbers`` without the nodes in a branch not taken (a condition with a free variable
    takes both): those are left to the symbolic rules, where the conditional's folding drops
    them. A live node in ``failed`` raises its error (the first one in topological order)."""
    live = liveness(list(nodes), lambda node: numbers.get(node))
    for node in failed:
        if live[node.index]:
            quick_compute(node, [numbers[source] for source in node.inputs])  # raises
    return {node: value for node, value in numbers.items() if live[node.index]}


def check_local_derivatives(nodes: Sequence[Node], numbers: Mapping[Node, float]) -> None:
    """Raise what ``eval``'s backward pass raises for a bound node whose local derivative is not
    finite ("the derivative of sqrt is not finite here"), in the same (reverse) order."""
    for node in reversed(nodes):
        if node.inputs and node.needs_grad and node in numbers:
            args = [numbers.get(source, math.nan) for source in node.inputs]
            for position, source in enumerate(node.inputs):
                if source.needs_grad:
                    local_derivative(node, args, position)


def gradients_at(
    nodes: Sequence[Node], values: Mapping[str, float], builder: Builder, wrt: Sequence[str]
) -> tuple[SymNode, list[SymNode]]:
    """The output (the last of ``nodes``, a topological order) and its derivatives by ``wrt`` at
    a point that gives some variables ``values``, made in ``builder``.

    Every node that depends only on bound variables is a number computed by ``eval``'s forward
    pass, and its local derivatives are ``eval``'s numbers (``local_derivative``), errors
    included; the op table's rules run on SymNodes only for nodes that involve a free variable.
    The contributions are summed in ``eval``'s order (reverse topological, starting from 0), so
    when every variable is bound the answers are exactly ``eval``'s gradients, and a gradient
    that overflows raises as there.
    """
    numbers = bound_values(nodes, values)
    images: dict[Node, SymNode] = {}
    variables: dict[str, Node] = {}
    for node in nodes:
        if node in numbers:
            keep = node.name if node.op is CONST and node.name in CONSTANTS else None
            images[node] = builder.constant(numbers[node], keep)
            if node.op is VAR:
                variables[str(node.name)] = node
        elif node.op is VAR:
            images[node] = builder.variable(str(node.name))
            variables[str(node.name)] = node
        elif node.op is CONST:  # a number in a branch not taken: not among ``numbers``
            keep = node.name if node.name in CONSTANTS else None
            images[node] = builder.constant(node.value, keep)
        else:
            images[node] = builder.make(node.op, [images[source] for source in node.inputs])
    output = nodes[-1]
    zero = builder.zero()
    grads: dict[Node, SymNode] = {output: builder.constant(1.0)}
    for node in reversed(nodes):
        inputs = node.inputs
        if not inputs or not node.needs_grad:
            continue
        grad = grads.get(node, zero)
        bound = node in numbers
        # a branch not taken is not in numbers: NaN, which where's rules never read
        args = [numbers.get(source, math.nan) for source in inputs] if bound else []
        for position, source in enumerate(inputs):
            if not source.needs_grad:
                continue
            before = grads.get(source, zero)
            if bound:
                number = local_derivative(node, args, position)
                if grad.op is CONST and before.op is CONST and not math.isfinite(
                        before.value + grad.value * number):
                    raise numeric_error(node, args, "the gradient overflows")
                partial = builder.constant(number)
            else:
                partial = builder.lift(node.op.rules[position](
                    *(images[source] for source in inputs), images[node]))
            grads[source] = builder.make(ADD, (before, builder.make(MUL, (grad, partial))))
    return images[output], [grads.get(variables[name], zero) if name in variables else zero
                            for name in wrt]


# --- local rewrites: each returns a simpler node, or None to keep the node as it is ------------
# They run for every node made, so they read each operand's op once and test the cheap cases
# (a number, a product) before building anything.

def _is(node: Node, value: float) -> bool:
    return node.op is CONST and node.value == value


def _const(node: Node) -> bool:
    return node.op is CONST


def _number(node: Node) -> bool:
    """A number that may be folded into a coefficient (pi and e are names: they stay)."""
    return node.op is CONST and node.name is None


def _term(node: SymNode) -> tuple[Any, SymNode]:
    """``node`` as coefficient * rest: 3*x -> (3, x), -x -> (-1, x), x -> (1, x)."""
    if node.op is MUL and _number(node.inputs[0]):
        return node.inputs[0].value, node.inputs[1]
    if node.op is NEG:
        return -1.0, node.inputs[0]
    return 1.0, node


def _base(node: SymNode) -> SymNode:
    """``node`` as base ** exponent: the base (x**3 -> x, x -> x)."""
    return node.inputs[0] if node.op is POW else node


def _exponent(b: Builder, node: SymNode) -> SymNode:
    """``node`` as base ** exponent: the exponent (x**3 -> 3, x -> 1)."""
    return node.inputs[1] if node.op is POW else b.constant(1.0)


def _other_operand(node: SymNode, operand: SymNode) -> SymNode:
    """The operand of a binary ``node`` that is not ``operand`` (one of them is)."""
    first, second = node.inputs
    return second if first is operand else first


def _scaled(b: Builder, coefficient: float | None, node: SymNode) -> SymNode | None:
    """coefficient * node, or None (no rewrite) when the coefficient did not fold to a float."""
    return None if coefficient is None else b.make(MUL, (coefficient, node))


def _factors(node: SymNode) -> tuple[SymNode, SymNode | None]:
    """``node`` as a product of two factors; a non-product is (node, None), None meaning 1."""
    if node.op is MUL:
        return node.inputs[0], node.inputs[1]
    return node, None


def _like_terms(b: Builder, op: Op, x: SymNode, y: SymNode) -> SymNode | None:
    """x ± y (op is add or sub) as one term when they are like terms (2*x + x -> 3*x), else with
    a common factor pulled out (``_common_factor``). Terms without a coefficient or a factor
    are like only when they are the same node."""
    if x.op is not MUL and y.op is not MUL and x.op is not NEG and y.op is not NEG:
        return _scaled(b, fold(op, [1.0, 1.0]), x) if x is y and x.op is not CONST else None
    (cx, rx), (cy, ry) = _term(x), _term(y)
    if rx is ry and not _const(rx):
        return _scaled(b, fold(op, [cx, cy]), rx)
    return _common_factor(b, op, x, y)


def _common_factor(b: Builder, op: Op, x: SymNode, y: SymNode) -> SymNode | None:
    """p*q ± p*s -> p*(q ± s) (any pairing); p ± p*s -> p*(1 ± s)."""
    if x.op is not MUL and y.op is not MUL:
        return None  # only x ± x would pair, and like terms are gathered before
    (p, q), (r, s) = _factors(x), _factors(y)
    if not (p is r or p is s or (q is not None and (q is r or q is s))):
        return None  # no factor in common: the usual case
    for left, right, other_x, other_y in ((p, r, q, s), (p, s, q, r), (q, r, p, s), (q, s, p, r)):
        if left is not None and left is right and not _const(left):
            one = b.constant(1.0)
            inner = b.make(op, (one if other_x is None else other_x,
                                one if other_y is None else other_y))
            return b.make(MUL, (left, inner))
    return None


def _add(b: Builder, x: SymNode, y: SymNode) -> SymNode | None:
    xop, yop = x.op, y.op
    if xop is CONST or yop is CONST:
        if xop is CONST and x.value == 0.0:
            return y
        if yop is CONST and y.value == 0.0:
            return x
    elif xop is WHERE and yop is WHERE and x.inputs[0] is y.inputs[0]:
        return _into_branches(b, ADD, x, y)
    if yop is NEG:
        return b.make(SUB, (x, y.inputs[0]))
    if xop is NEG:
        return b.make(SUB, (y, x.inputs[0]))
    if yop is CONST and y.value < 0.0:
        return b.make(SUB, (x, -y.value))
    return _like_terms(b, ADD, x, y)


def _sub(b: Builder, x: SymNode, y: SymNode) -> SymNode | None:
    xop, yop = x.op, y.op
    if yop is CONST and y.value == 0.0:
        return x
    if xop is CONST and x.value == 0.0:
        return b.make(NEG, (y,))
    if x is y:
        return b.zero()
    if xop is WHERE and yop is WHERE and x.inputs[0] is y.inputs[0]:
        return _into_branches(b, SUB, x, y)
    if yop is NEG:
        return b.make(ADD, (x, y.inputs[0]))
    if yop is CONST and y.value < 0.0:
        return b.make(ADD, (x, -y.value))
    if xop is ADD and y in x.inputs:
        return _other_operand(x, y)  # (p + y) - y -> p
    return _like_terms(b, SUB, x, y)


def _mul(b: Builder, x: SymNode, y: SymNode) -> SymNode | None:
    xop, yop = x.op, y.op
    number = xop is CONST or yop is CONST  # the rules on numbers are tried only then
    if number:
        if (xop is CONST and x.value == 0.0) or (yop is CONST and y.value == 0.0):
            return b.zero()
        if xop is CONST and x.value == 1.0:
            return y
        if yop is CONST and y.value == 1.0:
            return x
    if xop is WHERE or yop is WHERE:
        return _into_branches(b, MUL, x, y)
    if number:
        if xop is CONST and x.value == -1.0:
            return b.make(NEG, (y,))
        if yop is CONST:
            if y.value == -1.0:
                return b.make(NEG, (x,))
            if xop is not CONST:
                return b.make(MUL, (y, x))  # numbers first: 2*x
    if xop is NEG:
        return b.make(NEG, (b.make(MUL, (x.inputs[0], y)),))
    if yop is NEG:
        return b.make(NEG, (b.make(MUL, (x, y.inputs[0])),))
    if yop is MUL and _number(y.inputs[0]):
        if _number(x):
            return _scaled(b, fold(MUL, [x.value, y.inputs[0].value]), y.inputs[1])
        return b.make(MUL, (y.inputs[0], b.make(MUL, (x, y.inputs[1]))))
    if xop is MUL and _number(x.inputs[0]) and yop is not CONST:
        return b.make(MUL, (x.inputs[0], b.make(MUL, (x.inputs[1], y))))
    if xop is DIV:
        numerator = _moved_product(b, x.inputs[0], y)
        return None if numerator is None else b.make(DIV, (numerator, x.inputs[1]))
    if yop is DIV:
        numerator = _moved_product(b, x, y.inputs[0])
        return None if numerator is None else b.make(DIV, (numerator, y.inputs[1]))
    return None if xop is CONST else _gather_powers(b, x, y)


def _moved_product(b: Builder, p: SymNode, q: SymNode) -> SymNode | None:
    """p*q for a rewrite that moves a factor across a division, or None (no rewrite) when p and q
    are numbers whose product is not a normal float: (a/1e200)/1e200 is a number, while
    a/(1e200*1e200) would divide by an overflow and a/(1e-200*1e-200) by an underflowed 0."""
    if _const(p) and _const(q) and p.value != 0.0 and q.value != 0.0:
        product = fold(MUL, [p.value, q.value])
        if product is None or abs(product) < sys.float_info.min:
            return None
    return b.make(MUL, (p, q))


def _gather_powers(b: Builder, x: SymNode, y: SymNode) -> SymNode | None:
    """x**a * x**b -> x**(a + b); also one level into a product on the right (x not a number)."""
    base = _base(x)
    if base is _base(y) and base.op is not CONST:
        return b.make(POW, (base, b.make(ADD, (_exponent(b, x), _exponent(b, y)))))
    if y.op is MUL:
        p, q = y.inputs
        if _base(p) is base:
            return b.make(MUL, (b.make(MUL, (x, p)), q))
        if _base(q) is base:
            return b.make(MUL, (p, b.make(MUL, (x, q))))
    return None


def _div(b: Builder, x: SymNode, y: SymNode) -> SymNode | None:
    xop, yop = x.op, y.op
    if yop is CONST and y.value == 1.0:
        return x
    if xop is WHERE:
        return _into_branches(b, DIV, x, y)
    if yop is CONST and y.value == -1.0:
        return b.make(NEG, (x,))
    if xop is CONST and x.value == 0.0:
        return b.zero()
    if x is y:
        return b.constant(1.0)
    if xop is NEG:
        return b.make(NEG, (b.make(DIV, (x.inputs[0], y)),))
    if yop is NEG:
        return b.make(NEG, (b.make(DIV, (x, y.inputs[0])),))
    if xop is DIV:
        divisor = _moved_product(b, x.inputs[1], y)
        return None if divisor is None else b.make(DIV, (x.inputs[0], divisor))
    if yop is DIV:
        numerator = _moved_product(b, x, y.inputs[1])
        return None if numerator is None else b.make(DIV, (numerator, y.inputs[0]))
    if xop is MUL and y in x.inputs:
        return _other_operand(x, y)  # (p*y)/y -> p
    base = _base(x)
    if base is _base(y) and base.op is not CONST:
        return b.make(POW, (base, b.make(SUB, (_exponent(b, x), _exponent(b, y)))))
    return None


def _neg(b: Builder, x: SymNode) -> SymNode | None:
    if x.op is NEG:
        return x.inputs[0]
    if x.op is WHERE:
        condition, taken, other = x.inputs
        return b.make(WHERE, (condition, b.make(NEG, (taken,)), b.make(NEG, (other,))))
    if x.op is SUB:
        return b.make(SUB, (x.inputs[1], x.inputs[0]))
    if x.op is MUL and _number(x.inputs[0]):
        return b.make(MUL, (-x.inputs[0].value, x.inputs[1]))
    return None


def _pow(b: Builder, x: SymNode, y: SymNode) -> SymNode | None:
    if _is(y, 1.0):
        return x
    if _is(y, 0.0) or _is(x, 1.0):
        return b.constant(1.0)
    if x.op is POW and _const(x.inputs[1]) and _const(y) and y.value == math.floor(y.value):
        return b.make(POW, (x.inputs[0], b.make(MUL, (x.inputs[1], y))))
    return None


def _xlogy(b: Builder, x: SymNode, y: SymNode) -> SymNode | None:
    """xlogy(0, y) -> 0; xlogy(x, c) -> x*log(c) for a number c > 0 (log(c) is then finite, so
    the two agree everywhere): ``diff "2**x"`` prints a product, as before xlogy."""
    if _is(x, 0.0):
        return b.zero()
    if _const(y) and y.value > 0.0:
        return b.make(MUL, (x, b.make(LOG, (y,))))
    return None



def _where(b: Builder, c: SymNode, x: SymNode, y: SymNode) -> SymNode | None:
    if _const(c):
        return x if c.value else y
    if x is y:
        return x
    if x.op is WHERE and x.inputs[0] is c:  # where(c, where(c, p, q), y) -> where(c, p, y)
        return b.make(WHERE, (c, x.inputs[1], y))
    if y.op is WHERE and y.inputs[0] is c:
        return b.make(WHERE, (c, x, y.inputs[2]))
    return None


def _into_branches(b: Builder, op: Op, x: SymNode, y: SymNode) -> SymNode:
    """``op`` of x and y with the conditional among them (x's if both are) taken apart:
    g*where(c, p, q) -> where(c, g*p, g*q); where(c, p, q) + where(c, r, s) -> where(c, p + r,
    q + s). Each branch keeps what it had, so nothing is computed where it was not."""
    split = x if x.op is WHERE else y
    condition = split.inputs[0]

    def branch(pick: int) -> SymNode:
        left = x.inputs[pick] if x.op is WHERE and x.inputs[0] is condition else x
        right = y.inputs[pick] if y.op is WHERE and y.inputs[0] is condition else y
        return b.make(op, (left, right))

    return b.make(WHERE, (condition, branch(1), branch(2)))


_REWRITES: dict[str, Callable[..., SymNode | None]] = {
    "add": _add, "sub": _sub, "mul": _mul, "div": _div, "neg": _neg, "pow": _pow,
    "xlogy": _xlogy, "where": _where,
}
