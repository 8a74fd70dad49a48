"""Batches, sweeps and check files on a Dask cluster (``--cluster ADDRESS``): nothing lost.

This process stays the writer: it hands chunks (batch lines) or blocks (sweep points) to the
scheduler as tasks, at most ``in_flight`` at a time, and writes the results oldest first, byte
for byte what a local run writes. A task is a gradcli function named by reference with plain
data (program text, values, settings, coordinates; never a user's code or a parsed graph), so a
rerun after a lost worker gives the same records; a chunk that keeps killing workers
(``KilledWorker``) is run a line at a time, and a line that still does gets a ``resource``
record. A lost scheduler is ``ClusterLostError``, which says where ``--skip N`` resumes. This
module is the connection and the tasks in flight (``Tasks``); the tasks are ``runs.cluster_runs``.
Dask (``gradcli[cluster]``) is imported only here, and only when asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradcli.errors import ExitStatus, GradcliError, UsageError, visible
from gradcli.limits import default_jobs

CONNECT_SECONDS = 5.0  # an unreachable scheduler is an error after this long
POLL_SECONDS = 0.25  # how often a wait looks at the scheduler connection
INSTALL_HINT = "pip install 'gradcli[cluster]' (Dask's distributed scheduler)"


class ClusterError(GradcliError):
    """The cluster cannot be used (Dask missing, the scheduler unreachable or lost, workers
    without gradcli): a usage error, as nothing was evaluated wrongly."""

    kind = "cluster"
    status = ExitStatus.USAGE


class ClusterLostError(ClusterError):
    """The scheduler went away mid-run; ``done`` input lines have all their records written."""

    def __init__(self, address: str, done: int) -> None:
        super().__init__(
            f"lost the Dask scheduler at {address}; the records of the first {done:,} input "
            f"lines are written", hint=f"when the scheduler is back, feed the same input with "
                                       f"--skip {done} to go on from line {done + 1}")
        self.done = done


# --- where the cluster is ------------------------------------------------------------------------

@dataclass(frozen=True)
class ClusterAddress:
    """Where to run: a scheduler's address (``tcp://host:8786``, ``tls://...``, ``host:8786``),
    a scheduler file (``dask scheduler --scheduler-file``, as Slurm jobs share it), or ``local``
    with ``workers`` processes started here (None: one per CPU)."""

    text: str
    local: bool = False
    workers: int | None = None
    scheduler_file: str | None = None


def parse_address(text: str) -> ClusterAddress:
    """``local``, ``local:4``, a scheduler address or a ``.json`` scheduler file; a UsageError
    for anything else (checked before Dask is imported)."""
    text = text.strip()
    if text == "local" or text.startswith("local:"):
        count = text.partition(":")[2]
        if text == "local":
            return ClusterAddress(text, local=True)
        if count.isdigit() and 1 <= int(count) <= 1024:
            return ClusterAddress(text, local=True, workers=int(count))
        raise UsageError(f"cannot read --cluster {visible(text)}: local:N needs a worker count "
                         "from 1 to 1024", hint="write --cluster local:2")
    if text.endswith(".json"):
        return ClusterAddress(text, scheduler_file=text)
    host = text.partition("://")[2] if "://" in text else text
    if not host or any(c.isspace() for c in text):
        raise UsageError(f"cannot read --cluster {visible(text)}",
                         hint="give the scheduler's address, e.g. tcp://10.0.0.5:8786, a "
                              "scheduler file (.json), or local:2")
    port = _port(host)
    scheme = text.partition("://")[0].lower() if "://" in text else "tcp"
    if port is None and scheme in ("tcp", "tls"):  # Dask needs one
        raise UsageError(f"cannot read --cluster {visible(text)}: it has no port",
                         hint="Dask's scheduler listens on 8786 unless told otherwise: "
                              f"{scheme}://HOST:8786")
    if port is not None and not (port.isdigit() and 1 <= int(port) <= 65535):
        raise UsageError(f"cannot read --cluster {visible(text)}: the port {visible(port)} is "
                         "not a number from 1 to 65535",
                         hint="Dask's scheduler listens on 8786 unless told otherwise: "
                              "tcp://HOST:8786")
    return ClusterAddress(text)


def _port(host: str) -> str | None:
    """The port of ``HOST:PORT`` (``[::1]:PORT`` for IPv6), or None where none is written."""
    host = host.split("/", 1)[0]
    if host.startswith("["):
        tail = host.partition("]")[2]
        return tail[1:] if tail.startswith(":") else None
    return host.rpartition(":")[2] if host.count(":") == 1 else None


def load_distributed() -> Any:
    """``dask.distributed`` with its logs silenced (gradcli says what went wrong, in one line),
    or a UsageError that says how to install it."""
    try:
        import distributed
    except ImportError:
        raise UsageError("--cluster needs Dask, which is not installed",
                         hint=INSTALL_HINT) from None
    _quiet_logs()
    return distributed


def _quiet_logs() -> None:
    """Dask's loggers (some with levels of their own) say nothing below CRITICAL: a lost
    scheduler would otherwise print tracebacks of its reconnections."""
    import logging

    parts = ("distributed", "tornado", "asyncio", "dask")
    for name in [*parts, *logging.root.manager.loggerDict]:
        if name.split(".")[0] in parts:
            logging.getLogger(name).setLevel(logging.CRITICAL)
    for handler in logging.getLogger("distributed").handlers:
        handler.setLevel(logging.CRITICAL)


class Cluster:
    """A client connected to a scheduler (and the LocalCluster behind it for ``local``)."""

    def __init__(self, address: ClusterAddress, client: Any, local: Any = None) -> None:
        self.address, self.client, self.local = address, client, local
        self.distributed = load_distributed()
        self._counted = (time.monotonic(), self.workers())

    @property
    def in_flight(self) -> int:
        """Tasks given out at a time: two per worker (one running, one on its way) and two
        more; it follows the workers as they come and go."""
        return 2 * max(1, self.workers_now()) + 2

    def workers(self) -> int:
        """The workers the scheduler knows now (the client's view)."""
        info = self.client.scheduler_info() or {}
        return len(info.get("workers", {}))

    def workers_now(self) -> int:
        """``workers()``, asked again at most once a second (for a progress line)."""
        at, count = self._counted
        if time.monotonic() - at > 1.0:
            with contextlib.suppress(Exception):
                count = len(self.client.nthreads())
            self._counted = (time.monotonic(), count)
        return self._counted[1]

    def is_connected(self) -> bool:
        return self.client.status == "running"

    def close(self) -> None:
        """Let go of the scheduler (and stop a local cluster); never raises."""
        with contextlib.suppress(Exception):
            self.client.close(timeout=2)
        if self.local is not None:
            with contextlib.suppress(Exception):
                self.local.close(timeout=5)


def connect(address: ClusterAddress) -> Cluster:
    """Connect to the scheduler (or start a local cluster) whose workers run this gradcli, or
    raise a ClusterError naming the address within ``CONNECT_SECONDS``."""
    distributed = load_distributed()
    local = None
    try:
        if address.local:
            with _interrupts_held():
                local = distributed.LocalCluster(  # reachable from this machine only
                    n_workers=address.workers or default_jobs(), threads_per_worker=1,
                    processes=True, host="127.0.0.1", scheduler_port=0,
                    dashboard_address="127.0.0.1:0", silence_logs=50,
                    preload=["gradcli.runs.cluster"])  # dask_setup, in each worker
            client = distributed.Client(local, timeout=CONNECT_SECONDS)
        else:
            target = (address.text if address.scheduler_file is None
                      else _scheduler_in(address.scheduler_file))
            # Dask's own timeout a second later than ours: at an address that refuses
            # connections both would end at once, and which message won was a race
            client = _within(CONNECT_SECONDS, lambda: distributed.Client(
                target, timeout=CONNECT_SECONDS + 1))
    # MemoryError: what answered is not Dask (an HTTP server's "HTTP/1.1" read as a frame's
    # length): a false "not enough memory" before
    except (OSError, TimeoutError, ValueError, RuntimeError, TypeError, MemoryError) as error:
        if local is not None:
            local.close()
        raise ClusterError(f"cannot reach the Dask scheduler at {visible(address.text)}: "
                           f"{_reason(error)}",
                           hint="start it (dask scheduler) or give its address: "
                                "--cluster tcp://HOST:8786") from None
    cluster = Cluster(address, client, local)
    try:
        _same_gradcli(cluster)
    except BaseException:
        cluster.close()
        raise
    return cluster


def _within(seconds: float, make: Callable[[], Any]) -> Any:
    """``make()``, or a TimeoutError after ``seconds``: Dask's own timeout misses a scheduler
    that accepts the connection and never answers (the waiting thread is a daemon)."""
    import threading

    outcome: dict[str, Any] = {}

    def attempt() -> None:
        try:
            outcome["client"] = make()
        except BaseException as error:  # handed to the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=attempt, name="gradcli-connect", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["client"]


def _scheduler_in(path: str) -> str:
    """The scheduler's address from its file, read here: Dask waits for a missing file to
    appear, and fails with a traceback on one that holds no address."""
    import json

    hint = "give the file that dask scheduler --scheduler-file wrote, or the scheduler's address"
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            text = file.read(1 << 20)
    except OSError as error:
        raise ClusterError(f"cannot read the scheduler file {visible(path)}: "
                           f"{error.strerror or error}", hint=hint) from None
    try:
        info = json.loads(text)
    except (ValueError, RecursionError):
        info = None
    address = info.get("address") if isinstance(info, dict) else None
    if not isinstance(address, str) or not address:
        raise ClusterError(f"the scheduler file {visible(path)} holds no scheduler address "
                           '(a JSON object with "address")', hint=hint)
    return address


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """SIGINT blocked while a local cluster starts: Dask's thread and the workers it spawns
    inherit the blocked signal, so Ctrl-C in a terminal reaches this process alone, which stops
    them cleanly (a Ctrl-C meanwhile is delivered when this block ends)."""
    import signal

    block = getattr(signal, "pthread_sigmask", None)
    if block is None:
        yield
        return
    block(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        block(signal.SIG_UNBLOCK, {signal.SIGINT})


def dask_setup(worker: Any) -> None:
    """Run by each worker of a local cluster as it starts (Dask's ``preload``): Ctrl-C is
    gradcli's to handle (it stops the workers), so a worker ignores it."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _reason(error: BaseException) -> str:
    if isinstance(error, MemoryError):
        return "what answers there does not speak Dask's protocol (is it a Dask scheduler?)"
    text = " ".join(str(error).split()) or type(error).__name__
    return visible(text[:200])


def gradcli_version() -> str:
    """What a worker runs (called on every worker by ``connect``): its version and the digest
    of its source (``_source_digest``)."""
    import gradcli

    return f"{gradcli.__version__} (source {_source_digest()})"


@functools.cache
def _source_digest() -> str:
    """A digest of the package's Python files, read the first time a process asks: two
    installs of one version from different commits differ, and so does a worker started
    before its files changed, which would mix old code in memory with new code it imports."""
    import gradcli

    root = Path(gradcli.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def _same_gradcli(cluster: Cluster) -> None:
    try:
        versions = cluster.client.run(gradcli_version)
    except Exception as error:
        raise ClusterError(f"the workers at {visible(cluster.address.text)} cannot run "
                           f"gradcli: {_reason(error)}",
                           hint="install the same gradcli on every worker") from None
    mine = gradcli_version()
    other = sorted({v for v in versions.values() if v != mine})
    if other:
        raise ClusterError(f"the workers at {visible(cluster.address.text)} run gradcli "
                           f"{', '.join(other)}, this is {mine}",
                           hint="install the same gradcli on every worker, and restart workers "
                                "that were running when it was installed")


# --- tasks in input order, a fixed number at a time ----------------------------------------------

class Tasks:
    """Futures in input order: ``add`` one, ``next_done`` waits for the oldest and raises
    ``lost()`` if the scheduler is gone."""

    def __init__(self, cluster: Cluster, lost: Callable[[], BaseException]) -> None:
        self.cluster, self.lost = cluster, lost
        self.order: deque[tuple[Any, Any]] = deque()  # (what it was given, future)

    def __len__(self) -> int:
        return len(self.order)

    def full(self) -> bool:
        return len(self.order) >= self.cluster.in_flight

    def add(self, given: Any, function: Callable[..., Any], *args: Any, priority: int) -> None:
        future = self.cluster.client.submit(function, *args, pure=False, priority=priority)
        self.order.append((given, future))

    def oldest_done(self) -> bool:
        return bool(self.order) and self.order[0][1].done()

    def next_done(self) -> tuple[Any, Any, BaseException | None]:
        """The oldest task's input, result (or the error a worker loss left), waiting for it."""
        given, future = self.order[0]
        while True:  # wait first: a result() that times out can cancel a transfer midway
            try:
                self.cluster.distributed.wait(future, timeout=POLL_SECONDS)
            except (TimeoutError, asyncio.TimeoutError):  # one class from Python 3.11 on
                if not self.cluster.is_connected():
                    raise self.lost() from None
                continue
            except Exception:  # cancelled (the scheduler lost): result() tells what happened
                pass
            break
        self.order.popleft()
        try:
            return given, future.result(), None
        except Exception as error:  # KilledWorker, cancelled, a bug in a task
            if _scheduler_gone(error) or not self.cluster.is_connected():
                raise self.lost() from None
            return given, None, error

    def results(self, work: Iterable[tuple[Any, Callable[..., Any], tuple[Any, ...]]]
                ) -> Iterator[tuple[Any, Any]]:
        """Each ``(given, function, arguments)`` of ``work`` handed out as room allows, the
        earlier first, and ``(given, result)`` back oldest first; a task that failed is a
        ``TaskError``."""
        pending = enumerate(work)
        while True:
            while not self.full() and (item := next(pending, None)) is not None:
                index, (given, function, arguments) = item
                self.add(given, function, *arguments, priority=-index)
            if not self:
                return
            given, result, error = self.next_done()
            if error is not None:
                raise task_failed(error)
            yield given, result

    def __enter__(self) -> Tasks:
        return self

    def __exit__(self, *exc: object) -> None:
        """Cancels what is still out when the caller stops: an error, a generator closed."""
        futures = [future for _, future in self.order]
        self.order.clear()
        with contextlib.suppress(Exception):
            self.cluster.client.cancel(futures)


def task_failed(error: BaseException) -> TaskError:
    """The error a task raised on its worker, as one line: its type and message."""
    return TaskError(f"a cluster task failed: {type(error).__name__}: {_reason(error)}")


def _scheduler_gone(error: BaseException) -> bool:
    """Whether ``result()`` failed because the scheduler went away (futures cancelled, or the
    connection closed before the client noticed), not because of the task."""
    import concurrent.futures

    if isinstance(error, concurrent.futures.CancelledError) or "cancelled" in \
            type(error).__name__.lower():
        return True
    return type(error).__name__ == "CommClosedError" or isinstance(error, ConnectionError)


def killed(error: BaseException) -> bool:
    return type(error).__name__ == "KilledWorker"


class TaskError(ClusterError):
    """A task raised something other than a worker's loss: one line with the worker's
    message, the records before it kept."""
