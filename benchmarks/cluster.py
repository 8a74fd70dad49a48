"""gradcli on a Dask cluster (issue 18): W2 through ``--cluster``, a large sweep, task costs.

    python benchmarks/cluster.py                        # W2 (3 rounds), a 10^7-point sweep, costs
    python benchmarks/cluster.py --only w2 --rounds 5
    python benchmarks/cluster.py --only sweep --points 1e8

- **w2**: the 10,000 W2 programs (``workloads.batch_programs``) as ``gradcli eval - --json``
  with the batch's check, output to /dev/null: the embedded default (forked workers),
  ``--cluster local:2`` (a LocalCluster started and stopped by the run), and ``--cluster
  ADDRESS`` of a ``dask scheduler`` with two ``dask worker`` processes started beforehand (what
  a user of a standing cluster pays). Rounds interleaved; medians.
- **sweep**: ``benchmarks/sweep_memory.py``'s 30-node formula over a 2-D grid of ``--points``
  points through ``--cluster local:2`` (the summary table); wall time and the peak RSS of every
  process of the run (gradcli, the nannies, the workers), read from ``/proc/PID/status``
  (VmHWM) every half second.
- **costs**: the numbers behind the scaling table of docs/performance.md: a W2 chunk's time on a
  worker (``CHUNK_LINES`` lines), and the scheduler's cost per task (10,000 no-op tasks through
  a standing scheduler with two workers).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import workloads
from run import run_process

GRADCLI = [sys.executable, "-m", "gradcli"]
DASK = str(Path(sys.executable).with_name("dask"))
FORMULA = "sin(x)*cos(y) + exp(-x*x/4)*log(1+y*y) + tanh(x*y) - sqrt(1+x*x)*atan(y) + x/(2+y)"
QUIET = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}


class StandingCluster:
    """A ``dask scheduler`` and ``workers`` ``dask worker`` processes on 127.0.0.1."""

    def __init__(self, workers: int = 2) -> None:
        self.folder = tempfile.TemporaryDirectory()
        info = Path(self.folder.name) / "scheduler.json"
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
        self.processes = [subprocess.Popen(
            [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(info)], env=env, **QUIET)]
        while not info.exists() or not info.read_text().strip():
            time.sleep(0.05)
        self.address = json.loads(info.read_text())["address"]
        self.processes += [subprocess.Popen(
            [DASK, "worker", self.address, "--nthreads", "1", "--no-dashboard", "--host",
             "127.0.0.1"], env=env, **QUIET) for _ in range(workers)]
        import distributed

        with distributed.Client(self.address) as client:
            client.wait_for_workers(workers)

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
            process.wait()
        self.folder.cleanup()


def w2(rounds: int) -> None:
    programs = workloads.batch_programs()
    values = [f"--{k}={v}" for k, v in workloads.batch_point().items()]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as stream:
        stream.write("\n".join(programs) + "\n")
    stdin = Path(stream.name)
    standing = StandingCluster()
    commands = {
        "embedded default (forked workers)": [],
        "--cluster local:2 (started by the run)": ["--cluster", "local:2"],
        "--cluster ADDRESS (2 standing workers)": ["--cluster", standing.address],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    try:
        for extra in commands.values():  # warm-up: bytecode, page cache
            run_process([*GRADCLI, "eval", "-", "--json", *values, *extra], stdin)
        for _ in range(rounds):
            for name, extra in commands.items():
                wall, _, status = run_process([*GRADCLI, "eval", "-", "--json", *values,
                                               *extra], stdin)
                assert status == 0, (name, status)
                times[name].append(wall)
    finally:
        standing.stop()
        stdin.unlink()
    base = statistics.median(times["embedded default (forked workers)"])
    print(f"W2: {len(programs):,} programs, --json, input gradients checked; "
          f"{rounds} interleaved rounds, median\n")
    print("| run | wall | programs/s | vs embedded |")
    print("|---|---:|---:|---:|")
    for name, walls in times.items():
        wall = statistics.median(walls)
        print(f"| {name} | {wall:.2f} s | {len(programs) / wall:,.0f} | {base / wall:.2f}x |")
    print()


def sweep(points: int) -> None:
    inner = 1000
    grid = ["--x", f"-3:3:{max(1, points // inner)}", "--y", f"0:1:{inner}"]
    command = [*GRADCLI, "eval", FORMULA, *grid, "--cluster", "local:2"]
    peaks: dict[int, tuple[str, int]] = {}
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    watcher = threading.Thread(target=_watch, args=(child, peaks), daemon=True)
    watcher.start()
    _, err = child.communicate()
    wall = time.perf_counter() - start
    watcher.join()
    print(f"sweep: {points:,} points of a 30-node formula through --cluster local:2, the "
          f"summary table; exit {child.returncode}, {wall:.0f} s "
          f"({points / wall:,.0f} points/s){' ' + err.decode().strip() if err else ''}\n")
    print("| process | peak RSS (MB) |")
    print("|---|---:|")
    for pid, (name, peak) in sorted(peaks.items(), key=lambda item: -item[1][1]):
        print(f"| {name} ({pid}) | {peak / 2**20:,.0f} |")
    print()


def _watch(child: subprocess.Popen, peaks: dict[int, tuple[str, int]]) -> None:
    """VmHWM of ``child`` and its descendants, every half second, until it ends."""
    while child.poll() is None:
        for pid in [child.pid, *_descendants(child.pid)]:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            peak = int(fields.get("VmHWM", "0 kB").split()[0]) * 1024
            name = "gradcli" if pid == child.pid else (
                "resource tracker" if b"resource_tracker" in b" ".join(cmdline) else "worker")
            peaks[pid] = (name, max(peak, peaks.get(pid, ("", 0))[1]))
        time.sleep(0.5)


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*/children"):
            try:
                children = [int(c) for c in task.read_text().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def costs() -> None:
    from gradcli.gradcheck.evaluation import EvalSettings
    from gradcli.gradcheck.tolerances import BATCH_NODE_CHECK_LIMIT
    from gradcli.runs.cluster_runs import CHUNK_LINES, evaluate_chunk

    programs = workloads.batch_programs()
    lines = list(enumerate(programs, start=1))
    settings = EvalSettings(node_check_limit=BATCH_NODE_CHECK_LIMIT)
    point = workloads.batch_point()
    chunks = [lines[i:i + CHUNK_LINES] for i in range(0, len(lines), CHUNK_LINES)]
    evaluate_chunk(chunks[0], point, settings)  # warm-up
    start = time.perf_counter()
    for chunk in chunks:
        evaluate_chunk(chunk, point, settings)
    per_chunk = (time.perf_counter() - start) / len(chunks)
    per_record = _client_cost(evaluate_chunk(chunks[0], point, settings))
    import distributed

    standing = StandingCluster()
    try:
        with distributed.Client(standing.address) as client:
            client.gather(client.map(abs, range(100)))  # warm-up
            start = time.perf_counter()
            client.gather(client.map(abs, range(10_000)))
            per_task = (time.perf_counter() - start) / 10_000
    finally:
        standing.stop()
    print(f"costs: a W2 chunk of {CHUNK_LINES} lines takes {per_chunk * 1e3:.0f} ms on one "
          f"core ({CHUNK_LINES / per_chunk:,.0f} programs/s); a no-op task through the "
          f"scheduler {per_task * 1e3:.2f} ms ({1 / per_task:,.0f} tasks/s, with 2 workers); "
          f"the client unpickles and writes a record in {per_record * 1e6:.0f} us "
          f"({1 / per_record:,.0f} records/s)")


def _client_cost(records: list) -> float:
    """Seconds the writing process spends per record of a chunk: unpickling what a worker sent
    and writing it (to /dev/null), as ``gradcli eval - --json`` does."""
    import pickle

    blob = pickle.dumps(records)
    rounds = 50
    with open(os.devnull, "w") as sink:
        start = time.perf_counter()
        for _ in range(rounds):
            for record in pickle.loads(blob):
                sink.write(record.text)
                sink.write("\n")
        return (time.perf_counter() - start) / (rounds * len(records))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="w2,sweep,costs", help="w2, sweep, costs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--points", default="1e7", help="points of the sweep (default 1e7)")
    options = parser.parse_args()
    chosen = options.only.split(",")
    print(f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    if "w2" in chosen:
        w2(options.rounds)
    if "sweep" in chosen:
        sweep(int(float(options.points)))
    if "costs" in chosen:
        costs()


if __name__ == "__main__":
    main()
