"""Check files: every kind of mistake names the file, the line and the key."""

from __future__ import annotations

import pytest

from gradcli.formulas.files import CheckFileError, load_check_file, parse_check_file

GOOD = """\
rtol = 1e-6

[[check]]
name = "mse"
expr = "(x*W+b-t)**2"
at = {W = 3, b = 1, t = 8}
sweep = {x = "-5:5:11"}
gradients = {W = -4}

[[check]]
name = "sigmoid"
expr = "sigmoid(x)"
sweep.x = [-1, 0, 1]
rtol = 1e-3

[check.derivative]
x = "sigmoid(x)*(1-sigmoid(x))"
"""


def test_a_good_file_is_read_with_defaults_and_lines():
    mse, sigmoid = parse_check_file(GOOD, "good.toml")
    assert (mse.name, mse.line, mse.rtol, mse.atol) == ("mse", 3, 1e-6, 1e-8)
    assert mse.values["x"].expand() == tuple(float(v) for v in range(-5, 6))  # a Range
    assert mse.values["W"] == 3.0 and mse.gradients == {"W": -4.0}
    assert mse.line_of("gradients.W") == 8
    assert sigmoid.rtol == 1e-3 and sigmoid.values == {"x": (-1.0, 0.0, 1.0)}
    assert sigmoid.derivative["x"].text == "sigmoid(x)*(1-sigmoid(x))"
    assert sigmoid.line_of("derivative.x") == 17
    assert sigmoid.line_of("sweep.x") == 13


def _error(text: str) -> CheckFileError:
    with pytest.raises(CheckFileError) as caught:
        parse_check_file(text, "bad.toml")
    return caught.value


HEADER = '[[check]]\nname = "c"\nexpr = "x*y"\nat = {x = 1, y = 2}\n'

BAD = [
    # (text, line, key, words in the message)
    ('rtoll = 1\n' + HEADER + "value = 2\n", 1, "rtoll", "unknown key"),
    (HEADER + "valeu = 2\n", 5, "valeu", "unknown key"),
    (HEADER, 1, "check", "asserts nothing"),
    (HEADER + 'value = 2\nfinite = "yes"\n', 6, "check.finite", "true or false"),
    (HEADER + 'gradients = {x = "2"}\n', 5, "check.gradients.x", "must be a number"),
    (HEADER + "gradients = {z = 2}\n", 5, "check.gradients.z", "no variable z"),
    (HEADER + "derivative = {x = true}\n", 5, "check.derivative.x",
     "finite number or an expression string"),
    (HEADER + 'derivative = {x = "2*q"}\n', 5, "check.derivative.x", "uses q"),
    (HEADER + 'derivative = {x = "2*)"}\n', 5, "check.derivative.x", "parse error"),
    (HEADER + "value = 2\nrtol = -1\n", 6, "check.rtol", ">= 0"),
    (HEADER + "value = nan\n", 5, "check.value", "a finite number or an expression"),
    ('[[check]]\nname = "c"\nexpr = "x*"\nvalue = 1\n', 3, "check.expr", "parse error"),
    ('[[check]]\nname = "c"\nexpr = "x*y"\nat = {x = 1}\nvalue = 1\n', 3, "check.expr",
     "no value for y"),
    ('[[check]]\nname = "c"\nexpr = "x"\nat = {x = "1"}\nvalue = 1\n', 4, "check.at.x",
     "must be a number"),
    ('[[check]]\nname = "c"\nexpr = "x"\nat = {x = "x.txt"}\nvalue = 1\n', 4, "check.at.x",
     "must be a number, an array or an array file (.npy, .npz, .csv) beside the check file"),
    ('[[check]]\nname = "c"\nexpr = "x"\nsweep = {x = "1:2"}\nvalue = 1\n', 4,
     "check.sweep.x", "cannot read the range"),
    ('[[check]]\nname = "c"\nexpr = "x"\nsweep = {x = [1, "a"]}\nvalue = 1\n', 4,
     "check.sweep.x", "range"),
    ('[[check]]\nname = "c"\nexpr = "x"\nat = {x = 1}\n\nsweep = {x = "1,2"}\nvalue = 1\n', 6,
     "check.sweep.x", "both at and sweep"),
    ('[[check]]\nexpr = "x"\nat = {x = 1}\nvalue = 1\n', 1, "check.name", "has no name"),
    ('[[check]]\nname = 3\nexpr = "x"\nat = {x = 1}\nvalue = 1\n', 2, "check.name",
     "non-empty string"),
    (HEADER + "value = 2\n\n" + HEADER + "value = 2\n", 8, "name", "a second check named"),
    ("rtol = 1\n", None, "check", "no checks"),  # a missing key has no line
    (HEADER + "value = = 2\n", 5, None, "not valid TOML"),
    # an expected array for a scalar expr: its own key (a helper found "this one has arrays"
    # said at the expr's line, after the run had started)
    (HEADER + 'value = "[1, 2]"\n', 5, "check.value", "is an array ([1, 2])"),
    (HEADER + 'derivative = {x = "ones(2)*y"}\n', 5, "check.derivative.x", "is an array"),
]


