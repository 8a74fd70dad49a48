"""A value with an element that is not finite is said as binding says it, whoever reads it.

A large matrix that only products use is not summed when bound (engine/arrays.py ``bind``): the
product's own check reads it. These tests put inf or nan in such a matrix, with and without
zeros in the other operand (a BLAS may skip a zero's terms), beside other errors that binding
or the forward pass would meet, and expect the message a checked value gives, as for a value
small enough to be summed.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import gradcli
from gradcli.errors import NumericError, UsageError

N = 300  # 90,000 elements: past the size that binding leaves to the products
RNG = np.random.default_rng(30)
MESSAGE = r"the value of W has (inf|-inf|nan) at \[\d+, \d+\], not a finite number"


def matrix(bad: float, n: int = N) -> np.ndarray:
    weights = RNG.normal(size=(n, n))
    weights[n // 3, n // 2] = bad
    return weights


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("zeros", ["none", "at the bad column", "all"])
@pytest.mark.parametrize("n", [N, 20])
def test_a_matrix_that_is_not_finite_is_named(bad, zeros, n):
    x = RNG.normal(size=n)
    if zeros == "at the bad column":
        x[n // 2] = 0.0
    elif zeros == "all":
        x[:] = 0.0
    values = {"W": matrix(bad, n), "x": x, "t": np.ones(n)}
    for program in ("mean((W@x - t)**2)", "sum(x@W)", "sum(W@W@x)"):
        with pytest.raises(UsageError, match=MESSAGE):
            gradcli.evaluate(program, values, check=False)


def test_binding_s_order_of_errors_is_kept():
    """An earlier variable's error first: a later value that cannot be read, a node that fails
    before the product is computed."""
    values = {"W": matrix(np.inf), "x": RNG.normal(size=N), "t": np.ones(N)}
    with pytest.raises(UsageError, match=MESSAGE):
        gradcli.evaluate("sum(W@x) + sum(t)", {**values, "t": np.array([])}, check=False)
    with pytest.raises(UsageError, match=MESSAGE):
        gradcli.evaluate("sum(W@x) + sum(log(-t))", values, check=False)
    finite = {**values, "W": RNG.normal(size=(N, N))}
    with pytest.raises(UsageError, match="the value of t has no elements"):
        gradcli.evaluate("sum(W@x) + sum(t)", {**finite, "t": np.array([])}, check=False)
    with pytest.raises(NumericError, match="log"):
        gradcli.evaluate("sum(W@x) + sum(log(-t))", finite, check=False)


def test_a_matrix_used_elsewhere_too_is_checked_when_bound():
    values = {"W": matrix(np.nan), "x": RNG.normal(size=N)}
    for program in ("sum(W@x) + sum(W)", "W[0, 0]*sum(W@x)", "sum(W*W)"):
        with pytest.raises(UsageError, match=MESSAGE):
            gradcli.evaluate(program, values, check=False)


def test_a_finite_matrix_gives_numpy_s_value_and_gradients():
    weights, x, t = RNG.normal(size=(N, N)), RNG.normal(size=N), RNG.normal(size=N)
    result = gradcli.evaluate("mean((W@x - t)**2)", {"W": weights, "x": x, "t": t})
    r = weights @ x - t
    g = 2 * r / N
    assert result.value == pytest.approx(np.mean(r**2), rel=1e-12)
    np.testing.assert_allclose(result.gradients["W"], np.outer(g, x), rtol=1e-12)
    np.testing.assert_allclose(result.gradients["x"], weights.T @ g, rtol=1e-12, atol=1e-15)
    assert result.check is not None and result.check.ok


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_a_file_names_its_first_element_that_is_not_finite(tmp_path, bad):
    from gradcli.language.values import read_array

    weights = matrix(bad)
    weights[N - 1, 0] = -np.inf
    np.save(tmp_path / "W.npy", weights)
    with pytest.raises(UsageError, match=rf"W in .*W\.npy has {bad} at \[{N // 3}, {N // 2}\], "
                                         "not a finite number"):
        read_array("W", str(tmp_path / "W.npy"))
    np.save(tmp_path / "W.npy", weights[: N // 3])
    np.testing.assert_array_equal(read_array("W", str(tmp_path / "W.npy")), weights[: N // 3])


@pytest.mark.parametrize("program", ["sum(x)", "mean(x)", "max(x) + sum(x)"])
def test_an_overflowing_reduction_names_its_node_and_prints_no_numpy_warning(program):
    """1e308 + 1e308 overflows in the sum, not in binding's finiteness test (whose own sum may
    overflow for finite elements) nor in max (whose tied elements are 1e308 itself)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-W", "error", "-m", "gradcli", "eval", program,
                           "--x", "[1e308, 1e308]"], capture_output=True, text=True)
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        "error: numeric error: overflow: the result is not a finite float in "
        + ("#2 sum(x)" if "max" in program else f"#1 {program}")]


@pytest.mark.parametrize(("program", "expected"), [("max(x)", 1e308), ("min(-x)", -1e308)])
def test_tied_extremes_near_the_largest_float_are_the_element(program, expected):
    result = gradcli.evaluate(program, {"x": [1e308, 1e308, 1.0]})
    assert result.value == expected
    assert list(result.gradients["x"]) == [0.5 * abs(expected) / expected] * 2 + [0.0]


@pytest.mark.parametrize("value", [10**400, 10**5000, (1.0, 10**400), [1.0, 10**400]],
                         ids=["10**400", "10**5000", "sweep", "array"])
def test_an_integer_past_the_floats_from_python_is_a_usage_error(value):
    """The Python API takes ints; one too large for a float is the user's mistake, said as
    one (it was an OverflowError from math.isfinite), for a number, a sweep and an array."""
    with pytest.raises(UsageError, match="too large for a float"):
        gradcli.evaluate("x*2", {"x": value})
    assert gradcli.evaluate("x*2", {"x": 10**300}).value == 2e300


@pytest.mark.parametrize("given", ["python", "option"])
def test_a_value_that_is_not_finite_is_named_with_its_place(given):
    """One message for every way in: what the element is and where (``1e400`` is read as inf)."""
    words = "the value of x has inf at [1], not a finite number"
    if given == "python":
        with pytest.raises(UsageError, match=re.escape(words)):
            gradcli.evaluate("sum(x)", {"x": [1.0, math.inf]})
    else:
        from click.testing import CliRunner

        from gradcli.cli import cli

        done = CliRunner().invoke(cli, ["eval", "sum(x)", "--x", "[1, 1e400]"])
        assert done.exit_code == 2 and words in done.output, done.output
