"""``gradcli diff``: derivatives as expressions in gradcli's own language."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from gradcli.cli.arguments import MAX_NODES_OPTION, BindingCommand, file_option, given_values
from gradcli.cli.base import cli
from gradcli.cli.completion import complete_wrt
from gradcli.cli.given import Given
from gradcli.cli.program_text import ProgramText
from gradcli.cli.show import say_shadowed, show_error
from gradcli.cli.values_file import values_file_options
from gradcli.errors import ExitStatus, GradcliError, UsageError, visible
from gradcli.language.values import as_point
from gradcli.limits import MAX_DIFF_SHAPE_ELEMENTS, MAX_NODES

if TYPE_CHECKING:
    from gradcli.gradcheck.derivative_check import Checked
    from gradcli.symbolic.derivatives import Derivatives

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
@click.argument("expr", required=False)
@click.option("--wrt", metavar="X,Y", shell_complete=complete_wrt,
              help="Variables to differentiate by, comma separated.")
@click.option("--order", type=click.IntRange(1, 6), default=1, show_default=True,
              help="Order of the derivatives (2 with several --wrt: the Hessian).")
@click.option("--format", "fmt", type=click.Choice(["text", "latex", "python"]), default="text",
              show_default=True, help="How derivatives are printed.")
@click.option("--set", "assignments", multiple=True, metavar="NAME=VALUE",
              help="Substitute a value for a variable (repeatable).")
@file_option("Read the program from FILE (- for stdin).")
@values_file_options
@click.option("--shape", "shapes", multiple=True, metavar="NAME=SHAPE",
              help="The shape of an array variable (3, 3x2, or scalar), for the vectorized "
                   "derivatives of an array program (repeatable; a given array value gives "
                   "its shape too).")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"expression", "order", "derivatives", "values", "kept_defaults"}.')
@click.option("--defaults", "use_defaults", is_flag=True,
              help="Substitute the program's own values (x = 2) too.")
@click.option("--max-nodes", type=click.IntRange(1, MAX_NODES_OPTION), default=MAX_NODES,
              show_default=True,
              help="Refuse a program, or derivatives, of more graph nodes (usage error).")
@click.option("--no-check", is_flag=True,
              help="Print the derivatives without comparing them with eval's engine first.")
@click.pass_context
def diff_command(ctx: click.Context, **options: Any) -> None:
    try:
        request = diff_request(ctx, **options)
    except GradcliError as error:
        ctx.exit(show_error(error, options["as_json"], options["expr"] or ""))
    ctx.exit(run_diff(request))


@dataclass(frozen=True)
class DiffRequest:
    """What one ``gradcli diff`` asks for, checked and typed."""

    program: ProgramText
    wrt: list[str] | None  # None: every variable without a value
    order: int
    values: dict[str, float]  # the point (all or some variables) the derivatives are taken at
    fmt: str  # "text", "latex" or "python"
    as_json: bool  # one JSON record (with the texts in ``fmt``; python adds its source)
    use_defaults: bool  # substitute the program's own values (x = 2) too
    max_nodes: int  # of the program and of the derivatives' graphs
    given: Given  # how the values were written: for the error about an unused one
    shapes: dict[str, tuple[int, ...]] | None = None  # --shape: an array program's shapes
    check: bool = True  # compare what is printed with eval's engine first (--no-check: not)


def diff_request(ctx: click.Context, *, expr: str | None, wrt: str | None, order: int, fmt: str,
                 assignments: tuple[str, ...], program_file: str | None, as_json: bool,
                 use_defaults: bool, max_nodes: int, shapes: tuple[str, ...] = (),
                 no_check: bool = False) -> DiffRequest:
    """The request behind click's options (keyword-only: click passes them by name)."""
    given = given_values(ctx, assignments)
    values = as_point(given.values)
    program = ProgramText.read("diff", expr, program_file, max_nodes)
    names = None if wrt is None else wrt_names(wrt)
    return DiffRequest(program, names, order, values, fmt, as_json, use_defaults, max_nodes,
                       given, _shapes(shapes), not no_check)


def wrt_names(wrt: str) -> list[str]:
    """``--wrt x,W`` as ["x", "W"]; a UsageError for an empty name (``--wrt ""``,
    ``--wrt "$A,$B"`` with B unset), which would otherwise fall back to every variable or
    drop a name in silence."""
    names = [name.strip() for name in wrt.split(",")]
    if not any(names):
        raise UsageError("--wrt names no variable",
                         hint="name them (--wrt x,y), or drop --wrt for every variable "
                              "without a value")
    if not all(names):
        raise UsageError(f"--wrt {visible(wrt)!r} has an empty name",
                         hint="separate the names by single commas: --wrt x,y")
    return names


