"""The graph's node, below both graph.py and the printed forms (``notation``) that read it, and
``last_uses``, which both need.

Every node gets a creation number (``seq``) larger than its inputs' numbers, because a node can
only be built from nodes that already exist: sorting by it is a topological order.
"""

from __future__ import annotations

import itertools

from gradcli.engine.core_ops import CONST, VAR
from gradcli.engine.ops.row import Op

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Final

# ``Final``: compiled (setup.py), C constants, not names looked up in the module's dictionary for
# every node made. Creation numbers come from ``next()`` of a count, which threads cannot split
# (a Dask worker's threads make nodes at once); its ``__next__`` bound once (compiled,
# ``next(...)`` looked ``next`` up among the builtins for every node: 2% of a batch line).
_NEXT_SEQ: Final = itertools.count().__next__

# The value and gradient of a node not yet evaluated: one shared float (compiled, a literal
# would be boxed for every node: 48 B each).
_ZERO: Final[Any] = float(0)


class Node:
    """One value in the graph: a variable, a constant, or an op applied to input nodes."""

    __slots__ = ("grad", "index", "inputs", "name", "needs_grad", "op", "seq", "value")
    # ``value`` and ``grad``: floats, complex numbers (the complex-step check) or NumPy arrays.
    op: Op  # typed, so that the compiled passes read a row's fields as C struct members
    inputs: tuple[Node, ...]
    value: Any
    grad: Any
    name: str | None
    seq: int
    needs_grad: bool
    index: int

    def __init__(
        self,
        op: Op,
        inputs: tuple[Node, ...] = (),
        value: Any = _ZERO,
        name: str | None = None,
    ) -> None:
        self.op = op
        self.inputs = inputs
        self.value = value
        self.grad = _ZERO
        self.name = name  # a variable's name, or the name a statement gave an intermediate node
        self.seq = _NEXT_SEQ()
        # Constants and whatever is computed from constants alone need no gradient; skipping them
        # is also what lets pow(x, 3) accept a negative x (d/dy, which needs log(x), is not asked).
        needs_grad = op is VAR
        for node in inputs:  # a loop, not any(...): a batch builds some 50 nodes per program
            if node.needs_grad:
                needs_grad = True
                break
        self.needs_grad = needs_grad
        self.index = -1  # position in its program's topological order, set by Program

    @classmethod
    def variable(cls, name: str, value: Any = _ZERO) -> Node:
        return cls(VAR, (), value, name)

    @classmethod
    def constant(cls, value: Any) -> Node:
        return cls(CONST, (), float(value))

    def apply(self, op: Op, *args: Any) -> Node:
        """A new node computing ``op`` on ``args`` (numbers become constant nodes)."""
        inputs = tuple(a if isinstance(a, Node) else Node.constant(a) for a in args)
        return Node(op, inputs)

    @property
    def is_leaf(self) -> bool:
        return not self.inputs

    def __repr__(self) -> str:
        return f"Node({self.op.name}, name={self.name!r}, value={self.value!r})"


def last_uses(nodes: Sequence[Node]) -> tuple[Sequence[int], Sequence[int]]:
    """For each node of a program (``index``: its position), the index of its last user and
    that of the user before the last (its own index where it has none): a value can go after
    the first, and wait idle after the second. Machine integers, 4 bytes: lists would hold an
    int object per node (W3: 6 MB at the check's peak), and a program of over 2^31 nodes cannot
    be held anyway."""
    from array import array  # not at the top: an eval without the check never loads it

    last = array("i", range(len(nodes)))
    before = array("i", last)
    for node in nodes:
        for source in node.inputs:
            k = source.index
            before[k] = last[k]
            last[k] = node.index
    return last, before
