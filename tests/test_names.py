"""A name followed by ``(`` is a call; any other use is a variable (issue 25).

Every function name of the language -- each row of both op tables and every alias -- is used as
a variable on every surface (alone, assigned, given with ``--NAME``, in a check file, in a
batch, in ``diff`` and its exports, the session, completion, ``graph``), and called in the same
run, so that a function added to the table can never again break a program that used its name.
The answers are written here by hand: ``NAME*x + 1`` at NAME = 0.5, x = 2 is 2 with gradients 2
and 0.5.
"""

from __future__ import annotations

import json
import math
import re

import pytest
from click.testing import CliRunner
from test_ops import _cases, _spelled

import gradcli
from gradcli.cli import cli
from gradcli.engine.ops import CALLS, FUNCTION_NAMES, FUNCTIONS, ROWS
from gradcli.errors import GradcliNameError

# Every name a call can use: the table's functions (element-wise and array) and their aliases.
NAMES = sorted(FUNCTION_NAMES)
# The array functions by name (max and min: the reductions).
ON_ARRAYS = {name: op for name, rows in CALLS.items() for op in rows if op.is_array}


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


def _call(name: str) -> str:
    """A call of ``name`` in the domain of its function (the op tests' first point), with a
    number as its value: an array function's result is summed."""
    if name in FUNCTIONS:
        op = FUNCTIONS[name]
        return f"{name}({', '.join(repr(v) for v in _cases(op.name)[0])})"
    op = ON_ARRAYS[name]
    if op.constant_args:
        return f"sum({name}(2))"
    if op.arity == 2:
        return f"sum({name}([1.5, 0.5], [0.25, 2]))"
    return f"sum({name}([[1.5, 0.5], [0.25, 2]]))"


def _called_value(name: str) -> float:
    """What ``_call(name)`` computes, through the function's canonical spelling (the row's
    own name and its operators: ``x ** y`` for pow), or NumPy for an array function."""
    if name in FUNCTIONS:
        op = FUNCTIONS[name]
        return gradcli.evaluate(_spelled(op.name), dict(zip("xyz", _cases(op.name)[0],
                                                            strict=False))).value
    import numpy as np

    m, u, v = np.array([[1.5, 0.5], [0.25, 2]]), np.array([1.5, 0.5]), np.array([0.25, 2])
    e = np.exp(m - m.max(axis=-1, keepdims=True))
    return float({
        "det": np.linalg.det(m), "logdet": np.log(np.linalg.det(m)), "inv": np.linalg.inv(m).sum(),
        "tr": np.trace(m), "sum": m.sum(), "mean": m.mean(), "prod": m.prod(), "max": m.max(),
        "min": m.min(), "norm": np.sqrt((m * m).sum()), "norm1": np.abs(m).sum(),
        "logsumexp": np.log(np.exp(m).sum()), "dot": u @ v, "outer": np.outer(u, v).sum(),
        "softmax": (e / e.sum(axis=-1, keepdims=True)).sum(),
        "log_softmax": (m - np.log(np.exp(m).sum(axis=-1, keepdims=True))).sum(),
        "eye": 2.0, "ones": 2.0, "zeros": 0.0}[name])


def test_the_names_cover_every_row_and_alias():
    rows = {op.name for op in ROWS if op.is_function}
    aliases = {alias for op in ROWS for alias in op.aliases}
    assert rows | aliases | {"pow"} == set(NAMES) and set(ON_ARRAYS) <= set(NAMES)
    assert {"beta", "gamma", "sign", "mean", "norm", "dot", "outer", "sum", "min", "max", "mod",
            "round", "eq", "lt", "logit", "elu", "trunc", "square"} <= set(NAMES) | {"eq", "lt"}


