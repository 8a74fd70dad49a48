"""Issue 29: ``gradcli eval PROGRAM --W ... --csv`` of an array program writes the scalar
sweep's CSV (the same functions, the same value, gradient, ok and error columns) with one
column per element (``W[0,1]``, ``d/dW[0,1]``); what a row cannot hold is a message that names
arrays, never a sweep nobody asked for.

Expected numbers are closed forms written here (NumPy), not gradcli's own output."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from click.testing import CliRunner

from gradcli.cli import cli
from gradcli.errors import ExitStatus


def run(*args: str):
    return CliRunner().invoke(cli, ["eval", *args])


def rows(done) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(done.stdout)))


def elements(name: str, array: np.ndarray) -> list[str]:
    return [f"{name}[{','.join(map(str, index))}]" for index in np.ndindex(array.shape)]


def test_an_array_point_is_one_row_with_flattened_columns():
    rng = np.random.default_rng(11)
    w, b, c = rng.normal(size=(2, 3)), 1.5, -0.25
    done = run("b = 1.5; sum(W*W*b) + c", "--W", json.dumps(w.tolist()), "--c", repr(c),
               "--csv")
    assert done.exit_code == 0, done.output
    header = done.stdout.splitlines()[0]
    names = ["b", *elements("W", w), "c"]  # the program's inputs, in the order they come
    assert next(csv.reader([header])) == [*names, "value", *(f"d/d{n}" for n in names),
                                          "ok", "error"]
    (row,) = rows(done)
    assert float(row["value"]) == pytest.approx(b * np.sum(w * w) + c, rel=1e-14)
    for index in np.ndindex(w.shape):
        label = f"W[{','.join(map(str, index))}]"
        assert float(row[label]) == w[index]  # every digit, as the scalar CSV writes them
        assert float(row[f"d/d{label}"]) == pytest.approx(2 * b * w[index], rel=1e-14)
    assert float(row["d/db"]) == pytest.approx(np.sum(w * w), rel=1e-14)
    assert float(row["d/dc"]) == 1.0
    assert (row["ok"], row["error"]) == ("true", "")


def test_the_columns_are_the_scalar_csv_s(tmp_path):
    """A scalar program's one-point CSV and an array program's at the same numbers have the
    same columns but the elements' names, and the same cells."""
    scalar = run("x*x*y", "--x", "3", "--y", "2", "--csv")
    np.save(tmp_path / "x.npy", np.array([3.0]))
    array = run("sum(x*x*y)", "--x", str(tmp_path / "x.npy"), "--y", "2", "--csv")
    assert scalar.exit_code == array.exit_code == 0, array.output
    assert array.stdout.replace('"x[0]"', "x").replace("x[0]", "x") == scalar.stdout


def test_a_numeric_error_is_a_row_with_its_message_and_exit_3_as_for_scalars():
    scalar = run("log(x)", "--x", "-1", "--csv")
    array = run("sum(log(W))", "--W", "[[1, 2], [3, -4]]", "--csv")
    assert scalar.exit_code == array.exit_code == ExitStatus.NUMERIC
    for done in (scalar, array):
        (row,) = rows(done)
        assert row["ok"] == "false" and row["value"] == ""
        assert "logarithm of a non-positive number" in row["error"]
    assert rows(array)[0]["W[1,1]"] == "-4"


def test_no_check_leaves_ok_empty_and_program_arrays_give_columns():
    done = run("W = [[1, 2], [3, 4]]; sum(W*W)", "--csv", "--no-check")
    assert done.exit_code == 0, done.output
    (row,) = rows(done)
    assert row["ok"] == ""
    assert [float(row[f"d/dW[{i},{j}]"]) for i in (0, 1) for j in (0, 1)] == [2, 4, 6, 8]


@pytest.mark.parametrize(("args", "words"), [
    (["softmax(x)", "--x", "[1, 2]"], "array output"),
    (["f = sum(x); g = x[0]*2; f, g", "--x", "[1, 2]"], "several outputs"),
    (["sum(x*W)", "--W", "[1, 2]", "--x", "1", "--hessian"], "not Hessians"),
    (["sum(x*W)", "--W", "[1, 2]", "--x", "1", "--check-method", "complex"], "central"),
])
def test_what_a_row_cannot_hold_is_a_usage_error_that_names_no_sweep(args, words):
    done = run(*args, "--csv")
    assert done.exit_code == ExitStatus.USAGE, done.output
    assert words in done.stderr and "sweep" not in done.stderr
    assert "Traceback" not in done.output and done.stdout == ""


def test_a_sweep_of_an_array_program_names_the_array():
    done = run("sum(x*W)", "--W", "[1, 2]", "--x", "1:2:3", "--csv")
    assert done.exit_code == ExitStatus.USAGE
    assert "W is an array" in done.stderr and "W[0,1]" in done.stderr
