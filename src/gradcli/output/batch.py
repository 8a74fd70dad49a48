"""A batch as JSON Lines on every core: one record per program line, in input order, streamed.

The first ``SERIAL_LINES`` lines are evaluated in this process, so a small batch never starts a
worker. After that, lines go in chunks to a pool of forked workers, which parse, evaluate, check
and turn each line into its finished JSON text; this process only writes them, oldest chunk
first, so the order is the input's. Memory stays bounded (at most ``IN_FLIGHT`` chunks per worker
are queued, and a reader thread holds at most as many lines again), and output stays prompt: a
chunk is sent as soon as the input pauses, and finished records are written before this process
waits more than ``INPUT_PAUSE`` for input. ``GRADCLI_JOBS=1`` keeps everything in one
process.
"""

from __future__ import annotations

import multiprocessing
import queue
import signal
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import NamedTuple

from gradcli.gradcheck.evaluation import DEFAULT_SETTINGS, EvalSettings, LineOutcome, evaluate_line
from gradcli.limits import default_jobs
from gradcli.output.records import dumps, error_record, result_record

SERIAL_LINES = 128  # evaluated here before any worker starts
CHUNK = 128  # lines per task at most (fewer when input arrives slowly)
IN_FLIGHT = 4  # tasks queued per worker
INPUT_PAUSE = 0.05  # seconds without input after which finished records are written first
LINE_PAUSE = 0.002  # a pause this long between lines ends a chunk early


class JsonLine(NamedTuple):
    """One finished record: its line number, exit status, JSON text, error message if any, and
    the line's input variables (made where the line was evaluated, often a worker: the parent
    learns which given values the batch used without parsing a line again)."""

    line: int
    status: int
    text: str  # one JSON object, no newline
    error: str | None  # the error on one line (for stderr), or None
    names: tuple[str, ...] | None = None  # the line's input variables; None: it did not parse


def json_line(outcome: LineOutcome) -> JsonLine:
    """The ``--json`` record of one batch line."""
    if outcome.error is not None:
        record = error_record(outcome.error, outcome.source, outcome.line)
        message: str | None = outcome.error.one_line()
    else:
        assert outcome.result is not None
        record = result_record(outcome.result, outcome.source, outcome.line)
        message = None
    names = None if outcome.program is None else tuple(outcome.program.variables)
    return JsonLine(outcome.line, int(outcome.status), dumps(record), message, names)


def json_lines(
    lines: Iterable[str],
    values: Mapping[str, float] | None = None,
    settings: EvalSettings = DEFAULT_SETTINGS,
    jobs: int | None = None,
) -> Iterator[JsonLine]:
    """Evaluate each program line (as ``evaluate_lines``) into its JSON record, in order.

    ``jobs`` worker processes (default: ``$GRADCLI_JOBS`` or the CPUs this process may use).
    """
    for records in json_runs(lines, values, settings, jobs):
        yield from records


def json_runs(
    lines: Iterable[str],
    values: Mapping[str, float] | None = None,
    settings: EvalSettings = DEFAULT_SETTINGS,
    jobs: int | None = None,
) -> Iterator[list[JsonLine]]:
    """``json_lines`` in runs of records that are ready together (one record per run while
    evaluating in this process, a worker's whole chunk after that): a writer that writes and
    flushes a run at once makes one system call per chunk instead of one per line."""
    values = dict(values or {})
    numbered = enumerate(lines, start=1)
    yield from _serial(islice(numbered, SERIAL_LINES), values, settings)
    jobs = default_jobs() if jobs is None else jobs
    if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield from _serial(numbered, values, settings)
    else:
        yield from _parallel(numbered, values, settings, jobs)


def _serial(
    numbered: Iterable[tuple[int, str]], values: dict, settings: EvalSettings
) -> Iterator[list[JsonLine]]:
    for number, raw in numbered:
        outcome = evaluate_line(number, raw, values, settings)
        if outcome is not None:
            yield [json_line(outcome)]


def _work(chunk: list[tuple[int, str]], values: dict, settings: EvalSettings) -> list[JsonLine]:
    """A worker's task: the records of a chunk of lines."""
    return [record for records in _serial(chunk, values, settings) for record in records]


def _ignore_interrupts() -> None:
    # Ctrl-C is handled once, by the parent, which then stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _parallel(
    numbered: Iterator[tuple[int, str]], values: dict, settings: EvalSettings, jobs: int
) -> Iterator[list[JsonLine]]:
    limit = jobs * IN_FLIGHT
    # Fork before the reader thread exists: a child must not inherit a thread mid-read.
    with multiprocessing.get_context("fork").Pool(jobs, initializer=_ignore_interrupts) as pool:
        feed = _Feed(numbered, limit * CHUNK)
        pending: deque = deque()
        while True:
            while pending and pending[0].ready():  # finished, and all before it written
                yield pending.popleft().get()
            if len(pending) >= limit:
                yield pending.popleft().get()
                continue
            chunk = feed.take(CHUNK, wait=INPUT_PAUSE if pending else None)
            if chunk is None:  # no input for a while: write what is done before waiting more
                yield pending.popleft().get()
                continue
            if not chunk:
                break
            pending.append(pool.apply_async(_work, (chunk, values, settings)))
        while pending:
            yield pending.popleft().get()
        if feed.failure is not None:
            raise feed.failure


_END = object()


class _Feed:
    """Reads the lines on a thread into a bounded queue, so that the parent can see whether more
    input is waiting (send a chunk now) or not (write what is finished first)."""

    def __init__(self, numbered: Iterator[tuple[int, str]], size: int) -> None:
        self.queue: queue.Queue = queue.Queue(maxsize=size)
        self.ended = False
        self.failure: BaseException | None = None
        threading.Thread(target=self._read, args=(numbered,), daemon=True).start()

    def _read(self, numbered: Iterator[tuple[int, str]]) -> None:
        try:
            for item in numbered:
                self.queue.put(item)
        except BaseException as error:
            self.failure = error
        finally:
            self.queue.put(_END)

    def take(self, most: int, wait: float | None = None) -> list[tuple[int, str]] | None:
        """Up to ``most`` lines: the first waited for (at most ``wait`` seconds: None if none
        came), then those that follow without a pause; [] at the end of the input."""
        if self.ended:
            return []
        try:
            item = self.queue.get(timeout=wait)
        except queue.Empty:
            return None
        chunk: list[tuple[int, str]] = []
        while item is not _END:
            chunk.append(item)
            if len(chunk) >= most:
                return chunk
            try:
                item = self.queue.get(timeout=LINE_PAUSE)
            except queue.Empty:
                return chunk
        self.ended = True
        return chunk
