"""A batch as JSON Lines on every core: one record per program line, in input order, streamed.
The first ``SERIAL_LINES`` lines run here (a small batch starts no worker); the rest go in
bounded chunks to forked workers (``runs.workers``), which return finished JSON text, written
oldest chunk first. A line out of memory, or one that kills its worker twice, gets a
``resource`` error record; ``GRADCLI_JOBS=1`` keeps everything in one process."""

from __future__ import annotations

import os
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from itertools import chain, islice
from typing import TYPE_CHECKING, NamedTuple

from gradcli.engine.ops import numpy
from gradcli.errors import OUT_OF_MEMORY, RESOURCE_HINT, ResourceError, no_room_to_load
from gradcli.gradcheck.evaluation import (
    DEFAULT_SETTINGS,
    EvalSettings,
    LineOutcome,
    evaluate_line,
    is_program,
)
from gradcli.limits import default_jobs
from gradcli.output.records import dumps, error_record, result_record

if TYPE_CHECKING:  # a table batch's lines: Rich, imported only when a table batch asks
    from gradcli.output.batch_lines import TableLine, TableStyle
    from gradcli.runs.workers import Chunk, WorkerPool

SERIAL_LINES = 128  # evaluated here before any worker starts
CHUNK = 128  # lines per chunk at most (fewer when input arrives slowly)
CHUNK_CHARS = 1 << 16  # a chunk ends once its lines have this many characters
IN_FLIGHT = 4  # chunks a worker holds at most
IN_FLIGHT_CHARS = 1 << 21  # characters a worker holds at most (but for one long line)
FEED_CHARS = 1 << 24  # characters read ahead at most (but for one long line)
INPUT_PAUSE = 0.05  # seconds without input after which finished records are written first
LINE_PAUSE = 0.002  # a pause this long between lines ends a chunk early


class JsonLine(NamedTuple):
    """One finished record, with the line's input variables (so that the parent learns which
    given values were used without parsing the line again)."""

    line: int
    status: int
    text: str  # one JSON object, no newline
    error: str | None  # the error on one line (for stderr), or None
    names: tuple[str, ...] | None = None  # the line's input variables; None: it did not parse


def json_line(outcome: LineOutcome, nodes: bool = True, full: bool = False) -> JsonLine:
    """The ``--json`` record of one batch line (``nodes``: with the per-node list; ``full``:
    every array whole)."""
    if outcome.error is not None:
        record = error_record(outcome.error, outcome.source, outcome.line)
        message: str | None = outcome.error.one_line()
    else:
        assert outcome.result is not None
        record = result_record(outcome.result, outcome.source, outcome.line, nodes, full)
        message = None
    names = None if outcome.program is None else tuple(outcome.program.variables)
    return JsonLine(outcome.line, int(outcome.status), dumps(record), message, names)


def json_lines(
    lines: Iterable[str],
    values: Mapping[str, float] | None = None,
    settings: EvalSettings = DEFAULT_SETTINGS,
    jobs: int | None = None,
) -> Iterator[JsonLine]:
    """Each program line's JSON record, in order, on ``jobs`` workers (default:
    ``$GRADCLI_JOBS`` or the CPUs this process may use)."""
    for records in json_runs(lines, values, settings, jobs):
        yield from records


def json_runs(
    lines: Iterable[str],
    values: Mapping[str, float] | None = None,
    settings: EvalSettings = DEFAULT_SETTINGS,
    jobs: int | None = None,
    first: int = 1,
) -> Iterator[list[JsonLine]]:
    """``json_lines`` in runs of records ready together (a worker's whole chunk), so a writer
    makes one system call per chunk; ``first`` numbers the first line (``--skip``)."""
    values = dict(values or {})
    numbered: Iterator[tuple[int, str]] = enumerate(lines, start=first)
    yield from _serial(islice(numbered, SERIAL_LINES), values, settings)
    after = next(numbered, None)
    if after is None:  # the input ended: a small batch starts no worker (nor loads them)
        return
    numbered = chain([after], numbered)
    jobs = default_jobs() if jobs is None else jobs
    if jobs <= 1 or not _can_fork():
        yield from _serial(numbered, values, settings)
    else:
        yield from _parallel(numbered, values, settings, jobs)


def _can_fork() -> bool:
    import multiprocessing  # with the workers: only a batch that needs them loads them

    return "fork" in multiprocessing.get_all_start_methods()


def _serial(
    numbered: Iterable[tuple[int, str]], values: dict, settings: EvalSettings
) -> Iterator[list[JsonLine]]:
    for number, raw in numbered:
        record = line_record(number, raw, values, settings)
        if record is not None:
            yield [record]


def line_record(number: int, raw: str, values: Mapping[str, float],
                settings: EvalSettings, table: TableStyle | None = None
                ) -> JsonLine | TableLine | None:
    """The record of one line (None for a blank or comment line; ``table``: a table line); a
    MemoryError becomes its error record, made once the attempt's memory is free again."""
    try:
        return _record(number, raw, values, settings, table)
    except MemoryError:
        pass
    except ImportError as error:  # NumPy imported by a module (engine/arrays.py) found no room
        if not no_room_to_load(error):
            raise
    return failed_record(number, raw, OUT_OF_MEMORY, table)


def _record(number: int, raw: str, values: Mapping[str, float],
            settings: EvalSettings, table: TableStyle | None) -> JsonLine | TableLine | None:
    if settings.check and len(raw) > NUMPY_FIRST_CHARS and "numpy" not in sys.modules:
        _load_numpy()  # before the program takes the memory
    outcome = evaluate_line(number, raw, values, settings)
    if outcome is None:
        return None
    return _finished(outcome, table, settings.nodes, settings.full)


