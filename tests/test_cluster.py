"""Batches, sweeps and check files on a Dask cluster (issue 18): the same bytes as a local run.

Every expected output here is gradcli's own local run (``output.batch``'s forked workers, the
threaded sweep, ``gradcli check`` in one process), itself tested against closed forms, SymPy
and finite differences elsewhere; the cluster must not change one byte of it, whatever happens
to its workers. The cluster is real: a ``dask scheduler`` and two ``dask worker`` processes on
127.0.0.1, started once for the module (a test that kills one starts another), and one run
through ``--cluster local:1`` (a LocalCluster of spawned processes).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import gradcli
from gradcli.errors import ExitStatus, UsageError
from gradcli.runs.cluster import parse_address

distributed = pytest.importorskip("distributed", reason="the cluster extra is not installed")

GRADCLI = [sys.executable, "-m", "gradcli"]
DASK = str(Path(sys.executable).with_name("dask"))
ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "GRADCLI_CLUSTER": ""}
POINT = ["--x", "0.75", "--y", "1.25"]
TEMPLATES = ["x*{k} + sin(y)", "", "# a comment", "log(x - {k})", "2x", "u = x*y; u*u - {k}*y",
             "sqrt(y)*exp(-x/{k}) + tanh(x*y)", "atan2(y, x + {k})**2 / (1 + x*x)",
             # hostile arrays: too deep, a failed check near an edge, LAPACK past the floats
             "z = " + "[" * 70 + "1" + "]" * 70 + "; sum(z)*x", "sum(sqrt([1e-20, {k}]*y))",
             "sum(inv(eye(3)*1e-310))*x"]


def batch_lines(count: int) -> bytes:
    """``count`` mixed lines: values, domain errors, parse errors, blanks and comments."""
    lines = [TEMPLATES[i % len(TEMPLATES)].format(k=1 + i % 7) for i in range(count)]
    return ("\n".join(lines) + "\n").encode()


def run(args: list[str], stdin: bytes = b"", env: dict | None = None,
        timeout: float = 120) -> tuple[int, bytes, bytes]:
    done = subprocess.run([*GRADCLI, *args], input=stdin, capture_output=True,
                          env=env or ENV, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


class Scheduler:
    """A ``dask scheduler`` on 127.0.0.1 and its ``dask worker`` processes (no nanny: a killed
    worker stays dead, and the scheduler must give its tasks to the other)."""

    def __init__(self, folder: Path, workers: int = 2) -> None:
        info = folder / f"scheduler-{time.monotonic_ns()}.json"
        self.process = subprocess.Popen(
            [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(info)], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=ENV)
        self.workers: list[subprocess.Popen] = []
        deadline = time.monotonic() + 60
        while not info.exists() or not info.read_text().strip():
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.05)
        self.address = json.loads(info.read_text())["address"]
        for _ in range(workers):
            self.add_worker()
        self.wait_for_workers(workers)

    def add_worker(self) -> subprocess.Popen:
        worker = subprocess.Popen(
            [DASK, "worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
             "--host", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=ENV)
        self.workers.append(worker)
        return worker

    def wait_for_workers(self, count: int) -> None:
        with distributed.Client(self.address, timeout=30) as client:
            client.wait_for_workers(count, timeout=60)

    def live_workers(self) -> list[subprocess.Popen]:
        return [worker for worker in self.workers if worker.poll() is None]

    def stop(self) -> None:
        for process in [*self.workers, self.process]:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    started = Scheduler(tmp_path_factory.mktemp("dask"))
    yield started
    started.stop()


def _whole_records(out: bytes) -> list[dict]:
    """Each line of ``out`` a complete JSON record (no half line at the end)."""
    assert not out or out.endswith(b"\n")
    return [json.loads(line) for line in out.splitlines()]


def _wait_for_lines(path: Path, count: int, child: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while path.read_bytes().count(b"\n") < count:
        assert child.poll() is None, "the batch ended before the fault came"
        assert time.monotonic() < deadline
        time.sleep(0.01)


def _scheduler_killed_after(own: Scheduler, args: list[str], out: Path, lines: int,
                            stdin: Path | None = None) -> tuple[int, bytes]:
    """Run gradcli ``args`` on ``own``'s cluster, writing to ``out``; kill the scheduler once
    ``lines`` lines are written; the status and stderr (the scheduler is stopped after)."""
    try:
        with (stdin or Path(os.devnull)).open("rb") as source, out.open("wb") as sink:
            child = subprocess.Popen([*GRADCLI, *args, "--cluster", own.address], stdin=source,
                                     stdout=sink, stderr=subprocess.PIPE, env=ENV)
            try:
                _wait_for_lines(out, lines, child)
                own.process.kill()
                _, err = child.communicate(timeout=60)
            finally:
                child.kill()
                child.wait()
    finally:
        own.stop()
    return child.returncode, err


# --- no cluster, no Dask -------------------------------------------------------------------------

def _modules_after(code: str, hide_dask: bool = False) -> tuple[set[str], str]:
    hide = "import sys; sys.modules['distributed'] = None; sys.modules['dask'] = None\n"
    probe = ((hide if hide_dask else "") +
             "import sys\nfrom click.testing import CliRunner\nfrom gradcli.cli import cli\n"
             f"result = CliRunner().invoke(cli, {code})\n"
             "print(result.exit_code, '|', result.output.replace(chr(10), ' '), '|', "
             "' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=ENV, check=True, timeout=60)
    status, output, modules = done.stdout.rsplit(" | ", 2)
    return set(modules.split()), f"{status} {output}"


@pytest.mark.parametrize("args", [
    "['eval', '-', '--json', '--x', '1'], input='x*2\\nsin(x)\\n'",
    "['eval', 'x**2', '--x', '0:1:5', '--csv']",
    "['check', 'examples/checks.toml', '-k', 'sigmoid']",
])
def test_without_cluster_dask_is_never_imported(args):
    modules, outcome = _modules_after(args)
    assert outcome.startswith("0 ")
    assert not {"dask", "distributed", "gradcli.runs.cluster",
                "gradcli.runs.cluster_runs"} & modules


def test_without_the_extra_a_cluster_is_a_usage_error_that_says_how_to_install():
    _, outcome = _modules_after(
        "['eval', '-', '--json', '--cluster', 'local:2'], input='x*2\\n'", hide_dask=True)
    assert outcome.startswith("2 ")
    assert "--cluster needs Dask" in outcome and "pip install 'gradcli[cluster]'" in outcome


@pytest.mark.parametrize("text, expected", [
    ("local", (True, None, None)), ("local:3", (True, 3, None)),
    ("tcp://10.0.0.5:8786", (False, None, None)), ("sched.json", (False, None, "sched.json")),
])
def test_addresses(text, expected):
    address = parse_address(text)
    assert (address.local, address.workers, address.scheduler_file) == expected


@pytest.mark.parametrize("text", ["local:0", "local:x", "tcp://", "two words",
                                  "tcp://127.0.0.1:99999", "10.0.0.5:0", "host:port",
                                  "tcp://[::1]:70000"])
def test_bad_addresses_are_usage_errors(text):
    with pytest.raises(UsageError, match="--cluster"):
        parse_address(text)


@pytest.mark.parametrize("text", ["tcp://[::1]:8786", "tls://h:1/x", "inproc://10.0.0.5/1/1"])
def test_addresses_without_a_bad_port_are_read(text):
    assert parse_address(text).text == text


@pytest.mark.parametrize("text", ["[::1]", "host", "tcp://host", "tls://10.0.0.5", "TCP://host"])
def test_a_tcp_address_without_a_port_is_a_usage_error_not_dask_s(text):
    """Dask refuses these with "missing port number" once it is imported and connecting (a
    cluster error, named as if the scheduler could not be reached): gradcli says so first."""
    with pytest.raises(UsageError, match="it has no port"):
        parse_address(text)


def test_a_scheduler_out_of_reach_is_an_error_record_with_json():
    """With --json every error is a record on stdout, the cluster's too (a bug hunt found
    only stderr's line)."""
    address = f"tcp://127.0.0.1:{_closed_port()}"
    status, out, err = run(["eval", "-", "--json", "--cluster", address], b"x*2\n")
    assert status == 2 and _cluster_record(out)["error"]["kind"] == "cluster", err
    assert b"cannot reach" in err


