"""Issue 15's functions beyond their values (tests/test_ops.py has every row against SymPy, and
tests/test_special.py the float functions against mpmath): aliases, pow at a zero base on every
path, inputs declared but unused, the conventions at kinks and jumps, domain errors, the vector
forms against the float forms over many points, and ``diff --format python`` of every function.
"""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.engine.ops import FUNCTIONS, NONE, OPS, ROWS
from gradcli.engine.vector import evaluate_vector


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.stdout + result.stderr
    return result


# --- aliases -------------------------------------------------------------------------------------

ALIASES = {"ln": "log", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
           "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2", "swish": "silu",
           # other libraries' names (issue 25)
           "radians": "deg2rad", "degrees": "rad2deg", "absolute": "abs", "fabs": "abs",
           "remainder": "mod", "erf_inv": "erfinv", "bessel_i0e": "i0e", "bessel_i1e": "i1e",
           "logistic": "sigmoid", "clamp": "clip"}


def test_the_aliases_are_in_the_table():
    assert {alias: op.name for alias, op in FUNCTIONS.items() if alias != op.name
            and alias != "pow"} == ALIASES
    for alias, name in ALIASES.items():
        assert alias in OPS[name].aliases


@pytest.mark.parametrize(("alias", "name"), sorted(ALIASES.items()))
def test_an_alias_is_accepted_and_printed_under_the_canonical_name(alias, name):
    args = {1: "x", 2: "y, x", 3: "x, y, 1"}[OPS[name].arity]
    point = {"x": 1.5, "y": 0.5} if name in ("acosh", "atan2") else {"x": 0.5, "y": 0.5}
    aliased = gradcli.evaluate(f"{alias}({args})", point)
    canonical = gradcli.evaluate(f"{name}({args})", point)
    assert (aliased.value, aliased.gradients) == (canonical.value, canonical.gradients)
    assert aliased.program.output.op is OPS[name]
    assert [row.label for row in aliased.node_rows()][-1] == f"{name}({args})"
    assert gradcli.differentiate(f"{alias}({args}) * 2", ["x"]).texts()["x"].count(alias) == 0


def test_aliases_show_in_the_listing_and_are_names_of_variables_when_not_called():
    rows = {row["name"]: row for row in json.loads(invoke("functions", "--json").stdout)}
    assert rows["log"]["aliases"] == ["ln"] and "ln(x)" in rows["log"]["written"]
    assert rows["silu"]["written"] == ["silu(x)", "swish(x)"]
    assert gradcli.evaluate("ln = 2; ln*x", {"x": 3.0}).value == 6.0
    with pytest.raises(gradcli.GradcliNameError, match="ln is a function"):
        gradcli.evaluate("ln + x", {"x": 1.0})


def test_a_genuine_typo_still_gets_did_you_mean():
    with pytest.raises(gradcli.GradcliNameError) as caught:
        gradcli.parse("asinhh(x)")
    assert caught.value.hint.startswith("did you mean asinh?")


# --- pow at a zero base (HIPS autograd test_power_arg0/arg1_zero, PyTorch
# test_pow_zero_tensor_gradient) ----------------------------------------------------------------

def test_pow_at_a_zero_base_on_the_scalar_path():
    assert gradcli.evaluate("0**0", {}).value == 1.0
    zero_exponent = gradcli.evaluate("x**0", {"x": 0.0})
    assert (zero_exponent.value, zero_exponent.gradients) == (1.0, {"x": 0.0})
    assert zero_exponent.check.ok
    zero_base = gradcli.evaluate("0**y", {"y": 0.7})
    assert (zero_base.value, zero_base.gradients) == (0.0, {"y": 0.0})
    assert zero_base.check.ok
    both = gradcli.evaluate("x**y", {"x": 0.0, "y": 2.5})
    assert both.gradients == {"x": 0.0, "y": 0.0} and both.check.ok
    assert gradcli.evaluate("x**y", {"x": 0.0, "y": 1.0}).gradients["x"] == 1.0
    assert gradcli.evaluate("x**0", {"x": 0.0}, order=2).hessian.matrix == {"x": {"x": 0.0}}


@pytest.mark.parametrize(("text", "point", "problem"), [
    ("x**y", {"x": 0.0, "y": 0.5}, "its first operand x"),  # y x**(y - 1): infinite at 0, y < 1
    ("0**y", {"y": 0.0}, "its second operand y"),  # 0**y jumps from 1 to 0 at y = 0 (undefined
    # below)
    ("x**y", {"x": 0.0, "y": -1.0}, "zero raised to a negative power"),
])
def test_pow_at_a_zero_base_is_an_error_where_the_derivative_does_not_exist(text, point, problem):
    with pytest.raises(gradcli.NumericError, match=problem):
        gradcli.evaluate(text, point)


