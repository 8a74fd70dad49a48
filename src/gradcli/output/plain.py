"""Tables and texts as the lines Rich prints in a pipe (no colour: ``FittedTable``'s plain box,
wrapped cells included), written without loading Rich (most of such a run's start-up). What only
Rich can lay out (a table's record layout, wide characters, colour forced) answers None.
tests/test_plain_output.py compares the two."""

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
    """Whether Rich would print plain text to ``stream``: not a terminal, UTF-8 (else Rich draws
    ASCII rules), nothing in the environment that makes Rich colour a pipe."""
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    return (not stream.isatty() and encoding == "utf8" and sys.platform != "win32"
            and not any(name in os.environ for name in _RICH_TERMINAL))


def plain_lines(parts: Sequence[Any], width: int) -> list[str] | None:
    """The lines that a Rich console of ``width`` in a pipe prints for ``parts`` (Texts and plain
    ``FittedTable``\\ s), ends stripped as ``console.make_console`` does; None where only Rich
    can say."""
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
    """A row of the plain box: each cell's lines, shorter cells filled below (a header's above:
    Rich aligns it to the bottom), cells padded by a space and one more between columns."""
    cells = [_cell_lines(text, size, column.justify, column.fold)
             for text, column, size in zip(texts, columns, widths, strict=True)]
    height = max(len(lines) for lines in cells)
    for lines, size in zip(cells, widths, strict=True):
        at = 0 if bottom else len(lines)
        lines[at:at] = [" " * size] * (height - len(lines))
    return ["  " + "   ".join(line) + "  " for line in zip(*cells, strict=True)]


# A word and the spaces around it, as rich._wrap reads them
_WORD = r"\s*\S+\s*"
_TRAILING_SPACE = r"\s+$"


def _cell_lines(text: str, width: int, justify: str, wrap: bool) -> list[str]:
    """A cell's text as Rich's ``Text.wrap`` lays it out ``width`` wide (overflow "fold"): lines
    broken before words that do not fit, then justified (every character one column wide)."""
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
            cuts = range(start, start + len(word), width)
            breaks += [cut for cut in cuts if cut]
            used = len(word) - (len(cuts) - 1) * width
        elif used and start:
            breaks.append(start)
            used = len(word)
    return breaks


def _end_trimmed(piece: str, width: int) -> str:
    """Rich's ``rstrip_end``: as many end spaces of ``piece`` as it is longer than ``width``."""
    excess = len(piece) - width
    found = re.search(_TRAILING_SPACE, piece) if excess > 0 else None
    return piece[:len(piece) - min(len(found.group()), excess)] if found else piece
