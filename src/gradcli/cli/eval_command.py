"""``gradcli eval``: one program, a batch from stdin, or a sweep over a grid of points."""

from __future__ import annotations

import math
import sys
from functools import partial
from typing import TYPE_CHECKING, Any

import click

from gradcli.cli import streams
from gradcli.cli.arguments import (
    MAX_NODES_OPTION,
    BindingCommand,
    digits_option,
    full_option,
    given_values,
    program_arguments,
)
from gradcli.cli.base import cli
from gradcli.cli.cluster import batch_on, cluster_option, placement, skip_option, sweep_on
from gradcli.cli.given import Given
from gradcli.cli.program_text import ProgramText, stdin_lines
from gradcli.cli.show import say_shadowed, show_batch, show_error, show_result
from gradcli.errors import GradcliError, UsageError, out_of_memory, visible
from gradcli.gradcheck.evaluation import EvalSettings, evaluate
from gradcli.gradcheck.tolerances import (
    BATCH_NODE_CHECK_LIMIT,
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    METHODS,
    NODE_CHECK_LIMIT,
)
from gradcli.language.parser import parse
from gradcli.language.values import Value, as_point, is_sweep, parse_assignments
from gradcli.limits import MAX_NODES, max_chars

if TYPE_CHECKING:
    from gradcli.runs.cluster import ClusterAddress

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
@digits_option
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
@skip_option
@click.pass_context
def eval_command(ctx: click.Context, **options: Any) -> None:
    try:
        request = eval_request(ctx, **options)
    except GradcliError as error:
        ctx.exit(show_error(error, options["as_json"], _shown_source(options["expr"])))
    ctx.exit(run_eval(request))


class EvalRequest:
    """What one ``gradcli eval`` asks for, checked and typed: made from click's options by
    ``eval_request``, carried out by ``run_eval``. (A plain class: see ``ProgramText``.)"""

    def __init__(self, program: ProgramText | None, given: Given, settings: EvalSettings,
                 output: str, digits: int | None = None,
                 cluster: ClusterAddress | None = None, skip: int = 0,
                 save: str | None = None) -> None:
        self.program = program  # None: a batch, one program per line of stdin
        self.given = given  # the values (a range or list for a sweep) and how they were written
        self.settings = settings
        self.output = output  # "table", "json" or "csv"
        self.digits = digits  # significant digits in tables (None: every digit)
        self.cluster = cluster  # where batches and sweeps run (None: here)
        self.skip = skip  # stdin lines a batch skips (--skip)
        self.save = save  # --save FILE.npz: the result's arrays, for NumPy

    @property
    def full(self) -> bool:
        """Every element of large arrays, in tables and in JSON records (--full)."""
        return self.settings.full

    @property
    def values(self) -> dict[str, Value]:
        return self.given.values

    @property
    def is_sweep(self) -> bool:
        return self.output == "csv" or is_sweep(self.values)


def eval_request(ctx: click.Context, *, expr: str | None, assignments: tuple[str, ...],
                 program_file: str | None, as_json: bool, as_csv: bool,
                 **options: Any) -> EvalRequest:
    """The request behind click's options, or a UsageError for a combination that means nothing."""
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
    if batch and streams.stdin_closed:
        raise UsageError("no programs on stdin: stdin is closed",
                         hint='give the program as EXPR: gradcli eval "x**2" --x 3')
    program = None if batch else ProgramText.read("eval", expr, program_file,
                                                  options["max_nodes"])
    order = 2 if options["hessian"] else options["order"]
    if options["hessian"] and options["order"] != 2 and _given(ctx, "order"):
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


_TABLE_ONLY = ("digits",)  # it shapes tables and batch lines; JSON and CSV keep every digit
_CHECK_ONLY = ("rtol", "atol", "check_method", "check_nodes")  # they tune the check


def _refuse_options_without_effect(ctx: click.Context, data_format: str | None,
                                   no_check: bool) -> None:
    """A UsageError for an option given on the command line that the other options make
    meaningless (``--digits 3 --json``, ``--no-check --rtol 1e-3``): the person meant
    something, and running without it would pass in silence."""
    for name in _TABLE_ONLY:
        if data_format and _given(ctx, name):
            raise UsageError(f"--{name.replace('_', '-')} shapes tables and batch lines, and "
                             f"{data_format} always prints every digit",
                             hint=f"drop --{name.replace('_', '-')}, or {data_format}")
    if data_format == "--csv" and _given(ctx, "full"):
        raise UsageError("--full prints every element of large arrays, and --csv writes a "
                         "sweep's numbers, every one of them", hint="drop --full, or --csv")
    for name in _CHECK_ONLY:
        if no_check and _given(ctx, name):
            raise UsageError(f"--{name.replace('_', '-')} tunes the finite-difference check, "
                             "and --no-check skips it",
                             hint=f"drop --{name.replace('_', '-')}, or --no-check")


