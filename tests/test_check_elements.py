"""One gradient check for scalars and arrays (gradcheck/check.py): a scalar is one element.

The float fast path (``replay.Replayer``) and the element path (``columns.ElementReplayer``) are
the same check: the same verdict fields, the same steps and methods, the same notes.
"""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.engine import arrays
from gradcli.gradcheck.check import GradientCheck, check_gradients
from gradcli.language.parser import parse

POINT = {"x": 0.7, "y": 1.3}
# program -> its gradient in closed form, written here (independent of the engine)
CLOSED_FORMS = {
    "x*x + sin(x)*y": lambda x, y: {"x": 2 * x + math.cos(x) * y, "y": math.sin(x)},
    "exp(x)/y - log(y)*x": lambda x, y: {"x": math.exp(x) / y - math.log(y),
                                         "y": -math.exp(x) / y**2 - x / y},
    "sqrt(x)*tanh(y)": lambda x, y: {"x": math.tanh(y) / (2 * math.sqrt(x)),
                                     "y": math.sqrt(x) / math.cosh(y) ** 2},
}


def _as_arrays(text: str) -> gradcli.Program:
    """``text`` evaluated by the array passes (what a program with an array in it runs on)."""
    program = parse(text)
    program.arrays = True
    arrays.bind(program, POINT)
    arrays.forward(program.nodes)
    arrays.backward(program.nodes)
    return program


@pytest.mark.parametrize("text", CLOSED_FORMS)
@pytest.mark.parametrize("method", ["central", "richardson", "complex"])
def test_a_scalar_program_checked_as_arrays_gets_the_float_verdict(text, method):
    floats = check_gradients(gradcli.evaluate(text, POINT, check=False).program, method=method)
    elements = check_gradients(_as_arrays(text), method=method)
    expected = CLOSED_FORMS[text](**POINT)
    assert floats.ok and elements.ok
    assert set(floats.nodes) == set(elements.nodes)  # the same per-node check
    for name, derivative in expected.items():
        one, other = floats.gradients[name], elements.gradients[name]
        assert type(one) is type(other) is GradientCheck
        assert (one.checked, one.size, one.failed, one.where) == (1, 1, 0, ())
        assert (other.checked, other.size, other.failed, other.where) == (1, 1, 0, ())
        assert (one.method, one.step) == (other.method, other.step)
        assert math.isclose(one.numeric, other.numeric, rel_tol=1e-9)
        assert math.isclose(one.numeric, derivative, rel_tol=1e-6)


def test_the_complex_step_checks_an_array_program_with_a_scalar_variable():
    """A scalar variable's complex forms run on 0-d arrays (NumPy's frompyfunc then gives a
    plain number, once an AttributeError): d/dx sum(sin(x)*W) = cos(x)*sum(W), d/dW = sin(x)."""
    done = CliRunner().invoke(cli, ["eval", "sum(sin(x)*W)", "--x", "2", "--W", "[1, 2]",
                                    "--check-method", "complex", "--json"])
    assert done.exit_code == 0, done.output
    record = json.loads(done.stdout)
    assert math.isclose(record["gradients"]["x"], math.cos(2) * 3, rel_tol=1e-12)
    assert record["gradients"]["W"] == pytest.approx([math.sin(2)] * 2, rel=1e-12)
    assert record["check"]["ok"] and record["check"]["method"] == "complex"


def test_a_failed_scalar_verdict_counts_one_failed_element():
    check = gradcli.evaluate("relu(x)", {"x": 0.0}).check.gradients["x"]
    assert not check.ok and (check.checked, check.size, check.failed) == (1, 1, 1)
    assert check.numeric == pytest.approx(0.5)  # (relu(h) - relu(-h)) / 2h at the kink


@pytest.mark.parametrize(("text", "values"), [
    ("x*3 + (x > 1)", {"x": 1.0}),
    ("sum(x*3 + (x > 1))", {"x": [1.0, 2.0]}),
    ("sum(where(x > 1, x*x, 3*x))", {"x": [1.0, 2.0]}),
])
def test_a_condition_that_a_difference_switches_is_named_for_arrays_as_for_floats(text, values):
    report = gradcli.evaluate(text, values).check
    assert not report.ok
    assert report.boundaries == ["x > 1"]


