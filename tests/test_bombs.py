"""Resource bombs end fast with a clear status; the limits in ``gradcli.limits`` hold."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.limits import (
    CHECK_BUDGET,
    MAX_NODES,
    REPLAY_CHECK_FACTOR,
    VECTOR_CHECK_FACTOR,
    max_chars,
)


def run_json(*args: str):
    result = CliRunner().invoke(cli, ["eval", "--json", *args])
    return result, json.loads(result.stdout.splitlines()[0])


@pytest.mark.parametrize(
    ("args", "status", "says"),
    [
        (["9**9**9"], 3, "overflow"),
        (["exp(exp(exp(10)))"], 3, "overflow"),
        (["pow(pow(x, 1e308), 1e308)", "--x", "2"], 3, "overflow"),
        # at x = 1 the value is 1, but the gradient 1e308 * 1e308 is not finite
        (["pow(pow(x, 1e308), 1e308)", "--x", "1"], 3, "gradient"),
        (["1e999 * x", "--x", "1"], 2, "too large for a float"),
        (["x / (x - x)", "--x", "1"], 3, "division by zero"),
        (["exp(x) * exp(x) * exp(x)", "--x", "300"], 3, "overflow"),
    ],
)
def test_numeric_bombs_end_at_once_with_a_clear_status(args, status, says):
    start = time.monotonic()
    result, record = run_json(*args)
    assert time.monotonic() - start < 5
    assert result.exit_code == status
    assert says in record["error"]["message"]
    assert "Traceback" not in result.stderr


def test_100k_nested_parentheses_and_unary_minus():
    depth = 100_000
    nested = gradcli.evaluate("(" * depth + "x" + ")" * depth, {"x": 0.5}, check=False)
    assert nested.value == 0.5 and nested.gradients["x"] == 1.0
    negated = gradcli.evaluate("-" * (depth + 1) + "x", {"x": 0.5}, check=False)
    assert negated.value == -0.5 and negated.gradients["x"] == -1.0  # an odd number of signs


def test_a_very_long_name_is_one_variable():
    name = "v" * 1_000_000
    result = gradcli.evaluate(f"{name} * {name}", {name: 3.0})
    assert result.gradients[name] == 6.0


def test_node_limit_is_a_usage_error_with_where_and_a_hint():
    result, record = run_json("x" + "+x" * 100, "--x", "1", "--max-nodes", "50")
    assert result.exit_code == 2
    error = record["error"]
    assert error["kind"] == "usage" and "more than 50 nodes" in error["message"]
    assert "--max-nodes" in error["hint"]
    fits, _ = run_json("x" + "+x" * 100, "--x", "1", "--max-nodes", "101")
    assert fits.exit_code == 0


def test_an_overlong_program_is_refused_before_parsing():
    start = time.monotonic()
    with pytest.raises(gradcli.UsageError, match="longer than"):
        gradcli.parse("x+" * (max_chars() // 2 + 1) + "x")
    assert time.monotonic() - start < 1
    assert max_chars() == 8 * MAX_NODES


def test_many_distinct_variables_are_checked_up_to_the_budget():
    count = 20_000
    names = [f"v{i}" for i in range(count)]
    start = time.monotonic()
    result = gradcli.evaluate("+".join(names), dict.fromkeys(names, 1.0))
    assert time.monotonic() - start < 20
    check = result.check
    assert all(result.gradients[name] == 1.0 for name in names)
    assert check.ok and check.unchecked  # unchecked is not failed
    assert set(check.gradients) | set(check.unchecked) == set(names)
    # The vectorised pass's share (every node after an input) and the replays' (the nodes an
    # input affects: here half of those after it, the adds alternating with the inputs).
    spent = sum(2 * (len(result.program.nodes) - result.program.variables[n].index)
                for n in check.gradients)
    assert spent <= CHECK_BUDGET * (VECTOR_CHECK_FACTOR + 2 * REPLAY_CHECK_FACTOR)


def test_the_first_variable_is_checked_whatever_the_budget():
    report = gradcli.evaluate("x*y", {"x": 2, "y": 3}, check=False).program
    result = gradcli.gradcheck.check.check_gradients(report, budget=0)
    assert list(result.gradients) == ["x"] and result.unchecked == ["y"]


def test_many_missing_names_give_a_short_message():
    names = [f"v{i}" for i in range(5_000)]
    with pytest.raises(gradcli.UsageError) as caught:
        gradcli.evaluate("+".join(names))
    assert "and 4,990 more" in caught.value.message
    assert len(caught.value.one_line()) < 500


def test_unchecked_variables_show_in_json_and_for_people():
    names = [f"v{i}" for i in range(6000)]
    args = ["+".join(names), *(f"--{n}=1" for n in names)]
    result, record = run_json(*args)
    assert result.exit_code == 0
    assert record["check"]["unchecked"] and record["check"]["ok"] is True
    human = CliRunner().invoke(cli, ["eval", *args])
    assert "variables unchecked" in human.stdout
    assert "more variables (--json lists all)" in human.stdout


@pytest.mark.slow
def test_a_million_node_expression_works():
    text = "-" * (MAX_NODES - 1) + "x"  # exactly at the limit; one variable: within budget
    result = gradcli.evaluate(text, {"x": 0.5})
    assert len(result.program.nodes) == MAX_NODES
    assert result.gradients["x"] == -1.0 and result.check.ok
    with pytest.raises(gradcli.UsageError, match="more than 1,000,000 nodes"):
        gradcli.parse("-" + text)


@pytest.mark.parametrize(("expression", "value"), [("-" * 101 + "x", -3.0), ("--(x)", 3.0),
                                                  ("---x**2", -9.0)])
def test_many_leading_minus_signs_on_the_command_line_are_an_expression(expression, value):
    result, record = run_json(expression, "--x", "3")
    assert result.exit_code == 0 and record["value"] == value


def test_an_unknown_option_is_still_a_usage_error():
    result = CliRunner().invoke(cli, ["eval", "x", "--x", "1", "--no-such-flag"])
    assert result.exit_code == 2 and "--no-such-flag" in result.output
