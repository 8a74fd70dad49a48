"""Tables and texts as the lines Rich prints in a pipe, written without loading Rich.

A table or a result piped to a file or a program has no colour, so Rich's work there is the
layout of ``FittedTable`` in its plain box (``box.SIMPLE``: a blank line, the header, a rule,
the rows, a blank line), and Rich's modules are most of the start-up of such a ``gradcli
eval``. ``plain_lines`` makes exactly those lines, cells that wrap over several lines (an
array's elements, a long label) included; anything else (the record layout of a table too
wide, a wide or control character, an encoding without the rule's ``─``, an environment that
makes Rich colour a pipe) answers None, and Rich draws it as always. tests/test_plain_output.py
compares the two on the same results.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from itertools import pairwise
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
    header = _row_lines([column.header for column in table.columns], table.columns, widths,
                        bottom=True)
    rows = [line for cells in table.cells()
            for line in _row_lines([cell.plain for cell in cells], table.columns, widths)]
    title = [] if table.title is None else table.title.split("\n")
    rule = " " + "─" * (sum(widths) + 3 * len(widths) - 1)
    return [*title, "", *header, rule, *rows, ""]


def _row_lines(texts: list[str], columns: list[Column], widths: list[int],
               bottom: bool = False) -> list[str]:
    """A row of the plain box: each cell's lines (``_cell_lines``), the shorter cells filled
    with blank lines below (the header's above, as Rich aligns a header to its bottom); each
    line a cell padded by a space on each side, the columns apart by one more, an edge of one
    space at each end."""
    cells = [_cell_lines(text, size, column.justify, column.fold)
             for text, column, size in zip(texts, columns, widths, strict=True)]
    height = max(len(lines) for lines in cells)
    for lines, size in zip(cells, widths, strict=True):
        at = 0 if bottom else len(lines)
        lines[at:at] = [" " * size] * (height - len(lines))
    return ["  " + "   ".join(line) + "  " for line in zip(*cells, strict=True)]


# A word and the spaces around it, as rich._wrap reads them (compiled by ``re`` on first use)
_WORD = r"\s*\S+\s*"
_TRAILING_SPACE = r"\s+$"


def _cell_lines(text: str, width: int, justify: str, wrap: bool) -> list[str]:
    """A cell's text as Rich's ``Text.wrap`` lays it out in a column ``width`` wide (overflow
    "fold"): each of its lines broken before the words that do not fit (a word longer than the
    width cut into pieces of the width), then justified to the width. Every character counts
    one column: ``plain_lines`` declines lines with any other."""
    lines = []
    for line in text.split("\n"):
        pieces = [line]
        if wrap and len(line) > width:  # a line that fits is one piece (and compiles no regex)
            ends = [0, *_breaks(line, width), len(line)]
            pieces = [_end_trimmed(line[start:end], width) for start, end in pairwise(ends)]
        lines += [piece.rstrip()[:width].rjust(width) if justify == "right" else
                  piece[:width].ljust(width) for piece in pieces]
    return lines


def _breaks(text: str, width: int) -> list[int]:
    """Where ``rich._wrap.divide_line`` breaks ``text`` for ``width`` (folding long words)."""
    breaks: list[int] = []
    used = 0
    for match in re.finditer(_WORD, text):
        start, word = match.start(), match.group()
        length = len(word.rstrip())
        if width - used >= length:
            used += len(word)
        elif length > width:  # folded: pieces of the width, the last one continues its line
            pieces = [word[at:at + width] for at in range(0, len(word), width)]
            for piece in pieces[:-1]:
                if start:
                    breaks.append(start)
                start += len(piece)
            if start:
                breaks.append(start)
            used = len(pieces[-1])
        elif used and start:
            breaks.append(start)
            used = len(word)
    return breaks


def _end_trimmed(piece: str, width: int) -> str:
    """Rich's ``rstrip_end``: the spaces at the end of a piece longer than the width, as many
    as it is too long."""
    excess = len(piece) - width
    found = re.search(_TRAILING_SPACE, piece) if excess > 0 else None
    return piece[:len(piece) - min(len(found.group()), excess)] if found else piece
