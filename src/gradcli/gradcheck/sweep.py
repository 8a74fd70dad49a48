"""A program at many points at once: values, gradients and the finite-difference check, vectorised.

A sweep is the grid of the given values (several swept variables form every combination, the
first varying slowest), evaluated a block of points at a time: ``stream_sweep`` yields one
``Sweep`` per block, in grid order, so that memory does not grow with the number of points (a
block holds at most ``SWEEP_BLOCK_POINTS`` points and ``SWEEP_BLOCK_CELLS`` points x nodes).
Blocks are evaluated on threads (NumPy lets go of the GIL), a few ahead of the one being written;
CSV and JSON Lines are written block by block, and the table needs only ``SweepSummary``: the
first rows, counts, the worst point and the ranges, gathered block by block. A sweep larger than
``MAX_SWEEP_POINTS`` points or ``MAX_SWEEP_CELLS`` points x nodes is refused up front
(``sweep_plan``). ``evaluate_sweep`` evaluates given columns at once (one block: what
``gradcli check`` does per block of a check; ``sweep_columns`` gives every point of a grid).

In a block, the value and every reverse-mode gradient come from ``vector.evaluate_vector``, and
each input gradient is checked against finite differences with the step policy the scalar check
uses for one point (``steps``: its stencils, steps, noise allowance and tolerance) -- on whole
arrays: each variable costs two extra evaluations of the graph for all points, never a Python
loop per point.

Agreement with one point (``gradcli eval`` at that point, the scalar path): NumPy's
transcendental functions may round differently from libm's by a few ulp, and a program can
amplify that without bound (``sin(cosh(atan2(y, 2))**x)`` at x = 700 has a value of about
sin(4e31)). With ``reconcile`` (``stream_sweep``'s default, so every ``gradcli eval`` sweep;
``evaluate_sweep`` leaves it off unless asked), each block is also evaluated ``RUNS`` more
times with every result that NumPy may round differently perturbed by the most it may differ
(``perturbation.Perturbation``); a
point where that moves the value or a gradient by more than ``AGREEMENT`` relative (after a
safety factor), or where it could flip the check's verdict, is *unsure* and is re-evaluated on
the scalar path -- value, gradients and check -- so that it prints exactly what one point prints.
At most ``SWEEP_RECHECK_BUDGET`` node computations per sweep are spent on that; the points past
it keep NumPy's results and are counted in ``unsettled`` (``gradcli eval`` says so on stderr).

A point where a value or gradient is not finite is marked in ``failed``; the exact message (which
names the node) comes from re-running just that point on the scalar path (``api.evaluate``).
NumPy is imported on first use (``ops.numpy``), so gradcli starts without it.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gradcli.engine.graph import Node, Program
from gradcli.engine.notation import format_number
from gradcli.engine.ops import numpy
from gradcli.engine.perturbation import Perturbation
from gradcli.engine.replay import Replayer
from gradcli.engine.vector import evaluate_vector
from gradcli.errors import ExitStatus, GradcliError, NumericError, UsageError
from gradcli.gradcheck.evaluation import evaluate, require_values
from gradcli.gradcheck.point import DEFAULT_ATOL, DEFAULT_RTOL, check_node
from gradcli.gradcheck.steps import (
    SHRINKS,
    STENCILS,
    base_step,
    judge,
    noise_allowance,
    quotient,
    step,
)
from gradcli.language.values import Value, validate_values
from gradcli.limits import (
    MAX_SWEEP_CELLS,
    MAX_SWEEP_POINTS,
    SWEEP_BLOCK_CELLS,
    SWEEP_BLOCK_POINTS,
    SWEEP_RECHECK_BUDGET,
    SWEEP_THREADS,
    default_jobs,
)

# Agreement with the scalar path (module docstring): a value or gradient whose perturbed runs
# move it by more than AGREEMENT relative, times SAFETY, is re-evaluated on the scalar path.
AGREEMENT = 1e-9
SAFETY = 16.0  # the runs' random signs can cancel what the worst case adds up
RUNS = 2
# A stencil's estimate moves by at most (sum of |weights|) / 2 = 4 (one-sided) times the change
# of f, divided by h.
_STENCIL_GAIN = 4.0


@dataclass
class GradientSweepCheck:
    """One input gradient compared with finite differences at every point (arrays of the size)."""

    numeric: Any  # nan where no difference could be evaluated
    abs_error: Any  # inf where no difference could be evaluated
    tolerance: Any
    ok: Any  # bool array


@dataclass
class Sweep:
    """A program evaluated at ``size`` points; every array is indexed by point."""

    program: Program
    columns: dict[str, Any]  # each input variable's coordinate at every point
    value: Any
    gradients: dict[str, Any]
    failed: Any  # bool: a value or gradient is not finite at that point
    errors: dict[int, GradcliError] = field(default_factory=dict)  # scalar message per failed point
    checks: dict[str, GradientSweepCheck] | None = None  # None: check not run
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    # Agreement with the scalar path (module docstring); None where not measured.
    unsure: Any = None  # bool: NumPy's result may differ too much from the scalar path's here
    value_spread: Any = None  # how far the value may be from the scalar path's (absolute)
    gradient_spreads: dict[str, Any] | None = None  # the same per gradient
    rechecked: int = 0  # unsure points re-evaluated on the scalar path
    unsettled: int = 0  # unsure points left as NumPy computed them (the budget ran out)

    @property
    def size(self) -> int:
        return int(self.failed.size)

    @property
    def check_ok(self) -> Any:
        """Bool per point: every gradient agrees with finite differences (False where failed)."""
        ok = ~self.failed
        for check in (self.checks or {}).values():
            ok = ok & check.ok
        return ok

    @property
    def status(self) -> ExitStatus:
        """3 if any point has a numeric error, else 1 if any check disagrees, else 0."""
        if self.failed.any():
            return ExitStatus.NUMERIC
        if self.checks is not None and not self.check_ok.all():
            return ExitStatus.CHECK_FAILED
        return ExitStatus.OK

    def point(self, index: int) -> dict[str, float]:
        return {name: float(column[index]) for name, column in self.columns.items()}

    def error_message(self, index: int) -> str:
        error = self.errors.get(index)
        return error.one_line() if error else "numeric error: a value or gradient is not finite"


# --- the grid, a block at a time -----------------------------------------------------------------

@dataclass(frozen=True)
class SweepPlan:
    """A validated grid: the swept values of each variable (``axes``, first varies slowest), the
    fixed ones, and its size. Its points are made a block at a time (``blocks``)."""

    program: Program
    axes: dict[str, Any]  # name -> array of its values (the swept variables, in grid order)
    fixed: dict[str, float]  # every other input variable of the program: given or its default
    size: int

    def blocks(self, points: int | None = None) -> Iterator[dict[str, Any]]:
        """The grid's points, ``points`` at a time (``block_points`` by default): one array per
        input variable of the program, in the program's order."""
        np = numpy()
        step_ = points or block_points(self.program)
        for start in range(0, self.size, step_):
            count = min(self.size, start + step_) - start
            given = {}
            rest = np.arange(start, start + count)
            for name, axis in reversed(self.axes.items()):  # the last one varies fastest
                rest, at = np.divmod(rest, axis.size)
                given[name] = axis[at]
            yield {name: given[name] if name in given else np.full(count, self.fixed[name])
                   for name in self.program.variables}


