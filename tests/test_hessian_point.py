"""An array program's Hessian and H·v are checked at the point given (issue 29): each input
element is stepped by its own eps^(1/3) * max(1, |value|), with one-sided differences at a
domain edge, as the gradient check and the Hessian of a program of numbers do. Before, one
step scaled by the largest input moved every element: near a domain edge (log at 1e-7, or a
small x beside a large W) the check evaluated the program outside the domain and the whole
``eval`` failed, or it crossed a piece's boundary. Answers: closed forms written here and HIPS
autograd (test-only)."""

from __future__ import annotations

import ast
import pathlib

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.gradcheck import hessian as hessian_module

SOURCE = pathlib.Path(hessian_module.__file__)


def _blocks(program: str, values: dict, **settings) -> gradcli.Result:
    result = gradcli.evaluate(program, values, order=2, **settings)
    assert result.hessian.check.ok, result.hessian.check
    return result


def test_log_next_to_zero_is_checked_where_it_is_defined():
    x = np.array([1e-7, 1.0, 3.0])
    result = _blocks("sum(log(x))", {"x": x})
    np.testing.assert_allclose(result.hessian.matrix["x"]["x"], np.diag(-1 / x**2), rtol=1e-12)
    assert result.hessian.check.gradients["x,x"].checked == 9


def test_a_small_input_beside_a_large_one_keeps_its_own_step():
    x, w = np.array([1e-3, 2e-3]), np.array([1e6, 1.0])
    result = _blocks("sum(log(x)) + sum(W*W)", {"x": x, "W": w})
    blocks = result.hessian.matrix
    np.testing.assert_allclose(blocks["x"]["x"], np.diag(-1 / x**2), rtol=1e-12)
    np.testing.assert_array_equal(blocks["W"]["W"], 2 * np.eye(2))
    np.testing.assert_array_equal(blocks["x"]["W"], np.zeros((2, 2)))


def test_a_piece_boundary_next_to_the_point_is_not_crossed():
    # x**3 for x > 0.001, else 0; the point is 1e-5 above the boundary and W is 1e4: a step
    # scaled by W (6e-2) would mix both pieces, x's own step (6e-6) stays in one
    x, w = np.array([0.00101, 0.5]), np.array([1e4])
    result = _blocks("sum(where(x > 0.001, x**3, 0)) + sum(W)", {"x": x, "W": w})
    np.testing.assert_allclose(result.hessian.matrix["x"]["x"], np.diag(6 * x), rtol=1e-12)


def test_hvp_near_a_domain_edge_moves_no_element_past_its_own_step():
    x, v = np.array([1e-7, 2.0]), np.array([1.0, 1.0])
    result = gradcli.evaluate("sum(log(x))", {"x": x}, hvp={"x": v})
    assert result.hvp.check.ok, result.hvp.check
    np.testing.assert_allclose(result.hvp.product["x"], -v / x**2, rtol=1e-12)


def test_the_cli_answers_at_the_point_with_status_0():
    found = CliRunner().invoke(cli, ["eval", "sum(log(x))", "--x", "[1e-7, 1]", "--hessian",
                                     "--json"])
    assert found.exit_code == 0, found.output
    assert "-99999999999999.98" in found.output or "-100000000000000.0" in found.output


def _autograd_hessian(f, point: np.ndarray) -> np.ndarray:
    return autograd.hessian(f)(point)


@pytest.mark.parametrize("program, f, point", [
    ("sum(log(x)*x)", lambda x: anp.sum(anp.log(x) * x), [1e-6, 0.3, 5.0]),
    ("sum(sqrt(x))**2", lambda x: anp.sum(anp.sqrt(x)) ** 2, [1e-8, 2.0, 1e5]),
    ("logsumexp(x*x)", lambda x: anp.log(anp.sum(anp.exp(x * x))), [-1.0, 0.0, 1e-3]),
    ("sum(tanh(x))*prod(x)", lambda x: anp.sum(anp.tanh(x)) * anp.prod(x), [3.0, -2.0, 1e-4]),
])
def test_hessians_and_hvps_agree_with_autograd(program, f, point):
    x = np.array(point)
    expected = _autograd_hessian(f, x)
    result = _blocks(program, {"x": x})
    np.testing.assert_allclose(result.hessian.matrix["x"]["x"], expected, rtol=1e-9,
                               atol=1e-12)
    v = np.array([1.0, -0.5, 2.0])
    hvp = gradcli.evaluate(program, {"x": x}, hvp={"x": v})
    assert hvp.hvp.check.ok, hvp.hvp.check
    np.testing.assert_allclose(hvp.hvp.product["x"], expected @ v, rtol=1e-9, atol=1e-12)


