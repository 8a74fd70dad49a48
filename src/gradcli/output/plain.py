"""Tables and texts as the lines Rich prints in a pipe, written without loading Rich.

A table or a result piped to a file or a program has no colour, so Rich's work there is the
layout of ``FittedTable`` in its plain box (``box.SIMPLE``: a blank line, the header, a rule,
the rows, a blank line), and Rich's modules are most of the start-up of such a ``gradcli
eval``. ``plain_lines`` makes exactly those lines for the layout where every cell fits its
column on one line; anything else (a folded or wrapped cell, the record layout of a table too
wide, a wide or control character, an encoding without the rule's ``─``, an environment that
makes Rich colour a pipe) answers None, and Rich draws it as always. tests/test_startup.py
compares the two on the same results.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import IO, Any

from gradcli.output.tables import Column, FittedTable
from gradcli.output.text import Text, is_narrow

# Environment variables with which Rich draws for a terminal in a pipe (colour, escapes)
_RICH_TERMINAL = ("FORCE_COLOR", "TTY_COMPATIBLE")


def writes_plain(stream: IO[str]) -> bool:
    """Whether Rich would print plain text to ``stream``: not a terminal, UTF-8 (or Rich draws
    ASCII rules), nothing in the environment that makes Rich colour a pipe."""
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    return (not stream.isatty() and encoding == "utf8" and sys.platform != "win32"
            and not any(name in os.environ for name in _RICH_TERMINAL))


def plain_lines(parts: Sequence[Any], width: int) -> list[str] | None:
    """The lines (without their ends) that a Rich console of ``width`` in a pipe prints for
    ``parts`` (Texts and plain ``FittedTable``\\ s, one under the other), spaces at the ends of
    lines dropped as ``console.make_console`` drops them; None where only Rich can say."""
    lines: list[str] = []
    for part in parts:
        if isinstance(part, Text):
            made: list[str] | None = part.plain.split("\n")
        elif isinstance(part, FittedTable) and part.plain:
            made = _table_lines(part, width)
        else:
            return None
        if made is None or not all(is_narrow(line) for line in made):
            return None
        lines += [line.rstrip(" ") for line in made]
    return lines


def _table_lines(table: FittedTable, width: int) -> list[str] | None:
    widths = table.widths(width)
    if widths is None or any(column.justify not in ("left", "right") for column in table.columns):
        return None  # the record layout, or a centred column
    header = [column.header for column in table.columns]
    rows = [[cell.plain for cell in cells] for cells in table.cells()]
    if not all(_fits(text, size) for row in [header, *rows]
               for text, size in zip(row, widths, strict=True)):
        return None  # a cell folds or wraps
    title = [] if table.title is None else table.title.split("\n")
    rule = " " + "─" * (sum(widths) + 3 * len(widths) - 1)
    return [*title, "", _row(header, table.columns, widths), rule,
            *(_row(row, table.columns, widths) for row in rows), ""]


def _fits(text: str, width: int) -> bool:
    return "\n" not in text and len(text) <= width


def _row(texts: list[str], columns: list[Column], widths: list[int]) -> str:
    """A row of the plain box: each cell padded by a space on each side, the columns apart by
    one more, an edge of one space at each end."""
    cells = [text.rjust(size) if column.justify == "right" else text.ljust(size)
             for text, column, size in zip(texts, columns, widths, strict=True)]
    return "  " + "   ".join(cells) + "  "
