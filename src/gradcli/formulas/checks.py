"""The check model: one ``[[check]]`` of a check file, validated (``CheckSpec``), with what it
expects (``Expected``) and the values it sweeps (``Range``, kept as text until the check runs).
formulas/files.py reads check files into these; formulas/run.py runs them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gradcli.engine.graph import Program
from gradcli.gradcheck.check import DEFAULT_ATOL, DEFAULT_RTOL
from gradcli.language.values import parse_value


@dataclass
class Expected:
    """An expected number, or an expression (evaluated at every point) and its parsed program."""

    number: float | None = None
    text: str | None = None
    program: Program | None = None


@dataclass(frozen=True)
class Range:
    """A sweep ``"START:STOP:COUNT"``, validated but kept as text until its check runs: eight
    bytes of a check file can ask for a million values, and a run holds every check at once."""

    variable: str
    text: str
    count: int

    def __len__(self) -> int:
        return self.count

    def expand(self) -> tuple[float, ...]:
        """The values, exactly as ``parse_value`` gives them."""
        values = parse_value(self.variable, self.text)
        return values if isinstance(values, tuple) else (values,)


Axis = float | tuple[float, ...] | Range  # a variable's value in a check: one, a list, a range


@dataclass
class CheckSpec:
    """One ``[[check]]`` table, validated."""

    name: str
    file: str
    line: int  # the line of its ``[[check]]`` header
    expr: str
    program: Program
    values: dict[str, Axis]  # ``at`` and ``sweep`` together: a grid over the swept ones
    value: Expected | None = None
    gradients: dict[str, Any] = field(default_factory=dict)  # a number, or an array
    derivative: dict[str, Expected] = field(default_factory=dict)
    # output -> input -> the Jacobian's block: an Expected (a number, or an expression), or an
    # array (docs/matrix-calculus.md)
    jacobian: dict[str, dict[str, Any]] = field(default_factory=dict)
    finite: bool | None = None
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    key_lines: dict[str, int] = field(default_factory=dict)  # "gradients.x" -> line

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)

    @property
    def points(self) -> int:
        """Every combination of the swept values."""
        return math.prod(len(v) if isinstance(v, (tuple, Range)) else 1
                         for v in self.values.values())

    @property
    def arrays(self) -> bool:
        """An array program, or array values: run a point at a time (formulas/run.py)."""
        return self.program.arrays or any(hasattr(v, "ndim") for v in self.values.values())