@pytest.mark.parametrize(("text", "line", "key", "words"), BAD)
def test_bad_files_name_file_line_and_key(text, line, key, words):
    error = _error(text)
    assert (error.file, error.line, error.key) == ("bad.toml", line, key)
    message = error.one_line()
    assert words in message
    where = "bad.toml" if line is None else f"bad.toml:{line}"
    assert message.startswith(where + ("" if key is None else f": {key}"))
    assert error.status == 2


def test_a_derivative_given_as_a_number_is_that_constant_expression():
    """derivative = {y = 1} for x*y was refused ("must be an expression string"): a number is
    an expression (found by a helper)."""
    spec = parse_check_file(HEADER.replace("x*y", "2*x + y") + "derivative = {x = 2, y = 1}\n",
                            "good.toml")[0]
    assert {name: e.text for name, e in spec.derivative.items()} == {"x": "2", "y": "1"}


def test_keys_found_in_the_right_check_block():
    text = (HEADER + "value = 2\n\n" + HEADER.replace('"c"', '"d"') + "gradients = {x = 2}\n"
            + "value = 2\n" + "extra = 1\n")
    error = _error(text)
    assert (error.line, error.key) == (13, "extra")


def test_unreadable_files(tmp_path):
    with pytest.raises(CheckFileError, match="cannot read the file"):
        load_check_file(str(tmp_path / "missing.toml"))
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(CheckFileError, match="not UTF-8"):
        load_check_file(str(binary))


@pytest.mark.parametrize(("text", "hint"), [
    (HEADER + 'value = 2\nfinite = "yes"\n', "a TOML boolean, without quotes: finite = true"),
    (HEADER + 'value = 2\nrtol = "1e-3"\n', "a TOML number, without quotes: rtol = 1e-6"),
    ('[[check]]\nname = "c"\nexpr = "x"\nat = {x = 1}\n\nsweep = {x = "1,2"}\nvalue = 1\n',
     "a variable is held at a point (at) or swept (sweep): give x in one of them"),
    (HEADER + 'derivative = {x = "2*q"}\n', "an expected expression uses expr's variables: x, y"),
    ('[[check]]\nname = "c"\nexpr = "x"\nsweep = {x = {a = 1}}\nvalue = 1\n',
     'e.g. x = "-4:4:9" or x = [0, 0.5, 1]'),
    ('[[check]]\nname = ""\nexpr = "x"\nat = {x = 1}\nvalue = 1\n',
     'a TOML string, in quotes: name = "..."'),
])
def test_a_mistake_in_a_check_file_says_what_to_write(text, hint):
    """Found by a helper: these said what was wrong but not what to write."""
    assert _error(text).hint == hint


def test_a_parse_error_in_an_expression_keeps_its_hint_and_caret():
    """The hint was folded into the message (JSON's hint null) and the caret dropped (a bug
    hunt): a check file's expr is a program like any other."""
    error = _error('[[check]]\nname = "c"\nexpr = "2x"\nat = {x = 1}\nvalue = 2\n')
    assert (error.line, error.key, error.hint) == (
        3, "check.expr", "did you mean 2*x? gradcli needs * between factors")
    assert error.message == ("parse error at line 1, column 2: unexpected name x; expected an "
                             "operator (+ - * / **)")
    assert (error.source_line, error.column) == ("2x", 2)
