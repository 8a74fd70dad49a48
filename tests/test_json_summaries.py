"""Issue 30: ``--json`` scales. Every array of a record past NumPy's print threshold (1,000
elements) is its summary, the same in one program, a batch (in process and in workers) and a
Jacobian record; ``--full`` writes everything; the summary's numbers are NumPy's own."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gradcli.cli import cli
from gradcli.gradcheck.evaluation import EvalSettings
from gradcli.output.records import JSON_SHOWN_ELEMENTS, array_summary, json_array
from gradcli.runs import batch


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=6),
                  elements=st.floats(allow_nan=True, allow_infinity=True, width=64)))
@example(np.array([0.0, 5e-324]))
def test_summary_is_numpys_statistics_of_the_finite_elements(array):
    summary = array_summary(array)
    finite = array[np.isfinite(array)]
    assert summary["shape"] == list(array.shape) and summary["summarised"] is True
    assert summary["nan"] == np.isnan(array).sum() and summary["inf"] == np.isinf(array).sum()
    if finite.size == 0:
        assert [summary[key] for key in ("min", "max", "mean", "norm")] == [None] * 4
        return
    exact = [Fraction(v) for v in finite.ravel().tolist()]  # no rounding, no overflow
    assert summary["min"] == min(exact) and summary["max"] == max(exact)
    largest = max(abs(v) for v in exact)  # a sum's rounding is relative to its largest term
    # ... and no float is nearer a mean than half the spacing of subnormals: [0, 5e-324] has
    # the mean 2.5e-324, which is 0.0 as a float (hypothesis found it)
    allowed = largest * Fraction(1e-12) + Fraction(math.ulp(0.0)) / 2
    assert abs(Fraction(summary["mean"]) - sum(exact) / len(exact)) <= allowed
    assert summary["norm"] == pytest.approx(math.hypot(*finite.ravel().tolist()), rel=1e-12)


def test_threshold_is_numpys():
    """Up to the threshold an array is its nested lists (nothing changes for small programs),
    past it a summary, with ``full`` always the lists; a number stays a number."""
    assert np.get_printoptions()["threshold"] == JSON_SHOWN_ELEMENTS
    assert json_array(np.arange(1000.0)) == list(range(1000))
    assert json_array(np.arange(1001.0))["shape"] == [1001]
    assert json_array(np.arange(1001.0), full=True) == list(range(1001))
    assert json_array(2.5) == 2.5 and json_array(np.float64(2.5)) == 2.5


@pytest.fixture(scope="module")
def a1(tmp_path_factory):
    """A1 of issue 30, W 1000x1000, from .npy files."""
    folder = tmp_path_factory.mktemp("a1")
    rng = np.random.default_rng(30)
    arrays = {"W": rng.normal(size=(1000, 1000)) / 30, "x": rng.normal(size=1000),
              "b": rng.normal(size=1000), "t": rng.normal(size=1000)}
    for name, array in arrays.items():
        np.save(folder / f"{name}.npy", array)
    args = [item for name in arrays for item in (f"--{name}", str(folder / f"{name}.npy"))]
    return arrays, args


def test_a1_json_has_the_gradients_whole_and_the_rest_summarised(a1):
    arrays, args = a1
    out = invoke("eval", "mean((W@x + b - t)**2)", *args, "--json")
    assert out.exit_code == 0, out.output
    assert len(out.stdout) < 30_000_000  # 87 MB with --full: every node's value and gradient
    record = json.loads(out.stdout)
    w, x, b, t = (arrays[name] for name in "Wxbt")
    r = w @ x + b - t  # d/dr mean(r**2) = 2r/n
    g = 2 * r / r.size
    assert record["value"] == pytest.approx(np.mean(r * r), rel=1e-13)
    np.testing.assert_allclose(record["gradients"]["x"], w.T @ g, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(record["gradients"]["b"], g, rtol=1e-12)
    np.testing.assert_allclose(record["gradients"]["t"], -g, rtol=1e-12)
    np.testing.assert_allclose(record["gradients"]["W"], np.outer(g, x), rtol=1e-12, atol=1e-300)
    assert record["point"]["W"]["norm"] == pytest.approx(np.linalg.norm(w), rel=1e-12)
    product = record["nodes"][2]  # W@x, an intermediate of 1,000 elements: whole
    np.testing.assert_allclose(product["value"], w @ x, rtol=1e-10, atol=1e-12)
    assert record["nodes"][0]["value"]["shape"] == [1000, 1000]  # W itself: its summary
    assert record["check"]["ok"] is True


def test_batch_records_follow_the_same_rule_in_workers(monkeypatch):
    """The same records from this process and from forked workers; --full in both."""
    x = np.linspace(-1, 1, 1200)
    values = {"x": x}
    lines = ["sum(x*x)", "sum(sin(x))"] * 3
    monkeypatch.setattr(batch, "SERIAL_LINES", 2)  # the rest go to workers
    for full in (False, True):
        run = EvalSettings(check=False, full=full)
        here = [line.text for line in batch.json_lines(lines, values, run, jobs=1)]
        spread = [line.text for line in batch.json_lines(lines, values, run, jobs=2)]
        assert here == spread
        record = json.loads(here[1])
        node = record["nodes"][1]  # sin(x)
        if full:
            np.testing.assert_allclose(node["value"], np.sin(x), rtol=1e-15)
            assert record["point"]["x"] == x.tolist()
        else:
            assert node["value"]["max"] == pytest.approx(np.sin(1.0), rel=1e-15)
            assert node["grad"]["min"] == node["grad"]["max"] == 1.0
            assert record["nodes"][0]["grad"]["min"] == pytest.approx(np.cos(1.0), rel=1e-15)
            np.testing.assert_allclose(record["gradients"]["x"], np.cos(x), rtol=1e-15)


def test_batch_command_full_reaches_the_records():
    x = json.dumps(np.arange(1001.0).tolist())
    short = json.loads(invoke("eval", "-", "--x", x, "--json", "--no-check",
                              stdin="sum(x)\n").stdout)
    whole = json.loads(invoke("eval", "-", "--x", x, "--json", "--no-check", "--full",
                              stdin="sum(x)\n").stdout)
    assert short["point"]["x"]["shape"] == [1001] and short["point"]["x"]["max"] == 1000.0
    assert short["gradients"]["x"] == whole["gradients"]["x"] == [1.0] * 1001
    assert whole["point"]["x"] == np.arange(1001.0).tolist()


def test_jacobian_record_writes_its_blocks_whole():
    rng = np.random.default_rng(3)
    w = rng.normal(size=(20, 30))
    args = ["eval", "W@x", "--W", json.dumps(w.tolist()), "--x", json.dumps([1.0] * 30),
            "--json", "--no-check"]
    record = json.loads(invoke(*args).stdout)
    (output,) = record["outputs"]
    np.testing.assert_allclose(record["outputs"][output], w.sum(axis=1), rtol=1e-13)
    block = np.array(record["jacobian"][output]["W"])  # d(Wx)_i/dW_jk = [i == j] x_k
    np.testing.assert_array_equal(block, np.einsum("ij,k->ijk", np.eye(20), np.ones(30)))
    np.testing.assert_allclose(record["jacobian"][output]["x"], w, rtol=1e-13)


def test_batch_lines_summarise_gradients_as_the_tables_do():
    x = np.arange(20.0) / 7
    given = ["--x", json.dumps(x.tolist()), "--digits", "3", "--no-check"]
    short = invoke("eval", "-", *given, stdin="sum(x*x)\n").stdout
    low, high = f"{2 * x.min():.3g}", f"{2 * x.max():.3g}"
    assert f"d/dx [{low}, 0.286, 0.571, …, 4.86, 5.14, {high}] min {low}, max {high}" in short
    whole = invoke("eval", "-", *given, "--full", stdin="sum(x*x)\n").stdout
    assert "d/dx [" + ", ".join(f"{v:.3g}" for v in 2 * x) + "]" in whole


def test_the_hessian_asked_for_is_written_whole():
    """--hessian of 40 inputs: 1,600 entries, past the summary threshold, but asked for."""
    x = np.linspace(-2, 2, 40)
    out = invoke("eval", "sum(x*x*x)", "--x", json.dumps(x.tolist()), "--hessian", "--json",
                 "--no-check")
    record = json.loads(out.stdout)
    np.testing.assert_allclose(record["hessian"]["x"]["x"], np.diag(6 * x), rtol=1e-15)
    assert record["point"]["x"] == x.tolist()  # 40 elements: under the threshold
