"""A whole sweep: its grid (``sweep_plan``), block by block (evaluated on threads a few ahead of
the one being written), and ``SweepSummary``, what the table needs of all the points."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gradcli.engine.graph import Program
from gradcli.engine.ops import numpy
from gradcli.errors import ExitStatus, UsageError
from gradcli.gradcheck.check import DEFAULT_ATOL, DEFAULT_RTOL
from gradcli.gradcheck.evaluation import require_values
from gradcli.gradcheck.sweep import (
    GradientSweepCheck,
    RecheckBudget,
    Sweep,
    finish_sweep,
    vector_sweep,
)
from gradcli.language.values import Value, runs_on_arrays, validate_values
from gradcli.limits import (
    MAX_SWEEP_CELLS,
    MAX_SWEEP_POINTS,
    SWEEP_BLOCK_CELLS,
    SWEEP_BLOCK_POINTS,
    SWEEP_THREADS,
    default_jobs,
)


def stream_sweep(
    program: Program,
    values: Mapping[str, Value],
    *,
    check: bool = True,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    reconcile: bool = True,
    points: int | None = None,
    threads: int | None = None,
) -> Iterator[Sweep]:
    """Every block of the grid of ``values`` evaluated (as ``evaluate_sweep``), in grid order:
    the grid is checked at the call; blocks of ``points`` are evaluated on ``threads`` threads,
    at most one block more ahead, and finished (``finish_sweep``, one ``RecheckBudget``) in the
    caller's thread. Close the iterator (or run it to the end) to stop the threads."""
    plan = sweep_plan(program, values)
    threads = threads or min(default_jobs(), SWEEP_THREADS)
    return _stream(plan, dict(check=check, rtol=rtol, atol=atol, reconcile=reconcile),
                   points, threads)


def _stream(plan: SweepPlan, options: dict[str, Any], points: int | None,
            threads: int) -> Iterator[Sweep]:
    budget = RecheckBudget()
    size = points or block_points(plan.program)
    blocks = plan.blocks(size)
    if plan.size <= size or threads < 2:  # one block, or no threads: no pool to start
        for columns in blocks:
            yield _finished(vector_sweep(plan.program, columns, **options), budget)
        return
    from concurrent.futures import Future, ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gradcli-sweep")
    pending: deque[Future[Sweep]] = deque()
    try:
        for columns in blocks:
            pending.append(pool.submit(vector_sweep, plan.program, columns, **options))
            if len(pending) > threads:
                yield _finished(pending.popleft().result(), budget)
        while pending:
            yield _finished(pending.popleft().result(), budget)
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True)


def _finished(sweep: Sweep, budget: RecheckBudget) -> Sweep:
    """``sweep`` finished in the caller's thread (``finish_sweep``, the stream's one budget)."""
    finish_sweep(sweep, None, budget)
    return sweep


class PointMask:
    """A bool per point of a sweep that is not held whole: the first points as an array
    (``head``), the others only counted, by kind (``failed``; ``disagree``: not failed, the
    check failed; ``ok``). Enough for what a summary asks of ``Sweep.failed`` and
    ``Sweep.check_ok``: a head point, ``sum``, ``~`` and ``&``."""

    KINDS = frozenset({"failed", "disagree", "ok"})

    def __init__(self, head: Any, kinds: frozenset[str], counts: Mapping[str, int]) -> None:
        self.head, self.kinds, self.counts = head, kinds, counts

    def __getitem__(self, index: int) -> Any:
        if not 0 <= index < self.head.size:
            raise IndexError(f"point {index} is not among the {self.head.size} kept")
        return self.head[index]

    def __invert__(self) -> PointMask:
        return PointMask(~self.head, self.KINDS - self.kinds, self.counts)

    def __and__(self, other: PointMask) -> PointMask:
        return PointMask(self.head & other.head, self.kinds & other.kinds, self.counts)

    def sum(self) -> int:
        return int(self.head.sum()) + sum(self.counts[kind] for kind in self.kinds)


