"""The check model and what running checks finds. A ``CheckSpec`` is one ``[[check]]`` of a check
file, validated, with what it expects (``Expected``) and the values it sweeps (``Range``, kept as
text until the check runs): formulas/files.py reads them, formulas/run.py runs them. A ``Finding``
is one assertion of a check over all its points (how many fail, and the worst one with its
coordinates, an array's element named as ``W[1, 0]``), a ``CheckOutcome`` one check's, and
``report_record`` the whole run as a JSON-ready record (``gradcli check --json``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gradcli.engine.graph import Program
from gradcli.engine.notation import finite_or_none, format_number, format_point
from gradcli.errors import ExitStatus, GradcliError, plural
from gradcli.gradcheck.check import DEFAULT_ATOL, DEFAULT_RTOL
from gradcli.language.values import parse_value, runs_on_arrays


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
        return runs_on_arrays(self.program, self.values)


@dataclass
class Finding:
    """One assertion of one check over all its points."""

    assertion: str  # "value", "gradient d/dx", "derivative d/dx", "finite differences d/dx", ...
    key: str  # the key in the check file it comes from, e.g. "gradients.x"
    line: int
    points: int  # points it was checked at
    failures: int  # points where it fails
    worst_error: float | None = None  # |actual - expected| at the worst point
    worst_point: dict[str, float] | None = None
    expected: float | None = None
    actual: float | None = None
    tolerance: float | None = None
    message: str | None = None  # a numeric error or the check's own error, on one line
    note: str | None = None  # why a correct gradient may still fail here (ill-conditioning)
    status: ExitStatus = ExitStatus.OK

    @property
    def ok(self) -> bool:
        return self.status == ExitStatus.OK

    def describe(self) -> str:
        """One line: what failed, where, expected and actual numbers."""
        if self.ok:
            return f"{self.assertion}: ok at {plural(self.points, 'point')}"
        where = "" if not self.worst_point else " at " + format_point(self.worst_point)
        count = f" ({self.failures} of {self.points} points fail)" if self.points > 1 else ""
        if self.message is not None:
            return f"{self.assertion}{where}: {self.message}{count}"
        if self.expected is not None and not math.isfinite(self.expected):
            return (f"{self.assertion}{where}: the expected expression has no value there (not "
                    f"a finite number), got {_number(self.actual)}{count}")
        return (f"{self.assertion}{where}: expected {_number(self.expected)}, got "
                f"{_number(self.actual)} (error {_number(self.worst_error, '.3g')} > tolerance "
                f"{_number(self.tolerance, '.3g')}){count}"
                + ("" if self.note is None else f"; {self.note}"))


@dataclass
class CheckOutcome:
    """A check's findings, how many points it covered, and how long it took."""

    spec: CheckSpec
    points: int
    findings: list[Finding]
    skipped: int  # points with numeric errors, skipped because of finite = false
    seconds: float

    @property
    def status(self) -> ExitStatus:
        return max((f.status for f in self.findings), default=ExitStatus.OK)

    @property
    def ok(self) -> bool:
        return self.status == ExitStatus.OK

    @property
    def failures(self) -> list[Finding]:
        return [finding for finding in self.findings if not finding.ok]

    @property
    def worst(self) -> Finding | None:
        """The first failing finding, or else the one with the largest error."""
        if self.failures:
            return self.failures[0]
        measured = [f for f in self.findings if f.worst_error is not None]
        return max(measured, key=lambda f: f.worst_error or 0.0, default=None)


def outcome_record(outcome: CheckOutcome) -> dict[str, Any]:
    """A check's outcome as a JSON-ready dict (numbers that are not finite become null)."""
    spec = outcome.spec
    return {
        "name": spec.name, "file": spec.file, "line": spec.line, "expr": spec.expr,
        "points": outcome.points, "ok": outcome.ok, "status": int(outcome.status),
        "skipped": outcome.skipped, "seconds": outcome.seconds,
        "findings": [
            {"assertion": f.assertion, "key": f.key, "line": f.line, "points": f.points,
             "failures": f.failures, "ok": f.ok, "worst_error": finite_or_none(f.worst_error),
             "worst_point": f.worst_point, "expected": finite_or_none(f.expected),
             "actual": finite_or_none(f.actual), "tolerance": finite_or_none(f.tolerance),
             "message": f.message, "note": f.note}
            for f in outcome.findings
        ],
    }


def report_status(outcomes: Sequence[CheckOutcome],
                  errors: Sequence[GradcliError] = ()) -> ExitStatus:
    """The run's exit status: the worst check's, at least 2 if a file, the usage or the JUnit
    report went wrong."""
    worst = max((outcome.status for outcome in outcomes), default=ExitStatus.OK)
    return max(worst, ExitStatus.USAGE) if errors else worst


def report_record(outcomes: Sequence[CheckOutcome],
                  errors: Sequence[GradcliError] = ()) -> dict[str, Any]:
    """``gradcli check --json``: ``ok``, ``status``, ``checks`` and ``errors`` (a bad check file,
    or a usage error with file, line and key null)."""
    status = report_status(outcomes, errors)
    return {"ok": status == ExitStatus.OK, "status": int(status),
            "checks": [outcome_record(outcome) for outcome in outcomes],
            "errors": [{"kind": error.kind, "file": getattr(error, "file", None),
                        "line": error.line, "key": getattr(error, "key", None),
                        "message": error.message, "hint": error.hint} for error in errors]}


def _number(value: float | None, spec: str = "") -> str:
    if value is None:
        return "n/a"
    return format(value, spec) if spec else format_number(value)
