"""``gradcli diff --format latex`` writes one program's names, its statements' names and its
matrix products so that each reads one way (found by an audit: the check runs on the text form,
so an ambiguous LaTeX text was printed as checked)."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from gradcli.api import differentiate
from gradcli.cli import cli
from gradcli.symbolic.printing import LATEX, latex_notation


def latex(*args: str) -> str:
    done = CliRunner().invoke(cli, ["diff", *args, "--format", "latex"])
    assert done.exit_code == 0, done.output
    return done.stdout


def test_a_statement_is_not_named_as_a_variable_reads():
    """t1 (a statement) and t_1 (a variable) were both t_{1}."""
    out = latex("t_1*x**2 + sin(x*y)*sin(x*y)", "--wrt", "x")
    assert out == ("t_{2} = x \\cdot y \\\\\n"
                   "\\frac{\\partial f}{\\partial x} = 2 \\cdot \\left(\\cos\\left(t_{2}\\right)"
                   " \\cdot \\sin\\left(t_{2}\\right) \\cdot y + t_{1} \\cdot x\\right)\n")


def test_a_statement_avoids_a_variable_its_derivative_does_not_use():
    """d/dz = t_1 and d/dx's statement: one program, so not t_{1} either."""
    out = latex("t_1*z + sin(x*y)*sin(x*y)")
    assert "t_{2} = x \\cdot y" in out and "t_{1} = " not in out


def test_variables_that_read_alike_are_written_as_typed():
    """x1 and x_1 were both x_{1}: two identical lines."""
    out = latex("x1*x_1")
    assert out == ("\\frac{\\partial f}{\\partial \\mathrm{x1}} = \\mathrm{x\\_1}\n"
                   "\\frac{\\partial f}{\\partial \\mathrm{x\\_1}} = \\mathrm{x1}\n")
    assert len(set(out.splitlines())) == 2


def test_only_the_names_that_read_alike_change():
    out = latex("x1*x_1 + y_2*alpha1")
    assert r"\partial \mathrm{x1}}" in out and r"\partial \mathrm{x\_1}}" in out
    assert r"\partial y_{2}}" in out and r"\partial \alpha_{1}}" in out


def test_a_substituted_variable_does_not_change_how_the_others_read():
    assert latex("x1*x_1", "--x_1", "2") == "\\frac{\\partial f}{\\partial x_{1}} = 2\n"


def test_an_output_named_like_a_variable_reads_differently():
    out = latex("x1 = a*x_1; x1, a + x_1", "--wrt", "x_1")
    first = out.splitlines()[0]
    assert first == r"\frac{\partial \mathrm{x1}}{\partial \mathrm{x\_1}} = a"


def test_array_variables_that_read_alike_are_written_as_typed():
    out = latex("sum(x1*x_1)", "--shape", "x1=2", "--shape", "x_1=2")
    assert out == ("\\frac{\\partial f}{\\partial \\mathrm{x1}} = \\mathrm{x\\_1}\n"
                   "\\frac{\\partial f}{\\partial \\mathrm{x\\_1}} = \\mathrm{x1}\n")


def test_an_element_wise_product_in_a_matrix_product_is_bracketed():
    """(A*B)@C was A \\odot B C, which reads A ⊙ (B C)."""
    out = latex("sum(((A*B)@C)**2)", "--shape", "A=2x2", "--shape", "B=2x2", "--shape",
                "C=2x2", "--wrt", "C")
    assert out == ("\\frac{\\partial f}{\\partial C} = \\left(A \\odot B\\right)^\\top "
                   "\\left(2 \\cdot \\left(A \\odot B\\right) C\\right)\n")


def test_an_outer_product_in_a_product_is_bracketed():
    """outer(...)@C and outer(...)*B were 1 \\otimes 1 C and 1 \\otimes x \\odot B."""
    out = latex("sum(outer(y, x)*B@C)", "--shape", "x=2", "--shape", "y=2", "--shape", "B=2x2",
                "--shape", "C=2x2", "--wrt", "y,C")
    assert out == (r"\frac{\partial f}{\partial y} = \left(\left(\mathbf{1}_{2} \otimes "
                   r"\mathbf{1}_{2}\right) C^\top \odot B\right) x" "\n"
                   r"\frac{\partial f}{\partial C} = \left(\left(y \otimes x\right) \odot "
                   r"B\right)^\top \left(\mathbf{1}_{2} \otimes \mathbf{1}_{2}\right)" "\n")


