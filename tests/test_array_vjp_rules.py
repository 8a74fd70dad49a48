# ruff: noqa: N806 -- matrices are written X, T, H, as in the formulas
"""One VJP rule per array op, run on NumPy arrays and on graph nodes (issue 17).

The array rows' rules (engine/ops/linear_algebra.py) give the numeric gradients (``NUMPY``)
and, run on graph nodes (``GraphArrays``), the gradients that ``gradcli diff`` prints and that
``--hessian`` and ``--hvp`` differentiate again. These tests hold both against answers that do
not come from those rules: Hessians written by hand here (softmax, log_softmax, logsumexp, prod,
max/min, indexing), central differences, symmetry, and the printed gradients parsed back and
evaluated against eval's numeric gradient at random points."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.engine.ops import NUMPY, ROWS
from gradcli.language.parser import parse
from gradcli.symbolic.jacobians import gradient_texts

RNG = np.random.default_rng(1717)


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def hessian(program: str, values: dict) -> dict:
    result = gradcli.evaluate(program, values, order=2)
    assert result.hessian.check.ok, result.hessian.check
    return result.hessian.matrix


# --- Hessians against closed forms written by hand ------------------------------------------

def test_softmax_dot_t_hessian_is_the_hand_written_form():
    x, t = RNG.normal(size=5), RNG.normal(size=5)
    blocks = hessian("sum(softmax(x)*t)", {"x": x, "t": t})
    s = softmax(x)
    c = s @ t
    # g_i = s_i (t_i - c); H_ij = s_i (δ_ij - s_j)(t_i - c) - s_i s_j (t_j - c)
    expected = (np.diag(s) - np.outer(s, s)) * (t - c)[:, None] - np.outer(s, s * (t - c))
    np.testing.assert_allclose(blocks["x"]["x"], expected, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(blocks["x"]["t"], np.diag(s) - np.outer(s, s), atol=1e-14)
    np.testing.assert_array_equal(blocks["t"]["t"], np.zeros((5, 5)))


def test_log_softmax_hessian_is_minus_sum_t_times_diag_s_minus_s_s():
    x, t = RNG.normal(size=4), RNG.uniform(0, 1, size=4)
    blocks = hessian("sum(log_softmax(x)*t)", {"x": x, "t": t})
    s = softmax(x)
    expected = -t.sum() * (np.diag(s) - np.outer(s, s))
    np.testing.assert_allclose(blocks["x"]["x"], expected, rtol=1e-10, atol=1e-14)


def test_softmax_of_a_matrix_works_row_by_row():
    X, T = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3))
    blocks = hessian("sum(softmax(X)*T)", {"X": X, "T": T})
    expected = np.zeros((2, 3, 2, 3))  # rows do not mix: one block per row
    for row in range(2):
        s, t = softmax(X[row]), T[row]
        c = s @ t
        expected[row, :, row, :] = ((np.diag(s) - np.outer(s, s)) * (t - c)[:, None]
                                    - np.outer(s, s * (t - c)))
    np.testing.assert_allclose(blocks["X"]["X"], expected, rtol=1e-10, atol=1e-14)


def test_logsumexp_of_a_matrix_is_over_every_element():
    X = RNG.normal(size=(2, 3))
    blocks = hessian("logsumexp(X)", {"X": X})
    s = softmax(X.ravel())
    expected = (np.diag(s) - np.outer(s, s)).reshape(2, 3, 2, 3)
    np.testing.assert_allclose(blocks["X"]["X"], expected, atol=1e-14)


def _prod_hessian(x: np.ndarray) -> np.ndarray:
    """H_ij = the product of every element but x_i and x_j; H_ii = 0."""
    n = len(x)
    return np.array([[0.0 if i == j else np.prod(np.delete(x, [i, j])) for j in range(n)]
                     for i in range(n)])


@pytest.mark.parametrize("x", [[1.5, -2.0, 0.5, 3.0], [0.0, 2.0, 3.0, 4.0],
                               [2.0, 0.0, -3.0, 0.0], [0.0, 0.0, 0.0, 4.0]],
                         ids=["no zero", "one zero", "two zeros", "three zeros"])
def test_prod_hessian_is_exact_at_zero_elements_too(x):
    x = np.array(x)
    blocks = hessian("prod(x)", {"x": x})
    np.testing.assert_allclose(blocks["x"]["x"], _prod_hessian(x), rtol=1e-14, atol=0)
    # and through a chain rule: d²/dx² exp(prod(x)) = e^p (∇p ∇p' + H_p)
    grad = np.array([np.prod(np.delete(x, i)) for i in range(len(x))])
    chained = hessian("exp(prod(x))", {"x": x})["x"]["x"]
    expected = np.exp(np.prod(x)) * (np.outer(grad, grad) + _prod_hessian(x))
    np.testing.assert_allclose(chained, expected, rtol=1e-13, atol=1e-300)


def test_max_and_min_with_a_unique_extreme():
    x = np.array([0.5, 3.0, -1.0, 2.0])
    blocks = hessian("max(x)*sum(x) + min(x)**2", {"x": x})
    top, low = np.eye(4)[1], np.eye(4)[2]
    # d/dx = e_top sum(x) + max(x) 1 + 2 min(x) e_low
    expected = np.outer(top, np.ones(4)) + np.outer(np.ones(4), top) + 2 * np.outer(low, low)
    np.testing.assert_allclose(blocks["x"]["x"], expected, rtol=1e-14, atol=0)


def test_max_at_a_tie_shares_as_the_numeric_rule_does():
    result = gradcli.evaluate("max(x)**2", {"x": [3.0, 1.0, 3.0]}, order=2)
    np.testing.assert_allclose(result.gradients["x"], [3.0, 0.0, 3.0])
    # the graph form gives the tie rule's gradient, 2 max(x) (e_0 + e_2)/2; its derivative
    # treats the tied set as fixed: 2 * (1/2)(e_0 + e_2) (1/2)(e_0 + e_2)'
    share = np.array([0.5, 0.0, 0.5])
    np.testing.assert_allclose(result.hessian.matrix["x"]["x"], 2 * np.outer(share, share))


def test_indexing_and_literals_have_second_derivatives():
    x = np.array([1.5, 2.0, -0.5])
    blocks = hessian("sum([x[0]*x[1], x[2]]**2)", {"x": x})  # x0² x1² + x2²
    expected = np.array([[2 * x[1] ** 2, 4 * x[0] * x[1], 0], [4 * x[0] * x[1], 2 * x[0] ** 2, 0],
                         [0, 0, 2]])
    np.testing.assert_allclose(blocks["x"]["x"], expected, rtol=1e-14)
    X = RNG.normal(size=(2, 3))
    blocks = hessian("sum(X[1, 0:2]**3) + X[0, 2]*X[1, 1]", {"X": X})
    expected = np.zeros((2, 3, 2, 3))
    expected[1, 0, 1, 0], expected[1, 1, 1, 1] = 6 * X[1, 0], 6 * X[1, 1]
    expected[0, 2, 1, 1] = expected[1, 1, 0, 2] = 1.0
    np.testing.assert_allclose(blocks["X"]["X"], expected, rtol=1e-13, atol=1e-15)


# --- properties: symmetry, H·v, finite differences -------------------------------------------

PROGRAMS = [
    "sum(softmax(W@x)*t) + logsumexp(x*t[1:3])",
    "sum(log_softmax(W@x)*t)",
    "max(W@x)*min(x) + prod(x)**2",
    "prod(W[0]) + sum(W[:, 1]*t[0:3]) + [x[1], t[0]]@x",
    "norm(W@x)*norm1(t) + mean(W)**2",
]


def _point(program: str) -> dict:
    shapes = {"x": (2,), "t": (3,), "W": (3, 2)}
    return {name: RNG.uniform(-1.5, 1.5, size=shape) for name, shape in shapes.items()
            if name in parse(program).variables}


@pytest.mark.parametrize("program", PROGRAMS)
def test_hessians_are_symmetric_checked_and_match_hvp(program):
    values = _point(program)
    result = gradcli.evaluate(program, values, order=2)
    assert result.hessian.check.ok, result.hessian.check  # central differences of the gradient
    blocks = result.hessian.matrix
    sizes = {name: np.size(value) for name, value in values.items()}
    full = np.block([[np.reshape(blocks[a][b], (sizes[a], sizes[b])) for b in values]
                     for a in values])
    np.testing.assert_allclose(full, full.T, rtol=1e-10, atol=1e-12)
    v = {name: RNG.normal(size=np.shape(value)) for name, value in values.items()}
    product = gradcli.evaluate(program, values, hvp=v)
    flat = full @ np.concatenate([np.ravel(v[name]) for name in values])
    found = np.concatenate([np.ravel(product.hvp.product[name]) for name in values])
    np.testing.assert_allclose(found, flat, rtol=1e-10, atol=1e-12)
    assert product.hvp.check.ok


# --- gradcli diff: the printed gradient, parsed back, is eval's gradient ---------------------

DIFFS = [
    ("sum(softmax(x)*t)", {"x": (4,), "t": (4,)}, "d/dx: t1 = softmax(x); t1*(t - sum(t*t1))"),
    ("sum(log_softmax(x)*t)", {"x": (4,), "t": (4,)}, "d/dx = t - softmax(x)*sum(t)"),
    ("logsumexp(x)", {"x": (4,)}, "d/dx = softmax(x)"),
    ("max(x)", {"x": (4,)}, "d/dx: t1 = x == max(x); t1/sum(t1)"),
    ("min(x)", {"x": (4,)}, "d/dx: t1 = x == min(x); t1/sum(t1)"),
    ("prod(x)", {"x": (4,)}, "d/dx = prod(x)/x"),
    ("sum(softmax(X)*T)", {"X": (2, 3), "T": (2, 3)}, None),
    ("sum(log_softmax(X)*T)", {"X": (2, 3), "T": (2, 3)}, None),
    ("logsumexp(X)", {"X": (2, 3)}, "d/dX = exp(X - logsumexp(X))"),
    ("x[0]*x[1:3]@t[0:2]", {"x": (3,), "t": (3,)}, None),
    ("sum(X[1]) + X[0, 2]*sum(X[:, 0:2]**2)", {"X": (2, 3)}, None),
    ("sum([x[0], t[1]]*t[0:2]) + prod(t)*max(x)", {"x": (3,), "t": (3,)}, None),
    ("sum(x*[1, 2, 3])", {"x": (3,)}, "d/dx = [1, 2, 3]"),  # was a traceback
]


@pytest.mark.parametrize(("program", "shapes", "printed"), DIFFS, ids=[d[0] for d in DIFFS])
def test_printed_gradients_parse_back_to_evals_gradient(program, shapes, printed):
    texts = gradient_texts(parse(program), shapes, None, 10_000)
    first = next(iter(shapes))
    if printed is not None:
        done = CliRunner().invoke(cli, ["diff", program, "--wrt", first, *[
            arg for name, shape in shapes.items()
            for arg in ("--shape", f"{name}={'x'.join(map(str, shape))}")]])
        assert done.stdout.strip() == printed, done.output
    for seed in range(3):
        rng = np.random.default_rng(seed)
        point = {name: rng.uniform(-2, 2, size=shape) for name, shape in shapes.items()}
        numeric = gradcli.evaluate(program, point, check=False).gradients
        for name, text in texts.items():
            used = {n: point[n] for n in parse(text).variables}
            value = gradcli.evaluate(text, used, check=False).value if used else (
                gradcli.evaluate(text, {}, check=False).value)
            np.testing.assert_allclose(np.broadcast_to(value, shapes[name]), numeric[name],
                                       rtol=1e-10, atol=1e-12, err_msg=f"d/d{name} = {text}")


# --- the two namespaces agree rule by rule ----------------------------------------------------

def test_every_row_rule_gives_the_same_numbers_on_arrays_and_on_nodes():
    """Each row's rule on NUMPY and on graph nodes (through gradcli diff of sum(op(x)*c)),
    at one random point per op: the numbers agree, so one rule really serves both."""
    cases = {"matmul": "sum((A@B)*C)", "dot": "dot(x, y)", "outer": "sum(outer(x, y)*C)",
             "transpose": "sum(A'*C)", "sum": "sum(A)*sum(x)", "mean": "mean(A)*mean(x)",
             "prod": "prod(x)", "max": "max(x)", "min": "min(x)", "norm": "norm(A)",
             "norm1": "norm1(x)", "logsumexp": "logsumexp(A)", "softmax": "sum(softmax(A)*C)",
             "log_softmax": "sum(log_softmax(A)*C)", "tr": "tr(A)", "det": "det(A)",
             "logdet": "logdet(A)", "inv": "sum(inv(A)*C)"}
    assert set(cases) | {"zeros", "ones", "eye"} == {op.name for op in ROWS if op.is_array}
    shapes = {"A": (3, 3), "B": (3, 3), "C": (3, 3), "x": (3,), "y": (3,)}
    for name, program in cases.items():
        parsed = parse(program)
        used = {n: shapes[n] for n in parsed.variables}
        texts = gradient_texts(parsed, used, None, 10_000)
        rng = np.random.default_rng(len(name))
        point = {n: rng.uniform(0.5, 1.5, size=s) + (3 * np.eye(3) if len(s) == 2 else 0)
                 for n, s in used.items()}
        numeric = gradcli.evaluate(program, point, check=False).gradients
        for variable, text in texts.items():
            value = gradcli.evaluate(text, {n: point[n] for n in parse(text).variables},
                                     check=False).value
            np.testing.assert_allclose(np.broadcast_to(value, used[variable]), numeric[variable],
                                       rtol=1e-11, atol=1e-13, err_msg=f"{name}: {text}")


def test_the_numeric_namespace_is_numpy():
    x = np.array([2.0, 0.0, 3.0, -1.0])
    np.testing.assert_array_equal(NUMPY.others_product(x, np.prod(x)),
                                  [np.prod(np.delete(x, i)) for i in range(4)])
    X = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(NUMPY.sum_last(X), X.sum(axis=1, keepdims=True))
    assert NUMPY.sum_last(x) == x.sum()
    grad = NUMPY.scatter(np.array([1.0, 2.0]), (1, (0, 2)), X)
    np.testing.assert_array_equal(grad, [[0, 0, 0], [1, 2, 0]])


def test_what_the_language_cannot_write_is_a_usage_error():
    done = CliRunner().invoke(cli, ["diff", "sum(outer(X, x))", "--shape", "X=2x2",
                                    "--shape", "x=2"])
    assert done.exit_code == 2, done.output
    assert "outer of operands that are not vectors" in done.output
    assert "Traceback" not in done.output
    numeric = gradcli.evaluate("sum(outer(X, x))", {"X": [[1, 2], [3, 4]], "x": [1, 2]})
    assert numeric.check.ok  # the numeric gradient is still there
    np.testing.assert_allclose(numeric.gradients["X"], [[3, 3], [3, 3]])


def test_hessians_of_prod_at_every_zero_pattern_of_three():
    """Every pattern of zeros among three elements (and the values 2, -3 elsewhere)."""
    for pattern in itertools.product([0.0, 1.0], repeat=3):
        x = np.array(pattern) * np.array([2.0, -3.0, 0.5])
        blocks = hessian("prod(x)", {"x": x})
        np.testing.assert_array_equal(blocks["x"]["x"], _prod_hessian(x))
