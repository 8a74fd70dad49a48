"""I/O faults and exit statuses (issue 13): like coreutils, ripgrep or jq, gradcli never shows a
traceback, ends with a status that tells the truth, and writes nothing half-way.

Most cases run the real program in a subprocess: a full stdout (``/dev/full``), closed
descriptors, a pipe whose reader is gone and the encoding of stdout only exist there.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli.cli import cli
from gradcli.cli.streams import ASCII_STAND_INS, _register_stand_ins, _stand_in
from gradcli.errors import ExitStatus, UsageError
from gradcli.output.records import dumps, error_record

GRADCLI = [sys.executable, "-m", "gradcli"]
SEED = "(x*W+b-t)**2"
FULL = "No space left on device"
needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")


def run(*args: str | bytes, stdin: bytes = b"", env: dict | None = None,
        **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*GRADCLI, *args], input=stdin, capture_output=True, timeout=120,
                          env=env, **kwargs)


def shell(command: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """``command`` in bash, with ``gradcli`` standing for this interpreter's gradcli."""
    gradcli = " ".join(shlex.quote(part) for part in GRADCLI)
    return subprocess.run(["bash", "-c", command.replace("gradcli", gradcli, 1)], input=stdin,
                          capture_output=True, timeout=120)


def no_traceback(result: subprocess.CompletedProcess) -> None:
    assert b"Traceback" not in result.stderr and b"Error:" not in result.stderr, result.stderr


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


# --- 1. -f FILE: not UTF-8, too large, missing ---------------------------------------------

@pytest.mark.parametrize("command", [
    ["eval", "--x", "1"], ["eval", "--x", "1:2:3"], ["eval", "--x", "1", "--json"],
    ["diff"], ["graph"], ["plot", "--x", "1:2:3"]])
def test_a_program_file_that_is_not_utf8_is_a_usage_error_that_says_where(tmp_path, command):
    latin1 = tmp_path / "latin1.grad"
    latin1.write_bytes(b"# caf\xe9\nx*2\n")
    result = invoke(command[0], "-f", str(latin1), *command[1:])
    assert result.exit_code == ExitStatus.USAGE, result.output
    assert f"{latin1} is not UTF-8 at byte 5 (0xe9, on line 1)" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_utf16_gets_a_hint_to_convert_and_a_bom_is_still_fine(tmp_path):
    utf16 = tmp_path / "utf16.grad"
    utf16.write_bytes("x*2\n".encode("utf-16"))
    result = invoke("eval", "-f", str(utf16), "--x", "1")
    assert result.exit_code == 2 and "is not UTF-8 at byte 0" in result.stderr
    assert "iconv -f UTF-16 -t UTF-8" in result.stderr
    bom = tmp_path / "bom.grad"
    bom.write_bytes(b"\xef\xbb\xbfx*\xff")
    assert "is not UTF-8 at byte 5 (0xff, on line 1)" in invoke(
        "eval", "-f", str(bom), "--x", "1").stderr


def test_a_huge_program_file_is_refused_by_its_size_before_it_is_read(tmp_path):
    huge = tmp_path / "huge.grad"
    with open(huge, "wb") as stream:
        stream.truncate(2**30)  # sparse: a gigabyte of NULs that take no disk
    result = run("eval", "-f", str(huge), "--x", "1")
    assert result.returncode == 2
    assert b"huge.grad has 1,073,741,824 bytes; a program may have at most 8,000,000 " \
           b"characters" in result.stderr
    assert b"--max-nodes" in result.stderr
    small = run("eval", "-f", str(huge), "--x", "1", "--max-nodes", "10")
    assert b"at most 80 characters" in small.stderr


def test_a_program_on_stdin_stops_being_read_at_the_limit():
    result = run("eval", "-f", "-", "--x", "1", "--max-nodes", "10", stdin=b"x+" * 10**6)
    assert result.returncode == 2
    assert b"<stdin> has more than 80 bytes; a program may have at most 80" in result.stderr
    assert run("eval", "-f", "-", "--x", "3", stdin=b"x*2\n").stdout.startswith(b"value 6")


def test_a_missing_file_is_gradcli_style_not_clicks():
    for command in (["eval", "-f", "missing.grad", "--x", "1"], ["diff", "-f", "missing.grad"],
                    ["graph", "-f", "missing.grad"], ["plot", "-f", "missing.grad"]):
        result = invoke(*command)
        assert result.exit_code == 2
        assert result.stderr.startswith(
            "error: usage error: cannot read missing.grad: No such file or directory\n")
        assert "Usage:" not in result.output


