"""Peak memory of ``gradcli eval`` sweeps (issue 13): a 30-node formula at 10^6 and 10^7 points.

    python benchmarks/sweep_memory.py                     # CSV and JSON at 10^6 and 10^7 points
    python benchmarks/sweep_memory.py --points 1e6 --formats csv,json,table

Each sweep runs as a user runs it, ``gradcli eval FORMULA --x ... --y ... --csv`` in its own
process with stdout to /dev/null, started from a small launcher (a process forked straight from
this one would count this one's pages) that reports the child's wall time and maximum RSS
(``wait4``). Prints one Markdown table. The grid is 2-D (x has points/1,000 values, y 1,000),
so the values given on the command line are small and what is measured is the sweep itself;
``--axis 1`` puts every point on x instead (a 10^7-value range is itself ~320 MB of Python
floats, held by the parsed options).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

FORMULA = "sin(x)*cos(y) + exp(-x*x/4)*log(1+y*y) + tanh(x*y) - sqrt(1+x*x)*atan(y) + x/(2+y)"
FLAGS = {"csv": ["--csv"], "json": ["--json"], "table": []}

_LAUNCHER = """
import os, sys, time
args = sys.argv[1:]
actions = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
           (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
start = time.perf_counter()
pid = os.posix_spawn(args[0], args, os.environ, file_actions=actions)
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - start, usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status))
"""


def grid(points: int, axis: int) -> list[str]:
    if axis == 1:
        return ["--x", f"-3:3:{points}", "--y", "0.5"]
    inner = 1000
    return ["--x", f"-3:3:{max(1, points // inner)}", "--y", f"0:1:{inner}"]


def measure(points: int, output: str, axis: int) -> tuple[float, int, int]:
    """(seconds, peak RSS in bytes, exit status) of one sweep."""
    command = [sys.executable, "-m", "gradcli", "eval", FORMULA, *grid(points, axis),
               *FLAGS[output]]
    launched = subprocess.run([sys.executable, "-c", _LAUNCHER, *command], check=True,
                              capture_output=True, text=True, env={**os.environ})
    seconds, rss, status = launched.stdout.split()
    return float(seconds), int(rss), int(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", default="1e6,1e7",
                        help="comma-separated point counts (default 1e6,1e7)")
    parser.add_argument("--formats", default="csv,json", help="csv, json, table (default csv,json)")
    parser.add_argument("--axis", type=int, choices=(1, 2), default=2,
                        help="2: a 2-D grid (default); 1: every point on x")
    options = parser.parse_args()
    counts = [int(float(text)) for text in options.points.split(",")]
    formats = [text.strip() for text in options.formats.split(",")]
    import gradcli

    print(f"formula ({len(gradcli.parse(FORMULA).nodes)} nodes): `{FORMULA}`\n")
    print("| points | output | seconds | peak RSS (MB) | status |")
    print("|---:|---|---:|---:|---:|")
    for points in counts:
        for output in formats:
            print(f"measuring {points:,} points, {output} ...", file=sys.stderr)
            seconds, rss, status = measure(points, output, options.axis)
            print(f"| {points:,} | {output} | {seconds:.1f} | {rss / 2**20:,.0f} | {status} |",
                  flush=True)


if __name__ == "__main__":
    main()
