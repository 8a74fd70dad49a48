"""How results and errors are printed, as JSON or with Rich; each method returns the status."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import click

from ..api import LineOutcome, evaluate, evaluate_lines
from ..errors import ExitStatus, GradcliError


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
            from ..jsonout import json_pieces, result_record

            sys.stdout.writelines(json_pieces(result_record(result, source)))
            sys.stdout.write("\n")
        else:
            from ..render import make_console, result_view

            console = make_console()
            console.print(result_view(result, plain=not console.is_terminal))
        return result.status

    def error(self, error: GradcliError, source: str, name: str = "") -> int:
        if self.as_json:
            from ..jsonout import dumps, error_record

            click.echo(dumps(error_record(error, source)))
            click.echo(f"gradcli: {error.one_line()}", err=True)
        else:
            from ..render import error_view, make_console

            make_console(stderr=True).print(error_view(error, f"{name}: " if name else ""))
        return error.status

    def batch(self, lines: Iterable[str], values: dict[str, float],
              options: dict[str, Any]) -> int:
        status = ExitStatus.OK
        _collect_rarely()
        if self.as_json:  # records made on every core (batch.py), written here in input order
            from ..batch import json_runs

            runs = json_runs(lines, values, options)
            write = sys.stdout.write
            for records in with_progress(runs, None, "programs", size=len):
                for record in records:  # a write each: joining them first costs more (a large
                    write(record.text)  # temporary string is fresh memory, page by page)
                    write("\n")
                sys.stdout.flush()
                for record in records:
                    if record.error is not None:
                        click.echo(f"gradcli: line {record.line}: {record.error}", err=True)
                    status = max(status, record.status)
            return status
        emit = self._human_line()
        for outcome in with_progress(evaluate_lines(lines, values, **options), None, "programs"):
            emit(outcome)
            status = max(status, outcome.status)
        return status

    @staticmethod
    def _human_line():
        from ..render import batch_line, make_console

        console = make_console()

        def emit(outcome: LineOutcome) -> None:
            console.print(batch_line(outcome))
            console.file.flush()

        return emit


def _collect_rarely() -> None:
    """Tune the cycle collector for a batch, which makes a few hundred short-lived objects per
    program and keeps none: collecting the young generation every 700 allocations scanned each
    program's live graph over and over (7% of a batch of small programs). Every 50,000 is
    enough for the few cycles an error's traceback makes. What start-up made is frozen out of
    the collector's sight (and stays shared, untouched, by forked workers)."""
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

    from ..render import make_console

    columns = [TextColumn(what), BarColumn(), MofNCompleteColumn()] if total is not None else [
        TextColumn(what), TextColumn("{task.completed:,}")]
    # stdout carries the records: never captured; stderr's one-line errors print above the bar.
    with Progress(*columns, console=make_console(stderr=True), transient=True,
                  redirect_stdout=False) as progress:
        task = progress.add_task(what, total=total)
        for item in items:
            progress.advance(task, 1 if size is None else size(item))
            yield item