def _given(ctx: click.Context, name: str) -> bool:
    """Whether the option ``name`` was given (on the command line), not left at its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source is not click.core.ParameterSource.DEFAULT


def hvp_direction(assignments: tuple[str, ...]) -> dict[str, Any] | None:
    """``--hvp x=[1, 0]`` texts -> {name: number or array}; None when none was given."""
    if not assignments:
        return None
    direction = parse_assignments(assignments)
    ranges = [name for name, value in direction.items() if isinstance(value, tuple)]
    if ranges:
        raise UsageError(f"--hvp {ranges[0]}: a direction is one number or one array, not a "
                         "range or a list of values", hint='write e.g. --hvp x="[1, 0, 0]"')
    return direction


def _check_sweep(request: EvalRequest) -> None:
    if request.program is None and not is_sweep(request.values):
        raise UsageError("--csv writes a sweep's table, and a batch from stdin is not a sweep",
                         hint="drop --csv: a batch prints one line per program, or JSON Lines "
                              "with --json")
    grid = is_sweep(request.values)  # else --csv of one point
    arrays = [name for name, value in request.values.items() if hasattr(value, "ndim")]
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


def _shown_source(expr: str | None) -> str:
    return expr if expr not in (None, "-") else ""


def run_eval(request: EvalRequest) -> int:
    """Everything ``gradcli eval`` does after parsing its options; returns the exit status."""
    as_json = request.output == "json"
    if request.program is None:
        lines = stdin_lines(max_chars(request.settings.max_nodes))
        if request.cluster is not None or request.skip:
            from gradcli.output.batch_lines import TableStyle

            table = None if as_json else TableStyle(request.digits, request.full)
            return batch_on(request.cluster, request.skip, lines, partial(
                show_batch, values=as_point(request.values), settings=request.settings,
                as_json=as_json, given=request.given, digits=request.digits,
                full=request.full), table)
        return show_batch(lines, as_point(request.values), request.settings, as_json,
                          request.given, request.digits, full=request.full)
    if request.is_sweep:
        return run_sweep(request)
    program = request.program
    try:
        parsed = parse(program.text, request.settings.max_nodes, request.values)
        request.given.check_used(parsed)
        say_shadowed(parsed)
        result = evaluate(parsed, as_point(request.values), request.settings)
        _check_mode_used(request.settings.mode, result)
        if request.save is not None:
            from gradcli.cli.files import write_file
            from gradcli.language.data_files import npz_bytes
            from gradcli.output.records import result_arrays

            write_file(request.save, npz_bytes(result_arrays(result)))
    except GradcliError as error:
        return show_error(error, as_json, program.text, program.file_name)
    except MemoryError:
        pass  # said below, once what the attempt took is free again
    else:
        return show_result(result, program.text, as_json, request.digits, request.full,
                           nodes=request.settings.nodes)
    return show_error(out_of_memory(), as_json, program.text, program.file_name)


def _check_mode_used(mode: str, result: Any) -> None:
    """``--mode forward|reverse`` is how a Jacobian is computed: for a program with one scalar
    output (one reverse pass, no Jacobian) it would do nothing, so it is a usage error."""
    if mode == "auto":
        return
    from gradcli.gradcheck.jacobian_check import JacobianResult  # not on the scalar path

    if not isinstance(result, JacobianResult):
        raise UsageError(f"--mode {mode} chooses how a Jacobian is computed, and this program "
                         "has one scalar output (its gradient is one reverse pass)",
                         hint="drop --mode; it applies to several outputs (f, g) or an array "
                              "output")


def _has_arrays(program: Any, values: dict[str, Value]) -> bool:
    """An array program (an array value, an array op, or several outputs) -- cheap checks
    first: a scalar program's ``--csv`` (a sweep of one point) does no more work for it."""
    if program.arrays or program.outputs:
        return True
    return any(hasattr(value, "ndim") for value in values.values())


