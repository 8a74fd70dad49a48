"""Issue 12's last cases: outputs that would mislead by omission are refused or explained.

Each test runs the command a person would type and checks the status and the words that tell
them what happened (the status alone would let a wrong message pass).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.errors import GradcliNameError, UsageError


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


# --- the Python API refuses values that are not numbers ----------------------------------------

@pytest.mark.parametrize("value", ["2", True, None])
def test_a_value_that_is_not_a_number_is_a_usage_error(value):
    with pytest.raises(UsageError, match=r"value of x is .* not a number"):
        gradcli.evaluate("x*2", {"x": value})


@pytest.mark.parametrize("value", [2, 2.0, np.float64(2), np.float32(2), np.int64(2)])
def test_numbers_of_any_real_type_are_taken(value):
    result = gradcli.evaluate("x*2", {"x": value})
    assert (result.value, result.gradients["x"]) == (4.0, 2.0)


# --- graph -o: the suffix names the format, or the file is refused -----------------------------

@pytest.mark.parametrize("name", ["g.pdf", "g", "g.jpeg"])
def test_graph_refuses_a_file_whose_suffix_names_no_format(tmp_path, name):
    path = tmp_path / name
    result = invoke("graph", "x*y", "--x", "1", "--y", "2", "-o", str(path))
    assert result.exit_code == 2
    assert "gradcli graph cannot write" in result.stderr
    assert ".svg, .png, .dot, .gv, .mmd, .txt" in result.stderr and "--format" in result.stderr
    assert not path.exists()


def test_graph_with_an_explicit_format_writes_any_name(tmp_path):
    path = tmp_path / "g.pdf"
    result = invoke("graph", "x*y", "--x", "1", "--y", "2", "-o", str(path), "--format", "dot")
    assert result.exit_code == 0
    assert path.read_text().startswith("digraph")


def test_graph_to_a_device_without_suffix_is_a_stream_of_dot():
    result = invoke("graph", "x*y", "--x", "1", "--y", "2", "-o", "/dev/null")
    assert result.exit_code == 0, result.output


# --- plot: no finite point is a numeric error, not an empty frame ------------------------------

def test_a_plot_with_no_finite_point_exits_3_and_says_why(tmp_path):
    result = invoke("plot", "log(x)", "--x", "-3:-1:50")
    assert result.exit_code == 3
    assert result.stdout == ""
    assert "no finite value or derivative at any of the 50 points" in result.stderr
    assert "logarithm of a non-positive number" in result.stderr
    image = tmp_path / "p.svg"
    assert invoke("plot", "log(x)", "--x", "-3:-1:50", "-o", str(image)).exit_code == 3
    assert not image.exists()


def test_a_plot_with_some_finite_points_still_draws_and_counts_gaps():
    result = invoke("plot", "log(x)", "--x", "-3:1:50")
    assert result.exit_code == 0
    assert "50 points; 37 with a numeric error left as gaps" in result.stdout


# --- messages that named the wrong cause ------------------------------------------------------

def test_csv_on_a_batch_names_csv_not_a_sweep():
    result = invoke("eval", "-", "--csv", stdin="x*y\n")
    assert result.exit_code == 2
    assert "--csv writes a sweep's table" in result.stderr and "--json" in result.stderr


def test_a_failed_check_at_a_pole_blames_the_pole():
    result = invoke("eval", "tan(x)", "--x", repr(np.pi / 2))
    assert result.exit_code == 1
    assert "pole" in result.stdout and "relu" not in result.stdout


@pytest.mark.parametrize("gradient, cause", [(1.0, "relu or abs at 0"), (3e15, "pole")])
def test_a_failed_checks_verdict_names_the_likely_cause(gradient, cause):
    from gradcli.gradcheck.check import CheckReport, GradientCheck
    from gradcli.output.verdicts import verdict

    failed = GradientCheck(gradient, 0.5, abs(gradient - 0.5), 1e-5, False, "central", 1e-6)
    text = verdict(CheckReport(1e-5, 1e-8, {"x": failed})).plain
    assert text.startswith("✗ check failed: 1 of 1 gradient disagrees")
    assert cause in text and ("pole" in text) == (cause == "pole")


def test_a_missing_check_file_says_what_to_do(tmp_path):
    result = invoke("check", str(tmp_path / "missing.toml"))
    assert result.exit_code == 2
    assert "cannot read the file: No such file or directory" in result.stderr
    assert "hint: check the path" in result.stderr


# --- free variables say so, and lookalikes of constants get a "did you mean" --------------------

def test_a_constant_written_in_the_wrong_case_gets_a_note_in_every_output():
    table = invoke("eval", "PI*x", "--x", "1")
    assert table.exit_code == 0
    assert "note: PI is a variable, not the constant pi" in table.stdout
    record = json.loads(invoke("eval", "PI*x", "--x", "1", "--json").stdout)
    assert record["symbolic"]["free"] == ["PI"]
    assert "not the constant pi" in record["symbolic"]["notes"][0]
    line = invoke("eval", "-", "--x", "1", stdin="E*x\n").stdout
    assert "(free: E)" in line and "(E is a variable, not the constant e)" in line


def test_a_value_for_the_lookalike_silences_the_note():
    result = invoke("eval", "PI*x", "--x", "1", "--PI", "3")
    assert result.exit_code == 0
    assert "note" not in result.stdout and result.stdout.startswith("value 3")


@pytest.mark.parametrize("extra", ["--strict", "--hessian"])
def test_where_a_value_is_required_the_lookalike_is_the_error(extra):
    result = invoke("eval", "PI*x", "--x", "1", extra)
    assert result.exit_code == 2
    assert "PI has no value; did you mean the constant pi?" in result.stderr
    with pytest.raises(GradcliNameError, match="did you mean the constant pi"):
        gradcli.evaluate("PI*x", {"x": 1})


def test_a_batch_line_with_free_variables_is_marked():
    lines = invoke("eval", "-", "--x", "1", stdin="x*2\nx*y\n").stdout.splitlines()
    assert "(free" not in lines[0]
    assert lines[1].endswith("(free: y)  ✓")  # its expressions checked, as diff's are


# --- a piped text batch says its errors on stderr too -----------------------------------------

def test_piped_batch_errors_are_echoed_on_stderr_and_records_stay_one_per_line():
    done = subprocess.run([sys.executable, "-m", "gradcli", "eval", "-", "--x", "-1"],
                          input="x*2\nlog(x)\nx*(\n", capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 3
    records = done.stdout.splitlines()
    assert [r.split(":")[0] for r in records] == ["line 1", "line 2", "line 3"]
    said = done.stderr.splitlines()
    assert said[0].startswith("gradcli: line 2: numeric error: logarithm")
    assert said[1].startswith("gradcli: line 3: parse error")
    assert len(said) == 2


# --- a statement the output never reaches is a slip, not dead code to ignore ---------------------

@pytest.mark.parametrize("program, message, column", [
    ("u = x*3; x + 1", "u is assigned but the output never uses it", 1),
    ("u = x*y; v = u*2; u", "v is assigned but the output never uses it", 10),
    ("f(a) = a*a; x + 1", "f is defined but never called", 1),
    ("f(a, b) = a*2; f(x, 1)", "the parameter b of f is never used in its body", 1),
])
def test_an_unused_statement_is_an_error_at_its_place(program, message, column):
    result = invoke("eval", program, "--x", "2", "--y", "3")
    assert result.exit_code == 2
    first = result.stderr.splitlines()[0]
    assert first.endswith(f"column {column}: {message}")
    assert result.stderr.splitlines()[2].index("^") == column + 1  # under the statement
    with pytest.raises((UsageError, GradcliNameError), match=message):
        gradcli.parse(program)


@pytest.mark.parametrize("program", [
    "u = x*3; u + 1",  # used
    "y = 2; x + 1",  # an input declared with a default: reported with gradient 0
    "f(a) = a*a; g(b) = f(b) + 1; g(x)",  # f is called by g, g by the output
    "u = x*y; v = u*2; u, v",  # several outputs use both
])
def test_statements_the_output_reaches_are_not_refused(program):
    assert gradcli.parse(program).nodes


def test_an_unused_statement_in_a_batch_is_that_lines_error_record():
    result = invoke("eval", "-", "--json", "--x", "2", stdin="x*2\nu = x; x + 1\nx + 1\n")
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3]
    assert records[0]["error"] is None and records[2]["error"] is None
    assert records[1]["error"]["message"] == "u is assigned but the output never uses it"
    assert result.exit_code == 2


def test_free_variables_expressions_are_checked_before_they_are_shown(monkeypatch):
    """Found by an audit: eval with free variables printed its gradients as expressions with no
    check and "check": null. They are read back and compared with the reverse-mode gradient at
    sample values of the free variables, as diff's are; a wrong one is a CheckError, not shown."""
    result = gradcli.evaluate("(x*W + b - t)**2", {"x": 2.0, "W": 3.0}, strict=False)
    assert result.gradients == {"x": "6*(b - t + 6)", "W": "4*(b - t + 6)",
                                "b": "2*(b - t + 6)", "t": "-2*(b - t + 6)"}  # by hand
    assert result.checked is not None and result.checked.points == 3
    assert result.checked.note() == ("checked at 3 points: 4 derivatives agree with the "
                                     "reverse-mode gradient (x, W: central differences of "
                                     "the value)")
    record = json.loads(invoke("eval", "(x*W + b - t)**2", "--x", "2", "--W", "3",
                               "--json").stdout)
    assert record["check"]["ok"] is True and record["check"]["entries"] == 4
    unchecked = json.loads(invoke("eval", "x*y", "--x", "2", "--json", "--no-check").stdout)
    assert unchecked["check"] is None
    table = invoke("eval", "x*y", "--x", "2", "--no-check").stdout  # skipped: said, as eval's
    assert table.rstrip().endswith("finite-difference check skipped (--no-check)")

    from gradcli.symbolic import derivatives

    real = derivatives.partial_evaluate

    def wrong(program, values):
        found = real(program, values)
        found.gradients["b"] = "3*(b - t + 6)"  # a wrong rule, as a bug would write it
        return found

    monkeypatch.setattr(derivatives, "partial_evaluate", wrong)
    with pytest.raises(gradcli.GradcliError, match=r"d/db = 3\*\(b - t \+ 6\)"):
        gradcli.evaluate("(x*W + b - t)**2", {"x": 2.0, "W": 3.0}, strict=False)


def test_a_kink_at_a_given_value_of_a_program_with_free_variables_is_said():
    """Found by a review: abs(x)*y at x = 0 with y free printed d/dx 0 "✓", compared with the
    reverse-mode gradient, which takes the rules' convention. A variable given its value is
    checked against differences of the value (as when every variable has one): the kink is
    named, no ✓, and the JSON check is not ok."""
    table = invoke("eval", "abs(x)*y", "--x", "0")
    assert "✓" not in table.stdout and "d/dx at x = 0" in table.stdout
    assert "is a convention, not checked: the value has a kink there" in table.stdout
    line = invoke("eval", "-", "--x", "0", stdin="abs(x)*y\nsin(x)*y\n").stdout.splitlines()
    assert "(not all checked: " in line[0] and line[1].endswith("(free: y)  ✓")
    record = json.loads(invoke("eval", "abs(x)*y", "--x", "0", "--json").stdout)["check"]
    assert record["ok"] is None and len(record["conventions"]) == 1
    assert record["against"] == ("the reverse-mode gradient (x: central differences of the "
                                 "value)")
