"""``gradcli diff`` checks what it prints (issue 26): every derivative, read back and evaluated,
is compared with eval's engine before it is printed; the causes the issue lists are fixed.

Expected values are closed forms written here (NumPy), not gradcli's own output."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.engine.ops import OPS
from gradcli.errors import CheckError, ExitStatus
from gradcli.gradcheck.derivative_check import DiffCheck, check
from gradcli.symbolic import arrays as symbolic_arrays


def diff(*args: str):
    return CliRunner().invoke(cli, ["diff", *args])


def printed(done) -> dict[str, str]:
    assert done.exit_code == 0, done.output
    return dict(line.split(" = ", 1) if " = " in line.split(":")[0] else line.split(": ", 1)
                for line in done.stdout.splitlines())


def value_of(text: str, point: dict) -> np.ndarray:
    program = gradcli.parse(text)
    return np.asarray(gradcli.evaluate(program, {n: point[n] for n in program.variables},
                                       check=False).value)


def test_a_bias_gradient_counts_the_rows_it_was_broadcast_over():
    done = diff("sum(X@W + b)", "--wrt", "b", "--shape", "X=4x3", "--shape", "W=3x2",
                "--shape", "b=2")
    assert value_of(printed(done)["d/db"], {}).tolist() == [4.0, 4.0]


@pytest.mark.parametrize(("program", "shapes", "expected"), [
    ("sum(s + x)", ["x=3", "s=scalar"], 3.0),
    ("mean(W - s)", ["W=2x3", "s=scalar"], -1.0),
    ("sum(x - x + s)", ["x=3", "s=scalar"], 3.0),
])
def test_a_number_broadcast_over_an_array_gets_the_count(program, shapes, expected):
    args = [arg for shape in shapes for arg in ("--shape", shape)]
    text = printed(diff(program, "--wrt", "s", *args))["d/ds"]
    assert float(value_of(text, {"x": np.ones(3), "W": np.ones((2, 3))})) == expected


@pytest.mark.parametrize(("shape", "count"), [("1", 6.0), ("3x1", 2.0), ("1x2", 3.0),
                                              ("1x1", 6.0)])
def test_gradients_sum_back_to_shapes_with_ones(shape, count):
    """X is 3x2; c of shape 1, 3x1, 1x2 or 1x1 broadcasts over it: d/dc sum(X*c) = the sums
    of X over the stretched axes, here of ones: the number of elements each c sums."""
    done = diff("sum(X*c)", "--wrt", "c", "--shape", "X=3x2", "--shape", f"c={shape}")
    got = value_of(printed(done)["d/dc"], {"X": np.ones((3, 2))})
    assert got.shape == tuple(int(n) for n in shape.split("x"))
    assert np.all(got == count)


@pytest.mark.parametrize("program", ["sum(x - x + y)", "sum(x*0 + y)", "sum(x/x*y)",
                                     "sum(x**0*y)", "sum(exp(x - x)*y)"])
def test_folds_keep_the_shape(program):
    texts = printed(diff(program, "--shape", "x=3", "--shape", "y=3"))
    y = np.array([0.5, 1.5, 2.5])
    assert value_of(texts["d/dx"], {"x": np.ones(3), "y": y}).shape == (3,)
    assert value_of(texts["d/dy"], {"x": np.ones(3), "y": y}).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("args", [
    ["sum((W - W)@x)", "--shape", "W=3x3", "--shape", "x=3"],
    ["min(x - x) + sum(x)", "--shape", "x=3"], ["(x - x)[0] + sum(x)", "--shape", "x=3"],
    ["tr(W - W) + sum(W)", "--shape", "W=2x2"], ["logsumexp(x - x) + sum(x)", "--shape", "x=3"],
    ["sum(abs(x)*x)", "--shape", "x=3", "--order", "2"],
])
def test_the_issues_tracebacks_are_answers(args):
    done = diff(*args)
    assert done.exit_code == 0, done.output
    assert "checked at 3 points" in done.stderr


@pytest.mark.parametrize(("program", "second"), [
    ("sum(relu(x)*x)", lambda x: np.diag(2.0 * (x > 0))),
    ("sum(abs(x)*x)", lambda x: np.diag(2.0 * np.sign(x))),
    ("sum(floor(x)*x**2)", lambda x: np.diag(2.0 * np.floor(x))),
    ("sum(clip(x, 0.7, 1.2)*x)", lambda x: np.diag(2.0 * ((x > 0.7) & (x < 1.2)))),
])
def test_order_two_of_piecewise_functions(program, second):
    text = printed(diff(program, "--shape", "x=3", "--order", "2"))["d2/dx dx"]
    x = np.array([-0.4, 0.9, 2.3])
    np.testing.assert_allclose(value_of(text, {"x": x}), second(x))


def test_sample_points_come_from_the_domain_or_the_values_given():
    done = diff("sum(log(x - 2))", "--shape", "x=3")
    assert value_of(printed(done)["d/dx"], {"x": np.array([3.0, 4.0, 6.0])}).tolist() == [
        1.0, 0.5, 0.25]
    record = json.loads(diff("sum(log(x - 2))", "--x", "[3, 4.5]", "--json").stdout)
    assert record["checked"]["points"] == 1  # the point given, nothing else
    hessian = CliRunner().invoke(cli, ["eval", "sum(log(x - 2))", "--x", "[3, 4.5]",
                                       "--hessian"])
    assert hessian.exit_code == 0, hessian.output


def test_an_element_of_a_compound_node_is_labelled_in_parentheses():
    done = CliRunner().invoke(cli, ["eval", "sum(log(x - 2))", "--x", "[1, 4.5]"])
    assert done.exit_code == ExitStatus.NUMERIC
    assert "where (x - 2)[0] = -1" in done.output


def test_prod_with_a_zero_element_given_is_right_at_that_point():
    text = printed(diff("prod(x)", "--x", "[0, 2, 3]"))["d/dx"]
    assert value_of(text, {"x": np.array([0.0, 2.0, 3.0])}).tolist() == [6.0, 0.0, 0.0]
    assert value_of(text, {"x": np.array([0.0, 0.0, 3.0])}).tolist() == [0.0, 0.0, 0.0]


def test_a_wrong_derivative_is_never_printed(monkeypatch):
    """Drop the broadcast count again: the check fails loudly, naming the entry, the point
    and both numbers; --no-check prints the formula unchecked."""
    def without_count(b, part, out, shape):
        if len(b.arrays.shape(part)) < len(shape):
            return part
        return symbolic_arrays.unbroadcast(b, part, shape)

    monkeypatch.setattr(symbolic_arrays, "reduce_to", without_count)
    args = ["sum(X@W + b)", "--wrt", "b", "--shape", "X=4x3", "--shape", "W=3x2",
            "--shape", "b=2"]
    done = diff(*args)
    assert done.exit_code == ExitStatus.CHECK_FAILED
    assert done.stdout == ""
    assert "d/db = ones(2) at X = [4x3 array" in done.stderr
    assert "is 1 at [0], the engine's 4" in done.stderr
    unchecked = diff(*args, "--no-check")
    assert (unchecked.exit_code, unchecked.stdout) == (0, "d/db = ones(2)\n")
    assert unchecked.stderr == ""


def test_a_broken_export_is_never_printed():
    # the row's NumPy form, broken (a frozen row: its field set past its __setattr__)
    row = OPS["sigmoid"]
    written = row.numpy
    object.__setattr__(row, "numpy", "np.sigmoid({0})")
    try:
        done = diff("sum(sigmoid(x))", "--shape", "x=3", "--format", "python")
    finally:
        object.__setattr__(row, "numpy", written)
    assert done.exit_code == ExitStatus.CHECK_FAILED
    assert "export fails when called" in done.stderr and "sigmoid" in done.stderr
    assert done.stdout == ""


def test_the_check_is_callable_from_python():
    program = gradcli.parse("x**2*y")
    shapes = {"x": (), "y": ()}
    found = check(DiffCheck(program, shapes, {}, "gradient", {"x": "2*x*y", "y": "x**2"}))
    assert (found.points, found.entries) == (3, 2)
    with pytest.raises(CheckError, match=r"d/dx = 2\*x at x = .*: is .*, the engine's"):
        check(DiffCheck(program, shapes, {}, "gradient", {"x": "2*x", "y": "x**2"}))
    with pytest.raises(CheckError, match=re.escape("d2/dx dy = 2 at x = 1.5, y = 3")):
        check(DiffCheck(program, shapes, {"x": 1.5, "y": 3.0}, "hessian",
                        {"x": {"x": "2*y", "y": "2"}}))


def test_the_json_record_and_the_note_say_what_was_checked():
    record = json.loads(diff("sin(x)*y", "--order", "3", "--json").stdout)
    assert record["checked"] == {"points": 3, "entries": 8 + 4,
                                 "against": "central differences of the order below",
                                 "conventions": [], "unchecked_pieces": []}
    done = diff("softmax(x)", "--shape", "x=3")
    assert done.stderr == ("note: checked at 3 points: 1 derivative agrees with the "
                           "reverse-mode Jacobian\n")


def test_a_derivative_not_checked_says_why_at_the_values_given_and_without_them():
    """At the values given, a check whose differences leave the domain (the gradient of
    sqrt(x) a step below 1e-7) says so, and does not ask for the values the user gave; with no
    point to be found anywhere the note asks for values."""
    done = diff("sqrt(x)", "--order", "2", "--x", "1e-7")
    assert done.exit_code == 0, done.output
    second = float(printed(done)["d2/dx dx"])
    assert second == pytest.approx(-0.25 * 1e-7 ** -1.5, rel=1e-12)  # -x**-1.5 / 4, by hand
    assert done.stderr == ("note: not checked: the differences that would check it cannot be "
                           "taken near the values given (a step leaves the domain, or a value "
                           "overflows); check it at other values\n")
    assert json.loads(diff("sqrt(x)", "--order", "2", "--x", "1e-7", "--json").stdout)[
        "checked"]["points"] == 0
    nowhere = diff("sqrt(-1 - x**2)")
    assert nowhere.stderr.startswith("note: not checked: no point found where the program and "
                                     "its derivatives are defined (give values"), nowhere.output


def test_a_reference_that_overflows_leaves_the_derivative_unchecked_not_failed():
    """exp(x) a step below the largest float's log: its derivatives (exp(x), by hand) are
    printed; the differences that would check them overflow, so the note says not checked (it
    was a false 'bug in gradcli diff', exit 1, with NumPy's warnings). At 709.7 they are
    checked: the differences are taken scaled to their largest value (8 times it overflowed)."""
    for order in ("1", "2"):
        done = diff("exp(x)", "--x", "709.7827", "--order", order)
        assert done.exit_code == 0, done.output
        (entry,) = printed(done).values()
        assert float(entry) == pytest.approx(math.exp(709.7827), rel=1e-12)
        assert done.stderr.startswith("note: not checked: the differences that would check it "
                                      "cannot be taken"), done.stderr
        assert "Warning" not in done.stderr
    done = diff("exp(x)", "--x", "709.7", "--order", "2")
    assert float(printed(done)["d2/dx dx"]) == pytest.approx(math.exp(709.7), rel=1e-12)
    assert done.stderr == ("note: checked at 1 point: 1 derivative agrees with central "
                           "differences of the reverse-mode gradient\n")
    assert "Warning" not in done.stderr


@pytest.mark.parametrize(("second", "passes"), [
    ("-0.25/sqrt(x)**3", True),  # d2/dx2 sqrt(x) = -x**-1.5 / 4, by hand
    ("-0.250025/sqrt(x)**3", False),  # 1e-4 off
    ("1/sqrt(x)**3", False),
])
def test_a_piece_just_past_its_edge_is_checked_at_the_values_own_scale(second, passes):
    """where(x > 1e-9, sqrt(x), x) at 2e-9: every difference of step 1e-3 * max(1, |x|)
    crosses the edge 1e-9 away (a false failure before); the last step, at x's own scale,
    stays on sqrt's piece and agrees with the right second derivative only."""
    program = gradcli.parse("where(x > 1e-9, sqrt(x), x)")
    request = DiffCheck(program, {"x": ()}, {"x": 2e-9}, "hessian", {"x": {"x": second}})
    if passes:
        assert check(request).points == 1
    else:
        with pytest.raises(CheckError, match=re.escape("d2/dx dx = ")):
            check(request)
    done = diff("where(x > 1e-9, sqrt(x), x)", "--x", "2e-9", "--order", "2")
    assert done.exit_code == 0 and "checked at 1 point" in done.stderr, done.output


def test_latex_of_comparisons_and_logical_operators_reads_as_the_scalar_forms():
    done = diff("sum(x*(x > y) + where(x >= 1 and not y < 2, x, y) + leaky_relu(x, 0.1))",
                "--shape", "x=3", "--shape", "y=3", "--format", "latex")
    assert done.exit_code == 0, done.output
    assert r"\left(x > y\right)" in done.stdout and r"\land" in done.stdout
    assert r"\lnot" in done.stdout
    assert "operatorname{gt}" not in done.stdout and "logical_and" not in done.stdout
    scalar = diff("leaky_relu(x, y)*y", "--wrt", "y", "--format", "latex")
    assert r"\operatorname{leaky\_relu}" in scalar.stdout


@pytest.mark.parametrize(("program", "shape", "closed"), [
    ("tr(X@X@X)", "3x3", lambda m: 3 * (m @ m).T),
    ("logdet(X'@X)", "3x2", lambda m: 2 * m @ np.linalg.inv(m.T @ m)),
])
def test_equal_terms_are_gathered_into_one(program, shape, closed):
    text = printed(diff(program, "--shape", f"X={shape}"))["d/dX"]
    assert "+" not in text, text  # one term, not the three (or two) equal ones
    m = np.random.default_rng(7).uniform(0.5, 1.5, size=tuple(map(int, shape.split("x"))))
    np.testing.assert_allclose(value_of(text, {"X": m}), closed(m), rtol=1e-12)


def test_cross_entropy_gradient_has_no_sum_of_negations():
    text = printed(diff("-sum(t*log_softmax(W@x))", "--wrt", "W", "--shape", "W=3x2",
                        "--shape", "x=2", "--shape", "t=3"))["d/dW"]
    assert "sum(-t)" not in text and "sum(t)" in text


# Where the gradient has a kink or a jump, no second derivative exists: the value printed is the
# rules' convention (eval --hessian's number), and the note says it was not checked and why.
# Found by a helper: where the gradient takes a value between its sides (abs's sign(0) = 0),
# every one-sided difference through the point grew as 1/h, and diff called a right answer "a
# bug in gradcli diff" (exit 1, nothing printed).
AT_A_KINK = [
    ("relu(x)*x", "0", 0.0, "has a kink there (its sides' slopes 0 and 2)"),
    ("floor(x)*x**2", "2", 4.0, "jumps there (from 4 to 8.00001)"),  # 2x*floor(x), x = 2 -+ 1e-6
    ("abs(x)", "0", 0.0, "jumps there (from -1 to 1)"),
    ("max(x, 0)", "0", 0.0, "jumps there (from 0 to 1)"),
    ("hardtanh(x)", "1", 0.0, "jumps there (from 1 to 0)"),
    ("exp(-abs(x))", "0", 0.0, "jumps there (from 0.999999 to -0.999999)"),
    ("i0e(x)", "0", 1.5, "jumps there (from 0.999999 to -0.999999)"),
]


@pytest.mark.parametrize(("program", "value", "second", "how"), AT_A_KINK)
def test_order_two_at_a_kink_given_is_a_convention_said_so(program, value, second, how):
    done = diff(program, "--order", "2", "--x", value)
    assert done.exit_code == 0, done.output
    assert float(printed(done)["d2/dx dx"]) == second
    hessian = gradcli.evaluate(program, {"x": float(value)}, order=2).hessian.matrix
    assert hessian["x"]["x"] == second  # the rules' convention: eval --hessian's number
    assert done.stderr == (f"note: d2/dx dx at x = {value} is a convention, not checked: the "
                           f"gradient {how}, so no derivative exists, and the value printed "
                           "is the rules'\n")


# Where the gradient's kink is symmetric (a V: slopes -2 and 2), the central difference of the
# gradient is the mean of the sides, which is the rules' value: it "agreed", and diff said
# "checked" of a derivative that does not exist (found by a helper). One-sided differences tell.
SYMMETRIC_KINKS = [
    ("x*abs(x)", "-2 and 2"),  # the gradient 2|x|
    ("max(x, -x)*x", "-2 and 2"),
    ("sign(x)*x**2", "-2 and 2"),
    ("softsign(x)", "-2 and 2"),  # x/(1+|x|): the gradient 1/(1+|x|)^2, slopes -+2 at 0
]


@pytest.mark.parametrize(("program", "order", "below", "slopes"), [
    # elu's gradient is 1 on the right, e^x on the left: a kink of slopes 0 and 1, which
    # central differences average to the rule's 0.5 (a bug hunt found it printed "checked")
    ("elu(x)", "2", "the gradient", "0 and 1"),
    ("elu(x - 1)*y", "2", "the gradient", "0 and 2"),
    ("elu(x)**2", "3", "the order-2 derivative", "0 and 6"),
])
def test_a_kink_whose_differences_agree_only_at_a_smaller_step_is_a_convention_too(
        program, order, below, slopes):
    given = ["--x", "1", "--y", "2"] if "y" in program else ["--x", "0"]
    done = diff(program, "--order", order, *given)
    assert done.exit_code == 0, done.output
    assert f"is a convention, not checked: {below} has a kink there (its sides' slopes " \
           f"{slopes})" in done.stderr, done.stderr


@pytest.mark.parametrize("program", ["cos(1e7*x)", "softplus(1e8*x)"])
def test_a_fast_smooth_function_is_no_kink_its_slopes_close_at_smaller_steps(program):
    done = diff(program, "--order", "2", "--x", "0")
    assert done.exit_code == 0, done.output
    assert "convention" not in done.stderr and "checked at 1 point" in done.stderr


def test_a_derivative_whose_differences_converge_slowly_is_refused_but_not_as_a_bug():
    """|x|**2.5: the second derivative 3.75|x|**0.5 is 0 at 0, and differences a step h away
    give 2.5 h**0.5: too slow to tell 0 from 1e-5. It was refused as "a bug in gradcli diff";
    it is refused as what differences cannot confirm, and --no-check prints it."""
    done = diff("abs(x)**2.5", "--order", "2", "--x", "0")
    assert done.exit_code == 1 and "bug" not in done.stderr, done.stderr
    assert "d2/dx dx at x = 0 is 0, which differences cannot confirm: each side's closes in " \
           "on it as the steps shrink, but slowly" in done.stderr, done.stderr
    assert "--no-check prints it unchecked" in done.stderr
    program = gradcli.parse("abs(x)**2.5")
    for value in ("0", "1e-4", "-1e-4", "1e-5", "0.001"):
        with pytest.raises(CheckError, match="d2/dx dx"):
            check(DiffCheck(program, {"x": ()}, {"x": 0.0}, "hessian", {"x": {"x": value}}))


@pytest.mark.parametrize(("program", "wrong"), [
    ("abs(x)**1.1", ["0.05", "0.02", "0.011", "-0.01"]),
    ("abs(x)**1.2", ["0.005", "-0.01"]),
])
def test_sides_that_close_in_but_are_still_apart_check_no_value_between_them(program, wrong):
    """|x|**1.1's derivative at 0 is 0; its sides' slopes close in slowly (+-0.1 at the
    smaller steps): a value between them was "checked" (a review). The rules' 0 is printed as
    not checked (central differences agree, but the sides cannot be told from a kink's); the
    others are refused."""
    parsed = gradcli.parse(program)
    found = check(DiffCheck(parsed, {"x": ()}, {"x": 0.0}, "gradient", {"x": "0"}))
    assert found.points == 1 and "not checked" in found.conventions[0]
    for value in wrong:
        with pytest.raises(CheckError, match="d/dx"):
            check(DiffCheck(parsed, {"x": ()}, {"x": 0.0}, "gradient", {"x": value}))


@pytest.mark.parametrize(("program", "slopes"), SYMMETRIC_KINKS)
def test_a_symmetric_kink_of_the_gradient_is_a_convention_not_a_check(program, slopes):
    done = diff(program, "--order", "2", "--x", "0")
    assert done.exit_code == 0, done.output
    assert float(printed(done)["d2/dx dx"]) == 0.0
    assert done.stderr == ("note: d2/dx dx at x = 0 is a convention, not checked: the gradient "
                           f"has a kink there (its sides' slopes {slopes}), so no derivative "
                           "exists, and the value printed is the rules'\n")


def test_a_symmetric_kink_of_a_higher_order_is_found_and_smooth_points_stay_checked():
    third = diff("abs(x)**3", "--order", "3", "--x", "0")  # the second derivative 6|x|
    assert third.exit_code == 0, third.output
    assert "d3/dx dx dx at x = 0 is a convention, not checked: the order-2 derivative has a " \
           "kink there (its sides' slopes -6 and 6)" in third.stderr
    for program, value in (("x*abs(x)*y", "0.5"), ("x**2 + y", "0"), ("sin(x)*y", "0")):
        done = diff(program, "--order", "2", "--x", value, "--y", "1")
        assert done.exit_code == 0, done.output
        assert "convention" not in done.stderr and "checked at 1 point" in done.stderr


def test_at_a_kink_a_value_outside_the_sides_still_fails():
    """relu(x)*x at 0: its sides' slopes are 0 and 2, so 3 and -1 are wrong, not conventions;
    abs(x)**3 at 0 has a second derivative (6|x|, both sides 0): it is checked, 1e-3 fails."""
    program = gradcli.parse("relu(x)*x")
    for wrong in ("3", "-1", "2.01"):
        with pytest.raises(CheckError, match="d2/dx dx"):
            check(DiffCheck(program, {"x": ()}, {"x": 0.0}, "hessian", {"x": {"x": wrong}}))
    cubed = gradcli.parse("abs(x)**3")
    found = check(DiffCheck(cubed, {"x": ()}, {"x": 0.0}, "hessian", {"x": {"x": "0"}}))
    assert (found.points, found.conventions) == (1, ())
    with pytest.raises(CheckError, match="d2/dx dx"):
        check(DiffCheck(cubed, {"x": ()}, {"x": 0.0}, "hessian", {"x": {"x": "0.001"}}))


def test_a_convention_among_checked_entries_and_in_json():
    done = diff("x*y + abs(x)", "--order", "2", "--x", "0", "--y", "1", "--json")
    assert done.exit_code == 0, done.output
    record = json.loads(done.stdout)
    assert record["derivatives"] == {"x": {"x": "0", "y": "1"}, "y": {"x": "1", "y": "0"}}
    assert record["checked"] == {
        "points": 1, "entries": 4, "against": "central differences of the reverse-mode gradient",
        "conventions": ["d2/dx dx at x = 0, y = 1 is a convention, not checked: the gradient "
                        "jumps there (from 0 to 2), so no derivative exists, and the value "
                        "printed is the rules'"], "unchecked_pieces": []}
    arrays = diff("sum(abs(x))", "--order", "2", "--x", "[0, 1]")
    assert arrays.exit_code == 0 and "is a convention, not checked" in arrays.stderr


@pytest.mark.parametrize(("program", "values"), [
    ("sum(s + x)**2", {"x": [1.0, 2.0, 3.0], "s": 0.5}),
    ("sum(X@W + b)**2", {"X": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
                         "W": [[1.0, 0.5], [0.2, 1.0]], "b": [0.1, 0.2]}),
])
def test_eval_hessians_of_broadcast_sums_pass_their_check(program, values):
    """d2/ds ds of sum(s + x)**2 is 2*3**2 = 18: the count reaches the Hessian too."""
    result = gradcli.evaluate(program, values, order=2)
    assert result.hessian.check.ok and not result.hessian.check.failures
    if "s" in values:
        assert result.hessian.matrix["s"]["s"] == pytest.approx(18.0)


def test_a_large_hessian_is_checked_along_a_direction():
    """Past DIRECTIONAL elements a block is compared as H@v with the gradient's difference
    along v: a wrong diagonal is still caught, a right one passes."""
    program = gradcli.parse("sum(x**3)")
    shapes = {"x": (40,)}
    found = check(DiffCheck(program, shapes, {}, "hessian", {"x": {"x": "6*eye(40)*x"}}))
    assert found.points == 3
    with pytest.raises(CheckError, match="d2/dx dx"):
        check(DiffCheck(program, shapes, {}, "hessian", {"x": {"x": "5*eye(40)*x"}}))


def test_exports_of_jacobians_and_scalar_hessians_are_checked_not_tracebacks():
    """Found in review: the check itself raised on these exports."""
    from click.testing import CliRunner

    from gradcli.cli import cli

    for args in (["softmax(x)", "--shape", "x=3"], ["2*x", "--shape", "x=3"],
                 ["x**3", "--order", "2"], ["x**3*y", "--order", "2"]):
        done = CliRunner().invoke(cli, ["diff", *args, "--format", "python"])
        assert done.exit_code == 0 and "checked at" in done.stderr, (args, done.output)
        assert "Traceback" not in done.output
    # a parameter named like the export's own lines (t0) is renamed, not overwritten
    done = CliRunner().invoke(cli, ["diff", "sum(t0*sin(x))", "--shape", "t0=3", "--shape",
                                    "x=3", "--format", "python"])
    assert done.exit_code == 0 and "t0_" in done.stdout, done.output


@pytest.mark.parametrize(("program", "shapes"), [
    ("sum(x*b)", ("x=2x3", "b=2x1")), ("sum(W/s)", ("W=2x3", "s=2x1")),
    ("sum(x*b)", ("x=2x3", "b=1x3")), ("sum(exp(x*b))", ("x=2x3", "b=2x1"))])
def test_a_column_or_a_row_stretched_by_a_product_gets_its_gradient_back(program, shapes):
    """Found in review: a (2, 1) operand of * or / was 'cannot yet sum'; the printed forms are
    checked by diff itself against the reverse-mode gradient (exit 0 only if they agree)."""
    from click.testing import CliRunner

    from gradcli.cli import cli

    args = [arg for shape in shapes for arg in ("--shape", shape)]
    done = CliRunner().invoke(cli, ["diff", program, *args])
    assert done.exit_code == 0 and "checked at 3 points" in done.stderr, done.output


def test_latex_writes_every_name_as_the_scalar_latex_does():
    """Names with _ and digits in matrix notation, a constant array, an indexed subscripted
    name and the outputs of a Jacobian (found by a helper: y_val_{1:3} was a double subscript,
    W_in^\\top read as W subscript i, n, and \\partial my_out put "out" under my)."""
    arrays = diff("sum(x_0[0:2]*y_val[1:3]) + sum(W_in@x_0) + sum([1, 2, 3]*x_0)",
                  "--shape", "x_0=3", "--shape", "y_val=3", "--shape", "W_in=2x3",
                  "--format", "latex")
    assert arrays.exit_code == 0, arrays.output
    text = arrays.stdout
    assert r"\mathrm{W\_in}^\top" in text and "W_in" not in text
    assert r"{\mathrm{y\_val}}_{1:3}" in text and r"{x_{0}}_{0:2}" in text
    assert r"\begin{bmatrix} 1 & 2 & 3 \end{bmatrix}" in text and "[1" not in text
    outputs = diff("f = a*2; my_out = sin(x_1); f, my_out, x_1 + a", "--format", "latex")
    assert outputs.exit_code == 0, outputs.output
    assert r"\frac{\partial \mathrm{my\_out}}{\partial x_{1}}" in outputs.stdout
    assert r"\frac{\partial (x\_1 + a)}{\partial a} = 1" in outputs.stdout


@pytest.mark.parametrize("program", ["abs(x)**2", "abs(x)*abs(x)", "relu(x)**2 + relu(-x)**2"])
def test_a_convention_inside_a_smooth_function_is_refused_as_what_it_is(program):
    """x**2 written through abs or relu: the rules give 0 at 0 (abs'(0) = 0), the function's
    second derivative is 2, and diff called it "a bug in gradcli diff" (found by a helper)."""
    done = diff(program, "--order", "2", "--x", "0")
    assert done.exit_code == 1 and done.stdout == ""
    assert ("d2/dx dx at x = 0 is 0 by the rules' convention at a kink inside the program, "
            "but this function's is 2") in done.stderr
    assert "a bug in gradcli diff" not in done.stderr


def test_an_exported_entry_gets_the_smaller_steps_a_printed_one_gets():
    """Found by a bug hunt: at a sample point where A is ill-conditioned (condition ~840),
    the first central difference of d2/dA dA is 0.8% off. The printed text passed (smaller
    steps settle it) and the export, compared once, was called a bug. Each entry is now judged
    the same way; the export's Hessian is the one written by hand below."""
    text = "x'@A@x + tr(inv(A))"
    done = diff(text, "--shape", "x=3", "--shape", "A=3x3", "--order", "2",
                "--format", "python")
    assert done.exit_code == 0, done.stderr
    assert "checked at 3 points" in done.stderr
    namespace: dict = {}
    exec(compile(done.stdout, "export", "exec"), namespace)  # our own generated code
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3)
    x = rng.uniform(-1, 1, 3)
    _, hessian = namespace["f"](x, a)
    # d tr(A^-1) = -tr(A^-1 dA A^-1), so d2/dA_ij dA_kl = tr(A^-1 E_kl A^-1 E_ij A^-1) + the
    # same with ij and kl swapped = (A^-2)_jk (A^-1)_li + (A^-1)_jk (A^-2)_li (x'Ax adds 0)
    inv = np.linalg.inv(a)
    inv2 = inv @ inv
    by_hand = (np.einsum("jk,li->ijkl", inv, inv2) + np.einsum("jk,li->ijkl", inv2, inv))
    np.testing.assert_allclose(hessian["A"]["A"], by_hand, rtol=1e-10, atol=1e-12)


