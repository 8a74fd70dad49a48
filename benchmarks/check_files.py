"""How long a check file takes to load, by number of checks; prints one Markdown table.

    python benchmarks/check_files.py            # 1,000 / 4,000 / 16,000 / 32,000 checks
    python benchmarks/check_files.py --counts 1000,8000

Each file is generated (a fixed pattern: a swept and a fixed variable, a value and a derivative
identity per check), then loaded with ``load_check_file`` (TOML, validation, the
line of every key, parsing every expression) in a fresh process, so that one size's garbage does
not slow the next; the table gives the median of three loads, the time per check, the ratio to
the previous row's time (4 for 4 times the checks when loading is linear) and the peak RSS of
the loading process. The checks are not run (``gradcli check`` refuses a run this large:
``MAX_RUN_CELLS``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_LOAD = """
import resource, sys, time
from gradcli.formulas.files import load_check_file
start = time.perf_counter()
specs = load_check_file(sys.argv[1])
seconds = time.perf_counter() - start
print(len(specs), seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def check_file(count: int) -> str:
    """``count`` checks, each with its own name, expr and numbers (~125 bytes a check, so that
    32,000 fit in the 4 MiB a check file may have)."""
    return "".join(
        f'[[check]]\nname = "c{i}"\nexpr = "x*{i % 97 + 1} + sin(y)"\nsweep.x = "-1:1:5"\n'
        f'at.y = {i % 7}\nvalue = "x*{i % 97 + 1} + sin(y)"\nderivative.y = "cos(y)"\n\n'
        for i in range(count))


def load(path: Path) -> tuple[int, float, int]:
    """(checks, seconds, peak RSS in bytes) of loading ``path`` in a fresh process."""
    report = subprocess.run([sys.executable, "-c", _LOAD, str(path)], capture_output=True,
                            text=True)
    if report.returncode:
        sys.exit(f"loading {path.name} failed:\n{report.stderr}")
    checks, seconds, memory = report.stdout.split()
    return int(checks), float(seconds), int(memory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1000,4000,16000,32000",
                        help="numbers of checks, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="loads per size (median)")
    counts = [int(text) for text in parser.parse_args().counts.split(",")]
    runs = parser.parse_args().runs
    print("| checks | file | load (median) | per check | ratio to previous | peak RSS |")
    print("|---:|---:|---:|---:|---:|---:|")
    previous = None
    with tempfile.TemporaryDirectory() as scratch:
        for count in counts:
            path = Path(scratch) / f"checks-{count}.toml"
            path.write_text(check_file(count))
            results = [load(path) for _ in range(runs)]
            assert all(result[0] == count for result in results)
            seconds = statistics.median(result[1] for result in results)
            memory = max(result[2] for result in results)
            ratio = "" if previous is None else f"{seconds / previous:.1f}"
            print(f"| {count:,} | {path.stat().st_size / 2**20:.1f} MiB | {seconds:.2f} s "
                  f"| {seconds / count * 1e6:.0f} µs | {ratio} | {memory / 2**20:.0f} MiB |",
                  flush=True)
            previous = seconds


if __name__ == "__main__":
    main()
