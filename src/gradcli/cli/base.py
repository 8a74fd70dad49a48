"""The command group, how commands read values and stdin, and the entry point's exit statuses."""

from __future__ import annotations

import gc
import io
import os
import re
import stat
import sys
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import IO, Any

import click

from gradcli import __version__
from gradcli.cli.given import Given
from gradcli.errors import ExitStatus, UsageError, visible
from gradcli.language.values import NAME

BINDINGS_KEY = "gradcli.bindings"
# What an option looks like; anything else after `--` (`---x`, `--(x)`) is an expression.
_OPTION_LIKE = re.compile(r"--[A-Za-z][-A-Za-z0-9_]*")

class BindingCommand(click.Command):
    """Lets any ``--NAME VALUE`` bind a variable and lets EXPR start with ``-`` (eval, graph, plot).

    Before click parses, arguments that are not the command's own options are taken out:
    ``--NAME VALUE`` and ``--NAME=VALUE`` become bindings; anything else is the expression, passed
    after ``--`` so that ``-x**2`` is never read as a cluster of short options.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value = {
            flag: not param.is_flag
            for param in self.get_params(ctx)
            if isinstance(param, click.Option)
            for flag in (*param.opts, *param.secondary_opts)
        }
        options, bindings, positional = _split_arguments(
            args, takes_value, _flags_of_other_commands(ctx, takes_value))
        ctx.meta[BINDINGS_KEY] = bindings
        return super().parse_args(ctx, options + (["--", *positional] if positional else []))

    def long_options(self, ctx: click.Context) -> tuple[str, ...]:
        """``--rtol``, ``--json``, ...: what a mistyped ``--rtl 1`` may have meant."""
        return tuple(flag for param in self.get_params(ctx) if isinstance(param, click.Option)
                     for flag in param.opts if flag.startswith("--") and flag != "--help")


def _flags_of_other_commands(ctx: click.Context, own: dict[str, bool]) -> set[str]:
    """``--json`` and the like of gradcli's other commands: given to a command that lacks them,
    they are a mistaken option (click says so), not a variable waiting for a value."""
    group = ctx.parent.command if ctx.parent is not None else None
    commands = getattr(group, "commands", {}).values()
    return {
        flag
        for command in commands
        for param in command.params
        if isinstance(param, click.Option) and param.is_flag
        for flag in param.opts
        if flag.startswith("--") and flag not in own
    }


def _split_arguments(
    args: list[str], takes_value: dict[str, bool], foreign_flags: Collection[str] = frozenset()
) -> tuple[list[str], list[str], list[str]]:
    options: list[str] = []
    bindings: list[tuple[str, str]] = []  # (NAME=VALUE, as written), in the order given
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        flag, has_value, value = arg.partition("=")
        if arg == "--":
            positional += args[i + 1 :]
            break
        if flag in takes_value:
            options.append(arg)
            if takes_value[flag] and not has_value and i + 1 < len(args):
                options.append(args[i + 1])
                i += 1
        elif flag in foreign_flags and not has_value:
            options.append(arg)  # click reports it as an option this command does not have
        elif arg.startswith("--") and NAME.fullmatch(flag[2:]):
            written = arg
            if not has_value:
                if i + 1 >= len(args):
                    raise click.UsageError(f"{flag} needs a value: {flag} VALUE"
                                           + _meant_option(flag, takes_value))
                value = args[i + 1]
                written = f"{flag} {value.strip()}"
                i += 1
            bindings.append((f"{flag[2:]}={value}", written))
        elif arg.startswith("--") and _OPTION_LIKE.fullmatch(flag):
            options.append(arg)  # click reports it as an unknown option
        else:
            positional.append(arg)
        i += 1
    return options, bindings, positional


def _meant_option(flag: str, options: Collection[str]) -> str:
    """`` (did you mean --json?)`` for a ``--jsno`` at the end of the command line."""
    import difflib  # only for this message

    close = difflib.get_close_matches(flag.replace("_", "-"), [o for o in options
                                                               if o.startswith("--")], n=1)
    return f" (did you mean {close[0]}?)" if close else ""


class ReaderGoneError(Exception):
    """The reader of stdout went away (``| head -1``): main() ends quietly with status 141."""


class UserInterruptError(Exception):
    """Ctrl-C inside a command: main() prints one line and ends with status 130."""


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        """Every command's BrokenPipeError goes past click (which would exit with 1, "check
        failed") to main(), which ends with 141; its KeyboardInterrupt goes past click too
        (which would print a blank line on stderr first) to main(), which ends with 130."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise ReaderGoneError from None
        except KeyboardInterrupt:
            raise UserInterruptError from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="gradcli")
def cli() -> None:
    """Differentiate formulas: every node's value and gradient, checked by finite differences.

    \b
    Start with:  gradcli eval "(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8
    More:        gradcli eval --help
    In CI:       gradcli check examples/checks.toml   (gradcli check --help)
    """


