"""The consoles gradcli prints to: colour on a terminal, plain lines in a pipe."""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

# The narrowest layout: the longest number (-2.2250738585072014e-308) fits with its indent.
MIN_WIDTH = 30
PIPE_WIDTH = 200  # the layout width of tables in a pipe (COLUMNS, when sane, overrides it)
MAX_WIDTH = 10_000  # COLUMNS above this counts as this


@cache
def _console_class() -> type[Console]:
    """Rich's console, letting the CLI end a closed pipe with its own status (Rich exits 1)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _Console


class _TrimmedLines:
    """A text stream that drops the spaces Rich pads lines with, so that ``diff`` and ``grep
    'x$'`` see what a person sees."""

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
    """The layout width: a sane ``COLUMNS``, else the terminal's (at least ``MIN_WIDTH``), else
    ``PIPE_WIDTH`` in a pipe."""
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
    """A console with colour on a terminal (NO_COLOR respected) and plain text in a pipe, where
    a record line (a batch line, an error) is never wrapped or cut and no line ends in spaces.
    No emoji codes: Rich would load its emoji table (a few ms of every start) to find them."""
    stream = sys.stderr if stderr else sys.stdout
    width = console_width(stream)
    console = _console_class()
    if stream.isatty():
        return console(file=stream, width=width, highlight=False, soft_wrap=False, emoji=False)
    return console(file=_TrimmedLines(stream), width=width, highlight=False, soft_wrap=True,
                   emoji=False)

