"""Running checks: a scalar check is judged a vectorised block of points at a time
(``check_blocks``), a check with arrays (``CheckSpec.arrays``) a point at a time with its
per-element finite-difference check, and each assertion's findings over the blocks or points
are combined into one ``Finding`` (failures add up, the worst point is the worst of all).
Numbers pass when |actual - expected| <= ``tolerance``; a point with a value or gradient that is
not finite is a numeric error unless the check says ``finite = false``. ``run_budget_error``
refuses a run whose estimated size (``check_cells``) is past ``MAX_RUN_CELLS``.
"""

from __future__ import annotations

import fnmatch
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from gradcli.engine import arrays
from gradcli.engine.notation import derivative_label
from gradcli.engine.ops import numpy
from gradcli.engine.vector import evaluate_vector
from gradcli.errors import ExitStatus, GradcliError, NumericError, UsageError, listed, visible
from gradcli.formulas.outcomes import CheckOutcome, CheckSpec, Expected, Finding, Range
from gradcli.gradcheck.evaluation import EvalSettings, Result, evaluate
from gradcli.gradcheck.steps import tolerance
from gradcli.gradcheck.sweep import Sweep, evaluate_sweep
from gradcli.gradcheck.sweep_stream import sweep_plan
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
    """Evaluate one check at all its points and judge every assertion; the check's own mistake
    (shapes that do not fit) is its finding with the error's status, and the other checks run."""
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
    """A check's verdicts over its blocks: the points, those with a numeric error (how many, the
    first with its message), and each assertion's finding with its worst ratio."""

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
        """``finite``: a failure if any point has a numeric error, unless finite = false (and
        some point has none)."""
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
    earlier on a tie, as ``argmax``)."""
    (a, a_ratio), (b, b_ratio) = first, second
    worse, ratio = (b, b_ratio) if b_ratio > a_ratio else (a, a_ratio)
    failures = a.failures + b.failures
    return replace(worse, points=a.points + b.points, failures=failures,
                   status=ExitStatus.CHECK_FAILED if failures else ExitStatus.OK), ratio


class Comparison(NamedTuple):
    """Actual and expected numbers (at every point, or element), and how they compare."""

    actual: Any
    expected: Any
    error: Any
    allowed: Any
    ok: Any


def _compared(spec: CheckSpec, actual: Any, expected: Any) -> Comparison:
    """An expected value that is not a finite number (an expression, log(x) at 0) never
    passes: its tolerance would be infinite too, and inf <= inf."""
    np = numpy()
    with np.errstate(invalid="ignore"):
        error = np.abs(actual - expected)
        allowed = tolerance(actual, expected, spec.rtol, spec.atol, 0.0, np.maximum)
        return Comparison(actual, expected, error, allowed,
                          (error <= allowed) & np.isfinite(expected))


def _ratios(comparison: Comparison) -> Any:
    """Error / tolerance of every number; a failure's is at least 1, and that of a nan error
    or of an expected value that is not finite inf, so the largest ratio is the worst failure
    if there is one (the first point where the expected expression has no value)."""
    np = numpy()
    error, allowed, ok = comparison.error, comparison.allowed, comparison.ok
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(allowed > 0, error / allowed, np.where(error > 0, np.inf, 0.0))
        ratio = np.where(ok, ratio, np.maximum(ratio, 1.0))  # nan errors compare as failures
        ratio = np.where(np.isfinite(comparison.expected), ratio, np.inf)
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


def _assertions(spec: CheckSpec, value: Any, gradients: Mapping[str, Any],
                expected: Callable[[Expected], Any]) -> Iterator[tuple[str, str, Any, Any, Any]]:
    """(assertion, key, variable, expected, actual) of ``value``, ``gradients``, ``derivative``."""
    if spec.value is not None:
        yield "value", "value", None, expected(spec.value), value
    for name, number in spec.gradients.items():
        yield f"gradient d/d{name}", f"gradients.{name}", name, number, gradients[name]
    for name, given in spec.derivative.items():
        yield (f"derivative d/d{name}", f"derivative.{name}", name, expected(given),
               gradients[name])


def _block_findings(spec: CheckSpec, sweep: Sweep, usable: Any) -> list[tuple[Finding, float]]:
    """Every assertion judged at the usable points of one block, with its worst ratio."""
    np = numpy()
    judged = [_sweep_finding(spec, sweep, usable, assertion, key, _compared(
        spec, actual, np.broadcast_to(expected, actual.shape)))
              for assertion, key, _, expected, actual in _assertions(
                  spec, sweep.value, sweep.gradients, lambda e: _expected_values(e, sweep))]
    return judged + [
        _sweep_finding(spec, sweep, usable, f"finite differences d/d{name}", "expr",
                       Comparison(sweep.gradients[name], check.numeric, check.abs_error,
                                  check.tolerance, check.ok))
        for name, check in (sweep.checks or {}).items()
    ]


def _sweep_finding(spec: CheckSpec, sweep: Sweep, usable: Any, assertion: str, key: str,
                   comparison: Comparison) -> tuple[Finding, float]:
    """The finding over the usable points and its worst (largest) error / tolerance ratio."""
    np = numpy()
    rows = np.flatnonzero(usable)
    ratios = _ratios(comparison)[rows]
    at = int(np.argmax(ratios))
    worst = int(rows[at])
    failures = int((~comparison.ok[rows]).sum())
    return _judged(spec, assertion, key, comparison, worst, int(rows.size), failures,
                   sweep.point(worst)), float(ratios[at])


def _expected_values(expected: Expected, sweep: Sweep) -> Any:
    """An expected number, or an expected expression evaluated at every point."""
    if expected.program is None:
        return expected.number
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
    jacobian = not isinstance(result, Result)  # an array output (several: files.py refuses)
    if jacobian and (spec.gradients or spec.derivative):
        raise UsageError(f"check {spec.name!r}: gradients and derivative are of one scalar "
                         "output; this expr has an array output",
                         hint="assert its Jacobian: jacobian = {f = {x = ...}}")
    judged = [_compare_elements(spec, point, *assertion) for assertion in _assertions(
        spec, result.value, {} if jacobian else result.gradients, lambda e: _expected(e, point))]
    if jacobian:  # value: the array output's
        return judged + _jacobian_findings(spec, point, result)
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
            block = derivative_label((name,), label)
            actual = result.jacobian[label][name]  # the output's shape, then name's
            outer = numpy().ndim(actual) - numpy().ndim(point[name])
            judged.append(_compare_elements(spec, point, f"jacobian {block}", f"jacobian.{label}",
                                            name, expected, actual, outer))
    for label, row in (result.check.blocks.items() if result.check else ()):
        for name, entry in row.items():
            judged.append(_element_finding(
                spec, point, f"finite differences {derivative_label((name,), label)}", "expr",
                _single(entry.analytic, entry.numeric, entry.tolerance, not entry.failed)))
    return judged


def _single(actual: float, expected: float, allowed: float, ok: bool) -> Comparison:
    """A finite-difference check's verdict on its worst element, as a comparison of shape ()."""
    np = numpy()
    return Comparison(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float),
                      np.asarray(abs(actual - expected), dtype=float),
                      np.asarray(allowed, dtype=float), np.asarray(ok))


