"""The soak of issue 27: hostile lines (70-deep literals, NaN-making ``inv`` of subnormal
matrices, failed checks at a domain edge, parse errors, arrays past the size limit, a literal
thousands of brackets deep) mixed into a large batch whose worker processes are SIGKILLed at
random moments, run by local workers (``GRADCLI_JOBS=2``) and by ``--cluster local:2``. Every
program line gets exactly one complete record, in input order: the record of an undisturbed run
in one process, or -- for a line that was with a killed worker twice, by chance -- a resource
error record that says so.

The issue's size, 10^5 lines, is marked slow (``pytest -m slow``); CI runs a few thousand.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_batch_faults import GRADCLI, Run, _children, hostile_lines, needs_proc

from gradcli import limits

LOCAL = {**os.environ, limits.JOBS_ENV: "2", "GRADCLI_CLUSTER": "", "OPENBLAS_NUM_THREADS": "1"}
SERIAL = {**LOCAL, limits.JOBS_ENV: "1"}
CLUSTER = [*GRADCLI, "--cluster", "local:2"]
# What a record says of a line that was with a killed worker twice: the local pool knows the
# signal, a Dask worker's death is all the cluster learns (docs/robustness.md).
KILLED = "the process evaluating this line was killed by SIGKILL, 2 times"
DIED = "the worker evaluating this line died, several times"
# More hostile array lines than test_batch_faults' mix holds: past the size limit, a costly
# but allowed array, an elementwise domain edge, a literal far deeper than NumPy allows.
EXTRA = ["sum(zeros(100000000))*x", "sum(sin(ones(20000)*x))", "sum(sqrt([0, 1]*x))*y",
         "logsumexp([1e16, 1e16, 1]*y) + x", "y5 = " + "[" * 3000 + "x" + "]" * 3000 + "; y5"]


def soak_lines(count: int, seed: int) -> bytes:
    """``count`` lines of test_batch_faults' hostile mix with ``EXTRA`` spread among them."""
    rng = random.Random(seed)
    lines = hostile_lines(count, seed).split(b"\n")[:count]
    for k in range(0, count, 40):
        lines[rng.randrange(k, min(k + 40, count))] = rng.choice(EXTRA).encode()
    return b"\n".join(lines) + b"\n"


def _workers(pid: int, cluster: bool) -> list[int]:
    """The processes that evaluate lines: the batch's forked workers, or the local cluster's
    spawned Dask workers (not multiprocessing's resource tracker)."""
    found = _children(pid)
    if not cluster:
        return found
    return [child for child in found if b"spawn_main" in _cmdline(child)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _killed_run(stdin: Path, command: list[str], cluster: bool, kills: int, seed: int,
                spacing: int) -> tuple[int, bytes, bytes, int]:
    """Run ``command`` on ``stdin``, SIGKILLing a random worker ``kills`` times, each once
    ``spacing`` more records are out (so a line is rarely with two killed workers): the status,
    stdout, stderr and how many kills found a worker."""
    rng = random.Random(seed)
    run = Run(stdin, LOCAL, command)
    killed = 0
    try:
        for _ in range(kills):
            run.wait_for_records(run.lines + rng.randint(spacing // 2, spacing), timeout=300)
            time.sleep(rng.uniform(0, 0.1))
            victims = _workers(run.child.pid, cluster)
            if victims:
                os.kill(rng.choice(victims), signal.SIGKILL)
                killed += 1
    except AssertionError:  # the batch ended before the last kill: it is checked all the same
        pass
    status, out, err = run.finish(timeout=600)
    return status, out, err, killed


def _assert_one_record_per_line(out: bytes, expected: bytes, kills: int, message: str) -> None:
    """Each record whole and in order: the undisturbed run's, or a resource error with
    ``message`` (a line that was with a killed worker twice) -- at most one per kill."""
    assert out.endswith(b"\n") and expected.endswith(b"\n")
    got, want = out.splitlines(), expected.splitlines()
    assert [json.loads(line)["line"] for line in got] == [json.loads(w)["line"] for w in want]
    changed = [json.loads(line) for line, same in zip(got, want, strict=True) if line != same]
    assert len(changed) <= kills, changed[:3]
    for record in changed:
        assert record["error"]["kind"] == "resource", record
        assert record["error"]["message"] == message, record


def _reference(stdin: Path) -> tuple[int, bytes, bytes]:
    with stdin.open("rb") as source:
        done = subprocess.run(GRADCLI, stdin=source, capture_output=True, env=SERIAL,
                              timeout=3600)
    assert done.returncode == 3 and b"Traceback" not in done.stderr
    return done.returncode, done.stdout, done.stderr


@needs_proc
@pytest.mark.parametrize(("count", "kills"), [
    (3000, 3), pytest.param(100_000, 10, marks=pytest.mark.slow)], ids=["3k", "100k"])
def test_soak_local_workers_killed_at_random(tmp_path, count, kills):
    stdin = tmp_path / "lines.txt"
    stdin.write_bytes(soak_lines(count, seed=count))
    status, expected, err = _reference(stdin)
    got, out, got_err, killed = _killed_run(stdin, GRADCLI, False, kills, count, count // 12)
    assert killed >= 1
    _assert_one_record_per_line(out, expected, killed, KILLED)
    if out == expected:
        assert (got, got_err) == (status, err)


@needs_proc
@pytest.mark.parametrize(("count", "kills"), [
    (1500, 2), pytest.param(100_000, 10, marks=pytest.mark.slow)], ids=["1.5k", "100k"])
def test_soak_local_cluster_workers_killed_at_random(tmp_path, count, kills):
    pytest.importorskip("distributed", reason="the cluster extra is not installed")
    stdin = tmp_path / "lines.txt"
    stdin.write_bytes(soak_lines(count, seed=count + 1))
    status, expected, err = _reference(stdin)
    got, out, got_err, killed = _killed_run(stdin, CLUSTER, True, kills, count, count // 6)
    assert killed >= 1 and b"Traceback" not in got_err, got_err[-2000:]
    _assert_one_record_per_line(out, expected, killed, DIED)
    if out == expected:
        assert (got, got_err) == (status, err)


def test_the_soak_mix_holds_every_hostile_kind():
    lines = soak_lines(3000, seed=1).decode("utf-8", "replace").splitlines()
    assert len(lines) == 3000
    for text in [*EXTRA, "[" * 70, "inv(eye(3)*1e-310)", "sin(x", "sqrt([1e-20, 1]*y)"]:
        assert any(text in line for line in lines), text
