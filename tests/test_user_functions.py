"""A program's own functions (issue 15): ``f(a, b) = a*b + 1; f(x, y) + f(y, x)``.

Each call is inlined, so values and gradients equal the program written out by hand (the
independent answer here, with hand-written closed forms); calls are labelled as written; every
mistake is a named error with its place.
"""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

import gradcli
from gradcli.api import differentiate
from gradcli.cli.base import cli


def test_two_calls_equal_the_program_written_out():
    point = {"x": 2.0, "y": 3.0}
    called = gradcli.evaluate("f(a, b) = a*b + 1; f(x, y) + f(y, x)", point)
    assert called.value == 2 * 2.0 * 3.0 + 2  # 2xy + 2
    assert called.gradients == {"x": 2 * 3.0, "y": 2 * 2.0}
    assert called.check.ok
    written = gradcli.evaluate("(x*y + 1) + (y*x + 1)", point)
    assert written.value == called.value and written.gradients == called.gradients
    computed = [(r.op, r.value, r.grad) for r in called.node_rows() if r.op != "const"]
    assert computed == [(r.op, r.value, r.grad) for r in written.node_rows() if r.op != "const"]


def test_calls_are_labelled_as_written_and_parameters_are_not_inputs():
    program = gradcli.parse("f(a, b) = a*b + 1\nf(x, y) + f( y,\n x )")
    result = gradcli.evaluate(program, {"x": 1.0, "y": 2.0})
    labels = [row.label for row in result.node_rows()]
    assert "f(x, y)" in labels and "f(y, x)" in labels
    assert labels[-1] == "f(x, y) + f(y, x)"
    assert list(program.variables) == ["x", "y"]
    assert program.parameters == {"a": "f", "b": "f"}


def test_a_call_a_statement_names_is_labelled_by_that_name():
    """u = h(x): the node is u, as any statement's node is (it kept the call's label h(x), and
    a check file could not name the output u; a bug hunt)."""
    result = gradcli.evaluate("h(a) = a*a + 1; u = h(x); u*3", {"x": 2.0})
    assert [row.label for row in result.node_rows()][-3:] == ["u", "3", "u*3"]
    jacobian = gradcli.evaluate("h(a) = a*a + 1; u = h(x); v = 2*x; u, v", {"x": 2.0})
    assert list(jacobian.values) == ["u", "v"]


def test_functions_call_earlier_functions_and_use_the_programs_names():
    text = ("k = 3; g(a) = a*a; h(a, b) = g(a) + k*g(b)\n"
            "h(x, sin(y)) + g(h(y, 1))")
    x, y = 0.5, -1.25
    result = gradcli.evaluate(text, {"x": x, "y": y})
    inner = y * y + 3.0
    assert result.value == pytest.approx(x * x + 3 * math.sin(y) ** 2 + inner**2)
    assert result.gradients["x"] == pytest.approx(2 * x)
    assert result.gradients["y"] == pytest.approx(
        6 * math.sin(y) * math.cos(y) + 2 * inner * 2 * y)
    assert result.check.ok


def test_a_function_of_no_parameters_and_one_that_returns_a_parameter():
    result = gradcli.evaluate("two() = 2; same(a) = a; same(x)*two()", {"x": 4.0})
    assert (result.value, result.gradients) == (8.0, {"x": 2.0})


def test_piecewise_inside_a_function_is_masked_at_each_call():
    text = "safe_log(a) = where(a > 0, log(a), 0); safe_log(x) + safe_log(-x)"
    for x in (-2.0, 3.0):
        result = gradcli.evaluate(text, {"x": x})
        assert result.value == pytest.approx(math.log(abs(x)))
        assert result.gradients["x"] == pytest.approx(1 / x)
        assert result.check.ok


def test_diff_of_a_program_with_functions():
    texts = differentiate("cube(a) = a**3; cube(x) + cube(2*x)", ["x"]).texts()
    for x in (-1.5, 0.5, 2.0):
        got = gradcli.evaluate(texts["x"], {"x": x}, check=False).value
        assert got == pytest.approx(3 * x * x + 24 * x * x)


