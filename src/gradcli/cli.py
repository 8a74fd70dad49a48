"""The command line: reads argv and stdin, prints, picks exit statuses. All logic lives in the API.

Rich is imported only on the paths that print for people, so ``--json`` starts fast.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any

import click

from . import __version__
from .api import LineOutcome, evaluate, evaluate_lines
from .check import DEFAULT_ATOL, DEFAULT_RTOL
from .errors import ExitStatus, GradcliError, UsageError
from .limits import MAX_NODES, max_chars
from .points import NAME, as_point, parse_assignments

_BINDINGS = "gradcli.bindings"
# What an option looks like; anything else after `--` (`---x`, `--(x)`) is an expression.
_OPTION_LIKE = re.compile(r"--[A-Za-z][-A-Za-z0-9_]*")

EVAL_HELP = """Evaluate EXPR and its gradients (one reverse-mode pass), checked by finite
differences.

\b
Give values as --NAME VALUE, --NAME=VALUE or --set NAME=VALUE (the last works for names that
clash with options, such as --set json=1). Values on the command line override `x = 2` in the
program. EXPR `-`, or no EXPR with stdin not a terminal, reads one program per line from stdin.

\b
Examples:
  gradcli eval "(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8
  gradcli eval "u = x*W; z = u + b; err = z - t; err*err" --x 2 --W 3 --b 1 --t 8
  gradcli eval "-x**2" --x 3
  gradcli eval -f examples/seed.grad --json
  printf 'x*y\\nsin(x)\\n' | gradcli eval - --x 1 --y 2 --json

\b
Exit status: 0 ok; 1 a finite-difference check failed; 2 usage, parse or name error;
3 numeric error (domain, overflow, division by zero); batch: the largest status of its lines;
130 interrupted (Ctrl-C); 141 the reader of stdout went away (| head -1).
"""


class EvalCommand(click.Command):
    """Lets any ``--NAME VALUE`` bind a variable and lets EXPR start with ``-``.

    Before click parses, arguments that are not eval's own options are taken out: ``--NAME VALUE``
    and ``--NAME=VALUE`` become bindings; anything else is the expression, passed after ``--`` so
    that ``-x**2`` is never read as a cluster of short options.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value = {
            flag: not param.is_flag
            for param in self.get_params(ctx)
            if isinstance(param, click.Option)
            for flag in (*param.opts, *param.secondary_opts)
        }
        options, bindings, positional = _split_arguments(args, takes_value)
        ctx.meta[_BINDINGS] = bindings
        return super().parse_args(ctx, options + (["--", *positional] if positional else []))


def _split_arguments(
    args: list[str], takes_value: dict[str, bool]
) -> tuple[list[str], list[str], list[str]]:
    options: list[str] = []
    bindings: list[str] = []  # NAME=VALUE texts, in the order given
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
        elif arg.startswith("--") and NAME.fullmatch(flag[2:]):
            if not has_value:
                if i + 1 >= len(args):
                    raise click.UsageError(f"{flag} needs a value: {flag} VALUE")
                value = args[i + 1]
                i += 1
            bindings.append(f"{flag[2:]}={value}")
        elif arg.startswith("--") and _OPTION_LIKE.fullmatch(flag):
            options.append(arg)  # click reports it as an unknown option
        else:
            positional.append(arg)
        i += 1
    return options, bindings, positional


