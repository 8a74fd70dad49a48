"""Many points at once: the vector path equals the scalar path point by point."""

from __future__ import annotations

import pytest

import gradcli
from gradcli.engine.graph import backward, forward
from gradcli.engine.ops import OPS, ROWS
from gradcli.engine.vector import evaluate_vector

np = pytest.importorskip("numpy")

FORMULAS = [
    "(x*W+b-t)**2",
    "sin(x)*exp(-y**2) + log(1 + x**2*y**2)",
    "a = x**2; a**2 + a**2 + relu(x - y) + abs(y) + max(x, y)",
    "sigmoid(x*y) + softplus(y - x) + atan2(y, x + 3) + hypot(x, y)",
]


@pytest.mark.parametrize("text", FORMULAS)
def test_vector_matches_scalar_at_every_point(text):
    program = gradcli.parse(text)
    rng = np.random.default_rng(3)
    columns = {name: rng.uniform(-2, 2, 50) for name in program.variables}
    vector = evaluate_vector(program, columns)
    assert not vector.failed.any()
    for i in range(50):
        point = {name: float(column[i]) for name, column in columns.items()}
        scalar = gradcli.evaluate(gradcli.parse(text), point, check=False)
        assert vector.output[i] == pytest.approx(scalar.value, rel=1e-12, abs=1e-14)
        for name, node in program.variables.items():
            assert vector.grads[node.index][i] == pytest.approx(
                scalar.gradients[name], rel=1e-12, abs=1e-14)


def test_points_with_numeric_errors_are_marked_not_raised():
    program = gradcli.parse("log(x) + sqrt(x)")
    vector = evaluate_vector(program, {"x": np.array([-1.0, 0.0, 1.0, 4.0])})
    assert vector.failed.tolist() == [True, True, False, False]
    assert vector.output[3] == pytest.approx(np.log(4.0) + 2.0)


def test_scalars_and_program_defaults_broadcast():
    program = gradcli.parse("k = 3; k*x + y")
    vector = evaluate_vector(program, {"x": np.array([1.0, 2.0]), "y": 10.0})
    assert vector.output.tolist() == [13.0, 16.0]


@pytest.mark.parametrize("text", ["x + 1/0", "0**y + x", "x + y**0.5", "x + log(y - 1)"])
def test_uniform_values_outside_the_domain_mark_points_instead_of_raising(text):
    # A constant or a scalar column stays one value; it must fail like an array does.
    program = gradcli.parse(text)
    vector = evaluate_vector(program, {"x": np.array([0.0, 1.0]), "y": -8.0 if "**" in text
                                       else 1.0})
    assert vector.failed.all()


# Nodes used more than once (their gradients accumulate), gradients passed through sums unchanged
# (one array shared by several nodes), uniform parts: the backward pass writes products and sums
# in place, and must never write into an array that another node or the caller still holds.
SHARED = [
    "a = x*y; b = a + x; b*b + a*b + sin(a) + b",
    "a = exp(x); a + a + a*a - a/y",
    "u = x + y; v = u*u; (v + u) * (v - u) + 2*v + y",
    "k = 2; a = k*x; a*a + k + a*y + x",
    "x*x*x + y",
]


@pytest.mark.parametrize("text", FORMULAS + SHARED)
def test_every_node_matches_the_scalar_backward_and_the_columns_stay_unchanged(text):
    program = gradcli.parse(text)
    rng = np.random.default_rng(4)
    columns = {name: rng.uniform(-2, 2, 20) for name in program.variables}
    before = {name: column.copy() for name, column in columns.items()}
    vector = evaluate_vector(program, columns, every_node=True)
    for i in range(20):
        program.bind({name: float(column[i]) for name, column in columns.items()})
        forward(program.nodes)
        backward(program.nodes)
        for node in program.nodes:
            assert vector.values[node.index][i] == pytest.approx(node.value, rel=1e-12)
            if node.needs_grad:
                assert vector.grads[node.index][i] == pytest.approx(
                    node.grad, rel=1e-12, abs=1e-14), (text, node)
    for name, column in columns.items():
        assert np.array_equal(column, before[name])


def test_a_gradient_that_overflows_only_when_contributions_are_summed_marks_the_point():
    # Every value and every contribution is finite; the sum of two contributions is not. The
    # in-place sums must raise the overflow flag like a new array would.
    program = gradcli.parse("sin(x)*y + cos(x)*y")  # dx = y*(cos x - sin x): sum in place
    vector = evaluate_vector(program, {"x": np.array([-0.6, -0.6]), "y": np.array([1.0, 1.5e308])})
    assert np.isfinite(vector.output).all()
    assert vector.failed.tolist() == [False, True]
    program = gradcli.parse("x*y*y")  # dy = x*y + x*y at y = 1: one contribution is an operand
    vector = evaluate_vector(program, {"x": np.array([1.0, 1e308]), "y": np.array([1.0, 1.0])})
    assert np.isfinite(vector.output).all()
    assert vector.failed.tolist() == [False, True]
    program = gradcli.parse("1e308*x + 1e308*x + y")  # uniform contributions, array x
    vector = evaluate_vector(program, {"x": np.array([1e-10, 2e-10]), "y": np.array([1.0, 2.0])})
    assert vector.failed.all()