def sweep_plan(program: Program, values: Mapping[str, Value], *,
               max_points: int = MAX_SWEEP_POINTS, max_cells: int = MAX_SWEEP_CELLS) -> SweepPlan:
    """The grid of ``values`` for ``program``, checked: a UsageError for a value that is not a
    finite number, a variable with no value, or a grid past ``max_points`` points or
    ``max_cells`` points x nodes (the message states the size; a cluster allows more).

    Values of names the program does not use are ignored, as ``evaluate`` does.
    """
    np = numpy()
    validate_values(values)
    if program.arrays or any(hasattr(value, "ndim") for value in values.values()):
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


def sweep_blocks(program: Program, values: Mapping[str, Value],
                 points: int | None = None) -> Iterator[dict[str, Any]]:
    """``sweep_plan(program, values).blocks(points)``: the plan is checked at once (a
    UsageError is raised here, before any block)."""
    return sweep_plan(program, values).blocks(points)


def sweep_columns(program: Program, values: Mapping[str, Value]) -> dict[str, Any]:
    """The whole grid of ``values`` as one array per input variable of ``program`` (defaults
    filled in): every point at once, for small grids and tests (``sweep_blocks`` streams)."""
    plan = sweep_plan(program, values)
    return next(plan.blocks(plan.size))


