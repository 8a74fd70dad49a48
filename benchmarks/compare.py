"""Two versions of gradcli side by side: each workload's ratio new/old, with its spread.

    python benchmarks/compare.py 35ee749            # that commit against the working tree
    python benchmarks/compare.py 35ee749 HEAD       # two commits
    python benchmarks/compare.py 35ee749 --rounds 5 --batch 10000 --only W1,W2

Each version is installed as a user installs it: its files (``git archive`` of the commit, or
the working tree's tracked and new files) go to a temporary folder, which ``pip install
--no-deps`` puts into a throwaway venv made with ``--system-site-packages`` (so the
dependencies already installed are used, not downloaded again); the venv runs its own
``gradcli`` script. Everything is removed at the end.

The workloads are those of ``run.py`` (``workloads.py`` writes the same text): W1 the seed
example (table, ``--json``), W2 a batch of W2 programs on stdin (``--json``, with and without
the check, and ``--no-nodes``: the micrograd peer's record; ``--batch N`` programs), W3 the
wide program (table), W4 10,000 nesting levels, W5 ``evaluate_vector`` at 10^6 points (in a
child process that times only the call), and the seconds of imports that ``-X importtime``
reports for W1. Within a round every workload runs on both versions one after the other, the
order swapped every round, so that a slower spell of the machine falls on both; a round's ratio
is new/old, and the table gives the median ratio of the rounds and their smallest and largest.

CPU time (user + system of the process and of the processes it waited for, from ``wait4``) is
the number to read on a shared machine: other work on the same cores stretches wall time by
a factor of two and more, and CPU time much less. Wall time is printed too.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import workloads  # noqa: E402

ROOT = HERE.parent

# W5 in the version's own Python: the time of the call only (not of importing NumPy).
_SWEEP = """
import sys, time
import numpy as np
import gradcli
try:
    from gradcli.engine.vector import evaluate_vector
except ImportError:  # before the tree had subpackages (c7a1259, the baseline of issue 31)
    from gradcli.vector import evaluate_vector
rng = np.random.default_rng(6)
x, y = rng.uniform(-2, 2, 10**6), rng.uniform(-2, 2, 10**6)
program = gradcli.parse(sys.argv[1])
best = None
for _ in range(3):
    wall, cpu = time.perf_counter(), time.process_time()
    evaluate_vector(program, {"x": x, "y": y})
    spent = (time.perf_counter() - wall, time.process_time() - cpu)
    best = spent if best is None or spent[1] < best[1] else best
print(*best)
"""


@dataclass
class Version:
    """One installed version: its label and the venv that runs it."""

    label: str
    venv: Path

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    @property
    def gradcli(self) -> str:
        return str(self.venv / "bin" / "gradcli")


@dataclass
class Sample:
    wall: float
    cpu: float
    memory: int = 0  # peak RSS in bytes (``wait4``), where one process is measured


@dataclass
class Workload:
    """A workload: ``run(version)`` measures one run of it on a version."""

    name: str
    run: Callable[[Version], Sample]
    samples: dict[str, list[Sample]] = field(default_factory=dict)


# --- installing ----------------------------------------------------------------------------------

def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def export(rev: str | None, into: Path) -> str:
    """The files of ``rev`` (None: the working tree, tracked and new files) in ``into``; returns
    the version's label."""
    into.mkdir(parents=True)
    if rev is not None:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
        return f"{rev} ({_git('rev-parse', '--short', rev)})"
    listed = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    dirty = " + changes" if _git("status", "--porcelain") else ""
    return f"working tree ({_git('rev-parse', '--short', 'HEAD')}{dirty})"


