"""Printing for the commands: results, errors and batches as JSON or Rich; each function
returns the exit status that goes with what it printed. Nothing here evaluates."""

from __future__ import annotations

import _signal  # not signal: see gradcli.cli
import gc
import sys
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager, suppress

from gradcli.cli import streams
from gradcli.cli.given import Given, check_batch_names
from gradcli.cli.streams import echo
from gradcli.errors import ExitStatus, GradcliError, visible
from gradcli.gradcheck.evaluation import (
    EvalSettings,
    FreeResult,
    Result,
    evaluate_lines,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


def show_result(result: Result | FreeResult, source: str, as_json: bool,
                digits: int | None = None, full: bool = False,
                free_hint: str | None = None, nodes: bool = True) -> int:
    """One evaluated program: the JSON record, or the node table, gradients and verdict
    (``free_hint``: how to bind free variables, where that is not the command line's way)."""
    if as_json:
        from gradcli.output.records import json_pieces, result_record

        sys.stdout.writelines(json_pieces(result_record(result, source, nodes=nodes,
                                                        full=full), once=True))
        sys.stdout.write("\n")
    else:
        parts = _piped_parts(result, digits, full)
        if parts is not None and _printed_plain(parts):
            return result.status
        from gradcli.output.console import make_console
        from gradcli.output.views import FREE_HINT, result_view

        console = make_console()
        if parts is not None:  # built for a pipe already: Rich draws the same pieces
            from rich.console import Group

            console.print(Group(*parts))
        else:
            console.print(result_view(result, plain=not console.is_terminal, digits=digits,
                                      full=full, free_hint=free_hint or FREE_HINT))
    return result.status


def _piped_parts(result: Result | FreeResult, digits: int | None,
                 full: bool) -> list[Any] | None:
    """The pieces of ``result``'s view in their plain form where stdout is a plain pipe."""
    from gradcli.output.plain import writes_plain

    if not isinstance(result, Result) or not writes_plain(sys.stdout):
        return None
    from gradcli.output.views import result_parts

    return result_parts(result, True, digits, full)


def _printed_plain(parts: list[Any]) -> bool:
    """Prints ``parts`` without Rich (``output.plain``) if it can; False where Rich must."""
    from gradcli.output.console import console_width
    from gradcli.output.plain import plain_lines

    lines = plain_lines(parts, console_width(sys.stdout))
    if lines is None:
        return False
    sys.stdout.write("".join(line + "\n" for line in lines))
    return True


def say_shadowed(program: Any, free: Collection[str] = (), where: str | None = None) -> None:
    """``note: e is a variable, not the constant e`` on stderr for each constant the program
    assigns or is given (``e = 2`` is more often a slip), and the notes of the ``free``
    variables (``PI`` with no value) where a command keeps them free. ``where``: where the
    program is when its own lines would mislead (a check's expr, a session's entry)."""
    for note in getattr(program, "notes", ()):
        if note.reading == "shadow" or note.name in free:
            said = note.one_line() if where is None else (
                f"{where}: note: {note.message} (hint: {note.hint})")
            echo(f"gradcli: {visible(said)}", err=True)


def _say_constants_given(values: Iterable[str]) -> None:
    """A batch's ``--e 2``: said once, before the records."""
    from gradcli.engine.ops import CONSTANTS

    for name in values:
        if name in CONSTANTS:
            echo(f"gradcli: note: {name} is given a value, so in every line it is a "
                 f"variable, not the constant {name}", err=True)


def show_error(error: GradcliError, as_json: bool, source: str = "", name: str = "") -> int:
    """An error: a JSON error record (and one line on stderr), or the caret display on stderr.
    ``name`` is the file the program came from, if any."""
    if as_json:
        from gradcli.output.records import dumps, error_record

        echo(dumps(error_record(error, source), once=True))
        echo(f"gradcli: {error.one_line()}", err=True)
    else:
        print_error(error, f"{name}: " if name else "")
    return error.status


def print_tree(picture: Any, max_nodes: int) -> None:
    """The graph as a tree on stdout, to the depth where about 40 columns are left for text
    (each level indents 4)."""
    from gradcli.output.console import make_console
    from gradcli.output.trees import graph_tree

    console = make_console()
    console.print(graph_tree(picture, max_nodes, max(8, (console.width - 40) // 4)))


def print_error(error: GradcliError, source_name: str = "") -> None:
    """The caret display of ``error`` on stderr."""
    from gradcli.output.console import make_console
    from gradcli.output.errors import error_view

    console = make_console(stderr=True)
    width = console.width if console.is_terminal else None
    console.print(error_view(error, source_name, width))


def show_report(outcomes: list[Any], errors: list[Any], as_json: bool,
                late: list[Any] | None = None) -> int:
    """``gradcli check``'s report: the errors, the checks' table and the ``late`` errors (of
    writing the report), or one JSON document; returns the exit status."""
    from gradcli.formulas.outcomes import report_record, report_status

    late = late or []
    if as_json:
        from gradcli.output.records import dumps

        echo(dumps(report_record(outcomes, errors + late)))
        for error in errors + late:
            echo(f"gradcli: {error.one_line()}", err=True)
        return report_status(outcomes, errors + late)
    from gradcli.output.console import make_console
    from gradcli.output.sweep_views import check_view

    for error in errors:
        print_error(error)
    if outcomes:
        console = make_console()
        console.print(check_view(outcomes, plain=not console.is_terminal))
    for error in late:
        print_error(error)
    return report_status(outcomes, errors + late)


def show_batch(lines: Iterable[str], values: dict[str, float], settings: EvalSettings,
               as_json: bool, given: Given, digits: int | None = None,
               runs: Callable[..., Iterator[Any]] | None = None,
               skipped_names: Collection[str] | None = None) -> int:
    """One record per program line, in order; returns the largest status among them.

    No program lines, or a given value no line uses, is a usage error on stderr after the last
    record (stdout keeps one record per line); a name written in the lines ``--skip`` passed
    over (``skipped_names``; None: none were) counts as used, and after them no program line is
    a batch resumed after its end: a note, status 0. ``runs(lines, values, settings)`` makes the
    records a run at a time (default ``runs.batch.json_runs``; a cluster's ``ClusterRuns``).
    Ctrl-C, SIGTERM and SIGHUP stop between records (``_Stops``): 130, or "gradcli:
    terminated" and 128 + the signal's number, as shells report it.
    """
    _collect_rarely()
    uses = _BatchUses(given)
    _say_constants_given(uses.given.values)
    with _Stops() as stops:
        try:
            if as_json:
                status = _json_batch(lines, values, settings, uses, stops, runs)
            else:
                status = _table_batch(lines, values, settings, uses, stops, digits, runs)
        except _TerminatedError as stop:
            _say("gradcli: terminated")
            streams.quiet_after_stop()
            return ExitStatus.HANGUP if stop.signum == _signal.SIGHUP else ExitStatus.TERMINATED
    resumed = skipped_names is not None
    error = check_batch_names(uses.given, {*uses.used, *(skipped_names or ())}, uses.lines,
                              uses.unread, resumed)
    if error is None:
        if resumed and not uses.lines:
            _say("gradcli: note: --skip passes every program line of stdin: nothing is left to "
                 "evaluate")
        return status
    if as_json:
        echo(f"gradcli: {error.one_line()}", err=True)
    else:
        print_error(error)
    return max(status, error.status)


def _table_batch(lines: Iterable[str], values: dict[str, float], settings: EvalSettings,
                 uses: _BatchUses, stops: _Stops, digits: int | None,
                 make_runs: Callable[..., Iterator[Any]] | None = None) -> int:
    """A line per program, made here, or (``make_runs``: a cluster's) by the workers."""
    from gradcli.output.console import make_console

    console = make_console()
    # Piped: a failed line is said on stderr too, for a person watching the terminal.
    echo_errors = not console.is_terminal
    if make_runs is None:
        from gradcli.output.batch_lines import TableStyle, table_line

        style = TableStyle(digits, settings.full)
        runs: Any = ([table_line(outcome, style)]
                     for outcome in evaluate_lines(lines, values, settings))
    else:
        runs = make_runs(lines, values, settings)

    def write(run: list[Any]) -> None:
        for record in run:
            console.print(record.view)
            console.file.flush()
            if echo_errors and record.error is not None:
                _say(f"gradcli: line {record.line}: {visible(record.error)}")

    return _write_runs(runs, write, uses, stops)


class _BatchUses:
    """Which given names the lines of a batch use, counted as the records come."""

    def __init__(self, given: Given) -> None:
        self.given = given
        self.unseen = set(given.values)
        self.used: set[str] = set()  # the lines' variables, complete while a name is unseen
        self.lines = 0
        self.unread = 0  # lines that did not parse: which names they use is not known

    def saw(self, names: Iterable[str] | None) -> None:
        self.lines += 1
        if self.unseen:
            if names is None:
                self.unread += 1
                return
            self.used.update(names)
            self.unseen.difference_update(names)


def _json_batch(lines: Iterable[str], values: dict[str, float], settings: EvalSettings,
                uses: _BatchUses, stops: _Stops,
                make_runs: Callable[..., Iterator[Any]] | None = None) -> int:
    """Records made on every core (``runs.batch``), written in input order a run at a time."""
    from gradcli.runs.batch import json_runs

    write_text = sys.stdout.write

    def write(records: list[Any]) -> None:
        for record in records:  # a write each: cheaper than joining them first
            write_text(record.text)
            write_text("\n")
        sys.stdout.flush()
        for record in records:
            if record.error is not None:
                echo(f"gradcli: line {record.line}: {record.error}", err=True)

    return _write_runs((make_runs or json_runs)(lines, values, settings), write, uses, stops)


def _write_runs(runs: Any, write: Callable[[Any], None], uses: _BatchUses, stops: _Stops) -> int:
    """Each run of records written whole or (stopped before it) not at all; a failure of the
    workers is one line after the last record. Returns the largest status."""
    status = ExitStatus.OK
    try:
        for run in with_progress(runs, None, "programs", size=len,
                                 detail=getattr(runs, "detail", None)):
            with stops.writing():
                write(run)
            for record in run:
                status = max(status, record.status)
                uses.saw(record.names)
    except GradcliError as error:
        echo(f"gradcli: {error.one_line()}", err=True)
        return max(status, error.status)
    finally:
        runs.close()  # stops the workers now, whatever ended the loop
    return status


class _TerminatedError(BaseException):
    """SIGTERM or SIGHUP during a batch: a BaseException, so that a library's ``except
    Exception`` (a cluster's wait for a task) does not take it for a failure."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Stops:
    """Ctrl-C, SIGTERM and SIGHUP during a batch, acted on between records, so the output never
    ends in half a record; a second one while a write is blocked stops at once and drops the
    rest. A signal ignored at start (``nohup``, ``&``) stays ignored."""

    NAMES = ("SIGINT", "SIGTERM", "SIGHUP")

    def __init__(self) -> None:
        self.busy = False
        self.pending: int | None = None
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> _Stops:
        import threading  # a batch's: one eval's start-up does without

        if threading.current_thread() is not threading.main_thread():
            return self  # handlers can only be set in the main thread
        for name in self.NAMES:
            number = getattr(_signal, name, None)
            if number is not None and _signal.getsignal(number) != _signal.SIG_IGN:
                self.previous[number] = _signal.signal(number, self._caught)
        return self

    def __exit__(self, *exc: object) -> None:
        for number, handler in self.previous.items():
            # None: a handler not set from Python, which only SIG_DFL can stand for here
            _signal.signal(number, _signal.SIG_DFL if handler is None else handler)

    def _caught(self, signum: int, frame: Any) -> None:
        if self.busy:
            if self.pending is None:
                self.pending = signum
                return
            streams.silence_stdout()  # its reader stopped in the middle of a write
        _stop(signum)

    @contextmanager
    def writing(self) -> Iterator[None]:
        """A signal that comes inside the block acts once the block is done."""
        self.busy = True
        try:
            yield
        finally:
            self.busy = False
        if self.pending is not None:
            _stop(self.pending)


def _stop(signum: int) -> None:
    if signum == _signal.SIGINT:
        raise KeyboardInterrupt
    raise _TerminatedError(signum)


def _say(line: str) -> None:
    with suppress(OSError):  # the terminal is gone (SIGHUP)
        echo(line, err=True)


def _collect_rarely() -> None:
    """A batch makes short-lived objects and keeps none: collecting every 700 allocations
    rescans each program's graph; every 50,000 is enough for an error's cycles. Start-up's
    objects are frozen out of sight (and stay shared by forked workers)."""
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


def with_progress(items: Iterator[Any], total: int | None, what: str,
                  quiet: bool = False, size: Callable[[Any], int] | None = None,
                  detail: Callable[[], str] | None = None) -> Iterator[Any]:
    """Yield ``items`` with a transient progress line on stderr, when stderr is a terminal the
    output does not fill. ``size(item)``: how many of ``what`` an item is (default 1);
    ``detail`` (a cluster's workers) adds the rate and ``detail()``."""
    if quiet or not sys.stderr.isatty() or (total is None and sys.stdout.isatty()):
        yield from items
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from gradcli.output.console import make_console

    columns = [TextColumn(what), BarColumn(), MofNCompleteColumn()] if total is not None else [
        TextColumn(what), TextColumn("{task.completed:,}")]
    if detail is not None:
        columns.append(TextColumn("{task.fields[rate]}  {task.fields[detail]}"))
    # stdout carries the records: never captured; stderr's one-line errors print above the bar.
    with Progress(*columns, console=make_console(stderr=True), transient=True,
                  redirect_stdout=False) as progress:
        task = progress.add_task(what, total=total, rate="", detail="")
        started = time.monotonic()
        for item in items:
            progress.advance(task, 1 if size is None else size(item))
            if detail is not None:
                done, seconds = progress.tasks[0].completed, time.monotonic() - started
                progress.update(task, rate=f"{done / max(seconds, 1e-3):,.0f}/s",
                                detail=detail())
            yield item
