"""The language: numbers, precedence, statements, names, and friendly syntax errors."""

from __future__ import annotations

import math
import re

import pytest

import gradcli
from gradcli import GradcliNameError, ParseError


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
        ("u = [1, 2", 1, 10, "expected an operator (+ - * / **) or ']'", "'[' is not closed"),
        ("x*[1, 2  # a comment", 1, 8, "or ']'", "'[' is not closed"),
        ("x = ", 1, 4, "unexpected end of input", None),
        ("1 ? 2", 1, 3, "unexpected character '?'", None),
        ("x < 2 < y", 1, 7, "unexpected '<'", "do not chain"),
        ("where(x = 2, 1, 0)", 1, 9, "unexpected '='", "to compare, write =="),
        ("x if y", 1, 7, "unexpected end of input", "with its else"),
        ("a = 1\nb = a +* 2\nb", 2, 8, "unexpected '*'", None),
        ("x{0}", 1, 2, "unexpected character '{'", "( ) for grouping"),
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


def test_unknown_function_suggests_the_nearest_one():
    with pytest.raises(GradcliNameError) as caught:
        gradcli.parse("sinn(x)")
    assert caught.value.message == "unknown function sinn"
    assert caught.value.hint == "did you mean sin? gradcli functions lists them all"
    assert caught.value.kind == "name"


def test_wrong_arity_says_how_to_call():
    with pytest.raises(GradcliNameError, match="atan2 takes 2 arguments, not 1") as caught:
        gradcli.parse("atan2(x)")
    assert "atan2(y, x)" in caught.value.hint
    with pytest.raises(GradcliNameError, match="sin takes 1 argument, not 0"):
        gradcli.parse("sin()")


@pytest.mark.parametrize(("text", "message", "hint"), [
    ("max(x, y, z)", "max takes 1 or 2 arguments, not 3", "write it as max(x, y) or max(x)"),
    ("eye(3, 3)", "eye takes 1 argument, not 2", "write it as eye(n)"),
    ("sum(x, y)", "sum takes 1 argument, not 2", "write it as sum(x)"),
])
def test_an_array_function_with_the_wrong_arguments_says_every_way_to_call_it(text, message,
                                                                               hint):
    with pytest.raises(GradcliNameError, match=re.escape(message)) as caught:
        gradcli.parse(text)
    assert caught.value.hint == hint


def test_a_constant_given_a_value_or_assigned_is_a_variable_with_a_note():
    program = gradcli.parse("pi = 3; pi*x")
    assert list(program.variables) == ["pi", "x"] and program.defaults == {"pi": 3.0}
    (note,) = program.notes
    assert (note.reading, note.message) == ("shadow", "pi is a variable, not the constant pi")
    result = gradcli.evaluate("x*e", {"x": 1.0, "e": 2.0})
    assert (result.value, result.gradients) == (2.0, {"x": 2.0, "e": 1.0})
    assert gradcli.evaluate("x*e", {"x": 1.0}).value == math.e  # not given: the constant


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


def parse_error(text: str, cls: type = ParseError):
    with pytest.raises(cls) as caught:
        gradcli.parse(text)
    error = caught.value
    assert error.status == 2
    if error.line is not None:
        assert error.source_line == text.split("\n")[error.line - 1]
    return error


# --- names that look like a constant or a function (issue 12) ----------------------------------

def test_a_name_like_a_constant_but_for_case_is_a_variable_with_a_note():
    program = gradcli.parse("2*PI*x")
    assert list(program.variables) == ["PI", "x"]  # PI may well be meant: --PI 3
    (note,) = program.notes
    assert (note.name, note.meant, note.what) == ("PI", "pi", "constant")
    assert (note.line, note.column, note.source_line) == (1, 3, "2*PI*x")
    assert note.message == "PI is a variable, not the constant pi"
    assert note.hint == ("names are case-sensitive: write pi for the constant, or give PI a "
                         "value if it is a variable")
    assert note.one_line() == f"note at line 1, column 3: {note.message} (hint: {note.hint})"
    refusal = note.error()
    assert isinstance(refusal, GradcliNameError)
    assert refusal.message == "PI has no value; did you mean the constant pi?"
    assert (refusal.line, refusal.column, refusal.source_line) == (1, 3, "2*PI*x")
    assert value("2*PI*x", PI=3.0, x=1.0) == 6.0


def test_notes_for_functions_and_only_for_free_variables_the_result_uses():
    (note,) = gradcli.parse("a = 1\nb = Exp*a + E\nb").notes[:1]
    assert (note.name, note.meant, note.what, note.line, note.column) == (
        "Exp", "exp", "function", 2, 5)
    assert "write exp(...) for the function" in note.hint
    assert [n.name for n in gradcli.parse("E*x + e + E").notes] == ["E"]  # once per name
    assert gradcli.parse("E = 3; E*x").notes == []  # the program gives E its value
    assert gradcli.parse("PI = 2; x").notes == []  # the program gives PI its value
    assert gradcli.parse("x*pi + e").notes == []