# --- 2. stdout that cannot be written --------------------------------------------------------

@needs_dev_full
@pytest.mark.parametrize("args", [
    ["eval", SEED, "--x", "2", "--W", "3", "--b", "1", "--t", "8"],
    ["eval", "x", "--x", "1", "--json"],
    ["eval", "x**2", "--x", "-1:1:5", "--csv"],
    ["eval", "x**2", "--x", "-1:1:5"],
    ["eval", "-", "--x", "1"],
    ["eval", "-", "--x", "1", "--json"],
    ["diff", SEED],
    ["diff", SEED, "--json"],
    ["check", "examples/checks.toml", "-k", "sigmoid"],
    ["functions"],
    ["graph", "x*2", "--x", "1"],
    ["plot", "x", "--x", "0:1:5"],
    ["--help"],
    ["--version"],
    ["eval", "--help"],
])
def test_a_full_stdout_is_one_line_and_status_4(args):
    root = Path(__file__).resolve().parents[1]
    with open("/dev/full", "wb") as full:
        result = subprocess.run([*GRADCLI, *args], input=b"x*2\nsin(x)\n", stdout=full,
                                stderr=subprocess.PIPE, timeout=120, cwd=root)
    assert result.returncode == ExitStatus.OUTPUT_FAILED == 4
    assert result.stderr.decode() == f"gradcli: cannot write to stdout: {FULL}\n"


@needs_dev_full
def test_an_output_file_that_cannot_be_written_is_named(tmp_path):
    graph = run("graph", "x*2", "--x", "1", "--format", "dot", "-o", "/dev/full")
    assert graph.returncode == 2
    assert graph.stderr.startswith(b"error: usage error: cannot write /dev/full: " + FULL.encode())
    for command in (["graph", "x*2", "--x", "1"], ["plot", "x", "--x", "0:1:5"]):
        for path in ("", str(tmp_path)):
            result = invoke(*command, "-o", path)
            assert result.exit_code == 2 and "Traceback" not in result.output
            first = result.stderr.splitlines()[0]
            assert first == ("error: usage error: -o was given an empty path" if not path else
                             f"error: usage error: cannot write {tmp_path}: it is a directory")


def test_graph_and_plot_files_are_written_whole(tmp_path):
    target = tmp_path / "g.dot"
    target.write_text("old")
    assert invoke("graph", "x*2", "--x", "1", "-o", str(target)).exit_code == 0
    assert target.read_text().startswith("digraph")
    tree = tmp_path / "g.txt"
    assert invoke("graph", "x*2", "--x", "1", "-o", str(tree)).exit_code == 0
    assert tree.read_text().startswith("#2 x*2")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# --- 3. argv that is not UTF-8 ----------------------------------------------------------------

@pytest.mark.parametrize("args", [[b"eval", b"\xff", b"--json"], [b"diff", b"\xff", b"--json"],
                                  [b"eval", b"x # caf\xe9", b"--x", b"1", b"--json"],
                                  [b"check", b"\xff.toml", b"--json"]])
def test_argv_bytes_that_are_not_utf8_still_give_one_json_record(args):
    result = subprocess.run([*(a.encode() for a in GRADCLI), *args], capture_output=True,
                            timeout=120)
    no_traceback(result)
    (line,) = result.stdout.decode("ascii").splitlines()
    record = json.loads(line)
    assert "\ufffd" in json.dumps(record, ensure_ascii=False)
    assert result.returncode in (0, 2)


def test_records_read_undecodable_argv_bytes_as_replacement_characters():
    error = UsageError("bad \udcff")
    text = dumps(error_record(error, "x \udce2\udc9c\udc93 \udcff"))
    record = json.loads(text)
    assert record["expression"] == "x \u2713 \ufffd" and record["error"]["message"] == "bad \ufffd"
    assert text.isascii()


# --- 4. an encoding without ✓ -------------------------------------------------------------------

@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"},
                                 {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}])