def test_a_port_past_65535_is_named_before_any_connection():
    status, _, err = run(["eval", "-", "--json", "--cluster", "tcp://127.0.0.1:99999"],
                         b"x*2\n")
    assert status == 2
    assert "the port 99999 is not a number from 1 to 65535" in err.decode()


def test_an_empty_cluster_address_on_the_command_line_is_refused():
    status, out, err = run(["eval", "-", "--json", "--cluster", ""], b"x*2\n")
    assert status == 2 and b'"kind":"usage"' in out
    assert "--cluster needs an address" in err.decode()
    # an empty $GRADCLI_CLUSTER is as good as none: the batch runs here
    env = {**ENV, "GRADCLI_CLUSTER": ""}
    assert run(["eval", "-", "--json"], b"x*2\n", env=env) == run(["eval", "-", "--json"],
                                                                 b"x*2\n")


@pytest.mark.parametrize("args, message", [
    (["eval", "x*2", "--x", "1", "--cluster", "local:2"], "one program at one point"),
    (["eval", "-", "--skip", "2"], "--skip needs a batch in JSON Lines"),
    (["eval", "x*2", "--x", "0:1:3", "--skip", "2"], "--skip skips lines of a batch"),
])
def test_options_that_mean_nothing_are_usage_errors(args, message):
    status, _, err = run(args, b"x*2\n")
    assert status == 2 and message in err.decode()