# What these printed before names and products were made unambiguous: unchanged.
UNCHANGED = [
    (["x**2*y + sin(x*y)*sin(x*y)"],
     "t_{1} = x \\cdot y \\\\\n"
     "\\frac{\\partial f}{\\partial x} = 2 \\cdot y \\cdot \\left(\\cos\\left(t_{1}\\right) "
     "\\cdot \\sin\\left(t_{1}\\right) + x\\right)\n"
     "t_{1} = x \\cdot y \\\\\n"
     "\\frac{\\partial f}{\\partial y} = x \\cdot \\left(2 \\cdot \\cos\\left(t_{1}\\right) "
     "\\cdot \\sin\\left(t_{1}\\right) + x\\right)\n"),
    (["beta1*x_1 + alpha*exp(x_1)"],
     "\\frac{\\partial f}{\\partial \\beta_{1}} = x_{1}\n"
     "\\frac{\\partial f}{\\partial x_{1}} = \\alpha \\cdot \\exp\\left(x_{1}\\right) + "
     "\\beta_{1}\n"
     "\\frac{\\partial f}{\\partial \\alpha} = \\exp\\left(x_{1}\\right)\n"),
    (["x1*x2 + t1*x1"],
     "\\frac{\\partial f}{\\partial x_{1}} = t_{1} + x_{2}\n"
     "\\frac{\\partial f}{\\partial x_{2}} = x_{1}\n"
     "\\frac{\\partial f}{\\partial t_{1}} = x_{1}\n"),
    (["f = a*2; my_out = sin(x_1); f, my_out, x_1 + a"],
     "\\frac{\\partial f}{\\partial a} = 2\n"
     "\\frac{\\partial f}{\\partial x_{1}} = 0\n"
     "\\frac{\\partial \\mathrm{my\\_out}}{\\partial a} = 0\n"
     "\\frac{\\partial \\mathrm{my\\_out}}{\\partial x_{1}} = \\cos\\left(x_{1}\\right)\n"
     "\\frac{\\partial (x\\_1 + a)}{\\partial a} = 1\n"
     "\\frac{\\partial (x\\_1 + a)}{\\partial x_{1}} = 1\n"),
    (["sum((W@x + b - t)**2)", "--shape", "W=3x2", "--shape", "x=2", "--shape", "b=3",
      "--shape", "t=3"],
     "\\frac{\\partial f}{\\partial W} = \\left(2 \\cdot \\left(W x + b - t\\right)\\right) "
     "\\otimes x\n"
     "\\frac{\\partial f}{\\partial x} = W^\\top \\left(2 \\cdot \\left(W x + b - t\\right)"
     "\\right)\n"
     "\\frac{\\partial f}{\\partial b} = 2 \\cdot \\left(W x + b - t\\right)\n"
     "\\frac{\\partial f}{\\partial t} = \\left(-2\\right) \\cdot \\left(W x + b - t\\right)\n"),
    (["sum(x_0[0:2]*y_val[1:3]) + sum(W_in@x_0) + sum([1, 2, 3]*x_0)", "--shape", "x_0=3",
      "--shape", "y_val=3", "--shape", "W_in=2x3"],
     "\\frac{\\partial f}{\\partial x_{0}} = \\begin{bmatrix} 1 & 2 & 3 \\end{bmatrix} + "
     "\\mathrm{W\\_in}^\\top \\mathbf{1}_{2} + \\begin{bmatrix} 1 & 0 \\\\ 0 & 1 \\\\ 0 & 0 "
     "\\end{bmatrix} {\\mathrm{y\\_val}}_{1:3}\n"
     "\\frac{\\partial f}{\\partial \\mathrm{y\\_val}} = \\begin{bmatrix} 0 & 0 \\\\ 1 & 0 "
     "\\\\ 0 & 1 \\end{bmatrix} {x_{0}}_{0:2}\n"
     "\\frac{\\partial f}{\\partial \\mathrm{W\\_in}} = \\mathbf{1}_{2} \\otimes x_{0}\n"),
    (["softmax(x)", "--shape", "x=3"],
     "\\frac{\\partial (softmax(x))}{\\partial x} = I_{3} \\odot \\operatorname{softmax}"
     "\\left(x\\right) - \\operatorname{softmax}\\left(x\\right) \\otimes "
     "\\operatorname{softmax}\\left(x\\right)\n"),
    (["sum(x**3)", "--shape", "x=3", "--order", "2"],
     "\\frac{\\partial^{2} f}{\\partial x \\partial x} = 6 \\cdot I_{3} \\odot x\n"),
]


@pytest.mark.parametrize(("args", "expected"), UNCHANGED)
def test_programs_without_names_that_read_alike_print_as_before(args, expected):
    assert latex(*args) == expected


def test_the_notation_is_the_usual_one_unless_names_read_alike():
    assert latex_notation(["x1", "x_2", "t_1", "alpha", "W_in"]) is LATEX
    notation = latex_notation(["x1", "x_1", "y1"])
    assert [notation.name(n) for n in ("x1", "x_1", "y1")] == [
        r"\mathrm{x1}", r"\mathrm{x\_1}", "y_{1}"]
    names = ["a1", "a_1", "a__1", "a1_1", "a_1_1", "b"]
    forms = [latex_notation(names).name(name) for name in names]
    assert len(set(forms)) == len(names)


def test_the_python_api_writes_its_latex_unambiguously_too():
    texts = differentiate("x1*x_1 + t_1*sin(x1*x_1)**2").texts("latex")
    assert not any(re.search(r"t_\{1\} = ", text) for text in texts.values())
    assert r"\mathrm{x1}" in texts["x_1"] and r"\mathrm{x\_1}" in texts["x1"]
