"""What runs on a Dask cluster (``runs.cluster`` says what travels): the tasks
``evaluate_chunk`` (a chunk of batch lines), ``sweep_block`` and ``run_check_task``, and their
callers ``ClusterRuns``, ``cluster_sweep`` and ``cluster_checks``, which give the results back
oldest first, as the local batch, sweep and check do."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gradcli.errors import visible
from gradcli.gradcheck.evaluation import EvalSettings
from gradcli.runs.batch import (
    CHUNK_CHARS,
    FEED_CHARS,
    INPUT_PAUSE,
    JsonLine,
    _Feed,
    failed_record,
    line_record,
)
from gradcli.runs.cluster import (
    Cluster,
    ClusterError,
    ClusterLostError,
    Tasks,
    killed,
    task_failed,
)

if TYPE_CHECKING:
    from gradcli.output.batch_lines import TableStyle

CHUNK_LINES = 256  # batch lines per task at least: ~0.2 s of work, far above a task's ~1 ms
LINES_PER_WORKER = 4  # ... and at least this many per worker (``chunk_lines``)
FEED_LINES = 1 << 16  # lines read ahead at most (and FEED_CHARS characters)


# --- batches -------------------------------------------------------------------------------------

class ClusterRuns:
    """``batch.json_runs`` on a cluster, one run per chunk (``table``: table lines made on the
    worker). Iterate it once; ``done`` is the last input line handed out, ``detail()`` the
    workers for a progress line, ``close()`` stops the tasks still out."""

    def __init__(self, cluster: Cluster, lines: Iterable[str], values: Mapping[str, float],
                 settings: EvalSettings, first: int = 1, table: TableStyle | None = None) -> None:
        self.cluster, self.values, self.settings = cluster, dict(values), settings
        self.table = table
        self.numbered = enumerate(lines, start=first)
        self.done = first - 1
        self._runs = self._generate()

    def __iter__(self) -> ClusterRuns:
        return self

    def __next__(self) -> list[JsonLine]:
        return next(self._runs)

    def close(self) -> None:
        self._runs.close()

    def detail(self) -> str:
        count = self.cluster.workers_now()
        return f"{count} worker" + ("" if count == 1 else "s")

    def _tasks(self) -> Tasks:
        return Tasks(self.cluster, lambda: ClusterLostError(self.cluster.address.text, self.done))

    def _generate(self) -> Iterator[list[JsonLine]]:
        feed = _Feed(self.numbered, FEED_LINES, FEED_CHARS)
        with self._tasks() as tasks:
            while True:
                while tasks.oldest_done():
                    yield self._finished(tasks)
                if tasks.full():
                    yield self._finished(tasks)
                    continue
                most = chunk_lines(self.cluster.workers_now())
                lines = feed.take(most, CHUNK_CHARS * most // CHUNK_LINES,
                                  wait=INPUT_PAUSE if tasks else None)
                if lines is None:  # the input pauses: write what is done, then wait again
                    continue
                if not lines:
                    break
                tasks.add(lines, evaluate_chunk, lines, self.values, self.settings,
                          self.table, priority=-lines[0][0])
            while tasks:
                yield self._finished(tasks)
            if feed.failure is not None:
                raise feed.failure

    def _finished(self, tasks: Tasks) -> list[JsonLine]:
        lines, records, error = tasks.next_done()
        if error is not None:
            records = self._again(lines, error)
        self.done = lines[-1][0]
        return records

    def _again(self, lines: list[tuple[int, str]], error: BaseException) -> list[JsonLine]:
        """A chunk whose workers kept dying: each line on its own, and a line that still kills
        its worker gets a ``resource`` record."""
        if not killed(error):
            raise task_failed(error)
        records: list[JsonLine] = []
        with self._tasks() as tasks:
            for number, raw in lines:
                tasks.add((number, raw), evaluate_chunk, [(number, raw)], self.values,
                          self.settings, self.table, priority=-number)
            while tasks:
                (number, raw), result, failure = tasks.next_done()
                if failure is not None and not killed(failure):
                    raise task_failed(failure)
                if failure is not None:
                    result = [r for r in [failed_record(
                        number, raw, "the worker evaluating this line died, several times",
                        self.table)] if r]
                records += result
        return records


def chunk_lines(workers: int) -> int:
    """Lines per task: ``CHUNK_LINES``, or ``LINES_PER_WORKER`` per worker on a large cluster,
    so that the scheduler gets at most 1 / (4 x a line's time) tasks a second whatever the
    number of workers (docs/performance.md)."""
    return max(CHUNK_LINES, LINES_PER_WORKER * workers)


def evaluate_chunk(lines: list[tuple[int, str]], values: dict[str, float],
                   settings: EvalSettings, table: TableStyle | None = None) -> list[JsonLine]:
    """A worker's task: the records of a chunk of batch lines, as a local batch makes them."""
    _one_blas_thread()
    records = (line_record(number, raw, values, settings, table) for number, raw in lines)
    return [record for record in records if record is not None]


def _one_blas_thread() -> None:
    """A worker evaluates one task at a time per thread: more BLAS threads only compete."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


# --- sweeps --------------------------------------------------------------------------------------

def cluster_sweep(cluster: Cluster, text: str, max_nodes: int, plan: Any,
                  options: Mapping[str, Any]) -> Iterator[Any]:
    """``sweep.stream_sweep`` on a cluster: workers make the NumPy half of each block of the
    grid (``vector_sweep``); the scalar half (``finish_sweep``, with one recheck budget shared
    by the blocks in order) runs here, so the numbers are a local sweep's bit for bit."""
    from gradcli.gradcheck.sweep import RecheckBudget, finish_sweep
    from gradcli.gradcheck.sweep_stream import block_points

    budget = RecheckBudget()
    options = dict(options)
    work = ((None, sweep_block, (text, max_nodes, columns, options))
            for columns in plan.blocks(block_points(plan.program)))
    with Tasks(cluster, _lost(cluster, "the sweep")) as tasks:
        for _, sweep in tasks.results(work):
            sweep.program = plan.program
            finish_sweep(sweep, None, budget)
            yield sweep


def _lost(cluster: Cluster, during: str) -> Callable[[], ClusterError]:
    return lambda: ClusterError(
        f"lost the Dask scheduler at {visible(cluster.address.text)} during {during}",
        hint=f"run {during} again when the scheduler is back")


@functools.lru_cache(maxsize=8)
def _parsed(text: str, max_nodes: int, given: frozenset[str]) -> Any:
    from gradcli.language.parser import parse

    return parse(text, max_nodes, given)


def sweep_block(text: str, max_nodes: int, columns: dict[str, Any],
                options: dict[str, Any]) -> Any:
    """A worker's task: the NumPy half of one sweep block, without the parsed program (the
    client has its own) and the spreads (used up by the check)."""
    from gradcli.gradcheck.sweep import vector_sweep

    _one_blas_thread()
    program = _parsed(text, max_nodes, frozenset(columns))
    sweep = vector_sweep(program, columns, **options)
    return replace(sweep, program=None, value_spread=None, gradient_spreads=None)


# --- check files ---------------------------------------------------------------------------------

def cluster_checks(cluster: Cluster, specs: Iterable[Any], texts: Mapping[str, str],
                   fail_fast: bool = False) -> Iterator[Any]:
    """``formulas.run.run_checks`` on a cluster: each check a task (its file's text and its
    name travel), outcomes in order; ``fail_fast`` cancels the rest after a failure."""
    work = ((spec, run_check_task, (texts[spec.file], spec.file, spec.name)) for spec in specs)
    with Tasks(cluster, _lost(cluster, "the checks")) as tasks:
        for spec, outcome in tasks.results(work):
            outcome = replace(outcome, spec=spec)
            yield outcome
            if fail_fast and not outcome.ok:
                return


def run_check_task(text: str, file: str, name: str) -> Any:
    """A worker's task: one check of a check file's text (the outcome without its spec: the
    client has its own)."""
    from gradcli.formulas.run import run_check

    _one_blas_thread()
    spec = next(spec for spec in _checks(text, file) if spec.name == name)
    return replace(run_check(spec), spec=None)


@functools.lru_cache(maxsize=4)
def _checks(text: str, file: str) -> list[Any]:
    from gradcli.formulas.files import parse_check_file

    return parse_check_file(text, file)