def test_the_environment_variable_is_ignored_where_no_cluster_applies():
    """One program at one point: evaluated here, as without the variable."""
    env = {**ENV, "GRADCLI_CLUSTER": "tcp://127.0.0.1:9"}
    args = ["eval", "x*2", "--x", "1", "--json"]
    assert run(args, b"", env=env) == run(args, b"")


@pytest.mark.parametrize("options", [[], ["--digits", "3"], ["--w", "3"]],
                         ids=["table", "digits", "unused-value"])
def test_a_table_batch_on_a_cluster_prints_what_it_prints_here(options):
    """Without --json a batch on a cluster writes the lines a local batch writes (made on the
    workers as here: values, gradients, verdicts, errors in their line), the same lines on
    stderr, the same status; blank and comment lines give none."""
    lines = b"sin(x)*y\n2x\nlog(x - 5)\nsum([x, y]**2)\n\n# a comment\nx\n"
    args = ["eval", "-", "--x", "1", "--y", "2", *options]
    here = run(args, lines)
    there = run([*args, "--cluster", "local:2"], lines, timeout=120)
    assert there == here
    assert here[0] == ExitStatus.NUMERIC  # line 3's, the largest
    assert (b"uses w (--w 3)" in here[2]) == (options == ["--w", "3"])
    assert [line.split(b":")[0] for line in here[1].splitlines()] == [
        b"line 1", b"line 2", b"line 3", b"line 4", b"line 7"]


def test_skip_goes_on_from_the_next_line_without_duplicates():
    lines = batch_lines(300)
    _, whole, _ = run(["eval", "-", "--json", *POINT], lines)
    _, first, _ = run(["eval", "-", "--json", *POINT], b"".join(lines.splitlines(True)[:120]))
    status, rest, _ = run(["eval", "-", "--json", "--skip", "120", *POINT], lines)
    assert status == 3 and first + rest == whole
    assert json.loads(rest.splitlines()[0])["line"] > 120


def test_a_value_only_the_skipped_lines_use_is_no_mistake():
    """--skip resumes the same command: z, used by line 1 only, was not a usage error (2)
    after a clean line 2 (a bug hunt found it); without --skip it still is."""
    status, out, err = run(["eval", "-", "--json", "--skip", "1", "--x", "1", "--z", "2"],
                           b"z*2\nx*3\n")
    assert (status, err) == (0, b"") and json.loads(out)["line"] == 2
    status, _, err = run(["eval", "-", "--json", "--x", "1", "--z", "2", "--q", "3"],
                         b"z*2\nx*3\n")
    assert status == 2 and b"no program line uses q (--q 3)" in err
    # a value no line uses, skipped or not, is still the mistake it was (a review)
    status, _, err = run(["eval", "-", "--json", "--skip", "1", "--x", "1", "--z", "2", "--q",
                          "3"], b"z*2\nx*3\n")
    assert status == 2 and b"no program line uses q (--q 3)" in err