def _compare_elements(spec: CheckSpec, point: dict[str, Any], assertion: str, key: str,
                      name: str | None, expected: Any, actual: Any,
                      outer: int = 0) -> tuple[Finding, float]:
    """``actual`` against ``expected`` (of its shape, or one number for every element); the
    worst element of a gradient is named as ``name``'s element (a Jacobian block's: past its
    ``outer`` axes, the output's)."""
    np = numpy()
    expected, actual = np.asarray(expected, dtype=float), np.asarray(actual, dtype=float)
    if expected.shape != actual.shape and expected.ndim:
        raise UsageError(f"check {spec.name!r}: {key} has shape "
                         f"{arrays.shape_text(expected.shape)}, the {assertion} "
                         f"{arrays.shape_text(actual.shape)}", hint="give it the same shape")
    comparison = _compared(spec, actual, np.broadcast_to(expected, actual.shape))
    ratios = _ratios(comparison)
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(ratios)), actual.shape))
    return _element_finding(spec, point, assertion, key, comparison, name, worst, ratios, outer)


def _element_finding(spec: CheckSpec, point: dict[str, Any], assertion: str, key: str,
                     comparison: Comparison, name: str | None = None,
                     where: tuple[int, ...] = (), ratios: Any = None,
                     outer: int = 0) -> tuple[Finding, float]:
    """The finding at one point: it fails if any element does; its worst element is at
    ``where`` (of the comparison, or of ``name``'s value past ``outer`` axes)."""
    at = where if comparison.error.ndim else ()
    ratio = float((_ratios(comparison) if ratios is None else ratios)[at])
    failures = int(not comparison.ok.all())
    named = _scalars(point)
    element = where[outer:]
    if element and name is not None:
        value = float(numpy().asarray(point[name])[element])
        named[f"{name}[{', '.join(map(str, element))}]"] = value
    return _judged(spec, assertion, key, comparison, at, 1, failures, named), ratio


