"""Batches that lose a worker, run out of memory or are stopped by a signal (issue 13): every
program line gets exactly one complete record, in input order, and nothing hangs.

The first tests run ``output.batch`` in this process (its workers are forked from pytest);
the others run the real console script, because SIGKILL, SIGTERM, SIGHUP, SIGINT and memory
limits only happen for real there.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli import limits
from gradcli.cli import cli
from gradcli.errors import OUT_OF_MEMORY
from gradcli.gradcheck.evaluation import evaluate_lines
from gradcli.runs import batch, workers

POINT = {"x": 1.5, "y": 2.0}
LINES = ["x*y + sin(x)", "", "# a comment", "log(x - 5)", "2x", "u = x*y; u*u - y",
         "sqrt(y)*exp(-x)"] * 12  # 84 lines, 60 records: several chunks of 7 lines
needs_proc = pytest.mark.skipif(not Path("/proc/self/task").exists(),
                                reason="worker processes are found in Linux's /proc")


@pytest.fixture()
def small_serial_start(monkeypatch):
    monkeypatch.setattr(batch, "SERIAL_LINES", 5)
    monkeypatch.setattr(batch, "CHUNK", 7)


def _reference(lines):
    return [batch.json_line(outcome) for outcome in evaluate_lines(lines, POINT)]


def _in_worker(parent: int) -> bool:
    return os.getpid() != parent


def _children(pid: int) -> list[int]:
    """The processes that ``pid`` started (its batch workers), from /proc."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            found += [int(child) for child in task.read_text().split()]
    return found


def test_a_line_that_kills_its_worker_once_is_evaluated_again(small_serial_start, monkeypatch,
                                                              tmp_path):
    """The worker evaluating line 53 is killed (SIGKILL) the first time: a new worker redoes
    its chunks and the records are those of a batch that lost nothing."""
    parent, marker, evaluate = os.getpid(), tmp_path / "killed", batch.line_record

    def killed_once(number, raw, values, settings):
        if number == 53 and _in_worker(parent) and not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return evaluate(number, raw, values, settings)

    monkeypatch.setattr(batch, "line_record", killed_once)
    assert list(batch.json_lines(LINES, POINT, jobs=2)) == _reference(LINES)
    assert marker.exists()


def test_a_line_that_kills_its_worker_twice_gets_a_resource_record(small_serial_start,
                                                                  monkeypatch):
    """A line that kills every worker that evaluates it (as one that exhausts memory, with the
    OOM killer) is tried twice, then its record says so; every other record is unchanged."""
    parent, evaluate = os.getpid(), batch.line_record
    poisoned = {22, 50, 51}

    def poison(number, raw, values, settings):
        if number in poisoned and _in_worker(parent):
            os.kill(os.getpid(), signal.SIGKILL)
        return evaluate(number, raw, values, settings)

    monkeypatch.setattr(batch, "line_record", poison)
    got = list(batch.json_lines(LINES, POINT, jobs=2))
    expected = _reference(LINES)
    assert [r.line for r in got] == [r.line for r in expected]
    for record, reference in zip(got, expected, strict=True):
        if record.line not in poisoned:
            assert record == reference
            continue
        error = json.loads(record.text)["error"]
        assert error["kind"] == "resource" and record.status == 2
        assert error["message"] == ("the process evaluating this line was killed by SIGKILL, "
                                    "2 times")
        assert record.error.startswith("resource error: the process evaluating")


@needs_proc
def test_workers_killed_while_idle_are_replaced(small_serial_start):
    """Both workers killed while they wait for input: the next lines go to new workers."""
    more = threading.Event()

    def paused_lines():
        yield from LINES[:40]
        more.wait(timeout=30)
        yield from LINES[40:]

    before = set(_children(os.getpid()))
    records = batch.json_lines(paused_lines(), POINT, jobs=2)
    first = [next(records) for _ in range(28)]  # the records of the first 40 lines
    idle = set(_children(os.getpid())) - before
    assert len(idle) == 2
    for pid in idle:
        os.kill(pid, signal.SIGKILL)
    more.set()
    assert first + list(records) == _reference(LINES)
    assert not set(_children(os.getpid())) - before  # all workers waited for