def test_at_the_values_given_first_derivatives_are_checked_against_differences_of_the_value():
    """Found by an audit: given every value, diff prints eval's reverse-mode numbers, and its
    check compared them with the reverse-mode gradient, itself: relu(x) at 0 printed 0 as
    "checked". They are compared with central differences of the value now: a kink or a jump
    there is a convention (the note says which sides' slopes), and other points agree."""
    for program, values, convention in (
            ("relu(x)", ["--x", "0"], "d/dx at x = 0 is a convention, not checked: the value "
                                       "has a kink there (its sides' slopes 0 and 1)"),
            ("abs(x)", ["--x", "0"], "its sides' slopes -1 and 1"),
            ("floor(x)*y", ["--x", "2", "--y", "1"], "the value jumps there (from 1 to 2)"),
            ("f = x*y; g = abs(x); f, g", ["--x", "0", "--y", "1"], "d(g)/dx at x = 0, y = 1 "
                                                                  "is a convention")):
        done = diff(program, *values)
        assert done.exit_code == 0, done.output
        assert convention in done.stderr, done.stderr
    for fast, at in (("tanh(1e5*x)", "0"), ("cos(1e7*x)", "3")):  # smaller steps reach them
        done = diff(fast, "--x", at)
        assert done.exit_code == 0 and "agrees with central differences" in done.stderr, fast
    smooth = diff("sin(x)*exp(y)", "--x", "0.3", "--y", "1", "--json")
    record = json.loads(smooth.stdout)
    assert record["checked"] == {"points": 1, "entries": 2, "against": "central differences of "
                                 "the value", "conventions": [], "unchecked_pieces": []}
    assert float(record["derivatives"]["x"]) == math.cos(0.3) * math.exp(1)  # by hand
    assert float(record["derivatives"]["y"]) == pytest.approx(math.sin(0.3) * math.e, rel=1e-15)


