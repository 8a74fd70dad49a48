"""Issue 30: every command prints an array as the tables do (summarised past 12 elements,
``--digits`` in every cell, ``--full`` for all): eval's tables, the Hessian, batch lines and
the repl, whose options are eval's own."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from gradcli.cli import cli

X = np.arange(20.0) / 7


def invoke(*args: str, stdin: str | None = None):
    out = CliRunner().invoke(cli, list(args), input=stdin, env={"COLUMNS": "1000"})
    assert out.exit_code == 0, out.output
    return out.stdout


def summary(array: np.ndarray, digits: int) -> str:
    """The table's summary of a large array, written here from NumPy's numbers."""
    flat = array.ravel()
    ends = [f"{v:.{digits}g}" for v in flat[:3]] + ["…"] + [f"{v:.{digits}g}" for v in flat[-3:]]
    return (f"[{', '.join(ends)}] min {flat.min():.{digits}g}, "
            f"max {flat.max():.{digits}g}")


def test_eval_and_its_hessian_summarise_with_digits():
    out = invoke("eval", "sum(x*x*x)", "--x", json.dumps(X.tolist()), "--hessian",
                 "--digits", "3")
    assert summary(3 * X**2, 3) in out  # the gradient
    assert summary(np.diag(6 * X), 3) in out  # the Hessian block
    whole = invoke("eval", "sum(x*x*x)", "--x", json.dumps(X.tolist()), "--hessian",
                   "--digits", "3", "--full")
    assert "[" + ", ".join(f"{v:.3g}" for v in 3 * X**2) + "]" in whole


def test_repl_takes_digits_and_full():
    entries = f"x = {json.dumps(X.tolist())}\nsum(x*x)\n:hessian\n:graph\n"
    out = invoke("repl", "--digits", "3", stdin=entries)
    assert summary(2 * X, 3) in out and summary(np.diag(np.full(20, 2.0)), 3) in out
    assert f"#0 x  var  shape 20  value [0 … {X.max():.3g}]" in out  # :graph draws to 3 digits
    whole = invoke("repl", "--full", stdin=entries)
    assert "[" + ", ".join(repr(float(v)).removesuffix(".0") for v in 2 * X) + "]" in whole


def test_repl_digits_is_evals_option():
    helps = [CliRunner().invoke(cli, [name, "--help"], terminal_width=200).stdout
             for name in ("eval", "repl")]
    for flag in ("--digits", "--full"):
        lines = [next(line for line in text.splitlines() if line.strip().startswith(flag))
                 for text in helps]
        assert lines[1].split()[:12] == lines[0].split()[:12]
