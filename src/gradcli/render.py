"""Rich renderables for people: the per-node table, the gradients, the verdict, errors.

Every piece of user text goes in as ``Text`` (never as markup), so ``[bold]`` in a label prints as
typed. Functions here build renderables and never print or exit; the CLI does that.
"""

from __future__ import annotations

import itertools
import os
import sys

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from .api import LineOutcome, Result
from .check import CheckReport, GradientCheck
from .errors import GradcliError
from .graph import format_number
from .limits import listed

MAX_TABLE_ROWS = 400  # a larger graph shows its first and last rows and says how many it hid
MAX_LINE_GRADIENTS = 50  # a batch line shows this many gradients, then how many more


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """Let the CLI end a closed pipe with its documented status (Rich would exit with 1)."""
        self.quiet = True
        raise BrokenPipeError


def make_console(stderr: bool = False) -> Console:
    """A console with colour on a terminal (NO_COLOR respected) and plain text in a pipe."""
    stream = sys.stderr if stderr else sys.stdout
    wide = None if stream.isatty() or "COLUMNS" in os.environ else 200
    return _Console(file=stream, width=wide, highlight=False, soft_wrap=False)


def result_view(result: Result, plain: bool = False) -> RenderableType:
    """The node table, the gradient table and the check verdict of one program."""
    parts: list[RenderableType] = [node_table(result, plain), gradient_table(result, plain)]
    if result.check is not None:
        parts.append(verdict(result.check))
    else:
        parts.append(Text("finite-difference check skipped (--no-check)", style="dim"))
    return Group(*parts)


def node_table(result: Result, plain: bool = False) -> Table:
    checks = result.check.nodes if result.check is not None else {}
    table = _table(f"value {format_number(result.value)}", plain)
    for column in ("id", "label", "op", "inputs"):
        table.add_column(column, overflow="fold")
    for column in ("value", "gradient", "numeric", "error"):
        table.add_column(column, justify="right")
    rows = result.node_rows()
    shown = rows if len(rows) <= MAX_TABLE_ROWS else rows[: MAX_TABLE_ROWS // 2]
    for row in shown:
        check = checks.get(row.id)
        table.add_row(
            Text(f"#{row.id}", style="dim"),
            Text(row.label, style="bold" if row.op == "var" else ""),
            Text(row.op, style="dim"),
            Text(" ".join(f"#{i}" for i in row.inputs), style="dim"),
            Text(format_number(row.value), style="cyan"),
            Text("—" if row.grad is None else format_number(row.grad), style="magenta"),
            *_check_cells(check),
        )
    if len(rows) > len(shown):
        hidden = len(rows) - len(shown) - 1
        table.add_row(Text("…", style="dim"), Text(f"{hidden:,} more nodes (--json lists all)"))
        last = rows[-1]
        table.add_row(Text(f"#{last.id}"), Text(last.label), Text(last.op), Text(""),
                      Text(format_number(last.value)), Text(format_number(last.grad or 0.0)))
    return table


def gradient_table(result: Result, plain: bool = False) -> Table:
    table = _table("gradients of the output", plain)
    table.add_column("variable")
    for column in ("value", "gradient", "numeric", "error"):
        table.add_column(column, justify="right")
    table.add_column("ok")
    checks = result.check.gradients if result.check is not None else {}
    shown = itertools.islice(result.gradients.items(), MAX_TABLE_ROWS)
    for name, gradient in shown:
        check = checks.get(name)
        table.add_row(
            Text(name, style="bold"),
            Text(format_number(result.point[name]), style="cyan"),
            Text(format_number(gradient), style="magenta"),
            *_check_cells(check),
            _mark(check),
        )
    if len(result.gradients) > MAX_TABLE_ROWS:
        hidden = len(result.gradients) - MAX_TABLE_ROWS
        table.add_row(Text("…", style="dim"), Text(f"{hidden:,} more variables (--json lists all)"))
    return table


def verdict(check: CheckReport) -> Text:
    count, failed = len(check.checks), check.failures
    tolerances = f"rtol {check.rtol:g}, atol {check.atol:g}"
    if not failed:
        text = Text("✓ check passed: ", style="bold green")
        text.append(f"{count} gradients agree with finite differences "
                    f"(max abs error {check.max_abs_error:.1e}; {tolerances})")
    else:
        text = Text("✗ check failed: ", style="bold red")
        text.append(f"{len(failed)} of {count} gradients disagree with finite differences "
                    f"({tolerances}); a point where the function is not differentiable "
                    "(relu or abs at 0, min/max at a tie) fails this way too")
    if check.nodes_skipped:
        text.append("\nper-node check skipped: the graph is too large; input gradients checked",
                    style="dim")
    if check.unchecked:
        text.append(f"\n{len(check.unchecked):,} variables unchecked (not verified): the check's "
                    f"budget ran out ({listed(check.unchecked)})", style="yellow")
    return text


def error_view(error: GradcliError, source_name: str = "") -> Text:
    """``error: …`` then, for a position, the source line with a caret under the column."""
    text = Text("error: ", style="bold red")
    text.append(f"{source_name}{error.title}: {error.message}")
    if error.source_line is not None and error.column is not None:
        line = printable(error.source_line)
        text.append(f"\n  {line}\n  {' ' * (error.column - 1)}")
        text.append("^", style="bold red")
    if error.hint:
        text.append("\n  hint: ", style="yellow")
        text.append(error.hint)
    return text


def batch_line(outcome: LineOutcome) -> Text:
    """One line of human batch output: line number, value, gradients, verdict or the error."""
    text = Text(f"line {outcome.line}: ", style="dim")
    if outcome.error is not None:
        text.append(outcome.error.one_line(), style="red")
        return text
    result = outcome.result
    assert result is not None
    text.append(f"value {format_number(result.value)}", style="cyan")
    for name, gradient in itertools.islice(result.gradients.items(), MAX_LINE_GRADIENTS):
        text.append(f"  d/d{name} {format_number(gradient)}", style="magenta")
    if len(result.gradients) > MAX_LINE_GRADIENTS:
        text.append(f"  … {len(result.gradients) - MAX_LINE_GRADIENTS:,} more", style="dim")
    if result.check is not None:
        text.append("  ✓" if result.check.ok else "  ✗ check failed",
                    style="green" if result.check.ok else "bold red")
    return text


def printable(line: str) -> str:
    """The line with control characters shown as '?', one column each, so the caret lines up."""
    return "".join(c if c.isprintable() else "?" for c in line)


def _table(title: str, plain: bool) -> Table:
    return Table(title=title, title_justify="left", box=box.SIMPLE if plain else box.ROUNDED,
                 header_style="bold", title_style="bold")


def _check_cells(check: GradientCheck | None) -> tuple[Text, Text]:
    if check is None:
        return Text("—", style="dim"), Text("—", style="dim")
    if check.numeric is None:
        return Text("n/a", style="bold red"), Text("no finite difference", style="bold red")
    style = "green" if check.ok else "bold red"
    return Text(f"{check.numeric:.10g}"), Text(f"{check.abs_error:.1e}", style=style)


def _mark(check: GradientCheck | None) -> Text:
    if check is None:
        return Text("—", style="dim")
    return Text("✓", style="green") if check.ok else Text("✗", style="bold red")