@pytest.mark.parametrize("name", NAMES)
def test_every_function_name_is_a_variable_unless_called(name):
    # alone, given a value
    result = gradcli.evaluate(f"{name}*x + 1", {name: 0.5, "x": 2.0})
    assert result.value == 2.0 and result.gradients == {name: 2.0, "x": 0.5}
    assert result.check.ok
    # assigned in the program
    result = gradcli.evaluate(f"{name} = 0.5; {name}*x", {"x": 2.0})
    assert result.value == 1.0 and result.gradients == {name: 2.0, "x": 0.5}
    # a parameter of the program's own function
    result = gradcli.evaluate(f"f({name}) = {name}**2; f(x)", {"x": 3.0})
    assert (result.value, result.gradients) == (9.0, {"x": 6.0})
    # and the function itself, called: the same number as its canonical spelling gives
    called = gradcli.evaluate(f"{_call(name)}*y", {"y": 1.0})
    assert float(called.value) == pytest.approx(_called_value(name), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("name", NAMES)
def test_given_on_the_command_line_and_the_bare_name_without_a_value(name):
    done = run("eval", f"{name}*x + 1", f"--{name}", "0.5", "--x", "2", "--json")
    assert done.exit_code == 0, done.output
    record = json.loads(done.stdout.splitlines()[0])
    assert record["value"] == 2.0 and record["gradients"] == {name: 2.0, "x": 0.5}
    # no value: a call without its parentheses is likelier than a free variable
    done = run("eval", f"{name} + x", "--x", "1")
    assert done.exit_code == 2
    assert f"{name} is a function: call it as {name}(" in done.output
    assert f"--{name} VALUE" in done.output


@pytest.mark.parametrize("name", NAMES)
def test_one_name_both_called_and_a_variable_is_the_one_error(name):
    text = f"{_call(name)} + {name}"
    with pytest.raises(GradcliNameError) as raised:
        gradcli.parse(text)
    error, called = raised.value, text.index(f"{name}(") + 1
    assert f"both called as a function (line 1, column {called})" in error.message
    assert error.column == len(_call(name)) + 4 and error.marks == (called,)
    done = run("eval", text, f"--{name}", "1")
    assert done.exit_code == 2 and "Traceback" not in done.output
    carets = done.output.splitlines()[2]
    assert [m.start() for m in re.finditer(r"\^", carets)] == [called + 1, len(_call(name)) + 5]
    # assigned first, called after: the same error, at the call
    with pytest.raises(GradcliNameError, match="both called"):
        gradcli.parse(f"{name} = 2; {_call(name)}*{name}")


def test_a_batch_uses_every_name_as_a_variable_and_calls_it():
    lines = []
    for name in NAMES:
        lines += [f"{name}*x + 1", f"{_call(name)}*x"]
    given = [arg for name in NAMES for arg in (f"--{name}", "0.5")]
    done = run("eval", "-", "--x", "2", "--json", *given, stdin="\n".join(lines) + "\n")
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(records) == len(lines)
    for name, record in zip(NAMES, records[::2], strict=True):
        assert record["error"] is None, record
        assert record["value"] == 2.0 and record["gradients"][name] == 2.0
    for record in records[1::2]:
        assert record["error"] is None, record


def test_a_check_file_gives_function_names_values(tmp_path):
    checks = []
    for name in NAMES:
        checks.append(f'[[check]]\nname = "{name} as a variable"\nexpr = "{name}*x + 1"\n'
                      f"at = {{{name} = 0.5, x = 2}}\nvalue = 2\n"
                      f"gradients = {{{name} = 2, x = 0.5}}\n")
    path = tmp_path / "names.toml"
    path.write_text("\n".join(checks))
    done = run("check", str(path), "--json")
    report = json.loads(done.stdout)
    assert done.exit_code == 0, done.output
    assert report["ok"] and len(report["checks"]) == len(NAMES)
    for name, check in zip(NAMES, report["checks"], strict=True):
        keys = {finding["key"] for finding in check["findings"] if finding["ok"]}
        assert check["ok"] and {"value", f"gradients.{name}", "gradients.x"} <= keys


def test_the_issue_s_programs():
    result = gradcli.evaluate("(log10(a)*log10(0.23) - log10(0.23))*beta + eta",
                              {"a": 1.981, "beta": 1.51, "eta": -1.68})
    k = math.log10(0.23)
    assert result.value == pytest.approx((math.log10(1.981) * k - k) * 1.51 - 1.68, rel=1e-15)
    assert result.gradients["beta"] == pytest.approx(math.log10(1.981) * k - k, rel=1e-15)
    assert gradcli.evaluate("gamma*x", {"gamma": 0.99, "x": 2}).value == 1.98
    assert gradcli.evaluate("beta = 0.9; beta*x", {"x": 2}).value == 1.8
    assert gradcli.evaluate("exp2 = 1.5; exp(exp2)").value == math.exp(1.5)


def test_diff_prints_derivatives_that_parse_back_with_the_variable():
    derivatives = gradcli.differentiate("beta*x**2 + gamma(x)*sum", ["x", "beta", "sum"])
    texts = derivatives.texts()
    assert texts["beta"] == "x**2" and texts["sum"] == "gamma(x)"
    point = {"x": 1.7, "beta": 0.3, "sum": -2.0}
    for name, text in texts.items():
        again = gradcli.evaluate(text, {k: v for k, v in point.items() if k in text})
        exact = {"x": 2 * 0.3 * 1.7 + math.gamma(1.7) * (-2.0) * _digamma(1.7),
                 "beta": 1.7**2, "sum": math.gamma(1.7)}[name]
        assert again.value == pytest.approx(exact, rel=1e-12), (name, text)
    latex = derivatives.texts("latex")
    assert r"\beta" in latex["x"] and r"\Gamma" in latex["x"] and r"\mathrm{beta}" not in (
        latex["x"])


def _digamma(x: float) -> float:
    return gradcli.evaluate("digamma(x)", {"x": x}).value


def test_the_python_export_does_not_let_a_variable_hide_what_it_calls():
    done = run("diff", "max*abs(x) + sum*x + round*softplus(x)", "--format", "python")
    assert done.exit_code == 0, done.output
    namespace: dict = {}
    exec(compile(done.stdout, "<export>", "exec"), namespace)  # gradcli's own output
    value, gradient = namespace["f"](2.0, -1.5, 3.0, 0.5)  # max, x, sum, round
    softplus = math.log1p(math.exp(-1.5))
    assert value == pytest.approx(2.0 * 1.5 + 3.0 * -1.5 + 0.5 * softplus, rel=1e-15)
    sigmoid = 1 / (1 + math.exp(1.5))
    assert gradient == pytest.approx((1.5, -2.0 + 3.0 + 0.5 * sigmoid, -1.5, softplus),
                                     rel=1e-15)
    assert "max as max_" in done.stdout and "def f(max_, x, sum_, round_)" in done.stdout


def test_diff_of_a_free_function_name_says_how_it_was_read():
    done = run("diff", "beta*x**2", "--wrt", "x")
    assert done.exit_code == 0 and done.stdout == "d/dx = 2*beta*x\n"
    assert "beta is a variable here; beta(a, b) would call the function" in done.stderr


def test_constants_given_values_or_assigned_are_variables_with_a_note():
    done = run("eval", "e*x", "--e", "2", "--x", "3", "--json")
    assert done.exit_code == 0
    record = json.loads(done.stdout)
    assert record["value"] == 6.0 and record["gradients"] == {"e": 3.0, "x": 2.0}
    assert "e is a variable, not the constant e" in done.stderr
    done = run("eval", "e = 2; e*x", "--x", "3", "--json")
    assert json.loads(done.stdout)["value"] == 6.0 and "hides the constant" in done.stderr
    done = run("eval", "e*x", "--x", "3", "--json")  # not given: the constant, and no note
    assert json.loads(done.stdout)["value"] == pytest.approx(3 * math.e) and not done.stderr
    with pytest.raises(GradcliNameError, match="used as the constant e before"):
        gradcli.parse("y = x*e; e = 2; y + e")
    # an array program, and a check file's at = {...}, the same way
    result = gradcli.evaluate("sum(x)*pi", {"x": [1, 2], "pi": 3})
    assert result.value == 9.0 and result.gradients["pi"] == 3.0


@pytest.mark.parametrize("name", ["NaN", "nan", "inf", "Inf", "infinity"])
def test_a_variable_named_like_a_float_gradcli_has_not_gets_a_note(name):
    """NaN*x printed "value NaN ... ✓" as if a NaN had been computed (a bug hunt): gradcli
    has no NaN or infinity, so such a name is a variable, and a note says so; given a value
    it is an ordinary variable."""
    done = run("eval", f"{name}*x", "--x", "1")
    assert done.exit_code == 0
    assert f"note: {name} is a variable, not a number: gradcli's numbers are finite, it has " \
           "no NaN or infinity" in done.output, done.output
    strict = run("eval", f"{name}*x", "--x", "1", "--strict")
    assert strict.exit_code == 2 and f"{name} has no value; {name} is a variable" in strict.output
    given = run("eval", f"{name}*x", "--x", "1", f"--{name}", "2", "--json")
    assert json.loads(given.stdout)["value"] == 2.0 and not given.stderr


def test_a_check_file_may_give_a_constant_a_value(tmp_path):
    path = tmp_path / "e.toml"
    path.write_text('[[check]]\nname = "e"\nexpr = "e*x"\nat = {e = 2, x = 3}\nvalue = 6\n'
                    '[check.derivative]\nx = "e"\n')
    done = run("check", str(path), "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["ok"], done.output


def test_misspelled_functions_get_the_right_suggestion_across_both_tables():
    for typed, meant in [("sofmax", "softmax"), ("maen", "mean"), ("logsumxp", "logsumexp"),
                         ("sigmod", "sigmoid")]:
        done = run("eval", f"{typed}(x)", "--x", "[1, 2]")
        assert done.exit_code == 2 and f"did you mean {meant}?" in done.output, done.output


def test_an_array_program_missing_a_value_names_it():
    done = run("eval", "sum(x*W)", "--x", "2")
    assert done.exit_code == 2 and "no value for W" in done.output
    assert "--W VALUE" in done.output


@pytest.mark.parametrize(("alias", "program"), [
    ("radians", "deg2rad(x)"), ("degrees", "rad2deg(x)"), ("absolute", "abs(x)"),
    ("fabs", "abs(x)"), ("erf_inv", "erfinv(x/4)"), ("bessel_i0e", "i0e(x)"),
    ("bessel_i1e", "i1e(x)"), ("logistic", "sigmoid(x)"), ("clamp", "clip(x, -1, 0.5)"),
    ("remainder", "mod(x, 0.7)")])
def test_peers_aliases_are_the_functions(alias, program):
    spelled = program.replace(program.split("(")[0], alias, 1)
    for x in (-2.3, 0.4, 3.1):
        mine, theirs = gradcli.evaluate(spelled, {"x": x}), gradcli.evaluate(program, {"x": x})
        assert (mine.value, mine.gradients) == (theirs.value, theirs.gradients)
    listed = run("functions", "--json")
    assert alias in listed.stdout


def test_fmod_is_not_mod_and_the_hint_says_why():
    done = run("eval", "fmod(x, 2)", "--x", "-3")
    assert done.exit_code == 2 and "x - y*trunc(x/y)" in done.output
    # the hint's formula is C's fmod: the sign of x
    assert gradcli.evaluate("x - y*trunc(x/y)", {"x": -3.0, "y": 2.0}).value == math.fmod(-3, 2)


def test_completion_offers_a_function_named_variable():
    from gradcli.cli.arguments import program_variables

    class Context:
        def __init__(self, expr: str) -> None:
            self.params = {"expr": expr}

    assert program_variables(Context("beta*x + gamma(y)")) == ["beta", "x", "y"]
    # half-typed: the names written so far, but the calls
    assert program_variables(Context("beta*x + gamma(y")) == ["beta", "x", "y"]


def test_the_session_defines_a_variable_named_like_a_function(capsys):
    from gradcli.cli.session import Session

    session = Session()
    assert session.run("beta = 0.9") == 0
    assert session.run("mean = 2; beta*mean") == 0
    assert "1.8" in capsys.readouterr().out
    assert session.run("gamma(3)*beta") == 0


def test_graph_and_plot_take_function_named_variables(tmp_path):
    done = run("graph", "beta*x", "--beta", "2", "--x", "1", "--format", "tree")
    assert done.exit_code == 0 and "#0 beta  var  value 2  grad 1" in done.output
    done = run("plot", "gamma*x**2", "--x", "-1:1:5", "--gamma", "2", "-o",
               str(tmp_path / "p.svg"))
    assert done.exit_code == 0 and (tmp_path / "p.svg").stat().st_size > 0


def test_a_derivative_that_calls_the_variable_s_function_is_printed_and_checked():
    # d/dx of cos*x + sin(x) needs the variable cos and the function cos(x) at once
    done = run("diff", "cos*x + sin(x)", "--wrt", "x")
    assert done.exit_code == 0 and done.stdout == "d/dx = cos(x) + cos\n"
    assert "checked at 3 points" in done.stderr


def test_diff_of_constants_made_variables(tmp_path):
    done = run("diff", "e = 2; e*x", "--format", "python")
    assert done.exit_code == 0, done.output
    namespace: dict = {}
    exec(compile(done.stdout, "<export>", "exec"), namespace)  # gradcli's own output
    assert namespace["f"](5.0, 3.0) == (15.0, (3.0, 5.0))  # e = 5, x = 3: not math.e
    done = run("diff", "sum(e*x)", "--shape", "e=3", "--shape", "x=3")
    assert done.exit_code == 0 and "d/de = x" in done.stdout, done.output


def test_latex_names_in_the_derivative_s_label():
    done = run("diff", "beta*x**2", "--format", "latex")
    assert r"\frac{\partial f}{\partial \beta} = {x}^{2}" in done.stdout


@pytest.mark.parametrize(("typed", "hint"), [
    ("add(x, y)", "add is an operator: write x + y"),
    ("logical_not(x)", "logical_not is an operator: write not x"),
    ("matmul(x, y)", "matmul is an operator: write x @ y"),
])
def test_an_operator_s_table_name_called_says_how_it_is_written(typed, hint):
    done = run("eval", typed, "--x", "1", "--y", "2")
    assert done.exit_code == 2 and hint in done.output


def test_the_session_and_check_files_say_when_a_constant_is_a_variable(tmp_path, capsys):
    from gradcli.cli.session import Session

    session = Session()
    assert session.run("e = 2") == 0 and session.run("e*x") == 0
    assert "note: e is a variable, not the constant e" in capsys.readouterr().err
    path = tmp_path / "e.toml"
    path.write_text('[[check]]\nname = "e"\nexpr = "e*x"\nat = {e = 2, x = 3}\nvalue = 6\n')
    done = run("check", str(path))
    assert done.exit_code == 0
    assert f"{path}:3: check 'e': note: e is a variable, not the constant e" in done.stderr
