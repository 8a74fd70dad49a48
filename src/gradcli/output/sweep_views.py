"""Rich renderables for sweeps (``gradcli eval --x -2:2:9``) and check runs (``gradcli check``).

As in ``render.py``, user text goes in as ``Text`` (never markup), and nothing here prints.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.text import Text

from gradcli.engine.notation import format_number
from gradcli.errors import ExitStatus, visible
from gradcli.formulas.run import CheckOutcome, format_point
from gradcli.gradcheck.sweep import Sweep
from gradcli.output.views import MAX_TABLE_ROWS, titled_table


def sweep_view(sweep: Sweep, plain: bool = False) -> RenderableType:
    """One row per point (variables, value, gradients, verdict), then a one-line summary."""
    names = list(sweep.columns)
    table = titled_table(f"{sweep.size:,} points", plain)
    for name in names:
        table.add_column(name, justify="right", style="bold")
    table.add_column("value", justify="right", style="cyan")
    for name in names:
        table.add_column(f"d/d{name}", justify="right", style="magenta")
    table.add_column("check")
    ok = sweep.check_ok
    shown = range(min(sweep.size, MAX_TABLE_ROWS))
    for index in shown:
        coordinates = [Text(format_number(sweep.columns[name][index])) for name in names]
        if sweep.failed[index]:
            table.add_row(*coordinates, *[Text("—", style="dim")] * (1 + len(names)),
                          Text(sweep.error_message(index), style="red"))
            continue
        numbers = [sweep.value[index], *(sweep.gradients[name][index] for name in names)]
        table.add_row(*coordinates, *(Text(format_number(x)) for x in numbers),
                      _verdict_cell(sweep, bool(ok[index])))
    if sweep.size > len(shown):
        table.add_row(Text("…", style="dim"),
                      Text(f"{sweep.size - len(shown):,} more points (--csv or --json list all)"))
    return Group(table, sweep_summary(sweep))


def sweep_summary(sweep: Sweep) -> Text:
    failed = int(sweep.failed.sum())
    text = Text()
    if failed:
        text.append(f"✗ numeric error at {failed:,} of {_points(sweep.size)}\n", style="bold red")
    if sweep.checks is None:
        return text.append("finite-difference check skipped (--no-check)", style="dim")
    disagree = int((~sweep.check_ok & ~sweep.failed).sum())
    if failed == sweep.size:
        return text.append("no point left to check", style="dim")
    if disagree:
        text.append(f"✗ check failed at {disagree:,} of {_points(sweep.size)} ", style="bold red")
    else:
        text.append("✓ check passed ", style="bold green")
        rest = " without numeric errors" if failed else ""
        text.append(f"at {_points(sweep.size - failed)}{rest} ")
    return text.append(f"(rtol {sweep.rtol:g}, atol {sweep.atol:g})")


def _points(count: int) -> str:
    return f"{count:,} point" + ("" if count == 1 else "s")


def _verdict_cell(sweep: Sweep, ok: bool) -> Text:
    if sweep.checks is None:
        return Text("—", style="dim")
    return Text("✓", style="green") if ok else Text("✗", style="bold red")


def check_view(outcomes: Sequence[CheckOutcome], plain: bool = False) -> RenderableType:
    """The summary table, the details of every failure, and the totals."""
    table = titled_table("gradcli check", plain)
    for column in ("check", "points", "worst error", "where", "verdict"):
        table.add_column(column, justify="right" if column in ("points", "worst error") else "left")
    for outcome in outcomes:
        worst = outcome.worst
        error = "—" if worst is None or worst.worst_error is None else f"{worst.worst_error:.1e}"
        where = "" if worst is None else worst.assertion + (
            "" if worst.worst_point is None else f" at {format_point(worst.worst_point)}")
        table.add_row(Text(outcome.spec.name, style="bold"), Text(f"{outcome.points:,}"),
                      Text(error), Text(where, style="dim"), _check_verdict(outcome))
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
        text = Text(f"✓ {passed} check{'' if passed == 1 else 's'} passed", style="bold green")
    else:
        text = Text(f"✗ {failed} of {len(outcomes)} checks failed", style="bold red")
    return text.append(f" ({_points(points)})", style="")


def _check_verdict(outcome: CheckOutcome) -> Text:
    extra = f", {outcome.skipped:,} points skipped" if outcome.skipped else ""
    if outcome.status == ExitStatus.NUMERIC:
        return Text("✗ numeric error" + extra, style="bold red")
    if not outcome.ok:
        return Text("✗ failed" + extra, style="bold red")
    return Text("✓ passed" + extra, style="green")