def test_a_stdout_that_cannot_encode_the_marks_gets_ascii(env):
    environ = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONIOENCODING", "LC_ALL", "LANG", "PYTHONUTF8")}
    environ.update({k: v for k, v in env.items() if v})
    passed = run("eval", SEED, "--x", "2", "--W", "3", "--b", "1", "--t", "8", env=environ)
    no_traceback(passed)
    assert passed.returncode == 0 and passed.stdout.isascii()
    text = passed.stdout.decode()
    assert "\nok check passed: 8 gradients agree" in text
    table = [line for line in text.split("gradients of the output")[1].splitlines()
             if line.startswith("|")]
    assert len(table) == 6
    assert len({len(line) for line in table}) == 1, table  # the ok column stays in line
    failed = run("eval", "relu(x)", "--x", "0", env=environ)
    assert failed.returncode == 1 and failed.stdout.isascii()
    assert "\nFAIL check failed:" in failed.stdout.decode()
    for args in (["graph", "x*2", "--x", "1", "--format", "tree"], ["--help"], ["functions"],
                 ["plot", "sin(x)", "--x", "0:3:20"], ["eval", "-", "--x", "1"]):
        result = run(*args, stdin=b"x*2\n", env=environ)
        assert result.returncode == 0 and result.stdout.isascii(), args
        no_traceback(result)


def test_the_stand_ins_take_a_cells_padding_and_leave_text_alone():
    _register_stand_ins()
    assert "✓ check".encode("ascii", "gradcli-ascii") == b"ok check"
    assert "| ✓  |".encode("ascii", "gradcli-ascii") == b"| ok |"
    assert "x — é".encode("ascii", "gradcli-ascii") == b"x - ?"
    assert all(value.isascii() for value in ASCII_STAND_INS.values())
    with pytest.raises(UnicodeDecodeError):
        _stand_in(UnicodeDecodeError("ascii", b"\xff", 0, 1, "no"))


# --- 5. closed descriptors --------------------------------------------------------------------

def test_a_closed_stdout_is_the_output_failed_status():
    result = shell("gradcli eval x --x 1 >&-")
    assert result.returncode == 4
    assert result.stderr == b"gradcli: cannot write to stdout: Bad file descriptor\n"


def test_a_closed_stdout_does_not_matter_to_a_command_that_writes_a_file(tmp_path):
    target = tmp_path / "g.dot"
    result = shell(f"gradcli graph x --x 1 -o {shlex.quote(str(target))} >&-")
    assert result.returncode == 0 and result.stderr == b""
    assert target.read_text().startswith("digraph")


def test_a_closed_stdin_is_no_input():
    batch = shell("gradcli eval --x 1 <&-")
    assert batch.returncode == 2 and b"no programs on stdin: stdin is closed" in batch.stderr
    no_traceback(batch)
    one = shell("gradcli eval x --x 1 <&-")
    assert one.returncode == 0 and one.stdout.startswith(b"value 1")
    program = shell("gradcli eval -f - --x 1 <&-")
    assert program.returncode == 2 and b"<stdin> is empty" in program.stderr


def test_a_closed_or_full_stderr_does_not_change_the_status():
    assert shell('gradcli eval "2x" 2>&-').returncode == 2
    assert shell('gradcli eval "x" --x 1 2>&-').returncode == 0
    assert shell('gradcli eval "1/x" --x 0 2>&-').returncode == 3
    if os.path.exists("/dev/full"):
        assert shell('gradcli eval "2x" 2>/dev/full').returncode == 2
        assert shell("gradcli eval x --x 1 --bogus 2>/dev/full").returncode == 2


# --- 6. numbers too large for an int option ----------------------------------------------------

@pytest.mark.parametrize("args", [
    ["eval", "x", "--x", "1", "--max-nodes", "99999999999999999999"],
    ["eval", "-", "--x", "1", "--max-nodes", "99999999999999999999"],
    ["diff", "x", "--max-nodes", "99999999999999999999"],
    ["graph", "x", "--x", "1", "--max-nodes", "99999999999999999999"],
    ["plot", "x", "--x", "0:1:5", "--width", "99999999999999999999"],
    ["plot", "x", "--x", "0:1:5", "--height", "99999999999999999999"],
    ["eval", "x", "--x", "1", "--order", "99999999999999999999"],
])
def test_an_int_option_too_large_is_a_usage_error(args):
    result = invoke(*args, stdin="x\n")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: usage error: invalid value for --")
    assert "99999999999999999999 is not in the range" in result.stderr


def test_plot_honours_a_width_larger_than_the_terminal():
    result = run("plot", "x", "--x", "0:1:50", "--width", "300", "--height", "10")
    lines = result.stdout.decode().splitlines()
    assert max(len(line) for line in lines) == 300 and len(lines) == 11


# --- 7. exit statuses: a reader gone, a full stderr, --json usage errors ----------------------

@pytest.mark.parametrize("args", [["--help"], ["--version"], ["eval", "--help"],
                                  ["eval", "x", "--x", "1"]])
