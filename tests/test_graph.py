"""The core: the seeds' worked examples, DAG reuse, depth, width, numeric errors."""

from __future__ import annotations

import math
import random

import pytest

import gradcli
from gradcli.engine.graph import Node, backward, forward, nodes_of
from gradcli.engine.ops import OPS, F

SEED = "u = x*W; z = u + b; err = z - t; err*err"
SEED_POINT = {"x": 2.0, "W": 3.0, "b": 1.0, "t": 8.0}


def test_seed_example_by_hand():
    # u = 6, z = 7, err = -1, loss = 1; dL/derr = 2*err = -2 from two uses of err.
    result = gradcli.evaluate(SEED, SEED_POINT)
    assert result.value == 1.0
    assert result.gradients == {"x": -6.0, "W": -4.0, "b": -2.0, "t": 2.0}
    rows = {row.label: row for row in result.node_rows()}
    assert (rows["u"].value, rows["z"].value, rows["err"].value) == (6.0, 7.0, -1.0)
    assert rows["err"].grad == -2.0
    assert result.check.ok
    assert result.check.max_abs_error < 1e-8


def test_seed_single_expression_form():
    result = gradcli.evaluate("(x*W+b-t)**2", SEED_POINT)
    assert (result.value, result.gradients) == (1.0, {"x": -6.0, "W": -4.0, "b": -2.0, "t": 2.0})


def test_dezero_diamond_needs_topological_order():
    # a = x^2 feeds both terms; a plain stack would pass a's gradient on before it is complete.
    result = gradcli.evaluate("a = x**2; a**2 + a**2", {"x": 2.0})
    assert result.value == 32.0
    assert result.gradients["x"] == 64.0
    assert next(r for r in result.node_rows() if r.label == "a").grad == 16.0  # 2*(2a)


def test_gradients_accumulate_over_every_use():
    result = gradcli.evaluate("x*x*x + x", {"x": 2.0})
    assert result.gradients["x"] == 13.0  # 3x^2 + 1


def test_topological_order_is_iterative_and_respects_inputs():
    x = Node.variable("x", 0.5)
    node = x
    for _ in range(50_000):  # far beyond any recursion limit
        node = node.apply(OPS["sin"], node)
    order = nodes_of([node])
    assert len(order) == 50_001 and order[0] is x and order[-1] is node
    position = {id(n): i for i, n in enumerate(order)}
    assert all(position[id(s)] < position[id(n)] for n in order for s in n.inputs)


def test_node_api_builds_the_same_rules_as_the_parser():
    x = Node.variable("x", 0.3)
    y = F.exp(F.sin(x))  # F applied to a node builds a node
    order = nodes_of([y])
    for i, node in enumerate(order):
        node.index = i
    assert forward(order) == pytest.approx(math.exp(math.sin(0.3)))
    backward(order)
    assert x.grad == pytest.approx(math.exp(math.sin(0.3)) * math.cos(0.3))


@pytest.mark.parametrize("depth", [10_000, 100_000])
def test_deep_nesting(depth):
    text = "(" * depth + "x" + "+1)" * depth
    result = gradcli.evaluate(text, {"x": 0.5})
    assert result.value == 0.5 + depth
    assert result.gradients["x"] == 1.0
    assert result.check.ok and result.check.nodes_skipped


def test_deep_function_nesting():
    depth = 10_000
    result = gradcli.evaluate("sin(" * depth + "x" + ")" * depth, {"x": 0.5})
    expected_value, expected_grad = 0.5, 1.0
    for _ in range(depth):
        expected_grad *= math.cos(expected_value)
        expected_value = math.sin(expected_value)
    assert result.value == pytest.approx(expected_value, rel=1e-12)
    assert result.gradients["x"] == pytest.approx(expected_grad, rel=1e-9)


