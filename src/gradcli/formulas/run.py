"""Running checks: each ``CheckSpec`` is one vectorised sweep, then one ``Finding`` per assertion.

A finding covers every point of its check: how many points fail, and the worst one (largest
error relative to its tolerance) with its coordinates, the expected and the actual number. Values,
gradients and derivative identities pass when |actual - expected| <= atol + rtol * max(|actual|,
|expected|) (``tolerance``); the finite-difference check of every gradient always runs with
the check's rtol/atol. A point where a value or gradient is not finite is a numeric error (exit
status 3) unless the check says ``finite = false``, which skips such points instead.
"""

from __future__ import annotations

import fnmatch
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from gradcli.engine.notation import format_number
from gradcli.engine.ops import numpy
from gradcli.engine.vector import evaluate_vector
from gradcli.errors import ExitStatus, GradcliError, UsageError, listed
from gradcli.formulas.files import CheckSpec, Expected
from gradcli.gradcheck.steps import tolerance
from gradcli.gradcheck.sweep import Sweep, evaluate_sweep, sweep_columns


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
    message: str | None = None  # for numeric errors: the scalar path's exact message
    status: ExitStatus = ExitStatus.OK

    @property
    def ok(self) -> bool:
        return self.status == ExitStatus.OK

    def describe(self) -> str:
        """One line: what failed, where, expected and actual numbers."""
        if self.ok:
            return f"{self.assertion}: ok at {self.points} points"
        where = "" if self.worst_point is None else " at " + format_point(self.worst_point)
        count = f" ({self.failures} of {self.points} points fail)" if self.points > 1 else ""
        if self.message is not None:
            return f"{self.assertion}{where}: {self.message}{count}"
        return (f"{self.assertion}{where}: expected {_number(self.expected)}, got "
                f"{_number(self.actual)} (error {_number(self.worst_error, '.3g')} > tolerance "
                f"{_number(self.tolerance, '.3g')}){count}")


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


def select(specs: Iterable[CheckSpec], pattern: str | None) -> list[CheckSpec]:
    """Checks whose name contains ``pattern`` or matches it as a glob (``mse*``); all if None."""
    return [spec for spec in specs if pattern is None or pattern in spec.name
            or fnmatch.fnmatchcase(spec.name, pattern)]


def no_match_error(pattern: str, specs: Sequence[CheckSpec]) -> UsageError:
    """``-k PATTERN`` selected nothing: the error names a few of the checks there are."""
    names = [spec.name for spec in specs]
    return UsageError(f"no check matches -k {pattern}",
                      hint=f"the checks: {listed(names)}" if names else "the files hold no checks")


def run_checks(specs: Iterable[CheckSpec], fail_fast: bool = False) -> Iterator[CheckOutcome]:
    """Run each check in order; with ``fail_fast`` stop after the first that does not pass."""
    for spec in specs:
        outcome = run_check(spec)
        yield outcome
        if fail_fast and not outcome.ok:
            return


def run_check(spec: CheckSpec) -> CheckOutcome:
    """Evaluate one check at all its points (vectorised) and judge every assertion."""
    started = time.perf_counter()
    np = numpy()
    sweep = evaluate_sweep(spec.program, sweep_columns(spec.program, spec.values),
                           rtol=spec.rtol, atol=spec.atol, explain_limit=1)
    usable = ~sweep.failed
    findings = _numeric_findings(spec, sweep)
    skipped = int(sweep.failed.sum()) if spec.finite is False else 0
    if usable.any():
        if spec.value is not None:
            findings.append(_compare(spec, sweep, usable, "value", "value", sweep.value,
                                     _expected_values(spec.value, sweep)))
        for name, number in spec.gradients.items():
            findings.append(_compare(spec, sweep, usable, f"gradient d/d{name}",
                                     f"gradients.{name}", sweep.gradients[name],
                                     np.full(sweep.size, number)))
        for name, expected in spec.derivative.items():
            findings.append(_compare(spec, sweep, usable, f"derivative d/d{name}",
                                     f"derivative.{name}", sweep.gradients[name],
                                     _expected_values(expected, sweep)))
        findings += _difference_findings(spec, sweep, usable)
    return CheckOutcome(spec, sweep.size, findings, skipped, time.perf_counter() - started)


def _numeric_findings(spec: CheckSpec, sweep: Sweep) -> list[Finding]:
    """``finite``: a failure (status 3) if any point has a numeric error, unless finite = false."""
    np = numpy()
    failed = np.flatnonzero(sweep.failed)
    everywhere = failed.size == sweep.size
    if spec.finite is False and not everywhere:
        return []
    if not failed.size:
        if spec.finite is not True:
            return []
        return [Finding("finite", "finite", spec.line_of("finite"), sweep.size, 0)]
    first = int(failed[0])
    return [Finding("finite", "finite" if spec.finite is not None else "expr",
                    spec.line_of("finite" if spec.finite is not None else "expr"), sweep.size,
                    int(failed.size), worst_point=sweep.point(first),
                    message=sweep.error_message(first), status=ExitStatus.NUMERIC)]


