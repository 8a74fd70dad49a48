"""End to end through click: options, output formats, batch records, exit statuses."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from gradcli.cli import cli

SEED = ["(x*W+b-t)**2", "--x", "2", "--W", "3", "--b", "1", "--t", "8"]


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, ["eval", *args], input=stdin)


def run_json(*args: str, stdin: str | None = None):
    result = run("--json", *args, stdin=stdin)
    return result, [json.loads(line) for line in result.stdout.splitlines()]


def test_human_output_shows_nodes_gradients_and_verdict():
    result = run(*SEED)
    assert result.exit_code == 0
    out = result.stdout
    for text in ("x*W + b - t", "(x*W + b - t)**2", "gradients of the output", "check passed"):
        assert text in out
    assert "\x1b[" not in out  # not a terminal: plain text


def test_json_matches_the_documented_shape():
    result, (record,) = run_json(*SEED)
    assert result.exit_code == 0
    assert record["value"] == 1.0
    assert record["gradients"] == {"x": -6.0, "W": -4.0, "b": -2.0, "t": 2.0}
    assert record["error"] is None
    node = record["nodes"][-1]
    assert set(node) >= {"id", "op", "label", "value", "grad", "inputs"}
    assert [n["id"] for n in record["nodes"]] == list(range(len(record["nodes"])))
    assert record["check"]["ok"] is True
    assert set(record["check"]["gradients"]["x"]) >= {"numeric", "abs_error", "ok"}
    assert record["check"]["max_abs_error"] < 1e-9


def test_a_record_written_in_pieces_is_the_record(monkeypatch):
    """Nodes are written a few at a time (jsonout.NODES_PER_PIECE): the text is still one JSON
    object whose nodes are the rows of node_rows, in order, with the keys in order too."""
    import gradcli
    from gradcli.output import records as jsonout

    result = gradcli.evaluate("u = x*W; z = u + b; err = z - t; err*err",
                              {"x": 2, "W": 3, "b": 1, "t": 8})
    whole = json.loads(jsonout.dumps(jsonout.result_record(result, "s", 7)))
    monkeypatch.setattr(jsonout, "NODES_PER_PIECE", 2)
    pieces = list(jsonout.json_pieces(jsonout.result_record(result, "s", 7)))
    assert len(pieces) == 2 + -(-len(result.program.nodes) // 2)
    record = json.loads("".join(pieces))
    assert record == whole and list(record) == list(whole)
    assert list(record)[:6] == ["line", "expression", "point", "value", "gradients", "nodes"]
    assert record["nodes"] == [dataclasses.asdict(row) for row in result.node_rows()]
    assert [n["numeric_grad"] is not None for n in record["nodes"]] == [
        n.needs_grad for n in result.program.nodes]


def test_the_seed_program_with_statements():
    _, (record,) = run_json("u = x*W; z = u + b; err = z - t; err*err",
                            "--x", "2", "--W", "3", "--b", "1", "--t", "8")
    labels = {n["label"]: n for n in record["nodes"]}
    assert labels["err"]["grad"] == -2.0
    assert record["value"] == 1.0


@pytest.mark.parametrize(
    "args",
    [
        ["x*y", "--x", "2", "--y", "-3"],
        ["x*y", "--x=2", "--y=-3"],
        ["x*y", "--set", "x=2", "--set", "y=-3"],
        ["--x", "2", "x*y", "--y", "-3"],
        ["--x", "2", "--y", "-3", "--", "x*y"],
    ],
)
def test_ways_to_give_values(args):
    result, (record,) = run_json(*args)
    assert result.exit_code == 0
    assert record["value"] == -6.0


def test_names_that_clash_with_options_go_through_set():
    _, (record,) = run_json("json*check", "--set", "json=2", "--set", "check=5")
    assert record["value"] == 10.0


@pytest.mark.parametrize("args", [["-x**2", "--x", "3"], ["--x", "3", "--", "-x**2"],
                                  ["-exp(f)", "--f", "0"]])
def test_expressions_starting_with_minus(args):
    _, (record,) = run_json(*args)
    assert record["value"] in (-9.0, -1.0)


def test_command_line_values_override_program_defaults():
    _, (record,) = run_json("x = 2; y = 3; x*y", "--y", "10")
    assert record["value"] == 20.0


def test_missing_values_are_a_usage_error_listing_every_name_with_strict():
    result = run("(x*W+b-t)**2", "--x", "2", "--strict")
    assert result.exit_code == 2
    assert "no values for W, b, t" in result.stderr
    assert "--W VALUE --b VALUE --t VALUE" in result.stderr


def test_parse_error_shows_caret_and_hint():
    result = run("2x + 1")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert "parse error at line 1, column 2" in lines[0]
    assert lines[1].strip() == "2x + 1"
    assert lines[2].index("^") == lines[1].index("2x") + 1
    assert "did you mean 2*x?" in result.stderr
    assert "Traceback" not in result.output


def test_json_errors_go_to_stdout_and_one_line_to_stderr():
    result, (record,) = run_json("log(x)", "--x", "-1")
    assert result.exit_code == 3
    assert record["error"]["kind"] == "domain"
    assert record["value"] is None
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["x", "--x", "1"], 0),
        (["relu(x)", "--x", "0"], 1),
        (["relu(x)", "--x", "0", "--no-check"], 0),
        (["2*)"], 2),
        (["sinn(x)", "--x", "1"], 2),
        (["x", "--x", "abc"], 2),
        (["x", "--x", "nan"], 2),
        (["pi", "--pi", "3"], 0),  # a variable named pi (issue 25)
        (["exp + x", "--x", "1"], 2),  # a function's name without a value: a call's slip
        (["x", "--x"], 2),
        (["sqrt(x)", "--x", "-1"], 3),
        (["9**9**9"], 3),
    ],
)
def test_exit_statuses(args, status):
    assert run(*args).exit_code == status


def test_tolerance_options():
    _, (record,) = run_json("x**3", "--x", "1.3", "--rtol", "0.01", "--atol", "0")
    assert record["check"]["rtol"] == 0.01
    assert run("x", "--x", "1", "--rtol", "-1").exit_code == 2


def test_no_check_gives_null_check():
    _, (record,) = run_json("x**3", "--x", "2", "--no-check")
    assert record["check"] is None
    assert record["gradients"] == {"x": 12.0}


BATCH = "x*y\n\n# a comment\n2x\nsin(x)\nlog(x - 1)\nrelu(x - 1)\n"


def test_batch_gives_one_record_per_program_line_in_order():
    result, records = run_json("-", "--x", "1", "--y", "2", stdin=BATCH)
    assert [r["line"] for r in records] == [1, 4, 5, 6, 7]
    assert records[0]["value"] == 2.0
    assert records[1]["error"]["kind"] == "parse" and records[1]["error"]["line"] == 4
    assert records[2]["gradients"]["x"] == pytest.approx(0.5403023058681398)
    assert records[3]["error"]["kind"] == "domain"
    assert records[4]["check"]["ok"] is False
    assert result.exit_code == 3  # the largest status among the records
    assert len(result.stderr.strip().splitlines()) == 2  # one line per bad record


def test_batch_reads_stdin_without_dash_when_not_a_terminal():
    result, records = run_json("--x", "3", stdin="x*x\nx+1\n")
    assert [r["value"] for r in records] == [9.0, 4.0]
    assert result.exit_code == 0


def test_batch_human_output_is_one_line_per_record():
    result = run("-", "--x", "1", "--y", "2", stdin=BATCH)
    lines = result.stdout.splitlines()
    assert len(lines) == 5
    assert lines[0].startswith("line 1: value 2")
    assert "parse error" in lines[1]


def test_batch_survives_invalid_utf8_and_crlf():
    runner = CliRunner()
    data = b"x+1\r\n\xff\xfe\r\nx*2\r\n"
    result = runner.invoke(cli, ["eval", "-", "--x", "2", "--json"], input=data)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3]
    assert records[0]["value"] == 3.0 and records[2]["value"] == 4.0
    assert records[1]["error"]["kind"] == "parse"


def test_program_file(tmp_path):
    path = tmp_path / "seed.grad"
    path.write_text("# the seed\nu = x*W\nz = u + b\nerr = z - t\nerr*err\n")
    _, (record,) = run_json("-f", str(path), "--x", "2", "--W", "3", "--b", "1", "--t", "8")
    assert record["value"] == 1.0
    bad = tmp_path / "bad.grad"
    bad.write_text("u = x*W\nz = u +* b\nz\n")
    result = run("-f", str(bad), "--x", "1", "--W", "1", "--b", "1")
    assert result.exit_code == 2
    assert "line 2, column 8" in result.stderr


def test_either_expr_or_file(tmp_path):
    path = tmp_path / "p.grad"
    path.write_text("x\n")
    assert run("x", "-f", str(path), "--x", "1").exit_code == 2


def test_help_and_version():
    runner = CliRunner()
    assert "Examples:" in runner.invoke(cli, ["eval", "--help"]).stdout
    assert "Exit status" in runner.invoke(cli, ["eval", "-h"]).stdout
    assert "eval" in runner.invoke(cli, ["--help"]).stdout
    from gradcli.engine import core_is_compiled

    version = runner.invoke(cli, ["--version"])
    core = "compiled" if core_is_compiled() else "Python; GRADCLI_COMPILE=1 pip install"
    assert version.exit_code == 0
    assert version.stdout.startswith(f"gradcli, version 0.1.0 (symbolic core: {core}")
    assert runner.invoke(cli, ["-V"]).stdout == version.stdout


def test_user_text_is_never_markup():
    result = run("bold_x + 1", "--bold_x", "1")
    assert result.exit_code == 0
    error = run("[bold]x")
    assert "[bold]x" in error.stderr


def test_python_dash_m_and_console_script():
    done = subprocess.run([sys.executable, "-m", "gradcli", "eval", "x*2", "--x", "3", "--json"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0
    assert json.loads(done.stdout)["value"] == 6.0
    usage = subprocess.run([sys.executable, "-m", "gradcli", "eval", "x", "--strict"],
                           capture_output=True, text=True, check=False)
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def _colour_codes(env_extra: dict[str, str]) -> int:
    """Colour escape codes in the human output with a terminal forced (FORCE_COLOR)."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update(FORCE_COLOR="1", **env_extra)
    done = subprocess.run([sys.executable, "-m", "gradcli", "eval", "x*2", "--x", "1"],
                          capture_output=True, text=True, env=env, check=True)
    return len(re.findall(r"\x1b\[(3[0-9]|38;)", done.stdout))


