"""A program at many points at once: values, gradients and the finite-difference check, vectorised.

``evaluate_sweep`` builds the grid of the given values (``points.grid``: several swept variables
form every combination), evaluates the value and every reverse-mode gradient at all points with
``vector.evaluate_vector``, and checks each input gradient against finite differences with the
step policy ``check.py`` uses for one point (``finite_difference``: its stencils, steps, noise
allowance and tolerance) -- but on whole arrays: each variable costs two extra evaluations of the
graph for all points, never a Python loop per point.

A point where a value or gradient is not finite is marked in ``failed``; the exact message (which
names the node) comes from re-running just that point on the scalar path (``api.evaluate``).
NumPy is imported on first use (``ops.numpy``), so gradcli starts without it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gradcli.engine.graph import Node, Program
from gradcli.engine.notation import format_number
from gradcli.engine.ops import numpy
from gradcli.engine.vector import evaluate_vector
from gradcli.errors import ExitStatus, GradcliError, NumericError, UsageError
from gradcli.gradcheck.evaluation import evaluate, require_values
from gradcli.gradcheck.point import DEFAULT_ATOL, DEFAULT_RTOL
from gradcli.gradcheck.steps import SHRINKS, STENCILS, base_step, judge, quotient, step
from gradcli.language.values import Value, grid, validate_values
from gradcli.limits import MAX_SWEEP_POINTS


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


def sweep_columns(program: Program, values: Mapping[str, Value]) -> dict[str, Any]:
    """The grid of ``values`` as one array per input variable of ``program`` (defaults filled in).

    Values of names the program does not use are ignored, as ``evaluate`` does; a variable with
    no value at all is a UsageError.
    """
    np = numpy()
    validate_values(values)
    used = {name: value for name, value in values.items() if name in program.variables}
    require_values(program, used)
    count = math.prod(len(v) if isinstance(v, tuple) else 1 for v in used.values())
    if count > MAX_SWEEP_POINTS:
        raise UsageError(f"the sweep has {count:,} points; at most {MAX_SWEEP_POINTS:,} fit",
                         hint="use fewer values per variable")
    names, rows = grid(used)
    table = np.asarray(rows, dtype=float).reshape(len(rows), len(names))
    given = {name: table[:, i] for i, name in enumerate(names)}
    size = len(rows)
    return {
        name: given[name] if name in given else np.full(size, program.defaults[name])
        for name in program.variables
    }


def evaluate_sweep(
    program: Program,
    columns: Mapping[str, Any],
    *,
    check: bool = True,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    explain_limit: int | None = None,
) -> Sweep:
    """Value, gradients and (with ``check``) the finite-difference check at every point.

    ``columns`` comes from ``sweep_columns``. The first ``explain_limit`` failed points (all when
    None) are re-run on the scalar path for their exact error message.
    """
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
    if check:
        sweep.checks = {
            name: _check_variable(sweep, node, rtol, atol)
            for name, node in program.variables.items()
        }
    _explain_failures(sweep, explain_limit)
    return sweep


def _explain_failures(sweep: Sweep, limit: int | None) -> None:
    """The scalar path's exact message (it names the node) for failed points, up to ``limit``."""
    for index in numpy().flatnonzero(sweep.failed)[:limit].tolist():
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
    the step is swamped, and keeps its closest estimate."""
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
        numeric, largest = _difference(sweep, name, downstream, rows, h)
        with np.errstate(invalid="ignore"):
            error, allowed, agrees, swamped = judge(
                analytic[rows], numeric, largest, h, shrink, rtol, atol, np.maximum)
            good = agrees & ~swamped
            better = good | (~swamped & (np.nan_to_num(error, nan=np.inf) < result.abs_error[rows]))
        keep = rows[better]
        result.numeric[keep] = numeric[better]
        result.abs_error[keep] = np.nan_to_num(error[better], nan=np.inf)
        result.tolerance[keep] = allowed[better]
        result.ok[keep] = good[better]
        rows = rows[~(good | swamped)]
    return result


def _difference(sweep: Sweep, name: str, downstream: list[int], rows: Any, h: Any) -> tuple:
    """(estimate, largest magnitude) at ``rows`` by the first stencil that evaluates at each
    point (as ``check._difference``); nan where none does."""
    np = numpy()
    v = sweep.columns[name][rows]
    f0 = sweep.value[rows]
    estimate = np.full(rows.size, np.nan)
    largest = np.abs(f0)
    todo = np.arange(rows.size)
    for stencil in STENCILS:
        if not todo.size:
            break
        samples, reach = [], largest[todo]
        bad = np.zeros(todo.size, dtype=bool)
        for offset in stencil.offsets:
            if offset:
                value, magnitude, failed = _replay(
                    sweep, name, downstream, rows[todo], v[todo] + offset * h[todo])
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
        todo = todo[~done]
    return estimate, largest


def _replay(
    sweep: Sweep, name: str, downstream: list[int], rows: Any, moved: Any
) -> tuple[Any, Any, Any]:
    """Output, largest downstream magnitude and failure mask with ``name`` moved to ``moved``."""
    np = numpy()
    columns = {key: column[rows] for key, column in sweep.columns.items()}
    columns[name] = moved
    run = evaluate_vector(sweep.program, columns, gradients=False, every_node=True)
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


def csv_rows(sweep: Sweep) -> Iterator[list[str]]:
    """A header, then one row per point: variables, value, d/dNAME for each, ok, error."""
    names = list(sweep.columns)
    yield [*names, "value", *(f"d/d{name}" for name in names), "ok", "error"]
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


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
