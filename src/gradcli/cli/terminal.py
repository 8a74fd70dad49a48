"""The session on a terminal, with prompt_toolkit (imported only here, only by ``gradcli repl``).

History lives in the XDG state directory, Tab completes functions, constants, the session's
names and ``:commands``, Enter with an open parenthesis continues the entry on the next line,
Ctrl-C cancels the line being typed (or stops an evaluation), Ctrl-D leaves. prompt_toolkit
follows ``NO_COLOR`` itself, and the results are printed by the same consoles as ``eval``'s.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import click
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.history import FileHistory, History, InMemoryHistory

from gradcli import __version__
from gradcli.cli.repl import open_parentheses
from gradcli.cli.session import ALIASES, COMMANDS, Session

PROMPT = "gradcli> "
_WORD = re.compile(r"[:A-Za-z_]\w*$")


def history_path() -> Path:
    """``$XDG_STATE_HOME/gradcli/history``; ``~/.local/state/...`` when it is unset or not an
    absolute path (the XDG rule: a relative path is to be ignored)."""
    state = os.environ.get("XDG_STATE_HOME", "")
    root = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return root / "gradcli" / "history"


def _history() -> History:
    path = history_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    except OSError as error:
        click.echo(f"note: history is not kept: cannot write {path}: "
                   f"{error.strerror or error}", err=True)
        return InMemoryHistory()
    return FileHistory(str(path))


class SessionCompleter(Completer):
    """Functions, constants, the session's names and the last expression's variables; after
    ``:`` at the start, the commands."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterator[Completion]:
        before = document.text_before_cursor
        match = _WORD.search(before)
        word = match.group() if match else ""
        if word.startswith(":"):
            if before.lstrip() == word:
                yield from self._offer(word, [*COMMANDS, *ALIASES], "command")
            return
        yield from self._offer(word, list(self.session.definitions), "defined")
        yield from self._offer(word, self._variables(), "variable")
        from gradcli.engine.ops import CONSTANTS, FUNCTIONS

        yield from self._offer(word, list(CONSTANTS), "constant")
        yield from self._offer(word, list(FUNCTIONS), "function")

    def _variables(self) -> list[str]:
        if self.session.last is None:
            return []
        try:
            program = self.session.parsed(self.session.last)
        except Exception:  # a completion must never end the session
            return []
        return [name for name in program.variables if name not in self.session.definitions]

    @staticmethod
    def _offer(word: str, names: list[str], kind: str) -> Iterator[Completion]:
        for name in names:
            if name.startswith(word):
                yield Completion(name, start_position=-len(word), display_meta=kind)


def run_on_terminal(session: Session) -> None:
    """Prompt, run, repeat, until ``:quit`` or Ctrl-D."""
    prompt: PromptSession[str] = PromptSession(
        history=_history(), completer=SessionCompleter(session),
        multiline=Condition(lambda: open_parentheses(prompt.default_buffer.text) > 0),
        prompt_continuation=_continuation, complete_while_typing=False,
        enable_open_in_editor=False)
    click.echo(f"gradcli {__version__}: definitions persist; :help lists the commands; "
               "Ctrl-D leaves")
    while not session.quit:
        try:
            entry = prompt.prompt(PROMPT)
        except KeyboardInterrupt:  # Ctrl-C: the line is dropped, the session goes on
            continue
        except EOFError:  # Ctrl-D
            break
        try:
            session.run(entry)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)


def _continuation(width: int, line_number: int, wrap_count: int) -> str:
    """``........ `` under ``gradcli> ``: the entry goes on (a parenthesis is open)."""
    return "." * (width - 1) + " "