def test_colour_on_a_terminal_and_no_colour_with_no_color():
    assert _colour_codes({}) > 0
    assert _colour_codes({"NO_COLOR": "1"}) == 0


@pytest.mark.parametrize("args", [["--atol", "inf"], ["--rtol", "nan"], ["--csv", "--json"],
                                  ["--hessian", "--y", "1,2"]])
def test_options_that_cannot_work_together_or_at_all_are_usage_errors(args):
    result = run("x*y", "--x", "1", "--y", "2", *args) if "--y" not in args else run(
        "x*y", "--x", "1", *args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_end_of_input_has_no_grouping_hint_and_a_bom_is_not_a_parse_error(tmp_path):
    assert "grouping" not in run("x+").stderr
    path = tmp_path / "bom.grad"
    path.write_bytes("\ufeffx*2\n".encode())
    _, (record,) = run_json("-f", str(path), "--x", "2")
    assert record["value"] == 4.0


def test_another_commands_flag_is_an_unknown_option_not_a_variable():
    result = CliRunner().invoke(cli, ["graph", "x*2", "--x", "1", "--json"])
    assert result.exit_code == 2
    assert "error: usage error: no such option --json" in result.output
    drawn = CliRunner().invoke(cli, ["graph", "json*2", "--set", "json=1", "--format", "dot"])
    assert drawn.exit_code == 0 and "digraph" in drawn.stdout


def test_an_eval_in_a_callers_process_freezes_nothing_and_leaves_the_collector_as_it_was():
    """gc.freeze is for the console script's own process only: in a caller's process (click's
    runner, an application) frozen objects would never be collected."""
    import gc

    frozen = gc.get_freeze_count()
    for _ in range(3):
        result = CliRunner().invoke(cli, ["eval", "x*x", "--x", "2"])
        assert result.exit_code == 0, result.output
    assert gc.get_freeze_count() == frozen
    gc.disable()
    try:
        assert CliRunner().invoke(cli, ["eval", "x*x", "--x", "2"]).exit_code == 0
        assert not gc.isenabled()
    finally:
        gc.enable()