SWAMPED = "rounding swamps the differences"


@pytest.mark.parametrize(("args", "label", "true"), [
    (["1e10 + x**2", "--x", "1"], "d/dx", 2.0),
    (["1e20 + x**2", "--x", "1"], "d/dx", 2.0),
    (["1e12*y + x**2", "--x", "1", "--y", "1"], "d/dx", 2.0),
    (["1e10*x + x**3", "--order", "2", "--x", "1.345"], "d2/dx dx", 6 * 1.345),
    (["1e10*sin(x)", "--order", "2", "--x", "1e-10"], "d2/dx dx", -1e10 * math.sin(1e-10)),
    (["1e20*atanh(x)", "--order", "2", "--x", "1e-10"], "d2/dx dx",
     1e20 * 2e-10 / (1 - 1e-20) ** 2),
])
def test_values_far_larger_than_their_changes_leave_an_entry_unchecked_not_a_bug(args, label,
                                                                                  true):
    """The differences of values of 1e10 carry 1e10 * eps / h of rounding: fixed tolerances
    called the right d/dx = 2 'a bug in gradcli diff' (exit 1), and the one-sided slopes of
    1e20*atanh(x) 'a kink' (a bug hunt). The noise is allowed, and an entry it swamps is
    printed with a note that says it is not checked. Values: closed forms by hand."""
    done = diff(*args)
    assert float(printed(done)[label]) == pytest.approx(true, rel=1e-12)
    differenced = "the program's values" if label == "d/dx" else "the gradient's values"
    assert f"{label} at " in done.stderr and f"is not checked: {differenced} are so much" in (
        done.stderr) and SWAMPED in done.stderr and "kink" not in done.stderr
    record = json.loads(diff(*args, "--json").stdout)
    assert any(SWAMPED in why for why in record["checked"]["conventions"])


