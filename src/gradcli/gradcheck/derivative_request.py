"""What ``gradcli diff`` asks to have checked (``DiffCheck``: the derivatives it is about to
print), what the check reports (``Checked``), and the tolerances it holds them to.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gradcli.engine.graph import Program

POINTS = 3  # sample points checked when the values given leave variables free
LARGE = 10_000  # input elements past which one point is checked
DIRECTIONAL = 30  # a variable's elements past which its Hessian blocks are checked along a
# random direction (H@v against the difference of the gradient along v), not element by element
RTOL, ATOL = 1e-6, 1e-7  # an exact derivative (relative to the entry's largest element)
FD_RTOL, FD_ATOL = 1e-5, 1e-6  # a derivative compared with central differences
KINDS = ("gradient", "jacobian", "hessian", "higher")


@dataclass
class DiffCheck:
    """What ``diff`` is about to print, to be checked.

    ``texts`` nests the derivatives one level per index as printed in gradcli's language:
    ``{x: text}`` (gradient), ``{output label: {x: text}}`` (Jacobian), ``{x: {y: text}}``
    (Hessian); ``levels`` holds orders 2..k for ``higher`` (order k >= 3 of a scalar
    program). ``python`` is the ``--format python`` source and ``python_kind`` its shape:
    ``scalar`` (``value, (gradient...), ((hessian...)...)``), ``array`` (``value, {x: g}``) or
    ``blocks`` (``values, {row: {x: block}}``)."""

    program: Program
    shapes: dict[str, tuple[int, ...]]
    given: dict[str, Any]
    kind: str
    texts: dict[str, Any]
    levels: dict[int, dict[str, Any]] = field(default_factory=dict)
    python: str | None = None
    python_kind: str = ""
    wrt: list[str] = field(default_factory=list)  # the order of a scalar export's entries


@dataclass(frozen=True)
class Checked:
    """How many points and entries a check compared (what ``diff`` says it did)."""

    points: int
    entries: int
    against: str

    def note(self) -> str:
        if not self.points:
            return ("not checked: no point found where the program and its derivatives are "
                    "defined (give values, --x 2, to check at them)")
        where = "point" if self.points == 1 else "points"
        agree = "derivatives agree" if self.entries != 1 else "derivative agrees"
        return f"checked at {self.points} {where}: {self.entries} {agree} with {self.against}"

    def record(self) -> dict[str, Any]:
        return {"points": self.points, "entries": self.entries, "against": self.against}


def paths(tree: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple, Any]]:
    """(path, leaf) of a nested dict, in order (depth at most the order, 6)."""
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from paths(value, (*path, key))
        else:
            yield (*path, key), value
