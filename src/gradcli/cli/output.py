"""How results and errors are printed, as JSON or with Rich; each method returns the status."""

from __future__ import annotations

import sys
from collections.abc import Iterable
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
            from ..jsonout import dumps, result_record

            click.echo(dumps(result_record(result, source)))
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
        if self.as_json:  # records made on every core (batch.py), written here in input order
            from ..batch import json_lines

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
        from ..render import batch_line, make_console

        console = make_console()

        def emit(outcome: LineOutcome) -> None:
            console.print(batch_line(outcome))
            console.file.flush()

        return emit