def test_wide_expression_of_100k_nodes():
    rng = random.Random(7)
    count = 100
    coefficients = [rng.uniform(-2, 2) for _ in range(50_000)]
    terms = [f"{c!r}*x{i % count}" for i, c in enumerate(coefficients)]
    point = {f"x{i}": rng.uniform(-1, 1) for i in range(count)}
    result = gradcli.evaluate(" + ".join(terms), point, check=False)
    assert len(result.program.nodes) >= 100_000
    expected = {name: 0.0 for name in point}
    for i, c in enumerate(coefficients):
        expected[f"x{i % count}"] += c
    assert result.value == pytest.approx(sum(c * point[f"x{i % count}"]
                                             for i, c in enumerate(coefficients)), rel=1e-9)
    for name, gradient in expected.items():
        assert result.gradients[name] == pytest.approx(gradient, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(
    ("text", "point", "fragment"),
    [
        ("log(x - 2)", {"x": 2.0},
         "logarithm of a non-positive number in #3 log(x - 2), where x - 2 = 0"),
        ("sqrt(x)", {"x": -1.0}, "square root of a negative number in #1 sqrt(x), where x = -1"),
        ("sqrt(x)", {"x": 0.0}, "derivative of sqrt is not finite"),
        ("y = 1/(x - 2); y", {"x": 2.0}, "division by zero in #4 y"),
        ("exp(exp(exp(10)))", {}, "overflow"),
        ("x**0.5", {"x": -4.0}, "negative base with a non-integer exponent"),
        ("asin(x)", {"x": 1.5}, "outside [-1, 1]"),
        ("asin(x)", {"x": 1.0}, "derivative of asin is not finite"),
        ("x*1e308*10", {"x": 1.0}, "overflow"),
        ("pow(pow(x, 1e308), 1e308)", {"x": 2.0}, "overflow"),
        ("atan2(y, x)", {"x": 0.0, "y": 0.0},
         "derivative of atan2 with respect to its first operand y"),
    ],
)
def test_numeric_errors_name_the_node(text, point, fragment):
    with pytest.raises(gradcli.NumericError) as caught:
        gradcli.evaluate(text, point)
    assert fragment in caught.value.message
    assert caught.value.status == 3 and caught.value.kind == "domain"


def test_an_unused_statement_is_refused_before_asking_for_values():
    with pytest.raises(gradcli.UsageError, match="unused is assigned but the output never"):
        gradcli.evaluate("unused = y*3; x*2", {"x": 1.0})


def test_missing_values_are_listed():
    with pytest.raises(gradcli.UsageError, match="no values for b, t") as caught:
        gradcli.evaluate("(x*W+b-t)**2", {"x": 2.0, "W": 3.0})
    assert "--b VALUE --t VALUE" in caught.value.hint


def test_a_result_keeps_its_own_point_when_the_program_is_evaluated_again():
    program = gradcli.parse("x*x")
    first = gradcli.evaluate(program, {"x": 2.0})
    second = gradcli.evaluate(program, {"x": 3.0})
    assert [row.value for row in first.node_rows()] == [2.0, 4.0]
    assert [row.grad for row in first.node_rows()] == [4.0, 1.0]
    assert [row.value for row in second.node_rows()] == [3.0, 9.0]


def test_the_rows_a_table_shows_have_the_labels_of_the_whole_graph():
    """``node_records(only)`` writes the texts of the rows asked for and of what they are
    written with (texts_of), not of all 10^4 nodes: the same labels as the whole graph's."""
    terms = " + ".join(f"sin(x*{k}) - (y + {k})*x" for k in range(700))
    program = gradcli.parse(f"a = x*y + 1\nb = (a - x)*(a + y)\n{terms} + b*b")
    result = gradcli.evaluate(program, {"x": 0.3, "y": 0.7}, check=False)
    everything = list(result.node_records())
    count = len(everything)
    assert count > 5000
    only = [*range(100), 2500, count - 2, count - 1]
    assert list(result.node_records(only)) == [everything[i] for i in only]
    assert any(len(record["label"]) > 30 for record in everything[-3:])  # long texts, cut