# --- evaluating a block --------------------------------------------------------------------------

class RecheckBudget:
    """Node computations the scalar path may still spend on unsure points (shared by the blocks
    of one sweep)."""

    def __init__(self, cells: int | None = None) -> None:
        self.cells = SWEEP_RECHECK_BUDGET if cells is None else cells

    def spend(self, cells: int) -> bool:
        if cells > self.cells:
            self.cells = 0
            return False
        self.cells -= cells
        return True


def evaluate_sweep(
    program: Program,
    columns: Mapping[str, Any],
    *,
    check: bool = True,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    explain_limit: int | None = None,
    reconcile: bool = False,
    budget: RecheckBudget | None = None,
) -> Sweep:
    """Value, gradients and (with ``check``) the finite-difference check at every point.

    ``columns`` comes from ``sweep_columns`` or ``sweep_blocks`` (one array per input variable).
    With ``reconcile`` (what ``gradcli eval`` sweeps do: ``stream_sweep``) the points where
    NumPy's results may differ from the scalar path's by more than ``AGREEMENT`` are
    re-evaluated on the scalar path, within ``budget`` (a new ``RecheckBudget`` when None; pass
    one to share it among the blocks of a sweep); without, every point is NumPy's, as before.
    The first ``explain_limit`` failed points (all when None) are re-run on the scalar path for
    their exact error message.
    """
    sweep = vector_sweep(program, columns, check=check, rtol=rtol, atol=atol,
                         reconcile=reconcile)
    finish_sweep(sweep, explain_limit, budget)
    return sweep


def vector_sweep(
    program: Program,
    columns: Mapping[str, Any],
    *,
    check: bool = True,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    reconcile: bool = False,
) -> Sweep:
    """The NumPy half of ``evaluate_sweep`` (safe on several threads at once): values,
    gradients, the check and which points are unsure. ``finish_sweep`` does the rest."""
    np = numpy()
    base = evaluate_vector(program, columns)
    assert base.grads is not None
    sweep = Sweep(
        program=program,
        columns={name: np.asarray(columns[name], dtype=float) for name in program.variables},
        value=base.output,
        gradients={name: base.grads[node.index] for name, node in program.variables.items()},
        failed=base.failed,
        rtol=rtol,
        atol=atol,
    )
    if reconcile:
        _measure_spread(sweep)
    if check:
        sweep.checks = {
            name: _check_variable(sweep, node, rtol, atol)
            for name, node in program.variables.items()
        }
    return sweep


def finish_sweep(sweep: Sweep, explain_limit: int | None = None,
                 budget: RecheckBudget | None = None) -> None:
    """The scalar half of ``evaluate_sweep``: unsure points re-evaluated (within ``budget``),
    failed points explained. Not thread-safe: the scalar path writes into the program's nodes."""
    if sweep.unsure is not None:
        _recheck(sweep, budget or RecheckBudget())
    _explain_failures(sweep, explain_limit)


def _measure_spread(sweep: Sweep) -> None:
    """``unsure``, ``value_spread`` and ``gradient_spreads``: ``RUNS`` perturbed evaluations
    (``perturbation.Perturbation``); the largest change of each output, times ``SAFETY``."""
    np = numpy()
    program, size = sweep.program, sweep.size
    unsure = np.zeros(size, dtype=bool)
    value_spread = np.zeros(size)
    spreads = {name: np.zeros(size) for name in program.variables}
    with np.errstate(all="ignore"):
        for run in range(RUNS):
            perturbed = evaluate_vector(program, sweep.columns,
                                        perturbation=Perturbation(np, sweep.columns, size, run))
            assert perturbed.grads is not None
            unsure |= perturbed.failed
            np.fmax(value_spread, np.abs(perturbed.output - sweep.value), out=value_spread)
            for name, node in program.variables.items():
                moved = np.abs(perturbed.grads[node.index] - sweep.gradients[name])
                np.fmax(spreads[name], moved, out=spreads[name])
        value_spread *= SAFETY
        unsure |= ~(value_spread <= AGREEMENT * np.abs(sweep.value))  # nan: unsure
        for name, spread in spreads.items():
            spread *= SAFETY
            unsure |= ~(spread <= AGREEMENT * np.abs(sweep.gradients[name]))
    unsure &= ~sweep.failed
    sweep.unsure, sweep.value_spread, sweep.gradient_spreads = unsure, value_spread, spreads


