"""End to end: `gradcli diff`, `gradcli eval --order 2/--hessian`, free variables and --strict."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gradcli.cli import cli


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


def evaluated(text: str, **values: float) -> float:
    flags = [item for name, value in values.items() for item in (f"--{name}", str(value))]
    result = invoke("eval", text, *flags, "--json", "--no-check")
    return json.loads(result.stdout)["value"]


def test_diff_prints_derivatives_that_eval_reads_back():
    result = invoke("diff", "(x*W+b-t)**2", "--wrt", "x,W")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split(" = ", 1)[0] for line in lines] == ["d/dx", "d/dW"]
    point = {"x": 2.0, "W": 3.0, "b": 1.0, "t": 8.0}
    for line, expected in zip(lines, (-6.0, -4.0), strict=True):
        assert evaluated(line.split(" = ", 1)[1], **point) == expected


def test_diff_json_order_two_is_the_hessian():
    result = invoke("diff", "x*y + sin(x)", "--order", "2", "--json")
    record = json.loads(result.stdout)
    assert record == {"expression": "x*y + sin(x)", "order": 2, "derivatives": {
        "x": {"x": "-sin(x)", "y": "1"}, "y": {"x": "1", "y": "0"}},
        "values": {}, "kept_defaults": {},
        "checked": {"points": 3, "entries": 4,
                    "against": "central differences of the reverse-mode gradient",
                    "conventions": [], "unchecked_pieces": []}}


def test_diff_order_one_json_and_expressions_starting_with_minus():
    record = json.loads(invoke("diff", "-x**3", "--json").stdout)
    assert record["derivatives"] == {"x": "-3*x**2"}
    assert invoke("diff", "-x**3", "--x", "2").stdout.strip() == "d/dx = -12"


def test_diff_formats():
    latex = invoke("diff", "x/y", "--wrt", "x", "--format", "latex").stdout
    assert latex.strip() == r"\frac{\partial f}{\partial x} = \frac{1}{y}"
    python = invoke("diff", "x*y", "--format", "python").stdout
    assert python.startswith("import math\n") and "def f(x, y):" in python
    record = json.loads(invoke("diff", "x*y", "--format", "python", "--json").stdout)
    assert record["python"] == python


@pytest.mark.parametrize(("args", "message"), [
    (("diff", "x*y", "--wrt", "z"), "z is not a variable"),
    (("diff", "sum(x*y)", "--shape", "x=2", "--shape", "y=2", "--wrt", "z", "--format",
      "python"), "z is not a variable"),
    (("diff", "sum(log(-x*x - 1))", "--shape", "x=2"), "no sample point found where the"),
    (("diff", "x +"), "parse error"),
    (("diff",), "no expression given"),
    (("diff", "x", "--order", "9"), "9 is not in the range"),
    (("diff", "2*pi"), "the expression has no variables"),
])
def test_diff_errors_are_one_line_usage_errors(args, message):
    result = invoke(*args)
    assert result.exit_code == 2
    assert message in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


def test_eval_hessian_in_table_and_json():
    human = invoke("eval", "x*y + sin(x)", "--x", "1", "--y", "2", "--hessian")
    assert human.exit_code == 0
    assert "Hessian of the output" in human.stdout
    assert "3 second derivatives agree with finite differences of the gradient" in human.stdout
    result = invoke("eval", "x*y + sin(x)", "--x", "1", "--y", "2", "--order", "2", "--json")
    record = json.loads(result.stdout)
    assert record["hessian"] == {"x": {"x": pytest.approx(-0.8414709848078965), "y": 1.0},
                                 "y": {"x": 1.0, "y": 0.0}}
    assert record["hessian_check"]["ok"] is True


def test_eval_hessian_check_failure_and_numeric_error_statuses():
    failed = invoke("eval", "relu(x)**2", "--x", "0", "--hessian", "--json")
    assert failed.exit_code == 1
    assert json.loads(failed.stdout)["hessian_check"]["ok"] is False
    numeric = invoke("eval", "x**1.5", "--x", "0", "--hessian")
    assert numeric.exit_code == 3
    assert "is not finite here in #3 x**0.5, where x = 0" in numeric.stderr


def test_free_variables_give_expressions_and_strict_restores_the_error():
    result = invoke("eval", "(x*W+b-t)**2", "--x", "2", "--W", "3", "--json")
    assert result.exit_code == 0
    record = json.loads(result.stdout)
    assert record["value"] is None and record["gradients"] is None
    assert record["symbolic"]["free"] == ["b", "t"]
    assert record["symbolic"]["value"] == "(b - t + 6)**2"
    assert evaluated(record["symbolic"]["gradients"]["x"], b=1, t=8) == -6.0
    human = invoke("eval", "(x*W+b-t)**2", "--x", "2", "--W", "3")
    assert "value (b - t + 6)**2" in human.stdout and "free variables: b, t" in human.stdout
    strict = invoke("eval", "(x*W+b-t)**2", "--x", "2", "--W", "3", "--strict")
    assert strict.exit_code == 2 and "no values for b, t" in strict.stderr


def test_batch_lines_with_free_variables_and_hessians():
    """Free variables give expressions, but a Hessian is numbers: asked for one (--order 2), a
    line with a free variable is a usage error on that line, not a silent first-order answer."""
    result = invoke("eval", "-", "--x", "1", "--order", "2", stdin="x*y\nx**3\n")
    lines = result.stdout.splitlines()
    assert lines[0].startswith("line 1: usage error: the Hessian needs a value for every "
                               "variable: no value for y")
    assert lines[1] == "line 2: value 1  d/dx 3  d2/dx [6]  ✓"
    assert result.exit_code == 2
    free = invoke("eval", "-", "--x", "1", stdin="x*y\n").stdout.splitlines()
    assert free == ["line 1: value y  d/dx y  d/dy 1  (free: y)  ✓"]  # x = 1 put in, y free
    records = invoke("eval", "-", "--x", "1", "--json", stdin="x*y\n").stdout.splitlines()
    assert json.loads(records[0])["symbolic"]["value"] == "y"


def test_substituted_values_outside_a_domain_are_numeric_errors_as_in_eval():
    for args in (("eval", "log(x)*y", "--x", "-1"), ("diff", "log(x)*y", "--x", "-1")):
        result = invoke(*args)
        assert result.exit_code == 3
        assert result.stderr == ("error: numeric error: logarithm of a non-positive number in "
                                 "#1 log(x), where x = -1\n")  # eval's message, naming the node
    # the numeric path rejects this point as well: d/dy of x**y needs log(x)
    assert invoke("eval", "x**y*z", "--x", "-2", "--y", "3").exit_code == 3
    assert invoke("eval", "x**y*z", "--x", "-2", "--y", "3", "--z", "1").exit_code == 3


# --- the program's own values (x = 2) in diff --------------------------------------------------

DEFAULTS_PROGRAM = "a = 1.5; b = 0.5; sin(a*x) + b*x**2"


def test_diff_keeps_the_programs_own_values_as_symbols_and_says_so():
    from gradcli.api import differentiate

    derivatives = differentiate("x = 2; x**2")
    assert derivatives.texts() == {"x": "2*x"}  # the formula, not its value at the default
    assert (derivatives.kept_defaults, derivatives.used_defaults) == ({"x": 2.0}, {})
    result = invoke("diff", "x = 2; x**2")
    assert (result.exit_code, result.stdout) == (0, "d/dx = 2*x\n")
    assert result.stderr.splitlines()[0] == "note: the program's own x = 2 stays a symbol; " \
        "--defaults substitutes it"


def test_diff_defaults_substitutes_them_after_differentiating_against_sympy():
    sympy = pytest.importorskip("sympy")
    a, b, x = sympy.symbols("a b x")
    expected = sympy.diff(sympy.sin(a * x) + b * x**2, x).subs({a: 1.5, b: 0.5})
    result = invoke("diff", DEFAULTS_PROGRAM, "--defaults")
    assert result.exit_code == 0
    assert result.stderr.splitlines()[0] == "note: substituted the program's own a = 1.5, b = 0.5"
    (line,) = result.stdout.splitlines()  # a and b have values now: --wrt is x alone
    name, text = line.split(" = ", 1)
    assert name == "d/dx" and "a" not in text and "b" not in text
    for point in (-1.3, 0.0, 0.7, 2.5):
        assert evaluated(text, x=point) == pytest.approx(float(expected.subs(x, point)),
                                                         rel=1e-12, abs=1e-12)


def test_given_values_override_the_programs_own_with_or_without_defaults():
    for flags in ([], ["--defaults"]):
        result = invoke("diff", "x = 2; x*y", "--x", "5", *flags, "--json")
        record = json.loads(result.stdout)
        assert record["derivatives"] == {"y": "5"} and record["values"] == {"x": 5.0}
        assert record["kept_defaults"] == {} and result.stderr == ""


def test_diff_json_names_kept_and_substituted_defaults():
    kept = json.loads(invoke("diff", "x = 2; x*y", "--json").stdout)
    assert (kept["derivatives"], kept["values"], kept["kept_defaults"]) == (
        {"x": "y", "y": "x"}, {}, {"x": 2.0})
    used = json.loads(invoke("diff", "x = 2; x*y", "--json", "--defaults").stdout)
    assert (used["derivatives"], used["values"], used["kept_defaults"]) == (
        {"y": "2"}, {"x": 2.0}, {})
