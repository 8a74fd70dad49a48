"""Graph nodes as values: ``SymNode`` builds a node when it is used in arithmetic.

The op table's rules are written with operators and ``F.name(...)``, which hands anything with
an ``apply`` back to it; so the very same rules run on SymNodes build d(output)/d(x) as a graph
(DeZero's double backprop). ``Maker`` is what nodes and rewrites ask of a builder, so that
neither imports symbolic/builder.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mypy_extensions import mypyc_attr

from gradcli.engine.core_ops import ADD, DIV, MUL, NEG, POW, SUB
from gradcli.engine.graph import Node


class SymNode(Node):
    """A graph node that builds (simplified, shared) nodes when used in arithmetic."""

    __slots__ = ("builder",)
    builder: Maker
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


@mypyc_attr(allow_interpreted_subclasses=True)
class Maker:
    """What makes SymNodes (``Builder``): the operations the nodes and the rewrites use."""

    # Whether some node made here has only constant operands (a piece that did not fold):
    # only then need ``check_folded`` look at the graphs.
    constant_operands: bool

    def make(self, op: Any, args: Sequence[Any]) -> SymNode:
        """The node for ``op`` applied to ``args`` (nodes or numbers), simplified."""
        raise NotImplementedError

    def constant(self, value: Any, name: str | None = None) -> SymNode:
        raise NotImplementedError

    def contribution(self, node: Node, position: int, grad: SymNode) -> SymNode:
        raise NotImplementedError
