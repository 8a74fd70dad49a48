"""Running checks, scalar and array alike: a check's points are judged a block at a time, and the
findings of the blocks are combined (failures add up, the worst point is the worst of all
blocks, the first numeric error is the first of all) into one ``Finding`` per assertion.

A block is a vectorised sweep of up to ``block_points`` points (``check_blocks``: at most
``CHECK_BLOCK_POINTS`` points and ``CHECK_BLOCK_CELLS`` points x nodes), so the memory a check
takes does not grow with its number of points. A check with arrays in it (its expr, or a value
of ``at``; ``CheckSpec.arrays``) is instead judged a point at a time by ``evaluate`` with its
per-element finite-difference check, at most ``MAX_POINTWISE_CHECK_POINTS`` points: there
``gradients`` may be arrays (or a number every element must equal), a ``derivative`` expression
may evaluate to an array of the gradient's shape, and a program of several outputs asserts its
``jacobian``. Before anything runs, ``run_budget_error`` refuses a run whose estimated size
(``check_cells``) is past ``MAX_RUN_CELLS``.

Values, gradients and derivative identities pass when |actual - expected| <= atol + rtol *
max(|actual|, |expected|) (``tolerance``), element by element; the finite-difference check of
every gradient always runs with the check's rtol/atol, and its finding expects the difference
and shows the gradient as the actual number. A point where a value or gradient is not finite is
a numeric error (exit status 3) unless the check says ``finite = false``, which skips such
points instead (unless every point has one).
"""

from __future__ import annotations

import fnmatch
import math
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from gradcli.engine import arrays
from gradcli.engine.ops import numpy
from gradcli.engine.vector import evaluate_vector
from gradcli.errors import ExitStatus, GradcliError, NumericError, UsageError, listed, visible
from gradcli.formulas.checks import CheckSpec, Expected, Range
from gradcli.formulas.outcomes import CheckOutcome, Finding
from gradcli.gradcheck.evaluation import EvalSettings, Result, evaluate
from gradcli.gradcheck.steps import tolerance
from gradcli.gradcheck.sweep import evaluate_sweep
from gradcli.gradcheck.sweep_grid import sweep_plan
from gradcli.gradcheck.sweep_results import Sweep
from gradcli.language.values import grid
from gradcli.limits import (
    CHECK_BLOCK_CELLS,
    CHECK_BLOCK_OVERHEAD,
    CHECK_BLOCK_POINTS,
    CHECK_FIXED_CELLS,
    MAX_RUN_CELLS,
)

MAX_POINTWISE_CHECK_POINTS = 1_000  # each point is a whole evaluation with its per-element check


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
    tally = _Tally()
    try:
        if spec.arrays:
            _judge_points(spec, tally)
        else:
            _judge_sweeps(spec, tally)
    except GradcliError as error:
        finding = Finding(f"{error.kind} error", "expr", spec.line_of("expr"), 0, 1,
                          message=error.message, status=error.status)
        return CheckOutcome(spec, 0, [finding], 0, time.perf_counter() - started)
    return tally.outcome(spec, time.perf_counter() - started)


