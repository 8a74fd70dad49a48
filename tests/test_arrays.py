"""Array ops (issue 16): every op's value and gradient against an independent answer.

The answers are hand-written NumPy closed forms (the matrix calculus identities: d tr(AX)/dX =
A', d det X = det X inv(X)', d log det X = inv(X)', d inv(X) = -inv(X)' G inv(X)', softmax's
Jacobian diag(s) - s s', ...), SymPy matrices differentiated symbolically, and mpmath at 30
digits; never gradcli's own rules.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import sympy as sp

import gradcli
from gradcli.errors import NumericError, UsageError

RNG = np.random.default_rng(16)
X3 = np.array([0.3, -1.2, 2.0])
Y3 = np.array([1.5, 0.5, -0.7])
C3 = np.array([0.2, -0.4, 1.1])
A = np.array([[2.0, 0.5, 0.1], [0.3, 3.0, -0.4], [0.2, -0.1, 1.5]])
B = np.array([[1.0, -2.0], [0.5, 0.3], [2.0, 1.0]])
C2 = np.array([[0.7, -0.3], [1.2, 0.4], [-0.5, 0.9]])


def run(program: str, **values):
    result = gradcli.evaluate(program, values)
    assert result.check.ok, result.check.failures
    return result


def close(actual, expected, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(actual, dtype=float), expected, rtol=rtol, atol=atol)


# --- each op: value and gradient against a closed form ---------------------------------------

def test_matmul_matrix_vector():
    w, x = RNG.normal(size=(4, 3)), RNG.normal(size=3)
    c = RNG.normal(size=4)
    r = run("sum((W@x)*c)", W=w, x=x, c=c)
    close(r.value, c @ (w @ x))
    close(r.gradients["W"], np.outer(c, x))
    close(r.gradients["x"], w.T @ c)


def test_matmul_vector_matrix_and_matrix_matrix():
    r = run("sum((x@B)*c)", x=X3, B=B, c=[0.5, -1.0])
    close(r.value, (X3 @ B) @ [0.5, -1.0])
    close(r.gradients["x"], B @ [0.5, -1.0])
    close(r.gradients["B"], np.outer(X3, [0.5, -1.0]))
    r = run("sum((A@B)*C)", A=A, B=B, C=C2)
    close(r.value, np.sum((A @ B) * C2))
    close(r.gradients["A"], C2 @ B.T)
    close(r.gradients["B"], A.T @ C2)


def test_vector_at_vector_is_the_dot_product():
    r = run("x@y", x=X3, y=Y3)
    close(r.value, float(np.dot(X3, Y3)))
    close(r.gradients["x"], Y3)
    close(r.gradients["y"], X3)


def test_dot_outer_transpose():
    r = run("dot(x, y)", x=X3, y=Y3)
    close(r.value, X3 @ Y3)
    close(r.gradients["x"], Y3)
    r = run("sum(outer(x, y)*M)", x=X3, y=Y3, M=A)
    close(r.value, X3 @ A @ Y3)
    close(r.gradients["x"], A @ Y3)
    close(r.gradients["y"], A.T @ X3)
    r = run("sum(B'*D)", B=B, D=C2.T)
    close(r.value, np.sum(B.T * C2.T))
    close(r.gradients["B"], C2)
    r = run("x'@y", x=X3, y=Y3)  # a vector's transpose is the vector, as in NumPy
    close(r.value, X3 @ Y3)


@pytest.mark.parametrize(("program", "value", "gradient"), [
    ("sum(x)", np.sum(X3), np.ones(3)),
    ("mean(x)", np.mean(X3), np.full(3, 1 / 3)),
    ("prod(x)", np.prod(X3), np.prod(X3) / X3),
    ("norm(x)", np.linalg.norm(X3), X3 / np.linalg.norm(X3)),
    ("norm1(x)", np.sum(np.abs(X3)), np.sign(X3)),
    ("max(x)", 2.0, [0, 0, 1]),
    ("min(x)", -1.2, [0, 1, 0]),
    ("logsumexp(x)", np.log(np.sum(np.exp(X3))), np.exp(X3) / np.sum(np.exp(X3))),
])
def test_reductions(program, value, gradient):
    r = run(program, x=X3)
    close(r.value, value)
    close(r.gradients["x"], gradient)


def test_prod_with_a_zero_element_has_the_product_of_the_others():
    r = run("prod(x)", x=[2.0, 0.0, 3.0])
    close(r.gradients["x"], [0.0, 6.0, 0.0])


def test_max_and_min_reductions_split_ties_equally():
    # A tie is a kink: finite differences see a one-sided slope there (the scalar max too).
    tie = gradcli.evaluate("max(x)", {"x": [3.0, 1.0, 3.0]}, check=False)
    close(tie.gradients["x"], [0.5, 0.0, 0.5])
    tie = gradcli.evaluate("min(x)", {"x": [1.0, 1.0, 1.0, 5.0]}, check=False)
    close(tie.gradients["x"], [1 / 3, 1 / 3, 1 / 3, 0.0])
    assert run("max(x, y)", x=1.0, y=2.0).value == 2.0  # two arguments: element-wise, as before


def test_norm_of_a_matrix_is_frobenius():
    r = run("norm(A)", A=A)
    close(r.value, np.linalg.norm(A, "fro"))
    close(r.gradients["A"], A / np.linalg.norm(A, "fro"))


def test_logsumexp_subtracts_the_max_and_matches_mpmath():
    x = np.array([1000.0, 999.0, -5.0])
    r = run("logsumexp(x)", x=x)
    with mpmath.workdps(30):
        exact = mpmath.log(sum(mpmath.exp(mpmath.mpf(v)) for v in x))
        weights = [mpmath.exp(mpmath.mpf(v) - exact) for v in x]
    close(r.value, float(exact), rtol=1e-15)
    close(r.gradients["x"], [float(w) for w in weights], rtol=1e-13)


def test_softmax_and_log_softmax_along_the_last_axis():
    s = np.exp(X3) / np.sum(np.exp(X3))
    r = run("sum(softmax(x)*c)", x=X3, c=C3)
    close(r.value, s @ C3)
    close(r.gradients["x"], (np.diag(s) - np.outer(s, s)) @ C3)
    r = run("sum(log_softmax(x)*c)", x=X3, c=C3)
    close(r.value, np.log(s) @ C3)
    close(r.gradients["x"], C3 - s * np.sum(C3))
    z = RNG.normal(size=(2, 3))
    rows = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    r = run("sum(softmax(Z)*M)", Z=z, M=B.T)
    close(r.value, np.sum(rows * B.T))
    expected = np.stack([(np.diag(p) - np.outer(p, p)) @ m for p, m in zip(rows, B.T,
                                                                         strict=True)])
    close(r.gradients["Z"], expected)


def test_linear_algebra_closed_forms():
    inv = np.linalg.inv(A)
    r = run("tr(A)", A=A)
    close(r.value, np.trace(A))
    close(r.gradients["A"], np.eye(3))
    r = run("det(A)", A=A)
    close(r.value, np.linalg.det(A))
    close(r.gradients["A"], np.linalg.det(A) * inv.T)
    r = run("logdet(A)", A=A)
    close(r.value, np.log(np.linalg.det(A)))
    close(r.gradients["A"], inv.T)
    g = C3[:, None] * np.ones(3)
    r = run("sum(inv(A)*G)", A=A, G=g)
    close(r.value, np.sum(inv * g))
    close(r.gradients["A"], -inv.T @ g @ inv.T)


def test_linear_algebra_against_sympy_matrices():
    symbols = sp.symbols("a0:9")
    m = sp.Matrix(3, 3, symbols)
    at = dict(zip(symbols, A.ravel(), strict=True))
    for program, expr in [("det(A)", m.det()), ("logdet(A)", sp.log(m.det())),
                          ("tr(inv(A))", m.inv().trace()),
                          ("sum(inv(A)@A@A)", sum(m.inv() @ m @ m))]:
        r = run(program, A=A)
        close(r.value, float(expr.subs(at)), rtol=1e-9)
        expected = [float(sp.diff(expr, s).subs(at)) for s in symbols]
        close(r.gradients["A"].ravel(), expected, rtol=1e-8, atol=1e-10)


def test_indexing_slices_and_constructors():
    w = np.arange(1.0, 7.0).reshape(2, 3)
    r = run("W[1, 0]*W[0, 2] + sum(W[:, 1]) + sum(W[1, 1:])", W=w)
    close(r.value, w[1, 0] * w[0, 2] + w[:, 1].sum() + w[1, 1:].sum())
    close(r.gradients["W"], [[0, 1, w[1, 0]], [w[0, 2], 2, 1]])
    r = run("x[-1] + sum(x[1:3]) + sum(x[:1])", x=X3)
    close(r.gradients["x"], [1, 1, 2])
    r = run("sum((eye(3) + ones(3)*2 + zeros(3))@x)", x=X3)
    close(r.value, np.sum((np.eye(3) + 2) @ X3))
    close(r.gradients["x"], (np.eye(3) + 2).sum(axis=0))


def test_array_of_expressions_stacks_them():
    r = run("v = [x, 2*x, x*x]; sum(v*c)", x=1.5, c=C3)
    close(r.value, 1.5 * C3[0] + 3 * C3[1] + 2.25 * C3[2])
    close(r.gradients["x"], C3[0] + 2 * C3[1] + 3.0 * C3[2])


# --- broadcasting ---------------------------------------------------------------------------

@pytest.mark.parametrize(("xs", "ys"), [((3,), ()), ((2, 3), (3,)), ((2, 1), (1, 3)),
                                        ((2, 3), (2, 1)), ((), (2, 2))])
def test_broadcasting_matches_numpy_and_unbroadcasts_gradients(xs, ys):
    x, y = RNG.normal(size=xs), RNG.normal(size=ys)
    r = run("sum(sin(x*y) + x/ (2 + y**2))", x=x, y=y)
    close(r.value, np.sum(np.sin(x * y) + x / (2 + y**2)))
    full = np.broadcast_shapes(xs, ys)
    gx = np.broadcast_to(y * np.cos(x * y) + 1 / (2 + y**2), full)
    gy = np.broadcast_to(x * np.cos(x * y) - x * 2 * y / (2 + y**2) ** 2, full)
    close(r.gradients["x"], _sum_to(gx, xs))
    close(r.gradients["y"], _sum_to(gy, ys))


def _sum_to(grad, shape):
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


def test_seed_loss_over_a_batch_matches_hand_written_numpy():
    w, x = RNG.normal(size=(5, 4)), RNG.normal(size=4)
    b, t = RNG.normal(size=5), RNG.normal(size=5)
    r = run("mean((W@x + b - t)**2)", W=w, x=x, b=b, t=t)
    residual = w @ x + b - t
    close(r.value, np.mean(residual**2))
    g = 2 * residual / residual.size
    close(r.gradients["W"], np.outer(g, x))
    close(r.gradients["x"], w.T @ g)
    close(r.gradients["b"], g)
    close(r.gradients["t"], -g)


# --- errors: named nodes, shapes, the right kind -----------------------------------------------

@pytest.mark.parametrize(("program", "values", "words"), [
    ("sum(x + y)", {"x": [1, 2, 3], "y": [1, 2]}, ["#2 x + y", "+", "3 and 2"]),
    ("sum(W@x)", {"W": [[1, 2], [3, 4]], "x": [1, 2, 3]}, ["#2 W@x", "@", "2x2 and 3"]),
    ("x[3]", {"x": [1, 2, 3]}, ["out of range", "#1 x[3]", "shape 3"]),
    ("W[0, 0, 0]", {"W": [[1, 2]]}, ["out of range", "shape 1x2"]),
    ("tr(x)", {"x": [1, 2]}, ["tr needs a square matrix", "#1 tr(x)"]),
    ("dot(x, y)", {"x": [1, 2], "y": [1, 2, 3]}, ["dot", "2 and 3"]),
    ("sum(x)", {"x": [[1, 2], [3]]}, ["rectangular"]),
    ("sum(x)", {"x": [True, 2]}, ["the value of x has True at [0], not a number"]),
    ("sum(x)", {"x": ["1", "2"]}, ["the value of x has '1' at [0], not a number"]),
    ("sum(x)*y", {"x": [1, 2], "y": True}, ["not a number"]),
    ("sum(x)", {"x": []}, ["the value of x has no elements"]),
    ("sum(outer(x, x))", {"x": np.ones(10**5)}, ["#1 outer(x, x) would have", "elements"]),
    ("sum(x + y)", {"x": np.ones((10**5, 1)), "y": np.ones(10**5)}, ["would have"]),
    ("sum(x[2:1]) + x[0]", {"x": [1, 2, 3]}, ["#1 x[2:1] is empty", "shape 0"]),
])
def test_shape_errors_name_the_node_the_shapes_and_the_operator(program, values, words):
    with pytest.raises(UsageError) as caught:
        gradcli.evaluate(program, values)
    for word in words:
        assert word in caught.value.message


@pytest.mark.parametrize(("program", "values", "words"), [
    ("det(A)", {"A": [[1, 2], [2, 4]]}, ["singular", "#1 det(A)"]),
    ("sum(inv(A))", {"A": [[1, 2], [2, 4]]}, ["singular", "#1 inv(A)"]),
    ("logdet(A)", {"A": [[-1, 0], [0, 1]]}, ["non-positive determinant", "#1 logdet(A)"]),
    ("sum(log(x))", {"x": [1, -2, 3]}, ["logarithm", "#1 log(x)", "x[1] = -2"]),
    ("sum(sqrt(x))", {"x": [0, 1]}, ["derivative of sqrt", "x[0]"]),
    ("norm(x)", {"x": [0, 0]}, ["norm at 0"]),
    ("sum(exp(x))", {"x": [1, 1000]}, ["overflow", "x[1] = 1000"]),
    # the gradient of A, 4 rows of B's 1e308 summed, overflows in BLAS, which sets no flag;
    # the value, 4 * 1e-300 * 1e308 per element, does not
    ("sum(A@B)", {"A": [[1e-300] * 4] * 3, "B": [[1e308] * 4] * 4},
     ["derivative of matmul with respect to its first operand A is not finite", "A[0, 0]",
      "#2 A@B"]),
    ("sum(inv(A))", {"A": [[1e-300, 0], [0, 1e-300]]}, ["derivative of inv", "A[0, 0]"]),
])
def test_numeric_errors_name_the_node_and_the_element(program, values, words):
    with pytest.raises(NumericError) as caught:
        gradcli.evaluate(program, values)
    for word in words:
        assert word in caught.value.message


# --- the check ------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["central", "complex", "richardson"])
def test_every_method_checks_every_element(method):
    program = ("logdet(A) + sum(softmax(x)*c) + logsumexp(x) + max(x) + norm(A@x) "
               "+ prod(x) + tr(inv(A)) + x[1:3]@x[0:2]")
    r = gradcli.evaluate(program, {"A": A, "x": X3, "c": C3}, check_method=method)
    assert r.check.ok
    assert r.check.gradients["A"].checked == r.check.gradients["A"].size == 9
    assert all(c.method == method for c in r.check.gradients.values())


def test_a_wrong_gradient_is_caught_element_by_element():
    from gradcli.engine.ops import OPS

    row = OPS["sum"]  # a frozen row: swapped in place, and back
    right = row.rules
    object.__setattr__(row, "rules", (lambda xp, g, out, x: g * 2 * np.ones_like(x),))
    try:
        r = gradcli.evaluate("sum(x*x)", {"x": [1.0, 2.0, 3.0]})
    finally:
        object.__setattr__(row, "rules", right)
    assert not r.check.ok
    assert r.check.gradients["x"].failed == 3
    assert gradcli.evaluate("sum(x*x)", {"x": [1.0, 2.0]}).check.ok


def test_large_arrays_are_checked_along_directions_and_on_an_even_deterministic_sample():
    from gradcli.gradcheck import elements
    from gradcli.limits import ARRAY_CHECK_DIRECTIONS, ARRAY_CHECK_MIN

    x = np.linspace(-1, 1, 1000)
    first = gradcli.evaluate("sum(x*x)", {"x": x}).check.gradients["x"]
    again = gradcli.evaluate("sum(x*x)", {"x": x}).check.gradients["x"]
    assert (first.directions, first.checked, first.size) == (
        ARRAY_CHECK_DIRECTIONS, ARRAY_CHECK_MIN, 1000) and first.ok
    assert (again.where, again.abs_error) == (first.where, first.abs_error)
    assert elements.sample(1000, 50)[0] == 0 and elements.sample(1000, 50)[-1] == 999


# --- the API and the scalar path -------------------------------------------------------------

def test_api_takes_nested_lists_and_arrays_and_returns_arrays():
    r = gradcli.evaluate("sum(W@x)", {"W": [[1, 2], [3, 4]], "x": np.array([1.0, 1.0])})
    assert isinstance(r.gradients["W"], np.ndarray) and r.gradients["W"].shape == (2, 2)
    assert isinstance(r.value, float) and r.value == 10.0
    r = gradcli.evaluate("x = [1, 2, 3]; sum(x*y)", {"y": 2.0})
    close(r.gradients["x"], [2, 2, 2])
    assert r.gradients["y"] == 6.0 and type(r.gradients["y"]) is float


def test_scalar_programs_keep_the_scalar_path():
    program = gradcli.parse("(x*W + b - t)**2")
    assert not program.arrays
    r = gradcli.evaluate(program, {"x": 2, "W": 3, "b": 1, "t": 8})
    assert type(r.value) is float and r.gradients == {"x": -6.0, "W": -4.0, "b": -2.0,
                                                       "t": 2.0}
    assert not program.arrays


def test_complex_step_on_element_wise_functions_of_arrays():
    x = np.array([0.3, 1.2, 2.0])
    program = "sum(sin(x)*exp(x) + log(x) + sigmoid(x)*relu(x) + abs(x - 1))"
    r = gradcli.evaluate(program, {"x": x}, check_method="complex")
    assert r.check.ok and r.check.gradients["x"].method == "complex"
    s = 1 / (1 + np.exp(-x))
    expected = (np.cos(x) + np.sin(x)) * np.exp(x) + 1 / x + s * (1 - s) * x + s + np.sign(x - 1)
    close(r.gradients["x"], expected)
    with pytest.raises(NumericError, match="logarithm"):
        gradcli.evaluate("sum(log(x))", {"x": [1.0, -1.0]}, check_method="complex")


@pytest.mark.parametrize("program", [
    "mean((W@x + b - t)**2)", "sum(x@W)*x[0] + dot(x[0:2], x[1:3])", "x@x + norm1(W'@x)",
    "logsumexp(W@x) + max(x) + prod(x) + sum(softmax(W)*W) + mean(log_softmax(x))",
    "logdet(W@W' + eye(3)) + tr(inv(W + 3*eye(3))) + det(W) + sum(outer(x, x)) + norm(x)",
    "v = [x[0], sum(x), x[2]*x[1]]; sum(v*v) + sum(W[:, 1:])",
])
def test_columns_replayed_together_agree_with_one_element_at_a_time(program):
    from gradcli.gradcheck.check import check_node
    from gradcli.gradcheck.columns import ElementReplayer, central_columns, replayable
    from gradcli.gradcheck.directions import Probe

    result = gradcli.evaluate(program, {"W": A, "x": X3, "b": Y3, "t": C3}, check=False)
    nodes = result.program.nodes
    replayer = ElementReplayer(nodes)
    compared = 0
    for node in (n for n in nodes if n.needs_grad):
        replayer.aim(node)
        assert replayable(replayer.downstream)
        flats = list(range(np.size(node.value)))
        together, _ = central_columns(node, replayer.downstream, nodes[-1],
                                      replayer.walk.weights(), flats, 1e-5, 1e-8)
        assert len(together) == len(flats)  # all pass at the first step
        for flat, check in together.items():
            probe = Probe(float(np.ravel(node.value)[flat]), float(np.ravel(node.grad)[flat]),
                           flat)
            alone = check_node(replayer, probe, 1e-5, 1e-8)
            assert alone.step == check.step
            close(check.numeric, alone.numeric, rtol=1e-9, atol=1e-12)
            compared += 1
    assert compared >= 9
