"""Every op's value and derivatives against SymPy's closed forms, evaluated with 30 digits."""

from __future__ import annotations

import math

import pytest
import sympy as sp

import gradcli
from gradcli.engine.ops import FUNCTIONS, OPS

X, Y = sp.symbols("x y", real=True)

# The independent answer for each op: a SymPy expression in x (and y).
UNARY = {
    "neg": -X,
    "exp": sp.exp(X),
    "log": sp.log(X),
    "log2": sp.log(X, 2),
    "log10": sp.log(X, 10),
    "sqrt": sp.sqrt(X),
    "sin": sp.sin(X),
    "cos": sp.cos(X),
    "tan": sp.tan(X),
    "asin": sp.asin(X),
    "acos": sp.acos(X),
    "atan": sp.atan(X),
    "sinh": sp.sinh(X),
    "cosh": sp.cosh(X),
    "tanh": sp.tanh(X),
    "sigmoid": 1 / (1 + sp.exp(-X)),
    "relu": sp.Max(X, 0),
    "softplus": sp.log(1 + sp.exp(X)),
    "abs": sp.Abs(X),
    "sign": sp.sign(X),
}
BINARY = {
    "add": X + Y,
    "sub": X - Y,
    "mul": X * Y,
    "div": X / Y,
    "pow": X**Y,
    "atan2": sp.atan2(X, Y),
    "hypot": sp.sqrt(X**2 + Y**2),
    "min": sp.Min(X, Y),
    "max": sp.Max(X, Y),
}
# Points inside each op's domain, away from kinks (the conventions at kinks are tested below).
GENERAL = [-2.3, -0.7, 0.4, 1.9, 3.1]
UNARY_POINTS = {
    "log": [0.3, 1.0, 2.5, 40.0],
    "log2": [0.3, 1.0, 2.5, 40.0],
    "log10": [0.3, 1.0, 2.5, 40.0],
    "sqrt": [0.3, 1.0, 2.5, 40.0],
    "asin": [-0.9, -0.2, 0.5, 0.8],
    "acos": [-0.9, -0.2, 0.5, 0.8],
    "tan": [-1.2, -0.3, 0.4, 1.1],
}
BINARY_POINTS = [(1.5, 0.5), (-2.0, 3.0), (0.7, -1.3), (2.5, 2.0), (-0.4, -0.9)]
POW_POINTS = [(1.5, 0.5), (2.0, -1.5), (0.7, 3.0), (3.0, 2.2)]

SPELLING = {"add": "x + y", "sub": "x - y", "mul": "x * y", "div": "x / y", "pow": "x ** y",
            "neg": "-x"}


def test_every_op_has_an_independent_answer():
    assert set(UNARY) | set(BINARY) == set(OPS) - {"var", "const"}


def _spelled(name: str) -> str:
    if name in SPELLING:
        return SPELLING[name]
    return f"{name}(x, y)" if OPS[name].arity == 2 else f"{name}(x)"


