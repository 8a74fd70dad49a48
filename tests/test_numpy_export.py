"""``gradcli diff --format python`` of array programs runs for every row of both op tables.

Each element-wise row is applied to vectors made of its own test points (tests/test_ops.py),
each array row to arrays where it is defined; the export is written to a file, imported and
called, and its value and gradient compared with ``eval``'s (an independent engine). The test
enumerates the tables, so a new row cannot skip it.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from click.testing import CliRunner
from test_ops import SPELLING, _cases

import gradcli
from gradcli.cli import cli
from gradcli.engine.ops import OPS, ROWS

PARAMETERS = "xyz"


def _program(name: str) -> str:
    op = OPS[name]
    names = PARAMETERS[:op.arity]
    written = SPELLING.get(name, f"{name}({', '.join(names)})")
    return f"sum({written})"


def _point(name: str) -> dict[str, list[float]]:
    cases = _cases(name)
    return {PARAMETERS[i]: [float(case[i]) for case in cases] for i in range(OPS[name].arity)}


def _run_export(tmp_path, args: list[str]):
    done = CliRunner().invoke(cli, ["diff", *args, "--format", "python"])
    assert done.exit_code == 0, done.output
    assert "Traceback" not in done.output
    path = tmp_path / "exported.py"
    path.write_text(done.stdout)
    spec = importlib.util.spec_from_file_location("exported", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, done.stdout


def _assert_agrees(value, grads, result, names):
    np.testing.assert_allclose(value, result.value, rtol=1e-9, atol=1e-12)
    for name in names:
        expected = np.asarray(result.gradients[name])
        got = np.asarray(grads[name])
        assert got.shape == expected.shape, name
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("name", [op.name for op in ROWS if not op.is_array])
def test_every_elementwise_row_exports_runnable_numpy(tmp_path, name):
    program, point = _program(name), _point(name)
    result = gradcli.evaluate(program, point, check=False)
    values = [f"--{n}={json.dumps(v)}" for n, v in point.items()]
    module, _ = _run_export(tmp_path, [program, *values])
    value, grads = module.f(*(np.array(v) for v in point.values()))
    _assert_agrees(value, grads, result, point)


ARRAY_PROGRAMS = {  # every array row, in a scalar program (its gradient is what is exported)
    "matmul": ("sum(W@x)", {"W": [[1.5, -0.3], [0.2, 0.8], [1.1, 0.4]], "x": [0.7, -1.2]}),
    "dot": ("dot(x, y)", {"x": [0.7, -1.2], "y": [2.0, 0.3]}),
    "outer": ("sum(outer(x, y)**2)", {"x": [0.7, -1.2], "y": [2.0, 0.3, 1.0]}),
    "transpose": ("sum(W'@x)", {"W": [[1.5, -0.3], [0.2, 0.8]], "x": [0.7, -1.2]}),
    "sum": ("sum(x**2)", {"x": [0.7, -1.2, 2.0]}),
    "mean": ("mean(x**2)", {"x": [0.7, -1.2, 2.0]}),
    "prod": ("prod(x)", {"x": [0.7, -1.2, 2.0]}),
    "max": ("max(x)", {"x": [0.7, -1.2, 2.0]}),
    "min": ("min(x)", {"x": [0.7, -1.2, 2.0]}),
    "norm": ("norm(x)", {"x": [0.7, -1.2, 2.0]}),
    "norm1": ("norm1(x)", {"x": [0.7, -1.2, 2.0]}),
    "logsumexp": ("logsumexp(x)", {"x": [0.7, -1.2, 2.0]}),
    "softmax": ("sum(softmax(x)*t)", {"x": [0.7, -1.2, 2.0], "t": [1.0, 0.0, 2.0]}),
    "log_softmax": ("sum(log_softmax(x)*t)", {"x": [0.7, -1.2, 2.0], "t": [1.0, 0.0, 2.0]}),
    "tr": ("tr(W@W)", {"W": [[1.5, -0.3], [0.2, 0.8]]}),
    "det": ("det(W)", {"W": [[1.5, -0.3], [0.2, 0.8]]}),
    "logdet": ("logdet(W)", {"W": [[1.5, -0.3], [0.2, 0.8]]}),
    "inv": ("sum(inv(W))", {"W": [[1.5, -0.3], [0.2, 0.8]]}),
    "zeros": ("sum(x + zeros(3))", {"x": [0.7, -1.2, 2.0]}),
    "ones": ("sum(x*ones(3))", {"x": [0.7, -1.2, 2.0]}),
    "eye": ("sum(eye(2)@x)", {"x": [0.7, -1.2]}),
}


def test_the_array_programs_cover_every_array_row():
    assert {op.name for op in ROWS if op.is_array} <= set(ARRAY_PROGRAMS)


@pytest.mark.parametrize("name", sorted(ARRAY_PROGRAMS))
def test_every_array_row_exports_runnable_numpy(tmp_path, name):
    program, point = ARRAY_PROGRAMS[name]
    result = gradcli.evaluate(program, point, check=False)
    values = [f"--{n}={json.dumps(v)}" for n, v in point.items()]
    module, _ = _run_export(tmp_path, [program, *values])
    value, grads = module.f(*(np.array(v, dtype=float) for v in point.values()))
    _assert_agrees(value, grads, result, point)


def test_rows_without_numpy_say_so_and_carry_a_prefixed_helper(tmp_path):
    module, source = _run_export(tmp_path, ["sum(erf(x)*gelu(x))", "--shape", "x=3"])
    assert "_gc_erf = np.vectorize(" in source and "NumPy has no such function" in source
    assert "np.erf" not in source and "np.gelu" not in source
    x = [0.3, -1.0, 2.0]
    value, grads = module.f(np.array(x))
    _assert_agrees(value, grads, gradcli.evaluate("sum(erf(x)*gelu(x))", {"x": x},
                                                  check=False), ["x"])


def test_a_variable_named_like_numpy_does_not_shadow_it(tmp_path):
    module, source = _run_export(tmp_path, ["sum(np*exp(x))", "--shape", "np=2",
                                            "--shape", "x=2"])
    assert "def f(np_, x):" in source
    value, grads = module.f(np.array([1.0, 2.0]), np.array([0.5, -0.5]))
    assert value == pytest.approx(1.0 * np.exp(0.5) + 2.0 * np.exp(-0.5))
    np.testing.assert_allclose(grads["x"], [np.exp(0.5), 2.0 * np.exp(-0.5)])


def test_a_zero_gradient_is_exported_with_its_shape(tmp_path):
    module, _ = _run_export(tmp_path, ["sum(x - x + y)", "--shape", "x=3", "--shape", "y=3"])
    _, grads = module.f(np.ones(3), np.ones(3))
    assert np.shape(grads["x"]) == (3,) and not np.any(grads["x"])
    np.testing.assert_array_equal(grads["y"], np.ones(3))


def test_order_two_returns_the_bare_value_as_order_one_does(tmp_path):
    first, _ = _run_export(tmp_path, ["sum(x**3)", "--shape", "x=3"])
    second, _ = _run_export(tmp_path, ["sum(x**3)", "--shape", "x=3", "--order", "2"])
    x = np.array([0.5, 1.0, 2.0])
    assert np.ndim(first.f(x)[0]) == np.ndim(second.f(x)[0]) == 0
    np.testing.assert_allclose(second.f(x)[1]["x"]["x"], np.diag(6 * x))


@pytest.mark.parametrize("name", [op.name for op in ROWS if not op.is_array])
def test_every_row_exports_runnable_scalar_python(tmp_path, name):
    """The scalar export (``import math`` and the rows' own functions) of every row, at its
    first test point; the export is checked by diff itself before it is printed too."""
    names = PARAMETERS[:OPS[name].arity]
    program = SPELLING.get(name, f"{name}({', '.join(names)})")
    case = [float(v) for v in _cases(name)[0]]
    module, _ = _run_export(tmp_path, [program])
    value, gradient = module.f(*case)
    result = gradcli.evaluate(program, dict(zip(names, case, strict=True)), check=False)
    assert value == pytest.approx(result.value, rel=1e-12, abs=1e-300)
    for n, got in zip(names, gradient, strict=True):
        assert got == pytest.approx(result.gradients[n], rel=1e-9, abs=1e-12), n


@pytest.mark.parametrize("op", [op for op in ROWS if op.numpy], ids=lambda op: op.name)
def test_a_row_s_numpy_form_writes_each_operand(op):
    """A row's NumPy form is a format string with one place per operand (``{0}``, ...)."""
    operands = [f"operand{i}" for i in range(op.arity)]
    written = op.numpy.format(*operands)
    assert all(operand in written for operand in operands)
    assert "{" not in written


# Outside a row's domain the scalar export refuses, as eval does (found by a helper: lbeta(-2.5, 1)
# exported returned -0.92, ive(-2.5, 0) an IndexError, x**0.5 at -1 a complex number). Every row
# with a domain check, at the first points of a grid where its check says no.
GRID = (-2.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 40.0, 1e6)
REFUSED = (ValueError, ZeroDivisionError, OverflowError)


def _outside(op, count: int = 40) -> list[tuple[float, ...]]:
    """Up to ``count`` points of the grid outside ``op``'s domain, spread over all of them."""
    import itertools

    points = [point for point in itertools.product(GRID, repeat=op.arity)
              if op.domain(*point) is not None]
    return points[::max(1, len(points) // count)]


@pytest.mark.parametrize("name", [op.name for op in ROWS if not op.is_array and op.domain])
def test_every_row_s_scalar_export_refuses_outside_its_domain(tmp_path, name):
    op = OPS[name]
    names = PARAMETERS[:op.arity]
    program = SPELLING.get(name, f"{name}({', '.join(names)})")
    module, _ = _run_export(tmp_path, [program])
    points = _outside(op)
    assert points, f"no point of the grid is outside {name}'s domain"
    for point in points:
        with pytest.raises(gradcli.GradcliError):
            gradcli.evaluate(program, dict(zip(names, point, strict=True)), check=False)
        with pytest.raises(REFUSED):
            module.f(*point)


def test_a_power_with_an_exponent_not_whole_refuses_a_negative_base(tmp_path):
    module, text = _run_export(tmp_path, ["x**0.5 + (y + 1)**z"])
    assert "math.pow(x, 0.5)" in text and "math.pow(t1, z)" in text  # t1 = y + 1
    assert module.f(4.0, 1.0, 2.0)[0] == pytest.approx(2.0 + 4.0)
    for point in ((-1.0, 1.0, 2.0), (4.0, -3.0, 0.5)):
        with pytest.raises(ValueError):
            module.f(*point)
    squared, text = _run_export(tmp_path, ["x**2 + x**-1"])  # whole exponents: x**2, 1/x
    assert "x**2" in text and "pow" not in text and squared.f(-2.0)[0] == pytest.approx(3.5)


def test_and_and_or_compute_both_operands_as_eval_does(tmp_path):
    """Python's ``and`` skipped log(0) and returned 0.0 where eval refuses (found by a helper)."""
    module, text = _run_export(tmp_path, ["(x and log(x)) + (y or log(y))"])
    assert "all((" in text and "any((" in text
    for point in ((0.0, 2.0), (2.0, 0.0)):
        with pytest.raises(gradcli.GradcliError):
            gradcli.evaluate("(x and log(x)) + (y or log(y))",
                             dict(zip("xy", point, strict=True)), check=False)
        with pytest.raises(ValueError):
            module.f(*point)
    for point in ((2.0, 3.0), (0.5, 0.5)):
        result = gradcli.evaluate("(x and log(x)) + (y or log(y))",
                                  dict(zip("xy", point, strict=True)), check=False)
        assert module.f(*point)[0] == result.value


@pytest.mark.parametrize(("program", "point"), [
    ("lgamma(x)", 1e-320),  # the gradient -1/x: -inf
    ("floor(x)*x", 1e300),  # the value: inf
    ("exp(x)*x", 709.0),  # the value: 5.8e309
])
def test_a_result_that_is_not_finite_is_refused_as_eval_refuses_it(tmp_path, program, point):
    module, _ = _run_export(tmp_path, [program])
    with pytest.raises(gradcli.GradcliError):
        gradcli.evaluate(program, {"x": point}, check=False)
    with pytest.raises(OverflowError, match="not finite"):
        module.f(point)


@pytest.mark.parametrize(("program", "shapes", "point"), [
    ("logdet(X)", ["X=2x2"], {"X": [[0.0, 1.0], [1.0, 0.0]]}),  # log|det| = 0 was returned
    ("sum(log(x))", ["x=2"], {"x": [1.0, -2.0]}),
    ("sum(x/y)", ["x=2", "y=2"], {"x": [1.0, 2.0], "y": [1.0, 0.0]}),
    ("norm(x)", ["x=2"], {"x": [0.0, 0.0]}),  # the gradient x/|x|: NaN
])
def test_the_numpy_export_refuses_where_eval_does(tmp_path, program, shapes, point):
    """Found by a helper: outside a domain the NumPy export returned NaN, inf, or (logdet of a
    negative determinant) a plausible finite number."""
    import warnings

    arguments = [a for shape in shapes for a in ("--shape", shape)]
    module, _ = _run_export(tmp_path, [program, *arguments])
    values = {name: np.array(value) for name, value in point.items()}
    with pytest.raises(gradcli.GradcliError):
        gradcli.evaluate(program, values, check=False)
    with warnings.catch_warnings(), pytest.raises(FloatingPointError, match="not finite"):
        warnings.simplefilter("ignore")  # NumPy's own RuntimeWarning comes first
        module.f(**values)
    where = {name: np.abs(value) + 1.0 for name, value in values.items()}  # inside: numbers
    if program == "logdet(X)":
        where = {"X": np.array([[2.0, 1.0], [1.0, 3.0]])}
    result = gradcli.evaluate(program, where, check=False)
    value, _ = module.f(**where)
    assert value == pytest.approx(result.value, rel=1e-12)
