"""The command line: reads argv and stdin, prints, picks exit statuses. All logic lives in the API.

Rich is imported only on the paths that print for people, so ``--json`` starts fast.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import click

from . import __version__
from .api import LineOutcome, evaluate, evaluate_lines
from .check import DEFAULT_ATOL, DEFAULT_RTOL, METHODS
from .errors import ExitStatus, GradcliError, UsageError
from .limits import MAX_NODES, max_chars
from .parser import parse
from .pictures import DEFAULT_MAX_NODES, FORMATS, prepare, render_with_graphviz, to_dot, to_mermaid
from .points import NAME, Value, as_point, is_sweep, parse_assignments

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
  gradcli eval "sin(10*x)*exp(x**2)" --x 0.7 --check-method complex
  printf 'x*y\\nsin(x)\\n' | gradcli eval - --x 1 --y 2 --json

\b
Exit status: 0 ok; 1 a finite-difference check failed; 2 usage, parse or name error;
3 numeric error (domain, overflow, division by zero); batch: the largest status of its lines;
130 interrupted (Ctrl-C); 141 the reader of stdout went away (| head -1).
"""


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
        options, bindings, positional = _split_arguments(args, takes_value)
        ctx.meta[_BINDINGS] = bindings
        return super().parse_args(ctx, options + (["--", *positional] if positional else []))


class EvalCommand(BindingCommand):
    """``gradcli eval``'s command class (the bindings mechanism lives in BindingCommand)."""


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
    In CI:       gradcli check examples/checks.toml   (gradcli check --help)
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
@click.option("--check-method", type=click.Choice(METHODS), default="central", show_default=True,
              help="central differences, complex step (exact for analytic ops), or Richardson "
                   "extrapolation of central differences.")
@click.option("--csv", "as_csv", is_flag=True,
              help="Print one CSV row per point (variables, value, gradients, ok, error).")
@click.option("--order", type=click.IntRange(1, 2), default=1, show_default=True,
              help="2 adds the Hessian, checked by finite differences of the gradient.")
@click.option("--hessian", is_flag=True, help="Same as --order 2.")
@click.option("--strict", is_flag=True,
              help="Unbound variables are an error (default: value and gradients as "
                   "expressions in them).")
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
    check_method: str = "central",
    as_csv: bool = False,
    order: int = 1,
    hessian: bool = False,
    strict: bool = False,
    max_nodes: int = MAX_NODES,
) -> int:
    """Everything ``gradcli eval`` does; returns the exit status."""
    output = Output(as_json)
    options: dict[str, Any] = {"check": not no_check, "rtol": rtol, "atol": atol,
                               "check_method": check_method, "max_nodes": max_nodes}
    try:
        given = parse_assignments([*ctx.meta.get(_BINDINGS, []), *assignments])
        if program_file is not None and expr is not None:
            raise UsageError("give either EXPR or -f FILE, not both")
        if as_csv or is_sweep(given):
            return run_sweep(output, expr, program_file, given, options, as_csv)
        values = as_point(given)
        options["strict"] = strict
        if order > 1 or hessian:
            options["order"] = 2
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


DIFF_HELP = """Print derivatives of EXPR as expressions in gradcli's language (simplified, shared
subexpressions named once), which `gradcli eval` reads back.

\b
Values given as --NAME VALUE are substituted after differentiating; --wrt defaults to every
variable without a value.

\b
Examples:
  gradcli diff "(x*W+b-t)**2" --wrt x,W
  gradcli diff "x*y + sin(x)" --order 2              # the Hessian
  gradcli diff "sigmoid(w*x)" --wrt w --format python
  gradcli diff "x**2*y" --json

\b
Exit status: 0 ok; 2 usage, parse or name error.
"""


@cli.command("diff", cls=BindingCommand, help=DIFF_HELP)
@click.argument("expr", required=False)
@click.option("--wrt", metavar="X,Y", help="Variables to differentiate by, comma separated.")
@click.option("--order", type=click.IntRange(1, 6), default=1, show_default=True,
              help="Order of the derivatives (2 with several --wrt: the Hessian).")
@click.option("--format", "fmt", type=click.Choice(["text", "latex", "python"]), default="text",
              show_default=True, help="How derivatives are printed.")
@click.option("--set", "assignments", multiple=True, metavar="NAME=VALUE",
              help="Substitute a value for a variable (repeatable).")
@click.option("-f", "--file", "program_file", type=click.File("r", encoding="utf-8"),
              help="Read the program from FILE.")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"expression", "order", "derivatives"}.')