def test_pow_at_a_zero_base_with_the_complex_step():
    result = gradcli.evaluate("x**0 + 0**y + x**y", {"x": 0.0, "y": 1.5}, check_method="complex")
    assert result.gradients == {"x": 0.0, "y": 0.0}
    assert result.check.ok and {c.method for c in result.check.checks} == {"complex"}


def test_pow_at_a_zero_base_on_the_vector_path():
    program = gradcli.parse("x**y")
    x, y = np.array([0.0, 0.0, 0.0, 2.0]), np.array([0.0, 2.5, 1.0, 0.0])
    run = evaluate_vector(program, {"x": x, "y": y})
    assert run.failed.tolist() == [True, False, False, False]  # d/dy at (0, 0), as above
    grads = {name: run.grads[node.index] for name, node in program.variables.items()}
    assert run.output[1:].tolist() == [0.0, 0.0, 1.0]
    assert grads["x"][1:].tolist() == [0.0, 1.0, 0.0]
    assert grads["y"][1:].tolist() == [0.0, 0.0, math.log(2.0)]


def test_pow_at_a_zero_base_symbolically():
    assert gradcli.differentiate("x**y", ["x"], values={"y": 0.0}).texts() == {"x": "0"}
    d_dy = gradcli.differentiate("x**y", ["y"], values={"x": 0.0}).texts()["y"]
    ys = np.array([0.5, 2.0, 3.5])
    values = evaluate_vector(gradcli.parse(d_dy), {"y": ys}, gradients=False)
    assert values.output.tolist() == [0.0] * 3 and not values.failed.any()
    # A formula with both free is written as a person writes it, x**(y - 1)*y: undefined at
    # 0**0, where eval takes the limit 0 (x**0 has slope 0 at 0: see the first line).
    free = gradcli.differentiate("x**y", ["x"]).texts()["x"]
    assert free == "x**(y - 1)*y"
    x, y = np.array([0.0, 1.5]), np.array([3.0, 2.5])
    values = evaluate_vector(gradcli.parse(free), {"x": x, "y": y}, gradients=False)
    assert values.output.tolist() == [0.0, 2.5 * 1.5**1.5]
    assert gradcli.differentiate("2**x", ["x"]).texts()["x"] == "2**x*log(2)"  # issue 14
    assert gradcli.differentiate("x**3", ["x"]).texts()["x"] == "3*x**2"


# --- an input declared but unused (as JAX reports it) ------------------------------------------

def test_a_declared_input_the_output_does_not_use_has_gradient_zero():
    result = gradcli.evaluate("y = 2; x*3", {"x": 1.0})
    assert result.point == {"y": 2.0, "x": 1.0}
    assert result.gradients == {"y": 0.0, "x": 3.0}
    assert result.check.ok and result.check.gradients["y"].numeric == 0.0
    assert result.node_rows()[0].label == "y"
    assert gradcli.evaluate("y = 2; x*3", {"x": 1.0, "y": 5.0}).point["y"] == 5.0


def test_an_unused_input_in_json_csv_sweeps_and_diff():
    record = json.loads(invoke("eval", "y = 2; x*3", "--x", "1", "--json").stdout)
    assert record["gradients"] == {"y": 0.0, "x": 3.0} and record["point"]["y"] == 2.0
    csv = invoke("eval", "y = 2; x*3", "--x", "1:3:3", "--csv")
    assert csv.exit_code == 0, csv.stdout
    assert csv.stdout.splitlines()[0].split(",")[:5] == ["y", "x", "value", "d/dy", "d/dx"]
    assert [line.split(",")[3] for line in csv.stdout.splitlines()[1:]] == ["0"] * 3
    assert invoke("eval", "y = 2; x*3", "--x", "1", "--y", "4").exit_code == 0  # not unused
    assert gradcli.differentiate("y = 2; x*3", ["y"]).texts() == {"y": "0"}


def test_an_unused_input_of_an_array_program():
    record = json.loads(invoke("eval", "y = 2; sum(x*3)", "--x", "[1, 2]", "--json").stdout)
    assert record["gradients"] == {"y": 0.0, "x": [3.0, 3.0]}
    assert record["check"]["ok"] is True