class _Tally:
    """A check's verdicts over all its blocks: the points, those with a numeric error (how many,
    the first one and its message), and each assertion's finding with its worst ratio."""

    def __init__(self) -> None:
        self.size = 0
        self.failed = 0
        self.first: tuple[dict[str, float], str] | None = None
        self.judged: dict[str, tuple[Finding, float]] = {}  # in the order first judged

    def judge(self, found: Iterable[tuple[Finding, float]]) -> None:
        for finding, ratio in found:
            earlier = self.judged.get(finding.assertion)
            self.judged[finding.assertion] = (finding, ratio) if earlier is None else \
                _combined(earlier, (finding, ratio))

    def outcome(self, spec: CheckSpec, seconds: float) -> CheckOutcome:
        findings = self._numeric_findings(spec) + [finding for finding, _ in self.judged.values()]
        skipped = self.failed if spec.finite is False else 0
        return CheckOutcome(spec, self.size, findings, skipped, seconds)

    def _numeric_findings(self, spec: CheckSpec) -> list[Finding]:
        """``finite``: a failure (status 3) if any point has a numeric error, unless
        finite = false (and some point has none)."""
        everywhere = self.failed == self.size
        if spec.finite is False and not everywhere:
            return []
        if self.first is None:
            if spec.finite is not True:
                return []
            return [Finding("finite", "finite", spec.line_of("finite"), self.size, 0)]
        key = "finite" if spec.finite is not None else "expr"
        point, message = self.first
        return [Finding("finite", key, spec.line_of(key), self.size, self.failed,
                        worst_point=point, message=message, status=ExitStatus.NUMERIC)]


def _combined(first: tuple[Finding, float], second: tuple[Finding, float]
              ) -> tuple[Finding, float]:
    """One assertion over two blocks: failures add up; the worst point is the worse one (the
    earlier on a tie, as ``argmax`` picks within a block)."""
    (a, a_ratio), (b, b_ratio) = first, second
    worse, ratio = (b, b_ratio) if b_ratio > a_ratio else (a, a_ratio)
    failures = a.failures + b.failures
    return replace(worse, points=a.points + b.points, failures=failures,
                   status=ExitStatus.CHECK_FAILED if failures else ExitStatus.OK), ratio


class Comparison(NamedTuple):
    """Actual and expected numbers (arrays: at every point of a sweep, or every element of an
    array), and how they compare."""

    actual: Any
    expected: Any
    error: Any
    allowed: Any
    ok: Any


def _compared(spec: CheckSpec, actual: Any, expected: Any) -> Comparison:
    np = numpy()
    with np.errstate(invalid="ignore"):
        error = np.abs(actual - expected)
        allowed = tolerance(actual, expected, spec.rtol, spec.atol, 0.0, np.maximum)
        return Comparison(actual, expected, error, allowed, error <= allowed)


def _ratios(comparison: Comparison) -> Any:
    """Error / tolerance of every number; a failure's is at least 1 and a nan error's inf, so
    the largest ratio is the worst failure if there is one."""
    np = numpy()
    error, allowed, ok = comparison.error, comparison.allowed, comparison.ok
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(allowed > 0, error / allowed, np.where(error > 0, np.inf, 0.0))
        ratio = np.where(ok, ratio, np.maximum(ratio, 1.0))  # nan errors compare as failures
    return np.nan_to_num(ratio, nan=np.inf)


def _judged(spec: CheckSpec, assertion: str, key: str, comparison: Comparison, at: Any,
            points: int, failures: int, point: dict[str, float]) -> Finding:
    """The finding of ``comparison`` whose worst number is at index ``at``."""
    return Finding(
        assertion, key, spec.line_of(key), points, failures,
        worst_error=float(comparison.error[at]), worst_point=point,
        expected=float(comparison.expected[at]), actual=float(comparison.actual[at]),
        tolerance=float(comparison.allowed[at]),
        status=ExitStatus.CHECK_FAILED if failures else ExitStatus.OK)


# --- a vectorised sweep a block of points at a time -------------------------------------------

def _judge_sweeps(spec: CheckSpec, tally: _Tally) -> None:
    for columns in check_blocks(spec):
        sweep = evaluate_sweep(spec.program, columns, rtol=spec.rtol, atol=spec.atol,
                               explain_limit=0 if tally.first is not None else 1)
        tally.size += sweep.size
        failed = numpy().flatnonzero(sweep.failed)
        if failed.size:
            if tally.first is None:
                first = int(failed[0])
                tally.first = (sweep.point(first), sweep.error_message(first))
            tally.failed += int(failed.size)
        usable = ~sweep.failed
        if usable.any():
            tally.judge(_block_findings(spec, sweep, usable))


