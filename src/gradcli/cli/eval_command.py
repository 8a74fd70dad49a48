"""``gradcli eval``: one program, a batch from stdin, or a sweep over a grid of points."""

from __future__ import annotations

import math
import sys
from typing import IO, Any

import click

from ..check import (
    BATCH_NODE_CHECK_LIMIT,
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    METHODS,
    NODE_CHECK_LIMIT,
)
from ..errors import GradcliError, UsageError
from ..limits import MAX_NODES, max_chars
from ..parser import parse
from ..points import Value, as_point, is_sweep, parse_assignments
from .base import BINDINGS_KEY, BindingCommand, cli, stdin_lines
from .output import Output

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
  gradcli eval "x**2*y" --x -2:2:9 --y 1,2 --csv      # a sweep over a grid
  gradcli eval "x**3*y" --x 2 --y 1 --hessian
  gradcli eval "(x*W+b-t)**2" --x 2 --W 3             # b, t free: expressions
  printf 'x*y\\nsin(x)\\n' | gradcli eval - --x 1 --y 2 --json

\b
Exit status: 0 ok; 1 a finite-difference check failed; 2 usage, parse or name error;
3 numeric error (domain, overflow, division by zero); batch: the largest status of its lines;
130 interrupted (Ctrl-C); 141 the reader of stdout went away (| head -1).
"""


class Tolerance(click.ParamType):
    """A finite number >= 0 (``inf`` or ``nan`` would make every check pass or fail)."""

    name = "tolerance"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number) or number < 0:
            self.fail(f"{value!r} is not a finite number >= 0", param, ctx)
        return number


TOLERANCE = Tolerance()


@cli.command("eval", cls=BindingCommand, help=EVAL_HELP, no_args_is_help=False)
@click.argument("expr", required=False)
@click.option("--set", "assignments", multiple=True, metavar="NAME=VALUE",
              help="Give a variable a value (repeatable).")
@click.option("-f", "--file", "program_file", type=click.File("r", encoding="utf-8-sig"),
              help="Read one program (statements on separate lines, # comments) from FILE.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (JSON Lines for a batch).")
@click.option("--no-check", is_flag=True, help="Skip the finite-difference check.")
@click.option("--rtol", type=TOLERANCE, default=DEFAULT_RTOL, show_default=True,
              help="Relative tolerance of the check.")
@click.option("--atol", type=TOLERANCE, default=DEFAULT_ATOL, show_default=True,
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
@click.option("--check-nodes", is_flag=True,
              help="In a batch, also check every intermediate node's gradient (one program: "
                   "always done up to 300 nodes). Input gradients are always checked.")
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
    check_nodes: bool = False,
) -> int:
    """Everything ``gradcli eval`` does; returns the exit status."""
    output = Output(as_json)
    options: dict[str, Any] = {"check": not no_check, "rtol": rtol, "atol": atol,
                               "check_method": check_method, "max_nodes": max_nodes}
    try:
        given = parse_assignments([*ctx.meta.get(BINDINGS_KEY, []), *assignments])
        if program_file is not None and expr is not None:
            raise UsageError("give either EXPR or -f FILE, not both")
        if as_csv and as_json:
            raise UsageError("--csv and --json are two output formats: give one")
        if as_csv or is_sweep(given):
            if order > 1 or hessian:
                raise UsageError("sweeps give values and gradients, not Hessians",
                                 hint="drop --hessian/--order, or evaluate one point")
            return run_sweep(output, expr, program_file, given, options, as_csv)
        values = as_point(given)
        options["strict"] = strict
        if order > 1 or hessian:
            options["order"] = 2
        if program_file is not None:
            return output.single(program_file.read(), values, options, program_file.name)
        if expr == "-" or (expr is None and not sys.stdin.isatty()):
            limit = NODE_CHECK_LIMIT if check_nodes else BATCH_NODE_CHECK_LIMIT
            options["node_check_limit"] = limit
            return output.batch(stdin_lines(max_chars(max_nodes)), values, options)
        if expr is None:
            raise UsageError("no expression given",
                             hint='try: gradcli eval "(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8')
    except GradcliError as error:
        return output.error(error, expr if expr not in (None, "-") else "")
    return output.single(expr, values, options)


def run_sweep(output: Output, expr: str | None, program_file: IO[str] | None,
              values: dict[str, Value], options: dict[str, Any], as_csv: bool) -> int:
    """``gradcli eval`` at every point of a grid: a table, JSON Lines or CSV."""
    from ..sweep import csv_rows, evaluate_sweep, point_records, sweep_columns

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
        import csv  # here: a single evaluation needs no csv module

        csv.writer(sys.stdout, lineterminator="\n").writerows(csv_rows(sweep))
    elif output.as_json:
        from ..jsonout import dumps

        for record in point_records(sweep):
            sys.stdout.write(dumps({"expression": source, **record}) + "\n")
    else:
        from ..render import make_console
        from ..render_sweep import sweep_view

        console = make_console()
        console.print(sweep_view(sweep, plain=not console.is_terminal))
    return sweep.status
