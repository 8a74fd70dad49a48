"""``gradcli eval``: its options, read by click into an ``EvalRequest`` (``eval_run`` runs it)."""

from __future__ import annotations

import math
import sys
from typing import Any

import click

from gradcli.cli.arguments import (
    MAX_NODES_OPTION,
    BindingCommand,
    digits_option,
    full_option,
    given_values,
    option_given,
    program_arguments,
)
from gradcli.cli.base import cli
from gradcli.cli.cluster import cluster_option, placement
from gradcli.cli.eval_run import EvalRequest, refuse_closed_stdin, run_eval
from gradcli.cli.program_text import ProgramText
from gradcli.cli.show import show_error
from gradcli.errors import GradcliError, UsageError, visible
from gradcli.gradcheck.evaluation import EvalSettings
from gradcli.gradcheck.tolerances import (
    BATCH_NODE_CHECK_LIMIT,
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    METHODS,
    NODE_CHECK_LIMIT,
)
from gradcli.language.values import is_array_value, is_sweep, parse_assignments
from gradcli.limits import MAX_NODES

EVAL_HELP = """Evaluate EXPR and its gradients (one reverse-mode pass), checked by finite
differences.

\b
Give values as --NAME VALUE, --NAME=VALUE or --set NAME=VALUE (the last works for names that
clash with options, such as --set json=1). Values on the command line override `x = 2` in the
program; a value for a name the program does not use, or a name given twice, is a usage error.
EXPR `-`, or no EXPR with stdin not a terminal, reads one program per line from stdin (a name
that no line uses, or no program lines at all, is a usage error after the last record).

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
  gradcli eval "mean((W@x - t)**2)" --W "[[1, 2], [3, 4]]" --x "[1, 1]" --t "[0, 1]"
  printf 'x*y\\nsin(x)\\n' | gradcli eval - --x 1 --y 2 --json
  gradcli eval - --json --cluster tcp://10.0.0.5:8786 < programs.txt   # on a Dask cluster

\b
Exit status: 0 ok; 1 a finite-difference check failed; 2 usage, parse or name error;
3 numeric error (domain, overflow, division by zero); 4 stdout could not be written (a full
disk, a closed descriptor); batch: the largest status of its lines (a name no line uses counts
as a 2); 130 interrupted (Ctrl-C); 141 the reader of stdout went away (| head -1).
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
@program_arguments("Give a variable a value (repeatable).",
                   "Read one program (statements on separate lines, # comments) from FILE "
                   "(- for stdin).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (JSON Lines for a batch).")
@click.option("--no-nodes", is_flag=True,
              help="With --json: records without the per-node list (value, gradients and the "
                   "check only), smaller and faster to make; for batches in CI.")
@click.option("--no-check", is_flag=True,
              help="Skip the finite-difference check (then --rtol, --atol, --check-method and "
                   "--check-nodes are usage errors).")
@click.option("--rtol", type=TOLERANCE, default=DEFAULT_RTOL, show_default=True,
              help="Relative tolerance of the check.")
@click.option("--atol", type=TOLERANCE, default=DEFAULT_ATOL, show_default=True,
              help="Absolute tolerance of the check.")
@click.option("--check-method", type=click.Choice(METHODS), default="central", show_default=True,
              help="central differences, complex step (exact for analytic ops), or Richardson "
                   "extrapolation of central differences.")
@click.option("--csv", "as_csv", is_flag=True,
              help="Print one CSV row per point (variables, value, gradients, ok, error; an "
                   "array's elements as columns, W[0,1]).")
@click.option("--order", type=click.IntRange(1, 2), default=1, show_default=True,
              help="2 adds the Hessian, checked by finite differences of the gradient.")
@click.option("--hessian", is_flag=True, help="Same as --order 2.")
@click.option("--hvp", "hvp", multiple=True, metavar="NAME=ARRAY",
              help="The Hessian-vector product H·v of a scalar-output program along the "
                   "direction v (one NAME=ARRAY per input, the input's shape; inputs not "
                   "named move by 0), checked by a difference of gradients along v.")
@click.option("--strict", is_flag=True,
              help="Unbound variables are an error (default: value and gradients as "
                   "expressions in them).")
@click.option("--max-nodes", type=click.IntRange(1, MAX_NODES_OPTION), default=MAX_NODES,
              show_default=True,
              help="Refuse a program with more graph nodes (or more than 8 characters per "
                   "node of text) with a usage error.")
@click.option("--check-nodes", is_flag=True,
              help="In a batch, also check every intermediate node's gradient (one program: "
                   "always done up to 300 nodes). Input gradients are always checked.")
@digits_option("an array past a few elements is summarised (--full prints them all). JSON and "
               "CSV keep every digit (so --digits with --json or --csv is a usage error)")
@click.option("--mode", type=click.Choice(("auto", "forward", "reverse")), default="auto",
              show_default=True,
              help="How a program with several outputs (f, g) or an array output computes its "
                   "Jacobian: one reverse pass per output element, or one forward pass per "
                   "input element; auto takes the one with fewer passes (a batch: the lines "
                   "that have a Jacobian; one program with one scalar output: a usage error).")
@full_option("--json writes every array whole (default: an array of over 1,000 elements as its "
             "shape, min, max, mean and norm)")
@click.option("--save", metavar="FILE.npz",
              help="Also write the value, every input's point and gradient (the Hessian with "
                   "--hessian, the Jacobian of several outputs) and the check's verdict to "
                   "FILE.npz, for NumPy (numpy.load).")
@cluster_option
@click.option("--skip", type=click.IntRange(0, sys.maxsize), default=0, metavar="N",
              help="Skip the first N lines of stdin, a batch in JSON Lines (--json): one that "
                   "stopped after line N goes on from line N+1; records keep their line "
                   "numbers.")
@click.pass_context
def eval_command(ctx: click.Context, **options: Any) -> None:
    try:
        request = eval_request(ctx, **options)
    except GradcliError as error:
        expr = options["expr"]
        ctx.exit(show_error(error, options["as_json"], expr if expr not in (None, "-") else ""))
    ctx.exit(run_eval(request))


def eval_request(ctx: click.Context, *, expr: str | None, assignments: tuple[str, ...],
                 program_file: str | None, as_json: bool, as_csv: bool,
                 **options: Any) -> EvalRequest:
    """The request behind click's options; a UsageError for a combination that means nothing."""
    if as_csv and as_json:
        raise UsageError("--csv and --json are two output formats: give one")
    if options["no_nodes"] and not as_json:
        raise UsageError("--no-nodes leaves the node list out of --json records, and "
                         f"{'--csv' if as_csv else 'a table'} has none",
                         hint="add --json, or drop --no-nodes")
    _refuse_options_without_effect(ctx, "--json" if as_json else "--csv" if as_csv else None,
                                   options["no_check"])
    given = given_values(ctx, assignments)
    batch = program_file is None and (expr == "-" or (expr is None and not sys.stdin.isatty()))
    if batch:
        refuse_closed_stdin()
    program = None if batch else ProgramText.read("eval", expr, program_file,
                                                  options["max_nodes"])
    order = 2 if options["hessian"] else options["order"]
    if options["hessian"] and options["order"] != 2 and option_given(ctx, "order"):
        raise UsageError(f"--hessian is --order 2, and --order {options['order']} was given too",
                         hint="give one of them")
    node_limit = NODE_CHECK_LIMIT if not batch or options["check_nodes"] else (
        BATCH_NODE_CHECK_LIMIT)
    settings = EvalSettings(check=not options["no_check"], rtol=options["rtol"],
                            atol=options["atol"], check_method=options["check_method"],
                            node_check_limit=node_limit, order=order, strict=options["strict"],
                            max_nodes=options["max_nodes"], mode=options["mode"],
                            hvp=hvp_direction(options["hvp"]), nodes=not options["no_nodes"],
                            full=options["full"])
    request = EvalRequest(program, given, settings,
                          "csv" if as_csv else "json" if as_json else "table", options["digits"])
    if request.is_sweep:
        _check_sweep(request)
    save = options["save"]
    if save is not None and (program is None or request.is_sweep):
        raise UsageError("--save writes the result of one program at one point",
                         hint="drop --save; a batch or a sweep writes JSON Lines or CSV")
    if save is not None and not save.lower().endswith(".npz"):
        raise UsageError(f"--save writes a NumPy archive, and {visible(save)} does not end "
                         "in .npz", hint="name the file FILE.npz")
    address = placement(ctx, options["cluster"], options["skip"], batch=program is None,
                        json_lines=as_json, sweep=request.is_sweep)
    request.cluster, request.skip, request.save = address, options["skip"], save
    return request


