"""Rich renderables for people: the per-node table, the gradients, the verdict, errors.

Every piece of user text goes in as ``Text`` (never as markup), so ``[bold]`` in a label prints as
typed. Functions here build renderables and never print or exit; the CLI does that.
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from gradcli.engine.notation import format_number
from gradcli.engine.ops import CONST
from gradcli.errors import GradcliError, listed, visible
from gradcli.gradcheck.evaluation import FreeResult, LineOutcome, Result
from gradcli.gradcheck.point import CheckReport, GradientCheck
from gradcli.limits import MAX_DRAWN_NODES

if TYPE_CHECKING:  # graph trees only: eval's table imports neither
    from rich.tree import Tree

    from gradcli.output.pictures import GraphPicture, TreeEntry

MAX_TABLE_ROWS = 400  # a larger graph shows its first and last rows and says how many it hid
MAX_LINE_GRADIENTS = 50  # a batch line shows this many gradients, then how many more
# How the verdict names each --check-method (central keeps the words it always had).
_METHOD_WORDS = {
    "central": "finite differences",
    "complex": "complex-step derivatives",
    "richardson": "Richardson-extrapolated differences",
}


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """Let the CLI end a closed pipe with its documented status (Rich would exit with 1)."""
        self.quiet = True
        raise BrokenPipeError


def make_console(stderr: bool = False) -> Console:
    """A console with colour on a terminal (NO_COLOR respected) and plain text in a pipe.

    No ``:emoji:`` codes: gradcli's titles and headers have none, and Rich would load its
    emoji table (a few ms of every start) to look for them.
    """
    stream = sys.stderr if stderr else sys.stdout
    wide = None if stream.isatty() or "COLUMNS" in os.environ else 200
    return _Console(file=stream, width=wide, highlight=False, soft_wrap=False, emoji=False)


def result_view(result: Result | FreeResult, plain: bool = False) -> RenderableType:
    """The node table, the gradient table and the check verdict of one program."""
    if isinstance(result, FreeResult):
        return free_view(result, plain)
    parts: list[RenderableType] = [node_table(result, plain), gradient_table(result, plain)]
    if result.check is not None:
        parts.append(verdict(result.check))
    else:
        parts.append(Text("finite-difference check skipped (--no-check)", style="dim"))
    if result.hessian is not None:
        parts += [Text(""), hessian_table(result, plain)]
        if result.hessian.check is not None:
            parts.append(verdict(result.hessian.check, "second derivatives",
                                 "finite differences of the gradient"))
    return Group(*parts)


def hessian_table(result: Result, plain: bool = False) -> Table:
    """The Hessian at the point; a mark on each entry checked by finite differences."""
    assert result.hessian is not None
    checks = result.hessian.check.gradients if result.hessian.check is not None else {}
    table = titled_table("Hessian of the output", plain)
    table.add_column("")
    names = list(result.hessian.matrix)
    for name in names:
        table.add_column(name, justify="right")
    for row_name, row in result.hessian.matrix.items():
        cells = []
        for name in names:
            check = checks.get(f"{row_name},{name}")
            cell = Text(format_number(row[name]), style="magenta")
            if check is not None:
                cell.append(" ✓" if check.ok else " ✗", style="green" if check.ok else "bold red")
            cells.append(cell)
        table.add_row(Text(row_name, style="bold"), *cells)
    return table


def derivative_view(texts: dict, latex: bool = False) -> Text:
    """One line per derivative: ``d/dx = ...``, ``d2/dx dy = ...`` (or LaTeX's partials)."""
    from gradcli.engine.printing import LATEX_LINE_BREAK

    text = Text()
    lines: list[tuple[tuple[str, ...], Any]] = [((), texts)]
    while any(isinstance(value, dict) for _, value in lines):  # one level per order
        lines = [((*path, name), inner) for path, level in lines for name, inner in level.items()]
    for path, expression in lines:
        if text:
            text.append("\n")
        label = _derivative_label(path, latex)
        if latex:  # statements (t_{1} = ...) on their own lines, the derivative last
            *statements, expression = expression.split(LATEX_LINE_BREAK)
            text.append("".join(line + LATEX_LINE_BREAK for line in statements))
        text.append(label, style="bold")
        # A program with statements (t1 = ...; ...) follows a colon, so that it reads as one.
        text.append(": " if not latex and "; " in expression else " = ")
        text.append(expression)
    return text


def _derivative_label(path: tuple[str, ...], latex: bool) -> str:
    order = "" if len(path) == 1 else str(len(path))
    if latex:
        power = "" if len(path) == 1 else f"^{{{len(path)}}}"
        below = " ".join(rf"\partial {name}" for name in path)
        return rf"\frac{{\partial{power} f}}{{{below}}}"
    return f"d{order}/" + " ".join(f"d{name}" for name in path)


def free_view(result: FreeResult, plain: bool = False) -> RenderableType:
    """Value and gradients of a program with free variables, as expressions."""
    table = titled_table("value " + result.value, plain)
    table.add_column("variable")
    table.add_column("value", justify="right")
    table.add_column("gradient (expression)", overflow="fold")
    for name, gradient in result.gradients.items():
        bound = result.point.get(name)
        table.add_row(Text(name, style="bold"),
                      Text("free" if bound is None else format_number(bound), style="cyan"),
                      Text(gradient, style="magenta"))
    note = Text(f"free variables: {', '.join(result.free)} (give them values for numbers; "
                "--strict makes this an error)", style="dim")
    return Group(table, note)


def node_table(result: Result, plain: bool = False) -> Table:
    checks = result.check.nodes if result.check is not None else {}
    table = titled_table(f"value {format_number(result.value)}", plain)
    for column in ("id", "label", "op", "inputs"):
        table.add_column(column, overflow="fold")
    for column in ("value", "gradient", "numeric", "error"):
        table.add_column(column, justify="right")
    count = len(result.program.nodes)
    wanted = None if count <= MAX_TABLE_ROWS else [*range(MAX_TABLE_ROWS // 2), count - 1]
    rows = result.node_rows(wanted)  # only the rows shown
    shown = rows if count <= MAX_TABLE_ROWS else rows[:-1]
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
    if count > len(shown):
        hidden = count - len(shown) - 1
        table.add_row(Text("…", style="dim"), Text(f"{hidden:,} more nodes (--json lists all)"))
        last = rows[-1]
        table.add_row(Text(f"#{last.id}"), Text(last.label), Text(last.op), Text(""),
                      Text(format_number(last.value)), Text(format_number(last.grad or 0.0)))
    return table


def gradient_table(result: Result, plain: bool = False) -> Table:
    table = titled_table("gradients of the output", plain)
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


def verdict(check: CheckReport, what: str = "gradients",
            against: str | None = None) -> Text:
    count, failed = len(check.checks), check.failures
    against = against or _METHOD_WORDS[check.method]
    tolerances = f"rtol {check.rtol:g}, atol {check.atol:g}"
    if not failed:
        text = Text("✓ check passed: ", style="bold green")
        text.append(f"{count} {what} agree with {against} "
                    f"(max abs error {check.max_abs_error:.1e}; {tolerances})")
    else:
        text = Text("✗ check failed: ", style="bold red")
        text.append(f"{len(failed)} of {count} {what} disagree with {against} "
                    f"({tolerances}); a point where the function is not differentiable "
                    "(relu or abs at 0, min/max at a tie) fails this way too")
    if check.nodes_skipped and what == "gradients":
        text.append("\nper-node check skipped: the graph is too large; input gradients checked",
                    style="dim")
    if check.unchecked:
        text.append(f"\n{len(check.unchecked):,} variables unchecked (not verified): the check's "
                    f"budget ran out ({listed(check.unchecked)})", style="yellow")
    return text


def error_view(error: GradcliError, source_name: str = "") -> Text:
    """``error: …`` then, for a position, the source line with a caret under the column."""
    text = Text("error: ", style="bold red")
    # visible(): a file name or path in a message must not drive the terminal (or add lines)
    text.append(visible(f"{source_name}{error.title}: {error.message}"))
    if error.source_line is not None and error.column is not None:
        line = printable(error.source_line)
        text.append(f"\n  {line}\n  {' ' * (error.column - 1)}")
        text.append("^", style="bold red")
    if error.hint:
        text.append("\n  hint: ", style="yellow")
        text.append(visible(error.hint))
    return text


def batch_line(outcome: LineOutcome) -> Text:
    """One line of human batch output: line number, value, gradients, verdict or the error."""
    text = Text(f"line {outcome.line}: ", style="dim")
    if outcome.error is not None:
        text.append(visible(outcome.error.one_line()), style="red")
        return text
    result = outcome.result
    assert result is not None
    if isinstance(result, FreeResult):
        text.append(f"value {result.value}", style="cyan")
        for name, gradient in result.gradients.items():
            text.append(f"  d/d{name} {gradient}", style="magenta")
        return text
    text.append(f"value {format_number(result.value)}", style="cyan")
    for name, gradient in itertools.islice(result.gradients.items(), MAX_LINE_GRADIENTS):
        text.append(f"  d/d{name} {format_number(gradient)}", style="magenta")
    if len(result.gradients) > MAX_LINE_GRADIENTS:
        text.append(f"  … {len(result.gradients) - MAX_LINE_GRADIENTS:,} more", style="dim")
    if result.hessian is not None:
        for row_name, row in result.hessian.matrix.items():
            entries = ", ".join(format_number(v) for v in row.values())
            text.append(f"  d2/d{row_name} [{entries}]", style="magenta")
    if result.check is not None:
        text.append("  ✓" if result.status == 0 else "  ✗ check failed",
                    style="green" if result.status == 0 else "bold red")
    return text


def printable(line: str) -> str:
    """The line with control characters shown as '?', one column each, so the caret lines up."""
    return "".join(c if c.isprintable() else "?" for c in line)


def titled_table(title: str, plain: bool) -> Table:
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


# --- the graph as a tree (gradcli graph --format tree) ----------------------------------------
# The walk is pictures.tree_outline (iterative; a node used again is referenced as ``↺ label``);
# this only dresses its entries.

_KIND_STYLES = {"input": "bold blue", "const": "dim", "intermediate": "", "output": "bold green"}


def graph_tree(picture: GraphPicture, max_nodes: int = MAX_DRAWN_NODES,
               max_depth: int = 30) -> Tree:
    """A Rich tree of ``picture``: op, label, value and gradient per node, flows on the edges.

    Below ``max_depth`` levels the guides would push the text off the screen, so deeper operands
    are left out (and counted with the other elided nodes).
    """
    from rich.tree import Tree

    from gradcli.output.pictures import tree_outline

    entries, elided = tree_outline(picture, max_nodes, max_depth)
    trees: list[Tree] = []
    for entry in entries:
        line = _entry_text(picture, entry)
        if entry.parent is None:
            tree = Tree(line, guide_style="dim")
        else:
            tree = trees[entry.parent].add(line)
        trees.append(tree)
    root = trees[0]
    if picture.note is not None:
        root.add(Text(picture.note, style="yellow"))
    if elided:
        root.add(Text(f"… {elided:,} more nodes not shown (raise --max-nodes, 0 for all; the tree "
                      f"goes {max_depth} levels deep, --format dot draws every level)",
                      style="dim"))
    return root


def _entry_text(picture: GraphPicture, entry: TreeEntry) -> Text:
    node = entry.node
    kind = picture.kind(node)
    text = Text()
    if entry.repeat:
        text.append("↺ ", style="dim")
        text.append(visible(picture.label(node)), style=_KIND_STYLES[kind])
        text.append(f"  #{node.index}", style="dim")
    else:
        text.append(f"#{node.index} ", style="dim")
        text.append(visible(picture.label(node)), style=_KIND_STYLES[kind])
        if node.op is not CONST:
            text.append(f"  {node.op.name}", style="dim")
        value = picture.value_of(node)
        if value is not None and node.op is not CONST:
            text.append(f"  value {format_number(value)}", style="cyan")
            if picture.evaluated and node.needs_grad:
                text.append(f"  grad {format_number(node.grad)}", style="magenta")
    if entry.flow is not None:
        text.append(f"  ← {format_number(entry.flow)} along this edge", style="red")
    if entry.cut:
        text.append("  (operands deeper than this are not shown)", style="dim")
    return text