def _block_findings(spec: CheckSpec, sweep: Sweep, usable: Any) -> list[tuple[Finding, float]]:
    """Every assertion judged at the usable points of one block, with its worst ratio."""
    np = numpy()
    judged = []
    if spec.value is not None:
        judged.append(_sweep_finding(spec, sweep, usable, "value", "value", _compared(
            spec, sweep.value, _expected_values(spec.value, sweep))))
    for name, number in spec.gradients.items():
        judged.append(_sweep_finding(spec, sweep, usable, f"gradient d/d{name}",
                                     f"gradients.{name}", _compared(
                                         spec, sweep.gradients[name],
                                         np.full(sweep.size, number))))
    for name, expected in spec.derivative.items():
        judged.append(_sweep_finding(spec, sweep, usable, f"derivative d/d{name}",
                                     f"derivative.{name}", _compared(
                                         spec, sweep.gradients[name],
                                         _expected_values(expected, sweep))))
    return judged + [
        _sweep_finding(spec, sweep, usable, f"finite differences d/d{name}", "expr",
                       Comparison(sweep.gradients[name], check.numeric, check.abs_error,
                                  check.tolerance, check.ok))
        for name, check in (sweep.checks or {}).items()
    ]


def _sweep_finding(spec: CheckSpec, sweep: Sweep, usable: Any, assertion: str, key: str,
                   comparison: Comparison) -> tuple[Finding, float]:
    """Counts failures among the usable points and picks the worst (largest error/tolerance);
    returns the finding and that largest ratio."""
    np = numpy()
    rows = np.flatnonzero(usable)
    ratios = _ratios(comparison)[rows]
    at = int(np.argmax(ratios))
    worst = int(rows[at])
    failures = int((~comparison.ok[rows]).sum())
    return _judged(spec, assertion, key, comparison, worst, int(rows.size), failures,
                   sweep.point(worst)), float(ratios[at])


def _expected_values(expected: Expected, sweep: Sweep) -> Any:
    """An expected number at every point, or an expected expression evaluated at every point."""
    np = numpy()
    if expected.program is None:
        return np.full(sweep.size, expected.number)
    return evaluate_vector(expected.program, sweep.columns, gradients=False).output


# --- a point at a time, element by element ----------------------------------------------------

def _judge_points(spec: CheckSpec, tally: _Tally) -> None:
    if spec.points > MAX_POINTWISE_CHECK_POINTS:
        raise UsageError(f"check {spec.name!r} has {spec.points:,} points; a check of an array "
                         f"program may have at most {MAX_POINTWISE_CHECK_POINTS:,}",
                         hint="sweep fewer values")
    names, points = grid(_values(spec))
    settings = EvalSettings(rtol=spec.rtol, atol=spec.atol)
    for combination in points:
        point = dict(zip(names, combination, strict=True))
        tally.size += 1
        try:  # a UsageError (shapes that do not fit) is the check's error: run_check
            result = evaluate(spec.program, point, settings)
            tally.judge(_point_findings(spec, result.point, result))
        except NumericError as error:
            tally.first = tally.first or (_scalars(point), error.one_line())
            tally.failed += 1


