"""The language: numbers, precedence, statements, names, and friendly syntax errors."""

from __future__ import annotations

import math

import pytest

import gradcli
from gradcli import GradcliNameError, ParseError, UsageError


def value(text: str, **values: float) -> float:
    return gradcli.evaluate(text, values, check=False).value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2", 2.0),
        ("2.5", 2.5),
        (".5", 0.5),
        ("1e-3", 1e-3),
        ("2.5E+2", 250.0),
        ("7.", 7.0),
        ("2**3**2", 512.0),
        ("(2**3)**2", 64.0),
        ("2^3^2", 512.0),
        ("2**-1", 0.5),
        ("-2**2", -4.0),
        ("(-2)**2", 4.0),
        ("+3 - -2", 5.0),
        ("2 + 3 * 4", 14.0),
        ("(2 + 3) * 4", 20.0),
        ("8 / 4 / 2", 1.0),
        ("10 - 4 - 3", 3.0),
        ("2 * pi", 2 * math.pi),
        ("e", math.e),
        ("atan2(1, 0)", math.pi / 2),
        ("atan2(0, -1)", math.pi),
        ("min(3, 4) + max(3, 4)", 7.0),
    ],
)
def test_numbers_and_precedence(text, expected):
    assert value(text) == pytest.approx(expected, rel=1e-15)


def test_unary_minus_binds_looser_than_power():
    assert value("-x**2", x=3.0) == -9.0
    assert value("-x^2", x=3.0) == -9.0


def test_floats_only_so_huge_powers_overflow_at_once():
    with pytest.raises(gradcli.NumericError, match="overflow"):
        value("9**9**9")


def test_statements_name_intermediate_nodes():
    result = gradcli.evaluate("u = x*W; z = u + b; err = z - t; err*err",
                              {"x": 2, "W": 3, "b": 1, "t": 8})
    labels = [row.label for row in result.node_rows()]
    assert labels == ["x", "W", "u", "b", "z", "t", "err", "err*err"]


def test_a_number_statement_declares_an_input_with_a_default():
    assert value("x = 2; y = -3; x*y") == -6.0
    assert value("x = 2; y = -3; x*y", x=5.0) == -15.0  # the command line moves the point
    result = gradcli.evaluate("x = 2; x**2")
    assert result.gradients == {"x": 4.0}


def test_newlines_and_comments_separate_statements():
    source = "# the seed\nu = x*W   # product\n\nz = u + b\nerr = z - t\nerr*err\n"
    assert value(source, x=2, W=3, b=1, t=8) == 1.0


def test_a_variable_used_twice_is_one_node():
    program = gradcli.parse("x*x + x")
    assert sum(1 for node in program.nodes if node.op.name == "var") == 1
    assert gradcli.evaluate(program, {"x": 3.0}).gradients["x"] == 7.0


def test_names_are_case_sensitive():
    assert value("X - x", X=5, x=2) == 3.0
    with pytest.raises(GradcliNameError, match="unknown function Sin"):
        gradcli.parse("Sin(x)")


@pytest.mark.parametrize(
    ("text", "line", "column", "message", "hint"),
    [
        ("2x", 1, 2, "unexpected name x", "did you mean 2*x?"),
        ("2*)", 1, 3, "unexpected ')'", "no matching '('"),
        ("(1+x", 1, 5, "unexpected end of input", "'(' is not closed"),
        ("x = ", 1, 4, "unexpected end of input", None),
        ("1 ? 2", 1, 3, "unexpected character '?'", None),
        ("x == 2", 1, 4, "unexpected '='", "no comparisons"),
        ("a = 1\nb = a +* 2\nb", 2, 8, "unexpected '*'", None),
        ("x[0]", 1, 2, "unexpected character '['", "( ) for grouping"),
    ],
)
def test_syntax_errors_say_where_and_what(text, line, column, message, hint):
    with pytest.raises(ParseError) as caught:
        gradcli.parse(text)
    error = caught.value
    assert (error.line, error.column) == (line, column)
    assert message in error.message
    assert error.source_line == text.split("\n")[line - 1]
    if hint:
        assert hint in error.hint
    assert error.status == 2 and error.kind == "parse"


def test_unknown_function_lists_the_known_ones():
    with pytest.raises(GradcliNameError) as caught:
        gradcli.parse("sinn(x)")
    assert "did you mean sin?" in caught.value.hint
    assert "softplus" in caught.value.hint
    assert caught.value.kind == "name"


def test_wrong_arity_says_how_to_call():
    with pytest.raises(GradcliNameError, match="atan2 takes 2 arguments, not 1") as caught:
        gradcli.parse("atan2(x)")
    assert "atan2(y, x)" in caught.value.hint
    with pytest.raises(GradcliNameError, match="sin takes 1 argument, not 0"):
        gradcli.parse("sin()")


def test_constants_cannot_be_assigned():
    with pytest.raises(UsageError, match="pi is a constant"):
        gradcli.parse("pi = 3; pi")
    with pytest.raises(UsageError, match="e is a constant"):
        gradcli.evaluate("x*e", {"x": 1.0, "e": 2.0})


def test_names_assigned_twice_or_used_before_assignment():
    with pytest.raises(GradcliNameError, match="assigned twice"):
        gradcli.parse("a = x; a = y; a")
    with pytest.raises(GradcliNameError, match="used before it is assigned"):
        gradcli.parse("y = x*2; x = 3; y")


def test_a_literal_too_large_for_a_float():
    with pytest.raises(ParseError, match="too large"):
        gradcli.parse("1e999 * x")


def test_empty_program_is_a_parse_error():
    with pytest.raises(ParseError, match="end of input"):
        gradcli.parse("   ")
