"""Running checks: each ``CheckSpec`` is a vectorised sweep, then one ``Finding`` per assertion.

A check's points are evaluated a block at a time (``check_blocks``: at most
``CHECK_BLOCK_POINTS`` points and ``CHECK_BLOCK_CELLS`` points x nodes in a block), so the memory
a check takes does not grow with its number of points; the findings of the blocks are combined
(failures add up, the worst point is the worst of all blocks, the first numeric error is the
first of all). Before anything runs, ``run_budget_error`` refuses a run whose estimated size
(``check_cells``) is past ``MAX_RUN_CELLS``.

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
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from gradcli.engine.notation import format_number
from gradcli.engine.ops import numpy
from gradcli.engine.vector import evaluate_vector
from gradcli.errors import ExitStatus, GradcliError, UsageError, listed, plural, visible
from gradcli.formulas.files import CheckSpec, Expected, Range
from gradcli.gradcheck.evaluation import require_values
from gradcli.gradcheck.steps import tolerance
from gradcli.gradcheck.sweep import evaluate_sweep
from gradcli.gradcheck.sweep_results import Sweep
from gradcli.language.values import validate_values
from gradcli.limits import (
    CHECK_BLOCK_CELLS,
    CHECK_BLOCK_OVERHEAD,
    CHECK_BLOCK_POINTS,
    CHECK_FIXED_CELLS,
    MAX_RUN_CELLS,
)


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
            return f"{self.assertion}: ok at {plural(self.points, 'point')}"
        where = "" if not self.worst_point else " at " + format_point(self.worst_point)
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
    """Evaluate one check at all its points and judge every assertion. A mistake the check
    itself makes (shapes that do not fit, a value missing at a point) is that check's error, a
    finding with the error's status: the other checks run, and the report is written whole."""
    started = time.perf_counter()
    try:
        return _run_check(spec)
    except GradcliError as error:
        finding = Finding(f"{error.kind} error", "expr", spec.line_of("expr"), 0, 1,
                          message=error.message, status=error.status)
        return CheckOutcome(spec, 0, [finding], 0, time.perf_counter() - started)


def _run_check(spec: CheckSpec) -> CheckOutcome:
    if spec.arrays:  # a point at a time, element by element
        from gradcli.formulas.array_run import run_array_check

        return run_array_check(spec, CheckOutcome, Finding)
    started = time.perf_counter()
    numeric = _NumericTally()
    judged: dict[str, tuple[Finding, float]] = {}  # by assertion, in the order first judged
    size = 0
    for columns in check_blocks(spec):
        sweep = evaluate_sweep(spec.program, columns, rtol=spec.rtol, atol=spec.atol,
                               explain_limit=0 if numeric.first is not None else 1)
        size += sweep.size
        numeric.add(sweep)
        usable = ~sweep.failed
        if usable.any():
            for finding, ratio in _block_findings(spec, sweep, usable):
                earlier = judged.get(finding.assertion)
                judged[finding.assertion] = (finding, ratio) if earlier is None else \
                    _combined(earlier, (finding, ratio))
    findings = numeric.findings(spec, size) + [finding for finding, _ in judged.values()]
    skipped = numeric.failed if spec.finite is False else 0
    return CheckOutcome(spec, size, findings, skipped, time.perf_counter() - started)


