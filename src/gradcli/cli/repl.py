"""``gradcli repl`` (and ``gradcli`` alone on a terminal): an interactive session, read with
prompt_toolkit on a terminal (``cli.terminal``), else line by line with no prompt, ending with
the largest status of its entries, so that a session can be scripted."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

import click

from gradcli.cli.arguments import digits_option, full_option
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
@digits_option("an array past a few elements is summarised (--full prints them all)")
@full_option()
def repl_command(digits: int | None, full: bool) -> None:
    from gradcli.cli.session import Session

    session = Session(digits=digits, full=full)
    if sys.stdin.isatty() and sys.stdout.isatty():
        from gradcli.cli.terminal import run_on_terminal

        run_on_terminal(session)
        raise click.exceptions.Exit(ExitStatus.OK)
    from gradcli.cli.program_text import stdin_lines  # as a batch reads them: not UTF-8 is U+FFFD
    from gradcli.limits import max_chars

    raise click.exceptions.Exit(run_lines(session, stdin_lines(max_chars())))


def run_lines(session: Session, lines: Iterable[str]) -> int:
    """Entries from a stream, a line at a time (joined while a parenthesis or bracket is
    open); returns the largest status among them."""
    from gradcli.cli.session import GrowingEntry

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