def _recheck(sweep: Sweep, budget: RecheckBudget) -> None:
    """Every unsure point evaluated again on the scalar path (value, gradients and check, the
    check as ``gradcli eval`` does it at one point), as long as ``budget`` lasts."""
    np = numpy()
    rows = np.flatnonzero(sweep.unsure).tolist()
    if not rows:
        return
    program = sweep.program
    variables = program.variables
    checked = sweep.checks is not None
    cost = len(program.nodes) * (2 + (2 * len(variables) if checked else 0))
    _make_writable(np, sweep)
    replayer = Replayer(program.nodes)
    for done, index in enumerate(rows):
        if not budget.spend(cost):
            sweep.unsettled += len(rows) - done
            return
        try:
            result = evaluate(program, sweep.point(index), check=False)
        except GradcliError as error:  # the scalar path stops at the node it cannot compute
            sweep.failed[index] = True
            sweep.errors[index] = error
            sweep.rechecked += 1
            continue
        sweep.failed[index] = False
        sweep.value[index] = result.value
        for name, node in variables.items():
            sweep.gradients[name][index] = result.gradients[name]
            if sweep.checks is not None:
                verdict = check_node(replayer, node, sweep.rtol, sweep.atol)
                target = sweep.checks[name]
                target.numeric[index] = math.nan if verdict.numeric is None else verdict.numeric
                target.abs_error[index] = (math.inf if verdict.abs_error is None
                                           else verdict.abs_error)
                target.tolerance[index] = verdict.tolerance
                target.ok[index] = verdict.ok
        sweep.rechecked += 1


def _make_writable(np: Any, sweep: Sweep) -> None:
    """Own, writable copies of the arrays ``_recheck`` writes to (a uniform result is a
    read-only broadcast view)."""

    def own(array: Any) -> Any:
        return array if array.flags.writeable else np.array(array)

    sweep.value, sweep.failed = own(sweep.value), own(sweep.failed)
    sweep.gradients = {name: own(g) for name, g in sweep.gradients.items()}
    for check in (sweep.checks or {}).values():
        check.numeric, check.abs_error = own(check.numeric), own(check.abs_error)
        check.tolerance, check.ok = own(check.tolerance), own(check.ok)


def _explain_failures(sweep: Sweep, limit: int | None) -> None:
    """The scalar path's exact message (it names the node) for failed points, up to ``limit``."""
    for index in numpy().flatnonzero(sweep.failed)[:limit].tolist():
        if index in sweep.errors:
            continue
        try:
            evaluate(sweep.program, sweep.point(index), check=False)
        except GradcliError as error:
            sweep.errors[index] = error
        else:  # the vector path overflowed where the scalar path did not: say so
            sweep.errors[index] = NumericError("a value or gradient is not finite at this point "
                                               "when computed with NumPy")


def _check_variable(sweep: Sweep, node: Node, rtol: float, atol: float) -> GradientSweepCheck:
    """Finite differences for one variable at every point, with ``check.check_node``'s policy:
    a point that disagrees is retried with a smaller step until it agrees, the steps run out or
    the step is swamped, and keeps its closest estimate.

    Where ``sweep.unsure`` is measured, a point whose verdict at some step could go the other
    way on the scalar path is marked unsure (``_mark_close_calls``)."""
    np = numpy()
    name = str(node.name)
    size = sweep.size
    analytic = sweep.gradients[name]
    base = base_step(sweep.columns[name], np.maximum)
    result = GradientSweepCheck(np.full(size, np.nan), np.full(size, np.inf),
                                np.zeros(size), np.zeros(size, dtype=bool))
    downstream = _downstream(sweep.program, node)
    rows = np.flatnonzero(~sweep.failed)
    for shrink in range(SHRINKS + 1):
        if not rows.size:
            break
        h = step(base[rows], shrink)
        numeric, largest, stencils = _difference(sweep, name, downstream, rows, h)
        with np.errstate(invalid="ignore"):
            error, allowed, agrees, swamped = judge(
                analytic[rows], numeric, largest, h, shrink, rtol, atol, np.maximum)
            good = agrees & ~swamped
            better = good | (~swamped & (np.nan_to_num(error, nan=np.inf) < result.abs_error[rows]))
            _mark_close_calls(sweep, name, downstream, rows, h, shrink, rtol,
                              _Judged(numeric, error, allowed, noise_allowance(largest, h),
                                      stencils))
        keep = rows[better]
        result.numeric[keep] = numeric[better]
        result.abs_error[keep] = np.nan_to_num(error[better], nan=np.inf)
        result.tolerance[keep] = allowed[better]
        result.ok[keep] = good[better]
        rows = rows[~(good | swamped)]
    return result