@click.pass_context
def diff_command(ctx: click.Context, expr: str | None, wrt: str | None, order: int, fmt: str,
                 assignments: tuple[str, ...], program_file: IO[str] | None,
                 as_json: bool) -> None:
    from .derive import differentiate

    output = Output(as_json)
    source = expr or ""
    try:
        values = as_point(parse_assignments([*ctx.meta.get(_BINDINGS, []), *assignments]))
        if (program_file is None) == (expr is None):
            raise UsageError("give one of EXPR or -f FILE",
                             hint='try: gradcli diff "(x*W+b-t)**2" --wrt x')
        source = program_file.read() if program_file is not None else str(expr)
        names = [n.strip() for n in wrt.split(",") if n.strip()] if wrt else None
        derivatives = differentiate(source, names, order, values)
        printed = derivatives.python() if fmt == "python" else None
        texts = derivatives.texts("latex" if fmt == "latex" else "text")
    except GradcliError as error:
        ctx.exit(output.error(error, source))
    if as_json:
        from .jsonout import diff_record, dumps

        click.echo(dumps(diff_record(source, order, texts, printed)))
    elif printed is not None:
        click.echo(printed, nl=False)
    else:
        from .render import derivative_view, make_console

        make_console().print(derivative_view(texts, latex=fmt == "latex"))
    ctx.exit(ExitStatus.OK)


def run_sweep(output: Output, expr: str | None, program_file: IO[str] | None,
              values: dict[str, Value], options: dict[str, Any], as_csv: bool) -> int:
    """``gradcli eval`` at every point of a grid: a table, JSON Lines or CSV."""
    from .sweep import csv_rows, evaluate_sweep, point_records, sweep_columns

    name = program_file.name if program_file is not None else ""
    source = program_file.read() if program_file is not None else expr
    if source is None or source == "-":
        raise UsageError("a sweep evaluates one program, not a batch from stdin",
                         hint='give the program: gradcli eval "x**2" --x -2:2:9')
    if options.pop("check_method") != "central":
        raise UsageError("sweeps are checked by central differences only",
                         hint="drop --check-method, or evaluate single points")
    try:
        program = parse(source, options.pop("max_nodes"))
        sweep = evaluate_sweep(program, sweep_columns(program, values), **options)
    except GradcliError as error:
        return output.error(error, source, name)
    if as_csv:
        csv.writer(sys.stdout, lineterminator="\n").writerows(csv_rows(sweep))
    elif output.as_json:
        from .jsonout import dumps

        for record in point_records(sweep):
            sys.stdout.write(dumps({"expression": source, **record}) + "\n")
    else:
        from .render import make_console
        from .render_sweep import sweep_view

        console = make_console()
        console.print(sweep_view(sweep, plain=not console.is_terminal))
    return sweep.status


CHECK_HELP = """Run the checks in TOML check FILEs: values, gradients, derivative identities and
the finite-difference check of every gradient, at points and over sweeps (vectorised).

\b
Examples:
  gradcli check examples/checks.toml
  gradcli check checks/*.toml --junit report.xml -k sigmoid
  gradcli check examples/checks.toml --json --fail-fast

\b
Under GitHub Actions (GITHUB_ACTIONS=true) each failure is also printed as an
::error file=...,line=...:: annotation.
Exit status: 0 all passed; 1 a check failed; 2 a bad check file or usage; 3 numeric error.
"""


@cli.command("check", help=CHECK_HELP)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), metavar="PATH",
              help="Also write a JUnit XML report to PATH.")
@click.option("--fail-fast", is_flag=True, help="Stop after the first check that does not pass.")
@click.option("-k", "pattern", metavar="PATTERN",
              help="Run only checks whose name contains PATTERN (or matches it as a glob).")
@click.pass_context
def check_command(ctx: click.Context, **options: Any) -> None:
    ctx.exit(run_check_command(**options))


def run_check_command(files: tuple[str, ...], as_json: bool, junit_path: str | None,
                      fail_fast: bool, pattern: str | None) -> int:
    """Everything ``gradcli check`` does; returns the exit status."""
    from .checkfile import load_check_files
    from .checkrun import outcome_record, run_checks, select
    from .cireport import github_annotations, junit_xml

    specs, errors = load_check_files(files)
    selected = select(specs, pattern)
    if not errors and not selected:
        return Output(as_json).error(UsageError(f"no check matches -k {pattern}"), "")
    outcomes = [] if errors else list(_with_progress(run_checks(selected, fail_fast),
                                                     len(selected), as_json))
    if junit_path is not None:
        try:
            with open(junit_path, "w", encoding="utf-8") as report:
                report.write(junit_xml(outcomes, errors))
        except OSError as error:
            failure = UsageError(f"cannot write {junit_path}: {error.strerror}",
                                 hint="give --junit a path in a writable directory")
            return Output(as_json).error(failure, "")
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github_annotations(outcomes, errors):
            click.echo(line, err=as_json)
    status = max((o.status for o in outcomes), default=ExitStatus.OK)
    if errors:
        status = ExitStatus.USAGE
    if as_json:
        from .jsonout import dumps

        click.echo(dumps({"ok": status == ExitStatus.OK, "status": int(status),
                          "checks": [outcome_record(o) for o in outcomes],
                          "errors": [{"file": e.file, "line": e.line, "key": e.key,
                                      "message": e.message, "hint": e.hint} for e in errors]}))
        for error in errors:
            click.echo(f"gradcli: {error.one_line()}", err=True)
        return status
    from .render import error_view, make_console
    from .render_sweep import check_view

    for error in errors:
        make_console(stderr=True).print(error_view(error))
    if outcomes:
        console = make_console()
        console.print(check_view(outcomes, plain=not console.is_terminal))
    return status


