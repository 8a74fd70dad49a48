"""The Python API's wrong arguments get errors that say what is wrong (found by a helper: raw
AttributeErrors and TypeErrors from deep inside, a text taken as one program per character,
and tolerances the command line refuses accepted here)."""

from __future__ import annotations

import math
import re

import pytest

import gradcli


def test_evaluate_lines_takes_one_text_of_several_lines():
    outcomes = list(gradcli.evaluate_lines("x*y\n\n# a note\nx", {"x": 2, "y": 3}))
    assert [(o.line, o.result.value) for o in outcomes] == [(1, 6.0), (4, 2.0)]
    for lines, words in ((b"x*y\nx", "line 1 is int, not a str"),
                         (["x*y", b"x"], "line 2 is bytes, not a str")):
        with pytest.raises(TypeError, match=words):
            list(gradcli.evaluate_lines(lines, {"x": 2, "y": 3}))


@pytest.mark.parametrize("tolerance", [{"rtol": -1}, {"atol": math.nan}, {"rtol": math.inf},
                                       {"rtol": "a"}, {"atol": True}])
def test_a_tolerance_the_command_line_refuses_is_refused(tolerance):
    (name,) = tolerance
    with pytest.raises(gradcli.UsageError, match=f"{name} is .*, not a finite number >= 0"):
        gradcli.evaluate("x*y", {"x": 1, "y": 2}, **tolerance)
    assert gradcli.evaluate("x*y", {"x": 1, "y": 2}, rtol=0, atol=0.5).check.ok


@pytest.mark.parametrize(("call", "words"), [
    (lambda: gradcli.evaluate(b"x*y", {"x": 1, "y": 2}), "a str or a parsed Program, not bytes"),
    (lambda: gradcli.evaluate(5, {}), "a str or a parsed Program, not int"),
    (lambda: gradcli.evaluate("x*y", [1, 2]), "a mapping of names to values, not list"),
    (lambda: gradcli.parse(None), "a program's text is a str, not NoneType"),
    (lambda: gradcli.differentiate(b"x", ["x"]), "a str or a parsed Program, not bytes"),
])
def test_arguments_of_the_wrong_type_are_type_errors_that_say_so(call, words):
    with pytest.raises(TypeError, match=words):
        call()


def test_a_parsed_program_is_taken_as_it_is():
    program = gradcli.parse("x**2")
    assert gradcli.evaluate(program, {"x": 3.0}).gradients == {"x": 6.0}
    assert gradcli.differentiate(program).texts() == {"x": "2*x"}


def test_diff_is_the_command_s_path_for_array_programs_too():
    """differentiate refused array programs with "gradcli diff works on scalar programs",
    though the command takes them (a bug hunt): gradcli.diff is its path. The derivatives by
    hand: d/dW sum(W@x) = ones(2) x', d/dx = W' ones(2); d/dx sum(x**2) = 2x."""
    import numpy as np

    found = gradcli.diff("sum(W@x)", shapes={"W": "2x3", "x": (3,)})
    assert found.texts == {"W": "outer(ones(2), x)", "x": "W'@ones(2)"}
    assert found.checked.points == 3
    at = gradcli.diff("sum(x**2)", values={"x": [1, 2]})
    assert at.texts == {"x": "2*x"} and at.checked.points == 1
    source = gradcli.diff("sum(W@x)", shapes={"W": (2, 3), "x": "3"}, fmt="python").python
    scope: dict = {}
    exec(compile(source, "<export>", "exec"), scope)  # gradcli's own generated code
    weights, x = np.arange(6.0).reshape(2, 3), np.array([1.0, -1.0, 2.0])
    value, gradients = scope["f"](weights, x)
    assert value == pytest.approx(float(np.sum(weights @ x)))
    np.testing.assert_allclose(gradients["W"], np.outer(np.ones(2), x))
    np.testing.assert_allclose(gradients["x"], weights.T @ np.ones(2))
    with pytest.raises(gradcli.UsageError, match="works on scalar programs") as refused:
        gradcli.differentiate("sum(x**2)", ["x"], values={"x": [1, 2]})
    assert refused.value.hint.startswith("gradcli.diff(program, values=..., shapes=...)")


@pytest.mark.parametrize(("keywords", "says"), [
    ({"fmt": "pdf"}, "no format 'pdf'"),  # it printed text in silence
    ({"order": 0}, "--order must be from 1 to 6, not 0"),  # it printed the Hessian
    ({"shapes": {"x": -1}}, "cannot read the shape '-1' of x"),
])
def test_diff_refuses_what_the_command_line_refuses(keywords, says):
    with pytest.raises(gradcli.UsageError, match=re.escape(says)):
        gradcli.diff("sum(x**2)", **{"shapes": {"x": (3,)}, **keywords})
    # a shape as a number, a tuple or the text --shape takes: the same vector
    assert gradcli.diff("sum(x**2)", shapes={"x": 3}).texts == {"x": "2*x"}