def test_a_memory_error_becomes_the_lines_resource_record(small_serial_start, monkeypatch):
    """In this process (line 4) and in a worker (line 46): a resource error record, status 2,
    and the batch goes on."""
    evaluate = batch.evaluate_line

    def hungry(number, raw, values, settings):
        if number in (4, 46):
            raise MemoryError
        return evaluate(number, raw, values, settings)

    monkeypatch.setattr(batch, "evaluate_line", hungry)
    got = list(batch.json_lines(LINES, POINT, jobs=2))
    expected = _reference(LINES)
    assert [r.line for r in got] == [r.line for r in expected]
    for record, reference in zip(got, expected, strict=True):
        if record.line in (4, 46):
            parsed = json.loads(record.text)
            assert parsed["expression"] == LINES[record.line - 1]
            assert parsed["error"]["kind"] == "resource" and record.status == 2
            assert parsed["error"]["message"] == OUT_OF_MEMORY
            assert "--max-nodes" in parsed["error"]["hint"]
        else:
            assert record == reference


def test_workers_that_keep_dying_end_the_batch_with_one_error(small_serial_start, monkeypatch):
    """Workers that end before evaluating anything (no line to charge) are replaced a few
    times, then the batch stops with an error after its last complete record: no hang."""
    monkeypatch.setattr(workers, "_serve", lambda *args: os._exit(3))
    records = batch.json_lines(LINES, POINT, jobs=2)
    seen = []
    with pytest.raises(workers.PoolError, match=r"keep ending .* exited with status 3"):
        for record in records:
            seen.append(record)
    assert seen == _reference(LINES[:5])


def test_the_cli_says_so_in_one_line_and_keeps_the_records(monkeypatch):
    monkeypatch.setattr(workers, "_serve", lambda *args: os._exit(3))
    monkeypatch.setenv(limits.JOBS_ENV, "2")
    lines = [f"x*{k}" for k in range(200)]
    result = CliRunner().invoke(cli, ["eval", "-", "--json", "--x", "2"],
                                input="\n".join(lines) + "\n")
    assert result.exit_code == 2
    assert [json.loads(line)["value"] for line in result.stdout.splitlines()] == [
        2.0 * k for k in range(batch.SERIAL_LINES)]
    assert result.stderr == ("gradcli: resource error: batch workers keep ending before they "
                             "finish a chunk (the last one exited with status 3)\n")


def test_a_bug_in_a_worker_is_raised_with_its_traceback(small_serial_start, monkeypatch):
    parent, evaluate = os.getpid(), batch.line_record

    def buggy(number, raw, values, settings):
        if number == 30 and _in_worker(parent):
            raise ValueError("a bug")
        return evaluate(number, raw, values, settings)

    monkeypatch.setattr(batch, "line_record", buggy)
    with pytest.raises(workers.WorkerError, match="ValueError: a bug"):
        list(batch.json_lines(LINES, POINT, jobs=2))


def test_without_processes_the_batch_is_evaluated_here(small_serial_start, monkeypatch):
    def no_fork():
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    assert list(batch.json_lines(LINES, POINT, jobs=2)) == _reference(LINES)


def test_long_lines_make_short_chunks(monkeypatch):
    """A chunk ends at CHUNK_CHARS characters, so a few long lines are never sent together
    with many more (a worker holds at most IN_FLIGHT_CHARS of them)."""
    monkeypatch.setattr(batch, "SERIAL_LINES", 0)
    monkeypatch.setattr(batch, "CHUNK_CHARS", 1000)
    monkeypatch.setattr(batch, "IN_FLIGHT_CHARS", 2000)
    lines = ["+".join(["x"] * 300) if k % 3 == 0 else f"x*{k}" for k in range(60)]
    assert list(batch.json_lines(lines, POINT, jobs=2)) == _reference(lines)


# --- the real console script ------------------------------------------------------------------

GRADCLI = [sys.executable, "-m", "gradcli", "eval", "-", "--json", "--x", "0.7", "--y", "1.3"]
JOBS_2 = {**os.environ, limits.JOBS_ENV: "2"}