def test_a_skip_past_the_end_says_how_many_lines_there_were():
    status, out, err = run(["eval", "-", "--json", "--skip", "5", *POINT], b"x\nx*2\n")
    assert status == 2 and b'"kind":"usage"' in out
    assert "--skip 5 passes the end of the input: stdin has 2 lines" in err.decode()
    # a batch resumed after its last line is done: no record, status 0 and a note, not
    # "no programs on stdin" (status 2; a bug hunt)
    for rest in (b"", b"\n", b"# done\n\n"):  # blank and comment lines after it too (a review)
        status, out, err = run(["eval", "-", "--json", "--skip", "2", "--x", "1"],
                               b"x\nx*2\n" + rest)
        assert (status, out) == (0, b"")
        assert err == (b"gradcli: note: --skip passes every program line of stdin: nothing is "
                       b"left to evaluate\n")
    # and a value no line uses is still the mistake it is, skipped lines or none left (a review)
    status, out, err = run(["eval", "-", "--json", "--skip", "2", "--x", "1", "--q", "3"],
                           b"x\nx*2\n")
    assert status == 2 and b"no program line uses q (--q 3)" in err
    status, out, err = run(["eval", "-", "--json", "--no-check", "--skip", "2", "--x", "1"],
                           b"x\nx*2\n\n# c\nx*3\n")
    assert status == 0 and json.loads(out)["line"] == 5


def _cluster_record(out: bytes) -> dict:
    """With --json a cluster that cannot be used is one error record on stdout, as every
    error is (docs/batch-and-json.md), besides its line on stderr."""
    record = json.loads(out)
    assert record["error"]["kind"] in ("cluster", "usage") and record["expression"] == ""
    return record


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_scheduler_is_status_2_in_seconds_naming_it():
    address = f"tcp://127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    status, out, err = run(["eval", "-", "--json", *POINT], b"x*y\n",
                           env={**ENV, "GRADCLI_CLUSTER": address})
    assert status == 2 and _cluster_record(out)
    assert f"cannot reach the Dask scheduler at {address}" in err.decode()
    assert "hint:" in err.decode() and "Traceback" not in err.decode()
    assert time.monotonic() - started < 30