def _with_progress(outcomes: Iterator[Any], total: int, quiet: bool) -> Iterator[Any]:
    """Rich progress on stderr while checks run, only when stderr is a terminal."""
    if quiet or not sys.stderr.isatty():
        yield from outcomes
        return
    from rich.progress import Progress

    from .render import make_console

    with Progress(console=make_console(stderr=True), transient=True) as progress:
        task = progress.add_task("checking", total=total)
        for outcome in outcomes:
            progress.advance(task)
            yield outcome


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
        if self.as_json:  # records made on every core (batch.py), written here in input order
            from .batch import json_lines

            for record in json_lines(lines, values, options):
                sys.stdout.write(record.text + "\n")
                sys.stdout.flush()
                if record.error is not None:
                    click.echo(f"gradcli: line {record.line}: {record.error}", err=True)
                status = max(status, record.status)
            return status
        emit = self._human_line()
        for outcome in evaluate_lines(lines, values, **options):
            emit(outcome)
            status = max(status, outcome.status)
        return status

    @staticmethod
    def _human_line():
        from .render import batch_line, make_console

        console = make_console()

        def emit(outcome: LineOutcome) -> None:
            console.print(batch_line(outcome))
            console.file.flush()

        return emit


GRAPH_HELP = """Draw the computational graph of EXPR: values on the nodes, gradients on the edges.

\b
--format tree   a tree from the output down (the default on a terminal)
--format dot    Graphviz source (the default in a pipe): gradcli graph ... | dot -Tsvg
--format mermaid  a Mermaid flowchart (renders in GitHub Markdown)
--format svg|png  rendered by Graphviz's `dot` program (install graphviz)
With -o FILE the format follows the suffix (.svg .png .dot .gv .mmd .txt) unless given.
Without values for every variable the graph shows its structure only.

\b
Examples:
  gradcli graph "u = x*W; z = u + b; err = z - t; err*err" --x 2 --W 3 --b 1 --t 8
  gradcli graph -f examples/seed.grad -o seed.svg
  gradcli graph "sin(x)*x" --format mermaid
"""

PLOT_HELP = """Plot EXPR and its derivative along one variable given a range (--x -3:3:200).

\b
In the terminal by default; -o FILE.svg or FILE.png saves an image (needs matplotlib:
pip install 'gradcli[plot]'). Points with a numeric error (log of a negative number, overflow)
are gaps in the curves. The other variables take one value each.

\b
Examples:
  gradcli plot "tanh(x)" --x -3:3:200
  gradcli plot "x*W + b" --x -2:2:50 --W 3 --b 1 -o line.png
"""

_SUFFIX_FORMATS = {".svg": "svg", ".png": "png", ".dot": "dot", ".gv": "dot", ".mmd": "mermaid",
                   ".txt": "tree"}


