"""Rich renderables for sweeps (``gradcli eval --x -2:2:9``) and check runs (``gradcli check``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.text import Text

from gradcli.engine.notation import format_point
from gradcli.errors import ExitStatus, GradcliError, plural, visible
from gradcli.formulas.outcomes import CheckOutcome
from gradcli.gradcheck.sweep import GradientSweepCheck, Sweep
from gradcli.output.tables import MAX_TABLE_ROWS, Column, FittedTable
from gradcli.output.values import checked_digits, number_text
from gradcli.output.verdicts import SKIPPED, check_mark, tolerances

if TYPE_CHECKING:
    from gradcli.engine.graph import Program
    from gradcli.gradcheck.evaluation import Result


def sweep_view(sweep: Sweep, plain: bool = False, digits: int | None = None) -> RenderableType:
    """One row per point (variables, value, gradients, verdict), then a one-line summary."""
    digits = checked_digits(digits)
    names = list(sweep.columns)
    table = FittedTable(plural(sweep.size, "point"), [
        *(Column(name, justify="right", style="bold") for name in names),
        Column("value", justify="right", style="cyan"),
        *(Column(f"d/d{name}", justify="right", style="magenta") for name in names),
        Column("check", fold=True, words=True)], plain)
    ok = sweep.check_ok
    shown = range(min(sweep.size, MAX_TABLE_ROWS))
    for index in shown:
        coordinates = [Text(number_text(sweep.columns[name][index], digits)) for name in names]
        if sweep.failed[index]:
            table.add_row(*coordinates, *[Text("—", style="dim")] * (1 + len(names)),
                          Text(sweep.error_message(index), style="red"))
            continue
        numbers = [sweep.value[index], *(sweep.gradients[name][index] for name in names)]
        table.add_row(*coordinates, *(Text(number_text(x, digits)) for x in numbers),
                      check_mark(None if sweep.checks is None else bool(ok[index])))
    parts: list[RenderableType] = [table]
    if sweep.size > len(shown):
        parts.append(Text(f"… {plural(sweep.size - len(shown), 'more point')} (--csv or --json "
                          "list all)", style="dim"))
    return Group(*parts, sweep_summary(sweep))


def sweep_summary(sweep: Sweep) -> Text:
    failed = int(sweep.failed.sum())
    text = Text()
    if failed:
        text.append(f"✗ numeric error at {failed:,} of {plural(sweep.size, 'point')}\n",
                    style="bold red")
    if sweep.checks is None:
        return text.append(SKIPPED, style="dim")
    disagree = int((~sweep.check_ok & ~sweep.failed).sum())
    if failed == sweep.size:
        return text.append("no point left to check", style="dim")
    if disagree:
        text.append(f"✗ check failed at {disagree:,} of {plural(sweep.size, 'point')} ",
                    style="bold red")
    else:
        text.append("✓ check passed ", style="bold green")
        rest = " without numeric errors" if failed else ""
        text.append(f"at {plural(sweep.size - failed, 'point')}{rest} ")
    return text.append(f"({tolerances(sweep)})")


def check_view(outcomes: Sequence[CheckOutcome], plain: bool = False) -> RenderableType:
    """The summary table, the details of every failure, and the totals."""
    table = FittedTable("gradcli check", [
        Column("check", fold=True, head=True, style="bold"),
        Column("points", justify="right"), Column("worst error", justify="right"),
        Column("where", fold=True, words=True, style="dim"),
        Column("verdict", fold=True, words=True)], plain)
    for outcome in outcomes:
        worst = outcome.worst
        error = "—" if worst is None or worst.worst_error is None else f"{worst.worst_error:.1e}"
        where = "" if worst is None else worst.assertion + (
            "" if not worst.worst_point else f" at {format_point(worst.worst_point)}")
        table.add_row(Text(outcome.spec.name), Text(f"{outcome.points:,}"), Text(error),
                      Text(where), _check_verdict(outcome))
    parts: list[RenderableType] = [table]
    for outcome in outcomes:
        if outcome.ok:
            continue
        spec, file = outcome.spec, visible(outcome.spec.file)  # a path may hold ESC or \n
        parts.append(Text(f"✗ {spec.name} ({file}:{spec.line}): {visible(spec.expr)}",
                          style="bold red"))
        for finding in outcome.failures:
            parts.append(Text(f"  {file}:{finding.line}: {finding.describe()}"))
    parts.append(check_totals(outcomes))
    return Group(*parts)


def check_totals(outcomes: Sequence[CheckOutcome]) -> Text:
    passed = sum(1 for outcome in outcomes if outcome.ok)
    failed = len(outcomes) - passed
    points = sum(outcome.points for outcome in outcomes)
    if not failed:
        text = Text(f"✓ {plural(passed, 'check')} passed", style="bold green")
    else:
        text = Text(f"✗ {failed:,} of {plural(len(outcomes), 'check')} failed", style="bold red")
    return text.append(f" ({plural(points, 'point')})", style="")


# USAGE: the check's own mistake (shapes, a value); any other failing status: failed
_VERDICTS = {ExitStatus.OK: "✓ passed", ExitStatus.NUMERIC: "✗ numeric error",
             ExitStatus.USAGE: "✗ error"}


def _check_verdict(outcome: CheckOutcome) -> Text:
    extra = f", {plural(outcome.skipped, 'point')} skipped" if outcome.skipped else ""
    return Text(_VERDICTS.get(outcome.status, "✗ failed") + extra,
                style="green" if outcome.ok else "bold red")


# --- CSV of one point of an array program ------------------------------------------------------

def point_sweep(program: Program, point: Mapping[str, Any], result: Result | None = None,
                error: GradcliError | None = None) -> Sweep:
    """One point of an array program as a sweep of one point whose columns are the inputs'
    elements (``W[0,1]``), so that the sweep's own CSV writes it; ``result`` is the point
    evaluated, or None with the ``error`` that stopped it."""
    from gradcli.engine import arrays

    np = arrays.numpy()
    columns = {label: np.array([number]) for name, value in point.items()
               for label, number in _elements(name, value)}
    if result is None:
        return Sweep(program, columns, np.array([np.nan]), dict.fromkeys(columns, np.array(
            [np.nan])), np.array([True]), {} if error is None else {0: error})
    gradients = {label: np.array([number]) for name, value in result.gradients.items()
                 for label, number in _elements(name, value)}
    report = result.check
    checks = None if report is None else {
        name: GradientSweepCheck(np.array([np.nan if c.numeric is None else c.numeric]),
                                 np.array([np.inf if c.abs_error is None else c.abs_error]),
                                 np.array([c.tolerance]), np.array([c.ok]))
        for name, c in report.gradients.items()}
    sweep = Sweep(program, columns, np.array([float(result.value)]), gradients,
                  np.array([False]), checks=checks)
    if report is not None:
        sweep.rtol, sweep.atol = report.rtol, report.atol
    return sweep


def _elements(name: str, value: Any) -> Iterator[tuple[str, float]]:
    """``W`` of shape 2x2 as (``W[0,0]``, 1.0), (``W[0,1]``, 2.0)...; a number as itself."""
    from gradcli.engine import arrays

    np = arrays.numpy()
    array = np.asarray(value, dtype=float)
    if not array.ndim:
        yield name, float(array)
        return
    for index in np.ndindex(array.shape):
        yield f"{name}[{','.join(map(str, index))}]", float(array[index])
