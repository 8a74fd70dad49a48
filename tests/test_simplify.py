"""The canonical form of derivatives (issue 14): the issue's table as exact output, what is never
rewritten, and properties: the printed (canonical) derivative, read back, equals the builder's
unsimplified graph, the reverse-mode gradient and mpmath's derivative at random points.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import mpmath as mp
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from test_properties import expressions, points

import gradcli
from gradcli.cli import cli
from gradcli.engine.graph import forward, nodes_of
from gradcli.language.parser import parse
from gradcli.symbolic.builder import Builder, gradients
from gradcli.symbolic.canonical import canonical


def _diff(*args: str) -> str:
    result = CliRunner().invoke(cli, ["diff", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


# The table of issue 14: what a reader expects (SymPy's diff, or a careful hand).
@pytest.mark.parametrize(("args", "expected"), [
    # printed derivatives leave out pow's zero-base limits (undefined at x = 0, as SymPy's)
    (["x**x", "--wrt", "x"], "d/dx = x**x*(log(x) + 1)\n"),
    (["x**y", "--wrt", "y"], "d/dy = log(x)*x**y\n"),
    (["x**y", "--wrt", "x"], "d/dx = x**(y - 1)*y\n"),
    (["exp(x)*x", "--wrt", "x"], "d/dx = exp(x)*(x + 1)\n"),  # a factor every term has
    (["sin(x)**2+cos(x)**2", "--wrt", "x"], "d/dx = 0\n"),
    (["log(x**2)", "--wrt", "x"], "d/dx = 2/x\n"),
    (["atan2(y,x)", "--wrt", "x"], "d/dx = -y/(x**2 + y**2)\n"),
    (["x/(y-2)**3", "--wrt", "y"], "d/dy = -3*x/(y - 2)**4\n"),
    (["log2(x)", "--wrt", "x"], "d/dx = 1/(x*log(2))\n"),
    (["log10(x)", "--wrt", "x"], "d/dx = 1/(x*log(10))\n"),
    (["softplus(x) - log(1 + exp(x))"], "d/dx = 0\n"),
    (["relu(x + 0.5)*y", "--wrt", "x"], "d/dx = heaviside(x + 0.5)*y\n"),
    (["relu(x**2 + 1)"], "d/dx = 2*x\n"),  # relu of a positive sum is the sum
])
def test_the_issue_table_prints_as_a_reader_expects(args, expected):
    assert _diff(*args) == expected


def test_values_fold_into_the_free_variable_answer():
    result = CliRunner().invoke(cli, ["eval", "(x*W+b-t)**2", "--x", "2", "--b", "1", "--t", "8",
                                      "--json"])
    symbolic = json.loads(result.stdout)["symbolic"]
    assert symbolic["value"] == "(2*W - 7)**2"
    assert symbolic["gradients"]["b"] == "4*W - 14"
    for w in (-1.5, 0.0, 3.0):
        full = gradcli.evaluate("(x*W+b-t)**2", {"x": 2, "b": 1, "t": 8, "W": w})
        for name, text in symbolic["gradients"].items():
            assert _at(text, {"W": w}) == pytest.approx(full.gradients[name], abs=1e-12)
    free = gradcli.evaluate("(x*W+b-t)**2", {"x": 2, "W": 3}, strict=False).symbolic
    assert free.value == "(b - t + 6)**2"
    assert free.gradients["t"] == "-2*(b - t + 6)"


@pytest.mark.parametrize("text", ["x**3*y**2", "sin(x*y)*x", "x*y*z + x**2*z", "exp(x*y)/y"])
def test_mixed_second_derivatives_print_the_same(text):
    hessian = gradcli.differentiate(text, order=2).texts()
    names = list(hessian)
    for a in names:
        for b in names:
            assert hessian[a][b] == hessian[b][a], (text, a, b)
    if text == "x**3*y**2":
        assert hessian["x"]["y"] == "6*x**2*y" and hessian["x"]["x"] == "6*x*y**2"


def test_second_derivatives_of_logistic_regression_come_out_as_by_hand():
    """The cross-entropy of sigmoid(w*x + b) against y: by hand, d2/dw2 = x^2 s (1 - s),
    d2/dx dy = -w, d2/db dx = w s (1 - s), with s = sigmoid(w*x + b). Multiplying out small
    sums where a factor pulled out leaves y - (y - 1) inside, or where a product's factors
    cancel against its sum (t1*t2*(-1/t1 - 1/t2) with t2 = 1 - t1), gets there; the mixed
    derivatives agree both ways round."""
    program = "p = sigmoid(w*x + b); -(y*log(p) + (1 - y)*log(1 - p))"
    hessian = gradcli.differentiate(program, order=2).texts()
    s = "t1 = sigmoid(b + w*x); "
    assert hessian["x"]["x"] == s + "t1*w**2*(1 - t1)"
    assert hessian["w"]["w"] == s + "t1*x**2*(1 - t1)"
    assert hessian["b"]["b"] == s + "t1*(1 - t1)"
    assert hessian["x"]["y"] == hessian["y"]["x"] == "-w"
    assert hessian["y"]["b"] == hessian["b"]["y"] == "-1"
    at = {"x": 1.5, "y": 0.25, "w": -0.8, "b": 0.3}
    sigmoid = 1 / (1 + math.exp(-(at["w"] * at["x"] + at["b"])))
    by_hand = {("x", "b"): at["w"] * sigmoid * (1 - sigmoid),
               ("w", "x"): at["w"] * at["x"] * sigmoid * (1 - sigmoid) + sigmoid - at["y"]}
    for (a, b), expected in by_hand.items():
        assert _at(hessian[a][b], at) == pytest.approx(expected, rel=1e-12)
        assert _at(hessian[b][a], at) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("text", "wrt", "expected"), [
    ("x*y - y*x + z", "z", "1"),  # like terms whatever their order
    ("2*x + 3*x - 5*x + y", "y", "1"),
    ("x*x**(y - 1)", "x", "x**(y - 1)*y"),  # x**(y - 1) + (y - 1)*x**(y - 1): like terms
    ("(a*b + a*c)*x", "x", "a*(b + c)"),  # a factor in every term is pulled out
    ("(2*a - 2*b)*x", "x", "2*(a - b)"),
    # y*z**2 - 2*y**2*z**2: a factor pulled out of a sum merges into the product around it
    ("(y*z)*(z - y*(z+z))", "y", "z**2*(1 - 4*y)"),  # not z*(z*(1 - 4*y))
    ("(y*z)*(z - y*(z+z))", "z", "y*z*(2 - 4*y)"),  # not y*(z*(2 - 4*y))
    ("-x/y", "x", "-1/y"),
    ("x/(-y)", "x", "-1/y"),
    ("x/3", "x", "1/3"),  # not 0.3333333333333333
    ("x/4", "x", "0.25"),
    ("(x*y)**2", "x", "2*x*y**2"),  # integer powers of a product distribute
    ("pi*x + e*x", "x", "e + pi"),  # named constants stay names
])
def test_canonical_forms(text, wrt, expected):
    assert gradcli.differentiate(text, [wrt]).texts()[wrt] == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("sqrt(x**2)", "x/sqrt(x**2)"),  # not sign(x), and never 1
    ("(x**2)**0.5", "x/(x**2)**0.5"),  # never x**1: that is |x|
    ("(x*y)**0.5", "0.5*y/(x*y)**0.5"),  # no x**0.5*y**0.5: x and y may be negative
])
def test_what_is_never_rewritten(text, expected):
    printed = gradcli.differentiate(text, ["x"]).texts()["x"]
    assert printed == expected
    for x in (-1.7, 0.4, 2.0):
        point = {"x": x, "y": 0.5 if x > 0 else -0.5}
        assert _at(printed, point) == pytest.approx(
            gradcli.evaluate(text, point, check=False).gradients["x"], rel=1e-12)


def test_x_over_x_is_one_as_documented():
    # The formula is defined where the program is not (x = 0): docs/derivatives.md says so.
    assert gradcli.differentiate("x/x*y", ["y"]).texts()["y"] == "1"


def test_shared_pieces_stay_named_and_the_size_stays_linear():
    text = gradcli.differentiate("u = sin(x*y); u*u*u + u", ["x"]).texts()["x"]
    assert text.startswith("t1 = x*y; ")
    wide = " + ".join(f"sin(x*a{i})*b{i}" for i in range(400))
    derivative = gradcli.differentiate(wide, ["x"]).texts()["x"]
    assert len(derivative) < 40 * 400  # one short term per term of the program


def test_a_canonical_form_past_its_time_cap_falls_back_to_the_graph_given():
    builder = Builder(exact_constants=True)
    (output,) = builder.import_graph([parse(" + ".join(f"x{i}*y" for i in range(300))).output])
    (grad,) = gradients(output, [builder.variable("y")])
    assert canonical([grad], seconds=-1.0) == [grad]  # the deadline has passed: given back
    assert canonical([grad])[0] is not grad


def _at(text: str, point: dict[str, float]) -> float:
    return gradcli.evaluate(text, point, check=False).value


def _mpmath_derivative(reference, point: dict[str, float], name: str) -> float:
    def along(t):
        return reference({**{k: mp.mpf(v) for k, v in point.items()}, name: t})
    return float(mp.diff(along, mp.mpf(point[name])))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions, points)
def test_printed_canonical_derivatives_equal_the_graph_the_gradient_and_mpmath(expression,
                                                                               point):
    text, reference = expression
    try:
        numeric = gradcli.evaluate(text, point, check=False)
    except gradcli.NumericError:
        return
    if not gradcli.parse(text).variables:
        return
    derivatives = gradcli.differentiate(text)
    printed = derivatives.texts()
    for name in derivatives.wrt:
        unsimplified = derivatives.tree[name]  # the builder's graph, before the canonical form
        nodes = nodes_of([unsimplified])
        for node in nodes:
            if node.op.name == "var":
                node.value = point[str(node.name)]
        try:
            graph = forward(nodes)
            shown = _at(printed[name], point)
        except (gradcli.NumericError, OverflowError, ZeroDivisionError, ValueError):
            continue  # an overflow inside a derivative whose value is finite
        if not (math.isfinite(graph) and math.isfinite(shown)):
            continue
        gradient = numeric.gradients[name]
        assert shown == pytest.approx(graph, rel=1e-8, abs=1e-8), (text, name, printed[name])
        assert shown == pytest.approx(gradient, rel=1e-8, abs=1e-8), (text, name, printed[name])
        expected = _mpmath_derivative(reference, point, name)
        assert shown == pytest.approx(expected, rel=1e-6, abs=1e-6), (text, name, printed[name])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions, points)
def test_a_hessian_prints_symmetric_and_every_entry_equals_evals(expression, point):
    """A mixed derivative is printed as the one taken in the order of the variables (d2/dy dx as
    d2/dx dy): at random points every printed entry, the mirrored ones included, equals the
    Hessian ``eval`` computes row by row (each row a reverse pass over d/da)."""
    text, _ = expression
    try:
        expected = gradcli.evaluate(text, point, order=2, check=False).hessian.matrix
    except gradcli.NumericError:
        return
    if not gradcli.parse(text).variables:
        return
    printed = gradcli.differentiate(text, order=2).texts()
    for a, row in printed.items():
        for b, formula in row.items():
            assert formula == printed[b][a], (text, a, b)
            try:
                shown = _at(formula, point)
            except (gradcli.NumericError, OverflowError, ZeroDivisionError, ValueError):
                continue
            if math.isfinite(shown) and math.isfinite(expected[a][b]):
                assert shown == pytest.approx(expected[a][b], rel=1e-7, abs=1e-7), (text, a, b)


def test_a_negative_number_to_a_fraction_left_by_cancelling_is_a_numeric_error():
    """Found by the free-variable property test: with y = -2, (y/(x + x)*(x + x))**0.5 is
    (-2)**0.5 once x/x cancels; folding it made a complex number (a TypeError). It stays
    written, and, all numbers, it is the NumericError eval gives at any x."""
    text = "((y)/((x) + (x))*((x) + (x)))**0.5"
    with pytest.raises(gradcli.NumericError, match=r"non-integer exponent in \(-2\)\*\*0.5"):
        gradcli.evaluate(text, {"y": -2.0}, strict=False)
    with pytest.raises(gradcli.NumericError, match="non-integer exponent"):
        gradcli.evaluate(text, {"y": -2.0, "x": 1.5})
    assert gradcli.differentiate("(y*x/x)**2", order=1, values={"y": -2.0}).texts() == {"x": "0"}


def test_a_shared_product_with_a_symbolic_power_is_never_half_opened():
    """Found by the free-variable Hessian property test: in sqrt(1/x**z) at x = 2 the four
    second derivatives share a product with a power 2**z inside; multiplying it out stopped
    at that power with the first factors already merged, so they counted twice."""
    text = "sqrt(1/(x**z))"
    expected = gradcli.evaluate(text, {"x": 2.0, "z": 1.0}, order=2).hessian.matrix
    printed = gradcli.differentiate(text, ["x", "z"], order=2, values={"x": 2.0}).texts()
    for a, row in printed.items():
        for b, formula in row.items():
            value = gradcli.evaluate(formula, {"z": 1.0}, check=False).value
            assert value == pytest.approx(expected[a][b], rel=1e-12), (a, b, formula)


def test_printed_derivatives_do_not_depend_on_where_nodes_live_in_memory():
    """Terms are frozensets of (node, exponent) pairs, whose order follows the nodes' addresses:
    a choice made in that order printed examples/logistic.grad's second derivatives in one of
    two forms from run to run. Other objects allocated in between move the nodes."""
    text = (Path(__file__).parent.parent / "examples" / "logistic.grad").read_text()
    first = gradcli.differentiate(text, order=2).texts()
    for size in range(1, 40):
        ballast = [object() for _ in range(size * 37)]  # shifts where the next nodes live
        assert gradcli.differentiate(text, order=2).texts() == first, size
        del ballast


@pytest.mark.parametrize("text", [
    "t = x + x*y; t + t*y",  # t = x*(y + 1): what is left after pulling x out is t's own sum
    "t = x + x*y; t*z + t*y*z",
    "t = x*y + x*y**2; t/x + t*y/x",
    "t = -x - x*y; t - t*y",
    "t = x + x*y; u = t + t*y; u + u*y",
])
def test_a_factor_pulled_out_that_is_also_what_is_left_counts_twice(text):
    """Found by a bug hunt (the third derivative of sqrt(x**2 + (x*y)**2) came out wrong):
    pulling a common factor out of a sum whose remaining sum is that same factor wrote it to
    the power 1, not 2. The canonical form keeps the program's value."""
    program = parse(text)
    point = {"x": 1.7, "y": -0.35, "z": 2.2}
    program.bind({name: point[name] for name in program.variables})
    expected = forward(program.nodes)
    builder = Builder(exact_constants=True)
    (built,) = builder.import_graph([program.output])
    (written,) = canonical([built], named=True)
    for node in nodes_of([written]):
        if node.op.name == "var":
            node.value = point[node.name]
    assert forward(nodes_of([written])) == pytest.approx(expected, rel=1e-13)


