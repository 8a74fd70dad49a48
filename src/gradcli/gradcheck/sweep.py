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

Here: a block evaluated. The grid is ``sweep_grid``, a whole sweep block by block and its
summary ``sweep_stream``, the finite-difference check ``sweep_differences``, what a block holds
and its points as JSON and CSV ``sweep_results``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gradcli.engine.graph import Program
from gradcli.engine.ops import numpy
from gradcli.engine.perturbation import Perturbation
from gradcli.engine.replay import Replayer
from gradcli.engine.vector import evaluate_vector
from gradcli.errors import GradcliError, NumericError
from gradcli.gradcheck.check import DEFAULT_ATOL, DEFAULT_RTOL, check_node
from gradcli.gradcheck.evaluation import evaluate
from gradcli.gradcheck.sweep_differences import check_variable
from gradcli.gradcheck.sweep_results import AGREEMENT, RUNS, SAFETY, Sweep
from gradcli.limits import SWEEP_RECHECK_BUDGET


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

    ``columns`` comes from ``sweep_columns`` or a plan's blocks (one array per input variable).
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