class ReaderGoneError(Exception):
    """The reader of stdout went away (``| head -1``): main() ends quietly with status 141."""


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        """Every command's BrokenPipeError goes past click (which would exit with 1, "check
        failed") to main(), which ends with 141."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise ReaderGoneError from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="gradcli")
def cli() -> None:
    """Differentiate formulas: every node's value and gradient, checked by finite differences.

    \b
    Start with:  gradcli eval "(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8
    More:        gradcli eval --help
    """


@cli.command("eval", cls=EvalCommand, help=EVAL_HELP, no_args_is_help=False)
@click.argument("expr", required=False)
@click.option("--set", "assignments", multiple=True, metavar="NAME=VALUE",
              help="Give a variable a value (repeatable).")
@click.option("-f", "--file", "program_file", type=click.File("r", encoding="utf-8"),
              help="Read one program (statements on separate lines, # comments) from FILE.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (JSON Lines for a batch).")
@click.option("--no-check", is_flag=True, help="Skip the finite-difference check.")
@click.option("--rtol", type=click.FloatRange(min=0), default=DEFAULT_RTOL, show_default=True,
              help="Relative tolerance of the check.")
@click.option("--atol", type=click.FloatRange(min=0), default=DEFAULT_ATOL, show_default=True,
              help="Absolute tolerance of the check.")
@click.option("--max-nodes", type=click.IntRange(min=1), default=MAX_NODES, show_default=True,
              help="Refuse a program with more graph nodes (or more than 8 characters per "
                   "node of text) with a usage error.")
@click.pass_context
def eval_command(ctx: click.Context, **options: Any) -> None:
    ctx.exit(run_eval(ctx, **options))


def run_eval(
    ctx: click.Context,
    expr: str | None,
    assignments: tuple[str, ...],
    program_file: IO[str] | None,
    as_json: bool,
    no_check: bool,
    rtol: float,
    atol: float,
    max_nodes: int = MAX_NODES,
) -> int:
    """Everything ``gradcli eval`` does; returns the exit status."""
    output = Output(as_json)
    options: dict[str, Any] = {"check": not no_check, "rtol": rtol, "atol": atol,
                               "max_nodes": max_nodes}
    try:
        values = as_point(parse_assignments([*ctx.meta.get(_BINDINGS, []), *assignments]))
        if program_file is not None and expr is not None:
            raise UsageError("give either EXPR or -f FILE, not both")
        if program_file is not None:
            return output.single(program_file.read(), values, options, program_file.name)
        if expr == "-" or (expr is None and not sys.stdin.isatty()):
            return output.batch(_stdin_lines(max_chars(max_nodes)), values, options)
        if expr is None:
            raise UsageError("no expression given",
                             hint='try: gradcli eval "(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8')
    except GradcliError as error:
        return output.error(error, "")
    return output.single(expr, values, options)


def _stdin_lines(max_bytes: int) -> Iterator[str]:
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


class Output:
    """Prints results and errors as JSON or for people, and returns the exit status."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def single(self, source: str, values: dict[str, float], options: dict[str, Any],
               name: str = "") -> int:
        try:
            result = evaluate(source, values, **options)
        except GradcliError as error:
            return self.error(error, source, name)
        if self.as_json:
            from .jsonout import dumps, result_record

            click.echo(dumps(result_record(result, source)))
        else:
            from .render import make_console, result_view

            console = make_console()
            console.print(result_view(result, plain=not console.is_terminal))
        return result.status

    def error(self, error: GradcliError, source: str, name: str = "") -> int:
        if self.as_json:
            from .jsonout import dumps, error_record

            click.echo(dumps(error_record(error, source)))
            click.echo(f"gradcli: {error.one_line()}", err=True)
        else:
            from .render import error_view, make_console

            make_console(stderr=True).print(error_view(error, f"{name}: " if name else ""))
        return error.status

    def batch(self, lines: Iterable[str], values: dict[str, float],
              options: dict[str, Any]) -> int:
        status = ExitStatus.OK
        emit = self._json_line if self.as_json else self._human_line()
        for outcome in evaluate_lines(lines, values, **options):
            emit(outcome)
            if outcome.error is not None and self.as_json:
                click.echo(f"gradcli: line {outcome.line}: {outcome.error.one_line()}", err=True)
            status = max(status, outcome.status)
        return status

    @staticmethod
    def _json_line(outcome: LineOutcome) -> None:
        from .jsonout import dumps, error_record, result_record

        if outcome.error is not None:
            record = error_record(outcome.error, outcome.source, outcome.line)
        else:
            assert outcome.result is not None
            record = result_record(outcome.result, outcome.source, outcome.line)
        sys.stdout.write(dumps(record) + "\n")
        sys.stdout.flush()

    @staticmethod
    def _human_line():
        from .render import batch_line, make_console

        console = make_console()

        def emit(outcome: LineOutcome) -> None:
            console.print(batch_line(outcome))
            console.file.flush()

        return emit


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the CLI and maps every way out to a documented exit status."""
    try:
        status = cli.main(args=argv, prog_name="gradcli", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
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
    sys.exit(int(status or 0))


def _interrupted() -> int:
    """Ctrl-C: one line on stderr, the shell's status for SIGINT, no traceback."""
    click.echo("gradcli: interrupted", err=True)
    return ExitStatus.INTERRUPTED


def _reader_gone() -> int:
    """Stop quietly, as Unix tools do: later writes and the exit-time flush go to /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141
