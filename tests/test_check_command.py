"""gradcli check: every assertion kind passing and failing, reports for CI, exit statuses."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import mpmath
import pytest
from click.testing import CliRunner

from gradcli.cli import cli
from gradcli.errors import ExitStatus
from gradcli.formulas.files import parse_check_file
from gradcli.formulas.reports import annotation, escape_data, escape_property
from gradcli.formulas.run import run_check, run_checks, select

pytest.importorskip("numpy")
ROOT = Path(__file__).resolve().parent.parent


def test_a_check_file_from_stdin():
    """gradcli check - read a file named "-" ("cannot read the file"; a bug hunt)."""
    good = CliRunner().invoke(cli, ["check", "-"], input='[[check]]\nname = "c"\n'
                              'expr = "x**2"\nat = {x = 3}\nvalue = 9\n')
    assert good.exit_code == 0 and "1 check passed" in good.output, good.output
    bad = CliRunner().invoke(cli, ["check", "-"], input='[[check]]\nname = "c"\nexpr = "x*"\n')
    assert bad.exit_code == 2 and "<stdin>:3: check.expr: parse error" in bad.output, bad.output
    twice = CliRunner().invoke(cli, ["check", "-", "-"], input="")
    assert twice.exit_code == 2 and "- is given more than once" in twice.output, twice.output


def outcome(body: str, defaults: str = ""):
    (spec,) = parse_check_file(f'{defaults}\n[[check]]\nname = "c"\n{body}\n', "t.toml")
    return run_check(spec)


# (body, passes) -- expected numbers are closed forms worked out by hand.
ASSERTIONS = [
    ('expr = "x*x"\nat = {x = 3}\nvalue = 9', True),
    ('expr = "x*x"\nat = {x = 3}\nvalue = 9.001', False),
    ('expr = "x*x"\nsweep = {x = "-2:2:5"}\nvalue = "x**2"', True),
    ('expr = "x*x"\nsweep = {x = "-2:2:5"}\nvalue = "x**2 + 1e-3"', False),
    ('expr = "(x*W+b-t)**2"\nat = {x = 2, W = 3, b = 1, t = 8}\n'
     'gradients = {x = -6, W = -4, b = -2, t = 2}', True),
    ('expr = "(x*W+b-t)**2"\nat = {x = 2, W = 3, b = 1, t = 8}\ngradients = {x = -6.1}', False),
    ('expr = "sigmoid(x)"\nsweep = {x = "-8:8:33"}\n'
     'derivative = {x = "exp(-x)/(1+exp(-x))**2"}', True),
    ('expr = "sigmoid(x)"\nsweep = {x = "-8:8:33"}\nderivative = {x = "exp(-x)/(1+exp(-x))"}',
     False),
    ('expr = "sqrt(x)"\nsweep = {x = "0.5:4:8"}\nfinite = true', True),
    ('expr = "x*sin(y)"\nsweep = {x = "1:2:3", y = [0.5, 1]}\nfinite = true', True),
]


@pytest.mark.parametrize(("body", "passes"), ASSERTIONS)
def test_each_assertion_kind_passes_and_fails(body, passes):
    result = outcome(body)
    assert result.ok == passes, [f.describe() for f in result.findings]
    assert result.status == (ExitStatus.OK if passes else ExitStatus.CHECK_FAILED)


def test_a_failure_reports_the_worst_point_expected_and_actual():
    result = outcome('expr = "x**3"\nsweep = {x = "-2:2:5"}\nderivative = {x = "3*x**2 + x"}')
    (failure,) = result.failures
    assert failure.failures == 4 and failure.points == 5  # right only at x = 0
    # error |x| against tolerance ~1e-5 * 3x**2: relatively worst at x = -1 (first of +-1)
    assert failure.worst_point == {"x": -1.0}
    assert (failure.expected, failure.actual) == (2.0, 3.0)
    assert failure.line == 6  # the derivative key (line 1 holds the file-wide defaults)
    assert "at x = -1: expected 2, got 3 (error 1 > tolerance 3e-05)" in failure.describe()
    assert "(4 of 5 points fail)" in failure.describe()


def test_finite_true_fails_with_status_3_and_the_scalar_message():
    result = outcome('expr = "log(x)"\nsweep = {x = "-1:1:5"}\nfinite = true')
    assert result.status == ExitStatus.NUMERIC
    (finite,) = result.failures
    assert finite.failures == 3 and finite.worst_point == {"x": -1.0}
    assert finite.message == ("numeric error: logarithm of a non-positive number in #1 log(x), "
                              "where x = -1")


def test_numeric_errors_are_status_3_unless_finite_is_false():
    body = 'expr = "log(x)"\nsweep = {x = "-1:1:5"}\nderivative = {x = "1/x"}'
    assert outcome(body).status == ExitStatus.NUMERIC
    skipping = outcome(body + "\nfinite = false")
    assert skipping.ok and skipping.skipped == 3
    assert all(f.points == 2 for f in skipping.findings)


def test_the_finite_difference_check_always_runs():
    # relu'(0) = 0 by convention, but the central difference says 0.5: the check catches it.
    result = outcome('expr = "relu(x)"\nsweep = {x = "-1:1:3"}\nfinite = true')
    (failure,) = result.failures
    assert failure.assertion == "finite differences d/dx"
    assert failure.worst_point == {"x": 0.0} and failure.expected == pytest.approx(0.5)


def test_tolerances_per_check_and_per_file():
    body = 'expr = "x"\nat = {x = 1}\nvalue = 1.001'
    assert not outcome(body).ok
    assert outcome(body + "\nrtol = 1e-2").ok
    assert outcome(body, defaults="atol = 0.01").ok
    assert not outcome(body + "\natol = 0", defaults="atol = 0.01").ok


def test_select_and_fail_fast():
    specs = parse_check_file(
        '[[check]]\nname = "bad one"\nexpr = "x"\nat = {x = 1}\nvalue = 2\n'
        '[[check]]\nname = "good"\nexpr = "x"\nat = {x = 1}\nvalue = 1\n', "t.toml")
    assert [s.name for s in select(specs, "goo")] == ["good"]
    assert [s.name for s in select(specs, "b*")] == ["bad one"]
    assert len(list(run_checks(specs))) == 2
    assert len(list(run_checks(specs, fail_fast=True))) == 1


# --- the command ---------------------------------------------------------------------------------

BROKEN = """\
[[check]]
name = "good"
expr = "x*x"
sweep = {x = "-1:1:5"}
derivative = {x = "2*x"}