class SweepSummary:
    """What a sweep's table needs, gathered block by block (``add``): the first ``keep`` points
    in full, and counts of failures and disagreements. It reads like the ``Sweep`` of all the
    points for ``output.sweep_views.sweep_view``."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.head: Sweep | None = None
        self.size = 0
        self.failures = 0  # points where a value or gradient is not finite
        self.disagreements = 0  # points where the check failed (and no value failed)
        self.rechecked = 0
        self.unsettled = 0
        self._tail = {"failed": 0, "disagree": 0, "ok": 0}

    def add(self, sweep: Sweep) -> None:
        failed, ok = sweep.failed, sweep.check_ok
        disagree = ~ok & ~failed
        self.size += sweep.size
        self.failures += int(failed.sum())
        self.disagreements += int(disagree.sum())
        self.rechecked += sweep.rechecked
        self.unsettled += sweep.unsettled
        room = self.keep - (0 if self.head is None else self.head.size)
        if room > 0:
            self.head = _joined([sweep] if self.head is None else [self.head, sweep], self.keep)
        rest = slice(max(room, 0), None)
        self._tail["failed"] += int(failed[rest].sum())
        self._tail["disagree"] += int(disagree[rest].sum())
        self._tail["ok"] += int((ok[rest]).sum())

    # --- what sweep_view reads of a Sweep ---

    @property
    def status(self) -> ExitStatus:
        if self.failures:
            return ExitStatus.NUMERIC
        return ExitStatus.CHECK_FAILED if self.disagreements else ExitStatus.OK

    @property
    def failed(self) -> PointMask:
        return PointMask(self._shown.failed, frozenset({"failed"}), self._tail)

    @property
    def check_ok(self) -> PointMask:
        return PointMask(self._shown.check_ok, frozenset({"ok"}), self._tail)

    @property
    def _shown(self) -> Sweep:
        assert self.head is not None, "no block added"
        return self.head

    # the first ``keep`` points: the head's (typed, so that a reader and mypy see them)
    @property
    def columns(self) -> dict[str, Any]:
        return self._shown.columns

    @property
    def value(self) -> Any:
        return self._shown.value

    @property
    def gradients(self) -> dict[str, Any]:
        return self._shown.gradients

    @property
    def checks(self) -> dict[str, GradientSweepCheck] | None:
        return self._shown.checks

    @property
    def rtol(self) -> float:
        return self._shown.rtol

    @property
    def atol(self) -> float:
        return self._shown.atol

    def error_message(self, index: int) -> str:
        return self._shown.error_message(index)


def _joined(parts: list[Sweep], count: int) -> Sweep:
    """The first ``count`` points of ``parts``, one after the other (copies: a block can go)."""
    np = numpy()

    def first(arrays: list[Any]) -> Any:
        return np.concatenate([array[:count] for array in arrays])[:count]

    errors, start = {}, 0
    for part in parts:
        errors.update({start + i: e for i, e in part.errors.items() if start + i < count})
        start += part.size
    a = parts[0]
    return Sweep(
        program=a.program,
        columns={name: first([p.columns[name] for p in parts]) for name in a.columns},
        value=first([p.value for p in parts]),
        gradients={name: first([p.gradients[name] for p in parts]) for name in a.gradients},
        failed=first([p.failed for p in parts]),
        errors=errors,
        checks=None if any(p.checks is None for p in parts) else {
            name: GradientSweepCheck(*(first([getattr(p.checks[name], f) for p in parts])
                                       for f in ("numeric", "abs_error", "tolerance", "ok")))
            for name in a.checks},
        rtol=a.rtol,
        atol=a.atol,
    )


# --- the grid: every combination of the swept values (the first varying slowest), checked
# against the size limits up front and made a block of points at a time ---------------------------

@dataclass(frozen=True)
class SweepPlan:
    """A validated grid: the swept values of each variable (``axes``, first varies slowest), the
    fixed ones, and its size. Its points are made a block at a time (``blocks``)."""

    program: Program
    axes: dict[str, Any]  # name -> array of its values (the swept variables, in grid order)
    fixed: dict[str, float]  # every other input variable of the program: given or its default
    size: int

    def blocks(self, points: int) -> Iterator[dict[str, Any]]:
        """The grid's points, ``points`` at a time: one array per input variable of the
        program, in the program's order."""
        np = numpy()
        for start in range(0, self.size, points):
            count = min(self.size, start + points) - start
            given = {}
            rest = np.arange(start, start + count)
            for name, axis in reversed(self.axes.items()):  # the last one varies fastest
                rest, at = np.divmod(rest, axis.size)
                given[name] = axis[at]
            yield {name: given[name] if name in given else np.full(count, self.fixed[name])
                   for name in self.program.variables}


def sweep_plan(program: Program, values: Mapping[str, Value], *,
               max_points: int = MAX_SWEEP_POINTS, max_cells: int = MAX_SWEEP_CELLS) -> SweepPlan:
    """The grid of ``values`` for ``program`` (names it does not use ignored), checked: a
    UsageError for a value that is not a finite number, a variable with no value, or a grid past
    ``max_points`` points or ``max_cells`` points x nodes (a cluster allows more)."""
    np = numpy()
    validate_values(values)
    if runs_on_arrays(program, values):
        what = "several outputs" if program.outputs else "arrays"
        raise UsageError(f"sweeps vary scalar programs; this one has {what}",
                         hint="evaluate an array program one point at a time (a batch: "
                              "gradcli eval - with one program per line)")
    used = {name: value for name, value in values.items() if name in program.variables}
    require_values(program, used)
    count = math.prod(len(v) if isinstance(v, tuple) else 1 for v in used.values())
    if count > max_points:
        raise UsageError(f"the sweep has {count:,} points; at most {max_points:,} fit",
                         hint="use fewer values per variable")
    nodes = len(program.nodes)
    if count * nodes > max_cells:
        raise UsageError(
            f"the sweep has {count:,} points of a {nodes:,}-node program: {count * nodes:,} "
            f"cells (points x nodes); at most {max_cells:,} fit",
            hint="use fewer values per variable, or sweep a smaller program")
    axes = {name: np.asarray(value, dtype=float) for name, value in used.items()
            if isinstance(value, tuple)}
    fixed = {name: float(used.get(name, program.defaults.get(name, math.nan)))
             for name in program.variables if name not in axes}
    return SweepPlan(program, axes, fixed, count)


def block_points(program: Program) -> int:
    """Points evaluated at a time: at most ``SWEEP_BLOCK_POINTS``, and at most
    ``SWEEP_BLOCK_CELLS`` points x nodes (the check keeps every node's value of a block)."""
    return max(1, min(SWEEP_BLOCK_POINTS, SWEEP_BLOCK_CELLS // max(1, len(program.nodes))))


def sweep_columns(program: Program, values: Mapping[str, Value]) -> dict[str, Any]:
    """The whole grid of ``values`` as one array per input variable of ``program`` (defaults
    filled in): every point at once, for small grids and tests (``SweepPlan.blocks`` streams)."""
    plan = sweep_plan(program, values)
    return next(plan.blocks(plan.size))