def test_a_server_that_is_not_dask_is_a_cluster_error_not_a_lack_of_memory():
    """Found by a helper: an HTTP server at the address made Dask read "HTTP/1.1" as a frame
    length, and the MemoryError said "not enough memory to evaluate this program"."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def answer() -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:  # closed at the end of the test
                return
            try:
                client.recv(1024)
                client.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            except OSError:
                pass
            client.close()

    threading.Thread(target=answer, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    try:
        status, out, err = run(["eval", "-", "--json", *POINT], b"x*y\n",
                               env={**ENV, "GRADCLI_CLUSTER": address})
    finally:
        server.close()
    assert status == 2 and _cluster_record(out), err
    assert f"cannot reach the Dask scheduler at {address}" in err.decode()
    assert "does not speak Dask's protocol" in err.decode() and "memory" not in err.decode()


class _Deadly:
    """A stand-in for a Dask client whose tasks die (``KilledWorker``) whenever a chunk holds
    one of the ``deadly`` lines: what a line that kills its worker does on a real cluster."""

    status = "running"

    def __init__(self, deadly: set[int]) -> None:
        self.deadly = deadly
        self.submitted: list[list[int]] = []

    def submit(self, function, lines, *args, pure, priority):
        numbers = [number for number, _ in lines]
        self.submitted.append(numbers)
        client = self

        class Done:
            def done(self):
                return True

            def result(self):
                if client.deadly & set(numbers):
                    raise distributed.KilledWorker("chunk", "worker", 3)
                return function(lines, *args)

        return Done()

    def cancel(self, futures):
        pass

    def scheduler_info(self):
        return {"workers": {"a": {}, "b": {}}}

    nthreads = scheduler_info


def test_a_line_that_keeps_killing_workers_gets_a_resource_record_and_no_other_changes():
    from gradcli.gradcheck.evaluation import DEFAULT_SETTINGS
    from gradcli.runs import cluster as cluster_module
    from gradcli.runs.batch import failed_record, line_record
    from gradcli.runs.cluster_runs import ClusterRuns

    lines = batch_lines(600).decode().splitlines(True)
    client = _Deadly({7, 400})
    fake = cluster_module.Cluster.__new__(cluster_module.Cluster)
    fake.address, fake.client, fake.local = parse_address("tcp://fake:1"), client, None
    fake.distributed = type("Distributed", (), {"wait": staticmethod(lambda f, timeout: None)})
    fake._counted = (time.monotonic(), 2)
    records = [r for run in ClusterRuns(fake, lines, {"x": 0.75, "y": 1.25},
                                                       DEFAULT_SETTINGS) for r in run]
    expected = [failed_record(n, raw, "the worker evaluating this line died, several times")
                if n in client.deadly else line_record(n, raw, {"x": 0.75, "y": 1.25},
                                                       DEFAULT_SETTINGS)
                for n, raw in enumerate(lines, start=1)]
    assert records == [r for r in expected if r is not None]
    killer = next(record for record in records if record.line == 7)
    assert killer.status == 2 and '"kind":"resource"' in killer.text
    assert [7] in client.submitted and [400] in client.submitted  # retried alone


# --- a real scheduler and two workers ------------------------------------------------------------

def test_a_batch_on_the_cluster_is_byte_identical_to_a_local_run(scheduler):
    lines = batch_lines(2000)
    expected = run(["eval", "-", "--json", *POINT], lines)
    assert expected[0] == 3  # the domain errors
    assert run(["eval", "-", "--json", *POINT, "--cluster", scheduler.address], lines) == expected


@pytest.mark.parametrize("full", [[], ["--full"]])
def test_array_records_on_the_cluster_follow_the_json_rule(scheduler, full):
    """Issue 30: an array past 1,000 elements is its summary (every element with --full) in the
    cluster's records as in this process's."""
    lines = b"sum(x*x)\nsum(sin(x))\n"
    args = ["eval", "-", "--json", "--no-check", "--x", json.dumps(list(range(1001))), *full]
    expected = run(args, lines)
    assert expected[0] == 0 and (b'"summarised":true' in expected[1]) != bool(full)
    assert run([*args, "--cluster", scheduler.address], lines) == expected


def test_the_environment_variable_names_the_cluster(scheduler):
    lines = batch_lines(50)
    expected = run(["eval", "-", "--json", *POINT], lines)
    env = {**ENV, "GRADCLI_CLUSTER": scheduler.address}
    assert run(["eval", "-", "--json", *POINT], lines, env=env) == expected


@pytest.mark.parametrize("output", [["--csv"], []])  # JSON Lines: the same blocks as CSV
def test_a_sweep_on_the_cluster_is_bit_identical_to_a_local_run(scheduler, output):
    sweep = ["eval", "sin(x)*exp(-y*y) + log(1 + x*x)*y", "--x", "-3:3:201", "--y",
             "-1:1:401", *output]  # 80,601 points: two blocks
    expected = run(sweep)
    assert expected[0] == 0
    assert run([*sweep, "--cluster", scheduler.address]) == expected


@pytest.mark.slow
def test_a_sweep_past_the_local_limit_runs_on_the_cluster(scheduler):
    sweep = ["eval", "x*y", "--x", "0:1:5000", "--y", "0:1:2001", "--no-check"]
    status, _, err = run(sweep)
    assert status == 2 and "10,005,000 points" in err.decode()
    status, out, _ = run([*sweep, "--cluster", scheduler.address])
    assert status == 0 and "10,005,000 points" in out.decode()


def test_check_files_on_the_cluster_report_as_locally(scheduler):
    def report(*extra):
        status, out, err = run(["check", "examples/checks.toml", "--json", *extra])
        record = json.loads(out)
        for check in record["checks"]:
            check.pop("seconds", None)
        return status, record, err

    assert report("--cluster", scheduler.address) == report()


def test_a_worker_killed_mid_batch_changes_no_byte(scheduler, tmp_path):
    """4,000 lines; one worker SIGKILLed while it evaluates a chunk: the scheduler gives the
    chunk to the other worker, and stdout, stderr and the status are the local run's."""
    lines = batch_lines(4000)
    expected = run(["eval", "-", "--json", *POINT], lines)
    (tmp_path / "in").write_bytes(lines)
    out = tmp_path / "out"
    with (tmp_path / "in").open("rb") as source, out.open("wb") as sink:
        child = subprocess.Popen([*GRADCLI, "eval", "-", "--json", *POINT, "--cluster",
                                  scheduler.address], stdin=source, stdout=sink,
                                 stderr=subprocess.PIPE, env=ENV)
        try:
            _wait_for_lines(out, 600, child)
            victim = scheduler.live_workers()[0]
            victim.send_signal(signal.SIGKILL)
            _, err = child.communicate(timeout=120)
        finally:
            child.kill()
            child.wait()
    assert victim.wait() == -signal.SIGKILL
    assert (child.returncode, out.read_bytes(), err) == expected
    scheduler.add_worker()
    scheduler.wait_for_workers(2)


