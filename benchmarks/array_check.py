"""Issue 30's rows of benchmarks/run.py (``--only A3``): arrays from ``.npy`` files, with the check.

- A1 as a user runs it: ``gradcli eval "mean((W@x + b - t)**2)" --W W.npy ...`` (W 1000x1000,
  the table written to a file), with its default check and with ``--no-check``, against a NumPy
  script that loads the same files and computes the value and every gradient by hand; the
  processes take turns. Goal: <= 1.5x the script with the check.
- A1 in process: ``gradcli.evaluate`` with its check against the same call without it. Goal: the
  check <= 5x the evaluation.
- ``det``, ``logdet`` and ``inv`` of a 500x500 matrix with the check, one process each. Goal:
  <= 10 s each.
- ``sum(x*x)`` with x of 10^7 elements from a ``.npy`` file, with the check: wall time and the
  process's peak RSS. Goal: within 2 GB.

The functions take run.py's helpers (``row``, ``run_process``, ``interleaved``) as arguments, so
that this module stays a plain script beside it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradcli

A1 = "mean((W@x + b - t)**2)"
SCRIPT = """import numpy as np
W = np.load('W.npy'); x = np.load('x.npy'); b = np.load('b.npy'); t = np.load('t.npy')
r = W @ x + b - t; value = np.mean(r**2); g = 2 * r / r.size
gW = np.outer(g, x); gx = W.T @ g; print(value, gW.sum(), gx.sum(), g.sum(), -g.sum())
"""


def rows(args: argparse.Namespace, folder: Path, row: Callable[..., None],
         run_process: Callable[..., tuple[float, int, int]],
         interleaved: Callable[..., dict[str, float]]) -> None:
    import numpy as np

    rng = np.random.default_rng(30)
    n = 1000
    values = {"W": rng.normal(size=(n, n)), "x": rng.normal(size=n), "b": rng.normal(size=n),
              "t": rng.normal(size=n)}
    for name, value in values.items():
        np.save(folder / f"{name}.npy", value)
    (folder / "a1.py").write_text(SCRIPT)
    runs = 3 if args.quick else 9
    _whole_a1(folder, runs, row, run_process)
    _in_process_a1(values, runs, row, interleaved)
    _factorisations(folder, rng, row, run_process)
    _large(folder, rng, row, run_process)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "gradcli", "eval", *args]


def _whole_a1(folder: Path, runs: int, row: Callable[..., None],
              run_process: Callable[..., tuple[float, int, int]]) -> None:
    files = [arg for name in "Wxbt" for arg in (f"--{name}", str(folder / f"{name}.npy"))]
    commands = {"gradcli eval (default check)": _cli(A1, *files),
                "gradcli eval --no-check": _cli(A1, *files, "--no-check"),
                "NumPy script": [sys.executable, "a1.py"]}
    walls: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, int] = {}
    for _ in range(runs + 1):
        for name, command in commands.items():
            wall, peak, status = _in(folder, run_process, command)
            assert status == 0, (command, status)
            walls[name].append(wall)
            peaks[name] = max(peaks.get(name, 0), peak)
    medians = {name: statistics.median(spent[1:]) for name, spent in walls.items()}
    script = medians["NumPy script"]
    for name, seconds in medians.items():
        row("A1", f"{name}, whole process", seconds, 10**6 + 3000, "input elements",
            peaks[name], f"median, processes taking turns; {seconds / script:.2f}x the NumPy "
            "script; goal <= 1.5x with the check")


def _in(folder: Path, run_process: Callable[..., tuple[float, int, int]],
        command: list[str]) -> tuple[float, int, int]:
    """``run_process`` in ``folder`` (the NumPy script reads its files from there)."""
    import os

    before = os.getcwd()
    os.chdir(folder)
    try:
        return run_process(command)
    finally:
        os.chdir(before)


def _in_process_a1(values: dict[str, Any], runs: int, row: Callable[..., None],
                   interleaved: Callable[..., dict[str, float]]) -> None:
    program = gradcli.parse(A1)
    medians = interleaved({
        "evaluation": lambda: gradcli.evaluate(program, values, check=False),
        "with the check": lambda: gradcli.evaluate(program, values)}, runs)
    check = medians["with the check"] - medians["evaluation"]
    verdict = gradcli.evaluate(program, values).check
    assert verdict is not None and verdict.ok
    ran = ", ".join(f"{name}: {c.directions} directions + {c.checked} of {c.size:,}"
                    for name, c in verdict.gradients.items())
    row("A1", "gradcli evaluate, the check alone", check, 10**6 + 3000, "input elements", None,
        f"median; {check / medians['evaluation']:.1f}x the evaluation "
        f"({medians['evaluation'] * 1e3:.1f} ms); goal <= 5x; {ran}")


def _factorisations(folder: Path, rng: Any, row: Callable[..., None],
                    run_process: Callable[..., tuple[float, int, int]]) -> None:
    import numpy as np

    n = 500
    np.save(folder / "A.npy", rng.normal(size=(n, n)) / np.sqrt(n) + 2 * np.eye(n))
    for program in ("det(A)", "logdet(A)", "sum(inv(A))"):
        wall, peak, status = run_process(_cli(program, "--A", str(folder / "A.npy")))
        assert status == 0, (program, status)
        row("A3", f"gradcli eval {program}, A 500x500, with the check", wall, n * n,
            "input elements", peak, "one process; goal <= 10 s")


def _large(folder: Path, rng: Any, row: Callable[..., None],
           run_process: Callable[..., tuple[float, int, int]]) -> None:
    import numpy as np

    np.save(folder / "x7.npy", rng.normal(size=10**7))
    wall, peak, status = run_process(_cli("sum(x*x)", "--x", str(folder / "x7.npy")))
    assert status == 0, status
    row("A3", "gradcli eval sum(x*x), x of 10^7 elements, with the check", wall, 10**7,
        "input elements", peak, "one process; goal: peak RSS within 2 GB")
