"""Every op's value and derivatives against SymPy's closed forms, evaluated with 30 digits.

Steps (floor, ...) are SymPy functions of our own (``_step``): their values are Python's, their
derivative is 0 -- what the op table says away from the jumps, where every test point lies.
"""

from __future__ import annotations

import math

import pytest
import sympy as sp

import gradcli
from gradcli.engine.ops import FUNCTIONS, NONE, OPS, ROWS

ELEMENTWISE = sorted(op.name for op in ROWS if not op.is_array)  # the table's element-wise rows

X, Y, Z = sp.symbols("x y z", real=True)


def _step(name: str, function) -> type:
    """A SymPy function with ``function``'s values at numbers and derivative 0."""
    return type(name, (sp.Function,), {
        "eval": classmethod(lambda cls, x: sp.Integer(function(float(x))) if x.is_Number
                            else None),
        "fdiff": lambda self, argindex=1: sp.S.Zero,
    })


FLOOR = _step("Floor", math.floor)


class LogAbsGamma(sp.Function):
    """log |gamma(x)|, whose derivative is digamma on both sides of 0 (SymPy's own
    log(Abs(gamma(x))) differentiates into re/im parts that do not evaluate twice)."""

    @classmethod
    def eval(cls, x):
        return sp.log(sp.Abs(sp.gamma(x))) if x.is_Number else None

    def fdiff(self, argindex=1):
        return sp.polygamma(0, self.args[0])