def _point_findings(spec: CheckSpec, point: dict[str, Any], result: Any
                    ) -> list[tuple[Finding, float]]:
    """Every assertion judged at one point, element by element."""
    jacobian = not isinstance(result, Result)  # several outputs or an array output
    if jacobian and (spec.gradients or spec.derivative):
        raise UsageError(f"check {spec.name!r}: gradients and derivative are of one scalar "
                         "output; this expr has several outputs or an array output",
                         hint="assert its Jacobian: jacobian = {f = {x = ...}}")
    judged = []
    if spec.value is not None:  # a Jacobian's value is its last output's
        judged.append(_compare_elements(spec, point, "value", "value", None,
                                        _expected(spec.value, point), result.value))
    if jacobian:
        return judged + _jacobian_findings(spec, point, result)
    for name, expected in spec.gradients.items():
        judged.append(_compare_elements(spec, point, f"gradient d/d{name}", f"gradients.{name}",
                                        name, expected, result.gradients[name]))
    for name, expected in spec.derivative.items():
        judged.append(_compare_elements(spec, point, f"derivative d/d{name}",
                                        f"derivative.{name}", name, _expected(expected, point),
                                        result.gradients[name]))
    conditioning = result.check.conditioning if result.check else None
    for name, check in (result.check.gradients.items() if result.check else ()):
        numeric = check.numeric if check.numeric is not None else math.nan
        finding, ratio = _element_finding(
            spec, point, f"finite differences d/d{name}", "expr",
            _single(check.analytic, numeric, check.tolerance, check.ok),
            name, getattr(check, "where", ()))
        if conditioning is not None and not check.ok:
            finding.note = conditioning.cause()
        judged.append((finding, ratio))
    return judged


def _jacobian_findings(spec: CheckSpec, point: dict[str, Any], result: Any
                       ) -> list[tuple[Finding, float]]:
    """``jacobian`` and the Jacobian's check (every block)."""
    judged = []
    for label, row in spec.jacobian.items():
        for name, expected in row.items():
            if isinstance(expected, Expected):
                expected = _expected(expected, point)
            judged.append(_compare_elements(spec, point, f"jacobian {_d(label, name)}",
                                            f"jacobian.{label}", None, expected,
                                            result.jacobian[label][name]))
    for label, row in (result.check.blocks.items() if result.check else ()):
        for name, entry in row.items():
            allowed = tolerance(entry.analytic, entry.numeric, spec.rtol, spec.atol)
            judged.append(_element_finding(
                spec, point, f"finite differences {_d(label, name)}", "expr",
                _single(entry.analytic, entry.numeric, allowed, not entry.failed)))
    return judged


def _single(actual: float, expected: float, allowed: float, ok: bool) -> Comparison:
    """A finite-difference check's verdict on its worst element, as a comparison of shape ()."""
    np = numpy()
    return Comparison(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float),
                      np.asarray(abs(actual - expected), dtype=float),
                      np.asarray(allowed, dtype=float), np.asarray(ok))


def _compare_elements(spec: CheckSpec, point: dict[str, Any], assertion: str, key: str,
                      name: str | None, expected: Any, actual: Any) -> tuple[Finding, float]:
    """``actual`` against ``expected`` (of its shape, or one number for every element); the
    worst element of a gradient is named as ``name``'s element."""
    np = numpy()
    expected, actual = np.asarray(expected, dtype=float), np.asarray(actual, dtype=float)
    if expected.shape != actual.shape and expected.ndim:
        raise UsageError(f"check {spec.name!r}: {key} has shape "
                         f"{arrays.shape_text(expected.shape)}, the gradient "
                         f"{arrays.shape_text(actual.shape)}", hint="give it the same shape")
    comparison = _compared(spec, actual, np.broadcast_to(expected, actual.shape))
    ratios = _ratios(comparison)
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(ratios)), actual.shape))
    return _element_finding(spec, point, assertion, key, comparison, name, worst, ratios)


def _element_finding(spec: CheckSpec, point: dict[str, Any], assertion: str, key: str,
                     comparison: Comparison, name: str | None = None,
                     where: tuple[int, ...] = (), ratios: Any = None) -> tuple[Finding, float]:
    """The finding at one point: it fails if any element does; its worst element is at
    ``where`` of the comparison (or of ``name``'s value, for a check's worst element)."""
    at = where if comparison.error.ndim else ()
    ratio = float((_ratios(comparison) if ratios is None else ratios)[at])
    failures = int(not comparison.ok.all())
    named = _scalars(point)
    if where and name is not None:
        named[f"{name}[{', '.join(map(str, where))}]"] = float(numpy().asarray(point[name])[where])
    return _judged(spec, assertion, key, comparison, at, 1, failures, named), ratio


