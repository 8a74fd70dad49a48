"""Symbolic derivatives of every op against SymPy and reverse mode; simplification; printing.

Each op's closed form comes from ``test_ops`` (which fails if an op has none), so a new row of the
op table is covered here without touching this file.
"""

from __future__ import annotations

import ast
import math

import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from test_ops import POW_POINTS, _cases, _closed, _spelled
from test_properties import expressions, points

import gradcli
from gradcli.api import differentiate
from gradcli.engine.graph import Program, forward, nodes_and_uses, nodes_of
from gradcli.engine.ops import OPS, ROWS
from gradcli.errors import NumericError
from gradcli.language.parser import parse
from gradcli.symbolic.builder import Builder, gradients
from gradcli.symbolic.derivatives import partial_evaluate
from gradcli.symbolic.printing import _presented, print_shared, to_text

ELEMENTWISE = sorted(op.name for op in ROWS if not op.is_array)  # the table's element-wise rows

X, Y, Z = sp.symbols("x y z", real=True)
NAMES = ("x", "y", "z")
# Second derivatives of pow need a positive base (log(x) appears); every op's cases avoid kinks.
# dsinc's second derivative is sinc''': its rule divides by x twice, so it loses digits near 0
# (the row's summary and docs/functions.md say so); sinc' and sinc'' are exact there.
SECOND_POINTS = {"pow": POW_POINTS, "dsinc": [(-2.3,), (-0.7,), (0.4,), (3.1,)]}


def _at(text: str, point: dict[str, float]) -> float:
    """Evaluate a printed derivative by parsing it back, as a user would."""
    return gradcli.evaluate(text, point, check=False).value


def _sympy(expr: sp.Expr, point: tuple[float, ...]) -> float:
    exact = [sp.Float(v, 40) for v in point]  # as test_ops._exact
    return float(sp.N(expr.subs(dict(zip((X, Y, Z), exact, strict=False))), 30))


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_first_derivative_of_every_op_matches_reverse_mode_and_sympy(name):
    arity = OPS[name].arity
    derivatives = differentiate(_spelled(name), NAMES[:arity])
    texts = derivatives.texts()
    for point in _cases(name):
        values = dict(zip(NAMES, point, strict=False))
        numeric = gradcli.evaluate(_spelled(name), values, check=False).gradients
        for i, var in enumerate(NAMES[:arity]):
            symbolic = _at(texts[var], values)
            expected = _sympy(sp.diff(_closed(name), (X, Y, Z)[i]), point)
            assert symbolic == pytest.approx(numeric[var], rel=1e-12, abs=1e-12), (name, point)
            assert symbolic == pytest.approx(expected, rel=1e-11, abs=1e-11), (name, point)


# beta's, lbeta's, ive's and gamma's slopes: their Hessians (third derivatives) are a
# NumericError, as their formulas cancel where a << b or |x| is large, or multiply a subnormal
# gamma (docs/accuracy.md); diff prints those formulas
REFUSED_HESSIANS = ("dbeta", "dlbeta", "dive", "dgamma")


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_second_derivatives_of_every_op_match_sympy(name):
    arity = OPS[name].arity
    symbols = (X, Y, Z)[:arity]
    texts = differentiate(_spelled(name), NAMES[:arity], order=2).texts()
    for point in SECOND_POINTS.get(name, _cases(name)):
        values = dict(zip(NAMES, point, strict=False))
        if name in REFUSED_HESSIANS:  # printed, but eval refuses: a NumericError
            with pytest.raises(NumericError, match="third derivatives of"):
                gradcli.evaluate(_spelled(name), values, order=2)
        hessian = None if name in REFUSED_HESSIANS else gradcli.evaluate(
            _spelled(name), values, order=2).hessian
        for i, a in enumerate(NAMES[:arity]):
            for j, b in enumerate(NAMES[:arity]):
                expected = _sympy(sp.diff(_closed(name), symbols[i], symbols[j]), point)
                assert _at(texts[a][b], values) == pytest.approx(expected, rel=1e-10, abs=1e-10)
                if hessian is not None:
                    assert hessian.matrix[a][b] == pytest.approx(expected, rel=1e-10, abs=1e-10)
        if hessian is None:
            continue
        # the orders of polygamma and ive take whole values only: no difference to take
        assert hessian.check.ok or name in ("polygamma", "ive", "dive"), (name, point)


def _simplified(text: str, wrt: str | None = None) -> str:
    """The printed value (or derivative by ``wrt``) of ``text``."""
    program = parse(text)
    if wrt is None:
        (node,) = Builder().import_graph([program.output])
        return to_text(node)
    return differentiate(program, [wrt]).texts()[wrt]


