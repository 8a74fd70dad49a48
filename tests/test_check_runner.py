"""One check-file runner for scalars and arrays (issue 29): a check of an array program (judged
a point at a time, element by element) reports what the same check of a scalar program (a
vectorised sweep) reports -- the same findings, keys, lines, counts, messages and statuses."""

from __future__ import annotations

import pytest

from gradcli.errors import ExitStatus
from gradcli.formulas.files import parse_check_file
from gradcli.formulas.outcomes import CheckOutcome
from gradcli.formulas.reports import github_annotations, junit_xml
from gradcli.formulas.run import MAX_POINTWISE_CHECK_POINTS, run_check, run_checks

pytest.importorskip("numpy")

ARRAY_ZERO = " + sum([0, 0])"  # makes the same formula an array program (CheckSpec.arrays)


def outcome(expr: str, rest: str) -> CheckOutcome:
    (spec,) = parse_check_file(f'[[check]]\nname = "c"\nexpr = "{expr}"\n{rest}\n')
    return run_check(spec)


def summary(done: CheckOutcome) -> tuple:
    return ([(f.assertion, f.key, f.line, f.points, f.failures, f.status, f.describe())
             for f in done.findings], done.points, done.skipped, done.status)


# (expr, the rest of the check, the statuses of its findings in order): the expected values are
# closed forms (d/dx x**2 = 2x, d/dx log(x) = 1/x), written here, not taken from gradcli.
CASES = [
    ("x**2", 'sweep = {x = [1, 2, 3]}\nvalue = "x*x"\ngradients = {x = 4}',
     ["OK", "CHECK_FAILED", "OK"]),  # value, gradient (2x = 4 at x = 2 only), differences
    ("log(x)", 'sweep = {x = [-1, 2, 3]}\nvalue = "log(x)"', ["NUMERIC", "OK", "OK"]),
    ("log(x)", 'sweep = {x = [-1, 2, 3]}\nfinite = false\nvalue = "log(x)"', ["OK", "OK"]),
    ("log(x)", "sweep = {x = [-1, -2]}\nfinite = false", ["NUMERIC"]),  # every point fails
    ("log(x)", "sweep = {x = [1, 2]}\nfinite = true", ["OK", "OK"]),
    ("log(x)", 'sweep = {x = [1, 2]}\nderivative = {x = "1/x + 1e-3"}',
     ["CHECK_FAILED", "OK"]),
    # an expected expression with no value (log(0) = -inf, log(-1)) never passes (found by a
    # helper: inf <= an infinite tolerance passed, exit 0); d/dx x = 1, and x = log(x) + 1 at 1
    ("x", 'at = {x = 0}\nderivative = {x = "log(x)"}', ["CHECK_FAILED", "OK"]),
    ("x", 'sweep = {x = [-1, 0, 1]}\nvalue = "log(x) + 1"', ["CHECK_FAILED", "OK"]),
]


@pytest.mark.parametrize(("expr", "rest", "statuses"), CASES)
def test_an_array_check_reports_what_the_scalar_check_reports(expr, rest, statuses):
    scalar = outcome(expr, rest)
    assert not scalar.spec.arrays
    assert [finding.status.name for finding in scalar.findings] == statuses
    array = outcome(expr + ARRAY_ZERO, rest)
    assert array.spec.arrays
    assert summary(array) == summary(scalar)


def test_a_numeric_error_counts_every_point_and_says_the_whole_error():
    scalar = outcome("log(x)", "sweep = {x = [-1, 2, -3]}\nfinite = true")
    array = outcome("log(x)" + ARRAY_ZERO, "sweep = {x = [-1, 2, -3]}\nfinite = true")
    for done in (scalar, array):
        first = done.findings[0]
        assert (first.key, first.line, first.points, first.failures) == ("finite", 5, 3, 2)
        assert first.worst_point == {"x": -1.0}
        assert first.message.startswith("numeric error: logarithm of a non-positive number")
    assert scalar.findings[0].message == array.findings[0].message