[[check]]
name = "wrong derivative"
expr = "tanh(x)"
sweep = {x = "-2:2:9"}
derivative = {x = "1 - tanh(x)"}

[[check]]
name = "log, x: 100%"
expr = "log(x)"
sweep = {x = "0:1:3"}
finite = true
"""


def check(*args, env=None):
    return CliRunner().invoke(cli, ["check", *args], env=env or {"GITHUB_ACTIONS": ""})


@pytest.fixture
def broken(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text(BROKEN)
    return str(path)


def test_the_shipped_examples_pass():
    result = check(str(ROOT / "examples" / "checks.toml"))
    assert result.exit_code == 0, result.output
    assert "11 checks passed" in result.stdout  # 6 scalar, 5 array checks


def test_the_shipped_broken_example_fails_as_the_docs_show():
    result = check(str(ROOT / "examples" / "broken.toml"))
    assert result.exit_code == 3
    assert "(9 of 9 points fail)" in result.stdout and "(4 of 10 points fail)" in result.stdout
    # sigmoid'(4) = e**-4/(1 + e**-4)**2, to the last digit (tests/test_accuracy.py: 4 ulps)
    numbers = "expected 1.9463648738625259, got 0.01766270621329112"
    assert numbers in result.stdout
    exact = mpmath.exp(-4) / (1 + mpmath.exp(-4)) ** 2
    assert abs(0.01766270621329112 - float(exact)) <= 4 * math.ulp(float(exact))
    assert numbers in (ROOT / "docs" / "check-files.md").read_text("utf-8")


@pytest.mark.parametrize(("pattern", "status"), [("good", 0), ("wrong", 1), ("log", 3),
                                                 (None, 3), ("nothing matches", 2)])
def test_exit_statuses(broken, pattern, status):
    result = check(broken, *(["-k", pattern] if pattern else []))
    assert result.exit_code == status, result.output


def test_bad_file_is_status_2_with_file_line_and_key(tmp_path, broken):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[check]]\nname = "c"\nexpr = "x"\nat = {x = 1}\nvalu = 1\n')
    result = check(broken, str(bad))
    assert result.exit_code == 2
    assert f"{bad}:5: valu: unknown key" in result.stderr
    assert "Traceback" not in result.output
    assert check(str(tmp_path / "missing.toml")).exit_code == 2
    as_json = check(str(bad), "--json")
    document = json.loads(as_json.stdout)
    assert as_json.exit_code == 2 and document["status"] == 2 and document["checks"] == []
    assert document["errors"][0]["line"] == 5 and document["errors"][0]["key"] == "valu"
    assert as_json.stderr.strip() == f"gradcli: {bad}:5: valu: unknown key in a [[check]] " \
        "(hint: known keys: name, expr, at, sweep, value, gradients, derivative, jacobian, " \
        "finite, rtol, atol)"


def test_human_output_shows_summary_and_failure_details(broken):
    out = check(broken).stdout
    assert "wrong derivative" in out and "✗ failed" in out and "✗ numeric error" in out
    assert "2 of 3 checks failed" in out
    x, expected = -2.0, 1 - math.tanh(-2.0)
    found = re.search(rf"at x = -2: expected {re.escape(repr(expected))}, got (\S+) ", out)
    assert found is not None, out
    exact = 1 / mpmath.cosh(mpmath.mpf(x)) ** 2  # tanh' = sech**2, to the last digits
    assert abs(float(found.group(1)) - float(exact)) <= 4 * math.ulp(float(exact))
    assert f"{broken}:11: derivative d/dx" in out


def test_json_document(broken):
    result = check(broken, "--json")
    document = json.loads(result.stdout)
    assert document["status"] == 3 and document["ok"] is False
    names = [c["name"] for c in document["checks"]]
    assert names == ["good", "wrong derivative", "log, x: 100%"]
    wrong = document["checks"][1]
    assert wrong["status"] == 1 and wrong["points"] == 9
    (failed,) = [f for f in wrong["findings"] if not f["ok"]]
    assert failed["key"] == "derivative.x" and failed["line"] == 11


def test_junit_xml_parses_and_counts(broken, tmp_path):
    report = tmp_path / "junit.xml"
    check(broken, "--junit", str(report))
    root = ET.parse(report).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert cases["good"].find("failure") is None and cases["good"].find("error") is None
    failure = cases["wrong derivative"].find("failure")
    assert "derivative d/dx at x = -2" in failure.get("message")
    assert cases["log, x: 100%"].find("error").get("type") == "numeric error"
    assert cases["wrong derivative"].get("line") == "7"


def test_an_unwritable_junit_path_is_a_usage_error_after_the_results(broken, tmp_path):
    result = check(broken, "--junit", str(tmp_path / "no" / "such" / "dir.xml"))
    # the checks' own status (3: a numeric error) outranks the report's 2
    assert result.exit_code == 3 and "cannot write" in result.stderr
    assert "wrong derivative" in result.stdout


def test_a_check_without_variables_is_one_point():
    result = outcome('expr = "2 + 3"\nvalue = 5')
    assert result.ok and result.points == 1


def test_junit_for_a_bad_file_has_an_error_case(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[check]]\nname = 3\n")
    report = tmp_path / "junit.xml"
    assert check(str(bad), "--junit", str(report)).exit_code == 2
    (case,) = ET.parse(report).getroot().iter("testcase")
    assert "must be a non-empty string" in case.find("error").get("message")


def test_github_annotations_only_under_github_actions(broken):
    plain = check(broken)
    assert "::error" not in plain.output
    result = check(broken, env={"GITHUB_ACTIONS": "true"})
    lines = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    assert len(lines) == 2
    assert lines[0].startswith(f"::error file={escape_property(broken)},line=11,"
                               "title=gradcli check wrong derivative::derivative d/dx at x = -2")
    assert lines[1].startswith(f"::error file={escape_property(broken)},line=17,"
                               "title=gradcli check log%2C x%3A 100%25::finite at x = 0")


def test_annotation_escaping_follows_github_rules():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert annotation("dir/f,1.toml", 3, "t: x", "m: 1, 2%") == (
        "::error file=dir/f%2C1.toml,line=3,title=t%3A x::m: 1, 2%25")


CHECK_DOCUMENT_KEYS = {"ok", "status", "checks", "errors"}
ERROR_ENTRY_KEYS = {"kind", "file", "line", "key", "message", "hint"}


def test_json_when_k_matches_nothing_is_a_check_document_with_status_2(broken):
    result = check(broken, "--json", "-k", "no such check")
    assert result.exit_code == 2
    document = json.loads(result.stdout)  # one document, shaped as every check --json output
    assert set(document) == CHECK_DOCUMENT_KEYS
    assert (document["ok"], document["status"], document["checks"]) == (False, 2, [])
    (error,) = document["errors"]
    assert set(error) == ERROR_ENTRY_KEYS
    assert (error["kind"], error["file"], error["message"]) == (
        "usage", None, "no check matches -k no such check")
    assert error["hint"] == "the checks: good, wrong derivative, log, x: 100%"
    assert result.stderr.splitlines() == [f"gradcli: usage error: {error['message']} "
                                          f"(hint: {error['hint']})"]


def test_json_when_the_junit_path_is_unwritable_is_a_check_document(broken, tmp_path):
    result = check(broken, "--json", "--junit", str(tmp_path / "no" / "dir.xml"))
    document = json.loads(result.stdout)
    assert result.exit_code == 3 and set(document) == CHECK_DOCUMENT_KEYS
    assert document["status"] == 3 and len(document["checks"]) == 3
    (error,) = document["errors"]
    assert error["kind"] == "usage" and error["message"].startswith("cannot write ")


def test_errors_of_bad_files_name_their_kind(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[check]]\nname = 3\n")
    (error,) = json.loads(check(str(bad), "--json").stdout)["errors"]
    assert set(error) == ERROR_ENTRY_KEYS and error["kind"] == "check-file"
    assert (error["file"], error["line"], error["key"]) == (str(bad), 2, "check.name")


def test_one_check_s_own_mistake_is_its_error_and_the_report_is_whole(tmp_path):
    """A check whose shapes do not fit is that check's error (issue 30): the other checks and
    files still run, and the table, JSON, JUnit file and annotations all have every check."""
    first = tmp_path / "first.toml"
    first.write_text('[[check]]\nname = "shapes"\nexpr = "sum(W@x)"\n'
                     'at = {W = [[1, 2], [3, 4]], x = [1, 2, 3]}\nfinite = true\n\n'
                     '[[check]]\nname = "square"\nexpr = "x*x"\nat = {x = 3}\nvalue = 9\n')
    second = tmp_path / "second.toml"
    second.write_text('[[check]]\nname = "sum"\nexpr = "sum(x*x)"\nat = {x = [1, 2]}\n'
                      'gradients = {x = [2, 4]}\n')
    junit = tmp_path / "report.xml"
    result = CliRunner(env={"GITHUB_ACTIONS": "true"}).invoke(
        cli, ["check", str(first), str(second), "--json", "--junit", str(junit)])
    assert result.exit_code == ExitStatus.USAGE
    report = json.loads(result.stdout)
    verdicts = {check["name"]: check["status"] for check in report["checks"]}
    assert verdicts == {"shapes": 2, "square": 0, "sum": 0}
    (shapes,) = [check for check in report["checks"] if check["name"] == "shapes"]
    (finding,) = shapes["findings"]
    assert (finding["line"], finding["assertion"]) == (3, "usage error")
    assert finding["message"] == "shape mismatch in #2 W@x: @ of shapes 2x2 and 3"
    assert "'shapes'" not in finding["message"]  # the check's name is said by its entry
    cases = {case.get("name"): case for case in ET.parse(junit).iter("testcase")}
    assert set(cases) == {"shapes", "square", "sum"}
    assert cases["shapes"].find("error").get("type") == "check error"
    assert cases["square"].find("error") is None and cases["sum"].find("failure") is None
    assert f"::error file={first},line=3,title=gradcli check shapes::usage error: shape " \
           "mismatch" in result.stderr