def test_progress_on_a_terminal_shows_lines_rate_and_workers(scheduler):
    """stderr a pseudo-terminal, stdout a pipe: a live line with the programs done, the rate
    and the workers; the records on stdout are the local run's."""
    lines = batch_lines(3000)
    expected = run(["eval", "-", "--json", *POINT], lines)[1]
    master, slave = os.openpty()
    child = subprocess.Popen([*GRADCLI, "eval", "-", "--json", *POINT, "--cluster",
                              scheduler.address], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=slave, env=ENV)
    os.close(slave)
    terminal = bytearray()
    reader = threading.Thread(target=_read_all, args=(master, terminal))
    reader.start()
    out, _ = child.communicate(lines, timeout=120)
    reader.join()
    os.close(master)
    assert child.returncode == 3 and out == expected
    assert b"programs" in terminal and b"/s" in terminal and b"2 workers" in terminal


def _read_all(fd: int, into: bytearray) -> None:
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed its end
            return
        if not chunk:
            return
        into += chunk


def test_ctrl_c_stops_a_cluster_batch_with_130_and_whole_records(scheduler, tmp_path):
    (tmp_path / "in").write_bytes(batch_lines(20_000))
    out = tmp_path / "out"
    with (tmp_path / "in").open("rb") as source, out.open("wb") as sink:
        child = subprocess.Popen([*GRADCLI, "eval", "-", "--json", *POINT, "--cluster",
                                  scheduler.address], stdin=source, stdout=sink,
                                 stderr=subprocess.PIPE, env=ENV)
        try:
            _wait_for_lines(out, 300, child)
            child.send_signal(signal.SIGINT)
            _, err = child.communicate(timeout=60)
        finally:
            child.kill()
            child.wait()
    assert child.returncode == 130 and err.endswith(b"\ngradcli: interrupted\n")
    assert b"Traceback" not in err
    records = _whole_records(out.read_bytes())
    assert 300 <= len(records) < 17_500


