"""Piecewise definitions (issue 15): comparisons, and/or/not, where(c, a, b) and a if c else b.

Values and gradients against SymPy's Piecewise; the branch not taken masked on every path (one
point, sweeps, the check's replays, Hessians, diff) without a warning; the check at a boundary
says so; printed derivatives parse back, and the Python form runs.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
import sympy as sp
from click.testing import CliRunner

import gradcli
from gradcli.api import differentiate
from gradcli.cli.base import cli
from gradcli.engine.vector import evaluate_vector
from gradcli.gradcheck.sweep import evaluate_sweep

X, Y = sp.symbols("x y", real=True)

# program -> the same function as a SymPy Piecewise, written independently
PROGRAMS = {
    "x**2 if x > 0 else 0.01*x": sp.Piecewise((X**2, X > 0), (0.01 * X, True)),
    "where(x >= 1, log(x), where(x > -1, x**3, -exp(x)))":
        sp.Piecewise((sp.log(X), X >= 1), (X**3, X > -1), (-sp.exp(X), True)),
    "where(x > 0 and y < 1, x*y, sin(y))": sp.Piecewise((X * Y, (X > 0) & (Y < 1)),
                                                       (sp.sin(Y), True)),
    "where(not x < y or x == 2, hypot(x, y), x - y)":
        sp.Piecewise((sp.sqrt(X**2 + Y**2), (X >= Y) | sp.Eq(X, 2)), (X - Y, True)),
    "(x > y)*x + (x <= y)*y": sp.Max(X, Y),
    "x*y if x != y else 0": sp.Piecewise((X * Y, sp.Ne(X, Y)), (0, True)),
}
# Points away from every switching point (at a switch, the check rightly disagrees: see below).
POINTS = [(-2.5, 0.5), (-0.5, 3.0), (0.25, 0.75), (1.5, -1.0), (2.2, 2.6), (3.0, 0.2)]


def _sympy(expr, point):
    return float(sp.N(expr.subs({X: point[0], Y: point[1]}), 30))


@pytest.mark.parametrize("text", sorted(PROGRAMS))
def test_values_and_gradients_match_sympy_piecewise(text):
    closed = PROGRAMS[text]
    for point in POINTS:
        values = {"x": point[0], "y": point[1]}
        result = gradcli.evaluate(text, values)
        assert result.value == pytest.approx(_sympy(closed, point), rel=1e-12, abs=1e-12)
        for name, symbol in (("x", X), ("y", Y)):
            expected = _sympy(sp.diff(closed, symbol), point)
            assert result.gradients.get(name, 0.0) == pytest.approx(expected, rel=1e-10,
                                                                    abs=1e-12), (text, point)
        assert result.check.ok, (text, point)


@pytest.mark.parametrize("text", sorted(PROGRAMS))
def test_printed_derivatives_parse_back_to_sympys(text):
    closed = PROGRAMS[text]
    names = list(gradcli.parse(text).variables)
    texts = differentiate(text, names).texts()
    for point in POINTS:
        values = {"x": point[0], "y": point[1]}
        for name, symbol in (("x", X), ("y", Y))[:len(names)]:
            got = gradcli.evaluate(texts[name], values, check=False).value
            assert got == pytest.approx(_sympy(sp.diff(closed, symbol), point), rel=1e-10,
                                        abs=1e-12), (text, name, point)


def test_the_branch_not_taken_is_not_an_error_at_one_point():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = gradcli.evaluate("where(x > 0, log(x), 0)", {"x": -1.0})
    assert (result.value, result.gradients, result.check.ok) == (0.0, {"x": 0.0}, True)
    rows = {row.label: row for row in result.node_rows()}
    assert rows["log(x)"].value is None and rows["log(x)"].grad == 0.0  # not taken
    taken = gradcli.evaluate("where(x > 0, log(x), 0)", {"x": math.e})
    assert taken.value == pytest.approx(1.0) and taken.gradients["x"] == pytest.approx(1 / math.e)


def test_an_error_in_the_branch_taken_is_still_named():
    with pytest.raises(gradcli.NumericError, match=r"logarithm .* in #\d+ log\(-x\)"):
        gradcli.evaluate("where(x > 0, log(-x), 0)", {"x": 1.0})
    with pytest.raises(gradcli.NumericError, match="sqrt"):  # an infinite derivative, taken
        gradcli.evaluate("where(x >= 0, sqrt(x), 0)", {"x": 0.0})
    assert gradcli.evaluate("where(x > 0, sqrt(x), 0)", {"x": 0.0}).gradients == {"x": 0.0}


def test_a_condition_that_fails_is_an_error():
    with pytest.raises(gradcli.NumericError, match="log"):
        gradcli.evaluate("where(log(x) > 0, 1, 2)", {"x": -1.0})


def test_vector_path_masks_the_branch_not_taken_without_warnings_or_nan():
    program = gradcli.parse("where(x > 0, log(x), 0) + (1/x if x != 0 else 5) + sqrt(x + 2)")
    x = np.array([-3.0, -1.0, 0.0, 0.5, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = evaluate_vector(program, {"x": x})
    grad = run.grads[program.variables["x"].index]
    assert run.failed.tolist() == [True, False, False, False, False]  # sqrt(-1) is taken
    for i in range(1, 5):
        one = gradcli.evaluate(program.source, {"x": x[i]}, check=False)
        assert run.output[i] == one.value and grad[i] == one.gradients["x"]
    assert np.isfinite(run.output[1:]).all() and np.isfinite(grad[1:]).all()


def test_sweep_is_checked_point_by_point_and_the_boundary_alone_fails():
    program = gradcli.parse("where(x > 0, log(x), 0)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sweep = evaluate_sweep(program, {"x": np.linspace(-2, 2, 9)})
    assert not sweep.failed.any()
    ok = sweep.checks["x"].ok.tolist()
    assert ok == [True] * 4 + [False] + [True] * 4  # x = 0: the pieces meet there


def test_the_check_at_a_boundary_names_the_condition():
    result = gradcli.evaluate("x**2 if x > 0 else 0.01*x", {"x": 0.0})
    assert not result.check.ok and result.check.boundaries == ["x > 0"]
    assert result.gradients == {"x": 0.01}  # the piece the condition picks
    complex_step = gradcli.evaluate("x**2 if x > 0 else 0.01*x", {"x": 0.0},
                                    check_method="complex")
    assert complex_step.check.ok  # follows the branch the real value takes, as at relu's kink
    away = gradcli.evaluate("x**2 if x > 0 else 0.01*x", {"x": 0.5})
    assert away.check.ok and away.check.boundaries == []


def test_hessian_masks_the_branch_not_taken():
    closed = sp.Piecewise((sp.log(X) * Y, X > 0), (X**3 * Y, True))
    for x in (-1.5, 2.0):
        result = gradcli.evaluate("where(x > 0, log(x)*y, x**3*y)", {"x": x, "y": 0.5}, order=2)
        for a, sa in (("x", X), ("y", Y)):
            for b, sb in (("x", X), ("y", Y)):
                expected = _sympy(sp.diff(closed, sa, sb), (x, 0.5))
                assert result.hessian.matrix[a][b] == pytest.approx(expected, rel=1e-10,
                                                                    abs=1e-12)
        assert result.hessian.check.ok


def test_derivatives_stay_inside_their_branch():
    texts = differentiate("where(x > 0, log(x), 0)", ["x"]).texts()
    assert texts["x"] == "where(x > 0, 1/x, 0)"
    assert gradcli.evaluate(texts["x"], {"x": 0.0}, check=False).value == 0.0
    assert differentiate("where(x > 0, x, x)", ["x"]).texts()["x"] == "1"
    at_zero = differentiate("where(x > 0, sqrt(x), 0)*y", ["x", "y"], values={"x": 0.0})
    assert at_zero.texts() == {"x": "0", "y": "0"}


def test_python_form_runs_and_evaluates_only_the_branch_taken():
    code = differentiate("where(x > 0, log(x)*log(x), x*y) + y", ["x", "y"]).python()
    namespace: dict = {}
    exec(compile(code, "<diff>", "exec"), namespace)  # the printed source, as a user runs it
    for x, y in [(-1.0, 2.0), (0.0, 1.0), (2.5, -0.5)]:
        value, grads = namespace["f"](x, y)
        reference = gradcli.evaluate("where(x > 0, log(x)*log(x), x*y) + y", {"x": x, "y": y})
        assert value == pytest.approx(reference.value)
        assert grads == pytest.approx((reference.gradients["x"], reference.gradients["y"]))


def test_latex_form_uses_cases():
    latex = differentiate("x**2 if x > 0 and y <= 1 else -x", ["x"]).texts("latex")["x"]
    assert r"\begin{cases} 2 \cdot x & \text{if } x > 0 \land y \le 1" in latex
    assert r"-1 & \text{otherwise} \end{cases}" in latex


@pytest.mark.parametrize(("text", "python"), [
    ("not x > 0 and y", "(not x > 0) and y"),
    ("x or y and not z", "x or (y and (not z))"),
    ("1 if x else 2 if y else 3", "1 if x else (2 if y else 3)"),
    ("-x**2 < 1 - y == 0", None),  # comparisons do not chain: a syntax error
    ("x + 1 > y * 2", "(x + 1) > (y * 2)"),
    ("(x < y) == (y < z)", "(x < y) == (y < z)"),
])
def test_precedence_is_pythons(text, python):
    point = {"x": 0.0, "y": 2.0, "z": 0.0}
    if python is None:
        with pytest.raises(gradcli.ParseError, match="unexpected"):
            gradcli.parse(text)
        return
    expected = float(bool(eval(python, {}, dict(point)))) if " if " not in python else float(
        eval(python, {}, dict(point)))
    assert gradcli.evaluate(text, point, check=False).value == expected


def test_keywords_are_reserved_but_not_inside_names():
    assert gradcli.evaluate("android + order + iffy", {"android": 1, "order": 2, "iffy": 3},
                            check=False).value == 6.0
    with pytest.raises(gradcli.ParseError):
        gradcli.parse("and = 2; and")


def invoke(*args: str, stdin: str | None = None):
    result = CliRunner().invoke(cli, list(args), input=stdin)
    assert "Traceback" not in result.stdout + result.stderr
    return result


def test_cli_eval_batch_and_json():
    lines = "where(x > 0, log(x), 0)\nx if x > y else y\nwhere(x < 0, log(x), 0)\n"
    done = invoke("eval", "-", "--x", "-1", "--y", "2", "--json", stdin=lines)
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["value"] for r in records[:2]] == [0.0, 2.0]
    assert records[0]["nodes"][3]["value"] is None  # log(x), not taken: null, never NaN
    assert records[2]["error"]["kind"] == "domain"
    assert done.exit_code == 3


def test_cli_sweep_csv_and_diff_formats():
    done = invoke("eval", "where(x > 0, log(x), 0)", "--x", "-2:2:5", "--csv")
    assert done.stdout.splitlines()[1:3] == ["-2,0,0,true,", "-1,0,0,true,"]
    assert invoke("diff", "x if x > 0 else -x", "--wrt", "x").stdout == (
        "d/dx = where(x > 0, 1, -1)\n")
    python = invoke("diff", "x if x > 0 else -x", "--wrt", "x", "--format", "python").stdout
    assert "t1 = x > 0" in python
    assert "return _finite((x if t1 else -x), ((1 if t1 else -1),))" in python
    assert r"\begin{cases}" in invoke("diff", "x if x > 0 else -x", "--wrt", "x",
                                      "--format", "latex").stdout


def test_check_file_with_piecewise_and_functions(tmp_path):
    checks = tmp_path / "pw.toml"
    checks.write_text(
        '[[check]]\nname = "leaky"\n'
        'expr = "leaky(v, a) = v if v > 0 else a*v; leaky(x, 0.01) + leaky(-x, 0.02)"\n'
        'sweep = {x = "-3:3:60"}\nvalue = "where(x > 0, 0.98*x, -0.99*x)"\n'
        'derivative = {x = "where(x > 0, 0.98, -0.99)"}\nfinite = true\n\n'
        '[[check]]\nname = "log where defined"\nexpr = "where(x > 0, log(x), 0)"\n'
        'sweep = {x = "-2:2:40"}\nderivative = {x = "where(x > 0, 1/x, 0)"}\nfinite = true\n',
        encoding="utf-8")
    done = invoke("check", str(checks))
    assert done.exit_code == 0, done.stdout
    assert "2 checks passed" in done.stdout


@pytest.mark.parametrize("text", [
    "where(x > 0, sqrt(x), -x) * where(x > 0, 2, 3)",
    "where(x > 0, log(x), 0) + where(x > 0, 1, log(1 - x)) * y",
    "(x if x < y else y) / (2 if x < y else 4) - where(x >= 0, x**0.5, 0)",
    "f(a) = where(a > 0, log(a), a); f(x) * f(y) + f(x*y)",
])
def test_simplification_never_moves_a_term_out_of_its_branch(text):
    """The printed derivatives, read back, give eval's gradients at the switching points too,
    where a term moved out of its branch would be computed and fail (sqrt'(0), log(0))."""
    program = gradcli.parse(text)
    names = list(program.variables)
    texts = differentiate(text, names).texts()
    for x in (-1.0, 0.0, 2.0):
        for y in (-1.0, 0.0, 2.0):
            point = {"x": x, "y": y}
            try:
                expected = gradcli.evaluate(text, point, check=False).gradients
            except gradcli.NumericError:
                continue
            for name in names:
                got = gradcli.evaluate(texts[name], point, check=False).value
                assert got == pytest.approx(expected[name], rel=1e-12, abs=1e-300), (name, point)


def test_pictures_show_the_branch_not_taken_and_draw_no_flow_through_it():
    tree = invoke("graph", "where(x > 0, sqrt(x), 0)", "--x", "0", "--format", "tree").stdout
    # its edge's flow is its whole gradient, so the tree names no flow beside "not taken"
    assert "├── #3 sqrt(x)  sqrt  not taken\n" in tree
    mermaid = invoke("graph", "where(x > 0, log(x), 0)", "--x", "-1", "--format", "mermaid")
    assert mermaid.exit_code == 0 and "log(x)<br>log<br>not taken" in mermaid.stdout
    partial = invoke("graph", "where(x > 0, log(x), 0)*y", "--x", "-1", "--format", "tree")
    assert partial.exit_code == 0  # y has no value: log(-1) is still known to be not taken
    assert "#5 where(x > 0, log(x), 0)  where  value 0" in partial.stdout
    taken = invoke("graph", "where(x < 0, log(x), 0)*y", "--x", "-1", "--format", "tree")
    assert taken.exit_code == 3 and "logarithm" in taken.stderr


def test_array_programs_take_comparisons_where_and_functions_elementwise():
    """With arrays (docs/arrays.md) the pieces work element by element, and so does masking a
    branch not taken: log(-1) at an element where x > 0 is false is no error; where the branch
    is taken it is named (exit status 3), never a traceback."""
    result = gradcli.evaluate("x = [-1, 2, 3]; f(a) = a*a; sum(where(x > 0, f(x), -x))", {})
    assert result.value == 1 + 4 + 9
    assert [row.value for row in result.node_rows()][-1] == 14.0
    done = invoke("eval", "x = [-1, 2, 3]; sum(x if x > 0 else -x)", "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["value"] == 6.0
    masked = invoke("eval", "x = [-1, 2, 3]; sum(where(x > 0, log(x), 0))", "--json")
    assert masked.exit_code == 0, masked.output
    assert json.loads(masked.stdout)["gradients"]["x"] == [0.0, 0.5, 1 / 3]
    failed = invoke("eval", "x = [-1, 2, 3]; sum(where(x > -2, log(x), 0))")
    assert failed.exit_code == 3 and "where x[0] = -1" in failed.stderr


def test_an_unused_declared_input_keeps_its_value_beside_a_branch_not_taken():
    result = gradcli.evaluate("y = 2; where(x > 0, log(x), 0)", {"x": -1.0})
    rows = {row.label: row for row in result.node_rows()}
    assert rows["y"].value == 2.0 and rows["x"].value == -1.0 and rows["log(x)"].value is None
    assert result.gradients == {"y": 0.0, "x": 0.0} and result.check.ok


# --- the array path (several outputs, array programs) masks as the scalar path does -----------

@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_jacobian_does_not_evaluate_the_branch_not_taken(mode):
    """``f, g`` runs on the array path; at x = -4 log(x) and sqrt(x) are in branches not
    taken: no error, and the Jacobian is the taken pieces' (d/dx sqrt(-x) = -1/(2 sqrt(-x)))."""
    text = "where(x > 0, log(x), 0), where(x < 0, sqrt(-x), sqrt(x)), x"
    result = gradcli.evaluate(text, {"x": -4.0}, mode=mode)
    assert list(result.values.values()) == [0.0, 2.0, -4.0]
    assert [row["x"] for row in result.jacobian.values()] == [0.0, -0.25, 1.0]
    assert result.check.ok
    at_two = gradcli.evaluate(text, {"x": 2.0}, mode=mode)
    assert [row["x"] for row in at_two.jacobian.values()] == pytest.approx(
        [0.5, 0.5 / math.sqrt(2.0), 1.0], rel=1e-15)
    assert at_two.check.ok


def test_a_jacobian_reports_an_error_in_a_branch_taken_by_any_output():
    with pytest.raises(gradcli.NumericError, match="logarithm of a non-positive number"):
        gradcli.evaluate("where(x > 0, log(x), 0), log(x)", {"x": -1.0})


def test_a_jacobians_nodes_show_the_branch_not_taken():
    result = CliRunner().invoke(cli, ["eval", "where(x > 0, log(x), 0), x", "--x", "-1",
                                      "--json"])
    assert result.exit_code == 0, result.output
    nodes = {node["label"]: node for node in json.loads(result.stdout)["nodes"]}
    assert nodes["log(x)"]["value"] is None
    table = CliRunner().invoke(cli, ["eval", "where(x > 0, log(x), 0), x", "--x", "-1"])
    assert "not taken" in table.stdout and "nan" not in table.stdout


def test_an_array_program_with_a_number_as_condition_masks_its_branches():
    """The scalar path's rule on arrays: a condition that is a number picks one branch, whose
    nodes alone are evaluated, differentiated and checked (nor is the condition itself)."""
    text = "where(s > 0, sum(log(x)), sum(x**2))"
    result = gradcli.evaluate(text, {"s": -1.0, "x": [-1.0, 2.0]})
    assert result.value == 5.0
    assert result.gradients["x"].tolist() == [-2.0, 4.0] and result.gradients["s"] == 0.0
    assert result.check.ok
    checked = {gradcli.parse(text).nodes[i].op.name for i in result.check.nodes}
    assert "log" not in checked and "gt" not in checked
    records = {record["label"]: record for record in result.node_records()}
    assert records["log(x)"]["value"] is None and records["log(x)"]["shape"] == [2]
    taken = gradcli.evaluate(text, {"s": 1.0, "x": [1.0, 2.0]})
    assert taken.gradients["x"].tolist() == [1.0, 0.5] and taken.check.ok
    with pytest.raises(gradcli.NumericError, match="logarithm"):
        gradcli.evaluate(text, {"s": 1.0, "x": [-1.0, 2.0]})


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_element_wise_pieces_mask_each_element(mode):
    """The entropy-like sum(where(x > 0, x*log(x), 0)) at x = [-1, 2, 3]: log(-1) is in the
    branch not taken at element 0. Gradient by hand: 0 there, log(x) + 1 elsewhere; the check
    passes on the elements that have a value; a Jacobian of the element-wise output too."""
    text = "sum(where(x > 0, x*log(x), 0))"
    result = gradcli.evaluate(text, {"x": [-1.0, 2.0, 3.0]})
    assert result.value == pytest.approx(2 * math.log(2) + 3 * math.log(3), rel=1e-15)
    assert result.gradients["x"].tolist() == pytest.approx(
        [0.0, math.log(2) + 1, math.log(3) + 1], rel=1e-15)
    assert result.check.ok
    records = {record["label"]: record for record in result.node_records()}
    assert records["log(x)"]["value"][0] != records["log(x)"]["value"][0]  # NaN: no value
    sqrt = gradcli.evaluate("sum(where(x > 0, sqrt(x), -x))", {"x": [-1.0, 4.0]})
    assert sqrt.gradients["x"].tolist() == [-1.0, 0.25] and sqrt.check.ok  # sqrt'(-1): NaN
    jacobian = gradcli.evaluate("where(x > 0, log(x), 0)", {"x": [-1.0, 2.0]}, mode=mode)
    assert next(iter(jacobian.jacobian.values()))["x"].tolist() == [[0.0, 0.0], [0.0, 0.5]]
    assert jacobian.check.ok
    with pytest.raises(gradcli.NumericError, match=r"logarithm .* where x\[1\] = -1"):
        gradcli.evaluate("sum(where(x > -5, log(x), 0))", {"x": [3.0, -1.0, 2.0]})


def test_element_wise_masking_agrees_with_the_scalar_path_element_by_element():
    """One rule for both engines: each element of an array program is the scalar program at
    that element (value and gradient), bit for bit."""
    text = "where(x > 0.5, sqrt(x - 0.5)*log(x), where(x < -1, log(-x)/x, x**2))"
    xs = [-3.0, -1.0, -0.2, 0.5, 0.7, 2.0]
    arrays = gradcli.evaluate(f"sum({text})", {"x": xs}, check=False)
    for k, x in enumerate(xs):
        scalar = gradcli.evaluate(text, {"x": x}, check=False)
        assert arrays.gradients["x"][k] == scalar.gradients["x"], x


# --- diff checks every piece it prints ---------------------------------------------------------

def test_diff_draws_points_until_every_piece_is_checked():
    """The first sample ranges lie within |x| < 1.5: a piece for x > 50 is reached further out."""
    result = CliRunner().invoke(cli, ["diff", "x**2 if x > 50 else x", "--wrt", "x", "--json"])
    assert result.exit_code == 0, result.output
    checked = json.loads(result.stdout)["checked"]
    assert checked["points"] > 3 and checked["unchecked_pieces"] == []


def test_diff_says_which_piece_no_point_reached():
    result = CliRunner().invoke(cli, ["diff", "x**2 if x > 1000 else x", "--wrt", "x"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "d/dx = where(x > 1000, 2*x, 1)\n"
    assert "not checked where x > 1000 is true (no sample point took that piece)" in (
        result.stderr)


def test_diff_prints_no_third_derivative_that_its_piece_would_have_failed():
    """Found by a bug hunt: order 3 of this piece is 0 (x*sqrt(1 + y**2) for x > 0), and the
    printed formula was wrong but passed, checked only at points where x <= 2. Whatever diff
    prints now holds in the piece (SymPy's answer, 0), or diff refuses (status 1)."""
    text = "sqrt(x**2 + (x*y)**2) if x > 2 else x**3"
    result = CliRunner().invoke(cli, ["diff", text, "--order", "3", "--wrt", "x"])
    if result.exit_code == 1:
        assert "a bug in gradcli diff" in result.stderr
        return
    assert result.exit_code == 0, result.output
    printed = result.stdout.split(": ", 1)[1] if ": " in result.stdout else (
        result.stdout.split("= ", 1)[1])
    x, y = sp.symbols("x y", positive=True)
    assert sp.diff(sp.sqrt(x**2 + (x * y) ** 2), x, 3).simplify() == 0
    value = gradcli.evaluate(printed.strip(), {"x": 3.0, "y": 1.0}, check=False).value
    assert abs(value) < 1e-12


def test_a_dead_element_at_a_derivative_rules_pole_passes_nothing():
    """Found by a review: dgamma's rule, computed one element at a time, raised at the pole
    x = -1 of an element in the branch not taken, and the whole operand's gradient became inf
    (which the check passed). Only live elements' slopes are computed now; the values are
    the scalar path's at each element (dgamma'(x) = gamma(x) (digamma(x)**2 + trigamma(x)))."""
    x = [-1.0, 0.5, 3.0]
    result = gradcli.evaluate("sum(where(x > 0, dgamma(x), 0))", {"x": x})
    for k, at in enumerate(x):
        scalar = gradcli.evaluate("where(x > 0, dgamma(x), 0)", {"x": at}, check=False)
        assert result.gradients["x"][k] == scalar.gradients["x"], at
    assert result.check.ok
    hessian = gradcli.evaluate("sum(where(x > 0, gamma(x), 0))", {"x": [-1.0, 2.0, 3.0]},
                               order=2).hessian
    assert np.isfinite(hessian.matrix["x"]["x"]).all() and hessian.check.ok
    assert hessian.matrix["x"]["x"][0][0] == 0.0
    for mode in ("forward", "reverse"):
        jacobian = gradcli.evaluate("where(x > 0, dgamma(x), 0)", {"x": [-1.0, 3.0]}, mode=mode)
        block = next(iter(jacobian.jacobian.values()))["x"]
        assert block[0][0] == 0.0 and np.isfinite(block).all() and jacobian.check.ok


@pytest.mark.parametrize("mode", [None, "reverse", "forward"])
def test_a_live_slope_that_is_not_finite_names_its_element(mode):
    """Found by a review: sqrt'(0) at a live element of a node partly in a branch not taken
    ended in a traceback; it is the error sum(sqrt(x)) gives, naming x[0] (a forward-mode
    Jacobian names its block, as without pieces)."""
    text = "sum(where(x >= 0, sqrt(x), -x))" if mode is None else "where(x >= 0, sqrt(x), -x)"
    says = (r"Jacobian of #5 .* with respect to x is not finite" if mode == "forward"
            else r"not finite at x\[0\] in #\d sqrt\(x\)")
    with pytest.raises(gradcli.NumericError, match=says):
        gradcli.evaluate(text, {"x": [0.0, 2.0, -3.0]}, **({} if mode is None else {"mode": mode}))


def test_a_branch_not_taken_prints_no_numpy_warning():
    """Found by a review: the check's moves of a node linear in x (sin(x)/x) divided by the
    element x = 0 of a branch not taken, and NumPy warned on stderr."""
    done = subprocess.run([sys.executable, "-W", "error", "-m", "gradcli", "eval",
                           "sum(where(x != 0, sin(x)/x, 1))", "--x", "[0, 0.5, 3]", "--json"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert json.loads(done.stdout)["check"]["ok"]


def test_the_graph_of_an_array_program_with_pieces_draws_them():
    """Found by a review (there since arrays came): graph used the scalar liveness on array
    conditions ("the truth value of an array is ambiguous")."""
    done = invoke("graph", "sum(where(x > 0, x**2, 0))", "--x", "[-1, 2, 3]")
    assert done.exit_code == 0, done.output
    assert "grad [0, 4, 6]" in done.stdout


def test_a_sweep_through_a_pole_of_a_slope_rule_gives_each_point_its_record():
    """Found while fixing the review's dgamma case: a sweep of dgamma(x) over -2:2:5 ended in a
    ZeroDivisionError traceback (its slope computed point by point raised at the poles); each
    point now gets its row, the poles their error and the others the scalar path's numbers."""
    done = invoke("eval", "dgamma(x)", "--x", "-2:2:5", "--csv")
    rows = done.stdout.strip().splitlines()[1:]
    assert done.exit_code == 3 and len(rows) == 5 and "Traceback" not in done.output
    assert all("a pole of the gamma function" in row for row in rows[:3])
    at_one = gradcli.evaluate("dgamma(x)", {"x": 1.0}, check=False)
    assert rows[3].split(",")[:3] == ["1", repr(at_one.value), repr(at_one.gradients["x"])]
    masked = invoke("eval", "where(x > 0, dgamma(x), 0)", "--x", "-2:2:5", "--csv")
    assert [row.split(",")[1:3] for row in masked.stdout.strip().splitlines()[1:4]] == [
        ["0", "0"]] * 3


def test_diff_counts_a_piece_only_where_its_where_decides():
    """Found by a bug hunt: an inner where's condition was counted as seen at points where
    that where is in a branch not taken, so x**3's piece on (0.999, 1.001) was called checked.
    Now only points where the where is live count, and the note names the piece."""
    result = CliRunner().invoke(cli, ["diff", "where(x > 0.999, where(x < 1.001, x**3, x**2), x)",
                                      "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["checked"]["unchecked_pieces"] == [
        "not checked where x < 1.001 is true (no sample point took that piece)"]


def test_a_node_read_only_through_a_condition_is_not_checked_by_moving_it():
    """Found by a bug hunt: in where(x*y != 0, sin(x*y)/(x*y), 1) at y = 0 the x*y that feeds
    the condition alone, moved by the per-node check, switched the condition: a false failure
    (status 1), where --csv at the same point passed. Its quotient means nothing, as a truth
    value's does not; the gradients (0 and 0, checked) are right."""
    for text, values in (("where(x*y != 0, sin(x*y)/(x*y), 1)", {"x": 1.0, "y": 0.0}),
                         ("sum(where(x*y != 0, sin(x*y)/(x*y), 1))",
                          {"x": [1.0, 1.0], "y": [0.0, 1.0]})):
        result = gradcli.evaluate(text, values)
        assert result.check.ok, text
        table = invoke("eval", text, *[f"--{n}={json.dumps(v)}" for n, v in values.items()])
        assert table.exit_code == 0, table.output


def test_a_numpy_export_with_pieces_does_not_warn_of_a_branch_not_taken(tmp_path):
    """Found by a bug hunt: NumPy computes both branches of np.where, so the export warned (an
    error under -W error or np.seterr(all="raise")) of log(-1) in a branch not taken."""
    done = invoke("diff", "sum(where(x > 0, x*log(x), 0))", "--shape", "x=3", "--format",
                  "python")
    path = tmp_path / "exported.py"
    path.write_text(done.stdout)
    script = ("import numpy as np, exported; np.seterr(all='raise'); "
              "value, grads = exported.f(np.array([-1.0, 2.0, 3.0])); print(value, *grads['x'])")
    run = subprocess.run([sys.executable, "-W", "error", "-c", script], cwd=tmp_path,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    numbers = [float(word) for word in run.stdout.split()]
    assert numbers == pytest.approx([2 * math.log(2) + 3 * math.log(3), 0.0,
                                     math.log(2) + 1, math.log(3) + 1], rel=1e-15)


def test_diff_of_an_array_program_with_pieces_keeps_them_apart():
    """An array program's Jacobian keeps its pieces apart element by element (it was refused:
    a product picked the piece, so sqrt'(-1) of a branch not taken left the formula without a
    value). Its export is checked against the Jacobian by hand at points with elements on both
    sides and at 0 (sqrt'(0) in the branch not taken); a Hessian where a piece meets a matrix
    product, against the Hessian by hand. The piece count works on array sample points too."""
    printed = CliRunner().invoke(cli, ["diff", "where(x > 0, sqrt(x), -x)", "--shape", "x=3",
                                       "--format", "python"])
    assert printed.exit_code == 0, printed.output
    space: dict = {}
    exec(compile(printed.stdout, "exported", "exec"), space)  # our own export, not user input
    output = "where(x > 0, sqrt(x), -x)"
    for x, value in (([-1.0, 4.0, 0.0], [1.0, 2.0, 0.0]),  # 0, tiny -x: sqrt' has no value
                     ([-4.0, 0.25, -1e-300], [4.0, 0.5, 1e-300])):
        values, jacobians = space["f"](np.array(x))
        assert np.array_equal(values[output], value)
        assert jacobians.keys() == {output} and jacobians[output].keys() == {"x"}
        assert np.array_equal(jacobians[output]["x"], np.diag([-1.0, 0.5 / value[1], -1.0]))
    hessian = CliRunner().invoke(cli, ["diff", "where(x > 0, sqrt(x), -x)@A@x", "--shape", "x=3",
                                       "--shape", "A=3x3", "--order", "2", "--format", "python"])
    assert hessian.exit_code == 0, hessian.output
    exec(compile(hessian.stdout, "exported", "exec"), space)
    a = np.array([[1.0, -2.0, 0.5], [0.3, 2.0, -1.0], [1.5, 0.7, 3.0]])
    for x in ([-1.0, 4.0, 0.0], [2.0, -3.0, 0.25]):
        x = np.array(x)
        inside = x > 0
        with np.errstate(divide="ignore"):  # w' and w'' of the piece taken
            slope = np.where(inside, 0.5 / np.sqrt(np.abs(x)), -1.0)
            bend = np.where(inside, -0.25 * np.abs(x) ** -1.5, 0.0)
        by_hand = np.diag(bend * (a @ x)) + np.diag(slope) @ a + a.T @ np.diag(slope)
        assert np.allclose(space["f"](x, a)[1]["x"]["x"], by_hand, rtol=1e-14, atol=1e-14)
    rows = CliRunner().invoke(cli, ["diff", "where(x > 0, sqrt(x), -x)", "--x", "[-1, 4, 0.25]"])
    assert rows.exit_code == 0, rows.output
    nested = CliRunner().invoke(cli, ["diff", "sum(where(x > 0.999, where(x < 1.001, x**3, "
                                      "x**2), x))", "--shape", "x=3", "--json"])
    assert nested.exit_code == 0, nested.output
    assert json.loads(nested.stdout)["checked"]["unchecked_pieces"] == [
        "not checked where x < 1.001 is true (no sample point took that piece)"]


def _elementwise_functions() -> list[str]:
    from gradcli.engine.ops import OPS

    return sorted(name for name, op in OPS.items()
                  if op.arity == 1 and not op.is_array and name.isidentifier()
                  and name not in ("neg", "logical_not"))  # operators: -x, not x


@pytest.mark.parametrize("name", _elementwise_functions())
def test_every_function_s_jacobian_under_a_where_has_a_value_where_the_program_has(name):
    """Every element-wise row of the op table in a piece, ``where(x > 0.5, f(x), x**2)`` with
    ``--shape x=3``: the exported Jacobian at a point with an element in the other piece
    (f(-0.7) may have no value: log, acosh, rsqrt) agrees with central differences of the
    export's own values. The formula once picked the piece with a matrix product, so a piece
    not taken spoiled its column; and a row computed element by element raised there."""
    from gradcli.engine.ops import OPS

    op = OPS[name]
    live = [v for v in (0.62, 0.71, 0.83, 0.97, 1.13, 1.29)
            if op.domain is None or op.domain(v) is None]
    text = f"where(x > 0.5, {name}(x), x**2)"
    done = CliRunner().invoke(cli, ["diff", text, "--shape", "x=3", "--format", "python"])
    assert done.exit_code == 0, done.output
    space: dict = {}
    exec(compile(done.stdout, "exported", "exec"), space)  # our own export, not user input
    x, h = np.array([-0.7, live[0], live[-1]]), 1e-6
    values, jacobians = space["f"](x)
    (output,) = values
    differences = np.array([(space["f"](x + step)[0][output] - space["f"](x - step)[0][output])
                            / (2 * h) for step in np.eye(3) * h]).T
    assert np.allclose(jacobians[output]["x"], differences, rtol=1e-5, atol=1e-7)
    assert jacobians[output]["x"][0].tolist() == [-1.4, 0.0, 0.0]  # 2x at -0.7, by hand


def test_a_node_shared_by_pieces_of_two_conditions_keeps_its_factor_in_the_branches():
    """Found by a bug hunt: sqrt(x) read by two wheres gets the gradient where(x > 0, 1, 0) +
    where(x > 1, 1, 0), and its slope 0.5/sqrt(x) was multiplied onto that sum, outside the
    branches: no value at x < 0, where the program is 0 (refused as "a bug in gradcli diff").
    The factor now goes into each piece. Exports checked by hand on every side."""
    scalar = CliRunner().invoke(cli, ["diff", "where(x > 0, sqrt(x), 0) + where(x > 1, sqrt(x), 0)",
                                      "--format", "python"])
    assert scalar.exit_code == 0, scalar.output
    space: dict = {}
    exec(compile(scalar.stdout, "exported", "exec"), space)  # our own export, not user input
    for x, slope in ((-1.0, 0.0), (0.25, 1.0), (4.0, 0.5)):  # 0, 0.5/sqrt(x), twice that
        assert space["f"](x)[1] == (slope,)
    vector = CliRunner().invoke(cli, ["diff", "sum(where(x > 0, sqrt(x), 0) + where(x > 1, "
                                      "sqrt(x), 0))", "--shape", "x=3", "--format", "python"])
    assert vector.exit_code == 0, vector.output
    exec(compile(vector.stdout, "exported", "exec"), space)
    value, gradient = space["f"](np.array([-1.0, 0.25, 4.0]))
    assert value == 0.5 + 4.0 and gradient["x"].tolist() == [0.0, 1.0, 0.5]
