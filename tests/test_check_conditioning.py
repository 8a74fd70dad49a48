"""A correct gradient of an ill-conditioned program fails the check for want of a step that is
small enough and large enough at once: the verdict says so, with the condition number, instead
of blaming a kink -- while a wrong gradient and a real kink keep their own verdicts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.gradcheck.check import check_gradients
from gradcli.output.verdicts import KINK_CAUSE

A = [[1.0, 1.0], [1.0, 1.0001]]


def closed_form(matrix: list[list[float]]) -> np.ndarray:
    """d sum(inv(A)) / dA = -(B^T 1)(1^T B^T) with B = inv(A): d(B) = -B dA B."""
    inverse = np.linalg.inv(np.array(matrix))
    ones = np.ones(len(matrix))
    return -np.outer(inverse.T @ ones, ones @ inverse.T)


def cli_run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout + result.stderr


def test_the_gradient_is_right_against_a_closed_form_and_autograd():
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    result = gradcli.evaluate("sum(inv(A))", {"A": A})
    oracle = autograd.grad(lambda m: anp.sum(anp.linalg.inv(m)))(np.array(A))
    np.testing.assert_allclose(result.gradients["A"], closed_form(A), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(result.gradients["A"], oracle, rtol=1e-9, atol=1e-9)


def test_the_verdict_names_ill_conditioning_and_the_condition_number():
    status, text = cli_run("eval", "sum(inv(A))", "--A", json.dumps(A))
    number = np.linalg.cond(np.array(A))  # 2-norm, about 4.0e4
    assert status == 1
    assert "ill-conditioned" in text and f"condition number of A (which inv takes) is " \
        f"{number:.1e}" in text
    assert "not differentiable" not in text


def test_json_carries_the_condition_number():
    status, text = cli_run("eval", "sum(inv(A))", "--A", json.dumps(A), "--json")
    record = json.loads(text)
    assert status == 1 and record["check"]["ok"] is False
    found = record["check"]["ill_conditioned"]
    assert found["matrix"] == "A"
    assert found["condition_number"] == pytest.approx(np.linalg.cond(np.array(A)), rel=1e-9)
    well = json.loads(cli_run("eval", "sum(inv(A))", "--A", "[[2,1],[1,3]]", "--json")[1])
    assert well["check"]["ok"] and well["check"]["ill_conditioned"] is None


def test_det_and_logdet_name_their_matrix_too():
    for program in ("det(A) * 0 + sum(inv(A))", "logdet(A) - logdet(A) + sum(inv(A))"):
        report = gradcli.evaluate(program, {"A": A}).check
        assert report.conditioning is not None and report.conditioning.matrix == "A"


def test_a_scalar_program_reports_the_amplification_it_measured():
    # sin(1e8*x): rounding of 1e8*x swamps every step small enough to follow the oscillation.
    # The amplification: 1e8*x's magnitude times its effect on the output, |cos(1e8)|, over it
    report = gradcli.evaluate("sin(1e8*x)", {"x": 1.0}).check
    assert not report.ok and report.conditioning is not None
    assert report.conditioning.matrix is None
    assert report.conditioning.number == pytest.approx(
        1e8 * abs(np.cos(1e8)) / abs(np.sin(1e8)), rel=1e-6)


def test_a_wrong_gradient_of_the_same_program_is_not_excused():
    result = gradcli.evaluate("sum(inv(A))", {"A": A})
    result.program.variables["A"].grad[0, 0] += 1e-3  # 0.1 % off: ten times what rounding hides
    report = check_gradients(result.program)
    assert not report.ok and report.conditioning is None
    result.program.variables["A"].grad[1, 1] += 1e-2
    assert check_gradients(result.program).conditioning is None


def test_a_wrong_gradient_at_a_well_conditioned_point_fails_plainly():
    result = gradcli.evaluate("sum(inv(A))", {"A": [[2.0, 1.0], [1.0, 3.0]]})
    result.program.variables["A"].grad *= 1.01
    report = check_gradients(result.program)
    assert not report.ok and report.conditioning is None


def test_a_real_kink_keeps_the_kink_hint():
    for args in (("relu(x)", "--x", "0"), ("sum(relu(x))", "--x", "[0, 1]")):
        status, text = cli_run("eval", *args)
        assert status == 1 and KINK_CAUSE.split("(")[0] in text and "ill-conditioned" not in text


def test_a_check_file_says_it_too(tmp_path):
    path = tmp_path / "checks.toml"
    path.write_text('[[check]]\nname = "near singular"\nexpr = "sum(inv(A))"\n'
                    'at = {A = [[1, 1], [1, 1.0001]]}\nfinite = true\n')
    status, text = cli_run("check", str(path))
    assert status == 1 and "ill-conditioned" in text and "4.0e+04" in text
    status, text = cli_run("check", str(path), "--json")
    findings = json.loads(text)["checks"][0]["findings"]
    notes = [f["note"] for f in findings if f["assertion"] == "finite differences d/dA"]
    assert notes and "condition number of A" in notes[0]


@pytest.mark.parametrize(("text", "values"), [
    ("relu(x)**2 + 1", {"x": 0.0}),
    ("x*abs(x) + 1", {"x": 0.0}),
    ("relu(x)**2 + y**2", {"x": 0.0, "y": 1.0}),
    ("sum(relu(x)**2)", {"x": np.array([0.0, 1.0])}),
])
def test_a_gradient_of_0_whose_differences_close_in_as_h_passes(text, values):
    """Once differentiable at 0 (its second derivative jumps): central differences give h/2
    and close in on the gradient 0 only as h does, so the step where they are within 1e-8 is
    one where rounding of the value 1 is allowed more. That step was taken as swamped and the
    right gradient failed as "ill-conditioned: rounding is amplified 1.0 times" (a bug hunt);
    rounding is not amplified there, and the estimate that agrees settles it. The gradient
    is 0 by hand (2 relu(x) relu'(x), 2|x|)."""
    result = gradcli.evaluate(text, values)
    assert result.check.ok, result.check
    assert np.all(np.asarray(result.gradients["x"]) == np.asarray(
        2 * np.maximum(values["x"], 0.0)))
    sweep = CliRunner().invoke(cli, ["eval", "relu(x)**2 + 1", "--x", "0,1", "--csv"])
    assert sweep.exit_code == 0 and sweep.stdout.splitlines()[1:] == ["0,1,0,true,",
                                                                      "1,2,2,true,"]


def test_cancellation_is_still_ill_conditioning():
    result = gradcli.evaluate("(relu(x)**2 + 1) - 1", {"x": 0.0})
    assert not result.check.ok and result.check.conditioning is not None


def test_an_output_of_0_is_said_so_not_an_amplification_of_1e308():
    """largest / max(|output|, 1e-300) said "rounding is amplified 1.0e+308 times" (a bug
    hunt): log(x - 1e8) at 1e8 + 1 is log(1) = 0."""
    done = CliRunner().invoke(cli, ["eval", "log(x - 1e8)", "--x", "100000001", "--json"])
    check = json.loads(done.stdout)["check"]
    assert done.exit_code == 1 and check["ill_conditioned"] == {"condition_number": None,
                                                                "matrix": None}
    table = CliRunner().invoke(cli, ["eval", "log(x - 1e8)", "--x", "100000001"])
    assert "the output is 0 here, so the rounding of the values it is computed from is all of " \
           "it" in table.output and "1.0e+308" not in table.output
