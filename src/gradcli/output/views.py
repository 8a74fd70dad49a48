"""Rich renderables for people: the per-node table, the gradients, the verdict, errors.

Every piece of user text goes in as ``Text`` (never as markup), so ``[bold]`` in a label prints as
typed. Functions here build renderables and never print or exit; the CLI does that.

A number is printed whole (``number_text``: its shortest round-trip text, or ``digits``
significant digits when asked), never cut to fit: a table too wide for the screen folds its label
columns, and if that is not enough, shows one block of lines per row (``FittedTable``).
``make_console`` picks the width, and in a pipe keeps each record line (a batch line, a
derivative, an error) on one line and ends no line in spaces.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from gradcli.engine.notation import format_number
from gradcli.engine.ops import CONST
from gradcli.errors import GradcliError, listed, plural, visible
from gradcli.gradcheck.evaluation import FreeResult, LineOutcome, NodeRow, Result
from gradcli.limits import MAX_DRAWN_NODES

if TYPE_CHECKING:  # annotations only: graph trees, pictures and the check's types
    from rich.console import JustifyMethod
    from rich.tree import Tree

    from gradcli.gradcheck.check import CheckReport, GradientCheck
    from gradcli.output.pictures import GraphPicture, TreeEntry

# The narrowest layout gradcli makes: the longest number (24 characters, -2.2250738585072014e-308)
# fits on a line with its indent. COLUMNS below this (0 and 1 included) is ignored, a terminal
# narrower than this gets lines this long.
MIN_WIDTH = 30
PIPE_WIDTH = 200  # the layout width of tables in a pipe (COLUMNS, when sane, overrides it)
MAX_WIDTH = 10_000  # COLUMNS above this counts as this
MAX_DIGITS = 17  # every float reads back from 17 significant digits; more would be noise
MAX_TABLE_ROWS = 400  # a larger graph shows its first and last rows and says how many it hid
NUMERIC_DIGITS = 10  # the finite-difference estimate's column, when --digits is not given
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


class _TrimmedLines:
    """A text stream that drops the spaces at the end of each line it passes on (Rich pads table
    cells and titles): piped output ends its lines where the text ends, so that ``tail``,
    ``diff`` and ``grep 'x$'`` see what a person sees."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.pending = ""  # the start of a line not yet ended

    def write(self, text: str) -> int:
        lines = (self.pending + text).split("\n")
        self.pending = lines.pop()
        if lines:
            self.stream.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.stream.write(self.pending)
            self.pending = ""
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, ...: the stream's
        return getattr(self.stream, name)


