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

Here: a block evaluated and checked. The grid is ``sweep_grid``, a whole sweep block by block
and its summary ``sweep_stream``, what a block holds and its points as JSON and CSV
``sweep_results``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gradcli.engine.graph import Node, Program
from gradcli.engine.ops import numpy
from gradcli.engine.perturbation import Perturbation
from gradcli.engine.replay import Replayer
from gradcli.engine.vector import evaluate_vector
from gradcli.errors import GradcliError, NumericError
from gradcli.gradcheck.check import DEFAULT_ATOL, DEFAULT_RTOL, check_node
from gradcli.gradcheck.evaluation import evaluate
from gradcli.gradcheck.steps import (
    Sample,
    base_step,
    first_stencil,
    noise_allowance,
    own_step,
    settle,
)
from gradcli.gradcheck.sweep_results import AGREEMENT, RUNS, SAFETY, GradientSweepCheck, Sweep
from gradcli.limits import SWEEP_RECHECK_BUDGET


class RecheckBudget:
    """Node computations the scalar path may still spend on unsure points (shared by the blocks
    of one sweep)."""

    def __init__(self) -> None:
        self.cells = SWEEP_RECHECK_BUDGET

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
) -> Sweep:
    """Value, gradients and (with ``check``) the finite-difference check at every point.

    ``columns`` comes from ``sweep_columns`` or a plan's blocks (one array per input variable).
    With ``reconcile`` (what ``gradcli eval`` sweeps do: ``stream_sweep``) the points where
    NumPy's results may differ from the scalar path's by more than ``AGREEMENT`` are
    re-evaluated on the scalar path, within a ``RecheckBudget`` (``stream_sweep`` shares one
    among the blocks of a sweep); without, every point is NumPy's.
    The first ``explain_limit`` failed points (all when None) are re-run on the scalar path for
    their exact error message.
    """
    sweep = vector_sweep(program, columns, check=check, rtol=rtol, atol=atol,
                         reconcile=reconcile)
    finish_sweep(sweep, explain_limit)
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
            name: check_variable(sweep, node, rtol, atol)
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


# --- the finite differences of one variable at every point ----------------------------------------

# A stencil's estimate moves by at most (sum of |weights|) / 2 = 4 (one-sided) times the change
# of f, divided by h.
_STENCIL_GAIN = 4.0


def check_variable(sweep: Sweep, node: Node, rtol: float, atol: float) -> GradientSweepCheck:
    """Finite differences for one variable at every point, with ``differences.check_node``'s policy
    (``steps.settle``): a point that disagrees is retried with a smaller step until it agrees,
    the steps run out or the step is swamped, and keeps its closest estimate.

    Where ``sweep.unsure`` is measured, a point whose verdict at some step could go the other
    way on the scalar path is marked unsure (``_mark_close_calls``)."""
    np = numpy()
    name = str(node.name)
    downstream = _downstream(sweep.program, node)

    def judged(rows: Any, h: Any, shrink: int, numeric: Any, error: Any, allowed: Any,
               largest: Any, stencils: Any) -> None:
        _mark_close_calls(sweep, name, downstream, rows, h, shrink, rtol,
                          _Judged(numeric, error, allowed, noise_allowance(largest, h), stencils))

    found = settle(sweep.gradients[name], base_step(sweep.columns[name], np.maximum),
                   sweep.value, _sampler(sweep, name, downstream), np.flatnonzero(~sweep.failed),
                   rtol, atol, judged, own_step(sweep.columns[name]))
    return GradientSweepCheck(found.numeric, found.error, found.tolerance, found.ok)


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
    moved, _, _ = first_stencil(_sampler(sweep, name, downstream, perturbed=True), sweep.value,
                                rows[at], h)
    with np.errstate(invalid="ignore", over="ignore"):
        shift = SAFETY * np.abs(moved - suspects.numeric)
        # a one-sided stencil also reads f at the point itself: -3 f / 2h
        shift += np.where(suspects.stencils > 0, 1.5 * sweep.value_spread[rows[at]] / h, 0.0)
        doubt = (gradient_doubt[at] + shift) * (1.0 + rtol)
        close = suspects.close(doubt, shrink, rtol) | ~np.isfinite(doubt)
    sweep.unsure[rows[at[close]]] = True


def _sampler(sweep: Sweep, name: str, downstream: list[int], perturbed: bool = False) -> Sample:
    """f at points of the sweep with ``name`` moved (``steps.Sample``); with ``perturbed``, the
    ops downstream of ``name`` perturbed (``_mark_close_calls``)."""

    def sample(rows: Any, offset: float, h: Any) -> tuple[Any, Any, Any]:
        with numpy().errstate(over="ignore"):  # past 1.8e308: inf, a failed replay
            moved = sweep.columns[name][rows] + offset * h
        return _replay(sweep, name, downstream, rows, moved, perturbed)

    return sample


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
