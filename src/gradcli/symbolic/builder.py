"""Derivatives as graphs: the backward pass run on graph nodes instead of floats.

``Builder`` makes the ``SymNode``s the op table's rules build when run on nodes: it hash-conses
(shared subexpressions stay shared, printed sizes linear) and simplifies locally
(symbolic/rewrites.py). Some rewrites assume what they drop is defined (``x - x -> 0`` even for
log(-1)): right for a formula, not at a point. So ``gradients_at`` runs ``eval``'s own passes on
the nodes that depend only on bound variables (same numbers, same NumericErrors) and the rules
on SymNodes only where a free variable is involved.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mypy_extensions import mypyc_attr

from gradcli.engine.core_ops import ADD, CONST, MUL, VAR
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
from gradcli.engine.ops import CONSTANTS, Op
from gradcli.errors import NumericError, UsageError
from gradcli.limits import MAX_NODES
from gradcli.symbolic.nodes import Maker, SymNode
from gradcli.symbolic.rewrites import REWRITES, fold_constants

MAX_REWRITE_NESTING = 24


@mypyc_attr(allow_interpreted_subclasses=True)  # arrays.ArrayBuilder
class Builder(Maker):
    """Makes SymNodes: one node per distinct (op, inputs), simplified as it is made."""

    def __init__(self, max_nodes: Any = MAX_NODES, exact_constants: bool = False) -> None:
        self._table: dict[tuple, SymNode] = {}
        self._numbers: dict[float, SymNode] = {}  # nonzero unnamed constants by value
        self._rewriting = 0  # how many rewrites are under way, one inside another
        # What make() gave for each (op, inputs) outside any rewrite (the rules ask for the same
        # products many times; a rewrite's answer depends only on its inputs and depth)
        self._made: dict[tuple, SymNode] = {}
        self.max_nodes = int(max_nodes)  # a UsageError past it (int(): 1e5 is fine too)
        self.constant_operands = False  # see Maker
        # A formula keeps log(2) as log(2) (``fold_constants``); a point wants its digits.
        self.exact_constants = exact_constants

    def _intern(self, key: tuple, op: Any, inputs: tuple[SymNode, ...], value: Any = 0.0,
                name: str | None = None) -> SymNode:
        """The node under ``key``, made the first time (a UsageError past ``max_nodes``)."""
        node = self._table.get(key)
        if node is not None:
            return node
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
        rewrite = REWRITES.get(op.name)
        simpler = None
        # A rewrite builds nodes with make() again; bounding how deep that nests keeps Python's
        # stack safe on any graph (deeper pieces are built as they are, just less simplified).
        if rewrite is not None and self._rewriting < MAX_REWRITE_NESTING:
            self._rewriting += 1
            try:
                simpler = rewrite(self, *inputs)
            finally:
                self._rewriting -= 1
        return simpler if simpler is not None else self._intern(key, op, inputs)

    def _folded(self, op: Op, inputs: tuple[SymNode, ...]) -> SymNode | None:
        """op on numbers as a number, where it folds (a formula keeps pi and e as names)."""
        exact = self.exact_constants
        for node in inputs:
            if node.op is not CONST or (node.name is not None and exact):
                return None
        folded = fold_constants(op, [node.value for node in inputs], exact)
        return None if folded is None else self.constant(folded)

    def raw(self, op: Op, inputs: tuple[SymNode, ...]) -> SymNode:
        """``op(inputs)`` as given, not folded nor rewritten (``canonical``'s forms are), keyed
        as ``make`` keys it."""
        return self._intern((op.name, *[node.seq for node in inputs]), op, inputs)

    def contribution(self, node: Node, position: int, grad: SymNode) -> SymNode:
        """What ``node``'s gradient adds to its operand ``position``'s: grad times its rule."""
        return self.make(MUL, (grad, node.op.rules[position](*node.inputs, node)))

    def import_graph(
        self, outputs: Sequence[Node], values: Mapping[str, float] | None = None
    ) -> list[SymNode]:
        """Rebuild ``outputs`` here, simplified and folded again, the variables in ``values``
        made constants (how bound variables are substituted)."""
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
    """``outputs`` with the variables in ``values`` replaced by numbers and folded
    (``check_folded``)."""
    result = Builder().import_graph(outputs, values)
    check_folded(result)
    return result


def check_folded(outputs: Sequence[Node]) -> None:
    """Raise the NumericError of the first piece of ``outputs`` that is all numbers yet did not
    fold (log(-1) once x = -1), naming that piece, rather than print it as if fine."""
    if all(type(node) is SymNode and not node.builder.constant_operands for node in outputs):
        return  # the usual case: their builders made no such piece, so none is in the graphs
    for node in nodes_of(outputs):
        if node.inputs and all(source.op is CONST for source in node.inputs):
            compute(node, [source.value for source in node.inputs])


def gradients(output: SymNode, wrt: Iterable[SymNode]) -> list[SymNode]:
    """d(output)/d(each of ``wrt``) as SymNodes: reverse mode with the op table's rules."""
    grads = backward(output)
    return [grads.get(node, output.builder.constant(0.0)) for node in wrt]


def backward(output: SymNode) -> dict[Node, SymNode]:
    """d(output)/d(every node on a path that needs a gradient): ``eval``'s reverse pass on
    SymNodes, with the builder's ``contribution`` (an ArrayBuilder's is the op's VJP)."""
    builder = output.builder
    make, contribution = builder.make, builder.contribution
    grads: dict[Node, SymNode] = {output: builder.constant(1.0)}
    for node in reversed(nodes_of([output])):
        grad = grads.get(node)
        inputs = node.inputs
        if grad is None or not inputs or not node.needs_grad:
            continue
        for position, source in enumerate(inputs):
            if source.needs_grad:
                part = contribution(node, position, grad)
                before = grads.get(source)
                grads[source] = part if before is None else make(ADD, (before, part))
    return grads


# --- at a point: eval's passes on the bound nodes, the rules on SymNodes for the rest -----------

def bound_values(nodes: Sequence[Node], values: Mapping[str, float]) -> dict[Node, float]:
    """The value of every node of ``nodes`` (topological) that depends only on constants and
    the variables in ``values``, as ``eval``'s forward pass computes (and sets) it, so a node
    outside its domain raises ``eval``'s NumericError before a rewrite could drop it."""
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
    """``numbers`` without the nodes of a branch not taken (left to the symbolic rules); the
    first live node in ``failed`` raises its error. Every node that none of ``nodes`` reads
    is an output (a level of derivatives, ``_at_point``'s order 3 and above, has several), and
    the nodes are numbered for ``liveness`` (derivatives' nodes have no numbers of their own)."""
    nodes = list(nodes)
    read: set[Node] = set()
    for index, node in enumerate(nodes):
        node.index = index
        read.update(node.inputs)
    outputs = [node for node in nodes if node not in read]
    live = liveness(nodes, lambda node: numbers.get(node), outputs)
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
    """The output (the last of ``nodes``, topological) and its derivatives by ``wrt`` where
    ``values`` binds some variables: bound nodes and their local derivatives are ``eval``'s
    numbers, errors included, the rules run on SymNodes only where a free variable is, and the
    sums go in ``eval``'s order, so a full point gives exactly ``eval``'s gradients."""
    numbers = bound_values(nodes, values)
    images: dict[Node, SymNode] = {}
    variables = {str(node.name): node for node in nodes if node.op is VAR}
    for node in nodes:
        if node in numbers or node.op is CONST:  # a number in a branch not taken: not in numbers
            keep = node.name if node.op is CONST and node.name in CONSTANTS else None
            images[node] = builder.constant(numbers.get(node, node.value), keep)
        elif node.op is VAR:
            images[node] = builder.variable(str(node.name))
        else:
            images[node] = builder.make(node.op, [images[source] for source in node.inputs])
    output = nodes[-1]
    zero = builder.constant(0.0)
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