def test_numbers_and_arrays_of_shape_unit_get_the_same_hessian_and_verdict():
    scalar = _blocks("log(x)*y + y**3", {"x": 1e-7, "y": 2.0})
    array = _blocks("sum(log(x))*y + y**3", {"x": [1e-7], "y": 2.0})
    for a, b, expected in [("x", "x", -2.0 / 1e-14), ("x", "y", 1e7), ("y", "y", 12.0)]:
        assert scalar.hessian.matrix[a][b] == pytest.approx(expected, rel=1e-12)
        assert np.ravel(array.hessian.matrix[a][b])[0] == pytest.approx(expected, rel=1e-12)
    assert set(scalar.hessian.check.gradients) == set(array.hessian.check.gradients)


def test_a_wrong_second_derivative_fails_the_check(monkeypatch):
    true_product = hessian_module.GradientGraphs.product

    def off_by_a_little(self, direction):
        found = true_product(self, direction)
        return {name: value * (1 + 1e-3) for name, value in found.items()}

    monkeypatch.setattr(hessian_module.GradientGraphs, "product", off_by_a_little)
    x = np.array([0.5, 2.0])
    result = gradcli.evaluate("sum(x**4)", {"x": x}, order=2, hvp={"x": [1.0, 0.0]})
    check = result.hessian.check.gradients["x,x"]
    assert not result.hessian.check.ok and check.failed == 2 and check.checked == 4
    assert check.where in {(0, 0), (1, 1)} and not result.hvp.check.ok
    assert result.status == gradcli.ExitStatus.CHECK_FAILED


def test_the_hessian_module_imports_neither_the_check_nor_evaluation():
    """The circle check <-> hessian <-> evaluation is broken here: the check's parts come in
    as a ``Checking`` (imports inside functions count)."""
    imported = {node.module for node in ast.walk(ast.parse(SOURCE.read_text()))
                if isinstance(node, ast.ImportFrom)}
    assert not {m for m in imported if m and m.startswith("gradcli.gradcheck.")} - {
        "gradcli.gradcheck.steps"}


def test_hvp_of_a_scalar_program_without_every_value_names_hvp_not_arrays():
    from click.testing import CliRunner

    from gradcli.cli import cli

    done = CliRunner().invoke(cli, ["eval", "x**3*y", "--x", "2", "--hvp", "x=1"])
    assert done.exit_code == 2
    assert "no value for y: H·v (--hvp) needs a value for every variable" in done.stderr
    assert "array" not in done.stderr


def test_a_gradient_formula_without_a_value_is_named_as_the_formula_not_the_program():
    """x**y at x = 0, y = 2: the gradient is (0, 0), but d/dy's formula x**y*log(x) has no
    value; the error named '#3 log(x)', a node x**y does not have (found by a helper)."""
    assert gradcli.evaluate("x**y", {"x": 0.0, "y": 2.0}).gradients == {"x": 0.0, "y": 0.0}
    runner = CliRunner()
    for args in (["eval", "x**y", "--x", "0", "--y", "2", "--hessian"],
                 ["diff", "x**y", "--x", "0", "--y", "2", "--order", "2"]):
        done = runner.invoke(cli, args)
        assert done.exit_code == 3, done.output
        assert ("the second derivatives by y differentiate the gradient's formula "
                "d/dy = x**y*log(x), which has no value here: logarithm of a non-positive "
                "number") in done.output
        assert "gradcli eval gives it" in done.output