# --- a function's name without parentheses (issue 12) ------------------------------------------

def test_a_function_name_without_a_value_is_taken_for_a_call():
    with pytest.raises(GradcliNameError) as caught:
        gradcli.evaluate("x = 1; exp + x")
    error = caught.value
    assert error.message == "exp is a function: call it as exp(x)"
    assert (error.line, error.column) == (1, 8)
    assert error.hint == ("to use exp as a variable, give it a value (--exp VALUE) or assign "
                          "it (exp = ...)")
    with pytest.raises(GradcliNameError, match=re.escape("call it as atan2(y, x)")):
        gradcli.evaluate("2*atan2")
    # given a value or assigned, it is a variable (issue 25)
    assert gradcli.evaluate("x = 1; exp + x", {"exp": 2.0}).value == 3.0
    assert gradcli.evaluate("exp = 3; exp*x", {"x": 2.0}).gradients == {"exp": 2.0, "x": 3.0}


def test_a_function_written_without_parentheses():
    error = parse_error("1 + sin x")
    assert (error.line, error.column) == (1, 9)
    assert error.hint == "did you mean sin(x)? a function's argument goes in parentheses"


# --- a program without an expression to evaluate (issue 12) ------------------------------------

@pytest.mark.parametrize(
    ("text", "line", "column", "name", "example"),
    [
        ("x = 2", 1, 6, "x", "'...; x'"),
        ("f = x*y; g = x+y", 1, 17, "g", "'...; g'"),
        ("f = x*y; g = x+y ;; ", 1, 20, "g", "'...; g'"),
        ("f = x*y\ng = max(x,\n  y)  # the larger\n", 3, 5, "g", "a last line g"),
        ("x = 2 # default\n\n# the end\n", 1, 6, "x", "a last line x"),
    ],
)
def test_a_program_that_ends_with_a_statement(text, line, column, name, example):
    error = parse_error(text)
    assert error.message == (f"the program ends with the statement {name} = ..., not with an "
                             "expression to evaluate")
    assert error.hint == f"add the expression to evaluate after the statements, e.g. {example}"
    assert (error.line, error.column) == (line, column)


def test_an_expression_before_the_last_one():
    error = parse_error("x**2; x")
    assert error.message == "unexpected name x; expected the end of the program"
    assert (error.line, error.column) == (1, 7)
    assert error.hint.startswith("only the program's last part is an expression to evaluate")
    assert value("x**2;\n", x=3.0) == 9.0  # separators may follow the expression


def test_an_unfinished_statement_is_still_an_unexpected_end():
    for text in ("x = ", "x = 2; y = ", ";", "x = max(1,"):
        assert "unexpected end of input" in parse_error(text).message


# --- line breaks (issue 12) --------------------------------------------------------------------

def test_a_formula_goes_on_over_line_breaks_inside_parentheses():
    source = ("# a file\n"
              "u = (x*W   # weighted\n"
              "     + b)\n"
              "err = max(u - t,\n"
              "\n"
              "          t - u)\n"
              "(err\n"
              ")**2\n")
    assert value(source, x=2, W=3, b=1, t=8) == 1.0
    labels = [row.label for row in gradcli.evaluate(source, {"x": 2, "W": 3, "b": 1, "t": 8})
              .node_rows()]
    assert "u" in labels and "err" in labels


def test_a_backslash_at_the_end_of_a_line_continues_it():
    assert value("u = x * \\\n  y\nu + \\  \r\n 1", x=2.0, y=3.0) == 7.0


def test_a_semicolon_inside_parentheses_is_still_an_error():
    error = parse_error("(x\n;y)")
    assert error.message == "unexpected ';'; expected an operator (+ - * / **) or ')'"
    assert (error.line, error.column) == (2, 1)
    assert error.hint == ("the '(' at line 1, column 1 is not closed (inside parentheses a "
                          "formula goes on over line breaks)")


def test_errors_after_continued_lines_keep_physical_lines_and_columns():
    error = parse_error("u = (x\n  + y)\nv = u*\\\n  2z\nv")
    assert (error.line, error.column) == (4, 4)
    assert error.hint == "did you mean 2*z? gradcli needs * between factors"


