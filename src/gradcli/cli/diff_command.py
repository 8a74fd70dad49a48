"""``gradcli diff``: derivatives as expressions in gradcli's own language."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from gradcli.cli.arguments import (
    MAX_NODES_OPTION,
    BindingCommand,
    complete_wrt,
    given_values,
    program_arguments,
)
from gradcli.cli.base import cli
from gradcli.cli.given import Given
from gradcli.cli.program_text import ProgramText
from gradcli.cli.show import show_error
from gradcli.errors import ExitStatus, GradcliError, UsageError, visible
from gradcli.language.values import as_point
from gradcli.limits import MAX_DIFF_SHAPE_ELEMENTS, MAX_NODES

if TYPE_CHECKING:
    from gradcli.engine.graph import Program
    from gradcli.gradcheck.derivative_check import Checked
    from gradcli.symbolic.diff import DiffAsk

DIFF_HELP = """Print derivatives of EXPR as expressions in gradcli's language (simplified, shared
subexpressions named once), which `gradcli eval` reads back.

\b
Values given as --NAME VALUE give the derivatives at that point, as `gradcli eval` computes
them (the same numbers, the same errors); --wrt defaults to every variable without a value.
The program's own values (x = 2; ...) stay symbols unless --defaults substitutes them; a note
on stderr says which.

\b
Examples:
  gradcli diff "(x*W+b-t)**2" --wrt x,W
  gradcli diff "x*y + sin(x)" --order 2              # the Hessian
  gradcli diff "sigmoid(w*x)" --wrt w --format python
  gradcli diff "x**2*y" --json
  gradcli diff "sum((W@x - t)**2)" --shape W=3x2 --shape x=2 --shape t=3   # arrays
  gradcli diff "f = x*y; g = x + y; f, g"            # a Jacobian
  gradcli diff "softmax(x)" --shape x=3              # an array output's Jacobian
  gradcli diff "sum(x**3)" --shape x=3 --order 2     # an array program's Hessian

\b
Before printing, every derivative is read back and compared with eval's engine (the
reverse-mode gradient or Jacobian; central differences of it for a Hessian) at the values
given, else at several points where the program is defined; --format python exports are
imported and called the same way. A note on stderr (--json: "checked") says how many.