ELU = sp.Piecewise((X, X > 0), (sp.exp(X) - 1, True))
SELU_SCALE, SELU_ALPHA = sp.Float("1.0507009873554804934"), sp.Float("1.6732632423543772848")
GELU_U = sp.sqrt(2 / sp.pi) * (X + sp.Float("0.044715") * X**3)

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
    "sech": sp.sech(X),
    "sigmoid": 1 / (1 + sp.exp(-X)),
    "relu": sp.Max(X, 0),
    "softplus": sp.log(1 + sp.exp(X)),
    "abs": sp.Abs(X),
    "sign": sp.sign(X),
    "heaviside": sp.Heaviside(X, 0),
    "log1p": sp.log(1 + X),
    "expm1": sp.exp(X) - 1,
    "exp2": 2**X,
    "cbrt": sp.sign(X) * sp.Abs(X) ** sp.Rational(1, 3),
    "rsqrt": 1 / sp.sqrt(X),
    "square": X**2,
    "reciprocal": 1 / X,
    "deg2rad": X * sp.pi / 180,
    "rad2deg": X * 180 / sp.pi,
    "asinh": sp.asinh(X),
    "acosh": sp.acosh(X),
    "atanh": sp.atanh(X),
    "erf": sp.erf(X),
    "erfc": sp.erfc(X),
    "sinc": sp.sin(sp.pi * X) / (sp.pi * X),
    "dsinc": sp.diff(sp.sin(sp.pi * X) / (sp.pi * X), X),
    "erfinv": sp.erfinv(X),
    "gamma": sp.gamma(X),
    "dgamma": sp.gamma(X) * sp.polygamma(0, X),
    "lgamma": LogAbsGamma(X),
    "digamma": sp.polygamma(0, X),
    "logit": sp.log(X / (1 - X)),
    "silu": X / (1 + sp.exp(-X)),
    "gelu": X * (1 + sp.erf(X / sp.sqrt(2))) / 2,
    "gelu_tanh": X * (1 + sp.tanh(GELU_U)) / 2,
    "elu": ELU,
    "selu": SELU_SCALE * sp.Piecewise((X, X > 0), (SELU_ALPHA * (sp.exp(X) - 1), True)),
    "softsign": X / (1 + sp.Abs(X)),
    "mish": X * sp.tanh(sp.log(1 + sp.exp(X))),
    "hardtanh": sp.Min(sp.Max(X, -1), 1),
    "floor": FLOOR(X),
    "ceil": _step("Ceil", math.ceil)(X),
    "round": _step("Round", round)(X),
    "trunc": _step("Trunc", math.trunc)(X),
    "logical_not": sp.Piecewise((1, sp.Eq(X, 0)), (0, True)),
    "i0e": sp.exp(-sp.Abs(X)) * sp.besseli(0, X),
    "i1e": sp.exp(-sp.Abs(X)) * sp.besseli(1, X),
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
    "logaddexp": sp.log(sp.exp(X) + sp.exp(Y)),
    "logaddexp2": sp.log(2**X + 2**Y, 2),
    "xlogy": X * sp.log(Y),
    "polygamma": sp.polygamma(_step("Whole", int)(X), Y),
    "ive": sp.exp(-sp.Abs(Y)) * sp.besseli(_step("Order", int)(X), Y),
    "dive": sp.diff(sp.exp(-sp.Abs(Y)) * sp.besseli(_step("Order", int)(X), Y), Y),
    "beta": sp.gamma(X) * sp.gamma(Y) / sp.gamma(X + Y),
    "lbeta": sp.log(sp.gamma(X) * sp.gamma(Y) / sp.gamma(X + Y)),
    "dbeta": sp.gamma(X) * sp.gamma(Y) / sp.gamma(X + Y)
             * (sp.polygamma(0, Y) - sp.polygamma(0, X + Y)),
    "dlbeta": sp.polygamma(0, Y) - sp.polygamma(0, X + Y),
    "leaky_relu": sp.Piecewise((X, X > 0), (Y * X, True)),
    "mod": X - Y * FLOOR(X / Y),
    # piecewise (issue 15): truth values 1 and 0, as SymPy's Piecewise writes them
    "lt": sp.Piecewise((1, X < Y), (0, True)),
    "le": sp.Piecewise((1, X <= Y), (0, True)),
    "gt": sp.Piecewise((1, X > Y), (0, True)),
    "ge": sp.Piecewise((1, X >= Y), (0, True)),
    "eq": sp.Piecewise((1, sp.Eq(X, Y)), (0, True)),
    "ne": sp.Piecewise((1, sp.Ne(X, Y)), (0, True)),
    "logical_and": sp.Piecewise((1, sp.And(sp.Ne(X, 0), sp.Ne(Y, 0))), (0, True)),
    "logical_or": sp.Piecewise((1, sp.Or(sp.Ne(X, 0), sp.Ne(Y, 0))), (0, True)),
}
TERNARY = {"clip": sp.Min(sp.Max(X, Y), Z),
           "where": sp.Piecewise((Y, sp.Ne(X, 0)), (Z, True))}
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
    # near the edges of the domains, and far out
    "log1p": [-0.999999, -0.5, 1e-12, 0.3, 7.0, 1e6],
    "expm1": [-30.0, -0.7, -1e-12, 1e-9, 0.4, 3.1],
    "exp2": [-40.0, -2.3, 0.4, 10.5],
    "cbrt": [-27.0, -2.3, -1e-6, 0.4, 1e-9, 3.1, 8e30],
    "rsqrt": [1e-8, 0.3, 1.0, 2.5, 1e6],
    "reciprocal": [-2.3, -1e-5, 0.4, 3.1],
    "sech": [-800.0, -2.3, -1e-8, 0.4, 3.1, 705.0],
    "asinh": [-30.0, -2.3, -1e-8, 0.4, 3.1, 1e5],
    "acosh": [1.000001, 1.5, 3.1, 1e5],
    "atanh": [-0.999999, -0.7, 1e-9, 0.4, 0.9999],
    "erf": [-4.0, -2.3, -1e-9, 0.4, 1.9, 5.0],
    "erfc": [-2.3, -0.7, 0.4, 3.1, 8.0, 20.0],
    "sinc": [-2.3, -0.7, -1e-7, 0.003, 0.4, 1.0, 3.1, 250.5],  # 0 itself: test_sinc_at_zero
    "dsinc": [-2.3, -0.7, -1e-7, 0.003, 0.0999, 0.4, 3.1, 250.5],
    "erfinv": [-0.999999, -0.9, -0.3, 1e-10, 0.5, 0.97, 0.999999999],
    "gamma": [-2.3, -0.7, 1e-6, 0.4, 1.9, 3.1, 25.5],
    "dgamma": [-2.3, -0.7, 1e-6, 0.4, 1.9, 3.1, 25.5],
    "lgamma": [-4.7, -2.3, -0.7, 1e-6, 0.4, 1.9, 1000.5],
    "digamma": [-4.7, -2.3, -0.7, 0.001, 0.4, 1.4616321449683623, 1.9, 30.0, 1e6],
    "logit": [1e-9, 0.1, 0.3, 0.5000001, 0.7, 0.999999],
    "hardtanh": [-2.3, -0.7, 0.4, 3.1],
    "floor": [-2.3, -0.7, 0.4, 3.1],
    "ceil": [-2.3, -0.7, 0.4, 3.1],
    "round": [-2.3, -0.7, 0.4, 3.1],
    "trunc": [-2.3, -0.7, 0.4, 3.1],
    # both of _ive's series and the switch between them at |x| = 60, small and large |x|
    "i0e": [-700.0, -59.9, -2.3, -1e-7, 1e-7, 0.4, 3.1, 59.9, 60.1, 1e4],
    "i1e": [-700.0, -59.9, -2.3, -1e-7, 1e-7, 0.4, 3.1, 59.9, 60.1, 1e4],
}
SPECIAL_POINTS = {
    "xlogy": [(1.5, 0.5), (-2.0, 3.0), (0.7, 1e-6), (2.5, 2.0)],
    "polygamma": [(0.0, 0.4), (1.0, -2.3), (1.0, 1.9), (2.0, 0.7), (3.0, -0.7), (4.0, 30.0)],
    "ive": [(0.0, -3.1), (1.0, 0.4), (2.0, 1e-3), (5.0, -7.5), (12.0, 35.0), (20.0, 99.0),
            (20.0, 101.0), (3.0, 250.0), (7.0, -1e5)],
    "dive": [(0.0, -3.1), (1.0, 0.4), (2.0, 1e-3), (5.0, -7.5), (12.0, 35.0), (20.0, 99.0),
             (20.0, 101.0), (3.0, 250.0), (7.0, -1e5)],
    "beta": [(1.5, 0.5), (0.3, 2.0), (2.5, 7.0), (0.01, 3.0), (100.0, 80.0)],
    "lbeta": [(1.5, 0.5), (0.3, 2.0), (2.5, 7.0), (0.01, 3.0), (100.0, 80.0)],
    "dbeta": [(1.5, 0.5), (0.3, 2.0), (2.5, 7.0), (0.01, 3.0), (100.0, 80.0)],
    "dlbeta": [(1.5, 0.5), (0.3, 2.0), (2.5, 7.0), (0.01, 3.0), (100.0, 80.0)],
    "mod": [(5.5, 2.0), (-5.5, 2.0), (5.5, -2.0), (0.7, 0.3), (7.25, 1.5)],
    "leaky_relu": [(1.5, 0.1), (-2.0, 0.01), (0.7, -1.3), (-0.4, 0.3)],
    "clip": [(0.5, -1.0, 1.0), (-2.0, -1.0, 1.0), (3.0, -1.0, 2.0), (0.3, 0.5, 0.9)],
    # a condition away from its switching point (0): the check would mix both branches there
    "where": [(1.0, 2.5, -0.7), (-3.0, 0.4, 1.9), (0.5, -1.2, 8.0)],
}
BINARY_POINTS = [(1.5, 0.5), (-2.0, 3.0), (0.7, -1.3), (2.5, 2.0), (-0.4, -0.9)]
POW_POINTS = [(1.5, 0.5), (2.0, -1.5), (0.7, 3.0), (3.0, 2.2)]