def _shapes(texts: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """``--shape W=3x2`` as {"W": (3, 2)}."""
    if not texts:
        return {}
    from gradcli.symbolic.array_diff import read_shape

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


def run_diff(request: DiffRequest) -> int:
    """Everything ``gradcli diff`` does after parsing its options; returns the exit status."""
    from gradcli.language.parser import parse
    from gradcli.symbolic.derivatives import differentiate

    source = request.program.text
    try:
        program = parse(source, request.max_nodes, [*request.values, *(request.shapes or {})])
        request.given.check_used(program)
        say_shadowed(program, program.unbound(request.values))
        if program.outputs and not _has_array_parts(request, program):
            return _diff_outputs(request, program)  # f, g: the Jacobian's entries
        if program.arrays or request.shapes or _has_arrays(request.values):
            return _diff_arrays(request, program)
        derivatives = differentiate(program, request.wrt, request.order, request.values,
                                    request.use_defaults, request.max_nodes)
        printed = derivatives.python() if request.fmt == "python" else None
        texts = derivatives.texts("latex" if request.fmt == "latex" else "text")
        checked = _check_scalar(request, program, derivatives, texts, printed)
    except GradcliError as error:
        return show_error(error, request.as_json, source, request.program.file_name)
    if request.as_json:
        from gradcli.output.records import diff_record, dumps

        record = diff_record(source, request.order, texts, printed, derivatives.values,
                             derivatives.kept_defaults)
        click.echo(dumps(_with_check(record, checked)))
        return ExitStatus.OK
    if printed is not None:
        click.echo(printed, nl=False)
    else:
        from gradcli.output.views import derivative_view, make_console

        make_console().print(derivative_view(texts, latex=request.fmt == "latex"))
    note = defaults_note(derivatives)
    if note is not None:
        click.echo(note, err=True)
    _check_note(checked)
    return ExitStatus.OK


def _check_scalar(request: DiffRequest, program: Any, derivatives: Derivatives,
                  texts: dict[str, Any], printed: str | None) -> Checked | None:
    """The scalar derivatives (and export) compared with eval's engine; order k >= 3 with the
    orders below, each the reference of the next (gradcheck/derivative_check.py)."""
    if not request.check:
        return None
    from gradcli.gradcheck.derivative_check import DiffCheck, check
    from gradcli.symbolic.derivatives import differentiate

    if request.fmt == "latex":
        texts = derivatives.texts("text")
    levels = {order: differentiate(program, derivatives.wrt, order, None, False,
                                   request.max_nodes).texts("text")  # formulas: differenced
              for order in range(2, request.order)}
    kind = ("gradient", "hessian")[request.order - 1] if request.order <= 2 else "higher"
    return check(DiffCheck(program, {name: () for name in program.variables},
                           dict(derivatives.values), kind, texts if printed is None else {},
                           levels, printed, "scalar", list(derivatives.wrt)))


def _with_check(record: dict[str, Any], checked: Checked | None) -> dict[str, Any]:
    return {**record, "checked": None if checked is None else checked.record()}


def _check_note(checked: Checked | None) -> None:
    if checked is not None:
        click.echo(f"note: {checked.note()}", err=True)


def _has_arrays(values: dict[str, Any]) -> bool:
    return any(hasattr(value, "ndim") or isinstance(value, list) for value in values.values())


def _has_array_parts(request: DiffRequest, program: Any) -> bool:
    """Shapes, array values or an array op: several outputs are then differentiated on the
    array path (a program with outputs is marked ``arrays`` whether it has any or not)."""
    from gradcli.engine.array_ops import ArrayOp

    return bool(request.shapes) or _has_arrays(request.values) or any(
        isinstance(node.op, ArrayOp) for node in program.nodes)


def _diff_arrays(request: DiffRequest, program: Any) -> int:
    """``_diff_arrays_once``; when the check finds a short form (``prod(x)/x``) undefined where
    the program is defined, once more with the forms exact at every point."""
    from gradcli.errors import CheckError
    from gradcli.symbolic.array_diff import exact_forms

    try:
        return _diff_arrays_once(request, program)
    except CheckError as error:
        if "is not defined at" not in error.message and "nan" not in error.message:
            raise
    with exact_forms():
        return _diff_arrays_once(request, program)


def _diff_arrays_once(request: DiffRequest, program: Any) -> int:
    """``gradcli diff "sum((W@x - t)**2)" --shape W=3x2 ...``: vectorized gradients, as
    expressions with no indices; the Jacobian of an array output or of several outputs;
    ``--order 2`` the Hessian (docs/matrix-calculus.md). The values given are the point the
    derivatives are built and checked at."""
    from gradcli.symbolic.array_diff import program_shapes
    from gradcli.symbolic.array_jacobian import has_array_output

    shapes = program_shapes(program, request.shapes or {}, request.values)
    given = {name: value for name, value in request.values.items() if name in shapes}
    several = has_array_output(program, shapes, given)
    if request.order > 2 or (several and request.order != 1):
        raise UsageError("the derivatives of an array program are printed at order 1 (the "
                         "gradient, or the Jacobian of several outputs or an array output) or "
                         "2 (the Hessian of one scalar output)", hint="use --order 1 or 2")
    kind = "jacobian" if several else ("gradient", "hessian")[request.order - 1]
    source = _numpy_source(request, program, shapes, several, given)
    texts = None if source is not None else _array_texts(request, program, shapes, kind, given)
    checked = None
    if request.check:
        from gradcli.gradcheck.derivative_check import DiffCheck, check

        text_form = texts if request.fmt == "text" or texts is None else _array_texts(
            request, program, shapes, kind, given, "text")
        checked = check(DiffCheck(program, shapes, given, kind, text_form or {}, {}, source,
                                  "array" if kind == "gradient" else "blocks"))
    if source is not None and not request.as_json:
        click.echo(source, nl=False)
        _check_note(checked)
        return ExitStatus.OK
    if texts is None:
        texts = _array_texts(request, program, shapes, kind, given)
    if request.as_json:
        from gradcli.output.records import dumps

        record = {"expression": request.program.text, "order": request.order,
                  "jacobian" if several else "derivatives": texts,
                  "shapes": {name: list(shape) for name, shape in shapes.items()}}
        record = _with_check(record if source is None else {**record, "python": source},
                             checked)
        click.echo(dumps(record))
        return ExitStatus.OK
    from gradcli.output.views import derivative_view, make_console

    console = make_console()
    for label, row in (texts.items() if several else [(None, texts)]):
        console.print(derivative_view(row, latex=request.fmt == "latex", of=label))
    _check_note(checked)
    return ExitStatus.OK


def _array_texts(request: DiffRequest, program: Any, shapes: dict[str, tuple[int, ...]],
                 kind: str, given: dict[str, Any], fmt: str | None = None) -> dict[str, Any]:
    """The derivatives printed in ``fmt`` (default the request's; python: text)."""
    from gradcli.symbolic.array_diff import array_derivatives
    from gradcli.symbolic.array_jacobian import hessian_blocks, jacobian_blocks

    fmt = fmt or ("latex" if request.fmt == "latex" else "text")
    if kind == "jacobian":
        return jacobian_blocks(program, shapes, request.wrt, request.max_nodes, fmt, given)
    if kind == "hessian":
        return hessian_blocks(program, shapes, request.wrt, request.max_nodes, fmt, given)
    return array_derivatives(program, shapes, request.wrt, request.max_nodes, fmt, given)


def _numpy_source(request: DiffRequest, program: Any, shapes: dict[str, tuple[int, ...]],
                  several: bool, given: dict[str, Any]) -> str | None:
    """``--format python``: a NumPy function returning the value and gradients, the values
    and Jacobian (several outputs, an array output) or the value and Hessian (order 2)."""
    if request.fmt != "python":
        return None
    if several or request.order == 2:
        from gradcli.symbolic.array_jacobian import blocks_numpy

        return blocks_numpy(program, shapes, request.wrt, request.max_nodes,
                            1 if several else 2, given)
    from gradcli.symbolic.array_diff import to_numpy

    return to_numpy(program, shapes, request.wrt, request.max_nodes, given)


def _diff_outputs(request: DiffRequest, program: Any) -> int:
    """``gradcli diff "f = x*y; g = x + y; f, g"``: one line per entry, ``df/dx = y``."""
    from gradcli.symbolic.derivatives import jacobian_texts

    if request.order != 1 or request.fmt == "python":
        raise UsageError("a program with several outputs has a Jacobian: --order 1 with "
                         "--format text or latex",
                         hint="differentiate one output at a time for higher orders or Python")
    rows = jacobian_texts(program, request.wrt, request.values, request.use_defaults,
                          request.max_nodes, "latex" if request.fmt == "latex" else "text")
    checked = None
    if request.check:
        from gradcli.gradcheck.derivative_check import DiffCheck, check

        text_form = rows if request.fmt == "text" else jacobian_texts(
            program, request.wrt, request.values, request.use_defaults, request.max_nodes)
        given = {**(program.defaults if request.use_defaults else {}), **request.values}
        checked = check(DiffCheck(program, {name: () for name in program.variables},
                                  given, "jacobian", text_form))
    if request.as_json:
        from gradcli.output.records import dumps

        click.echo(dumps(_with_check({"expression": request.program.text, "order": 1,
                                      "jacobian": rows, "values": request.values}, checked)))
        return ExitStatus.OK
    from gradcli.output.views import derivative_view, make_console

    console = make_console()
    for label, texts in rows.items():
        console.print(derivative_view(texts, latex=request.fmt == "latex", of=label))
    _check_note(checked)
    return ExitStatus.OK


def defaults_note(derivatives: Derivatives) -> str | None:
    """What became of the program's own values (``x = 2``): kept as symbols, or substituted."""
    from gradcli.engine.notation import format_number

    def listed(values: dict[str, float]) -> str:
        return ", ".join(f"{name} = {format_number(value)}" for name, value in values.items())

    kept, used = derivatives.kept_defaults, derivatives.used_defaults
    if kept:
        verb, them = ("stays a symbol", "it") if len(kept) == 1 else ("stay symbols", "them")
        return f"note: the program's own {listed(kept)} {verb}; --defaults substitutes {them}"
    if used:
        return f"note: substituted the program's own {listed(used)}"
    return None