def hostile_lines(count: int, seed: int, long_nodes: int = 2000) -> bytes:
    """``count`` lines: valid programs, and parse, name, domain and overflow errors, free
    variables, blank and comment lines, CR LF, NUL, invalid UTF-8 and long programs."""
    rng = random.Random(seed)
    kinds = [
        lambda k: f"sin({k}*x)*y + x**2",
        lambda k: "u = x*y; u*u - y",
        lambda k: f"relu(x - {k % 3}) * y + exp(-x*x)/(1 + y*y)",
        lambda k: "2x",
        lambda k: "sin(x",
        lambda k: "x +* y",
        lambda k: "1e999",
        lambda k: "log(x - 9)",
        lambda k: "sqrt(-y)",
        lambda k: "9**9**9",
        lambda k: "exp(exp(exp(10)))",
        lambda k: "1e308*x*10",
        lambda k: "z*x + w",
        lambda k: "nosuchfunction(x)",
        lambda k: "",
        lambda k: "   ",
        lambda k: "# a comment",
        lambda k: "  # an indented comment",
        lambda k: "x*y\r",
        lambda k: "x\x00y",
        # hostile arrays: too deep, a failed check near an edge, LAPACK past the floats
        lambda k: "y2 = " + "[" * 70 + "1" + "]" * 70 + "; sum(y2)*x",
        lambda k: "sum(" + "[" * 64 + "x" + "]" * 64 + ")",
        lambda k: "sum(sqrt([1e-20, 1]*y))",
        lambda k: "sum(log([1e-300, 1]*y))*x",
        lambda k: "sum(inv(eye(3)*1e-310))*x",
        lambda k: "logdet(eye(2)*1e-310*y)",
    ]
    out = []
    for k in range(count):
        if k % 500 == 499:
            out.append(("x*" + "+".join(["y"] * long_nodes)).encode())
        elif k % 997 == 13:
            out.append(b"x*\xff\xfe y")
        else:
            out.append(rng.choice(kinds)(k).encode())
    return b"\n".join(out) + b"\n"