def _point_csv(request: EvalRequest, program: Any) -> int:
    """``--csv`` of one point of an array program: the scalar sweep's CSV (the same columns,
    written by the same functions), one column per input element (``W[0,1]``, ``d/dW[0,1]``).
    Raises the UsageError of what a row cannot hold: an array output, several outputs."""
    import csv
    from dataclasses import replace

    from gradcli.errors import NumericError
    from gradcli.gradcheck.evaluation import Result
    from gradcli.gradcheck.jacobian_check import JacobianResult
    from gradcli.gradcheck.sweep_results import csv_rows
    from gradcli.output.sweep_views import point_sweep

    if request.cluster is not None:
        raise UsageError("--cluster runs batches and sweeps, and this is one point of an "
                         "array program", hint="drop --cluster: one point is evaluated here")
    values = as_point(request.values)
    try:
        result = evaluate(program, values, replace(request.settings, strict=True))
    except NumericError as error:
        point = {**program.defaults, **values}
        sweep = point_sweep(program, {name: point[name] for name in program.variables}, error=error)
    else:
        if isinstance(result, JacobianResult):
            what = ("has several outputs" if len(result.values) > 1 else
                    "has an array output")
            raise UsageError(f"--csv writes a row of one number and its gradients, and this "
                             f"program {what}: its Jacobian has no row form",
                             hint="--json writes its values and Jacobian")
        assert isinstance(result, Result)  # strict: no free variables, so no FreeResult
        sweep = point_sweep(program, result.point, result)
    csv.writer(sys.stdout, lineterminator="\n").writerows(csv_rows(sweep))
    return sweep.status


def run_sweep(request: EvalRequest) -> int:
    """``gradcli eval`` at every point of a grid: a table, JSON Lines or CSV.

    The grid is evaluated a block at a time (``stream_sweep``); CSV and JSON Lines are written
    block by block, in grid order, and the table is made from a ``SweepSummary`` (its first rows
    and counts), so memory does not grow with the number of points."""
    from contextlib import closing

    from gradcli.gradcheck.sweep_results import AGREEMENT, csv_body, csv_header, point_records
    from gradcli.gradcheck.sweep_stream import SweepSummary, stream_sweep

    program, settings = request.program, request.settings
    assert program is not None
    try:
        parsed = parse(program.text, settings.max_nodes, request.values)
        request.given.check_used(parsed)
        say_shadowed(parsed)
        if not is_sweep(request.values) and _has_arrays(parsed, request.values):
            return _point_csv(request, parsed)
        options = dict(check=settings.check, rtol=settings.rtol, atol=settings.atol)
        blocks = (stream_sweep(parsed, request.values, **options) if request.cluster is None
                  else sweep_on(request.cluster, program.text, settings.max_nodes, parsed,
                                request.values, {**options, "reconcile": True}))
    except GradcliError as error:
        return show_error(error, request.output == "json", program.text, program.file_name)
    keep = 0
    if request.output == "table":
        from gradcli.output.tables import MAX_TABLE_ROWS

        keep = MAX_TABLE_ROWS
    summary = SweepSummary(keep)
    with closing(blocks):
        if request.output == "csv":
            import csv

            writer = csv.writer(sys.stdout, lineterminator="\n")
            writer.writerow(csv_header(list(parsed.variables)))
            for sweep in blocks:
                writer.writerows(csv_body(sweep))
                summary.add(sweep)
        elif request.output == "json":
            from gradcli.output.records import dumps

            for sweep in blocks:
                for record in point_records(sweep):
                    sys.stdout.write(dumps({"expression": program.text, **record}) + "\n")
                summary.add(sweep)
        else:
            for sweep in blocks:
                summary.add(sweep)
    if request.output == "table":
        from gradcli.output.console import make_console
        from gradcli.output.sweep_views import sweep_view

        console = make_console()
        console.print(sweep_view(summary, plain=not console.is_terminal, digits=request.digits))
    if summary.unsettled:
        click.echo(f"note: NumPy's rounding may change the results at {summary.unsettled:,} "
                   f"of {summary.size:,} points by more than a relative "
                   f"{AGREEMENT:g}; only {summary.rechecked:,} such points could be "
                   "re-evaluated on the scalar path (evaluate the others one at a time for "
                   "exactly what one point gives)", err=True)
    return summary.status