def test_the_worst_element_of_an_array_gradient_is_named():
    done = outcome("sum(W*W)", "at = {W = [[1, 2], [3, 4]]}\ngradients = {W = [[2, 4], [6, 9]]}")
    (gradient,) = [f for f in done.findings if f.assertion == "gradient d/dW"]
    # d/dW sum(W*W) = 2W: 8 where the check says 9
    assert (gradient.expected, gradient.actual, gradient.failures) == (9.0, 8.0, 1)
    assert gradient.worst_point == {"W[1, 1]": 4.0}
    assert "expected 9, got 8" in gradient.describe()
    differences = [f for f in done.findings if f.assertion.startswith("finite differences")]
    assert [f.key for f in differences] == ["expr"] and differences[0].ok
    assert done.findings[-1] is differences[0]  # the check's own assertions come first


def test_array_checks_have_the_same_reports():
    text = ('[[check]]\nname = "a"\nexpr = "sum(W*W)"\nat = {W = [[1, 2], [3, 4]]}\n'
            'gradients = {W = [[2, 4], [6, 9]]}\n\n'
            '[[check]]\nname = "s"\nexpr = "x*x"\nsweep = {x = [1, 2]}\ngradients = {x = 3}\n')
    outcomes = list(run_checks(parse_check_file(text, "checks.toml")))
    assert [done.status for done in outcomes] == [ExitStatus.CHECK_FAILED] * 2
    lines = github_annotations(outcomes)
    assert lines[0].startswith("::error file=checks.toml,line=5,title=gradcli check a::")
    assert lines[1].startswith("::error file=checks.toml,line=11,title=gradcli check s::")
    xml = junit_xml(outcomes)
    assert xml.count('type="check failed"') == 2


def test_an_array_check_of_too_many_points_is_that_check_s_error():
    count = MAX_POINTWISE_CHECK_POINTS + 1
    text = (f'[[check]]\nname = "big"\nexpr = "sum(x*W)"\nat = {{W = [1, 2]}}\n'
            f'sweep = {{x = "0:1:{count}"}}\nfinite = true\n\n'
            '[[check]]\nname = "small"\nexpr = "x*x"\nat = {x = 3}\nvalue = 9\n')
    big, small = run_checks(parse_check_file(text))
    assert big.status == ExitStatus.USAGE and small.ok
    (error,) = big.findings
    assert f"{count:,} points" in error.message
    assert f"at most {MAX_POINTWISE_CHECK_POINTS:,}" in error.message


def test_an_expected_value_of_another_shape_names_what_it_is_compared_with():
    """It said "the gradient" for the value too (a bug hunt)."""
    for extra, words in (('value = "x"', "value has shape 2, the value scalar"),
                         ("gradients = {x = [1, 1, 1]}",
                          "gradients.x has shape 3, the gradient d/dx 2")):
        done = outcome("sum(x)", f"at = {{x = [1.0, 2.0]}}\n{extra}")
        assert any(words in f.message for f in done.findings), [f.message for f in
                                                                 done.findings]


def test_a_jacobian_finding_names_its_worst_element():
    """Found by a helper: a failing jacobian assertion named no element (worst point {}) and
    the table's "where" ended in a bare "at". d(W@x)/dx is W = [[1, 2], [3, 4]]; W' differs
    most at row 0, column 1 (expected 3, got 2): the input element x[1]."""
    at = "at = {W = [[1, 2], [3, 4]], x = [1, 1]}\n"
    done = outcome("W@x", at + 'jacobian = {"W@x" = {x = "W\'"}}')
    (jacobian,) = [f for f in done.findings if f.assertion == "jacobian d(W@x)/dx"]
    assert (jacobian.worst_point, jacobian.expected, jacobian.actual) == ({"x[1]": 1.0}, 3.0, 2.0)
    assert jacobian.describe().startswith("jacobian d(W@x)/dx at x[1] = 1: expected 3, got 2")
    right = outcome("W@x", at + 'jacobian = {"W@x" = {x = "W"}}')
    assert right.status == ExitStatus.OK