def test_where_the_values_are_ordinary_the_same_entries_are_checked():
    for args in (["x**2", "--x", "1"], ["10*x + x**3", "--order", "2", "--x", "1.345"]):
        done = diff(*args)
        assert done.stderr.startswith("note: checked at 1 point") and SWAMPED not in done.stderr


ONLY = "is checked only to within 1e-06, not to its digits"


@pytest.mark.parametrize(("args", "true_third"), [
    # mpmath at 50 digits: i0e'''(1e6), silu'''(40), sigmoid'''(40)
    (["i0e(x)", "--order", "3", "--x", "1e6"], -7.4801743e-22),
    (["silu(x)", "--order", "3", "--x", "40"], 1.5718910744579e-16),
    (["sigmoid(x)", "--order", "3", "--x", "40"], 4.2483542552916e-18),
])
def test_a_value_far_below_the_absolute_tolerance_is_not_called_checked(args, true_third):
    """Formulas that cancel far out (i0e's, silu's and sigmoid's textbook forms) print third
    derivatives with wrong digits, even the wrong sign; the check passed them within its
    absolute tolerance of 1e-6 and said "checked" (a numbers hunt). Its reference is now the
    engine's Hessian, whose differences give the true value, and the note says how far the
    check goes."""
    done = diff(*args)
    assert done.exit_code == 0, done.output
    notes = done.stderr
    assert f"d3/dx dx dx at x = {args[-1].replace('1e6', '1000000')} {ONLY}" in notes, notes
    given = re.search(r"d3/dx dx dx at [^;]* differences give ([-0-9.e]+)", notes).group(1)
    assert float(given) == pytest.approx(true_third, rel=2e-3)


