"""What ``gradcli eval`` does once its command line is read (by click, ``eval_command``, or by
hand, ``plain_eval``, whose path loads no click): one program, a batch, or a sweep."""

from __future__ import annotations

import sys
from functools import partial

from gradcli.cli import streams
from gradcli.cli.exits import kept_for_good
from gradcli.cli.given import Given
from gradcli.cli.program_text import ProgramText, stdin_lines
from gradcli.cli.show import show_batch, show_error, show_result
from gradcli.cli.streams import echo
from gradcli.errors import GradcliError, UsageError, out_of_memory
from gradcli.gradcheck.evaluation import EvalSettings, evaluate
from gradcli.language.values import Value, as_point, is_sweep, runs_on_arrays
from gradcli.limits import max_chars

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from gradcli.runs.cluster import ClusterAddress


class EvalRequest:
    """What one ``gradcli eval`` asks for, checked and typed. (A plain class: see
    ``ProgramText``.)"""

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
    def values(self) -> dict[str, Value]:
        return self.given.values

    @property
    def is_sweep(self) -> bool:
        return self.output == "csv" or is_sweep(self.values)


def refuse_closed_stdin() -> None:
    """A batch reads stdin: closed (``<&-``), that is a usage error, not an empty batch."""
    if streams.stdin_closed:
        raise UsageError("no programs on stdin: stdin is closed",
                         hint='give the program as EXPR: gradcli eval "x**2" --x 3')


def run_eval(request: EvalRequest) -> int:
    """Everything ``gradcli eval`` does after parsing its options; returns the exit status."""
    as_json = request.output == "json"
    if request.program is None:
        lines = stdin_lines(max_chars(request.settings.max_nodes))
        batch = partial(show_batch, values=as_point(request.values), settings=request.settings,
                        as_json=as_json, given=request.given, digits=request.digits)
        if request.cluster is None and not request.skip:
            return batch(lines)
        from gradcli.cli.cluster import batch_on
        from gradcli.output.batch_lines import TableStyle

        table = None if as_json else TableStyle(request.digits, request.settings.full)
        return batch_on(request.cluster, request.skip, lines, batch, table)
    if request.is_sweep:
        return run_sweep(request)
    program = request.program
    try:
        parsed = program.parsed(request.given, request.settings.max_nodes)
        kept_for_good()
        result = evaluate(parsed, as_point(request.values), request.settings)
        _check_mode_used(request.settings.mode, result)
        if request.save is not None:
            from gradcli.cli.files import write_file
            from gradcli.language.values import npz_bytes
            from gradcli.output.records import result_arrays

            write_file(request.save, npz_bytes(result_arrays(result)))
    except GradcliError as error:
        return show_error(error, as_json, program.text, program.file_name)
    except MemoryError:
        pass  # said below, once what the attempt took is free again
    else:
        return show_result(result, program.text, as_json, request.digits, request.settings.full,
                           nodes=request.settings.nodes)
    return show_error(out_of_memory(), as_json, program.text, program.file_name)


def _check_mode_used(mode: str, result: Any) -> None:
    """``--mode`` chooses how a Jacobian is computed: with one scalar output it is an error."""
    if mode == "auto":
        return
    from gradcli.gradcheck.jacobian_check import JacobianResult  # not on the scalar path

    if not isinstance(result, JacobianResult):
        raise UsageError(f"--mode {mode} chooses how a Jacobian is computed, and this program "
                         "has one scalar output (its gradient is one reverse pass)",
                         hint="drop --mode; it applies to several outputs (f, g) or an array "
                              "output")


def _point_csv(request: EvalRequest, program: Any) -> int:
    """``--csv`` of one point of an array program: the scalar sweep's CSV, a column per input
    element (``W[0,1]``, ``d/dW[0,1]``); a UsageError for an array output or several."""
    import csv
    from dataclasses import replace

    from gradcli.errors import NumericError
    from gradcli.gradcheck.jacobian_check import JacobianResult
    from gradcli.gradcheck.sweep import csv_rows
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
            what = "has several outputs" if len(result.values) > 1 else "has an array output"
            raise UsageError(f"--csv writes a row of one number and its gradients, and this "
                             f"program {what}: its Jacobian has no row form",
                             hint="--json writes its values and Jacobian")
        sweep = point_sweep(program, result.point, result)
    csv.writer(sys.stdout, lineterminator="\n").writerows(csv_rows(sweep))
    return sweep.status


def run_sweep(request: EvalRequest) -> int:
    """``gradcli eval`` at every point of a grid: a table, JSON Lines or CSV, written a block at
    a time (the table from a ``SweepSummary``): memory does not grow with the points."""
    from contextlib import closing

    from gradcli.gradcheck.sweep import AGREEMENT, csv_body, csv_header, point_records
    from gradcli.gradcheck.sweep_stream import SweepSummary, stream_sweep

    if request.cluster is not None:
        from gradcli.cli.cluster import sweep_on

    program, settings = request.program, request.settings
    assert program is not None
    try:
        parsed = program.parsed(request.given, settings.max_nodes)
        if not is_sweep(request.values) and runs_on_arrays(parsed, request.values):
            return _point_csv(request, parsed)  # one point of an array program
        options = dict(check=settings.check, rtol=settings.rtol, atol=settings.atol)
        blocks = (stream_sweep(parsed, request.values, **options) if request.cluster is None
                  else sweep_on(request.cluster, program.text, settings.max_nodes, parsed,
                                request.values, {**options, "reconcile": True}))
    except GradcliError as error:
        return show_error(error, request.output == "json", program.text, program.file_name)
    keep = 0  # points a table shows; CSV and JSON keep none (and need no table module)
    if request.output == "table":
        from gradcli.output.tables import MAX_TABLE_ROWS

        keep = MAX_TABLE_ROWS
    elif request.output == "csv":
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(csv_header(list(parsed.variables)))
    else:
        from gradcli.output.records import dumps
    summary = SweepSummary(keep)
    with closing(blocks):
        for sweep in blocks:
            if request.output == "csv":
                writer.writerows(csv_body(sweep))
            elif request.output == "json":
                sys.stdout.writelines(dumps({"expression": program.text, **record}) + "\n"
                                      for record in point_records(sweep))
            summary.add(sweep)
    if request.output == "table":
        from gradcli.output.console import make_console
        from gradcli.output.sweep_views import sweep_view

        console = make_console()
        console.print(sweep_view(summary, plain=not console.is_terminal, digits=request.digits))
    if summary.unsettled:
        echo(f"note: NumPy's rounding may change the results at {summary.unsettled:,} "
             f"of {summary.size:,} points by more than a relative "
             f"{AGREEMENT:g}; only {summary.rechecked:,} such points could be "
             "re-evaluated on the scalar path (evaluate the others one at a time for "
             "exactly what one point gives)", err=True)
    return summary.status