LEAN = [
    *FORMULAS,
    *SHARED,
    "x",  # the output is the variable itself
    "min(x*y, 1) + x",  # x*y overflows, yet the output and both gradients are finite
    "log(x) + y",
    "2**3 + x*y",  # a uniform intermediate
]


@pytest.mark.parametrize("text", LEAN)
def test_dropping_intermediates_keeps_the_results_and_the_failed_points(text):
    program = gradcli.parse(text)
    columns = {name: np.array([1e200, -1.0, 0.0, 0.5, 2.0]) for name in program.variables}
    every = evaluate_vector(program, columns, every_node=True)
    lean = evaluate_vector(program, columns)
    assert np.array_equal(lean.output, every.output, equal_nan=True)
    assert lean.failed.tolist() == every.failed.tolist()
    for node in program.nodes:
        if node.op.name == "var":
            assert np.array_equal(lean.grads[node.index], every.grads[node.index],
                                  equal_nan=True)
            assert np.array_equal(lean.values[node.index], columns[node.name])
        elif node is not program.nodes[-1]:
            assert lean.values[node.index] is None and lean.grads[node.index] is None
    only_values = evaluate_vector(program, columns, gradients=False)
    assert np.array_equal(only_values.output, every.output, equal_nan=True)


def test_an_intermediate_overflow_alone_marks_the_point_in_every_mode():
    program = gradcli.parse("min(x*y, 1) + x")
    columns = {"x": np.array([2.0, 1e200]), "y": np.array([3.0, 1e200])}
    for gradients in (True, False):
        for every_node in (True, False):
            run = evaluate_vector(program, columns, gradients, every_node)
            assert np.isfinite(run.output).all()
            assert run.failed.tolist() == [False, True]


def _row_formula(op):
    """A formula where each operand and the result of ``op`` are intermediate nodes."""
    a, b, c = "(x*y + 0.5)", "(y*y + 0.25)", "(x + 2)"
    a = INSIDE_THE_DOMAIN.get(op.name, a)
    if op.arity == 1:
        inner = f"{op.symbol}{a}" if op.symbol else f"{op.name}({a})"
    elif op.arity == 2:
        inner = f"{a} {op.symbol} {b}" if op.symbol else f"{op.name}({a}, {b})"
    else:
        inner = f"{op.name}({a}, {b}, {c})"
    return f"exp({inner}) * x"


# First operands of _row_formula that the generic one, (x*y + 0.5), would put outside the domain.
INSIDE_THE_DOMAIN = {"acosh": "(x*y + 1.5)", "polygamma": "floor(x*y + 1.5)",
                     "ive": "floor(x*y + 1.5)", "dive": "floor(x*y + 1.5)"}


@pytest.mark.parametrize("name", sorted(op.name for op in ROWS if not op.is_array))
def test_every_row_drops_only_values_its_rules_do_not_read(name):
    # A value dropped although a rule reads it would reach the rule as None and raise.
    program = gradcli.parse(_row_formula(OPS[name]))
    columns = {"x": np.linspace(0.2, 0.9, 7), "y": np.linspace(0.9, 0.3, 7)}
    every = evaluate_vector(program, columns, every_node=True)
    lean = evaluate_vector(program, columns)
    assert np.array_equal(lean.output, every.output)
    assert lean.failed.tolist() == every.failed.tolist()
    for node in program.variables.values():
        assert np.array_equal(lean.grads[node.index], every.grads[node.index])


@pytest.mark.parametrize("gradients", [True, False])
def test_blocks_on_threads_give_the_one_block_result(monkeypatch, gradients):
    """A large evaluation goes a block at a time on every core (vector.BLOCK): the same arrays
    and the same failed points as in one go, whatever block a point falls in."""
    from gradcli.engine import vector

    program = gradcli.parse("log(x) * y + sqrt(x + 0.5) + exp(c * x)")
    x = np.linspace(0.1, 3.0, 1001)
    y = np.linspace(-2.0, 2.0, 1001)
    x[[3, 500, 999]] = [-1.0, -0.7, 800.0]  # log(-1), sqrt(-0.2), exp(800): in three blocks
    given = x.copy()
    columns = {"x": x, "y": y, "c": 1.0}  # c: a uniform column
    whole = evaluate_vector(program, columns, gradients)
    monkeypatch.setattr(vector, "BLOCK", 64)
    monkeypatch.setenv("GRADCLI_JOBS", "3")
    blocks = evaluate_vector(program, columns, gradients)
    assert blocks.size == whole.size == 1001
    assert np.array_equal(blocks.failed, whole.failed)
    assert list(np.flatnonzero(whole.failed)) == [3, 500, 999]
    for ours, theirs in zip(blocks.values, whole.values, strict=True):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            assert np.array_equal(ours, theirs, equal_nan=True)
    assert (blocks.grads is None) == (not gradients)
    for ours, theirs in zip(blocks.grads or (), whole.grads or (), strict=True):
        if ours is not None:
            assert np.array_equal(ours, theirs, equal_nan=True)
    assert np.array_equal(x, given)  # the caller's column is left as it was
