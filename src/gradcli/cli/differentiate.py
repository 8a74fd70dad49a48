"""Derivatives as expressions, printed: what ``gradcli diff`` does after reading its options,
and what the session's ``:diff`` does with its own program (one place, so any program the
command handles, the session handles)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from gradcli.cli.base import ProgramText
from gradcli.cli.given import Given
from gradcli.cli.show import say_shadowed, show_error
from gradcli.errors import ExitStatus, GradcliError, UsageError, visible

if TYPE_CHECKING:
    from gradcli.engine.graph import Program
    from gradcli.gradcheck.derivative_check import Checked
    from gradcli.symbolic.derivatives import Derivatives


@dataclass(frozen=True)
class DiffRequest:
    """What one ``gradcli diff`` (or the session's ``:diff``) asks for, checked and typed."""

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
    session: bool = False  # the session's :diff: notes on stdout, none about --defaults


def run_diff(request: DiffRequest) -> int:
    """Everything ``gradcli diff`` does after parsing its options; returns the exit status."""
    from gradcli.language.parser import parse

    source = request.program.text
    try:
        program = parse(source, request.max_nodes, [*request.values, *(request.shapes or {})])
        request.given.check_used(program)
        say_shadowed(program, program.unbound(request.values))
        return derive(request, program)
    except GradcliError as error:
        return show_error(error, request.as_json, source, request.program.file_name)


def derive(request: DiffRequest, program: Program) -> int:
    """The derivatives of a parsed ``program`` checked, then printed: the one path of
    ``gradcli diff`` and the session's ``:diff``, for scalar and array programs alike.
    Raises the GradcliError of a program it cannot differentiate (its caller shows it)."""
    if program.outputs and not _has_array_parts(request, program):
        return _diff_outputs(request, program)  # f, g: the Jacobian's entries
    if program.arrays or request.shapes or _has_arrays(request.values):
        return _diff_arrays(request, program)
    return _diff_scalar(request, program)


def _diff_scalar(request: DiffRequest, program: Program) -> int:
    """A scalar program's derivatives: the values given (and with ``--defaults`` the
    program's own) are substituted, the others stay symbols."""
    from gradcli.symbolic.derivatives import differentiate

    derivatives = differentiate(program, request.wrt, request.order, request.values,
                                request.use_defaults, request.max_nodes)
    printed = derivatives.python() if request.fmt == "python" else None
    texts = derivatives.texts("latex" if request.fmt == "latex" else "text")
    checked = _check_scalar(request, program, derivatives, texts, printed)
    if request.as_json:
        from gradcli.output.records import diff_record, dumps

        record = diff_record(request.program.text, request.order, texts, printed,
                             derivatives.values, derivatives.kept_defaults)
        click.echo(dumps(_with_check(record, checked)))
        return ExitStatus.OK
    if printed is not None:
        click.echo(printed, nl=False)
    else:
        from gradcli.output.console import make_console
        from gradcli.output.views import derivative_view

        make_console().print(derivative_view(texts, latex=request.fmt == "latex"))
    note = None if request.session else defaults_note(derivatives)
    if note is not None:
        click.echo(note, err=True)
    _check_note(request, checked)
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


def _check_note(request: DiffRequest, checked: Checked | None) -> None:
    """The check's note: on stderr, beside what is printed; in a session, after it (a
    session's output is its stdout, as a script's: docs/interactive.md)."""
    if checked is not None:
        click.echo(f"note: {checked.note()}", err=not request.session)


def _has_arrays(values: dict[str, Any]) -> bool:
    return any(hasattr(value, "ndim") or isinstance(value, list) for value in values.values())


def _has_array_parts(request: DiffRequest, program: Any) -> bool:
    """Shapes, array values or an array op: several outputs are then differentiated on the
    array path (a program with outputs is marked ``arrays`` whether it has any or not)."""
    return bool(request.shapes) or _has_arrays(request.values) or any(
        node.op.is_array for node in program.nodes)


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
    ``--order 2`` the Hessian (docs/matrix-calculus.md). The values given (with ``--defaults``
    the program's own too) are the point the derivatives are built and checked at."""
    from gradcli.symbolic.array_diff import program_shapes
    from gradcli.symbolic.array_jacobian import has_array_output

    given = given_point(request, program)
    shapes = program_shapes(program, request.shapes or {}, given)
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
        _array_notes(request, program, checked)
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
    from gradcli.output.console import make_console
    from gradcli.output.views import derivative_view

    console = make_console()
    for label, row in (texts.items() if several else [(None, texts)]):
        console.print(derivative_view(row, latex=request.fmt == "latex", of=label))
    _array_notes(request, program, checked)
    return ExitStatus.OK


def given_point(request: DiffRequest, program: Program) -> dict[str, Any]:
    """The values an array program's derivatives are built and checked at: those given and,
    with ``--defaults``, the program's own. A value fixes its variable's shape, as ``--shape``
    does, so the two disagreeing is a UsageError naming both."""
    from gradcli.engine import arrays

    np = arrays.numpy()
    own = program.defaults if request.use_defaults else {}
    point = {name: value for name, value in {**own, **request.values}.items()
             if name in program.variables}
    for name, shape in (request.shapes or {}).items():
        if name not in point:
            continue
        has = tuple(np.shape(np.asarray(point[name], dtype=float)))
        if has != shape:
            given = request.given.spelled.get(name) if name in request.values else None
            what = f"the program's own {name}" if given is None else _short(given)
            raise UsageError(f"--shape {name}={shape_text(shape)} and {what} (shape "
                             f"{shape_text(has)}) disagree",
                             hint=f"a value gives {name}'s shape: drop --shape {name}, or give "
                                  "a value of that shape")
    return point


def shape_text(shape: tuple[int, ...]) -> str:
    """A shape as ``--shape`` reads it: ``3x2``, ``3``, ``scalar``."""
    return "x".join(map(str, shape)) or "scalar"


def _short(text: str, width: int = 60) -> str:
    """A value as written, cut in the middle to ``width``: a long array literal or path keeps
    its option and its file's name."""
    text = visible(text)
    return text if len(text) <= width else text[:width // 3] + "…" + text[-(width * 2 // 3):]


def _array_notes(request: DiffRequest, program: Program, checked: Checked | None) -> None:
    """The check's note, after what became of the program's own values (``W = [[1, 2]]``):
    an array program's derivatives keep every variable a symbol, so ``--defaults`` makes the
    program's values the point they are built and checked at."""
    own = [name for name in program.defaults
           if name in program.variables and name not in request.values]
    if own and not request.session:
        one = len(own) == 1
        listed, stay = ", ".join(own), "stays a symbol" if one else "stay symbols"
        click.echo(f"note: took the derivatives at the program's own {listed}, which {stay} "
                   "in them" if request.use_defaults else
                   f"note: the program's own {listed} {stay}; --defaults takes the derivatives "
                   f"at {'its value' if one else 'their values'}", err=True)
    _check_note(request, checked)


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
    from gradcli.output.console import make_console
    from gradcli.output.views import derivative_view

    console = make_console()
    for label, texts in rows.items():
        console.print(derivative_view(texts, latex=request.fmt == "latex", of=label))
    _check_note(request, checked)
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
