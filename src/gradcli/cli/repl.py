"""``gradcli repl`` (and ``gradcli`` alone on a terminal): an interactive session.

On a terminal the session reads with prompt_toolkit (``cli.terminal``: history, Tab completion,
an open parenthesis or bracket continues the line); from a pipe or a file it reads lines as
they come, with no prompt, and ends with the largest status of its entries, so a session can
be scripted. This module is imported at every start of gradcli and imports nothing heavy itself.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

import click

from gradcli.cli.base import cli
from gradcli.errors import ExitStatus

if TYPE_CHECKING:
    from gradcli.cli.session import Session

REPL_HELP = """Start an interactive session: definitions persist, each expression prints its
value, gradients and finite-difference check as `gradcli eval` does.

\b
  gradcli> W = 3
  gradcli> u = x*W
  gradcli> (u - 2)**2 + sin(x)         # x free: value and gradients as expressions
  gradcli> x = 1.5                     # now numbers, checked
  gradcli> :diff x                     # :help lists the commands
\b
History is kept in $XDG_STATE_HOME/gradcli/history (~/.local/state/gradcli/history).
With stdin not a terminal, entries are read one per line (a line with an open parenthesis
or bracket continues on the next), nothing is prompted, and the exit status is the largest of the
entries' (2 usage, parse or name error; 3 numeric error; 1 a check failed).
"""


@cli.command("repl", help=REPL_HELP)
def repl_command() -> None:
    from gradcli.cli.session import Session

    session = Session()
    if sys.stdin.isatty() and sys.stdout.isatty():
        from gradcli.cli.terminal import run_on_terminal

        run_on_terminal(session)
        raise click.exceptions.Exit(ExitStatus.OK)
    raise click.exceptions.Exit(run_lines(session, sys.stdin))


def run_lines(session: Session, lines: Iterable[str]) -> int:
    """Entries from a stream, a line at a time (joined while a parenthesis or bracket is
    open); returns the largest status among them."""
    status: int = ExitStatus.OK
    pending, entry = "", GrowingEntry()
    for line in lines:
        pending += line
        if entry.open_brackets(pending) > 0:
            continue
        status = max(status, session.run(pending))
        pending = ""
        if session.quit:
            return status
    if pending.strip():
        status = max(status, session.run(pending))
    return status


def open_brackets(text: str) -> int:
    """How many ``(`` and ``[`` are not closed yet (comments ignored): the entry goes on, as a
    newline inside brackets does in a file. Counted by ``str.count``, not a loop per character:
    the terminal asks at every key of a 90 KB paste."""
    if "#" in text:
        text = _COMMENT.sub("", text)
    return text.count("(") + text.count("[") - text.count(")") - text.count("]")


_COMMENT = re.compile(r"#[^\r\n]*")


class GrowingEntry:
    """``open_brackets`` of an entry that grows at its end, as typing or a paste makes it: the
    whole lines seen before are counted once, so a key costs a comparison with them (C speed)
    and a count of the last line, not a count of the whole entry."""

    def __init__(self) -> None:
        self.counted = ""  # whole lines, up to and with their last newline
        self.depth = 0

    def open_brackets(self, text: str) -> int:
        if not text.startswith(self.counted):
            self.counted, self.depth = "", 0
        cut = text.rfind("\n") + 1
        if cut > len(self.counted):
            self.depth += open_brackets(text[len(self.counted):cut])
            self.counted = text[:cut]
        return self.depth + open_brackets(text[cut:])