def test_the_third_derivative_of_a_function_linear_in_x_is_zero():
    """sqrt(x**2 + (x*y)**2) is |x| sqrt(1 + y**2): every derivative by x past the first is 0
    (SymPy), which diff printed as a formula worth -0.40 and then refused as its own bug."""
    result = CliRunner().invoke(cli, ["diff", "sqrt(x**2 + (x*y)**2)", "--order", "3", "--wrt",
                                      "x"])
    assert result.exit_code == 0, result.output
    printed = result.stdout.split(": ", 1)[1] if ": " in result.stdout else (
        result.stdout.split("= ", 1)[1])
    for x, y in ((1.3, 0.7), (3.0, 1.0), (-2.5, 4.0)):
        value = gradcli.evaluate(printed.strip(), {"x": x, "y": y}, check=False).value
        assert abs(value) < 1e-12, (x, y, value)


def test_a_product_under_a_fractional_power_is_not_split():
    """Found by a fuzzer: y*(x/y + 1/y)**0.5 was written y**0.5*(x + 1)**0.5, which has no
    value at x = -2, y = -1, where the program is -1: a factor pulled out of a sum (1/y) was
    multiplied out under the power 0.5, as (a*b)**p = a**p * b**p, true for whole p only."""
    text = "y*(x/y + 1/y)**0.5"
    printed = gradcli.differentiate(f"z*({text})", ["z"]).texts()["z"]
    for x, y in ((-2.0, -1.0), (3.0, 2.0), (-3.0, -0.5)):
        expected = gradcli.evaluate(text, {"x": x, "y": y}, check=False).value
        got = gradcli.evaluate(printed, {"x": x, "y": y}, check=False).value
        assert got == pytest.approx(expected, rel=1e-14), (x, y, printed)
    done = CliRunner().invoke(cli, ["diff", "t = x - 1; w = t/x + t/y; x*w**1.5"])
    assert done.exit_code == 0, done.output