@dataclass
class _Judged:
    """One step of the check at some points: estimate, error, tolerance, noise allowance and
    the stencil used (index into ``STENCILS``; -1: none evaluated)."""

    numeric: Any
    error: Any
    allowed: Any
    noise: Any
    stencils: Any

    def __getitem__(self, at: Any) -> _Judged:
        return _Judged(self.numeric[at], self.error[at], self.allowed[at], self.noise[at],
                       self.stencils[at])

    def close(self, doubt: Any, shrink: int, rtol: float) -> Any:
        """Where moving the estimate and the gradient by up to ``doubt`` could change the
        verdict: |error - tolerance| (agrees) or, after a shrink, |tolerance - 2 noise|
        (swamped; the tolerance moves by rtol times as much) within ``doubt``."""
        np = numpy()
        close = np.abs(self.error - self.allowed) <= doubt
        if shrink > 0:
            close |= np.abs(self.allowed - 2.0 * self.noise) <= rtol * doubt
        return close


def _mark_close_calls(sweep: Sweep, name: str, downstream: list[int], rows: Any, h: Any,
                      shrink: int, rtol: float, judged: _Judged) -> None:
    """Mark unsure the points where the scalar check could judge this step otherwise.

    The verdict compares |gradient - estimate| with a tolerance; the scalar path's gradient is
    within ``gradient_spreads`` of NumPy's, and its estimate differs by what the two paths'
    values of f at the shifted points differ by, over h. First a rough bound: f off by
    ``value_spread`` at each shifted point, independently. Where that could flip the verdict,
    the estimate is computed again with the ops downstream of the variable perturbed
    (``perturbation.Perturbation``; what does not depend on the variable shifts both points
    alike and cancels) and the change, times ``SAFETY``, is the bound."""
    if sweep.unsure is None or sweep.value_spread is None or sweep.gradient_spreads is None:
        return
    np = numpy()
    gradient_doubt = sweep.gradient_spreads[name][rows]
    rough = (gradient_doubt + _STENCIL_GAIN * sweep.value_spread[rows] / h) * (1.0 + rtol)
    at = np.flatnonzero(judged.close(rough, shrink, rtol))
    if not at.size:
        return
    suspects, h = judged[at], h[at]
    moved, _, _ = _difference(sweep, name, downstream, rows[at], h, perturbed=True)
    with np.errstate(invalid="ignore", over="ignore"):
        shift = SAFETY * np.abs(moved - suspects.numeric)
        # a one-sided stencil also reads f at the point itself: -3 f / 2h
        shift += np.where(suspects.stencils > 0, 1.5 * sweep.value_spread[rows[at]] / h, 0.0)
        doubt = (gradient_doubt[at] + shift) * (1.0 + rtol)
        close = suspects.close(doubt, shrink, rtol) | ~np.isfinite(doubt)
    sweep.unsure[rows[at[close]]] = True