@pytest.mark.parametrize(("text", "expected"), [
    ("x*1", "x"), ("1*x", "x"), ("x + 0", "x"), ("0 + x", "x"), ("x*0", "0"), ("x - x", "0"),
    ("--x", "x"), ("x**1", "x"), ("x**0", "1"), ("x/1", "x"), ("x/x", "1"), ("2*3 + x", "6 + x"),
    ("x*x*x", "x**3"), ("x*x**2", "x**3"), ("x**3/x", "x**2"), ("2*x + 3*x", "5*x"),
    ("x + x", "2*x"), ("a*b + a*c", "a*(b + c)"), ("a*b - c*b", "b*(a - c)"),
    ("x - -y", "x + y"), ("x + -y", "x - y"), ("-(x - y)", "y - x"), ("2*(3*x)", "6*x"),
    ("exp(x) + x*exp(x)", "exp(x)*(1 + x)"), ("log(2)*x", "0.6931471805599453*x"),
])
def test_simplification_rules(text, expected):
    assert _simplified(text) == expected


@pytest.mark.parametrize(("text", "wrt", "expected"), [
    ("x**3", "x", "3*x**2"),
    ("sin(x)*cos(y)", "x", "cos(x)*cos(y)"),
    ("a = x*x; b = a*a; b*b", "x", "8*x**7"),
    ("exp(x)*x", "x", "exp(x)*(x + 1)"),
    ("x*y + 3", "y", "x"),
    ("sigmoid(x)", "x", "t1 = sigmoid(x); t1*(1 - t1)"),
])
def test_derivatives_print_simplified(text, wrt, expected):
    assert _simplified(text, wrt) == expected


def test_folded_numbers_are_exact_floats():
    # 0.1 + 0.2 folds to the float the numeric path computes, printed so that it reads back.
    assert _simplified("(0.1 + 0.2)*x") == "0.30000000000000004*x"
    assert _at(_simplified("(0.1 + 0.2)*x"), {"x": 1.0}) == 0.1 + 0.2


def test_division_by_zero_is_not_folded_away_but_reported_when_evaluated():
    text = _simplified("x/(1 - 1)")
    assert text == "x/0"
    with pytest.raises(gradcli.NumericError, match="division by zero"):
        gradcli.evaluate(text, {"x": 1.0})


def _chain(depth: int) -> str:
    """a1 = x*sin(x); a{k} = a{k-1}*sin(a{k-1}): every node used twice, 2^depth as a tree."""
    steps = ["a1 = x*sin(x)"]
    steps += [f"a{k} = a{k - 1}*sin(a{k - 1})" for k in range(2, depth + 1)]
    return "; ".join([*steps, f"a{depth}"])


def test_derivative_of_a_deeply_reused_product_prints_in_linear_size():
    sizes = {depth: len(differentiate(_chain(depth)).texts()["x"]) for depth in (10, 20, 40)}
    assert sizes[20] < 70 * 20  # about 60 characters per level
    assert sizes[40] < 2.2 * sizes[20]  # linear, not 2^20 times larger
    text = differentiate(_chain(20)).texts()["x"]
    numeric = gradcli.evaluate(_chain(20), {"x": 0.7}, check=False).gradients["x"]
    assert _at(text, {"x": 0.7}) == pytest.approx(numeric, rel=1e-10, abs=1e-300)


def test_shared_subexpressions_become_statements_that_parse_back():
    text = differentiate("u = sin(x*y); u*u*u + u").texts()["x"]
    assert text == "t1 = x*y; cos(t1)*y*(3*sin(t1)**2 + 1)"
    assert _at(text, {"x": 0.3, "y": 1.7}) == pytest.approx(
        gradcli.evaluate("u = sin(x*y); u*u*u + u", {"x": 0.3, "y": 1.7}).gradients["x"])


@pytest.mark.parametrize(("build", "expected"), [
    (lambda b, x, y, z: b.raw(OPS["add"], (x, b.raw(OPS["mul"], (b.constant(-2.0), y)))),
     "x - 2*y"),
    (lambda b, x, y, z: b.raw(OPS["add"], (x, b.raw(OPS["neg"], (y,)))), "x - y"),
    (lambda b, x, y, z: b.raw(OPS["add"], (x, b.raw(OPS["div"], (
        b.raw(OPS["mul"], (b.constant(-2.0), y)), z)))), "x - 2*y/z"),
    (lambda b, x, y, z: b.raw(OPS["add"], (x, b.raw(OPS["neg"], (
        b.raw(OPS["pow"], (y, b.constant(2.0))),)))), "x - y**2"),
    (lambda b, x, y, z: b.raw(OPS["add"], (x, b.raw(OPS["add"], (
        b.raw(OPS["neg"], (y,)), z)))), "x + (-y + z)"),  # a sum stays bracketed as it is
])
def test_a_sum_of_a_negative_term_prints_as_a_difference_with_the_same_floats(build, expected):
    """``a + -2*y`` is written ``a - 2*y``: negation is exact in every operation, so the text
    read back gives the graph's number to the bit, also where the values overflow or vanish."""
    builder = Builder()
    names = ("x", "y", "z")
    node = build(builder, *(builder.variable(n) for n in names))
    text = to_text(node)
    assert text == expected
    variables = [n for n in nodes_of([node]) if n.op.name == "var"]
    for values in [(0.1, 0.7, 3.0), (1e308, -1e308, 1e-308), (-0.0, 5e-324, -7.5),
                   (2.5, 1e300, 1e-300)]:
        point = dict(zip(names, values, strict=True))
        graph = Program.build(text, node, variables, {})
        graph.bind(point)
        try:
            printed = _at(text, point)
        except gradcli.NumericError:
            continue  # an overflow the graph meets as well: checked by the next point
        assert printed == forward(graph.nodes) or (math.isnan(printed)
                                                   and math.isnan(forward(graph.nodes)))


