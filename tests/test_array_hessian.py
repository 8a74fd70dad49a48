"""Hessians and Hessian-vector products of scalar-output array programs (issue 17): closed forms
written here by hand (x'Ax, sum(log x), logsumexp, a least-squares loss), symmetry of the
blocks, H·v against the full Hessian times v, the JSON layout and the size limit."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.limits import MAX_ARRAY_HESSIAN_INPUTS

RNG = np.random.default_rng(23)


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def hessian(program: str, values: dict) -> dict:
    result = gradcli.evaluate(program, values, order=2)
    assert result.hessian.check.ok, result.hessian.check
    return result.hessian.matrix


def test_quadratic_form_is_a_plus_a_transpose():
    a, x = RNG.normal(size=(4, 4)), RNG.normal(size=4)
    blocks = hessian("x'@A@x", {"x": x, "A": a})
    np.testing.assert_allclose(blocks["x"]["x"], a + a.T, rtol=1e-12, atol=1e-12)
    # d²/dx_i dA_jk = δ_ij x_k + δ_ik x_j, and the A-A block is zero (x'Ax is linear in A)
    eye = np.eye(4)
    expected = np.einsum("ij,k->ijk", eye, x) + np.einsum("ik,j->ijk", eye, x)
    np.testing.assert_allclose(blocks["x"]["A"], expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(blocks["A"]["A"], np.zeros((4, 4, 4, 4)))


def test_sum_of_logs_is_diagonal():
    x = RNG.uniform(0.5, 3.0, size=5)
    blocks = hessian("sum(log(x))", {"x": x})
    np.testing.assert_allclose(blocks["x"]["x"], np.diag(-1 / x**2), rtol=1e-12, atol=1e-15)


def test_logsumexp_is_diag_s_minus_s_s_transpose():
    x = RNG.normal(size=6)
    s = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    blocks = hessian("logsumexp(x)", {"x": x})
    np.testing.assert_allclose(blocks["x"]["x"], np.diag(s) - np.outer(s, s), atol=1e-14)


def test_least_squares_in_x_is_two_over_n_w_transpose_w():
    w, b, t, x = (RNG.normal(size=(3, 2)), RNG.normal(size=3), RNG.normal(size=3),
                  RNG.normal(size=2))
    blocks = hessian("mean((W@x + b - t)**2)", {"W": w, "x": x, "b": b, "t": t})
    np.testing.assert_allclose(blocks["x"]["x"], 2 / 3 * w.T @ w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(blocks["b"]["b"], 2 / 3 * np.eye(3), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(blocks["b"]["t"], -2 / 3 * np.eye(3), rtol=1e-12, atol=1e-14)


def test_blocks_are_symmetric_and_scalars_keep_their_shape():
    w, x = RNG.normal(size=(3, 2)), RNG.normal(size=2)
    blocks = hessian("sum(tanh(W@x))*c + c**2*norm(x)", {"W": w, "x": x, "c": 1.5})
    np.testing.assert_allclose(blocks["W"]["x"], np.moveaxis(blocks["x"]["W"], 0, -1),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(blocks["x"]["x"], blocks["x"]["x"].T, rtol=1e-12, atol=1e-14)
    assert np.shape(blocks["c"]["c"]) == () and np.shape(blocks["c"]["W"]) == (3, 2)
    # c only: d²/dc² = 2 norm(x)
    assert blocks["c"]["c"] == pytest.approx(2 * np.linalg.norm(x), rel=1e-12)


def test_hvp_is_the_full_hessian_times_v():
    w, x = RNG.normal(size=(3, 2)), RNG.normal(size=2)
    values = {"W": w, "x": x}
    program = "sum(exp(W@x)) + x'@x*sum(W)"
    full = hessian(program, values)
    v = {"W": RNG.normal(size=(3, 2)), "x": RNG.normal(size=2)}
    result = gradcli.evaluate(program, values, hvp=v)
    assert result.hvp.check.ok and result.hessian is None
    for a in values:
        expected = sum(np.tensordot(full[a][b], v[b], axes=np.ndim(v[b])) for b in values)
        np.testing.assert_allclose(result.hvp.product[a], expected, rtol=1e-11, atol=1e-12)


def test_hvp_of_an_input_left_out_moves_it_by_zero():
    x, y = RNG.normal(size=3), RNG.normal(size=3)
    result = gradcli.evaluate("sum(x*y*x)", {"x": x, "y": y}, hvp={"x": np.ones(3)})
    np.testing.assert_allclose(result.hvp.product["x"], 2 * y, rtol=1e-12)
    np.testing.assert_allclose(result.hvp.product["y"], 2 * x, rtol=1e-12)


def test_json_has_blocks_as_nested_lists_and_their_check():
    found = invoke("eval", "x'@A@x", "--x", "[1, 2]", "--A", "[[1, 2], [3, 4]]", "--hessian",
                   "--json")
    assert found.exit_code == 0, found.output
    record = json.loads(found.output)
    assert record["hessian"]["x"]["x"] == [[2.0, 5.0], [5.0, 8.0]]
    assert np.shape(record["hessian"]["x"]["A"]) == (2, 2, 2)
    assert np.shape(record["hessian"]["A"]["A"]) == (2, 2, 2, 2)
    check = record["hessian_check"]
    assert check["ok"] and set(check["gradients"]) == {"x,x", "x,A", "A,x", "A,A"}
    assert check["gradients"]["x,A"]["checked"] == 8


def test_hvp_json_and_table():
    found = invoke("eval", "sum(log(x))", "--x", "[1, 2, 4]", "--hvp", "x=[1, 1, 1]", "--json")
    record = json.loads(found.output)
    assert found.exit_code == 0
    assert record["hvp"] == {"x": [-1.0, -0.25, -0.0625]}
    assert record["hvp_direction"] == {"x": [1.0, 1.0, 1.0]} and record["hvp_check"]["ok"]
    table = invoke("eval", "sum(log(x))", "--x", "[1, 2, 4]", "--hvp", "x=[1, 1, 1]")
    assert "Hessian-vector product H·v" in table.output and "-0.0625" in table.output


def test_a_direction_given_twice_is_a_usage_error_not_the_last_one():
    """Found by a helper: --hvp x=1 --hvp x=2 used 2 silently, where --x 3 --x 1 is refused."""
    found = invoke("eval", "x**2*y", "--x", "3", "--y", "2", "--hvp", "x=1", "--hvp", "x=2")
    assert found.exit_code == 2 and found.stdout == ""
    assert "--hvp: x is given twice: x=1 and x=2" in found.stderr
    empty = invoke("eval", "x**2", "--x", "1", "--hvp", "x=")  # not a value's range hint
    assert empty.exit_code == 2 and "--hvp: the value of x is ''" in empty.stderr
    assert "a direction is one number or one array" in empty.stderr and "-2:2:9" not in empty.stderr
    both = invoke("eval", "x**2*y", "--x", "3", "--y", "2", "--hvp", "x=1", "--hvp", "y=2",
                  "--json")
    # H = [[2y, 2x], [2x, 0]] at x = 3, y = 2, v = (1, 2)
    assert json.loads(both.stdout)["hvp"] == {"x": 2 * 2 + 2 * 3 * 2, "y": 2 * 3}


def test_above_the_limit_is_a_usage_error_naming_the_size():
    n = MAX_ARRAY_HESSIAN_INPUTS + 1
    found = invoke("eval", "sum(x**3)", "--x", str([1.0] * n), "--hessian")
    assert found.exit_code == 2
    assert f"{n}" in found.output and "--hvp" in found.output
    assert "Traceback" not in found.output


@pytest.mark.parametrize("args, words", [
    (["x*2", "--x", "[1, 2]", "--hessian"], "one scalar output"),
    (["sum(x)", "--x", "[1, 2]", "--hvp", "x=[1, 2, 3]"], "has shape 3"),
    (["sum(x)", "--x", "[1, 2]", "--hvp", "z=[1, 2]"], "no variable z"),
    (["sum(x)", "--x", "[1, 2]", "--hvp", "x=0:1:3"], "not a range"),
    (["sum(outer(X, x))", "--X", "[[1, 2], [3, 4]]", "--x", "[1, 2]", "--hessian"],
     "outer of operands that are not vectors has no form made of array operations"),
    (["sum(x)", "--x", "[1, 2]", "--y", "1:2:3", "--hvp", "x=[1, 0]"], "sweep"),
])
def test_refusals(args, words):
    found = invoke("eval", *args)
    assert found.exit_code == 2 and words in found.output, found.output
