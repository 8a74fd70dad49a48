"""The per-node table of a program with several outputs or an array output (issue 17): each
output's gradient with respect to every node, against hand-written closed forms, in the
table and in ``--json``'s ``"nodes"``; the scalar single-output table is left as it was."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.limits import MAX_CONTRIBUTION_CELLS


def _by_label(result) -> dict:
    return {row["label"]: row for row in result.node_records()}


def test_scalar_outputs_contributions_are_the_chain_rules():
    x, y = 0.7, 1.3
    result = gradcli.evaluate("u = x*y; f = sin(u); g = u + y**2; f, g", {"x": x, "y": y})
    rows = _by_label(result)
    u = x * y
    assert rows["u"]["gradients"] == {"f": np.cos(u), "g": 1.0}
    assert rows["x"]["gradients"]["f"] == np.cos(u) * y
    np.testing.assert_allclose(rows["y"]["gradients"]["g"], x + 2 * y)
    assert rows["f"]["gradients"] == {"f": 1.0, "g": None}  # g does not use f
    assert rows["y**2"]["gradients"] == {"f": None, "g": 1.0}


def test_array_outputs_contributions_have_output_then_node_shape():
    rng = np.random.default_rng(7)
    w, x = rng.normal(size=(3, 2)), rng.normal(size=2)
    result = gradcli.evaluate("u = W@x; tanh(u)", {"W": w, "x": x})
    rows = _by_label(result)
    u = w @ x
    local = np.diag(1 - np.tanh(u) ** 2)  # d tanh(u) / du
    np.testing.assert_allclose(rows["u"]["gradients"]["tanh(u)"], local, atol=1e-15)
    np.testing.assert_allclose(rows["x"]["gradients"]["tanh(u)"], local @ w, atol=1e-15)
    d_w = np.einsum("ik,l->ikl", local, x)  # d tanh(u)_i / dW_kl = local_ik x_l
    np.testing.assert_allclose(rows["W"]["gradients"]["tanh(u)"], d_w, atol=1e-15)
    # the inputs' rows are the Jacobian's blocks
    np.testing.assert_array_equal(rows["x"]["gradients"]["tanh(u)"],
                                  result.jacobian["tanh(u)"]["x"])


def test_the_table_shows_each_outputs_column():
    done = CliRunner().invoke(cli, ["eval", "f = x*y; g = x + y; f, g", "--x", "2", "--y", "3"])
    lines = done.output.splitlines()
    assert lines[0] == "nodes (each output's gradient with respect to each node)"
    assert lines[2].split() == ["id", "label", "op", "shape", "inputs", "value", "df/dnode",
                                "dg/dnode"]
    assert lines[4].split() == ["#0", "x", "var", "scalar", "2", "3", "1"]
    assert lines[6].split() == ["#2", "f", "mul", "scalar", "#0", "#1", "6", "1", "—"]


def test_json_nodes_gain_each_outputs_gradient():
    done = CliRunner().invoke(cli, ["eval", "softmax(x)", "--x", "[0, 0]", "--json",
                                    "--no-check"])
    record = json.loads(done.output)
    last = record["nodes"][-1]
    assert last["op"] == "softmax" and last["shape"] == [2]
    assert last["gradients"] == {"softmax(x)": [[1.0, 0.0], [0.0, 1.0]]}
    assert record["nodes"][0]["gradients"] == {"softmax(x)": [[0.25, -0.25], [-0.25, 0.25]]}


def test_past_the_limit_contributions_are_left_out_and_said():
    n = int(MAX_CONTRIBUTION_CELLS ** 0.5) + 1  # n outputs x (2n elements of nodes) > limit
    result = gradcli.evaluate("x*2", {"x": np.ones(n)}, check=False)
    assert result.contributions() is None
    assert all(row["gradients"] == {"x*2": None} for row in result.node_records())


def test_the_same_program_evaluated_twice_keeps_each_results_contributions():
    program = gradcli.parse("x**2")
    first = gradcli.evaluate(program, {"x": np.array([1.0, 2.0])}, check=False)
    gradcli.evaluate(program, {"x": np.array([5.0, 7.0])}, check=False)
    np.testing.assert_array_equal(_by_label(first)["x"]["gradients"]["x**2"],
                                  np.diag([2.0, 4.0]))
