"""Printing for the commands: results, errors and batches as JSON or Rich, to stdout and stderr.

Each function prints what it is given and returns the exit status that goes with it; nothing
here evaluates.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import click

from gradcli.errors import ExitStatus, GradcliError
from gradcli.gradcheck.evaluation import (
    EvalSettings,
    FreeResult,
    Result,
    evaluate_lines,
)


def show_result(result: Result | FreeResult, source: str, as_json: bool) -> int:
    """One evaluated program: the JSON record, or the node table, gradients and verdict."""
    if as_json:
        from gradcli.output.records import json_pieces, result_record

        sys.stdout.writelines(json_pieces(result_record(result, source)))
        sys.stdout.write("\n")
    else:
        from gradcli.output.views import make_console, result_view

        console = make_console()
        console.print(result_view(result, plain=not console.is_terminal))
    return result.status


def show_error(error: GradcliError, as_json: bool, source: str = "", name: str = "") -> int:
    """An error: a JSON error record (and one line on stderr), or the caret display on stderr.
    ``name`` is the file the program came from, if any."""
    if as_json:
        from gradcli.output.records import dumps, error_record

        click.echo(dumps(error_record(error, source)))
        click.echo(f"gradcli: {error.one_line()}", err=True)
    else:
        from gradcli.output.views import error_view, make_console

        make_console(stderr=True).print(error_view(error, f"{name}: " if name else ""))
    return error.status


def show_batch(lines: Iterable[str], values: dict[str, float], settings: EvalSettings,
               as_json: bool) -> int:
    """One record per program line, in order; returns the largest status among them."""
    _collect_rarely()
    if as_json:
        return _json_batch(lines, values, settings)
    from gradcli.output.views import batch_line, make_console

    console = make_console()
    status = ExitStatus.OK
    for outcome in with_progress(evaluate_lines(lines, values, settings), None, "programs"):
        console.print(batch_line(outcome))
        console.file.flush()
        status = max(status, outcome.status)
    return status


def _json_batch(lines: Iterable[str], values: dict[str, float], settings: EvalSettings) -> int:
    """Records made on every core (``output.batch``), written here in input order."""
    from gradcli.output.batch import json_runs

    status = ExitStatus.OK
    write = sys.stdout.write
    for records in with_progress(json_runs(lines, values, settings), None, "programs", size=len):
        for record in records:  # a write each: joining them first costs more (a large
            write(record.text)  # temporary string is fresh memory, page by page)
            write("\n")
        sys.stdout.flush()
        for record in records:
            if record.error is not None:
                click.echo(f"gradcli: line {record.line}: {record.error}", err=True)
            status = max(status, record.status)
    return status


def _collect_rarely() -> None:
    """Tune the cycle collector for a batch, which makes a few hundred short-lived objects per
    program and keeps none: collecting the young generation every 700 allocations scanned each
    program's live graph over and over. Every 50,000 is enough for the few cycles an error's
    traceback makes. What start-up made is frozen out of the collector's sight (and stays
    shared, untouched, by forked workers)."""
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


def with_progress(items: Iterator[Any], total: int | None, what: str,
                  quiet: bool = False, size: Callable[[Any], int] | None = None) -> Iterator[Any]:
    """Yield ``items``, showing a transient progress line on stderr while they come -- only when
    stderr is a terminal that the output itself does not already fill (stdout elsewhere).
    ``size(item)`` is how many of ``what`` an item stands for (default 1)."""
    if quiet or not sys.stderr.isatty() or (total is None and sys.stdout.isatty()):
        yield from items
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from gradcli.output.views import make_console

    columns = [TextColumn(what), BarColumn(), MofNCompleteColumn()] if total is not None else [
        TextColumn(what), TextColumn("{task.completed:,}")]
    # stdout carries the records: never captured; stderr's one-line errors print above the bar.
    with Progress(*columns, console=make_console(stderr=True), transient=True,
                  redirect_stdout=False) as progress:
        task = progress.add_task(what, total=total)
        for item in items:
            progress.advance(task, 1 if size is None else size(item))
            yield item
