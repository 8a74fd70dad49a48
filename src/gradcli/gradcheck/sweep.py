"""A block of a sweep evaluated and checked, vectorised: values and gradients from
``vector.evaluate_vector``, each input gradient checked with the scalar check's step policy
(``steps``) on whole arrays, two extra evaluations per variable and no loop per point.

NumPy may round transcendental functions a few ulp apart from libm, and a program can amplify
that without bound (``sin(cosh(atan2(y, 2))**x)`` at x = 700). With ``reconcile`` each block is
evaluated ``RUNS`` more times with every such result perturbed by the most it may differ; a
point that moves by more than ``AGREEMENT`` (after ``SAFETY``), or whose verdict could flip, is
*unsure* and re-evaluated on the scalar path within ``SWEEP_RECHECK_BUDGET`` (the rest are
counted in ``unsettled``). A failed point's message comes from the scalar path, which names the
node. The grid and the stream of blocks are ``sweep_stream``; ``Sweep`` is a block's result,
with its points as JSON-ready records and CSV rows.
NumPy is imported on first use (``ops.numpy``), so gradcli starts without it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gradcli.engine.graph import Node, Program
from gradcli.engine.notation import finite_or_none, format_number
from gradcli.engine.ops import numpy
from gradcli.engine.perturbation import Perturbation
from gradcli.engine.replay import Replayer, rounding_weight_at_points
from gradcli.engine.vector import evaluate_vector
from gradcli.errors import ExitStatus, GradcliError, NumericError
from gradcli.gradcheck.check import DEFAULT_ATOL, DEFAULT_RTOL, check_node
from gradcli.gradcheck.evaluation import evaluate
from gradcli.gradcheck.perturbing import Sample
from gradcli.gradcheck.steps import (
    base_step,
    first_stencil,
    noise_allowance,
    own_step,
    settle,
)
from gradcli.limits import SWEEP_RECHECK_BUDGET

# Agreement with the scalar path (``sweep``'s docstring): a value or gradient whose perturbed runs
# move it by more than AGREEMENT relative, times SAFETY, is re-evaluated on the scalar path.
AGREEMENT = 1e-9
SAFETY = 16.0  # the runs' random signs can cancel what the worst case adds up
RUNS = 2


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
    # Agreement with the scalar path (``sweep``'s docstring); None where not measured.
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


# --- a sweep's points as JSON-ready records and CSV rows ------------------------------------------

def point_records(sweep: Sweep) -> Iterator[dict[str, Any]]:
    """Each point as a JSON-ready dict: point, value, gradients, check and error (or nulls);
    arrays become lists once, up front (NumPy scalars one by one would be slow)."""
    names = list(sweep.columns)
    columns = {name: sweep.columns[name].tolist() for name in names}
    values = sweep.value.tolist()
    gradients = {name: sweep.gradients[name].tolist() for name in names}
    failed = sweep.failed.tolist()
    checks = None if sweep.checks is None else {  # numeric, abs_error, tolerance, ok
        name: {key: array.tolist() for key, array in vars(c).items()}
        for name, c in sweep.checks.items()}
    check_ok = sweep.check_ok.tolist()
    for i in range(sweep.size):
        point = {name: columns[name][i] for name in names}
        if failed[i]:
            error = sweep.errors.get(i) or NumericError("a value or gradient is not finite")
            yield {"point": point, "value": None, "gradients": None, "check": None,
                   "error": error.fields()}
            continue
        check = None if checks is None else {"ok": check_ok[i], "gradients": {
            name: {"numeric": finite_or_none(c["numeric"][i]),
                   "abs_error": finite_or_none(c["abs_error"][i]),
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


class RecheckBudget:
    """Node computations the scalar path may still spend on one sweep's unsure points."""

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
    """Value, gradients and (with ``check``) the check at every point of ``columns`` (one
    array per input variable); unsure points reconciled when asked, and the first
    ``explain_limit`` failed points (all when None) explained by the scalar path."""
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
    base = evaluate_vector(program, columns, every_node=check)  # the check weighs every node
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
        weights = [rounding_weight_at_points(grad) for grad in base.grads]
        sweep.checks = {
            name: check_variable(sweep, node, rtol, atol, weights)
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
    """Every unsure point evaluated again on the scalar path, as long as ``budget`` lasts."""
    np = numpy()
    rows = np.flatnonzero(sweep.unsure).tolist()
    if not rows:
        return
    program = sweep.program
    variables = program.variables
    checked = sweep.checks is not None
    cost = len(program.nodes) * (2 + (2 * len(variables) if checked else 0))
    _make_writable(np, sweep)
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
        replayer = Replayer(program.nodes)  # its weights are this point's gradients
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


def check_variable(sweep: Sweep, node: Node, rtol: float, atol: float,
                   weights: list[Any] | None = None) -> GradientSweepCheck:
    """Finite differences for one variable at every point with the scalar check's policy
    (``steps.settle``); where ``sweep.unsure`` is measured, a point whose verdict could go the
    other way on the scalar path is marked unsure (``_mark_close_calls``). ``weights``: each
    node's ``rounding_weight`` at every point, by index (``replay.rounding_weight_at_points``;
    None: from the program's own gradients at the sweep's points)."""
    np = numpy()
    if weights is None:
        grads = evaluate_vector(sweep.program, sweep.columns, every_node=True).grads or []
        weights = [rounding_weight_at_points(grad) for grad in grads]
    name = str(node.name)
    downstream = [user.index for user in Replayer(sweep.program.nodes).affected(node.index)]
    judged = None if sweep.unsure is None else partial(_mark_close_calls, sweep, name,
                                                       downstream, rtol, weights)
    found = settle(sweep.gradients[name], base_step(sweep.columns[name], np.maximum),
                   sweep.value, _sampler(sweep, name, downstream, weights),
                   np.flatnonzero(~sweep.failed),
                   rtol, atol, judged, own_step(sweep.columns[name]))
    return GradientSweepCheck(found.numeric, found.error, found.tolerance, found.ok)


def _close(error: Any, allowed: Any, noise: Any, doubt: Any, shrink: int, rtol: float) -> Any:
    """Where moving the estimate and the gradient by up to ``doubt`` could change the verdict:
    |error - tolerance| (agrees) or, after a shrink, |tolerance - 2 noise| (swamped; the
    tolerance moves by rtol times as much) within ``doubt``."""
    close = numpy().abs(error - allowed) <= doubt
    if shrink > 0:
        close |= numpy().abs(allowed - 2.0 * noise) <= rtol * doubt
    return close


def _mark_close_calls(sweep: Sweep, name: str, downstream: list[int], rtol: float,
                      weights: list[Any], rows: Any, h: Any, shrink: int, numeric: Any,
                      error: Any, allowed: Any, largest: Any, stencils: Any) -> None:
    """Mark unsure the points where the scalar check could judge this step (``settle``'s
    ``judged``) otherwise: first a rough bound (f off by ``value_spread`` at each shifted
    point); where that could flip the verdict, the estimate again with the ops downstream of
    the variable perturbed (what does not depend on it cancels), the change times ``SAFETY``
    being the bound."""
    assert sweep.unsure is not None and sweep.value_spread is not None
    assert sweep.gradient_spreads is not None
    np = numpy()
    noise = noise_allowance(largest, h)
    gradient_doubt = sweep.gradient_spreads[name][rows]
    rough = (gradient_doubt + _STENCIL_GAIN * sweep.value_spread[rows] / h) * (1.0 + rtol)
    at = np.flatnonzero(_close(error, allowed, noise, rough, shrink, rtol))
    if not at.size:
        return
    h = h[at]
    moved, _, _, _ = first_stencil(_sampler(sweep, name, downstream, weights, perturbed=True),
                                sweep.value,
                                rows[at], h)
    with np.errstate(invalid="ignore", over="ignore"):
        shift = SAFETY * np.abs(moved - numeric[at])
        # a one-sided stencil also reads f at the point itself: -3 f / 2h
        shift += np.where(stencils[at] > 0, 1.5 * sweep.value_spread[rows[at]] / h, 0.0)
        doubt = (gradient_doubt[at] + shift) * (1.0 + rtol)
        close = _close(error[at], allowed[at], noise[at], doubt, shrink, rtol) | ~np.isfinite(doubt)
    sweep.unsure[rows[at[close]]] = True


def _sampler(sweep: Sweep, name: str, downstream: list[int], weights: list[Any],
             perturbed: bool = False) -> Sample:
    """f at points of the sweep with ``name`` moved (``perturbing.Sample``: the output, the largest
    rounding scale downstream, as ``Replayer.replay`` weighs it, the failures); with
    ``perturbed``, the ops downstream of ``name`` perturbed (``_mark_close_calls``)."""
    np = numpy()
    variable = sweep.program.variables[name].index

    def weight(index: int, rows: Any) -> Any:
        at = weights[index]
        return at[rows] if np.ndim(at) else at

    def sample(rows: Any, offset: float, h: Any) -> tuple[Any, Any, Any]:
        columns = {key: column[rows] for key, column in sweep.columns.items()}
        with np.errstate(over="ignore"):  # past 1.8e308: inf, a failed replay
            moved = columns[name] = columns[name] + offset * h
        perturbation = (Perturbation(np, columns, rows.size, RUNS, downstream) if perturbed
                        else None)
        run = evaluate_vector(sweep.program, columns, gradients=False, every_node=True,
                              perturbation=perturbation)
        with np.errstate(invalid="ignore"):  # inf * 0: a failed replay's point, failed anyway
            largest = np.abs(moved) * weight(variable, rows)
            for index in downstream:
                largest = np.maximum(largest, np.abs(run.values[index]) * weight(index, rows))
        return run.output, largest, run.failed

    return sample