def test_a_reader_that_goes_away_ends_a_cluster_batch_with_141(scheduler):
    child = subprocess.Popen([*GRADCLI, "eval", "-", "--json", *POINT, "--cluster",
                              scheduler.address], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    try:
        child.stdin.write(batch_lines(3000))
        child.stdin.close()
        assert json.loads(child.stdout.readline())["line"] == 1
        child.stdout.close()
        assert child.wait(timeout=60) == 141
        assert child.stderr.read() == b""
    finally:
        child.kill()
        child.wait()


def test_a_lost_scheduler_keeps_whole_records_and_skip_resumes_them(tmp_path):
    """The scheduler killed mid-batch: status 2, complete records of lines 1..N, a message that
    names N; ``--skip N`` (here on the local workers) gives the rest, and both together are
    the whole local run."""
    lines = batch_lines(6000)
    expected = run(["eval", "-", "--json", *POINT], lines)
    own = Scheduler(tmp_path, workers=1)
    (tmp_path / "in").write_bytes(lines)
    out = tmp_path / "out"
    status, err = _scheduler_killed_after(own, ["eval", "-", "--json", *POINT], out, 300,
                                          tmp_path / "in")
    message = err.decode().splitlines()[-1]  # after the records' own error lines
    assert status == 3 and "Traceback" not in err.decode()  # records' largest
    assert message.startswith(f"gradcli: cluster error: lost the Dask scheduler at {own.address}")
    done = int(message.split("--skip ")[1].split()[0])
    written = out.read_bytes()
    records = _whole_records(written)
    assert records and records[-1]["line"] <= done < 6000
    status, rest, _ = run(["eval", "-", "--json", *POINT, "--skip", str(done)], lines)
    assert status == 3 and written + rest == expected[1]


def test_a_result_lost_with_its_connection_is_a_lost_scheduler_not_a_failed_task():
    """The race CI once lost: the scheduler killed while a result travels, ``result()`` raises
    CommClosedError before the client knows it is disconnected. That is the scheduler lost
    (resumable with --skip), never a task failure written as the line's record."""
    from distributed.comm.core import CommClosedError

    from gradcli.runs.cluster import Tasks

    class LostError(Exception):
        pass

    class Future:
        def done(self):
            return True

        def result(self):
            raise CommClosedError("in <TCP (closed) ConnectionPool.gather>: reset by peer")

    class Cluster:
        distributed = type("D", (), {"wait": staticmethod(lambda future, timeout: None)})

        def is_connected(self):
            return True  # not yet noticed

    tasks = Tasks(Cluster(), lambda: LostError())
    tasks.order.append(("line 1", Future()))
    with pytest.raises(LostError):
        tasks.next_done()


def test_a_sweep_that_loses_its_scheduler_ends_after_whole_rows(tmp_path):
    own = Scheduler(tmp_path, workers=1)
    out = tmp_path / "out.csv"
    sweep = ["eval", "sin(x)*y", "--x", "0:1:3000", "--y", "0:1:1000", "--csv"]
    status, err = _scheduler_killed_after(own, sweep, out, 70_000)
    assert status == 2
    assert err.decode().startswith(f"error: cluster error: lost the Dask scheduler at "
                                   f"{own.address} during the sweep\n")
    rows = out.read_bytes()
    assert rows.endswith(b"\n") and 65_536 < rows.count(b"\n") < 3_000_001
    assert (rows.count(b"\n") - 1) % 65_536 == 0  # the header, then whole blocks


def _signalled_local_cluster(tmp_path: Path, workers: int, send: Any,
                             **popen: Any) -> tuple[int, bytes, bytes, bytes]:
    """A batch of 20,000 lines on ``--cluster local:WORKERS``, ``send(child)`` once 300 records
    are out: (status, stderr, what was written, the local run's own records)."""
    lines = batch_lines(20_000)
    expected = run(["eval", "-", "--json", *POINT], lines)[1]
    (tmp_path / "in").write_bytes(lines)
    out = tmp_path / "out"
    with (tmp_path / "in").open("rb") as source, out.open("wb") as sink:
        child = subprocess.Popen([*GRADCLI, "eval", "-", "--json", *POINT, "--cluster",
                                  f"local:{workers}"], stdin=source, stdout=sink,
                                 stderr=subprocess.PIPE, env=ENV, **popen)
        try:
            _wait_for_lines(out, 300, child)
            send(child)
            _, err = child.communicate(timeout=60)
        finally:
            child.kill()
            child.wait()
    return child.returncode, err, out.read_bytes(), expected


def test_ctrl_c_in_a_terminal_stops_a_local_cluster_quietly(tmp_path):
    """``--cluster local:1`` (a spawned worker under a nanny), and SIGINT to the whole process
    group, as a terminal sends it: 130, one line, no worker's traceback; the records written
    are the first records of the local run, whole."""
    status, err, written, expected = _signalled_local_cluster(
        tmp_path, 1, lambda child: os.killpg(child.pid, signal.SIGINT), start_new_session=True)
    assert status == 130 and err.endswith(b"\ngradcli: interrupted\n"), err[-2000:]
    assert b"Traceback" not in err and b"Worker" not in err, err[-2000:]
    assert len(_whole_records(written)) >= 300 and expected.startswith(written)


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)],
                         ids=["sigterm", "sighup"])
