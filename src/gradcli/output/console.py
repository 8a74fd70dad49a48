"""The consoles gradcli prints to: colour on a terminal, plain lines in a pipe.

``make_console`` picks the width, and in a pipe keeps each record line (a batch line, a
derivative, an error) on one line and ends no line in spaces.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

# The narrowest layout gradcli makes: the longest number (24 characters, -2.2250738585072014e-308)
# fits on a line with its indent. COLUMNS below this (0 and 1 included) is ignored, a terminal
# narrower than this gets lines this long.
MIN_WIDTH = 30
PIPE_WIDTH = 200  # the layout width of tables in a pipe (COLUMNS, when sane, overrides it)
MAX_WIDTH = 10_000  # COLUMNS above this counts as this


@cache
def _console_class() -> type[Console]:
    """Rich's console, which lets the CLI end a closed pipe with its documented status (Rich
    would exit with 1); made when a console is (Rich loads only to draw)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _Console


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
    console = _console_class()
    if stream.isatty():
        return console(file=stream, width=width, highlight=False, soft_wrap=False, emoji=False)
    return console(file=_TrimmedLines(stream), width=width, highlight=False, soft_wrap=True,
                   emoji=False)