@pytest.mark.parametrize(("text", "message", "column"), [
    ("sin(a) = a; sin(x)", "sin is a built-in function and cannot be redefined", 1),
    ("f(a) = a; f(x, y)", "f takes 1 argument, not 2", 11),
    ("f(a) = g(a); g(b) = b; f(x)", "f calls g before its definition (line 1)", 8),
    ("f(x) + 1\nf(a) = a", "f is called before its definition (line 2)", 1),
    ("f(a) = f(a) + 1; f(x)", "f calls itself", 8),
    # a parameter's mistake is marked under that parameter (found by a helper: under f)
    ("x = 2; f(x) = x*x; f(3)", "the parameter x of f has the name of a variable", 10),
    ("u = y*2; f(u) = u; f(3)", "the parameter u of f has the name of a variable", 12),
    ("f(a, a) = a; f(x, y)", "the parameter a of f is listed twice", 6),
    ("f(a + 1) = a; f(x)", "the parameters of f must be names", 3),
    ("f(b, 2) = b; f(x, 1)", "the parameters of f must be names", 6),
    ("f(b, [1, 2]) = b; f(x, 1)", "the parameters of f must be names", 6),
    ("f(2) = 1; f(x)", "the parameters of f must be names", 3),
    ("f(pi) = 1; f(x)", "pi is a constant and cannot be a parameter", 3),
    ("f(b,\n    c*2) = b; f(x, 1)", "the parameters of f must be names", 5),
    ("f(a) = a; f(a) = 2*a; f(x)", "f is defined twice (first on line 1)", 11),
    ("f = 2; f(a) = a; f(x)", "f is a variable of the program", 8),
    ("f(a) = a; f = 2; f", "f is a function of the program and cannot be assigned", 11),
    ("f(a) = a; f + 1", "f is a function: call it as f(a)", 11),
    ("pi(a) = a; pi(x)", "pi is a constant, not a function name", 1),
])
def test_mistakes_are_named_errors_with_their_place(text, message, column):
    with pytest.raises(gradcli.GradcliError) as caught:
        gradcli.parse(text)
    error = caught.value
    assert message in error.message
    assert error.hint and error.column == column and error.source_line is not None
    assert error.status == gradcli.ExitStatus.USAGE


def test_a_function_that_grows_past_the_node_limit_is_a_usage_error():
    lines = ["f0(a) = a + 1"] + [f"f{k}(a) = f{k - 1}(a) * f{k - 1}(a + 1)" for k in range(1, 40)]
    with pytest.raises(gradcli.UsageError, match="more than 1,000 nodes"):
        gradcli.parse("\n".join([*lines, "f39(x)"]), max_nodes=1000)


def invoke(*args: str, stdin: str | None = None):
    result = CliRunner().invoke(cli, list(args), input=stdin)
    assert "Traceback" not in result.stdout + result.stderr
    return result


def test_cli_value_for_a_parameter_is_a_usage_error():
    done = invoke("eval", "f(a) = a*2; f(x)", "--x", "1", "--a", "3")
    assert done.exit_code == 2
    assert "a is a parameter of the program's function f, not an input" in done.stderr


def test_cli_json_graph_and_batch_label_calls():
    done = invoke("eval", "f(a, b) = a*b + 1; f(x, y) + f(y, x)", "--x", "2", "--y", "3",
                  "--json")
    labels = [node["label"] for node in json.loads(done.stdout)["nodes"]]
    assert labels.count("f(x, y)") == 1 and labels.count("f(y, x)") == 1
    dot = invoke("graph", "f(a) = a*a; f(x) + 1", "--format", "dot").stdout
    assert "f(x)" in dot
    batch = invoke("eval", "-", "--x", "2", "--json", stdin="g(a) = a**2; g(x)\ng(x)\n")
    first, second = (json.loads(line) for line in batch.stdout.splitlines())
    assert first["value"] == 4.0 and second["error"]["message"].startswith("unknown function g")


def test_parsing_a_definition_is_linear_in_its_parameters():
    """8 times the parameters take about 8 times as long (a list scan per parameter made it
    64: 40,000 parameters took 20 s)."""
    import time

    from gradcli.language.parser import parse

    def seconds(count: int) -> float:
        names = [f"a{i}" for i in range(count)]
        text = (f"f({', '.join(names)}) = {' + '.join(names)}\n"
                f"f({', '.join('1' for _ in names)})")
        started = time.perf_counter()
        program = parse(text)
        assert len(program.nodes) == 2 * count - 1  # the ones and the sums
        return time.perf_counter() - started

    seconds(1000)  # warm up
    assert seconds(40_000) < 20 * seconds(5_000) + 1