SPELLING = {"add": "x + y", "sub": "x - y", "mul": "x * y", "div": "x / y", "pow": "x ** y",
            "neg": "-x", "lt": "x < y", "le": "x <= y", "gt": "x > y", "ge": "x >= y",
            "eq": "x == y", "ne": "x != y", "logical_and": "x and y", "logical_or": "x or y",
            "logical_not": "not x"}


def test_every_op_has_an_independent_answer():
    assert set(UNARY) | set(BINARY) | set(TERNARY) == set(ELEMENTWISE)


def _spelled(name: str) -> str:
    if name in SPELLING:
        return SPELLING[name]
    return f"{name}({', '.join('xyz'[:OPS[name].arity])})"


def _exact(x: float) -> sp.Float:
    """``x`` as SymPy computes with it at 40 digits: a Python float would make SymPy compute at
    53 bits (1 - x**2 near x = 1 loses the digits), a Rational would send digamma into Gauss's
    exact sum over its denominator."""
    return sp.Float(x, 40)


def _close(actual: float, expected: sp.Expr) -> None:
    assert actual == pytest.approx(float(sp.N(expected, 30)), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_value_and_derivative(name):
    closed = UNARY[name]
    derivative = sp.diff(closed, X)
    for x in UNARY_POINTS.get(name, GENERAL):
        result = gradcli.evaluate(_spelled(name), {"x": x})
        _close(result.value, closed.subs(X, _exact(x)))
        _close(result.gradients["x"], derivative.subs(X, _exact(x)))
        assert result.check.ok, (name, x)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_value_and_derivatives(name):
    closed = BINARY[name]
    dx, dy = sp.diff(closed, X), sp.diff(closed, Y)
    for x, y in _cases(name):
        result = gradcli.evaluate(_spelled(name), {"x": x, "y": y})
        at = {X: _exact(x), Y: _exact(y)}
        _close(result.value, closed.subs(at))
        _close(result.gradients["x"], dx.subs(at))
        _close(result.gradients["y"], dy.subs(at))
        if name in ("polygamma", "ive", "dive"):  # whole orders only: no difference to take
            assert result.check.gradients["x"].numeric is None
            assert result.check.gradients["y"].ok, (x, y)
            continue
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
        # the central difference splits a tie equally too, but the sides' slopes (0 and 1) tell
        # that no derivative exists there (gradcheck/steps.py's kink screen)
        assert not tie.check.ok and tie.check.gradients["x"].method == "one-sided"


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
    if name in SPECIAL_POINTS:
        return SPECIAL_POINTS[name]
    return POW_POINTS if name == "pow" else BINARY_POINTS


def _closed(name):
    return {**UNARY, **BINARY, **TERNARY}[name]


@pytest.mark.parametrize("name", sorted(TERNARY))
def test_ternary_value_and_derivatives(name):
    closed = TERNARY[name]
    for point in _cases(name):
        result = gradcli.evaluate(_spelled(name), dict(zip("xyz", point, strict=True)))
        at = dict(zip((X, Y, Z), map(_exact, point), strict=True))
        _close(result.value, closed.subs(at))
        for symbol in (X, Y, Z):
            _close(result.gradients[str(symbol)], sp.diff(closed, symbol).subs(at))
        assert result.check.ok, (name, point)


WITH_COMPLEX_FORMS = sorted(op.name for op in ROWS
                            if op.complex is not NONE and not op.is_array)


@pytest.mark.parametrize("name", WITH_COMPLEX_FORMS)
def test_complex_column_gives_the_value_and_complex_step_derivative(name):
    op, closed, h = OPS[name], _closed(name), 1e-30
    symbols = (X, Y, Z)[:op.arity]
    for point in _cases(name):
        at = dict(zip(symbols, map(_exact, point), strict=True))
        for i, symbol in enumerate(symbols):
            args = [complex(v, h if j == i else 0.0) for j, v in enumerate(point)]
            out = op.apply_complex(*args)
            assert out.real == pytest.approx(op.forward(*point), rel=1e-13, abs=1e-15)
            expected = float(sp.N(sp.diff(closed, symbol).subs(at), 30))
            assert out.imag / h == pytest.approx(expected, rel=1e-12, abs=1e-12), (name, point)


@pytest.mark.parametrize("name", ELEMENTWISE)
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
