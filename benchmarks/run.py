"""gradcli against its peers on the workloads of issue 6; prints one Markdown table.

    python benchmarks/run.py            # everything (several minutes)
    python benchmarks/run.py --quick    # fewer repetitions and smaller peer samples
    python benchmarks/run.py --only W1,W5
    python benchmarks/run.py --only A1,A2  # arrays: issue 16
    python benchmarks/run.py --only J1,J2  # a 100x100 Jacobian, diff of identities: issue 17
    python benchmarks/run.py --only J3     # the cost of diff's self-check: issue 26
    python benchmarks/run.py --only A3     # arrays from .npy files with the check: issue 30

gradcli runs as a user runs it: a separate process, ``gradcli eval`` on the workload's text
(W5, whose CLI command is another issue's, calls ``vector.evaluate_vector``). Peers run in this
process when installed (``pip install -e '.[bench]'``): micrograd, SymPy, PyTorch, HIPS
autograd. They read the same programs through Python's own parser (``eval``/``exec`` of the
generated benchmark text, which is trusted here: this is how one uses those libraries, and
exactly what gradcli itself never does). Peers compute value and gradients only; gradcli also
runs its finite-difference check unless a row says ``--no-check``. A peer too slow to run in
full is timed on a sample and scaled linearly; the table says so. Peak memory: the maximum RSS
of the gradcli process (``wait4``; batch workers are not included); for peers the peak of
Python allocations (``tracemalloc``, a separate untimed run; NumPy and PyTorch buffers are only
partly visible to it), not measured for the W3 peers.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import array_check
import peers
import workloads

import gradcli

GRADCLI = [sys.executable, "-m", "gradcli"]
ROWS: list[dict] = []


# A small launcher runs each timed process and reports its wall time and peak RSS: the RSS of a
# process forked (or vforked) straight from this large one would include this one's pages.
_LAUNCHER = """
import os, sys, time
stdin, args = sys.argv[1], sys.argv[2:]
actions = [(os.POSIX_SPAWN_OPEN, 0, stdin, os.O_RDONLY, 0),
           (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
           (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
start = time.perf_counter()
pid = os.posix_spawn(args[0], args, os.environ, file_actions=actions)
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - start, usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status))
"""


def run_process(args: list[str], stdin: Path | None = None) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in bytes, exit status) of one process, output discarded."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("COLUMNS", "120")
    launcher = [sys.executable, "-c", _LAUNCHER, str(stdin or os.devnull), *args]
    report = subprocess.run(launcher, env=env, capture_output=True, text=True, check=True)
    wall, memory, status = report.stdout.split()
    return float(wall), int(memory), int(status)


def median_process(args: list[str], runs: int, stdin: Path | None = None) -> tuple[float, int]:
    run_process(args, stdin)  # warm-up: writes bytecode, fills the page cache
    results = [run_process(args, stdin) for _ in range(runs)]
    return statistics.median(r[0] for r in results), max(r[1] for r in results)


def in_process(function: Callable[[], object], runs: int = 1) -> tuple[float, int]:
    """(median seconds, peak traced bytes) of ``function()``: timed runs without tracemalloc
    (which slows allocation-heavy code several times), then one more run to trace memory."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    function()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return statistics.median(times), peak


def row(workload: str, tool: str, seconds: float | None, work: float, unit: str,
        memory: int | None, note: str = "") -> None:
    ROWS.append(dict(workload=workload, tool=tool, seconds=seconds, work=work, unit=unit,
                     memory=memory, note=note))
    shown = "fails" if seconds is None else f"{seconds:.3f} s"
    print(f"  {workload:4} {tool:32} {shown:>10}  {note}", file=sys.stderr, flush=True)


def peer(workload: str, name: str, work: float, unit: str, action: Callable[[], object],
         scale: float = 1.0, note: str = "") -> None:
    """Time a peer; ``scale`` > 1 when ``action`` did a sample of the work."""
    try:
        seconds, memory = in_process(action)
    except (RecursionError, MemoryError, SyntaxError, ValueError, OverflowError) as error:
        row(workload, name, None, work, unit, None, f"{type(error).__name__}: {error}"[:70])
        return
    row(workload, name, seconds * scale, work, unit, memory, note)


# --- workloads -----------------------------------------------------------------------------------

def w1(args: argparse.Namespace) -> None:
    """The four processes take turns, run after run, so that a slower or faster spell of the
    machine falls on all of them alike: their ratios are what the goals are about."""
    runs = 10 if args.quick else 41
    expr, values = workloads.SEED_EXPRESSION, workloads.SEED_VALUES
    commands = {
        "gradcli eval --json": [*GRADCLI, "eval", expr, *values, "--json"],
        "gradcli eval (table)": [*GRADCLI, "eval", expr, *values],
        "import click+lark+rich (reference)":
            [sys.executable, "-c", workloads.REFERENCE_IMPORTS],
        "python -c pass (the floor)": [sys.executable, "-c", "pass"],
    }
    for command in commands.values():
        run_process(command)  # warm-up: writes bytecode, fills the page cache
    results: dict[str, list[tuple[float, int, int]]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, command in commands.items():
            results[label].append(run_process(command))
    notes = {"import click+lark+rich (reference)":
             "; goal: table <= 1.0x, --json <= 0.7x this"}
    for label, measured in results.items():
        seconds = statistics.median(wall for wall, _, _ in measured)
        memory = max(peak for _, peak, _ in measured)
        row("W1", label, seconds, 1, "process", memory,
            f"median of {runs}, runs interleaved{notes.get(label, '')}")


def w2(args: argparse.Namespace, folder: Path) -> None:
    """gradcli's four batches and the peers that run every program take turns, round after
    round (medians, as W1's): one run each swung the ratio to micrograd by 1.3x on this 2-CPU
    machine, whose speed wanders, and gradcli's two workers feel a busy core more than a
    peer in one process does. Peers too slow for that run once, on a sample. A peer's memory
    is traced in one more run, over its first 200 programs (50 with ``--quick``)."""
    programs = workloads.batch_programs()
    point = workloads.batch_point()
    source = folder / "w2.txt"
    source.write_text("\n".join(programs) + "\n", encoding="utf-8")
    flags = workloads.value_flags(point)
    count = len(programs)
    sample = 50 if args.quick else 200
    batches = {
        "gradcli eval - --json --no-check": (["--no-check"], ""),
        "gradcli eval - --json (FD check on)": ([], "; input gradients checked"),
        "gradcli eval - --json --check-nodes": (["--check-nodes"], "; every node checked"),
        # last, so that the peers' "vs gradcli" is over the batch whose record is like theirs
        "gradcli eval - --json --no-nodes (FD check on)":
            (["--no-nodes"], "; input gradients checked; the peers' record: no node list")}
    runners = {name: runner for name, make in peers.BATCH.items() if (runner := make())}
    taking_turns = {name: runner for name, runner in runners.items()
                    if name not in peers.BATCH_SAMPLE}
    part = programs[:sample] if args.quick else programs
    runs = 3 if args.quick else 7
    processes: dict[str, list[tuple[float, int, int]]] = {label: [] for label in batches}
    seconds: dict[str, list[float]] = {name: [] for name in taking_turns}
    for _ in range(runs + 1):  # the first round warms up, untimed
        for label, (extra, _) in batches.items():
            processes[label].append(run_process([*GRADCLI, "eval", "-", "--json", *flags,
                                                 *extra], source))
        for name, runner in taking_turns.items():
            start = time.perf_counter()
            runner(part, point)
            seconds[name].append(time.perf_counter() - start)
    for label, (_, checked) in batches.items():
        measured = processes[label][1:]
        status = max(s for _, _, s in measured)
        row("W2", label, statistics.median(w for w, _, _ in measured), count, "programs",
            max(m for _, m, _ in measured), f"exit {status}{checked}; median of {runs}")
    lean = [w for w, _, _ in processes["gradcli eval - --json --no-nodes (FD check on)"][1:]]
    scale = count / len(part)
    for name, runner in runners.items():
        if name not in taking_turns:
            size = peers.BATCH_SAMPLE[name]
            peer("W2", name, count, "programs", lambda r=runner, p=programs[:size]: r(p, point),
                 count / size, f"{size} programs, scaled")
            continue
        tracemalloc.start()
        runner(part[:sample], point)
        memory = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        times = [t * scale for t in seconds[name][1:]]
        ratios = sorted(t / w for t, w in zip(times, lean, strict=True))
        row("W2", name, statistics.median(times), count, "programs", memory,
            f"median of {runs}{'' if scale == 1 else f', {len(part)} programs, scaled'}; "
            f"over --no-nodes round by round: {statistics.median(ratios):.2f}x "
            f"({ratios[0]:.2f}-{ratios[-1]:.2f})")


def w3(args: argparse.Namespace, folder: Path, nodes: int = 100_000, label: str = "W3") -> None:
    text = workloads.wide_program(nodes)
    path = folder / f"{label}.grad"
    path.write_text(text, encoding="utf-8")
    point = workloads.wide_point()
    # XL builds a few more than the default --max-nodes (10^6) allows: raise it for the workload.
    limit = 2 * nodes
    flags = [*workloads.value_flags(point), f"--max-nodes={limit}"]
    count = len(gradcli.parse(text, limit).nodes)
    outputs = [("gradcli eval -f (table)", [])]
    if label == "W3":
        outputs.append(("gradcli eval -f --json", ["--json"]))
    for name, extra in outputs:
        wall, memory, status = run_process([*GRADCLI, "eval", "-f", str(path), *flags, *extra])
        row(label, name, wall, count, "nodes", memory,
            f"exit {status}; {memory / count:.0f} B/node")
    if label != "W3":
        return
    for name, make in peers.WIDE.items():
        runner = make()
        if runner is not None:
            seconds, memory, note = runner(text, point)
            row(label, name, seconds, count, "nodes", memory, note)


def w4(args: argparse.Namespace, folder: Path) -> None:
    for levels in (10_000, 100_000):
        path = folder / f"deep{levels}.grad"
        path.write_text(workloads.deep_program(levels), encoding="utf-8")
        seconds, memory = median_process([*GRADCLI, "eval", "-f", str(path), "--x", "0.3"],
                                         3 if args.quick else 5)
        row("W4", f"gradcli, {levels:,} levels", seconds, levels, "levels", memory, "median")
        text = workloads.deep_program(levels)
        for name, make in peers.DEEP.items():
            runner = make()
            if runner is not None:
                peer("W4", f"{name}, {levels:,} levels", levels, "levels",
                     lambda r=runner, t=text: r(t))


def w5(args: argparse.Namespace) -> None:
    import numpy as np

    from gradcli.engine.vector import evaluate_vector

    size = 1_000_000
    rng = np.random.default_rng(6)
    x, y = rng.uniform(-2, 2, size), rng.uniform(-2, 2, size)
    program = gradcli.parse(workloads.SWEEP_FORMULA)
    runs = 3 if args.quick else 7

    def by_gradcli():
        result = evaluate_vector(program, {"x": x, "y": y})
        return result.output, result.grads[program.variables["x"].index]

    seconds, memory = in_process(by_gradcli, runs)
    row("W5", "gradcli vector.evaluate_vector", seconds, size, "points", memory, "median")
    seconds, memory = in_process(lambda: peers.sweep_by_hand(np, x, y), runs)
    row("W5", "hand-written NumPy", seconds, size, "points", memory, "median")
    for name, make in peers.SWEEP.items():
        runner = make()
        if runner is not None:
            seconds, memory = in_process(lambda r=runner: r(x, y), runs)
            row("W5", name, seconds, size, "points", memory, "median")


# --- arrays (issue 16): value and every gradient, gradcli.evaluate against NumPy by hand ----------

def interleaved(actions: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Median seconds of each action, the actions taking turns (a noisy machine slows them
    alike), after one untimed warm-up run each."""
    times: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(runs + 1):
        for name, action in actions.items():
            start = time.perf_counter()
            action()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(spent[1:]) for name, spent in times.items()}


def a1(args: argparse.Namespace) -> None:
    """The seed example's loss over a batch, W 1000x1000: mean((W@x + b - t)**2)."""
    import numpy as np

    n = 1000
    rng = np.random.default_rng(16)
    values = {"W": rng.normal(size=(n, n)), "x": rng.normal(size=n), "b": rng.normal(size=n),
              "t": rng.normal(size=n)}
    program = gradcli.parse(workloads.BATCH_LOSS)
    actions = {"gradcli evaluate (check off)":
               lambda: gradcli.evaluate(program, values, check=False),
               "hand-written NumPy": lambda: peers.batch_loss_by_hand(np, **values)}
    actions.update(peers.array_peers("batch_loss", values))
    _array_rows("A1", actions, n * n + 3 * n, args)


def a2(args: argparse.Namespace) -> None:
    """Softmax cross-entropy over 10^5 classes: -sum(y*log_softmax(z))."""
    import numpy as np

    n = 100_000
    rng = np.random.default_rng(16)
    y = np.zeros(n)
    y[rng.integers(n)] = 1.0
    values = {"z": rng.normal(size=n), "y": y}
    program = gradcli.parse(workloads.CROSS_ENTROPY)
    actions = {"gradcli evaluate (check off)":
               lambda: gradcli.evaluate(program, values, check=False),
               "hand-written NumPy": lambda: peers.cross_entropy_by_hand(np, **values)}
    actions.update(peers.array_peers("cross_entropy", values))
    _array_rows("A2", actions, 2 * n, args)


def j1(args: argparse.Namespace) -> None:
    """A Jacobian with 100 outputs and 100 inputs (issue 17), value and Jacobian, check off:
    gradcli in reverse mode (100 backward passes) and forward mode (100 tangent passes)."""
    import numpy as np

    x = np.random.default_rng(17).normal(size=100)
    program = gradcli.parse(workloads.JACOBIAN)
    actions = {
        "gradcli evaluate, reverse mode (check off)":
            lambda: gradcli.evaluate(program, {"x": x}, check=False, mode="reverse"),
        "gradcli evaluate, forward mode (check off)":
            lambda: gradcli.evaluate(program, {"x": x}, check=False, mode="forward"),
        "hand-written NumPy (closed form)": lambda: peers.jacobian_by_hand(np, x),
    }
    actions.update(peers.jacobian_peers(x))
    medians = interleaved(actions, 5 if args.quick else 21)
    for name, seconds in medians.items():
        row("J1", name, seconds, 100 * 100, "entries", None,
            "median, runs interleaved; value and the 100x100 Jacobian; goal <= 1.5x the "
            "faster of jax.jacrev and torch")
    checked = lambda: gradcli.evaluate(program, {"x": x})  # noqa: E731
    row("J1", "gradcli evaluate with its check (200 forward passes)",
        interleaved({"checked": checked}, 3)["checked"], 100 * 100, "entries", None, "median")


def j2(args: argparse.Namespace) -> None:
    """``gradcli diff`` of the reference identities (issue 17): each in at most 0.2 s."""
    from gradcli.symbolic.jacobians import gradient_texts

    for program, shapes in workloads.IDENTITIES:
        parsed = gradcli.parse(program)
        seconds = interleaved({"diff": lambda p=parsed, s=shapes: gradient_texts(
            p, s, None, 100_000)}, 3 if args.quick else 11)["diff"]
        row("J2", f"gradcli diff {program}", seconds, 1, "derivatives", None,
            "median, in process; goal <= 0.2 s")


def j3(args: argparse.Namespace) -> None:
    """The cost of ``gradcli diff``'s self-check (issue 26) on the J2 identities: in process
    (building the gradients against checking them), and whole commands as a user runs them
    (``gradcli diff`` against ``gradcli diff --no-check``, taking turns)."""
    from gradcli.gradcheck.derivative_check import DiffCheck, check
    from gradcli.symbolic.jacobians import gradient_texts

    runs = 3 if args.quick else 11
    spent = {"diff": 0.0, "check": 0.0, "command": 0.0, "unchecked": 0.0}
    for program, shapes in workloads.IDENTITIES:
        parsed = gradcli.parse(program)
        texts = gradient_texts(parsed, shapes, None, 100_000)
        medians = interleaved({
            "diff": lambda p=parsed, s=shapes: gradient_texts(p, s, None, 100_000),
            "check": lambda p=parsed, s=shapes, t=texts: check(
                DiffCheck(p, dict(s), {}, "gradient", t))}, runs)
        command = [*GRADCLI, "diff", program, *(
            arg for name, shape in shapes.items()
            for arg in ("--shape", f"{name}={'x'.join(map(str, shape))}"))]
        processes = _taking_turns({"command": command, "unchecked": [*command, "--no-check"]},
                                  max(3, runs // 2))
        for name, seconds in (*medians.items(), *processes.items()):
            spent[name] += seconds
        row("J3", f"check of gradcli diff {program}", medians["check"], 1, "derivatives", None,
            f"median, in process; building them {medians['diff'] * 1e3:.2f} ms")
    row("J3", "the checks, in process (all identities)", spent["check"], 1, "identities", None,
        f"{spent['check'] / spent['diff']:.0%} of building the derivatives "
        f"({spent['diff']:.3f} s)")
    row("J3", "gradcli diff, one process each (all)", spent["command"], 1, "identities", None,
        f"--no-check {spent['unchecked']:.3f} s: the check adds "
        f"{spent['command'] / spent['unchecked'] - 1:.0%}; goal <= 20%")


def _taking_turns(commands: dict[str, list[str]], runs: int) -> dict[str, float]:
    """Median wall seconds of each command's process, the commands taking turns."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs + 1):
        for name, command in commands.items():
            wall, _, status = run_process(command)
            assert status == 0, (command, status)
            walls[name].append(wall)
    return {name: statistics.median(spent[1:]) for name, spent in walls.items()}


def _array_rows(workload: str, actions: dict[str, Callable[[], object]], elements: int,
                args: argparse.Namespace) -> None:
    medians = interleaved(actions, 5 if args.quick else 21)
    for name, seconds in medians.items():
        row(workload, name, seconds, elements, "input elements", None,
            "median, runs interleaved; value and every gradient; goal <= 1.5x NumPy")


# --- the table -----------------------------------------------------------------------------------

def table() -> str:
    """One Markdown table; ``vs gradcli`` is the row's time over the time of the nearest gradcli
    row above it in the same workload (above 1: gradcli is that many times faster)."""
    lines = ["| workload | tool | time | rate | peak memory | vs gradcli | note |",
             "|---|---|---:|---:|---:|---:|---|"]
    mine: dict[str, float] = {}
    for item in ROWS:
        seconds, workload = item["seconds"], item["workload"]
        is_mine = item["tool"].startswith("gradcli")
        if seconds is None:
            time_text, rate, ratio = "fails", "—", "—"
        else:
            time_text = f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"
            rate = f"{item['work'] / seconds:,.0f} {item['unit']}/s"
            ratio = "" if is_mine or workload not in mine else f"{seconds / mine[workload]:.2f}"
            if is_mine:
                mine[workload] = seconds
        memory = "—" if item["memory"] is None else f"{item['memory'] / 2**20:,.0f} MB"
        lines.append(f"| {workload} | {item['tool']} | {time_text} | {rate} | {memory} "
                     f"| {ratio} | {item['note']} |")
    return "\n".join(lines)


def machine() -> str:
    model = "unknown CPU"
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        for line in info:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (f"{os.cpu_count()} CPUs ({model}), Python {platform.python_version()}, "
            f"{platform.system()} {platform.release()}, load average "
            f"{os.getloadavg()[0]:.1f} at the start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, smaller peer samples")
    parser.add_argument("--only", default="W1,W2,W3,W4,W5,A1,A2,A3,J1,J2,J3,XL",
                        help="comma-separated workloads")
    args = parser.parse_args()
    chosen = set(args.only.upper().split(","))
    print(f"machine: {machine()}", file=sys.stderr)
    folder = Path(tempfile.mkdtemp(prefix="gradcli-bench-"))
    try:
        if "W1" in chosen:
            w1(args)
        if "W2" in chosen:
            w2(args, folder)
        if "W3" in chosen:
            w3(args, folder)
        if "W4" in chosen:
            w4(args, folder)
        if "W5" in chosen:
            w5(args)
        if "A1" in chosen:
            a1(args)
        if "A2" in chosen:
            a2(args)
        if "A3" in chosen:
            array_check.rows(args, folder, row, run_process, interleaved)
        if "J1" in chosen:
            j1(args)
        if "J2" in chosen:
            j2(args)
        if "J3" in chosen:
            j3(args)
        if "XL" in chosen:
            w3(args, folder, 1_000_000, "XL")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"\nMachine: {machine()}\n")
    print(table())


if __name__ == "__main__":
    main()