_CHECK_ONLY = ("rtol", "atol", "check_method", "check_nodes")  # they tune the check


def _refuse_options_without_effect(ctx: click.Context, data_format: str | None,
                                   no_check: bool) -> None:
    """A UsageError for an option that the other options make meaningless (``--digits 3
    --json``, ``--no-check --rtol 1e-3``): running without it would pass in silence."""
    if data_format and option_given(ctx, "digits"):
        raise UsageError(f"--digits shapes tables and batch lines, and {data_format} always "
                         "prints every digit", hint=f"drop --digits, or {data_format}")
    if data_format == "--csv" and option_given(ctx, "full"):
        raise UsageError("--full prints every element of large arrays, and --csv writes a "
                         "sweep's numbers, every one of them", hint="drop --full, or --csv")
    for name in _CHECK_ONLY:
        if no_check and option_given(ctx, name):
            raise UsageError(f"--{name.replace('_', '-')} tunes the finite-difference check, "
                             "and --no-check skips it",
                             hint=f"drop --{name.replace('_', '-')}, or --no-check")


def hvp_direction(assignments: tuple[str, ...]) -> dict[str, Any] | None:
    """``--hvp x=[1, 0]`` texts -> {name: number or array}; None when none was given."""
    if not assignments:
        return None
    try:
        direction = parse_assignments(assignments)  # x given twice too: not the last one wins
    except UsageError as error:  # its hint is a value's (--x ranges), not a direction's
        raise UsageError(f"--hvp: {error.message}", hint=_DIRECTION_HINT) from None
    ranges = [name for name, value in direction.items() if isinstance(value, tuple)]
    if ranges:
        raise UsageError(f"--hvp {ranges[0]}: a direction is one number or one array, not a "
                         "range or a list of values", hint='write e.g. --hvp x="[1, 0, 0]"')
    return direction