# A line this long loads NumPy (which the check of a large program uses) before it is parsed:
# OpenBLAS ends the whole process, with no exception to catch, if it cannot get its buffers,
# as when a large program has already taken the memory that a limit allows.
NUMPY_FIRST_CHARS = 1 << 16


def _load_numpy() -> None:
    """Import NumPy with one BLAS thread unless told otherwise: each BLAS thread reserves tens
    of MB of address space, which a limit such as ``prlimit --as`` counts."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        numpy()


def failed_record(number: int, raw: str, why: str,
                  table: TableStyle | None = None) -> JsonLine | TableLine | None:
    """The ``resource`` error record of a program line that could not be evaluated."""
    if not is_program(raw):
        return None
    outcome = LineOutcome(number, raw.rstrip("\r\n"), error=ResourceError(why, hint=RESOURCE_HINT))
    return _finished(outcome, table)


def _finished(outcome: LineOutcome, table: TableStyle | None, nodes: bool = True,
              full: bool = False) -> JsonLine | TableLine:
    if table is None:
        return json_line(outcome, nodes, full)
    from gradcli.output.batch_lines import table_line

    return table_line(outcome, table)


def _parallel(
    numbered: Iterator[tuple[int, str]], values: dict, settings: EvalSettings, jobs: int
) -> Iterator[list[JsonLine]]:
    from gradcli.runs.workers import Chunk, PoolError, WorkerPool

    work = partial(line_record, values=values, settings=settings)
    try:  # fork before the reader thread exists: a child must not inherit a thread mid-read
        pool = WorkerPool(jobs, work, failed_record, is_program)
    except PoolError:  # no process to be had: evaluate here
        yield from _serial(numbered, values, settings)
        return
    try:
        feed = _Feed(numbered, jobs * IN_FLIGHT * CHUNK, FEED_CHARS)
        order: deque[Chunk] = deque()  # given to the workers, not yet written; oldest first
        while True:
            while order and (records := _next(pool, order, 0)) is not None:
                if records:  # finished, and all before it written
                    yield records
            lines = None if not pool.room(IN_FLIGHT, IN_FLIGHT_CHARS) else feed.take(
                CHUNK, CHUNK_CHARS, wait=INPUT_PAUSE if order else None)
            if lines is None:  # workers full, or no input for a while: write what is done
                if records := _next(pool, order, None):
                    yield records
                continue
            if not lines:
                break
            chunk = Chunk(lines, sum(len(raw) for _, raw in lines))
            pool.submit(chunk)
            order.append(chunk)
        while order:
            if records := _next(pool, order, None):
                yield records
        if feed.failure is not None:
            raise feed.failure
    except BaseException:  # also GeneratorExit: the reader went away, Ctrl-C, SIGTERM
        pool.close(abort=True)
        raise
    pool.close()


def _next(pool: WorkerPool, order: deque[Chunk], timeout: float | None) -> list | None:
    """The next records of the oldest chunk (None: none within ``timeout`` seconds)."""
    records = pool.receive(order[0], timeout)
    if order[0].finished:
        order.popleft()
    return records


_END = object()


class _Feed:
    """Reads the lines on a thread into a bounded queue, so that the parent sees whether more
    input is waiting (send a chunk now) or not (write what is finished first)."""

    def __init__(self, numbered: Iterator[tuple[int, str]], most_lines: int,
                 most_chars: int) -> None:
        self.items: deque = deque()
        self.chars = 0
        self.changed = threading.Condition()
        self.ended = False
        self.failure: BaseException | None = None
        reader = threading.Thread(target=self._read, args=(numbered, most_lines, most_chars),
                                  daemon=True)
        # Marked for cli/exits.py: while it may be blocked reading stdin, the process ends
        # without the interpreter's teardown, which would wait on stdin's lock and abort.
        reader.reads_stdin = True
        reader.start()

    def _read(self, numbered: Iterator[tuple[int, str]], most_lines: int,
              most_chars: int) -> None:
        items, changed = self.items, self.changed
        try:
            for item in numbered:
                with changed:
                    while items and (len(items) >= most_lines or self.chars >= most_chars):
                        changed.wait()
                    if not items:  # ``take`` waits only on an empty feed
                        changed.notify()
                    items.append(item)
                    self.chars += len(item[1])
        except BaseException as error:
            self.failure = error
        finally:
            with changed:
                items.append((0, _END))
                changed.notify()

    def take(self, most: int, most_chars: int,
             wait: float | None = None) -> list[tuple[int, str]] | None:
        """Up to ``most`` lines and about ``most_chars`` characters: the first waited for at
        most ``wait`` seconds (None if none came), then those that follow without a pause; []
        at the end. The lines waiting are taken under one hold of the lock, not one each (the
        parent's share of a 10,000-line batch, on the cores the workers need)."""
        if self.ended:
            return []
        chunk: list[tuple[int, str]] = []
        chars = 0
        items, changed = self.items, self.changed
        with changed:
            while items or changed.wait_for(lambda: items, wait):
                while items:
                    number, line = items.popleft()
                    if not isinstance(line, str):  # _END
                        self.ended = True
                        return chunk
                    self.chars -= len(line)
                    chunk.append((number, line))
                    chars += len(line)
                    if len(chunk) >= most or chars >= most_chars:
                        changed.notify()  # the reader may wait on a full feed
                        return chunk
                changed.notify()
                wait = LINE_PAUSE
        return chunk or None