def _scalars(point: dict[str, Any]) -> dict[str, float]:
    """The point's scalar variables (arrays are named by their worst element instead)."""
    return {name: float(value) for name, value in point.items() if not hasattr(value, "ndim")}


def _expected(expected: Expected, point: dict[str, Any]) -> Any:
    """An expected number, or an expected expression's value at ``point`` (any shape); NaN
    where it has none (log(x) at 0), which never passes (``_compared``), as in a sweep."""
    if expected.program is None:
        return expected.number
    program = expected.program
    arrays.bind(program, {name: point[name] for name in program.variables if name in point})
    try:
        return arrays.forward(program.nodes, program.outputs)
    except NumericError:
        return math.nan


def block_points(spec: CheckSpec) -> int:
    """Points of ``spec`` evaluated at a time: at most ``CHECK_BLOCK_POINTS``, and at most
    ``CHECK_BLOCK_CELLS`` points x nodes (its expr's and its expected expressions')."""
    nodes = len(spec.program.nodes) + _expected_nodes(spec)
    return max(1, min(CHECK_BLOCK_POINTS, CHECK_BLOCK_CELLS // nodes))


def check_blocks(spec: CheckSpec) -> Iterator[dict[str, Any]]:
    """The points of a check's grid (the first variable slowest, as ``values.grid``), a block
    of ``block_points`` at a time (a run's size is bounded by ``run_budget_error`` instead)."""
    plan = sweep_plan(spec.program, _values(spec), max_points=sys.maxsize, max_cells=sys.maxsize)
    return plan.blocks(block_points(spec))


def _values(spec: CheckSpec) -> dict[str, Any]:
    """The check's values of its program's variables, its ranges expanded."""
    return {name: value.expand() if isinstance(value, Range) else value
            for name, value in spec.values.items() if name in spec.program.variables}


def check_cells(spec: CheckSpec) -> int:
    """A check's estimated size in cells (one node at one point): nodes x points x passes, two
    passes for value and gradients and two per variable for the finite differences, expected
    expressions once; each block adds ``CHECK_BLOCK_OVERHEAD`` points (NumPy's cost per call)
    and each check ``CHECK_FIXED_CELLS``. A check with arrays counts ``_array_cells``."""
    if spec.arrays:
        return _array_cells(spec)
    passes = 2 + 2 * len(spec.program.variables)
    points = spec.points
    blocks = -(-points // block_points(spec))
    return ((passes * len(spec.program.nodes) + _expected_nodes(spec))
            * (points + CHECK_BLOCK_OVERHEAD * blocks) + CHECK_FIXED_CELLS)


def _array_cells(spec: CheckSpec) -> int:
    """An array check's size in cells: at each point the array check's own measure of work
    (``elements.estimated_work``), each node as large as the largest value given."""
    from gradcli.gradcheck.elements import WORK_PER_CELL, estimated_work

    nodes = len(spec.program.nodes) + _expected_nodes(spec)
    largest = max((int(getattr(v, "size", 1)) for v in spec.values.values()), default=1)
    work = estimated_work(nodes, largest, len(spec.program.nodes))
    return spec.points * (work // WORK_PER_CELL) + CHECK_FIXED_CELLS


def _expected_nodes(spec: CheckSpec) -> int:
    expected = [spec.value, *spec.derivative.values()]
    return sum(len(e.program.nodes) for e in expected if e is not None and e.program is not None)


def run_budget_error(specs: Sequence[CheckSpec], limit: int = MAX_RUN_CELLS) -> UsageError | None:
    """A UsageError if the checks of one run are estimated past ``limit`` cells, else None."""
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


