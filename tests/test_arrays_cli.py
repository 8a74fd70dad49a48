"""Arrays from the command line (issue 16): values, errors and their statuses, tables, JSON,
batches, sweeps refused, graph shapes, check files; and hypothesis over random shapes and
programs against finite differences computed here, independently of gradcli's check."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradcli
from gradcli.cli import cli
from gradcli.engine.ops import ROWS, table_rows


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


def test_values_tables_and_json():
    args = ["eval", "mean((W@x + b - t)**2)", "--W", "[[1, 2], [3, 4]]", "--x", "[1, 1]",
            "--b", "[0.5, 0]", "--t", "[1, 2]"]
    table = invoke(*args)
    assert table.exit_code == 0, table.output
    assert "shape" in table.output and "2x2" in table.output
    assert "[[2.5, 2.5], [5, 5]]" in table.output  # dW = outer(W@x + b - t, x)
    record = json.loads(invoke(*args, "--json").output)
    assert record["value"] == 15.625
    assert record["gradients"]["W"] == [[2.5, 2.5], [5.0, 5.0]]
    assert [node["shape"] for node in record["nodes"]][:3] == [[2, 2], [2], [2]]
    assert record["check"]["gradients"]["W"]["checked"] == 4
    assert record["check"]["ok"] is True


def test_large_arrays_are_summarised_unless_full():
    args = ["eval", "sum(x*x)", "--x", "[" + ", ".join(str(i) for i in range(30)) + "]"]
    short = invoke(*args, "--no-check").output
    assert "…" in short and "min 0, max 29" in short
    full = invoke(*args, "--no-check", "--full").output
    assert "…" not in full and "29" in full and "841" in full


@pytest.mark.parametrize(("args", "status", "words"), [
    (["sum(x + y)", "--x", "[1, 2, 3]", "--y", "[1, 2]"], 2, "shape mismatch"),
    (["sum(W)", "--W", "[[1, 2], [3]]"], 2, "element [1] has shape 1"),
    (["sum(x)", "--x", "[1, two]"], 2, "'two' is not a number"),
    (["x[5]", "--x", "[1, 2, 3]"], 2, "has shape 3"),
    (["det(A)", "--A", "[[1, 2], [2, 4]]"], 3, "singular"),
    (["sum(x)*y", "--x", "[1, 2]", "--y", "1:2:3"], 2, "sweep"),
    (["x = [1, 2]; sum(x)*y", "--y", "1,2"], 2, "sweeps vary scalar programs"),
    (["x*2", "--x", "[1, 2]", "--hessian"], 2, "one scalar output"),
    (["sum(x)*y", "--x", "[1, 2]"], 2, "an array program needs a value for every variable"),
    # several scalar outputs: no arrays in it, so the message says what it is (a bug hunt)
    (["f = x*y; g = x; f, g", "--x", "1"], 2,
     "a program of several outputs (a Jacobian) needs a value for every variable"),
])
def test_errors_are_one_line_with_the_right_status(args, status, words):
    result = invoke("eval", *args)
    assert result.exit_code == status, result.output
    assert "Traceback" not in result.output
    assert words in result.output


def test_diff_and_plot_refuse_array_programs():
    refused = invoke("diff", "sum(x*x)", "--wrt", "x")  # diff needs x's shape (issue 17)
    assert refused.exit_code == 2 and "no shape for x" in refused.output
    assert invoke("plot", "sum(x*y)", "--x", "-1:1:3", "--y", "[1, 2]").exit_code == 2


def test_batch_lines_are_records_in_order():
    lines = "sum(x*x)\nx*2\nmax(x)\n"
    result = invoke("eval", "-", "--x", "[1, 2]", "--json", stdin=lines)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3]
    assert records[0]["gradients"]["x"] == [2.0, 4.0]
    assert records[1]["jacobian"]["x*2"]["x"] == [[2.0, 0.0], [0.0, 2.0]]  # issue 17
    assert records[2]["value"] == 2.0


def test_graph_shows_shapes():
    result = invoke("graph", "sum(W@x)", "--W", "[[1, 2], [3, 4]]", "--x", "[1, 2]",
                    "--format", "tree")
    assert result.exit_code == 0
    assert "shape 2x2" in result.output and "grad [4, 6]" in result.output


def test_check_files_with_arrays(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text('[[check]]\nname = "ls"\nexpr = "sum((A@x - y)**2)"\n'
                    'at = {A = [[1, 2], [3, 4]], x = [1, 1], y = [1, 2]}\nvalue = 29\n'
                    'gradients = {x = [34, 48]}\n'
                    'derivative = {A = "2*outer(A@x - y, x)", y = "-2*(A@x - y)"}\n')
    assert invoke("check", str(good)).exit_code == 0
    bad = tmp_path / "bad.toml"
    bad.write_text(good.read_text().replace("[34, 48]", "[34, 47]"))
    result = invoke("check", str(bad))
    assert result.exit_code == 1 and "x[1]" in result.output
    ragged = tmp_path / "ragged.toml"
    ragged.write_text(good.read_text().replace("[[1, 2], [3, 4]]", "[[1, 2], [3]]"))
    result = invoke("check", str(ragged))
    assert result.exit_code == 2 and "at.A" in result.output


def test_every_array_spelling_in_the_listing_parses_to_its_op():
    rows = {op.name: op for op in ROWS if op.is_array}
    for row in table_rows():
        if not row["kind"].startswith("array"):
            continue
        for text in row["written"]:
            output = gradcli.parse(text.replace("(n)", "(3)")).output
            if row["name"] in rows:
                assert output.op is rows[row["name"]], text
            else:
                assert output.op.name in (row["name"], "const"), text


def test_scalar_eval_imports_no_numpy():
    code = ("import sys; from gradcli.cli.base import main; sys.argv = ['gradcli', 'eval', "
            "'(x*W+b-t)**2', '--x', '2', '--W', '3', '--b', '1', '--t', '8', '--json'];\n"
            "try: main()\nexcept SystemExit: pass\n"
            "print([m for m in ('numpy', 'gradcli.engine.arrays') if m in sys.modules], "
            "file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stderr.strip().splitlines()[-1] == "[]"


# --- hypothesis: random shapes and programs against finite differences computed here ----------

SHAPES = st.sampled_from([(), (1,), (3,), (2, 3), (3, 1), (1, 3), (2, 1)])
UNARY = st.sampled_from(["sin", "tanh", "exp", "sigmoid", "softplus", "atan"])
BINARY = st.sampled_from(["+", "-", "*"])
REDUCE = st.sampled_from(["sum", "mean", "logsumexp", "norm"])


def _numeric_gradient(program, values, name, h=1e-6):
    """Central differences of the value, one element at a time (the value path is checked
    against NumPy in test_arrays.py)."""
    base = np.array(values[name], dtype=float)
    grad = np.zeros_like(base)
    for index in np.ndindex(base.shape):
        moved = {}
        for sign in (1, -1):
            shifted = base.copy()
            shifted[index] += sign * h
            moved[sign] = gradcli.evaluate(program, {**values, name: shifted}, check=False).value
        grad[index] = (moved[1] - moved[-1]) / (2 * h)
    return grad


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(SHAPES, SHAPES, UNARY, UNARY, BINARY, REDUCE, st.integers(0, 2**32 - 1))
def test_random_programs_match_finite_differences(xs, ys, f, g, op, reduce, seed):
    try:
        np.broadcast_shapes(xs, ys)
    except ValueError:
        xs = ys
    rng = np.random.default_rng(seed)
    values = {"x": rng.uniform(-1, 1, xs), "y": rng.uniform(-1, 1, ys)}
    program = f"{reduce}({f}(x) {op} {g}(y*x) + 1.5)"
    result = gradcli.evaluate(program, values)
    assert result.check.ok, (program, result.check.failures)
    for name in ("x", "y"):
        assert np.shape(result.gradients[name]) == np.shape(values[name])
        np.testing.assert_allclose(result.gradients[name],
                                   _numeric_gradient(program, values, name),
                                   rtol=1e-5, atol=1e-7)


def test_json_summarises_large_arrays_unless_full():
    """Issue 30: an array of more than 1,000 elements that was not asked for (the point, the
    nodes) is its shape, min, max, mean and norm (computed here by NumPy); the gradients are
    whole; all of it with --full."""
    rng = np.random.default_rng(1)
    w, x = rng.normal(size=(40, 30)), rng.normal(size=30)
    args = ["eval", "sum((W@x)**2)", "--W", json.dumps(w.tolist()), "--x",
            json.dumps(x.tolist()), "--json", "--no-check"]
    record = json.loads(CliRunner().invoke(cli, args).stdout)
    grad = np.outer(2 * w @ x, x)
    np.testing.assert_allclose(record["gradients"]["W"], grad, rtol=1e-13)
    (node,) = [node for node in record["nodes"] if node["label"] == "W"]
    summary = {"summarised": True, "min": grad.min(), "max": grad.max(),
               "mean": grad.mean(), "norm": np.linalg.norm(grad), "nan": 0, "inf": 0}
    assert node["grad"].pop("shape") == [40, 30]
    assert node["grad"] == pytest.approx(summary, rel=1e-12)
    np.testing.assert_allclose(record["gradients"]["x"], 2 * (w @ x) @ w, rtol=1e-13)
    assert record["point"]["W"]["norm"] == pytest.approx(np.linalg.norm(w), rel=1e-15)
    (node,) = [node for node in record["nodes"] if node["label"] == "W"]
    assert node["value"] == record["point"]["W"] and node["shape"] == [40, 30]
    assert all(not isinstance(n["value"], dict) for n in record["nodes"] if n["label"] != "W")
    whole = json.loads(CliRunner().invoke(cli, [*args, "--full"]).stdout)
    (node,) = [node for node in whole["nodes"] if node["label"] == "W"]
    assert node["value"] == w.tolist() and whole["point"]["W"] == w.tolist()
    np.testing.assert_allclose(whole["gradients"]["W"], grad, rtol=1e-13)