def install(rev: str | None, folder: Path, isolated: bool = False) -> Version:
    """A venv in ``folder`` with ``rev`` installed by pip (its dependencies: the system's).
    ``isolated``: the system's packages are on the path by a plain path line, so that their
    ``.pth`` files (an editable install's finder, coverage's hook) do not run at every start,
    as in a venv that has the dependencies installed in it."""
    label = export(rev, folder / "source")
    venv = folder / "venv"
    shared = [] if isolated else ["--system-site-packages"]
    subprocess.run([sys.executable, "-m", "venv", *shared, "--without-pip", str(venv)],
                   check=True)
    if isolated:
        site = sysconfig.get_path("purelib", vars={"base": str(venv)})
        Path(site, "_system_packages.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                    "install", "--no-deps", "--quiet", str(folder / "source")], check=True)
    print(f"installed {label}", file=sys.stderr)
    return Version(label, venv)


# --- measuring -----------------------------------------------------------------------------------

ENV = {k: v for k, v in os.environ.items()
       if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONPROFILEIMPORTTIME")}
ENV["COLUMNS"] = "120"


def measure(args: list[str], stdin: Path | None = None, expect: int = 0) -> Sample:
    """Wall and CPU seconds of one process, output discarded; its children (batch workers)
    count too: ``wait4`` reports what the process and the children it waited for used."""
    with open(stdin or os.devnull, "rb") as source, tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(args, stdin=source, stdout=subprocess.DEVNULL, stderr=errors,
                                   env=ENV)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != expect:
            errors.seek(0)
            raise SystemExit(f"{' '.join(args)[:200]}: exit {process.returncode}\n"
                             f"{errors.read().decode(errors='replace')[-2000:]}")
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024)


def least_of(runs: int, args: list[str]) -> Sample:
    """The least wall and CPU time of ``runs`` runs of a short process: other work on the
    machine only ever adds to a run's time, so the least is the closest to the process's own."""
    samples = [measure(args) for _ in range(runs)]
    return Sample(min(s.wall for s in samples), min(s.cpu for s in samples))


def import_seconds(runs: int, args: list[str]) -> Sample:
    """The sum of the modules' own import times that ``-X importtime`` reports, the least of
    ``runs`` runs (both columns of the Sample hold it: it is measured inside the process)."""
    totals = []
    for _ in range(runs):
        done = subprocess.run(args, capture_output=True, text=True, env=ENV, check=True)
        totals.append(sum(int(own) for own in (
            line.split(":", 1)[1].split("|", 1)[0].strip()
            for line in done.stderr.splitlines() if line.startswith("import time:"))
            if own.isdigit()))
    return Sample(min(totals) / 1e6, min(totals) / 1e6)


def instructions(args: list[str], stdin: Path | None = None) -> int:
    """The instructions one run executes, counted by valgrind's callgrind: the same on a busy
    machine as on a quiet one (about 50 times slower to run, so used for small workloads)."""
    with open(stdin or os.devnull, "rb") as source:
        done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                               *args], stdin=source, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, check=False,
                              env={**ENV, "PYTHONHASHSEED": "0", "GRADCLI_JOBS": "1"})
    counted = re.search(r"Collected : (\d+)", done.stderr)
    if counted is None:
        raise SystemExit(f"valgrind: {done.stderr[-1000:]}")
    return int(counted.group(1))


def workloads_to_run(args: argparse.Namespace, folder: Path,
                     versions: list[Version]) -> list[Workload]:
    chosen = set(args.only.upper().split(","))
    seed = [workloads.SEED_EXPRESSION, *workloads.SEED_VALUES]
    result: list[Workload] = []
    if "W1" in chosen:
        result += [
            Workload("W1 table", lambda v: least_of(args.w1_runs, [v.gradcli, "eval", *seed])),
            Workload("W1 --json", lambda v: least_of(
                args.w1_runs, [v.gradcli, "eval", *seed, "--json"])),
            Workload("W1 imports (table, -X importtime)", lambda v: import_seconds(
                args.w1_runs, [v.python, "-X", "importtime", v.gradcli, "eval", *seed])),
            Workload("W1 imports (--json, -X importtime)", lambda v: import_seconds(
                args.w1_runs, [v.python, "-X", "importtime", v.gradcli, "eval", *seed,
                               "--json"])),
            # The same for both versions: the yardstick of issue 31's goals
            Workload("reference: import click, lark, rich", lambda v: least_of(
                args.w1_runs, [v.python, "-c", workloads.REFERENCE_IMPORTS])),
            Workload("floor: python -c pass", lambda v: least_of(
                args.w1_runs, [v.python, "-c", "pass"])),
        ]
    if "W2" in chosen:
        batch = folder / "w2.txt"
        batch.write_text("\n".join(workloads.batch_programs(args.batch)) + "\n", "utf-8")
        point = workloads.value_flags(workloads.batch_point())
        result += [
            Workload(f"W2 batch of {args.batch:,}, --json --no-check", lambda v: measure(
                [v.gradcli, "eval", "-", "--json", "--no-check", *point], batch)),
            Workload(f"W2 batch of {args.batch:,}, --json (check on)", lambda v: measure(
                [v.gradcli, "eval", "-", "--json", *point], batch)),
        ]
        # what the micrograd peer writes: value, gradients and the check, no node list
        if all(_has_option(v, "--no-nodes") for v in versions):
            result.append(Workload(
                f"W2 batch of {args.batch:,}, --json --no-nodes (check on)",
                lambda v: measure([v.gradcli, "eval", "-", "--json", "--no-nodes", *point],
                                  batch)))
        else:  # older than the lean record (c7a1259, the baseline of issue 31)
            print("W2 --no-nodes left out: a version has no such option", file=sys.stderr)
    if "W3" in chosen:
        wide = folder / "w3.grad"
        wide.write_text(workloads.wide_program(args.wide), "utf-8")
        inputs = workloads.value_flags(workloads.wide_point())
        result.append(Workload(f"W3 {args.wide:,} nodes, table", lambda v: measure(
            [v.gradcli, "eval", "-f", str(wide), *inputs])))
    if "W4" in chosen:
        deep = folder / "w4.grad"
        deep.write_text(workloads.deep_program(10_000), "utf-8")
        result.append(Workload("W4 10,000 levels", lambda v: measure(
            [v.gradcli, "eval", "-f", str(deep), "--x", "0.3"])))
    if "W5" in chosen:
        result.append(Workload("W5 evaluate_vector, 10^6 points (in process)",
                               lambda v: _sweep(v)))
    return result


