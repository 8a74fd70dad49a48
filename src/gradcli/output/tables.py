"""Tables whose numbers are printed whole at any width (``FittedTable``); user text goes in as
``Text``, never markup, so ``[bold]`` in a label prints as typed."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from gradcli.output.console import MIN_WIDTH
from gradcli.output.text import Text, cell_len, rich_text

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, JustifyMethod
    from rich.measure import Measurement
    from rich.table import Table

MAX_TABLE_ROWS = 400  # a larger graph shows its first and last rows and says how many it hid


class Column(NamedTuple):
    """A column of a ``FittedTable``: as wide as its longest text, unless it may ``fold``
    (labels, messages) down to its header's longest word (with ``words``, a cell's too). In the
    record layout a ``head`` column starts each row's block, the others show as ``header
    text`` unless ``in_records=False``. (Not a dataclass: that would cost ~1 ms at import.)"""

    header: str
    justify: JustifyMethod = "left"
    fold: bool = False
    words: bool = False
    head: bool = False
    in_records: bool = True
    style: str = ""


_NOTHING = ("", "—")  # cells the record layout leaves out (no input, no gradient, not checked)
FOLD_FLOOR = 6  # the narrowest a folding column gets (its header or words may ask for more)
RECORD_INDENT = 2  # the indent of a block's continuation lines in the record layout


class FittedTable:
    """A table whose numbers are printed whole at any width: every column at its natural width
    if that fits, else the folding columns narrowed (the widest first), else one block of lines
    per row (``#3 x*W + b  op add  value 7 ...``), a field never split. A note row (``… 12 more
    nodes``) sits in the first folding column, or on a line of its own."""

    def __init__(self, title: str | None, columns: Sequence[Column], plain: bool = False) -> None:
        self.title = title
        self.columns = list(columns)
        self.plain = plain
        # a row's cells (Texts, gradcli's or Rich's) and field names, or a note
        self.rows: list[tuple[list[Any], list[str] | None] | Any] = []

    def add_row(self, *cells: Any, fields: Sequence[str] | None = None) -> None:
        """One row; ``fields`` names its record-layout fields (default: the headers)."""
        assert len(cells) == len(self.columns), "one cell per column"
        self.rows.append((list(cells), None if fields is None else list(fields)))

    def add_note(self, note: Any) -> None:
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
            if not isinstance(row, tuple):
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

    def _note_text(self, note: Any) -> Text:
        return Text.assemble(Text("… ", style="dim"), note) if self._note_column == 0 else note

    def cells(self) -> Iterator[list[Any]]:
        """Each row's cells as the table shows them (a note: ``…`` and the note)."""
        for row in self.rows:
            if isinstance(row, tuple):
                yield row[0]
                continue
            cells: list[Any] = [Text("") for _ in self.columns]
            cells[0] = Text("…", style="dim")
            cells[self._note_column] = self._note_text(row)
            yield cells

    def table(self, widths: Sequence[int]) -> Table:
        from rich import box
        from rich.table import Table

        table = Table(box=box.SIMPLE if self.plain else box.ROUNDED, header_style="bold")
        for column, width in zip(self.columns, widths, strict=True):
            table.add_column(column.header, justify=column.justify, style=column.style,
                             width=width, no_wrap=not column.fold, overflow="fold")
        for cells in self.cells():
            table.add_row(*map(rich_text, cells))
        return table

    def records(self, width: int) -> Iterator[Text]:
        """One block per row: its head cells, then ``header text`` fields packed into lines."""
        for row in self.rows:
            if not isinstance(row, tuple):
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
        from rich.measure import Measurement

        return Measurement(min(MIN_WIDTH, options.max_width), options.max_width)


def _styled(cell: Any, style: str) -> Text:
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


def _block(head: Text, fields: list[tuple[str, Column, Any]], width: int) -> Text:
    """A row of the record layout: the head, then each ``name text`` field where it still fits
    on the line, else on the next, indented; a number too long for a line goes under its name,
    a folding field too long wraps as text."""
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