def test_line_break_hints():
    error = parse_error("x +\ny")
    assert (error.line, error.column) == (1, 4)
    assert error.message.startswith("unexpected end of line")
    assert error.hint == ("the line ends the statement: to go on on the next line, end this one "
                          "with '\\' or put the formula in ( )")
    error = parse_error("f = (x +\n  2 # (\n")
    assert (error.line, error.column) == (2, 4)
    assert error.hint == ("the '(' at line 1, column 5 is not closed (inside parentheses a "
                          "formula goes on over line breaks)")
    assert parse_error("sin(x").hint == "a '(' is not closed"  # the docs' example, unchanged
    error = parse_error("x + \\")
    assert (error.line, error.column) == (1, 5)
    assert error.hint == ("a '\\' at the end of a line continues the statement on the next "
                          "line, and there is none")
    assert parse_error("x \\ + y").hint == (
        "a '\\' continues a line only at its end: nothing may follow it on that line")
    error = parse_error("x + # a comment takes the backslash too \\\n y")
    assert (error.line, error.message) == (1, "unexpected end of line; expected a number, a name, "
                                              "a function call or '('")


# --- functions gradcli spells otherwise, or lacks (issue 12) ------------------------------------

@pytest.mark.parametrize(
    ("text", "column", "hint"),
    [
        ("2*arsinh(x)", 3, "did you mean asinh? gradcli's name for arsinh is asinh"),
        ("clip_(x, 0, 1)", 1, "did you mean clip? gradcli functions lists them all"),
        ("fmod(x, 2)", 1, "gradcli has no fmod; write x - y*trunc(x/y) (the sign of x; mod(x, "
                          "y) takes the sign of y) for fmod(x, y)"),
        ("sec(x)", 1, "gradcli has no sec; write 1/cos(x) for sec(x)"),
        ("Sin(x)", 1, "did you mean sin? names are case-sensitive"),
        ("x + sqr(x)", 5, "did you mean square? gradcli's name for sqr is square"),
        ("tanhh(x)", 1, "did you mean tanh? gradcli functions lists them all"),
        ("lnn(x)", 1, "did you mean ln? gradcli functions lists them all"),
        ("qux(x)", 1, "gradcli functions lists them all; for a product write qux*(...)"),
        ("pi(x)", 1, "pi is a constant: did you mean pi*(...)?"),
    ],
)
def test_unknown_functions(text, column, hint):
    error = parse_error(text, GradcliNameError)
    assert error.message == f"unknown function {text[column - 1:].split('(')[0]}"
    assert (error.line, error.column) == (1, column)
    assert error.hint == hint


def test_log_with_a_base():
    error = parse_error("log(x, 2)", GradcliNameError)
    assert error.hint == ("write it as log(x), the natural logarithm; in base b: "
                          "log(x)/log(b), log2(x), log10(x)")


# --- characters from outside ASCII, and decimal commas (issue 12) ------------------------------

@pytest.mark.parametrize(
    ("text", "column", "hint"),
    [
        ("3*x²", 4, "write x**2 for x²: gradcli's operators are ASCII"),
        ("x⁻¹ + 1", 2, "write x**-1 for x⁻¹: gradcli's operators are ASCII"),
        ("(x+1)²", 6, "write **2 for ²: gradcli's operators are ASCII"),
        ("\u2212x", 1, "write - (U+002D) for \u2212 (U+2212 MINUS SIGN): gradcli's operators are "
                       "ASCII"),
        ("x \u2013 1", 3, "write - (U+002D) for \u2013 (U+2013 EN DASH): gradcli's operators are "
                          "ASCII"),
        ("x\u00d72", 2, "write * (U+002A) for \u00d7 (U+00D7 MULTIPLICATION SIGN): gradcli's "
                        "operators are ASCII"),
        ("x·2", 2, "write * (U+002A) for · (U+00B7 MIDDLE DOT): gradcli's operators are ASCII"),
        ("x÷2", 2, "write / (U+002F) for ÷ (U+00F7 DIVISION SIGN): gradcli's operators are "
                   "ASCII"),
        ("2\u03c0*x", 2, "write pi for \u03c0: names are ASCII"),
        ("\u221ax", 1, "write sqrt(x) for \u221ax: names are ASCII"),
        ("\u03b1*x", 1, "write alpha for \u03b1: names are ASCII letters, digits and _"),
        ("x + \u0663", 5, "write 3 for \u0663 (U+0663 ARABIC-INDIC DIGIT THREE): gradcli's "
                          "numbers are ASCII digits"),
        ("x\u00a0*\u00a02", 2, "write a plain space for U+00A0 NO-BREAK SPACE"),
        ("x*\u200b2", 3, "delete the invisible character U+200B ZERO WIDTH SPACE"),
        ("x\ufeff", 2, "delete the invisible character U+FEFF ZERO WIDTH NO-BREAK SPACE"),
        ("caf\u00e9", 4, "names are ASCII letters, digits and _; \u00e9 is U+00E9 LATIN SMALL "
                         "LETTER E WITH ACUTE"),
    ],
)
def test_non_ascii_is_refused_with_the_ascii_to_write(text, column, hint):
    """The language stays ASCII (see parser.py): each look-alike is an error naming the fix."""
    error = parse_error(text)
    assert error.message.startswith(f"unexpected character {text[column - 1]!r}")
    assert (error.line, error.column) == (1, column)
    assert error.hint == hint