def test_a_condition_that_does_not_switch_is_not_named():
    report = gradcli.evaluate("sum(where(x > 1, x*x, 3*x))", {"x": [0.5, 2.0]}).check
    assert report.ok and report.boundaries == []


def test_scalar_and_array_gradients_have_the_same_json_fields():
    def fields(*args: str) -> dict:
        done = CliRunner().invoke(cli, ["eval", *args, "--json"])
        assert done.exit_code == 0, done.output
        return json.loads(done.output)["check"]["gradients"]

    scalar = fields("x*x*y", "--x", "2", "--y", "3")
    array = fields("sum(x*x)*y", "--x", "[1, 2]", "--y", "3")
    assert set(scalar["x"]) == set(array["x"]) == set(array["y"])
    assert {k: scalar["x"][k] for k in ("checked", "size", "failed", "where")} == {
        "checked": 1, "size": 1, "failed": 0, "where": []}
    assert scalar["x"]["analytic"] == 12.0 and array["x"]["checked"] == 2


# --- replays through the linear ops (engine/replay.py's Moved) ----------------------------------

@pytest.mark.parametrize(("shapes", "position"), [
    (((3, 4), (4,)), 0), (((3, 4), (4,)), 1), (((3, 4), (4, 5)), 0), (((3, 4), (4, 5)), 1),
    (((4,), (4, 5)), 0), (((4,), (4, 5)), 1), (((4,), (4,)), 0), (((4,), (4,)), 1)])
def test_the_unit_form_of_matmul_is_the_product_with_a_unit_array(shapes, position):
    """Op.unit: one row (or column) of the other operand placed, against NumPy's product with
    the unit array written out."""
    import numpy as np

    from gradcli.engine.ops import OPS

    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal(shape) for shape in shapes)
    moving = (a, b)[position]
    for flat in range(moving.size):
        unit = np.zeros(moving.shape)
        unit.reshape(-1)[flat] = 1.0
        expected = unit @ b if position == 0 else a @ unit
        got = OPS["matmul"].unit(np, position, flat, a, b)
        assert np.shape(got) == np.shape(expected) and np.array_equal(got, expected)


@pytest.mark.parametrize(("text", "moving", "linear"), [
    ("mean((W@x + b - t)**2)", "W", ["W@x", "W@x + b", "W@x + b - t"]),
    ("sum(x*x) + sum(x')", "x", ["x'", "sum(x')"]),
    ("sum(W@W) + tr(W)/2", "W", ["tr(W)", "tr(W)/2"]),
    ("sum(exp(x)*x)", "x", []),
])
def test_the_linear_part_is_the_nodes_that_move_linearly(text, moving, linear):
    """Products with both factors moving (x*x, W@W) and functions (exp) are not linear; a sum,
    a transpose, a trace, a quotient's numerator and what follows only them are."""
    from gradcli.engine.graph import node_text
    from gradcli.gradcheck.columns import ElementReplayer

    values = {"W": [[1.0, 2.0], [3.0, 4.0]], "x": [0.5, -1.0], "b": [1.0, 2.0], "t": [0.0, 1.0]}
    program = gradcli.evaluate(text, values, check=False).program
    replayer = ElementReplayer(program.nodes)
    replayer.aim(program.variables[moving])
    assert sorted(node_text(program.nodes[i]) for i in replayer.linear) == sorted(linear)