def test_statement_names_do_not_clash_with_variables():
    text = differentiate("u = sin(t1*t2); u*u + u").texts()["t1"]
    assert _at(text, {"t1": 0.3, "t2": 1.7}) == pytest.approx(
        gradcli.evaluate("u = sin(t1*t2); u*u + u", {"t1": 0.3, "t2": 1.7}).gradients["t1"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions, points)
def test_printed_derivatives_parse_back_to_the_reverse_mode_gradient(expression, point):
    text, _ = expression
    try:
        numeric = gradcli.evaluate(text, point, check=False)
    except gradcli.NumericError:
        return
    program = parse(text)
    builder = Builder(exact_constants=True)  # a printed formula's (ops/row.py's ``printed``)
    (output,) = builder.import_graph([program.output])
    names = list(program.variables)
    value = _at(to_text(output), point)  # the simplified value reads back too
    assert math.isclose(value, numeric.value, rel_tol=1e-9, abs_tol=1e-9), text
    for name, grad in zip(names, gradients(output, [builder.variable(n) for n in names]),
                          strict=True):
        printed = print_shared([grad]).program()
        try:
            reparsed = _at(printed, point)
        except gradcli.NumericError:
            continue  # e.g. an overflow inside a derivative whose product is still finite
        (shown,), _, _ = _presented([grad])  # the graph as printed
        direct = Program.build(printed, shown, [n for n in nodes_of([shown]) if n.op.name == "var"],
                               {})
        direct.bind(point)
        assert reparsed == forward(direct.nodes)  # the printer is exact: same graph, same floats
        assert math.isclose(reparsed, numeric.gradients[name], rel_tol=1e-8, abs_tol=1e-8), (
            text, name, printed)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions)
def test_builder_reuses_its_answers_as_a_fresh_builder_would_give_them(expression):
    # make() keeps what it gave for an (op, inputs) and gives it again: the derivatives built
    # after others in one builder print exactly as each built alone in a fresh builder.
    text, _ = expression
    program = parse(text)
    names = list(program.variables)
    shared = Builder()
    (output,) = shared.import_graph([program.output])
    together = gradients(output, [shared.variable(n) for n in names])
    again = gradients(output, [shared.variable(n) for n in names])
    assert all(a is b for a, b in zip(together, again, strict=True))  # the same nodes
    for name, grad in zip(names, together, strict=True):
        alone = Builder()
        (fresh,) = alone.import_graph([program.output])
        (expected,) = gradients(fresh, [alone.variable(name)])
        assert to_text(grad) == to_text(expected), (text, name)


def test_nodes_and_uses_counts_every_operand_edge_in_topological_order():
    # against nodes_of and a plain count over the graph's edges (a node used twice by one
    # user counts twice; an output counts only where it is an operand)
    b = Builder()
    x, y = b.variable("x"), b.variable("y")
    a = b.raw(OPS["sin"], (x,))
    p = b.raw(OPS["mul"], (a, a))  # raw: as written (make would write a**2)
    q = b.raw(OPS["add"], (p, y))
    r = b.raw(OPS["exp"], (q,))
    outputs = [r, q, r, p]
    nodes, uses = nodes_and_uses(outputs)
    assert nodes == nodes_of(outputs)
    edges: dict = {}
    for node in nodes:
        for source in node.inputs:
            edges[source] = edges.get(source, 0) + 1
    assert uses == {node: edges.get(node, 0) for node in nodes}
    assert uses[a] == 2 and uses[r] == 0


