"""Hostile check files and what ``gradcli check`` makes of them for CI: every bad file is one
clear error with file, line and key (status 2), every report stays well-formed for its reader.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from gradcli.cli import cli
from gradcli.formulas.files import CheckFileError, load_check_files, parse_check_file
from gradcli.formulas.reports import annotation, github_annotations, junit_xml
from gradcli.formulas.run import run_checks
from gradcli.limits import MAX_CHECK_FILE_BYTES, MAX_CHECK_NODES, MAX_CHECK_POINTS


def check_file(expr: str = '"x*2"', extra: str = "", name: str = '"a"',
               points: str = "at = {x = 1}") -> str:
    return f'[[check]]\nname = {name}\nexpr = {expr}\n{points}\nvalue = 2\n{extra}'


def run(tmp_path, data: bytes, *args: str):
    path = tmp_path / "checks.toml"
    path.write_bytes(data)
    result = CliRunner().invoke(cli, ["check", str(path), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout + result.stderr, str(path)


@pytest.mark.parametrize(("data", "line", "key", "says"), [
    (check_file('"x\x00*2"').encode(), 3, None, "Illegal character"),
    (b'[[check]]\nname = "\xff"\n', None, None, "not UTF-8"),
    (b"a = " + b"[" * 100_000 + b"]" * 100_000, None, None, "nested too deeply"),
    (b"a = " + b"9" * 5000, 1, None, "the value of a is an integer of 5,000 digits"),
    # value of several outputs compared the last one alone (a bug hunt)
    (check_file('"f = x*2; g = x; f, g"').encode(), 5, "check.value",
     "is of one scalar output, and expr has several (f, g)"),
    (check_file(points="at = {x = " + "1" * 5000 + "}").encode(), 4, None,
     "the value of x is an integer of 5,000 digits, too large for a float"),
    (check_file(points='at = {x = 1}\nsweep = {y = "0:1:100000000"}', expr='"x+y"').encode()
     .replace(b"at = {x = 1}\n", b""), 4, "check.sweep.y", "must be a whole number"),
    (check_file(points='sweep = {x = "0:1:10000", y = "0:1:10000"}', expr='"x+y"').encode(), 4,
     "check.sweep", f"at most {MAX_CHECK_POINTS:,}"),
    (check_file(name='"a\\u0000b\\u001b[31m"').encode(), 2, "check.name", r"a\x00b\x1b[31m"),
    (check_file(extra='"gr\\u001b]0;t\\u0007" = 1\n').encode(), 1, r"gr\x1b]0;t\x07",
     "unknown key"),
    (check_file(points="at = {x = 1" + "0" * 400 + "}").encode(), 4, "check.at.x",
     "must be a number"),
])
def test_bad_check_files_are_one_error_with_file_line_and_key(tmp_path, data, line, key, says):
    status, output, path = run(tmp_path, data)
    assert status == 2, output
    assert "Traceback" not in output and "\x1b" not in output and "\x00" not in output
    where = path if line is None else f"{path}:{line}"
    assert f"error: {where}" + ("" if key is None else f": {key}") in output, output
    assert says in output, output


def test_crlf_line_ends_are_ordinary_toml(tmp_path):
    status, output, _ = run(tmp_path, check_file('"x*2"').replace("\n", "\r\n").encode())
    assert status == 0, output


def test_a_huge_file_is_refused_before_it_is_parsed(tmp_path):
    status, output, path = run(tmp_path, b"#" * (MAX_CHECK_FILE_BYTES + 1))
    assert status == 2 and f"{path}: the file is larger than" in output, output


def test_a_hostile_expr_is_a_limit_error_or_a_numeric_error(tmp_path):
    many = "+".join(["x"] * (MAX_CHECK_NODES + 1))  # one node per x and per +
    status, output, path = run(tmp_path, check_file(f'"{many}"').encode())
    assert status == 2 and f"{path}:3: check.expr" in output, output
    assert f"at most {MAX_CHECK_NODES:,} nodes" in output and "--max-nodes" not in output
    status, output, path = run(tmp_path, check_file('"9**9**9"', points="at = {}").encode())
    assert status == 3 and f"{path}:3" in output and "overflow" in output, output


# --- JUnit XML -----------------------------------------------------------------------------------

HOSTILE = "a\x00b\x01\x08\x0b\x0c\x0e\x1f\x1b[31m\ud800\udfff\ufffe<&>\"']]>\r\n%::,"


def test_junit_is_well_formed_whatever_the_names_and_messages_hold():
    spec = parse_check_file(check_file('"x*3"'), "f.toml")[0]
    spec.name = spec.expr = HOSTILE
    outcomes = list(run_checks([spec]))
    error = CheckFileError(HOSTILE, file=HOSTILE, line=3, key=HOSTILE, hint=HOSTILE)
    text = junit_xml(outcomes, [error])
    root = ET.fromstring(text.encode("utf-8"))  # the stdlib parser: raises on invalid XML
    case = root.find("testsuite/testcase")
    assert case.get("name") == "a\ufffdb" + "\ufffd" * 7 + "[31m\ufffd\ufffd\ufffd<&>\"']]>\r\n%::,"
    assert case.find("failure") is not None and root.get("failures") == "1"
    assert root.get("errors") == "1"


# --- GitHub annotations --------------------------------------------------------------------------

def test_annotations_escape_per_githubs_rules():
    line = annotation("a%b\r\n:c,d.toml", 7, "t:i,t%le\n", "m%s\r\ng::x,y:z")
    assert line == ("::error file=a%25b%0D%0A%3Ac%2Cd.toml,line=7,title=t%3Ai%2Ct%25le%0A"
                    "::m%25s%0D%0Ag::x,y:z")


@pytest.mark.parametrize("payload", [
    "\n::set-output name=x::y", "\r\n::add-mask::secret", "x\n::stop-commands::tok",
    "%0A::error::forged", "::warning file=a,line=1::w",
])
def test_an_injection_cannot_start_a_second_workflow_command(payload):
    spec = parse_check_file(check_file('"x*3"'), payload)[0]
    spec.name = payload
    outcomes = list(run_checks([spec]))
    error = CheckFileError(payload, file=payload, line=1, key=payload)
    lines = github_annotations(outcomes, [error])
    assert len(lines) == 2
    for line in lines:
        assert "\n" not in line and "\r" not in line and line.startswith("::error file=")
        properties = line[len("::error "):].split("::", 1)[0]
        assert all(re.fullmatch(r"(file|line|title)=[^:,\r\n]*", p)
                   for p in properties.split(",")), line
        assert "%0A" not in payload or "%250A" in line


def test_under_github_actions_the_cli_prints_escaped_annotations(tmp_path):
    path = tmp_path / "a,b:c.toml"
    path.write_text(check_file('"x*3"'))
    result = CliRunner(env={"GITHUB_ACTIONS": "true"}).invoke(cli, ["check", str(path)])
    assert result.exit_code == 1
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"::error file={str(tmp_path).replace(':', '%3A')}/a%2Cb%3Ac.toml,")


def test_files_that_cannot_be_read_are_errors_not_crashes(tmp_path):
    specs, errors = load_check_files([str(tmp_path), "/nonexistent\n.toml"])
    assert specs == [] and len(errors) == 2
    assert all("\n" not in e.one_line() for e in errors)


def test_a_hostile_file_name_and_expr_whitespace_reach_the_terminal_escaped(tmp_path):
    path = tmp_path / "a\x1b]0;pwn\x07\nb.toml"
    path.write_text(check_file('"x*\\r\\f3"'))  # \r and \f are whitespace to the grammar
    result = CliRunner().invoke(cli, ["check", str(path)])
    assert result.exit_code == 1
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "a\\x1b]0;pwn\\x07\\nb.toml:5: value" in result.output
    assert "x*\\r\\x0c3" in result.output


@pytest.mark.parametrize("target", ["/dev/full", "/nonexistent-dir/r\n\x1b[2Jeport.xml"])
def test_an_unwritable_junit_path_is_one_status_2_line(tmp_path, target):
    path = tmp_path / "c.toml"
    path.write_text(check_file())
    result = CliRunner().invoke(cli, ["check", str(path), "--junit", target])
    assert result.exit_code == 2 and "Traceback" not in result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith("error: usage error: cannot write ") and "\x1b" not in result.stderr
