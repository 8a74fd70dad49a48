"""The Hessian's check is bounded like the gradients' check, and its size is limited."""

from __future__ import annotations

import pytest

import gradcli
from gradcli.gradcheck.check import CheckReport, GradientCheck, check_node
from gradcli.gradcheck.hessian import Checking, hessian_at
from gradcli.limits import MAX_HESSIAN_ENTRIES


def _dense(n: int) -> tuple[str, dict[str, float]]:
    """(x0 + ... + x(n-1))**3 + sum of xi**3: every entry of its Hessian is non-zero."""
    terms = " + ".join(f"x{i}" for i in range(n))
    cubes = " + ".join(f"x{i}*x{i}*x{i}" for i in range(n))
    return f"s = {terms}; s*s*s + {cubes}", {f"x{i}": 0.01 * (i + 1) for i in range(n)}


def test_a_small_hessian_is_checked_entry_by_entry_against_the_closed_form():
    source, point = _dense(4)
    result = gradcli.evaluate(source, point, order=2)
    s = sum(point.values())
    for a, row in result.hessian.matrix.items():
        for b, value in row.items():
            expected = 6 * s + (6 * point[a] if a == b else 0.0)  # d2/dadb of s^3 + a^3
            assert value == pytest.approx(expected, rel=1e-12)
    check = result.hessian.check
    assert check.ok and not check.unchecked and len(check.gradients) == 16


def test_past_the_budget_every_row_checks_its_diagonal_and_lists_the_rest_as_unchecked():
    source, point = _dense(30)
    program = gradcli.parse(source)
    gradcli.evaluate(program, point, check=False)
    checking = Checking(1e-5, 1e-8, CheckReport, GradientCheck, check_node)
    result = hessian_at(program, point, checking, budget=30 * 300)  # room for a few entries per row
    check = result.check
    checked, unchecked = set(check.gradients), set(check.unchecked)
    assert {f"x{i},x{i}" for i in range(30)} <= checked  # the diagonal always
    assert checked | unchecked == {f"x{i},x{j}" for i in range(30) for j in range(30)}
    assert not checked & unchecked and unchecked and check.ok
    assert len(result.matrix) == 30 and all(len(row) == 30 for row in result.matrix.values())


def test_a_hessian_over_the_entry_limit_is_a_usage_error_that_says_its_size():
    n = int(MAX_HESSIAN_ENTRIES**0.5) + 1
    source = " + ".join(f"x{i}" for i in range(n))
    with pytest.raises(gradcli.UsageError, match=f"{n**2:,} entries"):
        gradcli.evaluate(source, {f"x{i}": 1.0 for i in range(n)}, order=2)
