"""Sweeps: the vectorised path agrees with gradcli.evaluate point by point, check included."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.gradcheck.sweep import check_variable, csv_rows, evaluate_sweep, point_records
from gradcli.gradcheck.sweep_stream import sweep_columns
from gradcli.language.values import parse_value

np = pytest.importorskip("numpy")

# Each with a grid that includes awkward points: kinks (relu/abs at 0), the edge of a domain
# (sqrt near 0: one-sided differences), a pole (1/x near 0: smaller steps), rounding noise near
# 1e8, and points with numeric errors (log of a non-positive number).
CASES = [
    ("(x*W+b-t)**2", {"x": "-2:2:9", "W": "1,3", "b": "1", "t": "8"}),
    ("relu(x) + abs(y) + max(x, y)", {"x": "-1:1:5", "y": "-1,0,2"}),
    ("x + 0*sqrt(x) + sqrt(y)", {"x": "0:1e-6:4", "y": "1e-7,1"}),
    ("1/x + (y + 1e8) - 1e8", {"x": "0.001,0.5,-3", "y": "0.3,-2"}),
    ("log(x) * sigmoid(y) + softplus(x*y)", {"x": "-1:2:7", "y": "-3,0.5"}),
    ("pow(x, y) + atan2(y, x) + hypot(x, y)", {"x": "-2:2:5", "y": "0.5,2"}),
]


def _sweep(text, given, **options):
    program = gradcli.parse(text)
    values = {name: parse_value(name, value) for name, value in given.items()}
    return program, evaluate_sweep(program, sweep_columns(program, values), **options)


@pytest.mark.parametrize(("text", "given"), CASES)
def test_every_point_equals_the_scalar_path(text, given):
    program, sweep = _sweep(text, given)
    for index in range(sweep.size):
        point = sweep.point(index)
        try:
            scalar = gradcli.evaluate(gradcli.parse(text), point)
        except gradcli.NumericError as error:
            assert sweep.failed[index]
            assert sweep.errors[index].message == error.message
            continue
        assert not sweep.failed[index]
        assert sweep.value[index] == pytest.approx(scalar.value, rel=1e-12, abs=1e-14)
        for name in program.variables:
            assert sweep.gradients[name][index] == pytest.approx(
                scalar.gradients[name], rel=1e-12, abs=1e-14)
            vector_check = sweep.checks[name]
            scalar_check = scalar.check.gradients[name]
            assert bool(vector_check.ok[index]) == scalar_check.ok, (point, name)
            if scalar_check.numeric is not None:
                assert vector_check.numeric[index] == pytest.approx(
                    scalar_check.numeric, rel=1e-6, abs=1e-8)
        assert bool(sweep.check_ok[index]) == scalar.check.ok


def test_grid_order_first_name_varies_slowest_and_defaults_fill_in():
    program = gradcli.parse("k = 3; k*x + y")
    columns = sweep_columns(program, {"x": (1.0, 2.0), "y": (10.0, 20.0, 30.0), "z": 5.0})
    assert columns["x"].tolist() == [1, 1, 1, 2, 2, 2]
    assert columns["y"].tolist() == [10, 20, 30, 10, 20, 30]
    assert columns["k"].tolist() == [3] * 6  # the program's default; z is not used: ignored
    with pytest.raises(gradcli.UsageError, match="no value for y"):
        sweep_columns(program, {"x": (1.0, 2.0)})


def test_a_wrong_gradient_is_caught_at_every_point():
    program, sweep = _sweep("sin(x)*y", {"x": "-1:1:11", "y": "2"}, check=False)
    sweep.gradients["x"] = sweep.gradients["x"] + 1e-3  # corrupt the reverse-mode answers
    checked = check_variable(sweep, program.variables["x"], 1e-5, 1e-8)
    assert not checked.ok.any()
    assert checked.abs_error == pytest.approx(np.full(11, 1e-3), rel=1e-4)


def test_an_overflowing_difference_is_not_a_pass_and_matches_the_scalar_check():
    # At x = 1e300, f(x +- h) = +-1.2e308: f(x + h) - f(x - h) overflows. inf <= inf must not
    # count as agreement; like the scalar check, the sweep takes a 16 times smaller step there.
    text = "2e13 * (x - 1e300) + y"
    _, sweep = _sweep(text, {"x": "1e300", "y": "3,-2"})
    checked = sweep.checks["x"]
    assert checked.ok.all() and np.isfinite(checked.numeric).all()
    for index in range(sweep.size):
        scalar = gradcli.evaluate(text, sweep.point(index)).check.gradients["x"]
        assert checked.numeric[index] == scalar.numeric
        assert checked.tolerance[index] == scalar.tolerance


def test_csv_has_a_header_and_one_row_per_point():
    _, sweep = _sweep("log(x)*y", {"x": "-1:2:4", "y": "1,2"})
    rows = list(csv_rows(sweep))
    assert rows[0] == ["x", "y", "value", "d/dx", "d/dy", "ok", "error"]
    assert len(rows) == 1 + 8 and all(len(row) == 7 for row in rows)
    failed = [row for row in rows[1:] if row[5] == "false"]
    assert len(failed) == 4 and all("logarithm of a non-positive" in row[6] for row in failed)
    assert rows[-1][:5] == ["2", "2", repr(2 * math.log(2)), "1", repr(math.log(2))]


def test_point_records_are_strict_json():
    _, sweep = _sweep("sqrt(x)", {"x": "-1,0,4"})
    records = [json.loads(json.dumps(record, allow_nan=False)) for record in point_records(sweep)]
    assert [r["error"] is None for r in records] == [False, False, True]
    assert records[2]["value"] == 2.0 and records[2]["gradients"] == {"x": 0.25}


def run(*args):
    return CliRunner().invoke(cli, ["eval", *args])


def test_eval_sweep_table_json_lines_and_csv():
    args = ["x**2*y", "--x", "-2:2:9", "--y", "1,2"]
    table = run(*args)
    assert table.exit_code == 0
    assert "18 points" in table.stdout and "check passed at 18 points" in table.stdout
    lines = run(*args, "--json").stdout.splitlines()
    assert len(lines) == 18
    first = json.loads(lines[0])
    assert first["point"] == {"x": -2.0, "y": 1.0} and first["gradients"] == {"x": -4.0, "y": 4.0}
    rows = list(csv.reader(io.StringIO(run(*args, "--csv").stdout)))
    assert len(rows) == 19 and rows[0][:3] == ["x", "y", "value"]


def test_eval_sweep_reads_a_program_file(tmp_path):
    program = tmp_path / "p.grad"
    program.write_text("k = 2\nk*x\n")
    result = run("-f", str(program), "--x", "1,2,3", "--json")
    assert [json.loads(line)["value"] for line in result.stdout.splitlines()] == [2, 4, 6]
    program.write_text("2x\n")
    broken = run("-f", str(program), "--x", "1,2")
    assert broken.exit_code == 2 and f"{program}: parse error" in broken.stderr


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["x*y", "--x", "1:2:3", "--y", "2"], 0),
        (["relu(x)", "--x", "-1:1:3"], 1),
        (["relu(x)", "--x", "-1:1:3", "--no-check"], 0),
        (["log(x)", "--x", "-1:1:3"], 3),
        (["x*y", "--x", "1:2:3"], 2),
        (["x", "--x", "1:2:0"], 2),
        (["-", "--x", "1,2"], 2),
        (["x", "--x", "2", "--csv"], 0),
        (["x*y*z", "--x", "0:1:10000", "--y", "0:1:10000", "--z", "1,2"], 2),  # too many points
    ],
)
def test_eval_sweep_exit_statuses(args, status):
    result = run(*args)
    assert result.exit_code == status, result.output
    assert "Traceback" not in result.output


def test_a_failed_point_of_a_sweep_has_the_error_fields_of_every_record():
    """batch-and-json.md: error is {kind, message, line, column, hint}; a sweep's records left
    out line and column (a bug hunt)."""
    done = CliRunner().invoke(cli, ["eval", "sqrt(x)", "--x", "-1,4", "--json"])
    failed, passed = (json.loads(line) for line in done.stdout.splitlines())
    assert failed["error"] == {"kind": "domain", "line": None, "column": None, "hint": None,
                               "message": "square root of a negative number in #1 sqrt(x), "
                                          "where x = -1"}
    assert passed["error"] is None and passed["value"] == 2.0
    parse_error = json.loads(CliRunner().invoke(cli, ["eval", "2x", "--json"]).stdout)["error"]
    assert failed["error"].keys() == parse_error.keys()