def test_the_graph_of_a_program_with_an_unused_input():
    tree = invoke("graph", "y = 2; x*3", "--x", "1", "--format", "tree")
    assert tree.exit_code == 0
    assert "inputs the output does not use (gradient 0): y" in tree.stdout
    assert "not shown" not in tree.stdout  # y is no elided part of the output's tree
    dot = invoke("graph", "y = 2; x*3", "--x", "1", "--format", "dot")
    assert dot.exit_code == 0 and "grad 0" in dot.stdout


def test_an_unused_statement_is_an_error_not_an_input():
    """Only declared inputs (``y = 2``) may go unused; ``u = z*2`` unused is a slip, refused
    at its statement (rather than a program that silently drops it, or asks a value of z)."""
    with pytest.raises(gradcli.UsageError, match="u is assigned but the output never uses it"):
        gradcli.evaluate("u = z*2; x*3", {"x": 1.0})
    assert gradcli.evaluate("y = 2; x*3", {"x": 1.0}).gradients == {"y": 0.0, "x": 3.0}


# --- conventions at kinks and jumps ----------------------------------------------------------

def test_steps_have_slope_zero_also_at_a_jump_and_the_check_says_so():
    for name in ("floor", "ceil", "round", "trunc"):
        smooth = gradcli.evaluate(f"{name}(x)*x", {"x": 2.3})
        assert smooth.gradients["x"] == OPS[name].forward(2.3) and smooth.check.ok
        jump = gradcli.evaluate(f"{name}(x)", {"x": 2.5 if name == "round" else 2.0})
        assert jump.gradients == {"x": 0.0}
        assert not jump.check.ok  # the difference quotient across a jump is not 0
    verdict = invoke("eval", "floor(x)", "--x", "2")
    assert verdict.exit_code == 1 and "jumps (floor or round at a whole number)" in verdict.stdout
    assert gradcli.evaluate("round(x)", {"x": 2.5}).value == 2.0  # halves to even


def test_relu_like_activations_take_the_left_slope_at_zero():
    assert gradcli.evaluate("leaky_relu(x, 0.1)", {"x": 0.0}, check=False).gradients["x"] == 0.1
    assert gradcli.evaluate("leaky_relu(x, a)", {"x": 0.0, "a": 0.1},
                            check=False).gradients["a"] == 0.0
    selu = gradcli.evaluate("selu(x)", {"x": 0.0}, check=False).gradients["x"]
    assert selu == pytest.approx(1.0507009873554805 * 1.6732632423543772, rel=1e-15)
    assert gradcli.evaluate("elu(x)", {"x": 0.0}).gradients["x"] == 1.0  # continuous there


def test_clip_and_hardtanh_split_the_gradient_at_a_bound_as_min_and_max_do():
    at_lower = gradcli.evaluate("clip(x, lo, hi)", {"x": -1.0, "lo": -1.0, "hi": 1.0})
    assert at_lower.gradients == {"x": 0.5, "lo": 0.5, "hi": 0.0}
    # central differences split a tie the same way, but the sides' slopes (0 and 1) tell
    # that no derivative exists there: the check fails, as at max(x, y) with x = y
    assert not at_lower.check.ok
    assert at_lower.check.gradients["x"].method == "one-sided"
    assert gradcli.evaluate("hardtanh(x)", {"x": 1.0}).gradients["x"] == 0.5
    inside = gradcli.evaluate("clip(x, lo, hi)", {"x": 0.3, "lo": -1.0, "hi": 1.0})
    assert inside.gradients == {"x": 1.0, "lo": 0.0, "hi": 0.0}


def test_mod_follows_python_and_its_quotient_is_the_slope_in_y():
    result = gradcli.evaluate("mod(x, y)", {"x": -7.5, "y": 2.0})
    assert result.value == -7.5 % 2.0
    assert result.gradients == {"x": 1.0, "y": 4.0}  # -floor(-7.5 / 2)
    assert result.check.ok


@pytest.mark.parametrize("text", [
    "x % y", "-x % y", "x % y * 3", "x * 3 % y", "x % y ** 2", "2 + x % y - 1", "x % -y",
    "x / y % 2", "(x % y) % 0.7",
])
def test_the_percent_operator_is_mod_with_pythons_precedence(text):
    """``%`` is ``mod`` (the same row: value, rule, printed as ``mod(a, b)``), binding like
    ``*`` and ``/`` and looser than unary minus and ``**``, as in Python, whose own ``%`` gives
    the expected values here."""
    for x, y in [(-7.5, 2.0), (7.5, 2.0), (5.25, -1.5), (0.3, 0.7)]:
        python = eval(text, {}, {"x": x, "y": y})
        result = gradcli.evaluate(text, {"x": x, "y": y})
        assert result.value == pytest.approx(python, rel=1e-15, abs=1e-15)
        assert result.check.ok
    program = gradcli.parse("x % y")
    assert program.nodes[-1].op.name == "mod"
    assert gradcli.differentiate("x % y", "y").texts() == {"y": "-floor(x/y)"}