@pytest.mark.parametrize("text", ["sum((W@x + b)**2)", "sum(W@x)", "sum((x'@W')**2)"])
def test_columns_moved_through_a_product_match_the_closed_form(text):
    """x's columns in W@x (its elements through matmul's unit form, its directions through
    one product each): the central differences settled are the closed form's v·g, and an
    element whose gradient is made wrong is left to the element-wise check."""
    import numpy as np

    from gradcli.gradcheck.columns import ElementReplayer, central_columns

    rng = np.random.default_rng(3)
    w, x, b = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(3)
    program = gradcli.evaluate(text, {"W": w, "x": x, "b": b}, check=False).program
    closed = (2 * w.T @ (w @ x + b) if "b" in text else w.T @ np.ones(3)
              if "**" not in text else 2 * w.T @ (w @ x))
    node = program.variables["x"]
    replayer = ElementReplayer(program.nodes)
    replayer.aim(node)
    assert replayer.linear
    v = rng.standard_normal(4)
    along = ((v, float(v @ closed)),)
    flats = list(range(4))
    for linear in (replayer.linear, None):
        passed, lines = central_columns(node, replayer.downstream, program.nodes[-1],
                                        replayer.walk.weights(), flats,
                                        1e-6, 1e-9, along, linear)
        assert sorted(passed) == flats and list(lines) == [0]
        assert np.allclose([passed[i].numeric for i in flats], closed, rtol=1e-7, atol=1e-9)
        assert math.isclose(lines[0].numeric, v @ closed, rel_tol=1e-7, abs_tol=1e-9)
    node.grad = np.array(node.grad, dtype=float)
    node.grad[2] += 1e-3
    passed, _ = central_columns(node, replayer.downstream, program.nodes[-1],
                                        replayer.walk.weights(), flats, 1e-6,
                                1e-9, (), replayer.linear)
    assert sorted(passed) == [0, 1, 3]


@pytest.mark.parametrize("text", [
    "sum(log(x) * b + x**2 - 3) + mean(exp(x - t))",  # element-wise of one shape, a scalar
    "sum((x + W) * b) + max(x * 2)",  # x broadcast into W's shape: read whole
    "sum(sqrt(x - 0.5))",  # a column outside the domain: NaN, as the whole replay has it
])
def test_sparse_columns_replay_as_the_whole_columns(text):
    """Columns that move one element each, kept ``Sparse`` through element-wise ops, give the
    outputs and the largest magnitudes of the same columns replayed whole, to the bit."""
    import numpy as np

    from gradcli.gradcheck.column_forms import Sparse, dense
    from gradcli.gradcheck.columns import ElementReplayer, _replay

    rng = np.random.default_rng(7)
    values = {"W": rng.standard_normal((3, 4)), "x": np.array([0.6, 1.5, 0.9, 1.2]),
              "b": rng.standard_normal(4), "t": rng.standard_normal(4)}
    program = gradcli.evaluate(text, values, check=False).program
    node = program.variables["x"]
    replayer = ElementReplayer(program.nodes)
    replayer.aim(node)
    at = np.array([0, 1, 2, 3, 0, 3])
    moved = Sparse(at, np.ravel(node.value)[at] + np.array([0.1, -0.2, 0.3, -0.4, -0.6, 1.0]))
    largest = np.abs(moved.values)
    weights = replayer.walk.weights()
    sparse = _replay({node.index: moved}, replayer.downstream, program.nodes[-1], largest,
                     weights)
    whole = _replay({node.index: dense(node.value, moved)}, replayer.downstream,
                    program.nodes[-1], largest, weights)
    assert sparse is not None and whole is not None
    for got, expected in zip(sparse, whole, strict=True):
        assert np.array_equal(got, expected, equal_nan=True)
    if "sqrt" in text:
        assert np.isnan(sparse[0][4]) and not np.isnan(sparse[0][0])  # 0.6 - 0.6 < 0.5


def test_the_largest_other_magnitude_of_each_column():
    """``others``: per column, the largest |value| but the moved element's (ties, NaN, one
    element), against the maximum taken over the rest directly."""
    import numpy as np

    from gradcli.gradcheck.column_forms import others

    for value in ([3.0, -5.0, 5.0, 1.0], [[2.0, -7.0], [0.5, 7.0]], [4.0, math.nan, 1.0],
                  [-2.5]):
        flat = np.abs(np.ravel(value))
        at = np.arange(flat.size).repeat(2)
        expected = [np.max(np.delete(flat, i), initial=0.0) for i in at]
        assert np.array_equal(others(np.array(value), at), expected, equal_nan=True)
