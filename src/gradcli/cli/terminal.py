"""The session on a terminal, with prompt_toolkit (imported only here, only by ``gradcli repl``):
XDG history, Tab completion, an open bracket continues the entry, Ctrl-C cancels the line (or
stops an evaluation), Ctrl-D leaves."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import click
from prompt_toolkit import PromptSession
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.keys import Keys

from gradcli import __version__
from gradcli.cli.session import ALIASES, COMMANDS, GrowingEntry, Session
from gradcli.errors import visible

PROMPT = "gradcli> "
_WORD = re.compile(r"[:A-Za-z_]\w*$")


def history_path() -> Path:
    """``$XDG_STATE_HOME/gradcli/history``; ``~/.local/state/...`` when it is unset or not an
    absolute path (the XDG rule)."""
    state = os.environ.get("XDG_STATE_HOME", "")
    root = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return root / "gradcli" / "history"


def _history() -> History:
    """The history file, or none with one line on stderr when it cannot be one (a directory, a
    device, a FIFO, a place that cannot be written)."""
    path = history_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not path.is_file():
            raise OSError(0, "not a regular file")
        path.touch(exist_ok=True)
    except OSError as error:
        _history_lost(path, error, "is not")
        return InMemoryHistory()
    return _FileHistory(str(path))


def _history_lost(path: Path, error: OSError, verb: str = "is no longer") -> None:
    click.echo(f"note: history {verb} kept: cannot write {visible(str(path))}: "
               f"{error.strerror or error}", err=True)


class _FileHistory(FileHistory):
    """A history file whose first failed write ends its keeping (one line on stderr, after
    the entry has run)."""

    lost: OSError | None = None
    told = False

    def store_string(self, string: str) -> None:
        if self.lost is not None:
            return
        try:
            super().store_string(string)
        except OSError as error:
            self.lost = error


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
    growing = GrowingEntry()
    prompt: PromptSession[str] = PromptSession(
        history=_history(), completer=SessionCompleter(session),
        multiline=Condition(lambda: growing.open_brackets(prompt.default_buffer.text) > 0),
        prompt_continuation=_continuation, complete_while_typing=False,
        enable_open_in_editor=False, key_bindings=_no_mouse())
    prompt.default_buffer.on_text_changed += _shorter_undo
    click.echo(f"gradcli {__version__}: definitions persist; :help lists the commands; "
               "Ctrl-D leaves")
    while not session.quit:
        try:
            entry = prompt.prompt(PROMPT)
        except KeyboardInterrupt:  # Ctrl-C: the line is dropped, the session goes on
            continue
        except EOFError:  # Ctrl-D
            break
        _say_history_lost(prompt.history)
        try:
            session.run(entry)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)


UNDO_STEPS = 100


def _shorter_undo(buffer: Buffer) -> None:
    """Keep the last ``UNDO_STEPS`` undo steps: each copies the whole entry, and a paste that
    arrives as keys saves one at each line (500 MB for 30 KB)."""
    stack = getattr(buffer, "_undo_stack", None)
    if isinstance(stack, list) and len(stack) > 2 * UNDO_STEPS:
        del stack[:-UNDO_STEPS]


def _no_mouse() -> KeyBindings:
    """A sequence that reads as a mouse event is typed text (the session asks for none), which
    prompt_toolkit's own handler fails on: dropped, as shells do."""
    bindings = KeyBindings()
    bindings.add(Keys.Vt100MouseEvent)(lambda event: None)
    return bindings


def _say_history_lost(history: History) -> None:
    if isinstance(history, _FileHistory) and history.lost is not None and not history.told:
        _history_lost(Path(str(history.filename)), history.lost)
        history.told = True


def _continuation(width: int, line_number: int, wrap_count: int) -> str:
    """``........ `` under ``gradcli> ``: the entry goes on (a parenthesis or bracket is open)."""
    return "." * (width - 1) + " "