def _difference(sweep: Sweep, name: str, downstream: list[int], rows: Any, h: Any,
                perturbed: bool = False) -> tuple[Any, Any, Any]:
    """(estimate, largest magnitude, stencil index) at ``rows`` by the first stencil that
    evaluates at each point (as ``check._difference``); nan and -1 where none does. With
    ``perturbed``, the ops downstream of ``name`` are perturbed (``_mark_close_calls``)."""
    np = numpy()
    v = sweep.columns[name][rows]
    f0 = sweep.value[rows]
    estimate = np.full(rows.size, np.nan)
    used = np.full(rows.size, -1, dtype=np.int8)
    largest = np.abs(f0)
    todo = np.arange(rows.size)
    for index, stencil in enumerate(STENCILS):
        if not todo.size:
            break
        samples, reach = [], largest[todo]
        bad = np.zeros(todo.size, dtype=bool)
        for offset in stencil.offsets:
            if offset:
                with np.errstate(over="ignore"):  # past 1.8e308: inf, a failed replay
                    moved = v[todo] + offset * h[todo]
                value, magnitude, failed = _replay(
                    sweep, name, downstream, rows[todo], moved, perturbed)
                reach, bad = np.maximum(reach, magnitude), bad | failed
            else:
                value = f0[todo]
            samples.append(value)
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: not finite, not done
            quotients = quotient(stencil, samples, h[todo])
        done = ~bad & np.isfinite(quotients)
        at = todo[done]
        estimate[at] = quotients[done]
        largest[at] = reach[done]
        used[at] = index
        todo = todo[~done]
    return estimate, largest, used


def _replay(
    sweep: Sweep, name: str, downstream: list[int], rows: Any, moved: Any,
    perturbed: bool = False,
) -> tuple[Any, Any, Any]:
    """Output, largest downstream magnitude and failure mask with ``name`` moved to ``moved``
    (with ``perturbed``: the nodes ``downstream`` perturbed, as run ``RUNS``)."""
    np = numpy()
    columns = {key: column[rows] for key, column in sweep.columns.items()}
    columns[name] = moved
    perturbation = Perturbation(np, columns, rows.size, RUNS, downstream) if perturbed else None
    run = evaluate_vector(sweep.program, columns, gradients=False, every_node=True,
                          perturbation=perturbation)
    largest = np.abs(moved)
    for index in downstream:
        largest = np.maximum(largest, np.abs(run.values[index]))
    return run.output, largest, run.failed


def _downstream(program: Program, node: Node) -> list[int]:
    """Indices of the nodes that depend on ``node`` (one pass in topological order)."""
    depends = {node.index}
    for other in program.nodes[node.index + 1 :]:
        if any(source.index in depends for source in other.inputs):
            depends.add(other.index)
    return sorted(depends - {node.index})


# --- a whole sweep, block by block ------------------------------------------------------------

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
    """Every block of the grid of ``values`` evaluated (as ``evaluate_sweep``), in grid order.

    The grid is checked here, before anything is evaluated (``sweep_plan`` raises its
    UsageError at the call). Blocks of ``points`` (``block_points`` by default) are evaluated on
    ``threads`` threads (``min(default_jobs(), SWEEP_THREADS)`` by default), at most one more
    block ahead than there are threads; the scalar half of each (``finish_sweep``) runs in the
    caller's thread, which shares one ``RecheckBudget`` among them. Close the iterator (or run
    it to the end) to stop the threads.
    """
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
            sweep = vector_sweep(plan.program, columns, **options)
            finish_sweep(sweep, None, budget)
            yield sweep
        return
    from concurrent.futures import Future, ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gradcli-sweep")
    pending: deque[Future[Sweep]] = deque()
    try:
        for columns in blocks:
            pending.append(pool.submit(vector_sweep, plan.program, columns, **options))
            if len(pending) > threads:
                yield _finished(pending.popleft(), budget)
        while pending:
            yield _finished(pending.popleft(), budget)
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True)


def _finished(future: Any, budget: RecheckBudget) -> Sweep:
    sweep = future.result()
    finish_sweep(sweep, None, budget)
    return sweep


class PointMask:
    """A bool per point of a sweep that is not held whole: the first points as an array
    (``head``), the others only counted, by kind (``failed``; ``disagree``: not failed, the
    check failed; ``ok``). Enough for what a summary asks of ``Sweep.failed`` and
    ``Sweep.check_ok``: a head point, ``sum``, ``any``, ``all``, ``~``, ``&`` and ``|``."""

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

    def __or__(self, other: PointMask) -> PointMask:
        return PointMask(self.head | other.head, self.kinds | other.kinds, self.counts)

    def sum(self) -> int:
        return int(self.head.sum()) + sum(self.counts[kind] for kind in self.kinds)

    def any(self) -> bool:
        return self.sum() > 0

    def all(self) -> bool:
        return self.sum() == self.size

    @property
    def size(self) -> int:
        return int(self.head.size) + sum(self.counts.values())