def test_small_values_that_agree_relatively_are_checked():
    done = diff("exp(-x)", "--order", "3", "--x", "50")
    assert float(printed(done)["d3/dx dx dx"]) == pytest.approx(-math.exp(-50), rel=1e-14)
    assert done.stderr == ("note: checked at 1 point: 2 derivatives agree with central "
                           "differences of the order below\n")
    # d/ds of softmax(x + s) is 0, printed as -3e-17; differences give 1e-14, 1e-13 at a tenth
    # of the step: rounding, no reference that could fault the entry, and no note
    done = diff("dot(x, softmax(x + s))", "--order", "2", "--shape", "x=3", "--shape",
                "s=scalar")
    assert done.exit_code == 0 and ONLY not in done.stderr
    # nor for truncation: 6e-15 is exact, differences give -1.8e-14, and 6e-15 at a tenth of
    # the step (a review)
    done = diff("x**6", "--x", "0.001")
    assert float(printed(done)["d/dx"]) == pytest.approx(6e-15, rel=1e-15)
    assert done.stderr == ("note: checked at 1 point: 1 derivative agrees with central "
                           "differences of the value\n")


@pytest.mark.parametrize("args", [
    ["5000 + relu(x)", "--x", "0"],
    ["(y - 20)**2 + 0.1*abs(x)", "--x", "0", "--y", "0"],
    ["exp(y) + abs(x)", "--x", "0", "--y", "9"],
])
def test_a_kink_beside_a_large_value_is_still_a_convention(args):
    """Steps of 1e-10, whose rounding (1.4 at the value 5000) hides a jump of 1 in the slope,
    found no kink there and so cleared the one found at the first steps: relu's convention was
    "checked" (a review)."""
    done = diff(*args)
    assert done.exit_code == 0 and "d/dx at" in done.stderr
    assert "is a convention, not checked: the value has a kink there" in done.stderr