def test_partial_evaluation_of_the_seed_example():
    result = gradcli.evaluate("(x*W+b-t)**2", {"x": 2, "W": 3}, strict=False)
    symbolic = result.symbolic
    assert isinstance(result, gradcli.FreeResult) and result.status == 0
    assert symbolic.free == result.free == ["b", "t"]
    assert symbolic.value == result.value == "(b - t + 6)**2"
    for b, t in [(1.0, 8.0), (-2.5, 0.25), (3.0, 3.0)]:
        full = gradcli.evaluate("(x*W+b-t)**2", {"x": 2, "W": 3, "b": b, "t": t})
        assert _at(symbolic.value, {"b": b, "t": t}) == pytest.approx((6 + b - t) ** 2)
        for name, text in symbolic.gradients.items():
            assert _at(text, {"b": b, "t": t}) == pytest.approx(full.gradients[name])


def test_partial_evaluation_uses_program_defaults():
    symbolic = partial_evaluate(parse("x = 2; x*y + x"), {})
    assert symbolic.free == ["y"]
    assert symbolic.value == "2*y + 2"  # x*y + x with x = 2, as eval computes it
    assert symbolic.gradients == {"x": "y + 1", "y": "2"}


def test_python_format_is_a_function_that_imports_only_math():
    text = "sigmoid(w*x) + relu(x - w)*softplus(w) + abs(x)*atan2(w, x)**2 + pi"
    source = differentiate(text, ["w", "x"], order=2).python()
    tree = ast.parse(source)
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [alias.name for n in imports for alias in n.names] == ["math"]
    namespace: dict = {}
    exec(compile(tree, "<generated>", "exec"), namespace)  # the test runs it; gradcli never does
    point = {"w": 0.7, "x": -1.3}
    value, gradient, hessian = namespace["f"](**point)
    result = gradcli.evaluate(text, point, order=2)
    assert value == pytest.approx(result.value)
    assert gradient == pytest.approx((result.gradients["w"], result.gradients["x"]))
    for i, a in enumerate("wx"):
        assert hessian[i] == pytest.approx(tuple(result.hessian.matrix[a][b] for b in "wx"))


def test_python_hessian_names_each_shared_piece_once():
    # The mixed entries d2f/dxdy and d2f/dydx are one node listed twice: it is one statement,
    # named once (not two identical statements, with the names between them skipped).
    text = "x**3*y**2*z + x*y*z"
    source = differentiate(text, order=2).python()
    names = [line.split("=")[0].strip() for line in source.splitlines()
             if line.startswith("    t") and " = " in line]
    assert names == [f"t{i}" for i in range(1, len(names) + 1)]
    namespace: dict = {}
    exec(source, namespace)  # the test runs it; gradcli never does
    point = {"x": 0.7, "y": -1.3, "z": 1.9}
    _, _, hessian = namespace["f"](**point)
    result = gradcli.evaluate(text, point, order=2)
    for i, a in enumerate("xyz"):
        assert hessian[i] == pytest.approx(tuple(result.hessian.matrix[a][b] for b in "xyz"))


def test_python_names_that_are_keywords_are_renamed():
    source = differentiate("lambda*math", ["lambda"]).python()
    namespace: dict = {}
    exec(source, namespace)
    assert namespace["f"](2.0, 5.0) == (10.0, (5.0,))


@pytest.mark.parametrize(("text", "expected"), [
    ("x/y", r"\frac{1}{y}"),
    ("sqrt(x)", r"\frac{0.5}{\sqrt{x}}"),
    ("x**3", r"3 \cdot {x}^{2}"),
    ("sin(2*x)", r"2 \cdot \cos\left(2 \cdot x\right)"),
    ("asin(x)", r"\frac{1}{\sqrt{1 - {x}^{2}}}"),
])
def test_latex_format(text, expected):
    assert differentiate(text, ["x"]).texts("latex")["x"] == expected


def test_hessian_at_a_kink_fails_its_check():
    result = gradcli.evaluate("relu(x)**2", {"x": 0.0}, order=2)
    assert not result.hessian.check.ok
    assert result.status == gradcli.ExitStatus.CHECK_FAILED


def test_unknown_wrt_is_a_usage_error():
    with pytest.raises(gradcli.UsageError, match="z is not a variable"):
        differentiate("x*y", ["z"])


def test_deep_shared_factors_simplify_without_recursion_errors():
    # Rewrites nest (a common factor pulled out builds products that are rewritten again);
    # their nesting is bounded, so 800 levels of shared factors differentiate and print.
    depth = 800

    def nested(last: str) -> str:
        return "*(".join(f"x{i}" for i in range(depth)) + f"*({last}" + ")" * depth

    derivatives = gradcli.differentiate(f"{nested('A')} + {nested('B')}", ["A"])
    text = derivatives.texts("text")["A"]
    point = {f"x{i}": 1.0 + i / depth for i in range(depth)}
    expected = 1.0
    for value in point.values():
        expected *= value
    assert gradcli.evaluate(text, point, check=False).value == pytest.approx(expected, rel=1e-9)