def block_points(spec: CheckSpec) -> int:
    """Points of ``spec`` evaluated at a time: at most ``CHECK_BLOCK_POINTS``, and at most
    ``CHECK_BLOCK_CELLS`` points x nodes (its expr's and its expected expressions')."""
    nodes = len(spec.program.nodes) + _expected_nodes(spec)
    return max(1, min(CHECK_BLOCK_POINTS, CHECK_BLOCK_CELLS // nodes))


def check_blocks(spec: CheckSpec) -> Iterator[dict[str, Any]]:
    """The points of a check's grid (the first variable varies slowest, as ``values.grid``), a
    block of ``block_points`` at a time: one array per input variable of its program."""
    np = numpy()
    program = spec.program
    values = {name: value.expand() if isinstance(value, Range) else value
              for name, value in spec.values.items() if name in program.variables}
    validate_values(values)
    require_values(program, values)
    axes = {name: np.asarray(value, dtype=float) for name, value in values.items()
            if isinstance(value, tuple)}
    fixed = {name: value for name, value in values.items() if not isinstance(value, tuple)}
    del values  # the arrays are enough: a million Python floats take 32 MB
    total = math.prod(axis.size for axis in axes.values())
    step = block_points(spec)
    for start in range(0, total, step):
        size = min(total, start + step) - start
        given = {}
        rest = np.arange(start, start + size)
        for name, axis in reversed(axes.items()):  # the last one varies fastest
            rest, at = np.divmod(rest, axis.size)
            given[name] = axis[at]
        yield {name: given[name] if name in given
               else np.full(size, fixed.get(name, program.defaults.get(name)), dtype=float)
               for name in program.variables}


def check_cells(spec: CheckSpec) -> int:
    """A check's estimated size in cells, one node evaluated at one point: nodes x points x
    passes. Its expr is evaluated twice for the value and gradients (forward and backward) and
    twice more per variable for the finite differences; each expected expression once. Every
    block of points also counts ``CHECK_BLOCK_OVERHEAD`` points more: a node costs as much at
    one point as at that many (NumPy's cost per call), and every check ``CHECK_FIXED_CELLS``
    more (what it costs beyond its nodes: ~2 ms)."""
    passes = 2 + 2 * len(spec.program.variables)
    points = spec.points
    blocks = -(-points // block_points(spec))
    return ((passes * len(spec.program.nodes) + _expected_nodes(spec))
            * (points + CHECK_BLOCK_OVERHEAD * blocks) + CHECK_FIXED_CELLS)


def _expected_nodes(spec: CheckSpec) -> int:
    expected = [spec.value, *spec.derivative.values()]
    return sum(len(e.program.nodes) for e in expected if e is not None and e.program is not None)


def run_budget_error(specs: Sequence[CheckSpec], limit: int = MAX_RUN_CELLS) -> UsageError | None:
    """A UsageError if the checks of one run are estimated past ``limit`` cells (``check_cells``),
    else None: it states the estimate and the limit, and how to split the run."""
    sizes = [check_cells(spec) for spec in specs]
    total = sum(sizes)
    if total <= limit:
        return None
    largest, spec = max(zip(sizes, specs, strict=True), key=lambda pair: pair[0])
    cells = "cells (nodes x points x passes)"
    if largest > limit:
        return UsageError(
            f"check {spec.name!r} ({visible(spec.file)}:{spec.line}) is too large to run: an "
            f"estimated {largest:,} {cells}, and a run may have at most {limit:,}",
            hint="give it fewer points, or split its formula into several checks")
    files = len({spec.file for spec in specs})
    return UsageError(
        f"the {len(specs):,} checks of {files:,} file{'s' if files > 1 else ''} are too large "
        f"for one run: an estimated {total:,} {cells}, and a run may have at most {limit:,}",
        hint=f"run fewer files at a time, or some of the checks with -k PATTERN (the largest: "
             f"{spec.name!r}, {largest:,})")


class _NumericTally:
    """The points where a value or gradient is not finite, over all blocks."""

    def __init__(self) -> None:
        self.failed = 0
        self.first: tuple[dict[str, float], str] | None = None  # its point and message

    def add(self, sweep: Sweep) -> None:
        failed = numpy().flatnonzero(sweep.failed)
        if failed.size and self.first is None:
            index = int(failed[0])
            self.first = (sweep.point(index), sweep.error_message(index))
        self.failed += int(failed.size)

    def findings(self, spec: CheckSpec, size: int) -> list[Finding]:
        """``finite``: a failure (status 3) if any point has a numeric error, unless
        finite = false (and some point has none)."""
        everywhere = self.failed == size
        if spec.finite is False and not everywhere:
            return []
        if self.first is None:
            if spec.finite is not True:
                return []
            return [Finding("finite", "finite", spec.line_of("finite"), size, 0)]
        key = "finite" if spec.finite is not None else "expr"
        point, message = self.first
        return [Finding("finite", key, spec.line_of(key), size, self.failed, worst_point=point,
                        message=message, status=ExitStatus.NUMERIC)]


def _block_findings(spec: CheckSpec, sweep: Sweep, usable: Any) -> list[tuple[Finding, float]]:
    """Every assertion judged at the usable points of one block, with its worst ratio."""
    np = numpy()
    judged = []
    if spec.value is not None:
        judged.append(_compare(spec, sweep, usable, "value", "value", sweep.value,
                               _expected_values(spec.value, sweep)))
    for name, number in spec.gradients.items():
        judged.append(_compare(spec, sweep, usable, f"gradient d/d{name}", f"gradients.{name}",
                               sweep.gradients[name], np.full(sweep.size, number)))
    for name, expected in spec.derivative.items():
        judged.append(_compare(spec, sweep, usable, f"derivative d/d{name}",
                               f"derivative.{name}", sweep.gradients[name],
                               _expected_values(expected, sweep)))
    return judged + _difference_findings(spec, sweep, usable)


def _combined(first: tuple[Finding, float], second: tuple[Finding, float]
              ) -> tuple[Finding, float]:
    """One assertion over two blocks: failures add up; the worst point is the worse one (the
    earlier on a tie, as ``argmax`` picks within a block)."""
    (a, a_ratio), (b, b_ratio) = first, second
    worse, ratio = (b, b_ratio) if b_ratio > a_ratio else (a, a_ratio)
    failures = a.failures + b.failures
    return replace(worse, points=a.points + b.points, failures=failures,
                   status=ExitStatus.CHECK_FAILED if failures else ExitStatus.OK), ratio


def _difference_findings(spec: CheckSpec, sweep: Sweep, usable: Any
                         ) -> list[tuple[Finding, float]]:
    """The finite-difference check of every input gradient, always run."""
    assert sweep.checks is not None
    return [
        _finding(spec, sweep, usable, f"finite differences d/d{name}", "expr",
                 Comparison(sweep.gradients[name], check.numeric, check.abs_error,
                            check.tolerance, check.ok))
        for name, check in sweep.checks.items()
    ]


def _compare(spec: CheckSpec, sweep: Sweep, usable: Any, assertion: str, key: str,
             actual: Any, expected: Any) -> tuple[Finding, float]:
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
             comparison: Comparison) -> tuple[Finding, float]:
    """Counts failures among the usable points and picks the worst (largest error/tolerance);
    returns the finding and that largest ratio."""
    np = numpy()
    actual, expected, error, allowed, ok = comparison
    rows = np.flatnonzero(usable)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(allowed > 0, error / allowed, np.where(error > 0, np.inf, 0.0))
        ratio = np.where(ok, ratio, np.maximum(ratio, 1.0))  # nan errors compare as failures
    ratios = np.nan_to_num(ratio[rows], nan=np.inf)
    at = int(np.argmax(ratios))
    worst = int(rows[at])
    failures = int((~ok[rows]).sum())
    return Finding(
        assertion, key, spec.line_of(key), int(rows.size), failures,
        worst_error=float(error[worst]), worst_point=sweep.point(worst),
        expected=float(expected[worst]), actual=float(actual[worst]),
        tolerance=float(allowed[worst]),
        status=ExitStatus.CHECK_FAILED if failures else ExitStatus.OK,
    ), float(ratios[at])


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
    """The run's exit status: the worst check's, and at least 2 if a file or the usage is bad
    (no check runs then) or the JUnit report could not be written (3 stays 3)."""
    worst = max((outcome.status for outcome in outcomes), default=ExitStatus.OK)
    return max(worst, ExitStatus.USAGE) if errors else worst


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
