"""The processes of a batch: forked workers that evaluate chunks of lines, and a lost one redone.

Chunks go in through a pipe (a thread in the worker reads them as they come); records come out
in pieces of at most ``PIECE_CHARS`` characters, read only from the worker holding the oldest
chunk, so this process holds one piece at a time. A worker that dies closes a sentinel pipe: it
is replaced and its chunks given again from the first line not yet received. A death is charged
to the line in the worker's shared progress word; a line charged ``MAX_DEATHS`` times becomes an
error record, and ``MAX_UNCHARGED`` uncharged deaths in a row end the batch with an error.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import queue
import signal
import threading
import traceback
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe, wait
from typing import Any

from gradcli.errors import GradcliError

PIECE_CHARS = 1 << 20  # records a worker sends at a time (JSON text)
PIPE_BYTES = 1 << 20  # what a worker's pipe of records holds, where the system allows it
MAX_DEATHS = 2  # deaths charged to one line after which it gets an error record
MAX_UNCHARGED = 4  # deaths in a row charged to no line and without progress: give up

Lines = list[tuple[int, str]]  # (line number, raw text)
Work = Callable[[int, str], Any]  # a line's record (with ``line`` and ``text``), or None
Failed = Callable[[int, str, str], Any]  # the error record of a line not evaluated again
IsProgram = Callable[[str], bool]  # whether a raw line gets a record


class WorkerError(RuntimeError):
    """A worker raised something other than a GradcliError: a bug, with its traceback."""


class PoolError(GradcliError):
    """The workers cannot be started, or keep dying without making progress."""

    kind = "resource"


@dataclass(eq=False)
class Chunk:
    """Consecutive lines given to one worker, and how far its records have come back."""

    lines: Lines
    chars: int
    received: int = 0  # the number of the last line whose record came back
    finished: bool = False

    def rest(self) -> Lines:
        return [item for item in self.lines if item[0] > self.received]


@dataclass(eq=False)
class _Worker:
    pid: int
    tasks: Connection  # chunks to the worker
    results: Connection  # pieces of records from it
    sentinel: int  # read end of a pipe whose only writer is the worker: readable when it ends
    progress: mmap.mmap  # the line the worker is evaluating (0: none)
    chunks: deque[Chunk] = field(default_factory=deque)  # given to it, oldest first
    chars: int = 0  # their characters

    def current_line(self) -> int:
        return int.from_bytes(self.progress[:8], "little", signed=True)

    def close(self) -> None:
        for end in (self.tasks, self.results):
            end.close()
        os.close(self.sentinel)
        self.progress.close()


class WorkerPool:
    """``jobs`` forked workers running ``work`` on each line of the chunks given to them."""

    def __init__(self, jobs: int, work: Work, failed: Failed, is_program: IsProgram) -> None:
        self.work = work
        self.failed = failed
        self.is_program = is_program
        self.workers: list[_Worker] = []
        self.deaths: dict[int, int] = {}  # line number -> deaths charged to it
        self.condemned: dict[int, str] = {}  # line number -> why it is not evaluated again
        self.uncharged = 0
        try:
            for _ in range(jobs):
                self.workers.append(self._start())
        except BaseException:
            self.close(abort=True)
            raise

    def room(self, most_chunks: int, most_chars: int) -> bool:
        """Whether some worker holds fewer than ``most_chunks`` chunks and ``most_chars``."""
        return any(len(w.chunks) < most_chunks and w.chars < most_chars for w in self.workers)

    def submit(self, chunk: Chunk) -> None:
        """Give ``chunk`` to the worker that holds the fewest chunks."""
        worker = min(self.workers, key=lambda w: (len(w.chunks), w.chars))
        worker.chunks.append(chunk)
        worker.chars += chunk.chars
        self._send(worker, chunk)

    def receive(self, chunk: Chunk, timeout: float | None) -> list | None:
        """The next records of ``chunk`` (the oldest not finished) within ``timeout`` seconds
        (None: no limit), or None; a worker found dead meanwhile is replaced."""
        while True:
            worker = self._holder(chunk)
            ready = wait([worker.results, *(w.sentinel for w in self.workers)], timeout)
            if not ready:
                return None
            if worker.results in ready:
                try:
                    message = worker.results.recv()
                except (EOFError, OSError):  # it died, perhaps in the middle of a message
                    self._replace(worker)
                    continue
                except MemoryError:  # too large to receive here: charged to the next record
                    self._replace(worker, next(
                        (n for n, raw in chunk.rest() if self.is_program(raw)), 0))
                    continue
                return self._take(worker, chunk, *message)
            for dead in [w for w in self.workers if w.sentinel in ready]:
                self._replace(dead)

    def close(self, abort: bool = False) -> None:
        """Stop the workers (with ``abort``: kill them) and wait for them: none outlives this."""
        for worker in self.workers:
            if abort:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(worker.pid, signal.SIGKILL)
            worker.tasks.close()  # end of input: an idle worker exits
        for worker in self.workers:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(worker.pid, 0)
            worker.close()
        self.workers = []

    def _holder(self, chunk: Chunk) -> _Worker:
        for worker in self.workers:
            if worker.chunks and worker.chunks[0] is chunk:
                return worker
        raise AssertionError("the oldest chunk is no worker's first")

    def _take(self, worker: _Worker, chunk: Chunk, records: list, last: bool,
              failure: str | None = None) -> list:
        if failure is not None:
            raise WorkerError(failure)
        self.uncharged = 0
        if records:
            chunk.received = records[-1].line
        if last:
            chunk.finished = True
            worker.chunks.popleft()
            worker.chars -= chunk.chars
        return records

    def _send(self, worker: _Worker, chunk: Chunk) -> None:
        rest = chunk.rest()
        condemned = {n: self.condemned[n] for n, _ in rest if n in self.condemned}
        with contextlib.suppress(OSError):  # it is gone: receive() finds it dead, gives again
            worker.tasks.send((rest, condemned))

    def _replace(self, worker: _Worker, charged: int | None = None) -> None:
        """A worker died (or must: cut off mid-message): charge the death to its line, start
        another worker and give it the same chunks."""
        line = worker.current_line() if charged is None else charged
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker.pid, signal.SIGKILL)
        _, status = os.waitpid(worker.pid, 0)
        index = self.workers.index(worker)
        del self.workers[index]  # reaped: never to be signalled again (its pid may be reused)
        worker.close()
        how = _how_it_ended(status)
        if line:
            self.deaths[line] = self.deaths.get(line, 0) + 1
            if self.deaths[line] > MAX_DEATHS:  # even making its error record ends the worker
                raise PoolError(f"line {line}: the process making its record {how}")
            if self.deaths[line] == MAX_DEATHS:
                self.condemned[line] = (f"the process evaluating this line {how}, "
                                        f"{MAX_DEATHS} times")
        else:
            self.uncharged += 1
            if self.uncharged > MAX_UNCHARGED:
                raise PoolError(f"batch workers keep ending before they finish a chunk "
                                f"(the last one {how})")
        new = self._start()
        self.workers.insert(index, new)
        new.chunks, new.chars = worker.chunks, worker.chars
        for chunk in new.chunks:
            self._send(new, chunk)

    def _start(self) -> _Worker:
        """Fork one worker. Its pipes' ends are closed in the parent, and every other worker's
        are closed in it, so that each pipe ends when the one process at its other end does."""
        task_reader, task_writer = Pipe(duplex=False)
        result_reader, result_writer = Pipe(duplex=False)
        ended_reader, ended_writer = os.pipe()
        _widen(result_writer)
        progress = mmap.mmap(-1, 8)  # shared with the child: MAP_SHARED
        others = [fd for w in self.workers for fd in (w.tasks.fileno(), w.results.fileno(),
                                                      w.sentinel)]
        with warnings.catch_warnings():  # 3.12+: the parent may run an input thread (the
            warnings.simplefilter("ignore", DeprecationWarning)  # child touches none of its
            try:  # locks: it only evaluates and uses its own pipes)
                pid = os.fork()
            except OSError as error:
                for end in (task_reader, task_writer, result_reader, result_writer):
                    end.close()
                for fd in (ended_reader, ended_writer):
                    os.close(fd)
                raise PoolError(f"cannot start a batch worker: {error.strerror}") from None
        if pid == 0:  # the worker
            status = 1
            try:
                for fd in (*others, task_writer.fileno(), result_reader.fileno(), ended_reader):
                    os.close(fd)
                _become_worker()
                _serve(task_reader, result_writer, progress, self.work, self.failed)
                status = 0
            finally:
                os._exit(status)  # never unwinds into the parent's code, flushes nothing
        task_reader.close()
        result_writer.close()
        os.close(ended_writer)
        return _Worker(pid, task_writer, result_reader, ended_reader, progress)


def _widen(connection: Connection) -> None:
    """Let a worker's finished records wait in its pipe rather than in the worker."""
    try:
        import fcntl

        fcntl.fcntl(connection.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # not Linux, or over the system's limit
        pass


def _become_worker() -> None:
    """Ctrl-C is the parent's to handle; SIGTERM and SIGHUP end a worker silently (unless
    ignored: ``nohup``); a worker reads and writes only its pipes, never stdin or stdout."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is not signal.SIG_IGN:
            signal.signal(number, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)


def _serve(tasks: Connection, results: Connection, progress: mmap.mmap, work: Work,
           failed: Failed) -> None:
    """A worker's loop: each chunk's records, in pieces, until the parent closes its pipe."""
    inbox: queue.SimpleQueue = queue.SimpleQueue()

    def read() -> None:
        try:
            while True:
                inbox.put(tasks.recv())
        except (EOFError, OSError):  # the parent closed the pipe, or is gone
            inbox.put(None)
        except BaseException:  # no memory for a chunk: the pipe is cut mid-message, so end
            os._exit(1)  # (the parent gives this worker's chunks to a new one)

    threading.Thread(target=read, daemon=True).start()
    while (task := inbox.get()) is not None:
        lines, condemned = task
        piece: list = []
        sources: Lines = []
        size = 0
        try:
            for number, raw in lines:
                progress[:8] = number.to_bytes(8, "little", signed=True)
                record = (work(number, raw) if number not in condemned
                          else failed(number, raw, condemned[number]))
                if record is None:
                    continue
                if piece and size + len(record.text) > PIECE_CHARS:
                    progress[:8] = bytes(8)
                    _send(results, piece, sources, False, failed)
                    piece, sources, size = [], [], 0
                piece.append(record)
                sources.append((number, raw))
                size += len(record.text)
        except MemoryError:  # not even its error record could be made: end, charged to the line
            raise
        except Exception:  # a bug: the parent raises it, with this traceback
            results.send(([], True, traceback.format_exc()))
            continue
        progress[:8] = bytes(8)
        _send(results, piece, sources, True, failed)


def _send(results: Connection, piece: list, sources: Lines, last: bool, failed: Failed) -> None:
    """Send a piece of records; if its copy does not fit in memory, long records become error
    records saying so."""
    try:
        results.send((piece, last))
        return
    except MemoryError:
        pass
    small = [record if len(record.text) < 4096 else failed(
        number, raw, "its record is too large to pass on with the memory available")
        for record, (number, raw) in zip(piece, sources, strict=True)]
    results.send((small, last))


def _how_it_ended(status: int) -> str:
    """``was killed by SIGKILL``, ``exited with status 1``."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"was killed by {name}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"
