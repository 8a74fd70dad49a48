"""The command line: reads argv and stdin, prints, picks exit statuses; the library below it
does the work. A command's module is imported when it runs (``command_table.COMMANDS``), and the
plain ``gradcli eval EXPR --NAME VALUE ... [--json] [--no-check]`` is read without click
(``plain_eval``), and so is the plain batch ``gradcli eval - --json ...``.
Ctrl-C during the imports of start-up (``quiet_interrupts``) ends the process at once with
"gradcli: interrupted" and 130, as later: nothing has been written yet. Handlers are set through
``_signal``, the C module under ``signal``, whose enums cost about 1 ms of every start-up.
"""

from __future__ import annotations

import _signal
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from gradcli.errors import ExitStatus
from gradcli.limits import watch_numpy_imports

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

INTERRUPTED_LINE = "gradcli: interrupted\n"


@contextmanager
def quiet_interrupts() -> Iterator[None]:
    """Within the block, SIGINT ends the process with ``INTERRUPTED_LINE`` and 130; the previous
    handler comes back afterwards (a program that imports the CLI keeps its own Ctrl-C)."""
    if _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN:  # started in the background (`&`,
        yield  # nohup): Ctrl-C is not for this process, during start-up or later
        return
    try:
        previous = _signal.signal(_signal.SIGINT, _exit_interrupted)
    except ValueError:  # imported outside the main thread, where handlers cannot be set
        yield
        return
    try:
        yield
    finally:
        # None: a handler not set from Python, which only SIG_DFL can stand for here
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL if previous is None else previous)


def _exit_interrupted(signum: int, frame: Any) -> None:
    with suppress(OSError):  # stderr closed or full: the status still says it
        os.write(2, INTERRUPTED_LINE.encode())
    os._exit(ExitStatus.INTERRUPTED)  # no stack to unwind into a traceback, no buffers to flush


def main(argv: list[str] | None = None) -> None:
    """Entry point: the plain eval without click, any other command line through click
    (``cli.base``); ``argv``: the arguments after ``gradcli`` (None: ``sys.argv``'s)."""
    args = sys.argv[1:] if argv is None else list(argv)
    watch_numpy_imports()
    plain = None
    if args[:1] == ["eval"]:  # other commands load neither the plain eval nor the core here
        with quiet_interrupts():  # the imports of the parser and the core
            from gradcli.cli.plain_eval import plain_form

            plain = plain_form(args)
    if plain is None:
        with quiet_interrupts():  # the imports of click and the command
            from gradcli.cli.base import main as click_main
        click_main(argv)
    else:
        from gradcli.cli.exits import run_to_exit
        from gradcli.cli.plain_eval import run_plain

        # (a batch's workers and reader thread end as click's reading ends them)
        run_to_exit(lambda: run_plain(*plain), argv, at_once=plain[0] != "-")


def __getattr__(name: str) -> Any:
    """``gradcli.cli.cli``, the click group, loaded when asked for."""
    if name == "cli":
        from gradcli.cli.base import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["cli", "main"]