def _d(label: str, name: str) -> str:
    """``df/dx``, ``d(W@x)/dx``: a Jacobian block's name."""
    return f"d{label}/d{name}" if label.isidentifier() else f"d({label})/d{name}"


def _scalars(point: dict[str, Any]) -> dict[str, float]:
    """The point's scalar variables (arrays are named by their worst element instead)."""
    return {name: float(value) for name, value in point.items() if not hasattr(value, "ndim")}


def _expected(expected: Expected, point: dict[str, Any]) -> Any:
    """An expected number, or the value of an expected expression at ``point`` (any shape), on
    the array path without gradients."""
    if expected.program is None:
        return expected.number
    program = expected.program
    arrays.bind(program, {name: point[name] for name in program.variables if name in point})
    return arrays.forward(program.nodes)


def block_points(spec: CheckSpec) -> int:
    """Points of ``spec`` evaluated at a time: at most ``CHECK_BLOCK_POINTS``, and at most
    ``CHECK_BLOCK_CELLS`` points x nodes (its expr's and its expected expressions')."""
    nodes = len(spec.program.nodes) + _expected_nodes(spec)
    return max(1, min(CHECK_BLOCK_POINTS, CHECK_BLOCK_CELLS // nodes))


def check_blocks(spec: CheckSpec) -> Iterator[dict[str, Any]]:
    """The points of a check's grid (``SweepPlan``: the first variable varies slowest, as
    ``values.grid``), a block of ``block_points`` at a time: one array per input variable of its
    program. A run's size is bounded by ``run_budget_error``, not by a sweep's limits."""
    plan = sweep_plan(spec.program, _values(spec), max_points=sys.maxsize, max_cells=sys.maxsize)
    return plan.blocks(block_points(spec))


def _values(spec: CheckSpec) -> dict[str, Any]:
    """The check's values of its program's variables, its ranges expanded."""
    return {name: value.expand() if isinstance(value, Range) else value
            for name, value in spec.values.items() if name in spec.program.variables}


def check_cells(spec: CheckSpec) -> int:
    """A check's estimated size in cells, one node evaluated at one point: nodes x points x
    passes. Its expr is evaluated twice for the value and gradients (forward and backward) and
    twice more per variable for the finite differences; each expected expression once. Every
    block of points also counts ``CHECK_BLOCK_OVERHEAD`` points more: a node costs as much at
    one point as at that many (NumPy's cost per call), and every check ``CHECK_FIXED_CELLS``
    more (what it costs beyond its nodes: ~2 ms). A check with arrays counts the array check's
    work instead (``_array_cells``)."""
    if spec.arrays:
        return _array_cells(spec)
    passes = 2 + 2 * len(spec.program.variables)
    points = spec.points
    blocks = -(-points // block_points(spec))
    return ((passes * len(spec.program.nodes) + _expected_nodes(spec))
            * (points + CHECK_BLOCK_OVERHEAD * blocks) + CHECK_FIXED_CELLS)


def _array_cells(spec: CheckSpec) -> int:
    """An array check's size in cells: at each point the array check's own measure of work
    (``elements.estimated_work``: an evaluation, and the checks of every node's gradient within
    its budget), each node taken as large as the largest value given, ``WORK_PER_CELL`` units
    of work to a cell."""
    from gradcli.gradcheck.elements import WORK_PER_CELL, estimated_work

    nodes = len(spec.program.nodes) + _expected_nodes(spec)
    largest = max((int(getattr(v, "size", 1)) for v in spec.values.values()), default=1)
    work = estimated_work(nodes, largest, len(spec.program.nodes))
    return spec.points * (work // WORK_PER_CELL) + CHECK_FIXED_CELLS


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


