"""What ``gradcli eval`` shows of one program: its tables and verdicts, and derivatives as text
(renderables only: the CLI prints them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradcli.engine.notation import derivative_label
from gradcli.gradcheck.evaluation import FreeResult, Result
from gradcli.output.nodes import gradient_table, hessian_table, hvp_table, node_table
from gradcli.output.tables import Column, FittedTable
from gradcli.output.text import Text
from gradcli.output.values import checked_digits, number_text
from gradcli.output.verdicts import SKIPPED, gradient_verdict, hessian_verdict

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import RenderableType

    from gradcli.symbolic.printing import LatexNotation

FREE_HINT = "give them values for numbers; --strict makes this an error"


def result_view(result: Result | FreeResult, plain: bool = False,
                digits: int | None = None, full: bool = False,
                free_hint: str = FREE_HINT) -> RenderableType:
    """The node table, the gradient table and the check verdict of one program; then its
    Hessian and H·v with their verdicts, when asked. ``digits``: significant digits (None:
    every number in full); ``full``: every element of large arrays; ``free_hint``: how to give
    free variables values where the result is shown."""
    from rich.console import Group

    digits = checked_digits(digits)
    if isinstance(result, FreeResult):
        return free_view(result, plain, digits, free_hint)
    if not isinstance(result, Result):  # several outputs or an array output: a Jacobian
        from gradcli.output.jacobian_views import jacobian_view

        return jacobian_view(result, plain, digits, full)
    return Group(*result_parts(result, plain, digits, full))


def result_parts(result: Result, plain: bool = False, digits: int | None = None,
                 full: bool = False) -> list[FittedTable | Text]:
    """The pieces of ``result_view`` of a ``Result`` (``output.plain`` prints them)."""
    digits = checked_digits(digits)
    arrays = result.program.arrays
    seen: dict[int, tuple[Any, str]] = {}  # the inputs' arrays are in both tables
    parts: list[FittedTable | Text] = [node_table(result, plain, digits, full, seen)]
    if result.program.variables:  # 2*3 has no gradients: no empty table of them
        parts.append(gradient_table(result, plain, digits, full, seen))
    parts.append(gradient_verdict(result.check, arrays))
    if result.hessian is not None:
        parts += [Text(""), hessian_table(result, plain, digits, full)]
        blocks = ("Hessian block", "Hessian blocks") if arrays else None
        parts.append(hessian_verdict(result.hessian.check, of=blocks))
    if result.hvp is not None:
        parts += [Text(""), hvp_table(result, plain, digits, full),
                  hessian_verdict(result.hvp.check, ("entry of H·v", "entries of H·v"))]
    return parts


def derivative_view(texts: dict, latex: bool = False, of: str | None = None,
                    names: Sequence[str] = ()) -> Text:
    """One line per derivative: ``d/dx = ...``, ``d2/dx dy = ...`` (or LaTeX's partials);
    ``of`` names the output (``df/dx``) of a program with several. LaTeX writes the program's
    ``names`` (its variables and outputs, ``Diff.names``) as its formulas do: unlike each
    other (x1 and x_1)."""
    from gradcli.symbolic.printing import LATEX_LINE_BREAK, latex_notation

    notation = latex_notation(names) if latex else None

    text = Text()
    lines: list[tuple[tuple[str, ...], Any]] = [((), texts)]
    while any(isinstance(value, dict) for _, value in lines):  # one level per order
        lines = [((*path, name), inner) for path, level in lines for name, inner in level.items()]
    for path, expression in lines:
        if text:
            text.append("\n")
        label = _derivative_label(path, of, notation)
        if latex:  # statements (t_{1} = ...) on their own lines, the derivative last
            *statements, expression = expression.split(LATEX_LINE_BREAK)
            text.append("".join(line + LATEX_LINE_BREAK for line in statements))
        text.append(label, style="bold")
        # A program with statements (t1 = ...; ...) follows a colon, so that it reads as one.
        text.append(": " if not latex and "; " in expression else " = ")
        text.append(expression)
    return text


def _derivative_label(path: tuple[str, ...], of: str | None = None,
                      notation: LatexNotation | None = None) -> str:
    """The text label, or with a ``notation`` the LaTeX one, names as its formulas write them
    (\\beta)."""
    if notation is None:
        return derivative_label(path, of)
    power = "" if len(path) == 1 else f"^{{{len(path)}}}"
    below = " ".join(rf"\partial {notation.name(name)}" for name in path)
    return rf"\frac{{\partial{power} {_latex_output(of, notation)}}}{{{below}}}"


def _latex_output(of: str | None, notation: LatexNotation) -> str:
    r"""An output in a LaTeX label: its name as formulas write names (my_out: \mathrm{my\_out}),
    an expression in parentheses as typed ((sin(x))), its TeX specials escaped (x_0: x\_0)."""
    if of is None:
        return "f"
    if of.isidentifier():
        return notation.name(of)
    escaped = "".join(_TEX_SPECIALS.get(character, character) for character in of)
    return f"({escaped})"


_TEX_SPECIALS = {"\\": r"\textbackslash{}", "_": r"\_", "#": r"\#", "%": r"\%", "&": r"\&",
                 "{": r"\{", "}": r"\}", "^": r"\^{}", "~": r"\~{}", "$": r"\$"}


def free_view(result: FreeResult, plain: bool = False,
              digits: int | None = None, free_hint: str = FREE_HINT) -> RenderableType:
    """Value and gradients of a program with free variables, as expressions."""
    from rich.console import Group

    digits = checked_digits(digits)
    table = FittedTable("value " + result.value, [
        Column("variable", fold=True, head=True, style="bold"),
        Column("value", justify="right", style="cyan"),
        Column("gradient (expression)", fold=True, style="magenta")], plain)
    for name, gradient in result.gradients.items():
        bound = result.point.get(name)
        table.add_row(Text(name), Text("free" if bound is None else number_text(bound, digits)),
                      Text(gradient))
    note = Text(f"free variables: {', '.join(result.free)} ({free_hint})", style="dim")
    checked = [Text(SKIPPED, style="dim") if result.checked is None  # --no-check
               else Text(f"✓ {result.checked.note()}", style="green") if result.checked.confirmed
               else Text(f"note: {result.checked.note()}", style="yellow")]
    return Group(table, note, *checked, *(Text(f"note: {n.message}; {n.hint}", style="yellow")
                                          for n in result.notes))
