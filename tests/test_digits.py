"""--digits N: tables print N significant digits; JSON keeps every digit (and refuses it)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from gradcli.cli import cli


def _run(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(cli, list(args))
    return done.exit_code, done.output


def test_a_table_rounds_to_the_digits_asked_for_and_json_keeps_every_digit():
    status, table = _run("eval", "sin(x)*y", "--x", "2", "--y", "1", "--digits", "3")
    assert status == 0 and "0.909" in table and "0.9092974" not in table
    status, whole = _run("eval", "sin(x)*y", "--x", "2", "--y", "1")
    assert status == 0 and "0.9092974268256817" in whole
    status, text = _run("eval", "sin(x)*y", "--x", "2", "--y", "1", "--json")
    assert json.loads(text)["value"] == 0.9092974268256817


def test_digits_with_json_or_csv_is_refused_not_ignored():
    for data in ("--json", "--csv"):
        status, text = _run("eval", "sin(x)", "--x", "2", "--digits", "3", data)
        assert status == 2
        assert f"--digits shapes tables and batch lines, and {data} always prints" in text
        assert f"hint: drop --digits, or {data}" in text


def test_sweeps_and_batches_round_too():
    status, sweep = _run("eval", "sin(x)", "--x", "0:1:3", "--digits", "3")
    assert status == 0 and "0.479" in sweep and "0.4794255" not in sweep
    done = CliRunner().invoke(cli, ["eval", "-", "--x", "2", "--digits", "2"], input="sin(x)\n")
    assert done.exit_code == 0 and "value 0.91  d/dx -0.42" in done.output


def test_digits_outside_1_to_17_is_a_usage_error():
    for bad in ("0", "18", "x"):
        status, text = _run("eval", "x", "--x", "1", "--digits", bad)
        assert status == 2 and "--digits" in text, text