def test_no_operator_look_alike_is_accepted():
    from gradcli.language.syntax_errors import _ASCII_FOR, _SUPERSCRIPTS

    for char in [*_ASCII_FOR, *_SUPERSCRIPTS]:
        with pytest.raises(ParseError, match="unexpected character"):
            gradcli.parse(f"x {char} 2")


@pytest.mark.parametrize(
    ("text", "column", "hint"),
    [
        ("1,5*x", 2, "did you mean 1.5? gradcli writes decimals with a point"),
        ("x*12,25", 5, "did you mean 12.25? gradcli writes decimals with a point"),
        ("(0,5 + x)", 3, "did you mean 0.5? gradcli writes decimals with a point"),
        ("x1,5", 3, "a ',' separates a function's arguments, as in max(x, y), or the "
                    "program's outputs, as in f, g; a number is not an output"),
        ("(x), 3 # a, b", 4, "a ',' separates a function's arguments, as in max(x, y), "
                                  "or the program's outputs, as in f, g; a number is not an "
                                  "output"),
    ],
)
def test_a_comma_outside_a_call(text, column, hint):
    error = parse_error(text)
    assert error.message.startswith("unexpected ','")
    assert (error.line, error.column) == (1, column)
    assert error.hint == hint


def test_a_comma_in_a_call_separates_arguments():
    assert value("max(1,5)") == 5.0
    assert value("max(1,5*x)", x=2.0) == 10.0


# --- where an error is, in str(error) (issue 12) ------------------------------------------------

def test_str_of_an_error_says_where():
    error = parse_error("2x")
    assert str(error) == "line 1, column 2: " + error.message
    assert error.message == "unexpected name x; expected an operator (+ - * / **)"  # unchanged
    assert error.title == "parse error at line 1, column 2"
    assert error.one_line() == ("parse error at line 1, column 2: unexpected name x; expected an "
                                "operator (+ - * / **) (hint: did you mean 2*x? gradcli needs * "
                                "between factors)")
    assert str(gradcli.UsageError("no value for x")) == "no value for x"
    assert str(gradcli.ParseError("bad", line=3)) == "line 3: bad"


# --- a byte-order mark (issue 12) ---------------------------------------------------------------

def test_a_leading_byte_order_mark_is_dropped():
    program = gradcli.parse("\ufeffx*2")
    assert program.source == "x*2"
    assert gradcli.evaluate(program, {"x": 3.0}).value == 6.0
    with pytest.raises(ParseError) as caught:
        gradcli.parse("\ufeff2x")
    assert (caught.value.line, caught.value.column, caught.value.source_line) == (1, 2, "2x")


def test_a_byte_order_mark_on_the_first_line_of_a_batch():
    (outcome,) = gradcli.evaluate_lines(["\ufeffx*2\n"], {"x": 1.0})
    assert outcome.error is None and outcome.result.value == 2.0


@pytest.mark.parametrize(("text", "expected"), [
    ("x \u2212 1", "expected an operator (+ - * / **)"),  # after a whole operand, as x 2 says
    ("2 \u00d7 x", "expected an operator (+ - * / **)"),
    ("(x $ 2)", "expected an operator (+ - * / **) or ')'"),
    ("$ 2", "expected a number, a name, a function call or '('"),  # before an operand
    ("x + $", "expected a number, a name, a function call or '('"),
])
def test_an_unexpected_character_says_what_its_place_expects(text, expected):
    """Found by a helper: every unexpected character said "expected a number, a name, ...",
    the first place's list, also after a whole operand (x \u2212 1)."""
    error = parse_error(text)
    assert error.message.startswith("unexpected character") and expected in error.message


@pytest.mark.parametrize(("text", "where"), [("(x +\n  y + 2.5)", (2, 7)),
                                             ("(x*y +\n   z)", (2, 4))])
def test_the_node_limit_at_a_name_or_number_says_where(text, where):
    """A name or number reaches the builder as its text and start, with no Token made
    (driver.py): the error it stops at still has its line and column."""
    with pytest.raises(gradcli.UsageError, match="more than 3 nodes") as caught:
        gradcli.parse(text, max_nodes=3)
    assert (caught.value.line, caught.value.column) == where


def test_a_note_on_a_later_line_says_where():
    program = gradcli.parse("y = 2\n  beta*x + PI + y", given=["beta"])
    assert [(note.name, note.line, note.column) for note in program.notes] == [
        ("beta", 2, 3), ("PI", 2, 12)]