class Run:
    """A batch in a subprocess, its stdout and stderr read by threads as they come."""

    def __init__(self, stdin: Path, env: dict | None = None, command: list[str] = GRADCLI,
                 **popen) -> None:
        with stdin.open("rb") as source:
            self.child = subprocess.Popen(command, stdin=source, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, env=env or JOBS_2, **popen)
        self.out: list[bytes] = []
        self.lines = 0
        self.err = b""
        self.readers = [threading.Thread(target=self._read_out, daemon=True),
                        threading.Thread(target=self._read_err, daemon=True)]
        for reader in self.readers:
            reader.start()

    def _read_out(self) -> None:
        for line in self.child.stdout:
            self.out.append(line)
            self.lines += 1

    def _read_err(self) -> None:
        self.err = self.child.stderr.read()

    def wait_for_records(self, count: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.lines < count:
            assert self.child.poll() is None, "the batch ended too soon"
            assert time.monotonic() < deadline, f"only {self.lines} records"
            time.sleep(0.005)

    def finish(self, timeout: float = 300) -> tuple[int, bytes, bytes]:
        try:
            status = self.child.wait(timeout=timeout)
        finally:
            self.child.kill()
        for reader in self.readers:
            reader.join(timeout=30)
        return status, b"".join(self.out), self.err


def _run(stdin: Path, env: dict | None = None) -> tuple[int, bytes, bytes]:
    return Run(stdin, env).finish()


def _kill_a_worker(run: Run, rng: random.Random) -> int:
    workers_now = _children(run.child.pid)
    assert workers_now, "no worker to kill"
    victim = rng.choice(workers_now)
    os.kill(victim, signal.SIGKILL)
    return victim


@needs_proc
def test_a_worker_killed_mid_batch_changes_no_record(tmp_path):
    """2,000 mixed lines; one worker killed (SIGKILL) while the batch runs: stdout, stderr and
    the status are those of an undisturbed run, which are those of a run in one process."""
    stdin = tmp_path / "lines.txt"
    stdin.write_bytes(hostile_lines(2000, seed=1))
    expected = _run(stdin)
    assert expected == _run(stdin, {**os.environ, limits.JOBS_ENV: "1"})
    run = Run(stdin)
    run.wait_for_records(300)
    _kill_a_worker(run, random.Random(1))
    assert run.finish() == expected
    status, out, _ = expected
    assert status == 3 and out.count(b"\n") == len(out.splitlines())


@pytest.mark.slow
@needs_proc
def test_soak_100k_hostile_lines_with_workers_killed_at_random(tmp_path):
    """10^5 mixed valid and hostile lines (and one over the length limit), a worker killed
    eight times at random moments: the same records, stderr and status as an undisturbed run.
    Each kill waits until every line that was with a worker at the last one has its record
    (more than IN_FLIGHT chunks of CHUNK lines per worker later), so that no line is killed
    twice by chance: a line that is, gets a resource error record, by design."""
    stdin = tmp_path / "lines.txt"
    data = hostile_lines(100_000, seed=13, long_nodes=20_000)
    over = b"x+" * (limits.max_chars() // 2 + 10) + b"x\n"
    stdin.write_bytes(data[: len(data) // 3] + over + data[len(data) // 3:])
    expected = _run(stdin)
    rng = random.Random(13)
    run = Run(stdin)
    window = 2 * batch.IN_FLIGHT * batch.CHUNK + batch.SERIAL_LINES
    mark = 0
    for _ in range(8):
        mark += rng.randint(window, 9_000)
        run.wait_for_records(mark, timeout=600)
        time.sleep(rng.uniform(0, 0.2))
        _kill_a_worker(run, rng)
        mark = run.lines
    status, out, err = run.finish()
    assert out.count(b"\n") == expected[1].count(b"\n") > 60_000
    assert (status, out, err) == expected


def _stopped_batch(sig: int, group: bool) -> tuple[int, bytes, bytes, list[int]]:
    """A JSON batch of 3,000 lines stopped by ``sig`` once its workers run: status, stdout,
    stderr and the workers' process ids."""
    lines = "".join(f"sin({k}*x)*y + x**{k % 5} - y/(1 + x*x)\n" for k in range(3000))
    child = subprocess.Popen(GRADCLI, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=JOBS_2, start_new_session=group,
                             preexec_fn=None if group else _default_stops)
    threading.Thread(target=_feed, args=(child, lines.encode()), daemon=True).start()
    run_out: list[bytes] = []
    reader = threading.Thread(target=lambda: run_out.append(child.stdout.read()), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while len(_children(child.pid)) < 2:
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(0.2)
        pids = _children(child.pid)
        if group:
            os.killpg(child.pid, sig)
        else:
            child.send_signal(sig)
        status = child.wait(timeout=60)
        reader.join(timeout=30)
        return status, run_out[0], child.stderr.read(), pids
    finally:
        child.kill()
        child.wait()
        with contextlib.suppress(OSError):  # (BrokenPipeError: the feed's last write)
            child.stdin.close()


def _default_stops() -> None:
    """In the child: SIGTERM and SIGHUP as a shell leaves them (the test runner may ignore
    SIGHUP, under nohup, and an ignored signal stays ignored)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _feed(child: subprocess.Popen, data: bytes) -> None:
    """``data`` on the batch's stdin, left open: the batch cannot end before the signal comes,
    however fast the machine (3,000 lines took 0.36 s, and the signal came at about 0.3 s)."""
    try:
        child.stdin.write(data)
        child.stdin.flush()
    except (OSError, ValueError):  # the batch gone (a broken pipe), its stdin closed after it
        pass


def _assert_whole_records(out: bytes) -> None:
    assert out.endswith(b"\n")
    numbers = [json.loads(line)["line"] for line in out.splitlines()]
    assert numbers == list(range(1, len(numbers) + 1))


def _assert_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + 10
    for pid in pids:
        while Path(f"/proc/{pid}").exists() and _state(pid) != "Z":
            assert time.monotonic() < deadline, f"worker {pid} outlived the batch"
            time.sleep(0.01)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


@needs_proc
@pytest.mark.parametrize(("sig", "status", "group"), [
    (signal.SIGTERM, 143, False), (signal.SIGHUP, 129, False), (signal.SIGTERM, 143, True),
    (signal.SIGINT, 130, False)],
    ids=["sigterm", "sighup", "sigterm-to-the-group", "sigint"])
def test_sigterm_and_sighup_end_a_batch_cleanly(sig, status, group):
    """128 + the signal's number, one line on stderr and no worker traceback (also when the
    whole process group gets the signal, workers included), whole records, no worker left. The
    input stays open (``tail -f |``), so the feed's thread may be blocked reading stdin: the
    interpreter's teardown aborted on its lock ("Fatal Python error", status -6) until the
    process learnt to end without it (cli/exits.py)."""
    said = b"gradcli: interrupted\n" if sig == signal.SIGINT else b"gradcli: terminated\n"
    got_status, out, err, pids = _stopped_batch(sig, group)
    assert (got_status, err) == (status, said)
    _assert_whole_records(out)
    assert len(pids) == 2
    _assert_gone(pids)


@needs_proc
def test_ctrl_c_while_writing_large_records_leaves_no_half_line(tmp_path):
    """SIGINT while gradcli writes 200 KB records to a pipe read slowly: status 130, one line on
    stderr, and stdout ends with a whole record."""
    program = "+".join(f"sin({k}*x)" for k in range(375))  # 1,500 nodes: a 200 KB record
    stdin = tmp_path / "large.txt"
    stdin.write_text((program + "\n") * 400)
    with stdin.open("rb") as source:
        child = subprocess.Popen(GRADCLI, stdin=source, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=JOBS_2)
    try:
        out = bytearray()
        interrupted = False
        while chunk := os.read(child.stdout.fileno(), 4096):
            out += chunk
            if not interrupted and len(out) > 30 * 200_000:  # past the serial start
                child.send_signal(signal.SIGINT)
                interrupted = True
            time.sleep(0.0005)
        assert interrupted, "the batch ended before it could be interrupted"
        assert child.wait(timeout=60) == 130
        assert child.stderr.read() == b"gradcli: interrupted\n"
        _assert_whole_records(bytes(out))
    finally:
        child.kill()
        child.wait()


def _address_space_of_a_batch() -> int:
    """Bytes of address space a batch process takes before its first large program: NumPy
    (for the check), a reader thread, a worker thread."""
    probe = ("import threading, time\n"
             "from gradcli.runs import batch\n"
             "batch._load_numpy()\n"
             "threading.Thread(target=time.sleep, args=(1,), daemon=True).start()\n"
             "print(open('/proc/self/status').read().split('VmSize:')[1].split()[0])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True,
                          text=True)
    return int(done.stdout) * 1024


@needs_proc
def test_programs_too_large_for_the_memory_limit_get_resource_records():
    """Under RLIMIT_AS, 400,000-node programs (in this process's serial start and in a worker)
    need more memory than there is: each gets a resource error record; every other line is
    evaluated, and every line has exactly one record, in order."""
    limit = _address_space_of_a_batch() + 48 * 2**20
    huge = "+".join(f"sin({k}*x)" for k in range(100_000))
    lines = [f"x*{k}*y" for k in range(300)]
    for at in (5, 199):
        lines[at] = huge

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = subprocess.run(GRADCLI, input=("\n".join(lines) + "\n").encode(), env=JOBS_2,
                          capture_output=True, preexec_fn=limited, timeout=300, check=False)
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["line"] for r in records] == list(range(1, 301)), done.stderr[-2000:]
    for k, record in enumerate(records):
        if k in (5, 199):
            assert record["error"]["kind"] == "resource", record["error"]
        else:
            assert record["value"] == pytest.approx(0.7 * 1.3 * k)
    assert done.returncode == 2
    assert b"Traceback" not in done.stderr


@needs_proc
@pytest.mark.parametrize("json_output", [False, True], ids=["table", "json"])
def test_one_eval_that_runs_out_of_memory_is_a_resource_error(json_output):
    """Under an address-space limit, a single ``eval`` whose arrays do not fit: status 2 and
    the resource error a batch record would say, never NumPy's traceback."""
    args = [sys.executable, "-m", "gradcli", "eval", "sum(ones(30000000)*x)", "--x", "2"]
    args += ["--json"] if json_output else []
    done = subprocess.run(args, capture_output=True, timeout=120, check=False,
                          preexec_fn=lambda: resource.setrlimit(
                              resource.RLIMIT_AS, (300 << 20, 300 << 20)))
    assert done.returncode == 2 and b"Traceback" not in done.stderr, done.stderr[-2000:]
    assert OUT_OF_MEMORY.encode() in (done.stdout if json_output else done.stderr)
    if json_output:
        assert json.loads(done.stdout)["error"]["kind"] == "resource"


def test_numpy_that_finds_no_room_to_load_is_a_resource_error(tmp_path):
    """Found by a helper: under ``prlimit --as``, a large program took the memory first and its
    check's first NumPy import then failed to map a library (an ImportError with an 83-line
    traceback, status 1, and a batch lost every line after it). Where the memory runs out is
    not deterministic (mypyc's own "fatal: out of memory" abort may come first), so a NumPy
    whose import fails that way stands in: the resource error, status 2, one record a line."""
    fake = tmp_path / "numpy"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        'raise ImportError("/site-packages/numpy/linalg/_umath_linalg.so: failed to map '
        'segment from shared object")\n')
    path = f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    env = {**os.environ, "PYTHONPATH": path, "GRADCLI_JOBS": "1"}
    one = subprocess.run([sys.executable, "-m", "gradcli", "eval", "sum(v)", "--v", "[1, 2]"],
                         capture_output=True, timeout=60, check=False, env=env)
    assert one.returncode == 2 and b"Traceback" not in one.stderr, one.stderr[-2000:]
    assert OUT_OF_MEMORY.encode() in one.stderr
    batch = subprocess.run([sys.executable, "-m", "gradcli", "eval", "-", "--json", "--x", "2"],
                           input=b"x*3\nsum([1, 2]*x)\nx+1\n",
                           capture_output=True, timeout=60, check=False, env=env)
    records = [json.loads(line) for line in batch.stdout.splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3] and b"Traceback" not in batch.stderr
    assert (records[0]["value"], records[2]["value"]) == (6.0, 3.0)
    assert records[1]["error"]["kind"] == "resource"


def test_what_a_stop_cut_off_half_way_says_nothing_after_gradcli_s_last_line():
    """A Ctrl-C that lands inside a Dask Future's __init__ leaves an object whose __del__ fails
    at exit (AttributeError: no _client), which Python reports with a traceback; after the
    stop has been said, such reports go nowhere, and stderr ends with gradcli's line."""
    script = (
        "import sys\n"
        "from gradcli.cli import exits\n"
        "class HalfBuilt:\n"
        "    def __del__(self):\n"
        "        raise AttributeError('_client')\n"
        "kept = HalfBuilt()\n"
        "sys.exit(exits._interrupted())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stderr) == (130, "gradcli: interrupted\n")


@needs_proc
def test_numpy_under_a_tight_memory_limit_is_a_resource_record_not_an_openblas_exit():
    """Found by a bug hunt: under ``prlimit --as`` of 100-150 MB, an array line's NumPy import
    ended the whole batch: OpenBLAS's "Memory allocation still failed" (status 1) or its
    threads' pthread_create failures ("interrupted", status 130), the lines after it lost.
    NumPy now starts with one BLAS thread under such a limit, and is refused where it would
    not fit: that line's resource record, status 2, and every other line evaluated."""
    limit = 100 << 20
    done = subprocess.run(
        [sys.executable, "-m", "gradcli", "eval", "-", "--json", "--no-nodes", "--x", "2"],
        input=b"x*2\nsum([x, 1])\nx*3\n", capture_output=True, timeout=120, check=False,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3], done.stderr
    assert (records[0]["value"], records[2]["value"]) == (4.0, 6.0)
    assert records[1]["error"]["kind"] == "resource"
    assert done.returncode == 2 and b"OpenBLAS" not in done.stderr, done.stderr[-2000:]


def test_numpy_starts_with_one_blas_thread_under_a_memory_limit(monkeypatch):
    """What ``limits.numpy_refused`` does under an address-space limit (faked here): one BLAS
    thread unless told otherwise, a refusal that names the memory where too little is left,
    and nothing at all without a limit."""
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (resource.RLIM_INFINITY,) * 2)
    assert limits.numpy_refused() is None and "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (64 << 20, 64 << 20))
    refused = limits.numpy_refused()
    assert refused is not None and "not enough memory" in refused
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (1 << 40, 1 << 40))
    assert limits.numpy_refused() is None
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")  # told otherwise: kept
    limits.numpy_refused()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"
