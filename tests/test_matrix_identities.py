# ruff: noqa: N803 -- matrices are written A, X, W, as in the identities
"""Vectorized derivatives of array programs (``gradcli diff``, issue 17): identities of the
Matrix Cookbook (Petersen & Pedersen, sections 2.4-2.5) and of matrixcalculus.org. Each one
is printed in the form a reader recognises (the exact text), that text parses back into
gradcli, and its value at a random point equals the closed form written here with NumPy and
the gradient that ``gradcli eval`` computes numerically."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.language.parser import parse
from gradcli.symbolic.jacobians import gradient_texts

V, M, N = (3,), (3, 3), (3, 2)
inv = np.linalg.inv
sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731

IDENTITIES = [
    # (program, shapes, wrt, printed, closed form of the values)
    ("a'@x", dict(a=V, x=V), "x", "a", lambda a, x: a),
    ("x'@a", dict(a=V, x=V), "x", "a", lambda a, x: a),
    ("x'@x", dict(x=V), "x", "2*x", lambda x: 2 * x),
    ("x'@A@x", dict(A=M, x=V), "x", "A'@x + A@x", lambda A, x: (A + A.T) @ x),
    ("a'@X@b", dict(a=V, X=N, b=(2,)), "X", "outer(a, b)", lambda a, X, b: np.outer(a, b)),
    ("a'@X'@b", dict(a=(2,), X=N, b=V), "X", "outer(b, a)", lambda a, X, b: np.outer(b, a)),
    ("tr(X)", dict(X=M), "X", "eye(3)", lambda X: np.eye(3)),
    ("tr(A@X)", dict(A=M, X=M), "X", "A'", lambda A, X: A.T),
    ("tr(X@A)", dict(A=M, X=M), "X", "A'", lambda A, X: A.T),
    ("tr(X'@A)", dict(A=M, X=M), "X", "A", lambda A, X: A),
    ("tr(A@X')", dict(A=M, X=M), "X", "A", lambda A, X: A),
    ("tr(X'@A@X)", dict(A=M, X=N), "X", "A'@X + A@X", lambda A, X: (A + A.T) @ X),
    ("tr(X@A@X')", dict(A=(2, 2), X=N), "X", "X@A + X@A'", lambda A, X: X @ (A + A.T)),
    ("tr(X'@X)", dict(X=N), "X", "2*X", lambda X: 2 * X),
    ("tr(A@X@B)", dict(A=(2, 3), X=N, B=(2, 2)), "X", "A'@B'", lambda A, X, B: A.T @ B.T),
    ("logdet(X)", dict(X=M), "X", "inv(X)'", lambda X: inv(X).T),
    ("det(X)", dict(X=M), "X", "det(X)*inv(X)'", lambda X: np.linalg.det(X) * inv(X).T),
    ("a'@inv(X)@b", dict(a=V, X=M, b=V), "X", "t1 = inv(X)'; -(t1@outer(a, b)@t1)",
     lambda a, X, b: -inv(X).T @ np.outer(a, b) @ inv(X).T),
    ("sum(inv(X))", dict(X=M), "X", "t1 = ones(3); t2 = inv(X)'; -(t2@outer(t1, t1)@t2)",
     lambda X: -inv(X).T @ np.ones((3, 3)) @ inv(X).T),
    ("norm(x)", dict(x=V), "x", "x/norm(x)", lambda x: x / np.linalg.norm(x)),
    ("norm(x)**2", dict(x=V), "x", "2*x", lambda x: 2 * x),
    ("norm(X)**2", dict(X=N), "X", "2*X", lambda X: 2 * X),
    ("norm1(x)", dict(x=V), "x", "sign(x)", lambda x: np.sign(x)),
    ("sum((A@x - b)**2)", dict(A=N, x=(2,), b=V), "x", "A'@(2*(A@x - b))",
     lambda A, x, b: 2 * A.T @ (A @ x - b)),
    ("sum((W@x + b - t)**2)", dict(W=N, x=(2,), b=V, t=V), "W", "outer(2*(W@x + b - t), x)",
     lambda W, x, b, t: 2 * np.outer(W @ x + b - t, x)),
    ("sum(exp(x))", dict(x=V), "x", "exp(x)", lambda x: np.exp(x)),
    ("logsumexp(x)", dict(x=V), "x", "softmax(x)", lambda x: np.exp(x) / np.exp(x).sum()),
    ("sum(log(x))", dict(x=V), "x", "1/x", lambda x: 1 / x),
    ("(a'@x)*(b'@x)", dict(a=V, b=V, x=V), "x", "a@x*b + b@x*a",
     lambda a, b, x: a * (b @ x) + b * (a @ x)),
    ("sum(A*X)", dict(A=N, X=N), "X", "A", lambda A, X: A),
    ("dot(x, y)", dict(x=V, y=V), "x", "y", lambda x, y: y),
    ("x'@x/2", dict(x=V), "x", "x", lambda x: x),
    ("sum(sigmoid(x))", dict(x=V), "x", "t1 = sigmoid(x); t1*(1 - t1)",
     lambda x: sig(x) * (1 - sig(x))),
]


def _point(shapes: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    point = {name: rng.uniform(0.5, 1.5, size=shape) for name, shape in shapes.items()}
    for name, value in point.items():  # square matrices well away from singular
        if value.ndim == 2 and value.shape[0] == value.shape[1]:
            point[name] = value + 2 * np.eye(len(value))
    return point


@pytest.mark.parametrize(("program", "shapes", "wrt", "printed", "closed"), IDENTITIES,
                         ids=[case[0] for case in IDENTITIES])
def test_identity_is_printed_recognisably_and_is_right(program, shapes, wrt, printed, closed):
    text = gradient_texts(parse(program), shapes, [wrt], 10_000)[wrt]
    assert text == printed
    for seed in (1, 2):
        point = _point(shapes, seed)
        names = closed.__code__.co_varnames[:closed.__code__.co_argcount]
        expected = closed(*(point[name] for name in names))
        used = {name: point[name] for name in parse(text).variables}
        reparsed = gradcli.evaluate(text, used, check=False)
        value = reparsed.value  # a gradient of a vector or a matrix: its Jacobian result
        np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12)
        numeric = gradcli.evaluate(program, point, check=False).gradients[wrt]
        np.testing.assert_allclose(numeric, expected, rtol=1e-10, atol=1e-12)


def test_there_are_at_least_25_identities():
    assert len(IDENTITIES) >= 25


def test_latex_uses_matrix_notation():
    latex = gradient_texts(parse("sum((W@x + b - t)**2)"), dict(W=N, x=(2,), b=V, t=V),
                           None, 10_000, "latex")
    assert latex["W"] == r"\left(2 \cdot \left(W x + b - t\right)\right) \otimes x"
    assert latex["x"] == r"W^\top \left(2 \cdot \left(W x + b - t\right)\right)"
    more = gradient_texts(parse("tr(X'@A@X) + logdet(A) + sum(A*X@X')"),
                          dict(X=M, A=M), None, 10_000, "latex")
    assert r"\odot" in more["X"] and r"^\top" in more["X"]
    assert r"\left(A^{-1}\right)^\top" in more["A"]


def test_the_command_line_takes_shapes_and_given_values():
    runner = CliRunner()
    done = runner.invoke(cli, ["diff", "sum((W@x + b - t)**2)", "--shape", "W=3x2",
                               "--shape", "x=2", "--shape", "b=3", "--shape", "t=3"])
    assert done.exit_code == 0, done.output
    assert done.stdout.split("\n")[0] == "d/dW = outer(2*(W@x + b - t), x)"
    record = json.loads(runner.invoke(cli, ["diff", "x'@A@x", "--x", "[1, 2]", "--A",
                                            "[[1, 2], [3, 4]]", "--json"]).stdout)
    assert record["derivatives"] == {"x": "A'@x + A@x", "A": "outer(x, x)"}
    assert record["shapes"] == {"x": [2], "A": [2, 2]}


@pytest.mark.parametrize(("args", "words"), [
    (["diff", "sum(W)"], "no shape for W"),
    (["diff", "sum(W)", "--shape", "W=3y2"], "cannot read the shape"),
    (["diff", "sum(W)", "--shape", "V=3"], "no shape for W"),
    (["diff", "W@x", "--shape", "W=3x2", "--shape", "x=2", "--order", "2"], "order 1"),
    (["diff", "sum(W@x)", "--shape", "W=3x2", "--shape", "x=3"], "shape mismatch"),
    (["diff", "sum(W)", "--shape", "W=2", "--order", "3"], "order 1"),
])
def test_diff_of_arrays_mistakes_are_usage_errors(args, words):
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 2, done.output
    assert words in done.output


def test_format_python_is_a_numpy_function_that_agrees_with_eval(tmp_path, monkeypatch):
    program = "sum((W@x + b - t)**2)/2 + logdet(A) + logsumexp(x) - sum(sigmoid(-b)**2)"
    shapes = ["--shape", "W=3x2", "--shape", "x=2", "--shape", "b=3", "--shape", "t=3",
              "--shape", "A=2x2"]
    done = CliRunner().invoke(cli, ["diff", program, *shapes, "--format", "python"])
    assert done.exit_code == 0, done.output
    (tmp_path / "generated_gradient.py").write_text(done.stdout)
    monkeypatch.syspath_prepend(str(tmp_path))
    import generated_gradient

    point = _point(dict(W=N, x=(2,), b=V, t=V, A=(2, 2)), 3)
    value, gradients = generated_gradient.f(**point)
    result = gradcli.evaluate(program, point, check=False)
    assert value == pytest.approx(result.value, rel=1e-12)
    assert set(gradients) == set(result.gradients)
    for name, gradient in gradients.items():
        np.testing.assert_allclose(gradient, result.gradients[name], rtol=1e-10, atol=1e-12)