def program_arguments(set_help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """EXPR, --set NAME=VALUE and -f FILE: how graph and plot are given a program."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        command = click.option("-f", "--file", "program_file",
                               type=click.File("r", encoding="utf-8-sig"),
                               help="Read the program from FILE.")(command)
        command = click.option("--set", "assignments", multiple=True, metavar="NAME=VALUE",
                               help=set_help)(command)
        return click.argument("expr", required=False)(command)

    return decorate


def given_values(ctx: click.Context, assignments: tuple[str, ...]) -> Given:
    """``--NAME VALUE`` bindings and ``--set NAME=VALUE`` together (ranges allowed), with how
    each was written and the command's options, for the errors about them (``cli.given``)."""
    written = [*ctx.meta.get(BINDINGS_KEY, []),
               *((text, f"--set {text.strip()}") for text in assignments)]
    command = ctx.command
    options = command.long_options(ctx) if isinstance(command, BindingCommand) else ()
    return Given.read(written, options)


_EXAMPLES = {"eval": '"(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8'}  # else: try COMMAND --help


@dataclass(frozen=True)
class ProgramText:
    """A program as given on the command line: EXPR, or the text of ``-f FILE`` and its name."""

    text: str
    file_name: str = ""  # the file it came from ("" for EXPR): error messages name it

    @classmethod
    def read(cls, command: str, expr: str | None, program_file: IO[str] | None) -> ProgramText:
        """EXPR or the file's text; a UsageError when both or neither are given."""
        if program_file is not None and expr is not None:
            raise UsageError("give either EXPR or -f FILE, not both")
        example = _EXAMPLES.get(command)
        try_this = f"try: gradcli {command} {example}" if example else (
            f"try: gradcli {command} --help")
        if program_file is not None:
            text = program_file.read()
            if is_blank(text):
                what = "is empty" if not text.strip() else "has only comments and blank lines"
                raise UsageError(f"{visible(program_file.name)} {what}: no program to read",
                                 hint="put the program in it: one statement per line, the "
                                      "expression last (u = x*W, then u + b on the next line)")
            return cls(text, program_file.name)
        if expr is None:
            raise UsageError("no expression given", hint=try_this)
        if is_blank(expr):
            raise UsageError("the expression is empty", hint=try_this)
        return cls(expr)


_COMMENTS = re.compile(r"#[^\n]*")


def is_blank(text: str) -> bool:
    """Nothing but whitespace, ``;`` and ``# comments``: no program at all."""
    start = text.lstrip(" \t\r\n\f\v;")[:1]
    return not start or (start == "#" and not _COMMENTS.sub("", text).strip(" \t\r\n\f\v;"))


def stdin_lines(max_bytes: int) -> Iterator[str]:
    """Lines of stdin as text, read one at a time as they arrive (a batch is a stream).

    Bytes that are not UTF-8 become U+FFFD and then a parse error. Of a line longer than
    ``max_bytes`` only ``max_bytes + 1`` bytes are kept (the rest is read and dropped, so memory
    stays flat): if the cut falls in the program, that ASCII text is over the length limit and
    becomes an error record; if it falls in a trailing comment, nothing that matters was lost.
    """
    stream = getattr(sys.stdin, "buffer", sys.stdin)
    while True:
        raw = stream.readline(max_bytes + 1)
        if not raw:
            return
        if len(raw) > max_bytes and raw[-1:] not in (b"\n", "\n"):
            while (rest := stream.readline(1 << 20)) and rest[-1:] not in (b"\n", "\n"):
                pass
        yield raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the CLI and maps every way out to a documented exit status."""
    try:
        _stdout_with_whole_writes()
        status = cli.main(args=argv, prog_name="gradcli", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt, UserInterruptError):
        status = _interrupted()
    except click.ClickException as error:
        error.show()
        status = error.exit_code
    except (BrokenPipeError, ReaderGoneError):
        status = _reader_gone()
    try:
        sys.stdout.flush()  # here, not at interpreter exit, where a broken pipe can't be caught
    except BrokenPipeError:
        status = _reader_gone()
    except KeyboardInterrupt:
        status = _interrupted()
    if argv is None:  # the process ends here (console script, python -m gradcli)
        _skip_the_last_collection()
    sys.exit(int(status or 0))


def _skip_the_last_collection() -> None:
    """Leave every object alive now out of the cyclic collections at interpreter exit.

    Those full passes over all of Click's, Rich's and gradcli's module objects cost more than
    10 ms of a small ``gradcli eval`` and free nothing the OS does not reclaim anyway. Exit still
    runs atexit handlers (batch workers) and flushes stdout and stderr; files are closed by
    ``with`` blocks before this point.
    """
    gc.freeze()


class _WholeWrites(io.RawIOBase):
    """stdout's file descriptor, written until every byte is out or the write fails.

    One large write to a pipe whose reader goes away (``| head -1``) returns a short count, not
    an error, and Python's buffered writer then drops the rest silently: a 200 KB check table or
    an 80 MB DOT file ended with status 0. Writing the rest gets the EPIPE (BrokenPipeError).
    """

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self.fd, view[done:])
        return done


def _stdout_with_whole_writes() -> None:
    """When stdout is a pipe, route it through ``_WholeWrites`` (same encoding, same errors)."""
    try:
        if not stat.S_ISFIFO(os.fstat(sys.stdout.fileno()).st_mode):
            return
    except (AttributeError, OSError, ValueError):  # no real file (tests, embedding)
        return
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(_WholeWrites(sys.stdout.fileno())),
                                  encoding=sys.stdout.encoding, errors=sys.stdout.errors)


def _interrupted() -> int:
    """Ctrl-C: one line on stderr, the shell's status for SIGINT, no traceback."""
    click.echo("gradcli: interrupted", err=True)
    return ExitStatus.INTERRUPTED


def _reader_gone() -> int:
    """Stop quietly, as Unix tools do: later writes and the exit-time flush go to /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return ExitStatus.READER_GONE