def _program_arguments(set_help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """EXPR, --set NAME=VALUE and -f FILE: how graph and plot are given a program."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        command = click.option("-f", "--file", "program_file",
                               type=click.File("r", encoding="utf-8"),
                               help="Read the program from FILE.")(command)
        command = click.option("--set", "assignments", multiple=True, metavar="NAME=VALUE",
                               help=set_help)(command)
        return click.argument("expr", required=False)(command)

    return decorate


def _given_values(ctx: click.Context, assignments: tuple[str, ...]) -> dict[str, Value]:
    """``--NAME VALUE`` bindings and ``--set NAME=VALUE`` together (ranges allowed)."""
    return parse_assignments([*ctx.meta.get(_BINDINGS, []), *assignments])


def _program_source(command: str, expr: str | None, program_file: IO[str] | None) -> str:
    if program_file is not None and expr is not None:
        raise UsageError("give either EXPR or -f FILE, not both")
    if program_file is not None:
        return program_file.read()
    if expr is None:
        raise UsageError("no expression given", hint=f"try: gradcli {command} --help")
    return expr


@cli.command("graph", cls=BindingCommand, help=GRAPH_HELP)
@_program_arguments("Give a variable a value (repeatable).")
@click.option("--format", "picture_format", type=click.Choice(FORMATS),
              help="tree, dot, mermaid, svg or png (default: see above).")
@click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False),
              help="Write to FILE instead of stdout.")
@click.option("--max-nodes", type=click.IntRange(min=0), default=DEFAULT_MAX_NODES,
              show_default=True, help="Draw at most N nodes, nearest the output (0: all).")
@click.pass_context
def graph_command(ctx: click.Context, expr: str | None, assignments: tuple[str, ...],
                  program_file: IO[str] | None, picture_format: str | None,
                  output_path: str | None, max_nodes: int) -> None:
    source = ""
    try:
        values = as_point(_given_values(ctx, assignments))
        source = _program_source("graph", expr, program_file)
        picture_format = picture_format or _default_format(output_path)
        picture = prepare(source, values)
        if picture_format == "tree":
            _write_tree(picture, max_nodes, output_path)
            ctx.exit(ExitStatus.OK)
        dot_or_mermaid = to_mermaid if picture_format == "mermaid" else to_dot
        text = dot_or_mermaid(picture, max_nodes)
        if picture_format in ("dot", "mermaid"):
            _write_bytes(text.encode("utf-8"), output_path)
        else:
            if output_path is None and picture_format == "png" and sys.stdout.isatty():
                raise UsageError("a PNG is binary and stdout is a terminal", hint="add -o FILE.png")
            _write_bytes(render_with_graphviz(text, picture_format), output_path)
    except OSError as error:
        ctx.exit(Output(as_json=False).error(_cannot_write(output_path, error), source))
    except GradcliError as error:
        ctx.exit(Output(as_json=False).error(error, source))


def _cannot_write(path: str | None, error: OSError) -> UsageError:
    return UsageError(f"cannot write {path}: {error.strerror or error}",
                      hint="check that the directory exists and is writable")


def _default_format(output_path: str | None) -> str:
    if output_path is not None:
        suffix = os.path.splitext(output_path)[1].lower()
        if suffix in _SUFFIX_FORMATS:
            return _SUFFIX_FORMATS[suffix]
    return "tree" if sys.stdout.isatty() and output_path is None else "dot"


def _write_tree(picture: Any, max_nodes: int, output_path: str | None) -> None:
    from .render import graph_tree, make_console

    if output_path is None:
        console = make_console()
        # Each level indents 4 columns: stop where about 40 columns are left for the text.
        console.print(graph_tree(picture, max_nodes, max(8, (console.width - 40) // 4)))
        return
    from rich.console import Console

    with open(output_path, "w", encoding="utf-8") as stream:
        Console(file=stream, width=200, no_color=True, highlight=False).print(
            graph_tree(picture, max_nodes))


def _write_bytes(data: bytes, output_path: str | None) -> None:
    if output_path is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    with open(output_path, "wb") as stream:
        stream.write(data)


@cli.command("plot", cls=BindingCommand, help=PLOT_HELP)
@_program_arguments("Give a variable a value or a range (repeatable).")
@click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False),
              help="Save the plot as FILE.svg or FILE.png instead.")
@click.option("--width", type=click.IntRange(min=20), help="Terminal plot width in columns.")
@click.option("--height", type=click.IntRange(min=8), default=22, show_default=True,
              help="Terminal plot height in rows.")
@click.pass_context
def plot_command(ctx: click.Context, expr: str | None, assignments: tuple[str, ...],
                 program_file: IO[str] | None, output_path: str | None, width: int | None,
                 height: int) -> None:
    from .plot import sample, save_plot, terminal_plot

    source = ""
    try:
        values = _given_values(ctx, assignments)
        source = _program_source("plot", expr, program_file)
        curve = sample(source, values)
        gaps = f"; {curve.gaps} with a numeric error left as gaps" if curve.gaps else ""
        if output_path is not None:
            save_plot(curve, output_path)
            click.echo(f"wrote {output_path} ({curve.xs.size} points{gaps})")
            ctx.exit(ExitStatus.OK)
        terminal = sys.stdout.isatty()
        columns = width or (shutil.get_terminal_size().columns if terminal else 80)
        colour = terminal and "NO_COLOR" not in os.environ
        click.echo(terminal_plot(curve, columns, height, colour))
        click.echo(f"{curve.xs.size} points{gaps}")
    except OSError as error:
        ctx.exit(Output(as_json=False).error(_cannot_write(output_path, error), source))
    except GradcliError as error:
        ctx.exit(Output(as_json=False).error(error, source))


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