def _close(actual: float, expected: sp.Expr) -> None:
    assert actual == pytest.approx(float(sp.N(expected, 30)), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_value_and_derivative(name):
    closed = UNARY[name]
    derivative = sp.diff(closed, X)
    for x in UNARY_POINTS.get(name, GENERAL):
        result = gradcli.evaluate(_spelled(name), {"x": x})
        _close(result.value, closed.subs(X, x))
        _close(result.gradients["x"], derivative.subs(X, x))
        assert result.check.ok, (name, x)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_value_and_derivatives(name):
    closed = BINARY[name]
    dx, dy = sp.diff(closed, X), sp.diff(closed, Y)
    for x, y in POW_POINTS if name == "pow" else BINARY_POINTS:
        result = gradcli.evaluate(_spelled(name), {"x": x, "y": y})
        at = {X: x, Y: y}
        _close(result.value, closed.subs(at))
        _close(result.gradients["x"], dx.subs(at))
        _close(result.gradients["y"], dy.subs(at))
        assert result.check.ok, (name, x, y)


def test_pow_function_spelling_and_caret_alias():
    for text in ("pow(x, y)", "x ^ y", "x ** y"):
        result = gradcli.evaluate(text, {"x": 2.0, "y": 3.0})
        assert result.value == 8.0
        assert result.gradients == {"x": 12.0, "y": pytest.approx(8 * math.log(2))}


def test_pow_with_a_constant_integer_exponent_accepts_a_negative_base():
    result = gradcli.evaluate("x**3", {"x": -2.0})
    assert result.value == -8.0
    assert result.gradients["x"] == 12.0  # 3 x^2


def test_pow_with_a_variable_exponent_rejects_a_negative_base():
    with pytest.raises(gradcli.NumericError, match="pow"):
        gradcli.evaluate("x**y", {"x": -2.0, "y": 2.0})


def test_conventions_at_kinks():
    assert gradcli.evaluate("abs(x)", {"x": 0.0}, check=False).gradients["x"] == 0.0
    assert gradcli.evaluate("relu(x)", {"x": 0.0}, check=False).gradients["x"] == 0.0
    assert gradcli.evaluate("sign(x)", {"x": 0.0}, check=False).gradients["x"] == 0.0
    for name in ("min", "max"):
        tie = gradcli.evaluate(f"{name}(x, y)", {"x": 1.5, "y": 1.5})
        assert tie.gradients == {"x": 0.5, "y": 0.5}
        assert tie.check.ok  # the central difference splits a tie equally too


def test_stable_forms_do_not_overflow():
    assert gradcli.evaluate("sigmoid(x)", {"x": -1000.0}).value == 0.0
    assert gradcli.evaluate("softplus(x)", {"x": 1000.0}).value == 1000.0
    assert gradcli.evaluate("softplus(x)", {"x": -1000.0}).value == 0.0


def test_functions_table_is_what_the_parser_accepts():
    names = set(FUNCTIONS)
    assert {"sin", "atan2", "hypot", "min", "max", "pow", "sigmoid", "relu"} <= names
    assert not names & {"add", "sub", "mul", "div", "neg"}


def _cases(name):
    if OPS[name].arity == 1:
        return [(x,) for x in UNARY_POINTS.get(name, GENERAL)]
    return POW_POINTS if name == "pow" else BINARY_POINTS


def _closed(name):
    return UNARY[name] if name in UNARY else BINARY[name]


@pytest.mark.parametrize("name", sorted(set(OPS) - {"var", "const"}))
def test_complex_column_gives_the_value_and_complex_step_derivative(name):
    op, closed, h = OPS[name], _closed(name), 1e-30
    symbols = (X,) if op.arity == 1 else (X, Y)
    for point in _cases(name):
        at = dict(zip(symbols, point, strict=True))
        for i, symbol in enumerate(symbols):
            args = [complex(v, h if j == i else 0.0) for j, v in enumerate(point)]
            out = op.apply_complex(*args)
            assert out.real == pytest.approx(op.forward(*point), rel=1e-13, abs=1e-15)
            expected = float(sp.N(sp.diff(closed, symbol).subs(at), 30))
            assert out.imag / h == pytest.approx(expected, rel=1e-12, abs=1e-12), (name, point)


@pytest.mark.parametrize("name", sorted(set(OPS) - {"var", "const"}))
def test_vector_column_matches_forward_elementwise(name):
    np = pytest.importorskip("numpy")
    op = OPS[name]
    cases = _cases(name)
    columns = [np.array(column) for column in zip(*cases, strict=True)]
    got = op.apply_vector(*columns)
    expected = [op.forward(*case) for case in cases]
    assert got == pytest.approx(expected, rel=1e-13, abs=1e-15)


def test_derivative_rules_run_on_arrays_and_complex_numbers():
    np = pytest.importorskip("numpy")
    x = np.array([0.1, 0.5, 2.0])
    assert OPS["sin"].rules[0](x, np.sin(x)) == pytest.approx(np.cos(x))
    assert OPS["abs"].rules[0](x - 0.5, None) == pytest.approx([-1.0, 0.0, 1.0])
    assert OPS["max"].rules[0](x, np.ones(3), None) == pytest.approx([0.0, 0.0, 1.0])
    assert OPS["sin"].rules[0](0.5 + 0j, None) == pytest.approx(math.cos(0.5))