def _difference_findings(spec: CheckSpec, sweep: Sweep, usable: Any) -> list[Finding]:
    """The finite-difference check of every input gradient, always run."""
    assert sweep.checks is not None
    return [
        _finding(spec, sweep, usable, f"finite differences d/d{name}", "expr",
                 Comparison(sweep.gradients[name], check.numeric, check.abs_error,
                            check.tolerance, check.ok))
        for name, check in sweep.checks.items()
    ]


def _compare(spec: CheckSpec, sweep: Sweep, usable: Any, assertion: str, key: str,
             actual: Any, expected: Any) -> Finding:
    np = numpy()
    with np.errstate(invalid="ignore"):
        error = np.abs(actual - expected)
        allowed = tolerance(actual, expected, spec.rtol, spec.atol, 0.0, np.maximum)
        ok = error <= allowed
    return _finding(spec, sweep, usable, assertion, key,
                    Comparison(actual, expected, error, allowed, ok))


class Comparison(NamedTuple):
    """Actual and expected numbers at every point of a sweep, and how they compare (arrays)."""

    actual: Any
    expected: Any
    error: Any
    allowed: Any
    ok: Any


def _finding(spec: CheckSpec, sweep: Sweep, usable: Any, assertion: str, key: str,
             comparison: Comparison) -> Finding:
    """Counts failures among the usable points and picks the worst (largest error/tolerance)."""
    np = numpy()
    actual, expected, error, allowed, ok = comparison
    rows = np.flatnonzero(usable)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(allowed > 0, error / allowed, np.where(error > 0, np.inf, 0.0))
        ratio = np.where(ok, ratio, np.maximum(ratio, 1.0))  # nan errors compare as failures
    worst = int(rows[np.argmax(np.nan_to_num(ratio[rows], nan=np.inf))])
    failures = int((~ok[rows]).sum())
    return Finding(
        assertion, key, spec.line_of(key), int(rows.size), failures,
        worst_error=float(error[worst]), worst_point=sweep.point(worst),
        expected=float(expected[worst]), actual=float(actual[worst]),
        tolerance=float(allowed[worst]),
        status=ExitStatus.CHECK_FAILED if failures else ExitStatus.OK,
    )


def _expected_values(expected: Expected, sweep: Sweep) -> Any:
    """An expected number at every point, or an expected expression evaluated at every point."""
    np = numpy()
    if expected.program is None:
        return np.full(sweep.size, expected.number)
    return evaluate_vector(expected.program, sweep.columns, gradients=False).output


def outcome_record(outcome: CheckOutcome) -> dict[str, Any]:
    """A check's outcome as a JSON-ready dict (numbers that are not finite become null)."""
    spec = outcome.spec
    return {
        "name": spec.name, "file": spec.file, "line": spec.line, "expr": spec.expr,
        "points": outcome.points, "ok": outcome.ok, "status": int(outcome.status),
        "skipped": outcome.skipped, "seconds": outcome.seconds,
        "findings": [
            {"assertion": f.assertion, "key": f.key, "line": f.line, "points": f.points,
             "failures": f.failures, "ok": f.ok, "worst_error": _finite(f.worst_error),
             "worst_point": f.worst_point, "expected": _finite(f.expected),
             "actual": _finite(f.actual), "tolerance": _finite(f.tolerance),
             "message": f.message}
            for f in outcome.findings
        ],
    }


def report_status(outcomes: Sequence[CheckOutcome],
                  errors: Sequence[GradcliError] = ()) -> ExitStatus:
    """The run's exit status: 2 if a file or the usage is bad, else the worst check's."""
    if errors:
        return ExitStatus.USAGE
    return max((outcome.status for outcome in outcomes), default=ExitStatus.OK)


def report_record(outcomes: Sequence[CheckOutcome],
                  errors: Sequence[GradcliError] = ()) -> dict[str, Any]:
    """The whole run as one JSON-ready document, ``gradcli check --json``: ``ok``, ``status``,
    ``checks`` and ``errors`` -- a bad check file (with its file, line and key) or a usage
    error such as a ``-k`` that matches nothing (file, line and key null)."""
    status = report_status(outcomes, errors)
    return {"ok": status == ExitStatus.OK, "status": int(status),
            "checks": [outcome_record(outcome) for outcome in outcomes],
            "errors": [{"kind": error.kind, "file": getattr(error, "file", None),
                        "line": error.line, "key": getattr(error, "key", None),
                        "message": error.message, "hint": error.hint} for error in errors]}


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def format_point(point: dict[str, float]) -> str:
    return ", ".join(f"{name} = {format_number(value)}" for name, value in point.items())


def _number(value: float | None, spec: str = "") -> str:
    if value is None:
        return "n/a"
    return format(value, spec) if spec else format_number(value)