# --- domains -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "message"), [
    ("log1p(x - 2)", "logarithm of a non-positive number"),
    ("acosh(x - 1)", "argument below 1"),
    ("atanh(x)", "argument outside (-1, 1)"),
    ("erfinv(x)", "argument outside (-1, 1)"),
    ("logit(x)", "argument outside (0, 1)"),
    ("gamma(x - 1)", "a pole of the gamma function"),
    ("lgamma(x - 3)", "a pole of the gamma function"),
    ("digamma(x - 1)", "a pole of the gamma function"),
    ("polygamma(0.5, x)", "must be an integer from 0 to 100"),
    ("polygamma(101, x)", "must be an integer from 0 to 100"),
    ("beta(x - 1, 2)", "beta needs positive arguments"),
    ("clip(x, 2, -2)", "lower bound is above its upper bound"),
    ("mod(x, x - 1)", "division by zero"),
    ("rsqrt(x - 1)", "reciprocal square root of a non-positive number"),
    ("reciprocal(x - 1)", "division by zero"),
    ("cbrt(x - 1)", "the derivative of cbrt is not finite here"),
    ("gamma(x * 200)", "overflow"),
])
def test_domain_errors_name_the_node(text, message):
    with pytest.raises(gradcli.NumericError, match=message.replace("(", r"\(").replace(")", r"\)")):
        gradcli.evaluate(text, {"x": 1.0})
    result = invoke("eval", text, "--x", "1")
    assert result.exit_code == 3 and "error:" in result.stderr


# --- vector forms against the float forms, many points -----------------------------------------

def _domain_points(name: str, rng: random.Random, count: int) -> list[tuple[float, ...]]:
    """Random points inside ``name``'s domain, with some near its edges."""
    op = OPS[name]
    spans = {"acosh": (1.0, 50.0), "atanh": (-1.0, 1.0), "erfinv": (-1.0, 1.0),
             "logit": (0.0, 1.0), "log1p": (-1.0, 50.0), "rsqrt": (0.0, 50.0)}
    low, high = spans.get(name, (-30.0, 30.0))
    points = []
    while len(points) < count:
        point = tuple(rng.uniform(low, high) for _ in range(op.arity))
        if name == "clip":
            point = (point[0], min(point[1:]), max(point[1:]))
        if name in ("polygamma", "ive", "dive"):  # a whole order first
            point = (float(rng.randrange(4)), point[1])
        if op.domain is None or op.domain(*point) is None:
            points.append(point)
    edges = {"atanh": [(-1 + 1e-12,), (1 - 1e-12,)], "logit": [(1e-300,), (1 - 1e-16,)],
             "log1p": [(-1 + 1e-15,)], "acosh": [(1 + 1e-15,)], "erfinv": [(1 - 1e-16,)]}
    return points + edges.get(name, [])


@pytest.mark.parametrize("name", sorted(op.name for op in ROWS if not op.is_array))
def test_the_vector_form_gives_the_float_form_over_many_points(name):
    op = OPS[name]
    points = _domain_points(name, random.Random(name), 400)
    columns = [np.array(column) for column in zip(*points, strict=True)]
    with np.errstate(all="ignore"):
        vector = np.asarray(op.apply_vector(*columns), dtype=float)
    scalar = np.array([op.forward(*point) for point in points])
    exact = op.vector is NONE or name in ("square", "reciprocal", "rsqrt", "softsign", "clip",
                                          "floor", "ceil", "round", "trunc", "mod", "hardtanh",
                                          "leaky_relu", "deg2rad", "rad2deg")
    if exact:
        assert np.array_equal(vector, scalar), name
    else:  # NumPy's libm may round differently: a few ulp (perturbation.DISAGREEMENT)
        np.testing.assert_allclose(vector, scalar, rtol=4e-14, atol=1e-300)


