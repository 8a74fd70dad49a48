"""``--json --no-nodes`` (issue 31): records without the per-node list, otherwise the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SEED = ["(x*W+b-t)**2", "--x", "2", "--W", "3", "--b", "1", "--t", "8"]
LINES = [
    "x*y + sin(x)",
    "# a comment",
    "log(x - 5)",  # a domain error: an error record
    "u = x*y; u*u - y",
    "f = x*y; g = x + y; f, g",  # a Jacobian record
    "relu(x - 1)*y/(1 + y*y)",
] * 30  # 180 lines: past the lines evaluated before the workers start


def _gradcli(*args: str, stdin: str | None = None, jobs: str = "2"):
    environment = {**os.environ, "GRADCLI_JOBS": jobs}
    return subprocess.run([sys.executable, "-m", "gradcli", *args], input=stdin,
                          capture_output=True, text=True, env=environment, check=False)


def test_the_seed_example_without_nodes_has_its_closed_form():
    done = _gradcli("eval", *SEED, "--json", "--no-nodes")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    x, w, b, t = 2.0, 3.0, 1.0, 8.0
    residual = x * w + b - t
    assert record["value"] == residual**2
    assert record["gradients"] == {"x": 2 * residual * w, "W": 2 * residual * x,
                                   "b": 2 * residual, "t": -2 * residual}
    assert "nodes" not in record and record["check"]["ok"] is True


def test_a_lean_record_is_the_full_record_without_its_nodes():
    full = json.loads(_gradcli("eval", *SEED, "--json").stdout)
    lean = json.loads(_gradcli("eval", *SEED, "--json", "--no-nodes").stdout)
    assert full.pop("nodes")
    assert lean == full


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_batch_without_nodes_keeps_every_other_key_and_the_status(jobs):
    text = "\n".join(LINES) + "\n"
    full = _gradcli("eval", "-", "--json", "--x", "1.5", "--y", "2", stdin=text, jobs=jobs)
    lean = _gradcli("eval", "-", "--json", "--no-nodes", "--x", "1.5", "--y", "2", stdin=text,
                    jobs=jobs)
    assert lean.returncode == full.returncode == 3  # the domain error's status
    full_records = [json.loads(line) for line in full.stdout.splitlines()]
    lean_records = [json.loads(line) for line in lean.stdout.splitlines()]
    assert len(lean_records) == len(full_records) == 150
    for mine, theirs in zip(lean_records, full_records, strict=True):
        if theirs["error"] is None:
            assert theirs.pop("nodes") and "nodes" not in mine
        # an error record is the same either way: "nodes" is null, as every other key but two
        assert mine == theirs
    assert len(lean.stdout) < len(full.stdout)


@pytest.mark.parametrize("other", [[], ["--csv"]], ids=["table", "csv"])
def test_no_nodes_without_json_is_a_usage_error(other):
    done = _gradcli("eval", *SEED, "--no-nodes", *other)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "--no-nodes" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("text", ["where(x > 0, log(x), x*x) + y", "(x*W+b-t)**2",
                                  "sum(W*x) + relu(b)"])
def test_a_lean_result_keeps_its_own_nodes_when_the_program_runs_again(text):
    """``EvalSettings(nodes=False)`` leaves the node list out of a record, not out of the
    Result: its rows are those of a Result that lists them (a branch not taken masked), and
    stay so after the same Program is evaluated at another point."""
    import gradcli

    point = {"x": -2.0, "y": 1.5, "W": 3.0, "b": 1.0, "t": 8.0}
    other = {**point, "x": 3.0}
    if "sum" in text:
        point = {"x": [1.0, -2.0], "W": [0.5, 4.0], "b": -1.0}
        other = {**point, "x": [4.0, 5.0]}

    def rows(result):
        return [(row.id, row.op, row.label, repr(row.value), repr(row.grad), row.ok)
                for row in result.node_rows()]

    kept = gradcli.evaluate(text, point)
    lean = gradcli.evaluate(text, point, nodes=False)
    before = rows(lean)
    assert before == rows(kept)
    gradcli.evaluate(lean.program, other, nodes=False)
    assert rows(lean) == before