class SweepSummary:
    """What a sweep's table needs, gathered block by block (``add``): the first ``keep`` points
    in full (``head``), how many points failed and how many the check failed at, the worst
    point of the check, and the smallest and largest value and gradients.

    It reads like the ``Sweep`` of all the points for ``output.sweep_views.sweep_view``: the
    first ``keep`` points are there (``columns``, ``value``, ``gradients``, ``error_message``),
    ``size`` and ``status`` count every point, and ``failed`` and ``check_ok`` are
    ``PointMask``s.
    """

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.head: Sweep | None = None
        self.size = 0
        self.failures = 0  # points where a value or gradient is not finite
        self.disagreements = 0  # points where the check failed (and no value failed)
        self.checked = False
        self.rechecked = 0
        self.unsettled = 0
        self.worst: tuple[float, str, dict[str, float]] | None = None  # error/tol, name, point
        self.ranges: dict[str, tuple[float, float]] = {}  # "value", "d/dx": (min, max)
        self._tail = {"failed": 0, "disagree": 0, "ok": 0}

    def add(self, sweep: Sweep) -> None:
        np = numpy()
        failed, ok = sweep.failed, sweep.check_ok
        disagree = ~ok & ~failed
        self.size += sweep.size
        self.failures += int(failed.sum())
        self.disagreements += int(disagree.sum())
        self.checked = sweep.checks is not None
        self.rechecked += sweep.rechecked
        self.unsettled += sweep.unsettled
        room = self.keep - (0 if self.head is None else self.head.size)
        if room > 0:
            part = _take(sweep, min(room, sweep.size))
            self.head = part if self.head is None else _joined(self.head, part)
        rest = slice(max(room, 0), None)
        self._tail["failed"] += int(failed[rest].sum())
        self._tail["disagree"] += int(disagree[rest].sum())
        self._tail["ok"] += int((ok[rest]).sum())
        usable = ~failed
        if usable.any():
            outputs = {"value": sweep.value, **{f"d/d{name}": gradient
                                                for name, gradient in sweep.gradients.items()}}
            for key, numbers in outputs.items():
                low, high = float(np.min(numbers[usable])), float(np.max(numbers[usable]))
                known = self.ranges.get(key)
                self.ranges[key] = (low, high) if known is None else (
                    min(known[0], low), max(known[1], high))
            self._worst(np, sweep, usable)

    def _worst(self, np: Any, sweep: Sweep, usable: Any) -> None:
        for name, check in (sweep.checks or {}).items():
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(check.tolerance > 0, check.abs_error / check.tolerance, np.inf)
            ratio = np.where(usable, np.nan_to_num(ratio, nan=np.inf), -np.inf)
            at = int(np.argmax(ratio))
            if self.worst is None or ratio[at] > self.worst[0]:
                self.worst = (float(ratio[at]), name, sweep.point(at))

    # --- what sweep_view reads of a Sweep ---

    @property
    def status(self) -> ExitStatus:
        if self.failures:
            return ExitStatus.NUMERIC
        return ExitStatus.CHECK_FAILED if self.disagreements else ExitStatus.OK

    @property
    def _shown(self) -> Sweep:
        assert self.head is not None, "no block added"
        return self.head

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

    @property
    def failed(self) -> PointMask:
        return PointMask(self._shown.failed, frozenset({"failed"}), self._tail)

    @property
    def check_ok(self) -> PointMask:
        return PointMask(self._shown.check_ok, frozenset({"ok"}), self._tail)

    def point(self, index: int) -> dict[str, float]:
        return self._shown.point(index)

    def error_message(self, index: int) -> str:
        return self._shown.error_message(index)


def _take(sweep: Sweep, count: int) -> Sweep:
    """The first ``count`` points of ``sweep`` (copies: the block itself can go)."""

    def first(array: Any) -> Any:
        return None if array is None else array[:count].copy()

    return Sweep(
        program=sweep.program,
        columns={name: first(c) for name, c in sweep.columns.items()},
        value=first(sweep.value),
        gradients={name: first(g) for name, g in sweep.gradients.items()},
        failed=first(sweep.failed),
        errors={i: e for i, e in sweep.errors.items() if i < count},
        checks=None if sweep.checks is None else {
            name: GradientSweepCheck(first(c.numeric), first(c.abs_error), first(c.tolerance),
                                     first(c.ok)) for name, c in sweep.checks.items()},
        rtol=sweep.rtol,
        atol=sweep.atol,
    )