def test_a_large_linear_term_leaves_exact_zeros_checked():
    """The gradient's 3e5 rounds to one ulp, well below the tolerance: the allowance for it
    (16 times as much) is no reason to call the Hessian's zeros unchecked (a review)."""
    done = diff("x**2 + 3e5*y", "--order", "2", "--x", "1", "--y", "1")
    assert printed(done) == {"d2/dx dx": "2", "d2/dx dy": "0", "d2/dy dx": "0",
                             "d2/dy dy": "0"}
    assert done.stderr == ("note: checked at 1 point: 4 derivatives agree with central "
                           "differences of the reverse-mode gradient\n")


def test_a_wrong_entry_is_refused_not_waved_through_by_a_smaller_step():
    """Smaller steps went down to 1e-9, where rounding alone allows any value: a wrong 2.0001
    for d/dx of 100 + x**2 was printed as 'not checked' (a review)."""
    program = gradcli.parse("100 + x**2")
    for wrong in ("2.0001", "2.001"):
        with pytest.raises(CheckError, match="central differences give 2"):
            check(DiffCheck(program, {"x": ()}, {"x": 1.0}, "gradient", {"x": wrong}))


@pytest.mark.parametrize("text", ["sum(ones(3))", "sum([1, 2])", "2*3"])
def test_a_program_without_variables_has_nothing_to_differentiate(text):
    """An array program without variables printed an empty line and 'note: ', status 0 (a bug
    hunt); a program of numbers has always been this usage error."""
    done = diff(text)
    assert done.exit_code == 2 and done.stdout == ""
    assert "usage error: nothing to differentiate: the expression has no variables" in (
        done.stderr)