\b
Exit status: 0 ok; 1 a printed derivative disagreed with eval's engine (it is not printed);
2 usage, parse or name error; 3 a substituted value outside a domain; 4 stdout could not be
written.
"""


@cli.command("diff", cls=BindingCommand, help=DIFF_HELP)
@click.option("--wrt", metavar="X,Y", shell_complete=complete_wrt,
              help="Variables to differentiate by, comma separated.")
@click.option("--order", type=click.IntRange(1, 6), default=1, show_default=True,
              help="Order of the derivatives (2 with several --wrt: the Hessian).")
@click.option("--format", "fmt", type=click.Choice(["text", "latex", "python"]), default="text",
              show_default=True, help="How derivatives are printed.")
@program_arguments("Substitute a value for a variable (repeatable).")
@click.option("--shape", "shapes", multiple=True, metavar="NAME=SHAPE",
              help="The shape of an array variable (3, 3x2, or scalar), for the vectorized "
                   "derivatives of an array program (repeatable; a given array value gives "
                   "its shape too).")
@click.option("--json", "as_json", is_flag=True,
              help='Print one JSON record: "expression", "order", "derivatives" (or the '
                   '"jacobian" of several outputs), "checked", and "values" and "kept_defaults" '
                   '(a scalar program) or "shapes" (an array program).')
@click.option("--defaults", "use_defaults", is_flag=True,
              help="Substitute the program's own values (x = 2) too (an array program's: "
                   "the point its derivatives are built and checked at).")
@click.option("--max-nodes", type=click.IntRange(1, MAX_NODES_OPTION), default=MAX_NODES,
              show_default=True,
              help="Refuse a program, or derivatives, of more graph nodes (usage error).")
@click.option("--no-check", is_flag=True,
              help="Print the derivatives without comparing them with eval's engine first.")
@click.pass_context
def diff_command(ctx: click.Context, *, expr: str | None, wrt: str | None, order: int, fmt: str,
                 assignments: tuple[str, ...], program_file: str | None, as_json: bool,
                 use_defaults: bool, max_nodes: int, shapes: tuple[str, ...],
                 no_check: bool) -> None:
    from gradcli.symbolic.diff import DiffAsk

    source, file_name = expr or "", ""
    try:
        given = given_values(ctx, assignments)
        values = as_point(given.values)
        text = ProgramText.read("diff", expr, program_file, max_nodes)
        ask = DiffAsk(None if wrt is None else wrt_names(wrt), order, values, fmt, use_defaults,
                      max_nodes, _shapes(shapes), texts=as_json or fmt != "python")
        request = DiffRequest(text, ask, as_json, given, not no_check)
        source, file_name = text.text, text.file_name
        program = text.parsed(given, max_nodes, ask.shapes, say_free=True)
        status = show_diff(request, program)
    except GradcliError as error:
        status = show_error(error, as_json, source, file_name)
    ctx.exit(status)


@dataclass(frozen=True)
class DiffRequest:
    """What one ``gradcli diff`` (or the session's ``:diff``) asks for, checked and typed: the
    derivatives (``ask``) and how they are shown."""

    program: ProgramText
    ask: DiffAsk
    as_json: bool  # one JSON record (with the texts in ``ask.fmt``; python adds its source)
    given: Given  # how the values were written: for the error about an unused one
    check: bool = True  # compare what is printed with eval's engine first (--no-check: not)
    session: bool = False  # the session's :diff: notes on stdout, none about --defaults


def wrt_names(wrt: str, written: str = "--wrt") -> list[str]:
    """``--wrt x,W`` (or the session's ``:diff x,W``: ``written``) as ["x", "W"]; an empty name
    (``--wrt "$A,$B"`` with B unset) is a UsageError, not every variable or a name dropped."""
    names = [name.strip() for name in wrt.split(",")]
    if not any(names):
        none = "drop --wrt" if written == "--wrt" else "name none"
        raise UsageError(f"{written} names no variable",
                         hint=f"name them ({written} x,y), or {none} for every variable "
                              "without a value")
    if not all(names):
        raise UsageError(f"{written} {visible(wrt)!r} has an empty name",
                         hint=f"separate the names by single commas: {written} x,y")
    return names


def _shapes(texts: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """``--shape W=3x2`` as {"W": (3, 2)}."""
    from gradcli.symbolic.diff import read_shape  # loaded already: the command builds a DiffAsk

    shapes = {}
    for text in texts:
        name, sign, shape = text.partition("=")
        if not sign or not name.strip().isidentifier():
            raise UsageError(f"--shape {text!r} is not NAME=SHAPE",
                             hint="write e.g. --shape W=3x2")
        if len(shape.strip()) > 40:  # more digits than any allowed size: no int of 10^6 digits
            raise UsageError(f"the shape of {name.strip()} is too large",
                             hint=_SHAPE_HINT)
        shapes[name.strip()] = read_shape(name.strip(), shape)
    elements = sum(math.prod(shape) for shape in shapes.values())
    if elements > MAX_DIFF_SHAPE_ELEMENTS:
        raise UsageError(f"the --shape inputs have {elements:,} elements, more than "
                         f"{MAX_DIFF_SHAPE_ELEMENTS:,}", hint=_SHAPE_HINT)
    return shapes


_SHAPE_HINT = ("diff builds dense Jacobians: give small shapes, or evaluate large arrays with "
               "gradcli eval")


def show_diff(request: DiffRequest, program: Program) -> int:
    """The derivatives of a parsed ``program`` checked, then printed: the one path of
    ``gradcli diff`` and the session's ``:diff``; its caller shows a GradcliError."""
    from gradcli.symbolic.diff import diff

    _refuse_other_shapes(request, program)
    found = diff(program, request.ask, _verify if request.check else None)
    if request.as_json:
        from gradcli.output.records import dumps

        checked = None if found.checked is None else found.checked.record()
        click.echo(dumps({"expression": request.program.text, **found.fields, "checked": checked}))
        return ExitStatus.OK
    if found.python is not None:
        click.echo(found.python, nl=False)
    else:
        from gradcli.output.console import make_console
        from gradcli.output.views import derivative_view

        console = make_console()
        for label, texts in found.views():
            console.print(derivative_view(texts, latex=request.ask.fmt == "latex", of=label,
                                          names=found.names))
    if found.note is not None and not request.session:
        click.echo(found.note, err=True)
    if found.checked is not None:  # in a session, after what it printed: its output is stdout
        click.echo(f"note: {found.checked.note()}", err=not request.session)
    return ExitStatus.OK


def _refuse_other_shapes(request: DiffRequest, program: Program) -> None:
    """A value (given, or with ``--defaults`` the program's own) whose shape is not its
    ``--shape`` is a UsageError naming both."""
    ask = request.ask
    if not ask.shapes:
        return
    from gradcli.engine.arrays import numpy
    from gradcli.engine.notation import shape_text

    np = numpy()
    own = program.defaults if ask.defaults else {}
    point = {**own, **ask.values}
    for name, shape in ask.shapes.items():
        if name not in point or name not in program.variables:
            continue
        has = tuple(np.shape(np.asarray(point[name], dtype=float)))
        if has != shape:
            given = request.given.spelled.get(name) if name in ask.values else None
            what = f"the program's own {name}" if given is None else _short(given)
            raise UsageError(f"--shape {name}={shape_text(shape)} and {what} (shape "
                             f"{shape_text(has)}) disagree",
                             hint=f"a value gives {name}'s shape: drop --shape {name}, or give "
                                  "a value of that shape")


def _short(text: str) -> str:
    """A value as written, cut in the middle to 60 characters (it keeps its option and file
    name)."""
    text = visible(text)
    return text if len(text) <= 60 else text[:20] + "…" + text[-40:]


def _verify(**parts: Any) -> Checked:
    """What diff is about to print, compared with eval's engine (a CheckError if it differs)."""
    from gradcli.gradcheck.derivative_check import DiffCheck, check

    return check(DiffCheck(**parts))