def test_vector_gradients_of_the_new_rows_equal_the_scalar_path():
    text = ("gelu(x) + erf(y)*lgamma(2 + x*x) + logaddexp(x, y) + clip(x, -1, 1 + y*y) "
            "+ mod(x, 0.7) + silu(y)*softsign(x) + asinh(x*y) + digamma(3 + y*y)")
    program = gradcli.parse(text)
    rng = random.Random(15)
    points = [(rng.uniform(-3, 3), rng.uniform(-3, 3)) for _ in range(200)]
    x, y = (np.array(column) for column in zip(*points, strict=True))
    run = evaluate_vector(program, {"x": x, "y": y})
    assert not run.failed.any()
    for i, (a, b) in enumerate(points):
        scalar = gradcli.evaluate(text, {"x": a, "y": b}, check=False)
        assert run.output[i] == pytest.approx(scalar.value, rel=1e-13, abs=1e-13)
        for name, node in program.variables.items():
            assert run.grads[node.index][i] == pytest.approx(scalar.gradients[name], rel=1e-12,
                                                             abs=1e-12)


def test_a_sweep_of_a_point_by_point_row_is_checked():
    result = invoke("eval", "gamma(x)*erfinv(y)", "--x", "0.5:3:6", "--y", "-0.5,0.5", "--csv")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.count("true") == 12


# --- diff --format python of every function ----------------------------------------------------

POINT = {1: (0.3,), 2: (0.6, 1.7), 3: (0.3, -1.0, 1.0)}
POINTS_OF = {"acosh": (1.7,), "polygamma": (1.0, 1.7), "ive": (1.0, 1.7), "dive": (1.0, 1.7),
             "xlogy": (0.6, 1.7)}


@pytest.mark.parametrize("name", sorted(op.name for op in ROWS if op.is_function
                                        and not op.is_array))
def test_diff_as_python_runs_and_gives_eval_s_numbers(name):
    op = OPS[name]
    names = "xyz"[:op.arity]
    text = f"{name}({', '.join(names)}) * 3"
    python = invoke("diff", text, "--format", "python")
    assert python.exit_code == 0, python.stdout + python.stderr
    namespace: dict = {}
    exec(python.stdout, namespace)  # the test runs the generated code; gradcli never does
    point = POINTS_OF.get(name, POINT[op.arity])
    value, gradient = namespace["f"](*point)
    expected = gradcli.evaluate(text, dict(zip(names, point, strict=True)), check=False)
    assert value == pytest.approx(expected.value, rel=1e-15)
    for got, name_ in zip(gradient, names, strict=True):
        assert got == pytest.approx(expected.gradients[name_], rel=1e-13, abs=1e-15), name_


# --- sinc: NumPy's normalized sinc, its derivative exact near 0 ---------------------------------

def test_sinc_at_zero_and_its_derivative_near_zero_against_mpmath():
    import mpmath as mp

    result = gradcli.evaluate("sinc(x)", {"x": 0.0})
    assert (result.value, result.gradients["x"], result.check.ok) == (1.0, 0.0, True)
    mp.mp.dps = 40
    exact = lambda a: mp.diff(lambda t: mp.sinc(mp.pi * t), mp.mpf(a))  # noqa: E731
    for x in (1e-9, -3e-5, 0.003, 0.0999, 0.1001, 0.7, -2.6):
        gradient = gradcli.evaluate("sinc(x)", {"x": x}, check=False).gradients["x"]
        assert gradient == pytest.approx(float(exact(x)), rel=1e-13), x
    xs = np.array([0.0, 1e-9, 0.5, -2.0])
    values = evaluate_vector(gradcli.parse("sinc(x)"), {"x": xs}, gradients=False)
    assert values.output == pytest.approx(np.sinc(xs), rel=1e-15)
    far = gradcli.evaluate("sinc(x)", {"x": 250.5}, check=False)  # argument reduced exactly
    assert far.value == pytest.approx(float(mp.sinc(mp.pi * 250.5)), rel=1e-15)
    assert far.gradients["x"] == pytest.approx(float(exact(250.5)), rel=1e-13)
    # sinc'' at 0 is dsinc's slope, its series there: -pi**2/3
    second = gradcli.evaluate("sinc(x)", {"x": 0.0}, check=False, order=2).hessian.matrix
    assert second["x"]["x"] == pytest.approx(float(-mp.pi ** 2 / 3), rel=1e-15)
    # sinc''' at 0 is 0: the Hessian's formula of dsinc's slope is its series there
    third = gradcli.evaluate("dsinc(x)", {"x": 0.0}, check=False, order=2).hessian.matrix
    assert third["x"]["x"] == 0.0
