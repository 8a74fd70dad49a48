"""What the step policies (gradcheck/steps.py, differences.py) perturb and replay, for the type
checker only: a module of its own, since a compiled module cannot define classes under ``if``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from gradcli.engine.node import Node


class Perturbed(Protocol):
    """What the step policies read of the node (or array element) they perturb."""

    @property
    def value(self) -> Any: ...
    @property
    def grad(self) -> Any: ...
    @property
    def index(self) -> int: ...


class Replays(Protocol):
    """The output's value with one perturbed value (``replay.Replayer`` on floats,
    ``columns.ElementReplayer`` for an element of an array)."""

    @property
    def nodes(self) -> list[Node]: ...
    @property
    def switched(self) -> set[int]: ...  # conditions a replay turned over, by node index
    def replay(self, index: int, value: Any, complex_step: bool = False
               ) -> tuple[Any, float]: ...


# f at entries ``rows`` moved by offset * h (h: one step per row): the values, the largest
# rounding scale each one's evaluation saw, and where it failed (outside the domain); what
# ``steps.settle`` samples
Sample = Callable[[Any, float, Any], tuple[Any, Any, Any]]