def console_width(stream: IO[str]) -> int:
    """The layout width: ``COLUMNS`` when it is a sane number (``MIN_WIDTH`` to ``MAX_WIDTH``),
    else the terminal's own width (at least ``MIN_WIDTH``), else ``PIPE_WIDTH`` in a pipe."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) >= MIN_WIDTH:
        return min(int(columns), MAX_WIDTH)
    if not stream.isatty():
        return PIPE_WIDTH
    try:
        width = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        width = 0
    return max(width or 80, MIN_WIDTH)  # a pseudo-terminal may report 0


def make_console(stderr: bool = False) -> Console:
    """A console with colour on a terminal (NO_COLOR respected) and plain text in a pipe.

    On a terminal lines wrap at its width. In a pipe, lines that are one record each (a batch
    line, a derivative, an error) are never wrapped or cut, whatever the width; tables keep a
    layout width (``console_width``) and never cut a number (``FittedTable``); no line ends in
    spaces. No ``:emoji:`` codes: gradcli's titles and headers have none, and Rich would load its
    emoji table (a few ms of every start) to look for them.
    """
    stream = sys.stderr if stderr else sys.stdout
    width = console_width(stream)
    if stream.isatty():
        return _Console(file=stream, width=width, highlight=False, soft_wrap=False, emoji=False)
    return _Console(file=_TrimmedLines(stream), width=width, highlight=False, soft_wrap=True,
                    emoji=False)


def number_text(value: float, digits: int | None = None) -> str:
    """``value`` in full (its shortest text that reads back as the same float, ``2`` rather than
    ``2.0``), or rounded to ``digits`` significant digits (``f"{value:.{digits}g}"``)."""
    if digits is None or (type(value) is not float and getattr(value, "ndim", 0)):
        return format_number(value)  # an array: as the language writes it (graph trees)
    return f"{float(value):.{digits}g}"


def checked_digits(digits: int | None) -> int | None:
    """``digits`` if it is None or 1 to ``MAX_DIGITS``; a ValueError otherwise."""
    if digits is not None and (isinstance(digits, bool) or not isinstance(digits, int)
                               or not 1 <= digits <= MAX_DIGITS):
        raise ValueError(f"digits must be 1 to {MAX_DIGITS} (or None for every digit), "
                         f"not {digits!r}")
    return digits


# --- tables that never cut a number ---------------------------------------------------------


class Column:
    """A column of a ``FittedTable``.

    A column that does not ``fold`` (numbers, ids, marks) is always as wide as its longest text.
    A folding column (labels, expressions, messages) may be made narrower, and its texts then
    continue on the next lines: down to its header's longest word, and with ``words`` never
    narrower than the longest word of a cell either (a text with numbers in it). In the record
    layout a ``head`` column starts each row's block; the others show as ``header text``, and a
    column with ``in_records=False`` is left out there. (A plain class: a dataclass would cost
    about 1 ms of every table's start-up, compiling its methods when this module loads.)
    """

    __slots__ = ("fold", "head", "header", "in_records", "justify", "style", "words")

    def __init__(self, header: str, justify: JustifyMethod = "left", fold: bool = False,
                 words: bool = False, head: bool = False, in_records: bool = True,
                 style: str = "") -> None:
        self.header = header
        self.justify: JustifyMethod = justify
        self.fold = fold
        self.words = words
        self.head = head
        self.in_records = in_records
        self.style = style

    def __repr__(self) -> str:
        return f"Column({self.header!r})"


_NOTHING = ("", "—")  # cells the record layout leaves out (no input, no gradient, not checked)
FOLD_FLOOR = 6  # the narrowest a folding column gets (its header or words may ask for more)
RECORD_INDENT = 2  # the indent of a block's continuation lines in the record layout


class FittedTable:
    """A table whose numbers are printed whole at any width.

    At render time the width decides the layout: every column at its natural width if that fits;
    else the folding columns are narrowed (the widest first); and if even the narrowest table is
    too wide, one block of lines per row (``#3 x*W + b  op add  value 7  gradient -2 ...``),
    packed to the width, a field never split. A note row (``… 12 more nodes``) sits in the first
    folding column, or is a line of its own in the record layout.
    """

    def __init__(self, title: str | None, columns: Sequence[Column], plain: bool = False) -> None:
        self.title = title
        self.columns = list(columns)
        self.plain = plain
        self.rows: list[tuple[list[Text], list[str] | None] | Text] = []

    def add_row(self, *cells: Text, fields: Sequence[str] | None = None) -> None:
        """One row; ``fields`` names the record-layout fields of the non-head columns (default:
        their headers)."""
        assert len(cells) == len(self.columns), "one cell per column"
        self.rows.append((list(cells), None if fields is None else list(fields)))

    def add_note(self, note: Text) -> None:
        assert any(column.fold for column in self.columns), "a note needs a folding column"
        self.rows.append(note)

    # -- layout --

    def widths(self, width: int) -> list[int] | None:
        """Each column's text width for a table at most ``width`` wide, or None if none fits."""
        count = len(self.columns)
        space = width - 3 * count - 1  # one space of padding each side, count + 1 rules
        natural = [_longest_line(column.header) for column in self.columns]
        floors = [max(_longest_word(column.header), FOLD_FLOOR) for column in self.columns]
        for row in self.rows:
            if isinstance(row, Text):
                at = self._note_column
                natural[at] = max(natural[at], _longest_line(self._note_text(row).plain))
                continue
            for i, cell in enumerate(row[0]):
                natural[i] = max(natural[i], _longest_line(cell.plain))
                if self.columns[i].words:
                    floors[i] = max(floors[i], _longest_word(cell.plain))
        floors = [min(floor, size) if column.fold else size
                  for floor, size, column in zip(floors, natural, self.columns, strict=True)]
        if sum(floors) > space:
            return None
        if sum(natural) <= space:
            return natural
        low, high = 0, max(natural)  # the largest cap on folding columns that fits
        while low < high:
            cap = (low + high + 1) // 2
            if sum(_capped(natural, floors, self.columns, cap)) <= space:
                low = cap
            else:
                high = cap - 1
        return _capped(natural, floors, self.columns, low)

    @property
    def _note_column(self) -> int:
        return next(i for i, column in enumerate(self.columns) if column.fold)

    def _note_text(self, note: Text) -> Text:
        return Text.assemble(Text("… ", style="dim"), note) if self._note_column == 0 else note

    def table(self, widths: Sequence[int]) -> Table:
        table = Table(box=box.SIMPLE if self.plain else box.ROUNDED, header_style="bold")
        for column, width in zip(self.columns, widths, strict=True):
            table.add_column(column.header, justify=column.justify, style=column.style,
                             width=width, no_wrap=not column.fold, overflow="fold")
        for row in self.rows:
            if isinstance(row, Text):
                cells = [Text("") for _ in self.columns]
                cells[0] = Text("…", style="dim")
                cells[self._note_column] = self._note_text(row)
                table.add_row(*cells)
            else:
                table.add_row(*row[0])
        return table

    def records(self, width: int) -> Iterator[Text]:
        """One block per row: its head cells, then ``header text`` fields packed into lines."""
        for row in self.rows:
            if isinstance(row, Text):
                yield Text.assemble(Text("… ", style="dim"), row)
                continue
            cells, fields = row
            head = Text()
            for cell, column in zip(cells, self.columns, strict=True):
                if column.head and cell.plain:
                    head.append(" " if head else "")
                    head.append(_styled(cell, column.style))
            named = [(column, _styled(cell, column.style))
                     for column, cell in zip(self.columns, cells, strict=True)
                     if not column.head and column.in_records]
            names = fields if fields is not None else [column.header for column, _ in named]
            yield _block(head, [(name, column, cell) for name, (column, cell)
                                in zip(names, named, strict=True)
                                if cell.plain not in _NOTHING], width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Any]:
        width = options.max_width
        if self.title is not None:
            yield Text(self.title, style="bold")
        widths = self.widths(width)
        if widths is not None:
            yield self.table(widths)
        else:  # blank lines around the blocks, where a plain table has its empty rules
            yield Text("")
            yield from self.records(width)
            yield Text("")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(min(MIN_WIDTH, options.max_width), options.max_width)


def _styled(cell: Text, style: str) -> Text:
    """The cell with its column's style under its own, as the table would show it."""
    styled = Text(style=style)
    styled.append(cell)
    return styled


def _capped(natural: list[int], floors: list[int], columns: list[Column], cap: int) -> list[int]:
    return [max(floor, min(width, cap)) if column.fold else width
            for width, floor, column in zip(natural, floors, columns, strict=True)]


def _longest_line(text: str) -> int:
    return max((cell_len(line) for line in text.split("\n")), default=0)


def _longest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


def _block(head: Text, fields: list[tuple[str, Column, Text]], width: int) -> Text:
    """A row of the record layout: the head, then each ``name text`` field where it still fits
    on the line, else on the next line, indented. A number field too long for a line of its own
    puts its name and its number on two lines; a folding field (a message, an expression) too
    long for one wraps as text, and the field after it starts the next line."""
    block = head.copy()
    used = cell_len(head.plain)  # the width of the block's last line
    indent = " " * RECORD_INDENT
    for name, column, cell in fields:
        piece = Text.assemble(Text(f"{name} " if name else "", style="dim"), cell)
        size = cell_len(piece.plain)
        if used and used + 2 + size <= width:
            block.append("  ")
            block.append(piece)
            used += 2 + size
            continue
        start = RECORD_INDENT if block.plain else 0
        if block.plain:
            block.append("\n" + indent)
        if not column.fold and name and start + size > width:
            block.append(Text(name, style="dim"))
            start += RECORD_INDENT
            block.append("\n" + " " * start)
            piece, size = cell, cell_len(cell.plain)
        block.append(piece)
        used = start + size if start + size <= width else width  # wrapped: next on a new line
    return block


FREE_HINT = "give them values for numbers; --strict makes this an error"


def result_view(result: Result | FreeResult, plain: bool = False,
                digits: int | None = None, full: bool = False,
                free_hint: str = FREE_HINT) -> RenderableType:
    """The node table, the gradient table and the check verdict of one program.

    ``digits``: print values and gradients rounded to that many significant digits (1 to
    ``MAX_DIGITS``); None prints every number in full (its shortest round-trip text).
    ``free_hint``: how to give free variables values where the result is shown (the command
    line, an interactive session, Python).
    """
    digits = checked_digits(digits)
    if isinstance(result, FreeResult):
        return free_view(result, plain, digits, free_hint)
    if not isinstance(result, Result):  # several outputs or an array output: a Jacobian
        from gradcli.output.jacobian_views import jacobian_view

        return jacobian_view(result, plain, digits, full)
    if result.program.arrays:  # ``full``: every element of large arrays
        from gradcli.output.array_views import array_result_view

        return array_result_view(result, plain, digits, full)
    parts: list[RenderableType] = [node_table(result, plain, digits),
                                   gradient_table(result, plain, digits)]
    if result.check is not None:
        parts.append(verdict(result.check))
    else:
        parts.append(Text("finite-difference check skipped (--no-check)", style="dim"))
    if result.hessian is not None:
        parts += [Text(""), hessian_table(result, plain, digits)]
        if result.hessian.check is not None:
            parts.append(hessian_verdict(result.hessian.check))
    return Group(*parts)


def hessian_verdict(check: CheckReport) -> Text:
    """The Hessian check's verdict; when no gradient depends on a variable every entry is an
    exact 0 and nothing was compared, which ``0 second derivatives agree`` would hide."""
    if not check.checks and not check.unchecked:
        return Text("✓ nothing to check: no gradient depends on a variable, so every entry of "
                    "the Hessian is exactly 0", style="green")
    return verdict(check, ("second derivative", "second derivatives"),
                   "finite differences of the gradient")


def hessian_table(result: Result, plain: bool = False, digits: int | None = None) -> FittedTable:
    """The Hessian at the point; a mark on each entry checked by finite differences. (Too wide
    for the screen: one line of ``row,column entry`` fields per row.)"""
    assert result.hessian is not None
    digits = checked_digits(digits)
    checks = result.hessian.check.gradients if result.hessian.check is not None else {}
    names = list(result.hessian.matrix)
    table = FittedTable("Hessian of the output", [
        Column("", fold=True, words=True, in_records=False, style="bold"),
        *(Column(name, justify="right") for name in names)], plain)
    for row_name, row in result.hessian.matrix.items():
        cells = []
        for name in names:
            check = checks.get(f"{row_name},{name}")
            cell = Text(number_text(row[name], digits), style="magenta")
            if check is not None:
                cell.append(" ✓" if check.ok else " ✗", style="green" if check.ok else "bold red")
            cells.append(cell)
        table.add_row(Text(row_name), *cells, fields=[f"{row_name},{name}" for name in names])
    return table


def derivative_view(texts: dict, latex: bool = False, of: str | None = None) -> Text:
    """One line per derivative: ``d/dx = ...``, ``d2/dx dy = ...`` (or LaTeX's partials);
    ``of`` names the output (``df/dx``) of a program with several."""
    from gradcli.symbolic.printing import LATEX_LINE_BREAK

    text = Text()
    lines: list[tuple[tuple[str, ...], Any]] = [((), texts)]
    while any(isinstance(value, dict) for _, value in lines):  # one level per order
        lines = [((*path, name), inner) for path, level in lines for name, inner in level.items()]
    for path, expression in lines:
        if text:
            text.append("\n")
        label = _derivative_label(path, latex, of)
        if latex:  # statements (t_{1} = ...) on their own lines, the derivative last
            *statements, expression = expression.split(LATEX_LINE_BREAK)
            text.append("".join(line + LATEX_LINE_BREAK for line in statements))
        text.append(label, style="bold")
        # A program with statements (t1 = ...; ...) follows a colon, so that it reads as one.
        text.append(": " if not latex and "; " in expression else " = ")
        text.append(expression)
    return text


def _derivative_label(path: tuple[str, ...], latex: bool, of: str | None = None) -> str:
    order = "" if len(path) == 1 else str(len(path))
    top = "" if of is None else of if of.isidentifier() else f"({of})"
    if latex:
        power = "" if len(path) == 1 else f"^{{{len(path)}}}"
        from gradcli.symbolic.printing import LATEX  # names as the formula writes them: \beta

        below = " ".join(rf"\partial {LATEX.name(name)}" for name in path)
        return rf"\frac{{\partial{power} {top or 'f'}}}{{{below}}}"
    return f"d{order}{top}/" + " ".join(f"d{name}" for name in path)


def free_view(result: FreeResult, plain: bool = False,
              digits: int | None = None, free_hint: str = FREE_HINT) -> RenderableType:
    """Value and gradients of a program with free variables, as expressions."""
    digits = checked_digits(digits)
    table = FittedTable("value " + result.value, [
        Column("variable", fold=True, head=True, style="bold"),
        Column("value", justify="right", style="cyan"),
        Column("gradient (expression)", fold=True, style="magenta")], plain)
    for name, gradient in result.gradients.items():
        bound = result.point.get(name)
        table.add_row(Text(name), Text("free" if bound is None else number_text(bound, digits)),
                      Text(gradient))
    note = Text(f"free variables: {', '.join(result.free)} ({free_hint})", style="dim")
    return Group(table, note, *(Text(f"note: {n.message}; {n.hint}", style="yellow")
                                for n in result.notes))


_NUMBER_COLUMNS = ("value", "gradient", "numeric", "error")


def node_table(result: Result, plain: bool = False, digits: int | None = None) -> FittedTable:
    """One row per node: id, label, op, inputs, value, gradient and the per-node check."""
    digits = checked_digits(digits)
    checks = result.check.nodes if result.check is not None else {}
    table = FittedTable(f"value {number_text(result.value, digits)}", [
        Column("id", head=True, style="dim"), Column("label", fold=True, head=True),
        Column("op", style="dim"), Column("inputs", fold=True, words=True, style="dim"),
        *(Column(name, justify="right") for name in _NUMBER_COLUMNS)], plain)
    count = len(result.program.nodes)
    wanted = None if count <= MAX_TABLE_ROWS else [*range(MAX_TABLE_ROWS // 2), count - 1]
    rows = result.node_rows(wanted)  # only the rows shown
    shown = rows if count <= MAX_TABLE_ROWS else rows[:-1]
    for row in shown:
        table.add_row(*_node_cells(row, checks.get(row.id), digits))
    if count > len(shown):
        hidden = count - len(shown) - 1
        table.add_note(Text(f"{plural(hidden, 'more node')} (--json lists all)"))
        last = rows[-1]
        table.add_row(*_node_cells(last, checks.get(last.id), digits))
    return table


def _node_cells(row: NodeRow, check: GradientCheck | None, digits: int | None) -> list[Text]:
    return [
        Text(f"#{row.id}"),
        Text(row.label, style="bold" if row.op == "var" else ""),
        Text(row.op),
        Text(" ".join(f"#{i}" for i in row.inputs)),
        Text("not taken" if row.value is None else number_text(row.value, digits),
             style="cyan"),
        Text("—", style="dim") if row.grad is None else Text(number_text(row.grad, digits),
                                                             style="magenta"),
        *_check_cells(check, digits),
    ]


def gradient_table(result: Result, plain: bool = False, digits: int | None = None) -> FittedTable:
    """One row per input variable: its value, gradient and check."""
    digits = checked_digits(digits)
    table = FittedTable("gradients of the output", [
        Column("variable", fold=True, head=True, style="bold"),
        *(Column(name, justify="right") for name in _NUMBER_COLUMNS), Column("ok")], plain)
    checks = result.check.gradients if result.check is not None else {}
    shown = itertools.islice(result.gradients.items(), MAX_TABLE_ROWS)
    for name, gradient in shown:
        check = checks.get(name)
        table.add_row(
            Text(name),
            Text(number_text(result.point[name], digits), style="cyan"),
            Text(number_text(gradient, digits), style="magenta"),
            *_check_cells(check, digits),
            _mark(check),
        )
    if len(result.gradients) > MAX_TABLE_ROWS:
        hidden = len(result.gradients) - MAX_TABLE_ROWS
        table.add_note(Text(f"{plural(hidden, 'more variable')} (--json lists all)"))
    return table


POLE_GRADIENT = 1e12  # a gradient this large is a pole's, not a formula's mistake


def _likely_cause(failed: list[GradientCheck], boundaries: list[str] | None = None) -> str:
    """What else makes a correct gradient fail: a condition that switched (``boundaries``), a
    pole (a huge gradient no step can follow) or a kink; a wrong gradient is what the check
    exists to catch, so these are only "may be"."""
    if boundaries:
        return (f"the condition {listed(boundaries)} switches within a finite-difference "
                "step of this point: the pieces meet here and the difference mixes both, as at "
                "relu's kink (the gradient is that of the piece the condition picks)")
    largest = max(abs(check.analytic) for check in failed)
    if largest >= POLE_GRADIENT:
        return (f"a gradient of {largest:.1e} means the point is at or next to a "
                "pole (tan at pi/2, 1/x at 0), where finite differences cannot converge")
    return KINK_CAUSE


KINK_CAUSE = ("a point where the function is not differentiable (relu or abs at 0, min/max at a "
              "tie) or jumps (floor or round at a whole number) fails this way too")


def tolerances(check: Any) -> str:
    return f"rtol {format_number(check.rtol)}, atol {format_number(check.atol)}"


def check_verdict(ok: bool, agreement: str, disagreement: str) -> Text:
    """``✓ check passed: …`` or ``✗ check failed: …``: every check's verdict looks alike."""
    if ok:
        return Text("✓ check passed: ", style="bold green").append(agreement)
    return Text("✗ check failed: ", style="bold red").append(disagreement)


def verdict(check: CheckReport, what: tuple[str, str] = ("gradient", "gradients"),
            against: str | None = None) -> Text:
    """``✓ check passed: 5 gradients agree with ...`` or ``✗ check failed: 1 of 5 gradients
    disagrees ...``; ``what`` is the thing checked, singular and plural."""
    count, failed = len(check.checks), check.failures
    against = against or _METHOD_WORDS[check.method]
    things = plural(count, *what)
    text = check_verdict(
        not failed,
        f"{things} {'agrees' if count == 1 else 'agree'} with {against} "
        f"(max abs error {check.max_abs_error:.1e}; {tolerances(check)})",
        f"{len(failed):,} of {things} {'disagrees' if len(failed) == 1 else 'disagree'} with "
        f"{against} ({tolerances(check)}); "
        + (_likely_cause(failed, check.boundaries) if failed else ""))
    if check.nodes_skipped and what[1] == "gradients":
        text.append("\nper-node check skipped: the graph is too large; input gradients checked",
                    style="dim")
    if check.unchecked:
        text.append(f"\n{plural(len(check.unchecked), 'variable')} unchecked (not verified): the "
                    f"check's budget ran out ({listed(check.unchecked)})", style="yellow")
    return text


def error_view(error: GradcliError, source_name: str = "") -> Text:
    """``error: …`` then, for a position, the source line with a caret under the column."""
    text = Text("error: ", style="bold red")
    # visible(): a file name or path in a message must not drive the terminal (or add lines)
    text.append(visible(f"{source_name}{error.title}: {error.message}"))
    if error.source_line is not None and error.column is not None:
        line, column = _window(printable(error.source_line), error.column)
        text.append(f"\n  {line}\n  ")
        offset = column - error.column
        carets = sorted({column, *(mark + offset for mark in error.marks if mark + offset > 0)})
        done = 1
        for caret in carets:
            text.append(" " * (caret - done))
            text.append("^", style="bold red")
            done = caret + 1
    if error.hint:
        text.append("\n  hint: ", style="yellow")
        text.append(visible(error.hint))
    return text


SOURCE_WINDOW = 60  # characters of the source line shown on each side of the caret


def _window(line: str, column: int) -> tuple[str, int]:
    """The part of a long source line around ``column`` (marked ``…`` where cut) and the caret's
    column in it: a 10^6-character line is not echoed whole."""
    start = max(0, column - 1 - SOURCE_WINDOW)
    end = column - 1 + SOURCE_WINDOW
    if start == 0 and end >= len(line):
        return line, column
    head = "…" if start else ""
    return head + line[start:end] + ("…" if end < len(line) else ""), column - start + len(head)


def batch_line(outcome: LineOutcome, digits: int | None = None, full: bool = False) -> Text:
    """One line of human batch output: line number, value, gradients, Hessian, H·v, verdict or
    the error (numbers in full, or to ``digits`` significant digits; ``full``: every element of
    a large Jacobian or Hessian block)."""
    digits = checked_digits(digits)
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
        text.append(f"  (free: {listed(result.free)})", style="yellow")
        for note in result.notes:
            text.append(f"  ({note.message})", style="yellow")
        return text
    if not isinstance(result, Result):  # several outputs: values and the Jacobian's blocks
        from gradcli.output.jacobian_views import jacobian_line

        return jacobian_line(text, result, digits, full)
    text.append(f"value {number_text(result.value, digits)}", style="cyan")
    for name, gradient in itertools.islice(result.gradients.items(), MAX_LINE_GRADIENTS):
        text.append(f"  d/d{name} {_line_value(gradient, digits, True)}", style="magenta")
    if len(result.gradients) > MAX_LINE_GRADIENTS:
        text.append(f"  … {len(result.gradients) - MAX_LINE_GRADIENTS:,} more", style="dim")
    if result.hessian is not None:
        _hessian_line(text, result.hessian.matrix, digits, full)
    if result.hvp is not None:  # an array program's H·v (--hvp), one part per input
        for name, part in result.hvp.product.items():
            text.append(f"  H·v {name} {_line_value(part, digits, full)}", style="magenta")
    if result.check is not None:
        text.append("  ✓" if result.status == 0 else "  ✗ check failed",
                    style="green" if result.status == 0 else "bold red")
    return text


def _line_value(value: Any, digits: int | None, full: bool) -> str:
    """A number, or an array as the language writes it (summarised unless ``full``)."""
    if type(value) is float or not getattr(value, "ndim", 0):
        return number_text(value, digits)
    from gradcli.output.array_views import array_text

    return array_text(value, digits, full)


def _hessian_line(text: Text, matrix: dict, digits: int | None, full: bool) -> None:
    """``d2/dx [6, 4]`` per row of numbers; an array program's blocks one by one,
    ``d2/dz dz [[6, 0], [0, 12]]`` (each the shape of one input followed by the other's)."""
    blocks = [block for row in matrix.values() for block in row.values()]
    if not any(getattr(block, "ndim", 0) for block in blocks):
        for row_name, row in matrix.items():
            entries = ", ".join(number_text(v, digits) for v in row.values())
            text.append(f"  d2/d{row_name} [{entries}]", style="magenta")
        return
    for row_name, row in matrix.items():
        for name, block in row.items():
            text.append(f"  d2/d{row_name} d{name} {_line_value(block, digits, full)}",
                        style="magenta")


def printable(line: str) -> str:
    """The line with control characters shown as '?', one column each, so the caret lines up."""
    return "".join(c if c.isprintable() else "?" for c in line)


def titled_table(title: str, plain: bool) -> Table:
    return Table(title=title, title_justify="left", box=box.SIMPLE if plain else box.ROUNDED,
                 header_style="bold", title_style="bold")


def _check_cells(check: GradientCheck | None, digits: int | None = None) -> tuple[Text, Text]:
    """The finite-difference estimate (to 10 significant digits, or ``digits``: about what
    central differences get right) and its error."""
    if check is None:
        return Text("—", style="dim"), Text("—", style="dim")
    if check.numeric is None:
        return Text("n/a", style="bold red"), Text("no finite difference", style="bold red")
    style = "green" if check.ok else "bold red"
    return (Text(f"{check.numeric:.{digits or NUMERIC_DIGITS}g}"),
            Text(f"{check.abs_error:.1e}", style=style))


def _mark(check: GradientCheck | None) -> Text:
    if check is None:
        return Text("—", style="dim")
    return Text("✓", style="green") if check.ok else Text("✗", style="bold red")


# --- the graph as a tree (gradcli graph --format tree) ----------------------------------------
# The walk is pictures.tree_outline (iterative; a node used again is referenced as ``↺ label``);
# this only dresses its entries.

_KIND_STYLES = {"input": "bold blue", "const": "dim", "intermediate": "", "output": "bold green"}


def graph_tree(picture: GraphPicture, max_nodes: int = MAX_DRAWN_NODES,
               max_depth: int = 30, digits: int | None = None) -> Tree:
    """A Rich tree of ``picture``: op, label, value and gradient per node, flows on the edges.

    Below ``max_depth`` levels the guides would push the text off the screen, so deeper operands
    are left out (and counted with the other elided nodes).
    """
    from rich.tree import Tree

    from gradcli.output.pictures import tree_outline, unused_inputs

    class WholeLines(Tree):
        """Where lines do not wrap (a pipe), each node's line is printed whole: Rich would cut
        a tree's lines at the width."""

        def __rich_console__(self, console: Console, options: ConsoleOptions) -> Any:
            if options.no_wrap:
                wide = options.update_width(MAX_WIDTH)
                width = super().__rich_measure__(console, wide).maximum
                options = options.update_width(max(width, options.max_width))
            return super().__rich_console__(console, options)

    digits = checked_digits(digits)
    entries, elided = tree_outline(picture, max_nodes, max_depth)
    trees: list[Tree] = []
    for entry in entries:
        line = _entry_text(picture, entry, digits)
        if entry.parent is None:
            tree = WholeLines(line, guide_style="dim")
        else:
            tree = trees[entry.parent].add(line)
        trees.append(tree)
    root = trees[0]
    if picture.note is not None:
        root.add(Text(picture.note, style="yellow"))
    unused = unused_inputs(picture)
    if unused:
        names = ", ".join(visible(picture.label(node)) for node in unused)
        root.add(Text(f"inputs the output does not use (gradient 0): {names}", style="dim"))
    if elided:
        root.add(Text(f"… {plural(elided, 'more node')} not shown (raise --max-nodes, 0 for all; "
                      f"the tree goes {max_depth} levels deep, --format dot draws every level)",
                      style="dim"))
    return root


def _entry_text(picture: GraphPicture, entry: TreeEntry, digits: int | None) -> Text:
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
        if picture.program.arrays and picture.shape(node):
            text.append(f"  shape {picture.shape(node)}", style="dim")
        value = picture.value_of(node)
        if value is not None and node.op is not CONST and not picture.taken(node):
            text.append("  not taken", style="cyan")  # a branch not taken (a where's)
        elif value is not None and node.op is not CONST:
            text.append(f"  value {picture.number(value, digits)}", style="cyan")
            if picture.evaluated and node.needs_grad:
                text.append(f"  grad {picture.number(node.grad, digits)}", style="magenta")
    if entry.flow is not None:
        text.append(f"  ← {picture.number(entry.flow, digits)} along this edge", style="red")
    if entry.cut:
        text.append("  (operands deeper than this are not shown)", style="dim")
    return text
