"""The command group and the entry point: every way out of a command mapped to its exit status."""

from __future__ import annotations

import gc
import sys
from typing import Any

import click

from gradcli import __version__
from gradcli.cli import streams
from gradcli.cli.arguments import GradcliCommand
from gradcli.cli.commands import LazyGroup
from gradcli.cli.streams import (
    OutputFailedError,
    _WholeWrites,  # noqa: F401 (tests reach it here)
)
from gradcli.cli.usage import shown
from gradcli.engine import stale_core_modules
from gradcli.errors import ExitStatus, GradcliError, out_of_memory


class ReaderGoneError(Exception):
    """The reader of stdout went away (``| head -1``): main() ends quietly with status 141."""


class UserInterruptError(Exception):
    """Ctrl-C inside a command: main() prints one line and ends with status 130."""


ARGS_KEY = "gradcli.args"


class _Group(LazyGroup):
    command_class = GradcliCommand

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        """Parsing gradcli's own options (``--help`` and ``--version`` print here): a usage
        error in gradcli's style, and a reader that went away is 141, not click's 1."""
        given = list(args)
        if not args and sys.stdin.isatty() and sys.stdout.isatty():
            args = ["repl"]  # `gradcli` alone on a terminal: a session (in a pipe: the help)
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError:
            raise ReaderGoneError from None
        except _NO_ARGS:
            raise  # `gradcli` alone: the help, on stderr, status 2
        except click.ClickException as error:
            raise shown(error, given, self) from None
        ctx.meta[ARGS_KEY] = given
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        """Every command's BrokenPipeError goes past click (which would exit with 1, "check
        failed") to main(), which ends with 141; its KeyboardInterrupt goes past click too
        (which would print a blank line on stderr first) to main(), which ends with 130.
        click's usage errors (and a UsageError from splitting the command line) are shown in
        gradcli's style (``cli.usage``)."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise ReaderGoneError from None
        except KeyboardInterrupt:
            raise UserInterruptError from None
        except (click.ClickException, GradcliError) as error:
            raise shown(error, ctx.meta.get(ARGS_KEY, []), self) from None


def _print_version(context: click.Context, _: click.Parameter, asked: bool) -> None:
    """gradcli's version, and whether its symbolic core is compiled (setup.py): a machine with
    no C compiler installs it as Python, and ``pip install`` shows no build messages."""
    if not asked or context.resilient_parsing:
        return
    from gradcli.engine import core_is_compiled

    core = ("compiled" if core_is_compiled()
            else "Python; GRADCLI_COMPILE=1 pip install compiles it, with a C compiler, and "
                 "gradcli diff runs 1.7x faster")
    if stale_core_modules():
        core += ", older than its source: pip install -e . again"
    click.echo(f"gradcli, version {__version__} (symbolic core: {core})")
    context.exit()


_NO_ARGS = getattr(click.exceptions, "NoArgsIsHelpError", ())


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-V", "--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and exit.")
def cli() -> None:
    """Differentiate formulas: every node's value and gradient, checked by finite differences.

    \b
    Start with:   gradcli eval "(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8
    More:         gradcli eval --help
    Functions:    gradcli functions   (every operator and function of the language)
    Interactive:  gradcli repl        (or gradcli alone, on a terminal)
    In CI:        gradcli check examples/checks.toml   (gradcli check --help)
    Manual:       gradcli man | man -l -
    """

def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the CLI and maps every way out to a documented exit status.

    The standard streams are settled first (``cli.streams``): closed descriptors, a stdout
    that fails, a stderr that fails, an encoding without gradcli's marks."""
    streams.settle()
    _warn_if_the_core_is_stale()
    status: int = ExitStatus.OK
    try:
        try:
            status = cli.main(args=argv, prog_name="gradcli", standalone_mode=False) or 0
        except click.ClickException as error:
            error.show()  # gradcli's style (cli.usage); `gradcli` alone: click's help
            status = error.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt, UserInterruptError):
        status = _interrupted()
    except (BrokenPipeError, ReaderGoneError):
        status = _reader_gone()
    except OutputFailedError as error:
        status = _output_failed(error)
    except MemoryError:  # a command that does not say it itself (eval and batches do)
        status = _out_of_memory()
    try:
        sys.stdout.flush()  # here, not at interpreter exit, where a broken pipe can't be caught
    except (BrokenPipeError, ReaderGoneError):
        status = _reader_gone()
    except OutputFailedError as error:
        status = _output_failed(error)
    except KeyboardInterrupt:
        status = _interrupted()
    if argv is None:  # the process ends here (console script, python -m gradcli)
        _skip_the_last_collection()
    sys.exit(int(status or 0))


def _warn_if_the_core_is_stale() -> None:
    stale = stale_core_modules()
    if stale:
        more = f" and {len(stale) - 1} more" if len(stale) > 1 else ""
        print(f"note: {stale[0]}{more} changed after gradcli's core was compiled, and the "
              "old code runs; install again: pip install -e .", file=sys.stderr)


def _skip_the_last_collection() -> None:
    """Leave every object alive now out of the cyclic collections at interpreter exit.

    Those full passes over all of Click's, Rich's and gradcli's module objects cost more than
    10 ms of a small ``gradcli eval`` and free nothing the OS does not reclaim anyway. Exit still
    runs atexit handlers (batch workers) and flushes stdout and stderr; files are closed by
    ``with`` blocks before this point.
    """
    gc.freeze()


def _interrupted() -> int:
    """Ctrl-C: one line on stderr, the shell's status for SIGINT, no traceback."""
    click.echo("gradcli: interrupted", err=True)
    streams.quiet_after_stop()
    return ExitStatus.INTERRUPTED


def _out_of_memory() -> int:
    """What the attempt took is free again here: one line on stderr, no traceback."""
    error = out_of_memory()
    click.echo(f"gradcli: {error.one_line()}", err=True)
    return error.status


def _reader_gone() -> int:
    """Stop quietly, as Unix tools do: later writes and the exit-time flush go nowhere."""
    streams.silence_stdout()
    return ExitStatus.READER_GONE


def _output_failed(error: OutputFailedError) -> int:
    """stdout failed (a full disk, a closed descriptor): one line on stderr, and its status."""
    streams.silence_stdout()
    click.echo(f"gradcli: cannot write to stdout: {error.reason}", err=True)
    return ExitStatus.OUTPUT_FAILED
