"""gradcli diff refuses early, with the size it would reach, instead of running for minutes."""

from __future__ import annotations

import time

import pytest

import gradcli
from gradcli.api import differentiate
from gradcli.limits import MAX_DERIVATIVES
from gradcli.symbolic import builder as symbolic
from gradcli.symbolic import derivatives


def test_too_many_derivatives_are_refused_with_their_count():
    source = " + ".join(f"x{i}*x{(i + 1) % 20}" for i in range(20))
    started = time.perf_counter()
    with pytest.raises(gradcli.UsageError, match="64,000,000 derivatives") as caught:
        differentiate(source, None, 6)
    assert time.perf_counter() - started < 1.0
    assert f"{MAX_DERIVATIVES:,}" in caught.value.message


def test_a_deep_program_at_a_high_order_is_refused_with_its_estimated_size():
    source = "sin(" * 10_000 + "x" + ")" * 10_000
    started = time.perf_counter()
    with pytest.raises(gradcli.UsageError, match="would take about 7,290,729 graph nodes"):
        differentiate(source, None, 6)
    assert time.perf_counter() - started < 5.0  # parsing only


def test_the_estimate_is_an_upper_bound_for_nested_functions():
    """Growth per order measured on the graphs the estimate is made for."""
    program = gradcli.parse("sin(" * 200 + "x" + ")" * 200)
    for order in (1, 2, 3):
        built = derivatives.differentiate(program, None, order, max_nodes=10**7)
        tree = built.tree
        for _ in range(order - 1):
            tree = tree["x"]
        size = len(gradcli.engine.graph.nodes_of([tree["x"], *built.first.values()]))
        assert size <= len(program.nodes) * derivatives.GROWTH_PER_ORDER**order


def test_the_builder_stops_at_its_node_limit_whatever_the_estimate_said():
    builder = symbolic.Builder(max_nodes=40)
    (output,) = builder.import_graph([gradcli.parse("u = sin(x*y); u*u*u + u").output])
    variables = [builder.variable("x"), builder.variable("y")]
    with pytest.raises(gradcli.UsageError, match="grow past 40 graph nodes"):
        for first in symbolic.gradients(output, variables):
            symbolic.gradients(first, variables)


def test_a_variable_named_twice_in_wrt_is_a_usage_error_not_a_traceback():
    with pytest.raises(gradcli.UsageError, match="--wrt names x more than once"):
        differentiate("x*y", ["x", "x"])


def test_wrt_as_one_string_is_names_separated_by_commas_never_letters():
    assert differentiate("xy*2 + x*y", "xy").texts() == {"xy": "2"}
    assert differentiate("xy*2 + x*y", "x, y").texts() == {"x": "y", "y": "x"}


def test_the_cli_refuses_with_the_size_and_max_nodes_raises_the_limit():
    from click.testing import CliRunner

    from gradcli.cli import cli

    runner = CliRunner()
    refused = runner.invoke(cli, ["diff", "sin(x)*x", "--order", "2", "--max-nodes", "10"])
    assert refused.exit_code == 2 and "about 27 graph nodes" in refused.output
    assert "raise --max-nodes" in refused.output
    allowed = runner.invoke(cli, ["diff", "sin(x)*x", "--order", "2", "--max-nodes", "100"])
    assert allowed.exit_code == 0, allowed.output
    repeated = runner.invoke(cli, ["diff", "x*y", "--wrt", "x,x", "--json"])
    assert repeated.exit_code == 2 and '"--wrt names x more than once"' in repeated.output
    assert "Traceback" not in repeated.output


@pytest.mark.parametrize("shape", ["x=100000", "x=1000000000000", "x=" + "9" * 100,
                                   "x=50x50"])
def test_diff_shapes_past_the_limit_are_refused_before_anything_is_built(shape):
    """Dense Jacobians: 100,000 elements took 6 GB and ended in a traceback."""
    import subprocess
    import sys

    from gradcli.limits import MAX_DIFF_SHAPE_ELEMENTS

    done = subprocess.run([sys.executable, "-m", "gradcli", "diff", "sin(x)", "--shape", shape],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{MAX_DIFF_SHAPE_ELEMENTS:,}" in done.stderr or "too large" in done.stderr
