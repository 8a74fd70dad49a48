"""Batch lines with --hessian and --hvp (issue 17): every record carries its Hessian or H·v,
equal to hand-written closed forms, in JSON Lines and in the one-line table; --full reaches
the batch lines too."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from gradcli.cli import cli

LINES = "x**2*y\nsum(z**3)\nsum(log(z))*y\nz*2\n"


def _records(*args: str, lines: str = LINES) -> list[dict]:
    done = CliRunner().invoke(cli, ["eval", "-", "--json", *args], input=lines)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_json_lines_carry_each_programs_hessian():
    z = np.array([1.0, 2.0])
    records = _records("--hessian", "--x", "2", "--y", "3", "--z", "[1, 2]")
    assert [r["line"] for r in records] == [1, 2, 3, 4]
    assert records[0]["hessian"] == {"x": {"x": 6.0, "y": 4.0}, "y": {"x": 4.0, "y": 0.0}}
    np.testing.assert_allclose(records[1]["hessian"]["z"]["z"], np.diag(6 * z))
    third = records[2]["hessian"]  # sum(log(z))*y: d2/dz2 = -y/z^2, d2/dz dy = 1/z
    np.testing.assert_allclose(third["z"]["z"], np.diag(-3 / z**2))
    np.testing.assert_allclose(third["z"]["y"], 1 / z)
    np.testing.assert_allclose(third["y"]["z"], 1 / z)
    assert all(r["hessian_check"]["ok"] for r in records[:3])
    assert records[3]["error"]["kind"] == "usage" and "Hessian" in records[3]["error"]["message"]


def test_json_lines_carry_each_programs_hvp():
    records = _records("--hvp", "z=[1, -1]", "--y", "3", "--z", "[1, 2]",
                       lines="sum(z**3)\nsum(log(z))*y\n")
    np.testing.assert_allclose(records[0]["hvp"]["z"], [6.0, -12.0])
    np.testing.assert_allclose(records[1]["hvp"]["z"], [-3.0, 0.75])  # -y/z^2 * v
    np.testing.assert_allclose(records[1]["hvp"]["y"], 0.5)  # 1/z . v
    assert all(r["hvp_check"]["ok"] for r in records)


def test_table_lines_show_hessian_blocks_and_hvp():
    runner = CliRunner()
    done = runner.invoke(cli, ["eval", "-", "--hessian", "--x", "2", "--y", "3", "--z",
                               "[1, 2]"], input="x**2*y\nsum(z**3)\n")
    assert done.output.splitlines() == [
        "line 1: value 12  d/dx 12  d/dy 4  d2/dx [6, 4]  d2/dy [4, 0]  ✓",
        "line 2: value 9  d/dz [3, 12]  d2/dz dz [[6, 0], [0, 12]]  ✓"]
    done = runner.invoke(cli, ["eval", "-", "--hvp", "z=[1, 0]", "--z", "[1, 2]"],
                         input="sum(z**3)\n")
    assert done.output == "line 1: value 9  d/dz [3, 12]  H·v z [6, 0]  ✓\n"


def test_full_reaches_batch_lines():
    z = str(list(range(1, 13)))
    runner = CliRunner()
    short = runner.invoke(cli, ["eval", "-", "--z", z], input="z*2\n").output
    full = runner.invoke(cli, ["eval", "-", "--z", z, "--full"], input="z*2\n").output
    assert "…" in short and "…" not in full
    assert "[[2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0, 2," in full


def test_mode_that_would_do_nothing_is_a_usage_error():
    runner = CliRunner()
    for args in (["x**2", "--x", "2"], ["x**2", "--x", "1:2:3"]):
        done = runner.invoke(cli, ["eval", *args, "--mode", "forward"])
        assert done.exit_code == 2, done.output
        assert "--mode" in done.output and "Traceback" not in done.output
    done = runner.invoke(cli, ["eval", "x*ones(2)", "--x", "2", "--mode", "forward"])
    assert done.exit_code == 0 and "forward mode" in done.output