def test_sigterm_and_sighup_end_a_local_cluster_batch_as_the_local_path_does(tmp_path, sig,
                                                                              status):
    """The signal comes while the main thread waits inside Dask for a task (whose ``except
    Exception`` once took it for the task's failure: status 2, "a cluster task failed"): 143 or
    129 and "gradcli: terminated", the records written whole and the local run's own."""
    got, err, written, expected = _signalled_local_cluster(
        tmp_path, 2, lambda child: child.send_signal(sig), preexec_fn=_default_stops)
    assert got == status and err.endswith(b"gradcli: terminated\n"), err[-2000:]
    assert b"Traceback" not in err and b"cluster" not in err, err[-2000:]
    assert len(_whole_records(written)) >= 300 and expected.startswith(written)


def _default_stops() -> None:
    """In the child: SIGTERM and SIGHUP as a shell leaves them (the runner may ignore SIGHUP)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.mark.parametrize("content", [None, "garbage", "{}", "[1, 2]", '{"address": 7}'])
def test_a_scheduler_file_without_an_address_is_status_2_at_once(content, tmp_path):
    """A typo'd path or a file that holds no address: one line, not a wait or a traceback."""
    info = tmp_path / "scheduler.json"
    if content is not None:
        info.write_text(content)
    started = time.monotonic()
    status, out, err = run(["eval", "-", "--x", "1", "--json", "--cluster", str(info)], b"x\n",
                           timeout=60)
    assert status == 2 and b"Traceback" not in err, err
    assert b"scheduler file" in err and len(err.strip().splitlines()) == 1, err
    assert time.monotonic() - started < 15 and _cluster_record(out)


@pytest.mark.parametrize("args", [["--cluster", "tls://127.0.0.1:9"],
                                  ["--skip", "99999999999999999999"]])
def test_options_past_what_can_be_done_are_one_error(args):
    status, _, err = run(["eval", "-", "--x", "1", "--json", *args], b"x\n", timeout=60)
    assert status == 2 and b"Traceback" not in err, err


def test_a_scheduler_that_accepts_and_never_answers_is_status_2_in_seconds():
    """A port that takes the connection and says nothing: Dask's own timeout never ends it."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        status, out, err = run(["eval", "-", "--json", "--cluster", address, *POINT], b"x*y\n",
                               timeout=60)
    assert status == 2 and _cluster_record(out) and b"Traceback" not in err, err
    assert f"cannot reach the Dask scheduler at {address}: no answer".encode() in err
    assert time.monotonic() - started < 15


def test_workers_that_run_other_code_of_the_same_version_are_refused(scheduler, tmp_path):
    """Found by a bug hunt: workers started before gradcli's files changed (the same version
    number) ran a task with old and new code mixed: "TypeError: forward() takes 1 positional
    argument but 2 were given". The version now carries a digest of the source: here the
    client runs a copy of the package with one comment more than the workers'."""
    package = Path(gradcli.__file__).parent
    copy = tmp_path / "src" / "gradcli"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with (copy / "runs" / "batch.py").open("a", encoding="utf-8") as batch:
        batch.write("# another commit\n")
    env = {**ENV, "PYTHONPATH": str(tmp_path / "src")}
    status, out, err = run(["eval", "-", "--json", *POINT, "--cluster", scheduler.address],
                           b"x*2\n", env=env)
    assert status == 2 and _cluster_record(out), err
    says = err.decode()
    assert says.startswith(f"gradcli: cluster error: the workers at {scheduler.address} run "
                           f"gradcli {gradcli.__version__} (source "), says
    assert ", this is " in says and "restart workers" in says
    assert says.count("(source ") == 2 and "Traceback" not in says