def _joined(a: Sweep, b: Sweep) -> Sweep:
    """The points of ``a`` then those of ``b``."""
    np = numpy()

    def both(x: Any, y: Any) -> Any:
        return np.concatenate([x, y])

    return Sweep(
        program=a.program,
        columns={name: both(a.columns[name], b.columns[name]) for name in a.columns},
        value=both(a.value, b.value),
        gradients={name: both(a.gradients[name], b.gradients[name]) for name in a.gradients},
        failed=both(a.failed, b.failed),
        errors={**a.errors, **{a.size + i: e for i, e in b.errors.items()}},
        checks=None if a.checks is None or b.checks is None else {
            name: GradientSweepCheck(*(both(getattr(a.checks[name], f), getattr(c, f))
                                       for f in ("numeric", "abs_error", "tolerance", "ok")))
            for name, c in b.checks.items()},
        rtol=a.rtol,
        atol=a.atol,
    )


# --- records for machines ----------------------------------------------------------------------

def point_records(sweep: Sweep) -> Iterator[dict[str, Any]]:
    """Each point as a JSON-ready dict: point, value, gradients, check (or null), error (or null).

    Arrays become Python lists once, up front: converting NumPy scalars one by one is what would
    make 100,000 records slow.
    """
    names = list(sweep.columns)
    columns = {name: sweep.columns[name].tolist() for name in names}
    values = sweep.value.tolist()
    gradients = {name: sweep.gradients[name].tolist() for name in names}
    failed = sweep.failed.tolist()
    checks = None if sweep.checks is None else {
        name: {"numeric": c.numeric.tolist(), "abs_error": c.abs_error.tolist(),
               "tolerance": c.tolerance.tolist(), "ok": c.ok.tolist()}
        for name, c in sweep.checks.items()}
    check_ok = sweep.check_ok.tolist()
    for i in range(sweep.size):
        point = {name: columns[name][i] for name in names}
        if failed[i]:
            error = sweep.errors.get(i)
            message = error.message if error else "a value or gradient is not finite"
            yield {"point": point, "value": None, "gradients": None, "check": None,
                   "error": {"kind": "domain", "message": message, "hint": None}}
            continue
        check = None if checks is None else {"ok": check_ok[i], "gradients": {
            name: {"numeric": _finite_or_none(c["numeric"][i]),
                   "abs_error": _finite_or_none(c["abs_error"][i]),
                   "tolerance": c["tolerance"][i], "ok": c["ok"][i]}
            for name, c in checks.items()}}
        yield {"point": point, "value": values[i],
               "gradients": {name: gradients[name][i] for name in names},
               "check": check, "error": None}


def csv_header(names: list[str]) -> list[str]:
    """The CSV header of a sweep over a program with these input variables."""
    return [*names, "value", *(f"d/d{name}" for name in names), "ok", "error"]


def csv_body(sweep: Sweep) -> Iterator[list[str]]:
    """One CSV row per point: variables, value, d/dNAME for each, ok, error."""
    names = list(sweep.columns)
    columns = [sweep.columns[name].tolist() for name in names]
    numbers = [sweep.value.tolist(), *(sweep.gradients[name].tolist() for name in names)]
    failed = sweep.failed.tolist()
    ok = sweep.check_ok.tolist()
    for i in range(sweep.size):
        coordinates = [format_number(column[i]) for column in columns]
        if failed[i]:
            yield [*coordinates, *[""] * len(numbers), "false", sweep.error_message(i)]
        else:
            verdict = "" if sweep.checks is None else ("true" if ok[i] else "false")
            yield [*coordinates, *(format_number(column[i]) for column in numbers), verdict, ""]


def csv_rows(sweep: Sweep) -> Iterator[list[str]]:
    """A header, then one row per point (``csv_header``, ``csv_body``)."""
    yield csv_header(list(sweep.columns))
    yield from csv_body(sweep)


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