def test_a_reader_that_is_gone_before_the_first_write_is_141(args):
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([*GRADCLI, *args], stdout=write_end, stderr=subprocess.PIPE,
                                timeout=120)
    finally:
        os.close(write_end)
    assert result.returncode == ExitStatus.READER_GONE and result.stderr == b""


@pytest.mark.parametrize(("args", "message", "hint"), [
    (["--rtol", "-1"], "invalid value for --rtol: '-1' is not a finite number >= 0",
     "see gradcli eval --help"),
    (["--bogus-option"], "no such option --bogus-option", "see gradcli eval --help"),
    (["--no-chek"], "no such option --no-chek", "did you mean --no-check?"),
    (["--hesian"], "no such option --hesian", "did you mean --hessian?"),
    (["--check-method", "centrl"],
     "invalid value for --check-method: 'centrl' is not one of 'central', 'complex', "
     "'richardson'", "did you mean central?"),
])
def test_clicks_usage_errors_are_json_records_with_json(args, message, hint):
    result = invoke("eval", "x", "--x", "1", "--json", *args)
    assert result.exit_code == 2
    record = json.loads(result.stdout)
    assert record["value"] is None and record["expression"] == ""
    assert record["error"] == {"kind": "usage", "message": message, "line": None,
                               "column": None, "hint": hint}
    assert result.stderr == f"gradcli: usage error: {message} (hint: {hint})\n"


def test_a_usage_error_of_check_with_json_is_its_report():
    result = invoke("check", "--json", "--fail-fats", "examples/checks.toml")
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["status"] == 2 and report["checks"] == []
    assert report["errors"][0]["message"] == "no such option --fail-fats"
    assert report["errors"][0]["hint"] == "did you mean --fail-fast?"


# --- 9. one error style ------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "first", "hint"), [
    (["eval", SEED, "--x", "2", "--W", "--b", "1"], "--W needs a value", "write --W VALUE"),
    (["eval", "x", "--x", "1", "--W"], "--W needs a value", "write --W VALUE"),
    (["eval", SEED, "--x", "2", "--hesian"], "no such option --hesian",
     "did you mean --hessian?"),
    (["eval", "--hesian", "x**3", "--x", "1"], "no such option --hesian",
     "did you mean --hessian?"),
    (["diff", SEED, "--wtr", "x"], "no such option --wtr", "did you mean --wrt?"),
    (["diff", SEED, "--fromat", "latex"], "no such option --fromat", "did you mean --format?"),
    (["diff", "x", "--wrt"], "--wrt needs a value", "write --wrt VALUE"),
    (["eval", "x", "--x", "1", "--rtol", "--hessian"], "--rtol needs a value", "write --rtol"),
    (["x*2", "--x", "2"], "no such command x*2",
     'to evaluate an expression: gradcli eval "x*2" --x 2'),
    (["evl", "x"], "no such command evl", "did you mean eval?"),
    (["eval", "x", "y"], "unexpected extra arguments: y", "give EXPR as one argument"),
    (["check"], "missing argument FILES", "see gradcli check --help"),
    (["eval", "x", "--x", "1", "--json=1"], "--json does not take a value", "write --json"),
    (["graph", "x*2", "--x", "1", "--json"], "no such option --json",
     "see gradcli graph --help"),
    (["--bogus"], "no such option --bogus", "see gradcli --help"),
])
def test_every_usage_error_has_gradclis_style(args, first, hint):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == f"error: usage error: {first}"
    assert lines[-1].startswith(f"  hint: {hint}")
    assert "Usage:" not in result.output and "Error:" not in result.output


def test_the_real_program_shows_clicks_errors_in_gradclis_style_too():
    result = run("eval", "x", "--x", "1", "--check-method", "secant")
    assert result.returncode == 2
    assert result.stderr.decode().startswith(
        "error: usage error: invalid value for --check-method: 'secant' is not one of")
    assert run().returncode == 2  # `gradcli` alone: the help, on stderr


# --- 8. matplotlib says nothing ---------------------------------------------------------------

def test_saving_a_plot_prints_no_warnings_even_without_a_writable_home(tmp_path):
    pytest.importorskip("matplotlib")
    env = {k: v for k, v in os.environ.items()
           if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    env["HOME"] = "/proc/no-such-home"  # cannot be created, even by root
    target = tmp_path / "p.svg"
    result = run("plot", "x*1e300", "--x", "0:1e8:100", "-o", str(target), env=env)
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    assert target.read_bytes().startswith(b"<?xml")
    big = run("plot", "sin(x)", "--x", "0:100:300000", "-o", str(tmp_path / "big.png"))
    assert big.returncode == 0 and big.stderr == b"", big.stderr
