"""Values from outside: numbers, ranges, lists, grids."""

from __future__ import annotations

import pytest

from gradcli import UsageError
from gradcli.language.values import as_point, grid, parse_assignments, parse_value


def test_number_range_and_list():
    assert parse_value("x", "2") == 2.0
    assert parse_value("x", "-2:2:5") == (-2.0, -1.0, 0.0, 1.0, 2.0)
    assert parse_value("x", "1:1:1") == (1.0,)
    assert parse_value("x", "1, 2,5") == (1.0, 2.0, 5.0)
    values = parse_value("x", "-3:3:200")
    assert len(values) == 200 and values[0] == -3.0 and values[-1] == 3.0


@pytest.mark.parametrize("text", ["abc", "1:2", "1:2:0", "1:2:x", "1,,2", "nan", "inf", "1,inf"])
def test_bad_values_are_usage_errors(text):
    with pytest.raises(UsageError):
        parse_assignments([f"x={text}"])


def test_assignments_and_constants():
    assert parse_assignments(["x=2", "y = 1,2"]) == {"x": 2.0, "y": (1.0, 2.0)}
    assert parse_assignments(["pi=3"]) == {"pi": 3.0}  # a variable that hides the constant
    with pytest.raises(UsageError, match="cannot read the value"):
        parse_assignments(["3x=1"])


def test_grid_is_every_combination_first_name_slowest():
    names, points = grid({"x": (1.0, 2.0), "k": 5.0, "y": (0.0, 1.0, 2.0)})
    assert names == ["x", "k", "y"]
    assert len(points) == 6
    assert points[:3] == [(1.0, 5.0, 0.0), (1.0, 5.0, 1.0), (1.0, 5.0, 2.0)]


def test_as_point_refuses_sweeps():
    assert as_point({"x": 1.0}) == {"x": 1.0}
    with pytest.raises(UsageError, match="several values"):
        as_point({"x": (1.0, 2.0)})


@pytest.mark.parametrize("text", ["1_000", "\u0663", "0x10", "1e5e5", "--2"])
def test_values_are_numbers_as_the_grammar_writes_them(text):
    with pytest.raises(UsageError, match="not a number"):
        parse_value("x", text)
    assert parse_value("x", "-2.5e3") == -2500.0 and parse_value("x", "+.5") == 0.5
