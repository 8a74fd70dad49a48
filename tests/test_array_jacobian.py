# ruff: noqa: N803 -- matrices are written W, A, X, as in the forms they stand for
"""``gradcli diff`` of array outputs, several outputs, and ``--order 2`` (issue 17): every
printed block, parsed back and evaluated at random points, equals the Jacobian (or Hessian)
that ``gradcli eval`` computes numerically there (reverse mode on the op tables' VJPs), and the
forms a reader knows are printed as such (checked against NumPy closed forms)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.language.parser import parse
from gradcli.limits import MAX_JACOBIAN_ROWS
from gradcli.symbolic.jacobians import jacobian_nodes

V, M = (3,), (3, 3)

JACOBIANS = [  # program, shapes
    ("softmax(x)", dict(x=V)),
    ("log_softmax(x)", dict(x=V)),
    ("sin(x)", dict(x=V)),
    ("exp(x)*x + 2", dict(x=V)),
    ("W@x", dict(W=(3, 2), x=(2,))),
    ("x@W", dict(W=(2, 3), x=(2,))),
    ("2*W@x + b - 3*x2", dict(W=(3, 2), x=(2,), b=V, x2=V)),
    ("tanh(W@x + b)", dict(W=(3, 2), x=(2,), b=V)),
    ("x*sum(x)", dict(x=V)),
    ("x/norm(x)", dict(x=V)),
    ("y*x + x**2", dict(x=V, y=())),
    ("x*ones(3)", dict(x=())),
    ("[x[0]*x[1], x[2], logsumexp(x)]", dict(x=V)),
    ("[x[0]*x[1], y, x[1]]", dict(x=(2,), y=())),
    ("log(W@x - 0.3)", dict(W=(2, 2), x=(2,))),
    ("outer(x, y)", dict(x=(2,), y=(2,))),
    ("A@X", dict(A=(2, 2), X=(2, 2))),
    ("f = W@x; g = sum(x*x); h = x[0]*y; f, g, h", dict(W=(2, 2), x=(2,), y=())),
]


def _point(shapes: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {name: (rng.uniform(0.5, 1.5, size=shape) if shape else float(rng.uniform(0.5, 1.5)))
            for name, shape in shapes.items()}


def _value(text: str, point: dict) -> np.ndarray:
    """The printed expression parsed back and evaluated (``gradcli.evaluate``)."""
    used = {name: point[name] for name in parse(text).variables}
    result = gradcli.evaluate(text, used, check=False)
    return np.asarray(result.value, dtype=float)


@pytest.mark.parametrize(("program", "shapes"), JACOBIANS, ids=[c[0] for c in JACOBIANS])
def test_every_printed_jacobian_block_equals_evals_jacobian(program, shapes):
    blocks = jacobian_nodes(parse(program), shapes, None, 100_000).printed("text")
    for seed in (3, 4):
        point = _point(shapes, seed)
        numeric = gradcli.evaluate(program, point, check=False).jacobian
        for label, row in blocks.items():
            for name, text in row.items():
                expected = np.asarray(numeric[label][name], dtype=float)
                got = np.broadcast_to(_value(text, point), expected.shape)  # "0": all zeros
                np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12,
                                           err_msg=f"d({label})/d{name} = {text}")


HESSIANS = [
    ("sum(x**3)", dict(x=V)),
    ("x'@A@x", dict(x=V, A=M)),
    ("logsumexp(x)", dict(x=V)),
    ("sum((W@x - t)**2)", dict(W=(2, 2), x=(2,), t=(2,))),
    ("norm(x)*y", dict(x=V, y=())),
    ("sum(log(x))", dict(x=V)),
]


@pytest.mark.parametrize(("program", "shapes"), HESSIANS, ids=[c[0] for c in HESSIANS])
def test_every_printed_hessian_block_equals_evals_hessian(program, shapes):
    blocks = jacobian_nodes(parse(program), shapes, None, 100_000, order=2).printed("text")
    point = _point(shapes, 5)
    numeric = gradcli.evaluate(program, point, check=False, order=2).hessian.matrix
    for a, row in blocks.items():
        for b, text in row.items():
            expected = np.asarray(numeric[a][b], dtype=float)
            got = np.broadcast_to(_value(text, point), expected.shape)
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12,
                                       err_msg=f"d2/d{a} d{b} = {text}")


def _softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


KNOWN_FORMS = [  # program, shapes, output, input, printed, closed form (NumPy)
    ("softmax(x)", dict(x=V), "softmax(x)", "x", "t1 = softmax(x); eye(3)*t1 - outer(t1, t1)",
     lambda x: np.diag(_softmax(x)) - np.outer(_softmax(x), _softmax(x))),
    ("sin(x)", dict(x=V), "sin(x)", "x", "eye(3)*cos(x)", lambda x: np.diag(np.cos(x))),
    ("W@x", dict(W=(3, 2), x=(2,)), "W@x", "x", "W", lambda W, x: W),
    ("x@W", dict(W=(2, 3), x=(2,)), "x@W", "x", "W'", lambda W, x: W.T),
    ("2*W@x + b", dict(W=(3, 2), x=(2,), b=V), "2*W@x + b", "b", "eye(3)",
     lambda W, x, b: np.eye(3)),
    ("log_softmax(x)", dict(x=V), "log_softmax(x)", "x", "eye(3) - outer(ones(3), softmax(x))",
     lambda x: np.eye(3) - np.outer(np.ones(3), _softmax(x))),
]


@pytest.mark.parametrize(("program", "shapes", "label", "wrt", "printed", "closed"),
                         KNOWN_FORMS, ids=[c[0] for c in KNOWN_FORMS])
def test_known_jacobians_are_printed_vectorized(program, shapes, label, wrt, printed, closed):
    text = jacobian_nodes(parse(program), shapes, [wrt], 100_000).printed("text")[label][wrt]
    assert text == printed
    point = _point(shapes, 6)
    names = closed.__code__.co_varnames[:closed.__code__.co_argcount]
    np.testing.assert_allclose(_value(text, point), closed(*(point[n] for n in names)),
                               rtol=1e-12, atol=1e-14)


def test_the_hessian_of_a_cubic_and_a_quadratic_form():
    cubic = jacobian_nodes(parse("sum(x**3)"), dict(x=V), None, 10_000, order=2)
    assert cubic.printed("text") == {"x": {"x": "6*eye(3)*x"}}
    quadratic = jacobian_nodes(parse("x'@A@x"), dict(x=V, A=M), ["x"], 10_000, order=2)
    assert quadratic.printed("text") == {"x": {"x": "A' + A"}}


def test_the_command_line_prints_jacobians_and_hessians():
    runner = CliRunner()
    done = runner.invoke(cli, ["diff", "softmax(x)", "--shape", "x=3"])
    assert done.exit_code == 0, done.output
    assert done.stdout == "d(softmax(x))/dx: t1 = softmax(x); eye(3)*t1 - outer(t1, t1)\n"
    done = runner.invoke(cli, ["diff", "f = W@x; g = sum(x*x); f, g", "--W", "[[1, 2], [3, 4]]",
                               "--shape", "x=2", "--wrt", "x"])
    assert done.exit_code == 0, done.output
    assert done.stdout == "df/dx = W\ndg/dx = 2*x\n"
    done = runner.invoke(cli, ["diff", "sum(x**3)", "--shape", "x=3", "--order", "2"])
    assert (done.exit_code, done.stdout) == (0, "d2/dx dx = 6*eye(3)*x\n")
    record = json.loads(runner.invoke(cli, ["diff", "W@x", "--shape", "W=3x2", "--shape", "x=2",
                                            "--wrt", "x", "--json"]).stdout)
    assert record["jacobian"] == {"W@x": {"x": "W"}}
    latex = runner.invoke(cli, ["diff", "sin(x)", "--shape", "x=3", "--format", "latex"])
    assert latex.stdout == "\\frac{\\partial (sin(x))}{\\partial x} = I_{3} \\odot " \
                           "\\cos\\left(x\\right)\n"


def test_scalar_programs_with_several_outputs_print_as_before():
    done = CliRunner().invoke(cli, ["diff", "f = x*y; g = x + sin(y); f, g"])
    assert done.stdout == "df/dx = y\ndf/dy = x\ndg/dx = 1\ndg/dy = cos(y)\n"


@pytest.mark.parametrize(("args", "words"), [
    (["diff", "W@x", "--shape", "W=3x2", "--shape", "x=2", "--order", "2"], "order 1"),
    (["diff", "sum(x**3)", "--shape", "x=3", "--order", "3"], "order 1"),
    (["diff", "x'", "--shape", f"x={MAX_JACOBIAN_ROWS + 1}x1"], "row by row"),
])
def test_what_cannot_be_printed_is_a_usage_error(args, words):
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 2, done.output
    assert words in done.output
    assert "Traceback" not in done.output


def _generated(tmp_path, monkeypatch, module: str, args: list[str]):
    done = CliRunner().invoke(cli, ["diff", *args, "--format", "python"])
    assert done.exit_code == 0, done.output
    (tmp_path / f"{module}.py").write_text(done.stdout)
    monkeypatch.syspath_prepend(str(tmp_path))
    return __import__(module)


def test_format_python_of_a_jacobian_runs_and_agrees_with_eval(tmp_path, monkeypatch):
    program = "f = tanh(W@x); g = sum(x*x)*y; h = softmax(x); f, g, h"
    shapes = dict(W=(3, 2), x=(2,), y=())
    generated = _generated(tmp_path, monkeypatch, "generated_jacobian", [
        program, "--shape", "W=3x2", "--shape", "x=2", "--shape", "y=scalar"])
    point = _point(shapes, 8)
    values, blocks = generated.f(**point)
    result = gradcli.evaluate(program, point, check=False)
    assert set(values) == set(result.values) == set(blocks)
    for label, row in blocks.items():
        np.testing.assert_allclose(values[label], result.values[label], rtol=1e-12)
        for name, block in row.items():
            np.testing.assert_allclose(np.broadcast_to(block, np.shape(
                result.jacobian[label][name])), result.jacobian[label][name], rtol=1e-10,
                atol=1e-12, err_msg=f"d{label}/d{name}")


def test_format_python_of_a_hessian_runs_and_agrees_with_eval(tmp_path, monkeypatch):
    program = "sum((W@x - t)**2)/2 + sum(exp(x))*s"
    shapes = dict(W=(3, 2), x=(2,), t=V, s=())
    generated = _generated(tmp_path, monkeypatch, "generated_hessian", [
        program, "--order", "2", "--shape", "W=3x2", "--shape", "x=2", "--shape", "t=3",
        "--shape", "s=scalar"])
    point = _point(shapes, 9)
    value, blocks = generated.f(**point)  # the value bare, as the gradient's export returns it
    result = gradcli.evaluate(program, point, check=False, order=2)
    assert value == pytest.approx(result.value, rel=1e-12)
    for a, row in result.hessian.matrix.items():
        for b, expected in row.items():
            np.testing.assert_allclose(np.broadcast_to(blocks[a][b], np.shape(expected)),
                                       expected, rtol=1e-10, atol=1e-12, err_msg=f"{a},{b}")


def test_like_terms_with_array_literals_print_instead_of_a_traceback():
    done = CliRunner().invoke(cli, ["diff", "sum([1, 2, 3]*x + [1, 1, 1]*x)", "--shape", "x=3"])
    assert done.exit_code == 0, done.output
    text = done.stdout.split(" = ", 1)[1].strip()
    np.testing.assert_allclose(_value(text, {}), [2.0, 3.0, 4.0])


def test_a_negated_array_coefficient_is_no_traceback():
    """Found in review: -([1, 2]*x) made the coefficient -[1, 2], an array the builder refused."""
    done = CliRunner().invoke(cli, ["diff", "sum(-([1,2]*x))", "--shape", "x=2"])
    assert done.exit_code == 0, done.output
    assert done.stdout == "d/dx = [-1, -2]\n"
