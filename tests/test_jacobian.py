"""Jacobians of programs with several outputs or an array output (issue 17): closed forms
written here by hand, forward mode against reverse mode, both against central differences
computed here with NumPy (independently of gradcli's own check), the mode chosen by size, and
the command line's table, JSON, batch lines and refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from test_properties import expressions, points  # generated smooth expressions, points

import gradcli
from gradcli.cli import cli
from gradcli.gradcheck.evaluation import Result
from gradcli.gradcheck.jacobian_check import JacobianResult

RNG = np.random.default_rng(17)
W = RNG.normal(size=(3, 2))
X = RNG.normal(size=2)
A = RNG.normal(size=(3, 3)) + 3 * np.eye(3)


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


def numeric_jacobian(program: str, values: dict, output: int, wrt: str) -> np.ndarray:
    """Central differences of output number ``output`` by evaluating the program here (each
    output's value with check=False), one input element at a time: shape out + in."""
    base = {name: np.array(value, dtype=float) for name, value in values.items()}

    def outputs(point: dict) -> np.ndarray:
        found = gradcli.evaluate(program, point, check=False)
        return np.asarray(list(found.values.values())[output], dtype=float)

    x = base[wrt]
    columns = []
    for flat in range(x.size):
        h = 1e-6 * max(1.0, abs(float(x.flat[flat])))
        up, down = x.copy(), x.copy()
        up.flat[flat] += h
        down.flat[flat] -= h
        columns.append((outputs({**base, wrt: up}) - outputs({**base, wrt: down})) / (2 * h))
    stacked = np.moveaxis(np.array(columns), 0, -1)
    return stacked.reshape(np.shape(outputs(base)) + x.shape)


def test_two_scalar_outputs_are_a_two_by_two_jacobian():
    result = gradcli.evaluate("f = x*y; g = x + y; f, g", {"x": 2, "y": 3})
    assert isinstance(result, JacobianResult)
    assert result.values == {"f": 6.0, "g": 5.0}
    assert result.jacobian == {"f": {"x": 3.0, "y": 2.0}, "g": {"x": 1.0, "y": 1.0}}
    assert result.check.ok and result.check.checked == 4


def test_matrix_vector_product_closed_forms():
    result = gradcli.evaluate("W@x", {"W": W, "x": X})
    jac = result.jacobian["W@x"]
    np.testing.assert_allclose(jac["x"], W)  # d(Wx)/dx = W
    expected = np.einsum("ik,l->ikl", np.eye(3), X)  # d(Wx)_i/dW_kl = delta_ik x_l
    np.testing.assert_allclose(jac["W"], expected)
    assert jac["W"].shape == (3, 3, 2)  # out-shape x in-shape


def test_softmax_jacobian_is_diag_s_minus_ss():
    x = np.array([0.5, -1.0, 2.0, 0.0])
    result = gradcli.evaluate("softmax(x)", {"x": x})
    s = np.exp(x) / np.exp(x).sum()
    np.testing.assert_allclose(result.jacobian["softmax(x)"]["x"], np.diag(s) - np.outer(s, s),
                               atol=1e-15)


def test_inverse_jacobian_is_minus_inv_e_inv():
    result = gradcli.evaluate("inv(A)", {"A": A})
    inv = np.linalg.inv(A)
    expected = -np.einsum("ik,lj->ijkl", inv, inv)  # d(A^-1)_ij / dA_kl
    np.testing.assert_allclose(result.jacobian["inv(A)"]["A"], expected, atol=1e-12)


PROGRAMS = [
    ("softmax(W@x)*2, sum(inv(A)), outer(x, x)'[0], [x[0], det(A)]", {"W": W, "x": X, "A": A}),
    ("tanh(W@x + 1)", {"W": W, "x": X}),
    ("log_softmax(W)", {"W": W}),
    ("r = A@A' - eye(3); r[1:], norm(r), logdet(A@A')", {"A": A}),
    ("u = exp(x)*y; u/sum(u), y**2", {"x": X, "y": 0.7}),
    ("W'@W, mean(W, ), W[:, 0]*x[1]".replace(", )", ")"), {"W": W, "x": X}),
]


@pytest.mark.parametrize(("program", "values"), PROGRAMS)
def test_forward_and_reverse_modes_agree_with_numpy_differences(program, values):
    forward = gradcli.evaluate(program, values, mode="forward")
    reverse = gradcli.evaluate(program, values, mode="reverse")
    assert forward.mode == "forward" and reverse.mode == "reverse"
    assert forward.check.ok and reverse.check.ok
    for number, label in enumerate(reverse.jacobian):
        for name in values:
            np.testing.assert_allclose(forward.jacobian[label][name],
                                       reverse.jacobian[label][name], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(reverse.jacobian[label][name],
                                       numeric_jacobian(program, values, number, name),
                                       rtol=1e-6, atol=1e-7)


def test_the_mode_with_fewer_passes_is_chosen():
    wide = gradcli.evaluate("x*ones(6)", {"x": 2.0})  # 1 input element, 6 outputs
    assert (wide.mode, wide.passes) == ("forward", 1)
    tall = gradcli.evaluate("W@x", {"W": W, "x": X})  # 8 input elements, 3 outputs
    assert (tall.mode, tall.passes) == ("reverse", 3)


def test_one_scalar_output_is_still_a_gradient():
    assert isinstance(gradcli.evaluate("x*y", {"x": 2, "y": 3}), Result)
    assert isinstance(gradcli.evaluate("sum(W@x)", {"W": W, "x": X}), Result)


def test_table_says_which_mode_ran_and_the_check():
    done = invoke("eval", "f = x*y; g = x + y; f, g", "--x", "2", "--y", "3", "--mode", "forward")
    assert done.exit_code == 0, done.output
    assert "forward mode, one pass per input element: 2 passes" in done.output
    assert "✓ check passed: 4 Jacobian entries agree with finite differences" in done.output


def test_json_has_the_jacobian_as_nested_lists():
    done = invoke("eval", "W@x", "--W", "[[1, 2], [3, 4]]", "--x", "[1, 1]", "--json")
    record = json.loads(done.output)
    assert record["outputs"] == {"W@x": [3.0, 7.0]}
    assert record["jacobian"]["W@x"]["x"] == [[1.0, 2.0], [3.0, 4.0]]
    assert record["jacobian"]["W@x"]["W"] == [[[1.0, 1.0], [0.0, 0.0]], [[0.0, 0.0], [1.0, 1.0]]]
    assert record["mode"] == "reverse" and record["check"]["ok"] is True
    assert record["check"]["checked"] == 12


@pytest.mark.parametrize(("program", "labels"), [
    # f and g are both the node x: they were labelled x and "x #0"
    ("f = x; g = x; f, g", ["f", "g"]),
    ("f = x*y; g = f; (f), g  # a comment", ["f", "g"]),
    ("f = x*y; f, x*2", ["f", "x*2"]),
    ("x, x", ["x", "x #0"]),  # written alike: told apart by the node's id
    ("f = x\ng = y\nf, g\n", ["f", "g"]),  # statements on lines, as a file has them
])
def test_outputs_are_labelled_by_the_names_they_are_written_as(program, labels):
    done = invoke("eval", program, "--x", "1", *(["--y", "2"] if "y" in program else []),
                  "--json")
    record = json.loads(done.stdout)
    assert list(record["outputs"]) == labels and list(record["jacobian"]) == labels, record
    diffed = CliRunner().invoke(cli, ["diff", "f = sum(x); g = y; f, g", "--shape", "x=3",
                                      "--shape", "y=2"])
    assert "dg/dy = eye(2)" in diffed.stdout, diffed.output


def test_batch_lines_stay_one_per_program():
    done = invoke("eval", "-", "--x", "[1, 2]", stdin="x*2\nsum(x)\nf = x[0]; f, 2*f\n")
    lines = done.output.strip().split("\n")
    assert len(lines) == 3, done.output
    assert "d(x*2)/dx [[2, 0], [0, 2]]" in lines[0] and "d/dx [1, 1]" in lines[1]
    assert "df/dx [1, 0]" in lines[2]


def test_a_kink_fails_the_check_with_status_1():
    done = invoke("eval", "relu(x)", "--x", "[0, 1]")
    assert done.exit_code == 1
    assert "✗ check failed" in done.output


# (program, point, each output's derivative by hand): entries the gradient check passes alone
ROUNDING = [
    # 1e8 + x: its central difference carries rounding of 1e8 (error 3e-4 against rtol 1e-5)
    ("f = 1e8 + x; g = x*2; f, g", {"x": 0.3}, {"f": 1.0, "g": 2.0}),
    # ... also where the 1e8 is gone by the output: the rounding happened downstream of x
    ("f = (1e8 + x) - 1e8; g = x*2; f, g", {"x": 0.3}, {"f": 1.0, "g": 2.0}),
]
DOMAIN = [
    # a central step (6e-6) from 1e-7 leaves the domain: a one-sided difference stays inside
    ("f = sqrt(x); g = log(x); f, g", {"x": 1e-7},
     {"f": 0.5 / np.sqrt(1e-7), "g": 1 / 1e-7}),
    ("sqrt(x)", {"x": [1e-7, 1.0]}, {"sqrt(x)": np.diag([0.5 / np.sqrt(1e-7), 0.5])}),
]
ONE_POLICY = ROUNDING + DOMAIN


@pytest.mark.parametrize(("program", "point", "by_hand"), ONE_POLICY)
def test_a_jacobian_entry_passes_where_the_same_gradient_does(program, point, by_hand):
    """The Jacobian's check is the gradient check's step policy (steps.settle): each entry
    agrees with the closed form written here, and the check passes as each output's own
    gradient check does (it failed both, with a NaN error, before)."""
    result = gradcli.evaluate(program, point)
    assert isinstance(result, JacobianResult)
    for label, derivative in by_hand.items():
        np.testing.assert_allclose(result.jacobian[label]["x"], derivative, rtol=1e-12)
    assert result.check.ok, result.check
    assert np.isfinite(result.check.max_error)
    for statement in program.split(";")[:-1]:  # each output alone (of f, g): its gradient check
        alone = gradcli.evaluate(statement.split("=")[1], point)
        assert alone.check.ok


@pytest.mark.parametrize(("program", "point", "by_hand"), DOMAIN)
@pytest.mark.parametrize("scale", [1 + 1e-4, 1 - 1e-4])
def test_a_jacobian_entry_off_by_a_little_fails_at_every_step(program, point, by_hand, scale):
    """The same points with every entry of the Jacobian 1e-4 off: smaller steps and one-sided
    differences never let a wrong entry pass. (Not ``ROUNDING``: the rounding of 1e8 hides
    1e-4 from any difference, and the gradient check allows for it as well.)"""
    from gradcli.gradcheck.jacobian_check import check_jacobian

    result = gradcli.evaluate(program, point)
    nodes = result.program.nodes
    outputs = result.program.outputs or [nodes[-1]]
    wrong = {label: {name: np.asarray(block) * scale for name, block in row.items()}
             for label, row in result.jacobian.items()}
    check = check_jacobian(result.program, outputs, list(result.values), wrong, 1e-5, 1e-8)
    assert not check.ok
    assert check.failed == sum(int(np.count_nonzero(np.asarray(b))) for row in wrong.values()
                               for b in row.values())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions, expressions, points)
def test_two_outputs_have_their_own_gradients_and_check_as_they_do(first, second, point):
    """``f = a; g = b; f, g``: each Jacobian row is that output's own gradient (each checked
    against mpmath by test_properties), and the Jacobian's check passes wherever both
    gradient checks pass: one step policy for both."""
    texts = [first[0], second[0]]
    try:
        alone = [gradcli.evaluate(text, point) for text in texts]
        both = gradcli.evaluate(f"f = {texts[0]}; g = {texts[1]}; f, g", point)
    except gradcli.NumericError:
        assume(False)
        return
    assume(all(abs(result.value) < 1e12 for result in alone))
    # by position: `f = x` names no node of its own, so that row is labelled x
    for row, result in zip(both.jacobian.values(), alone, strict=True):
        for name, gradient in result.gradients.items():
            assert float(row[name]) == pytest.approx(gradient, rel=1e-9, abs=1e-12), (
                name, texts)
    if all(result.check.ok for result in alone):
        assert both.check.ok, (texts, point, both.check)


@pytest.mark.parametrize(("args", "words"), [
    (["eval", "x*y, x", "--x", "1", "--y", "2", "--hessian"], "Hessian"),
    (["eval", "x*y, x", "--x", "1", "--y", "2", "--check-method", "complex"], "central"),
    (["graph", "W@x", "--W", "[[1, 2], [3, 4]]", "--x", "[1, 2]"], "gradcli eval gives its"),
    (["eval", "x, ", "--x", "1"], "error"),
    (["eval", "x*y, x", "--x", "1:2:3", "--y", "1"], "this one has several outputs"),
    (["plot", "x*y, x", "--x", "-1:1:3", "--y", "1"], "this one has several outputs"),
    (["eval", "f = x; f, 2", "--x", "1"], "a number is not an output"),
])
def test_what_jacobians_do_not_do_is_a_usage_error(args, words):
    done = invoke(*args)
    assert done.exit_code == 2, done.output
    assert words in done.output
    assert "Traceback" not in done.output


CHECKS = '''
[[check]]
name = "two outputs"
expr = "f = x*y; g = x + y; f, g"
at = {x = 2, y = 3}
jacobian = {f = {x = "y", y = 2}, g = {x = 1, y = 1}}

[[check]]
name = "matrix times vector"
expr = "W@x"
at = {W = [[1, 2], [3, 4]], x = [1, 1]}
jacobian = {"W@x" = {x = "W"}}
'''


def test_check_files_assert_jacobians(tmp_path):
    path = tmp_path / "jacobians.toml"
    path.write_text(CHECKS)
    passed = invoke("check", str(path))
    assert passed.exit_code == 0, passed.output
    assert "d(W@x)/dx" in passed.output
    wrong = CHECKS.replace('x = "W"', "x = [[1, 2], [3, 5]]")
    path.write_text(wrong)
    failed = invoke("check", str(path))
    assert failed.exit_code == 1, failed.output
    assert "expected 5, got 4" in failed.output


@pytest.mark.parametrize(("assertion", "words"), [
    ('jacobian = {h = {x = 1}}', "expr has no output h"),
    ('jacobian = {f = {z = 1}}', "expr has no variable z"),
    ('gradients = {x = 1}', "check.gradients: is of one scalar output, and expr has several"),
    ('value = 1', "check.value: is of one scalar output, and expr has several (f, x)"),
])
def test_check_file_jacobian_mistakes_are_usage_errors(tmp_path, assertion, words):
    path = tmp_path / "bad.toml"
    path.write_text('[[check]]\nname = "a"\nexpr = "f = x*y; f, x"\nat = {x = 1, y = 2}\n'
                    f'{assertion}\n')
    done = invoke("check", str(path))
    assert done.exit_code == 2, done.output
    assert words in done.output


DIFF_PROGRAMS = [
    ("f = x*y; g = x + sin(y); f, g", "x*y", "x + sin(y)"),
    ("u = exp(x*y); u/(1 + y**2), log(1 + x**2)*u, atan2(y, x)",
     "exp(x*y)/(1 + y**2)", "log(1 + x**2)*exp(x*y)", "atan2(y, x)"),
]


@pytest.mark.parametrize("case", DIFF_PROGRAMS)
def test_diff_of_several_outputs_prints_the_jacobian_entries_sympy_agrees(case):
    import sympy

    program, *formulas = case
    done = invoke("diff", program, "--json")
    assert done.exit_code == 0, done.output
    rows = json.loads(done.output)["jacobian"]
    assert len(rows) == len(formulas)
    x, y = sympy.symbols("x y")
    point = {x: 0.7, y: -0.4}
    for row, formula in zip(rows.values(), formulas, strict=True):
        expected = sympy.sympify(formula)
        for name, symbol in (("x", x), ("y", y)):
            printed = gradcli.evaluate(row[name], {"x": 0.7, "y": -0.4}, check=False).value \
                if row[name] not in ("0",) else 0.0
            exact = float(sympy.diff(expected, symbol).subs(point))
            assert printed == pytest.approx(exact, rel=1e-12, abs=1e-12), (row, name)


def test_diff_of_several_outputs_text_and_latex():
    text = invoke("diff", "f = x*y; g = 2*x; f, g")
    assert text.output.split("\n")[:4] == ["df/dx = y", "df/dy = x", "dg/dx = 2", "dg/dy = 0"]
    latex = invoke("diff", "f = x*y; g = 2*x; f, g", "--format", "latex")
    assert r"\frac{\partial g}{\partial x} = 2" in latex.output
    # the NumPy export of several scalar outputs (refused before; a bug hunt found that
    # --shape x=scalar gave it): imported and called, it is the Jacobian by hand
    python = invoke("diff", "f = x*y; g = 2*x; f, g", "--format", "python")
    assert python.exit_code == 0 and "checked at 3 points" in python.stderr, python.output
    namespace: dict = {}
    exec(compile(python.stdout, "<export>", "exec"), namespace)  # gradcli's own output
    values, jacobian = namespace["f"](3.0, 5.0)
    assert values == {"f": 15.0, "g": 6.0}
    assert jacobian == {"f": {"x": 5.0, "y": 3.0}, "g": {"x": 2.0, "y": 0.0}}


def test_the_benchmark_jacobian_matches_its_closed_form():
    """J1 of benchmarks/run.py: 100 outputs, 100 inputs, both modes against the formula."""
    x = np.random.default_rng(5).normal(size=100)
    s = np.exp(x) / np.exp(x).sum()
    y = np.tanh(x)
    expected = y[:, None] * (np.diag(s) - np.outer(s, s)) + np.diag((1 - y * y) * s + x)
    for mode in ("forward", "reverse"):
        result = gradcli.evaluate("y = tanh(x); y*softmax(x) + x**2/2", {"x": x}, mode=mode,
                                  check=False)
        np.testing.assert_allclose(result.jacobian["y*softmax(x) + x**2/2"]["x"], expected,
                                   rtol=1e-12, atol=1e-15)


def test_a_declared_input_no_output_uses_has_a_zero_block():
    """As for one output (issue 15): x = [1, 2] is an input of every output, with zeros."""
    result = gradcli.evaluate("x = [1, 2]; y*3, y", {"y": 1.0})
    assert result.jacobian["y*3"]["x"].tolist() == [0.0, 0.0]
    assert result.jacobian["y*3"]["y"] == 3.0 and result.check.ok


@pytest.mark.parametrize("cells", [1, 7, 40])
def test_columns_settled_in_chunks_give_the_verdicts_of_one_call(monkeypatch, cells):
    """``_CHUNK_CELLS`` bounds the entries settled at once (memory); chunks of any size give
    the same errors, counts and worst entries, for a right Jacobian and for a wrong one."""
    from gradcli.gradcheck import jacobian_check

    program = "f = tanh(W@x); g = sum(W*W)*x; f, g"
    result = gradcli.evaluate(program, {"W": W, "x": X})
    outputs = result.program.outputs
    wrong = {label: {name: np.asarray(block) for name, block in row.items()}
             for label, row in result.jacobian.items()}
    wrong["f"]["W"] = wrong["f"]["W"] * (1 + 1e-3)

    def verdicts(blocks):
        check = jacobian_check.check_jacobian(result.program, outputs, list(result.values),
                                              blocks, 1e-5, 1e-8)
        return [(entry.failed, entry.checked, entry.where, entry.max_error)
                for row in check.blocks.values() for entry in row.values()]

    whole = [verdicts(result.jacobian), verdicts(wrong)]
    monkeypatch.setattr(jacobian_check, "_CHUNK_CELLS", cells)
    assert [verdicts(result.jacobian), verdicts(wrong)] == whole
    assert all(failed == 0 for failed, *_ in whole[0])
    assert whole[1][0][0] == np.count_nonzero(wrong["f"]["W"])  # every nonzero entry of f/W