_DIRECTION_HINT = 'a direction is one number or one array: --hvp x=1 or --hvp x="[1, 0, 0]"'


def _check_sweep(request: EvalRequest) -> None:
    if request.program is None and not is_sweep(request.values):
        raise UsageError("--csv writes a sweep's table, and a batch from stdin is not a sweep",
                         hint="drop --csv: a batch prints one line per program, or JSON Lines "
                              "with --json")
    grid = is_sweep(request.values)  # else --csv of one point
    arrays = [name for name, value in request.values.items() if is_array_value(value)]
    if arrays and grid:
        raise UsageError(f"a sweep varies scalar variables, and {arrays[0]} is an array: "
                         "sweeps of array programs are not supported",
                         hint="evaluate one point at a time (--csv of one point writes an "
                              "array's elements as columns, W[0,1])")
    if request.program is None:
        raise UsageError("a sweep evaluates one program, not a batch from stdin",
                         hint='give the program: gradcli eval "x**2" --x -2:2:9')
    what = "sweeps give" if grid else "--csv writes"
    if request.settings.order > 1 or request.settings.hvp:
        raise UsageError(f"{what} values and gradients, not Hessians",
                         hint="drop --hessian/--order/--hvp, or "
                              + ("evaluate one point" if grid else "--csv (--json has them)"))
    if request.settings.mode != "auto":
        raise UsageError(f"{'a sweep evaluates' if grid else '--csv writes'} a program with one "
                         "scalar output at every point, and --mode chooses how a Jacobian is "
                         "computed", hint="drop --mode")
    if request.settings.check_method != "central":
        raise UsageError(f"{'sweeps are' if grid else '--csv is'} checked by central "
                         "differences only",
                         hint="drop --check-method, or " + (
                             "evaluate single points" if grid else "--csv"))