def _has_option(version: Version, option: str) -> bool:
    done = subprocess.run([version.gradcli, "eval", "--help"], capture_output=True, text=True,
                          env=ENV)
    if done.returncode:  # a broken install: said, not taken for an old version
        raise SystemExit(f"gradcli eval --help in {version.label}: exit {done.returncode}\n"
                         f"{done.stderr[-2000:]}")
    return option in done.stdout


def _sweep(version: Version) -> Sample:
    done = subprocess.run([version.python, "-c", _SWEEP, workloads.SWEEP_FORMULA],
                          capture_output=True, text=True, env=ENV)
    if done.returncode:
        raise SystemExit(f"W5 in {version.label}: exit {done.returncode}\n{done.stderr[-2000:]}")
    wall, cpu = done.stdout.split()
    return Sample(float(wall), float(cpu))


# --- the table -----------------------------------------------------------------------------------

def _seconds(value: float) -> str:
    return f"{value * 1000:,.0f} ms" if value < 10 else f"{value:,.1f} s"


def _ratio(old: list[float], new: list[float]) -> str:
    return _spread([n / o for o, n in zip(old, new, strict=True) if o > 0])


def _spread(ratios: list[float]) -> str:
    """The median ratio, then the smallest and the largest: ``0.87 (0.85-0.90)``."""
    if not ratios:
        return "-"
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def table(items: list[Workload], old: Version, new: Version) -> str:
    lines = ["| workload | old CPU | new CPU | new/old CPU (spread) | old wall | new wall "
             "| new/old wall (spread) |", "|---|---:|---:|---:|---:|---:|---:|"]
    for item in items:
        a, b = item.samples[old.label], item.samples[new.label]
        cells = [item.name]
        for kind in ("cpu", "wall"):
            x, y = [getattr(s, kind) for s in a], [getattr(s, kind) for s in b]
            cells += [_seconds(statistics.median(x)), _seconds(statistics.median(y)),
                      _ratio(x, y)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def memory_table(items: list[Workload], old: Version, new: Version) -> str:
    """The largest peak RSS of the rounds, for the workloads measured as one process."""
    lines = ["| workload | old peak RSS | new peak RSS | new/old |", "|---|---:|---:|---:|"]
    for item in items:
        a, b = (max(s.memory for s in item.samples[v.label]) for v in (old, new))
        if a and b:
            lines.append(f"| {item.name} | {a / 1e6:,.1f} MB | {b / 1e6:,.1f} MB | {b / a:.2f} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def against_reference(items: list[Workload], versions: list[Version]) -> str:
    """W1 over the bare imports of click, lark and rich, round by round (issue 31's goals)."""
    named = {item.name: item for item in items}
    reference = named.get("reference: import click, lark, rich")
    if reference is None:
        return ""
    lines = ["| version | W1 table ÷ imports (CPU) | W1 --json ÷ imports (CPU) |",
             "|---|---:|---:|"]
    for version in versions:
        base = [s.cpu for s in reference.samples[version.label]]
        cells = [version.label]
        for name in ("W1 table", "W1 --json"):
            mine = [s.cpu for s in named[name].samples[version.label]]
            cells.append(_spread([m / r for m, r in zip(mine, base, strict=True)]))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def count_instructions(args: argparse.Namespace, folder: Path,
                       versions: list[Version]) -> dict[str, dict[str, int]]:
    """Instructions of W1 (table, --json), the reference imports, a batch of
    ``args.instructions`` W2 programs (one process) and W3 at ``args.wide_instructions`` nodes,
    per version."""
    batch = folder / "w2-counted.txt"
    batch.write_text("\n".join(workloads.batch_programs(args.instructions)) + "\n", "utf-8")
    point = workloads.value_flags(workloads.batch_point())
    seed = [workloads.SEED_EXPRESSION, *workloads.SEED_VALUES]
    runs: dict[str, Callable[[Version], int]] = {
        "W1 table": lambda v: instructions([v.python, v.gradcli, "eval", *seed]),
        "W1 --json": lambda v: instructions([v.python, v.gradcli, "eval", *seed, "--json"]),
        "reference: import click, lark, rich": lambda v: instructions(
            [v.python, "-c", workloads.REFERENCE_IMPORTS]),
        f"W2 batch of {args.instructions:,}, --json (check on), one process": lambda v:
            instructions([v.python, v.gradcli, "eval", "-", "--json", *point], batch),
    }
    if args.wide_instructions:
        wide = folder / "w3-counted.grad"
        wide.write_text(workloads.wide_program(args.wide_instructions), "utf-8")
        inputs = workloads.value_flags(workloads.wide_point())
        runs[f"W3 {args.wide_instructions:,} nodes, table"] = lambda v: instructions(
            [v.python, v.gradcli, "eval", "-f", str(wide), *inputs])
    counted: dict[str, dict[str, int]] = {}
    for name, run in runs.items():
        counted[name] = {v.label: run(v) for v in versions}
        print(f"counted: {name}", file=sys.stderr, flush=True)
    return counted


def instruction_table(counted: dict[str, dict[str, int]], old: Version, new: Version) -> str:
    lines = ["| workload | old | new | new/old |", "|---|---:|---:|---:|"]
    for name, by in counted.items():
        lines.append(f"| {name} | {by[old.label] / 1e6:,.0f} M | {by[new.label] / 1e6:,.0f} M "
                     f"| {by[new.label] / by[old.label]:.3f} |")
    reference = counted.get("reference: import click, lark, rich")
    if reference:
        for version in (old, new):
            base = reference[version.label]
            ratios = ", ".join(f"{name} {counted[name][version.label] / base:.2f}"
                               for name in ("W1 table", "W1 --json"))
            lines.append(f"\n{version.label}, over the reference imports: {ratios}")
    return "\n".join(lines)


def machine() -> str:
    return (f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()} "
            f"{platform.release()}, load average {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the version to compare with (a commit, a branch, a tag)")
    parser.add_argument("new", nargs="?", help="the new version (default: the working tree)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--only", default="W1,W2,W3,W4,W5", help="comma-separated workloads")
    parser.add_argument("--batch", type=int, default=2000,
                        help="W2 programs (default 2,000; run.py's W2 has 10,000)")
    parser.add_argument("--wide", type=int, default=100_000, help="W3 nodes (default 100,000)")
    parser.add_argument("--w1-runs", type=int, default=5,
                        help="W1 processes per version and round, of which the least counts")
    parser.add_argument("--instructions", type=int, default=0, metavar="N",
                        help="also count the instructions (valgrind) of W1 and of a batch of N "
                             "W2 programs in one process, once per version")
    parser.add_argument("--wide-instructions", type=int, default=5000, metavar="N",
                        help="with --instructions, W3 at N nodes too (default 5,000; 0: not)")
    parser.add_argument("--isolated", action="store_true",
                        help="venvs that do not run the system site's .pth files")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="gradcli-compare-"))
    try:
        old = install(args.old, folder / "old", args.isolated)
        new = install(args.new, folder / "new", args.isolated)
        versions = [old, new]
        items = workloads_to_run(args, folder, versions)
        for version in versions:  # warm-up: the page cache, and bytecode pip did not write
            least_of(1, [version.gradcli, "eval", workloads.SEED_EXPRESSION,
                          *workloads.SEED_VALUES])
        for item in items:
            item.samples = {v.label: [] for v in versions}
        started = machine()
        for number in range(args.rounds):
            order = versions if number % 2 == 0 else versions[::-1]
            for item in items:
                for version in order:
                    item.samples[version.label].append(item.run(version))
            print(f"round {number + 1} of {args.rounds} done", file=sys.stderr, flush=True)
        counted = count_instructions(args, folder, versions) if args.instructions else {}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"old: {old.label}; new: {new.label}\n\n{started} at the start\n")
    print("CPU time (user + system, the processes' children included) is the robust number on "
          "a shared machine; wall time moves with other work on the same cores. Ratios: "
          f"median of {args.rounds} rounds (smallest-largest); below 1, new is faster.\n")
    print(table(items, old, new))
    memory = memory_table(items, old, new)
    if memory:
        print(f"\nPeak memory (the process's maximum RSS, ``wait4``; batch workers not "
              f"included):\n\n{memory}")
    reference = against_reference(items, versions)
    if reference:
        print(f"\nW1 over the bare imports (`{workloads.REFERENCE_IMPORTS}`), issue 31's "
              f"yardstick:\n\n{reference}")
    if counted:
        print(f"\nInstructions (valgrind's callgrind; the same on a busy machine):\n\n"
              f"{instruction_table(counted, old, new)}")


if __name__ == "__main__":
    main()
