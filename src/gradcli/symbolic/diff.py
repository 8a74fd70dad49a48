"""``gradcli diff``: one entry for every program, scalar or array.

``diff`` picks how a program's derivatives are built, here and nowhere else: ``differentiate``
for a scalar program (symbolic/derivatives.py), one per output for several scalar outputs, and
symbolic/jacobians.py with its NumPy export for anything with arrays in it. Before anything is
returned the caller's ``verify`` (gradcheck/derivative_check.py) compares it with ``eval``'s
engine; it receives a ``DiffCheck``'s fields as keywords.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gradcli.engine import arrays
from gradcli.engine.graph import Program, output_labels
from gradcli.engine.notation import format_point
from gradcli.errors import CheckError, UsageError
from gradcli.language.values import gives_arrays, runs_on_arrays
from gradcli.limits import MAX_NODES
from gradcli.symbolic.derivatives import (
    MAX_ORDER,
    Derivatives,
    differentiate,
    nothing_to_differentiate,
    wrt_names,
)
from gradcli.symbolic.printing import FORMATS

Verify = Callable[..., Any]  # called with DiffCheck's fields as keywords


@dataclass(frozen=True)
class DiffAsk:
    """What derivatives are asked for (the options of ``gradcli diff``)."""

    wrt: Sequence[str] | None = None  # None: every variable without a value
    order: int = 1
    values: Mapping[str, Any] = field(default_factory=dict)  # the point, all or some variables
    fmt: str = "text"  # "text", "latex" or "python"
    defaults: bool = False  # substitute the program's own values (x = 2) too
    max_nodes: int = MAX_NODES  # of the program and of the derivatives' graphs
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # --shape
    texts: bool = True  # print the texts even with --format python (--json wants both)

    def __post_init__(self) -> None:
        """What the command line's choices refuse, refused for a caller from Python too."""
        if self.fmt not in FORMATS:
            raise UsageError(f"no format {self.fmt!r}", hint=f"use one of {', '.join(FORMATS)}")
        if not 1 <= self.order <= MAX_ORDER:
            raise UsageError(f"--order must be from 1 to {MAX_ORDER}, not {self.order}")


@dataclass
class Diff:
    """The derivatives of one program, printed, with what ``verify`` said of them."""

    fields: dict[str, Any]  # the JSON record's fields after "expression" ("checked" aside)
    texts: dict[str, Any] | None  # nested one level per index, in the asked format
    labelled: bool  # ``texts`` is {output label: {name: text}}: one view per output
    python: str | None  # the --format python source
    checked: Any  # what ``verify`` returned; None when not checked
    note: str | None = None  # what became of the program's own values (x = 2)
    names: tuple[str, ...] = ()  # what LaTeX writes, each unlike the others (latex_notation)

    def views(self) -> list[tuple[str | None, dict[str, Any]]]:
        """(output label or None, texts) for each block of lines to print."""
        texts = self.texts or {}
        return list(texts.items()) if self.labelled else [(None, texts)]


def diff(program: Program, ask: DiffAsk, verify: Verify | None = None) -> Diff:
    """The derivatives ``ask`` asks for, checked by ``verify`` (None: not checked)."""
    if not program.variables:  # sum(ones(3)) as 2*3
        raise nothing_to_differentiate()
    if program.outputs and not _has_array_parts(program, ask):
        if ask.fmt != "python" or ask.order != 1:
            return _outputs(program, ask, verify)  # f, g: the Jacobian's entries
        # the NumPy export of a Jacobian is the array path's: every variable a number there
        ask = replace(ask, shapes={name: () for name in program.variables})
    if ask.shapes or runs_on_arrays(program, ask.values):
        return _arrays(program, ask, verify)
    return _scalar(program, ask, verify)


def _has_array_parts(program: Program, ask: DiffAsk) -> bool:
    """Shapes, array values (given or the program's own) or an array op: several outputs are
    then differentiated on the array path (``program.arrays`` is set for any outputs)."""
    return bool(ask.shapes) or gives_arrays(program, {**program.defaults, **ask.values}) or any(
        node.op.is_array for node in program.nodes)


# --- a scalar program ---------------------------------------------------------------------------

def _scalar(program: Program, ask: DiffAsk, verify: Verify | None) -> Diff:
    derivatives = differentiate(program, ask.wrt, ask.order, ask.values, ask.defaults,
                                ask.max_nodes)
    printed = derivatives.python() if ask.fmt == "python" else None
    names = latex_names(program, derivatives.values)
    texts = derivatives.texts("latex", names) if ask.fmt == "latex" else derivatives.texts()
    checked = None if verify is None else _check_scalar(program, ask, derivatives, texts,
                                                        printed, verify)
    fields: dict[str, Any] = {"order": ask.order, "derivatives": texts,
                              "values": derivatives.values or {},
                              "kept_defaults": derivatives.kept_defaults or {}}
    if printed is not None:
        fields["python"] = printed
    return Diff(fields, texts, False, printed, checked,
                defaults_note(derivatives.kept_defaults, derivatives.used_defaults), names)


def latex_names(program: Program, substituted: Mapping[str, Any] | Sequence[str] = (),
                labels: Sequence[str] = ()) -> tuple[str, ...]:
    """The names a LaTeX view of ``program``'s derivatives writes: its variables not
    ``substituted`` by values, and the outputs' names among their ``labels`` (f, not W@x)."""
    return (*(name for name in program.variables if name not in substituted),
            *(label for label in labels if label.isidentifier()))


def _check_scalar(program: Program, ask: DiffAsk, derivatives: Derivatives,
                  texts: dict[str, Any], printed: str | None, verify: Verify) -> Any:
    """The scalar derivatives (and export) compared with eval's engine; order k >= 3 with the
    orders below, each the reference of the next (gradcheck/derivative_check.py)."""
    if ask.fmt == "latex":
        texts = derivatives.texts("text")
    levels = {order: differentiate(program, derivatives.wrt, order, None, False,
                                   ask.max_nodes).texts("text")  # formulas: differenced
              for order in range(2, ask.order)}
    kind = ("gradient", "hessian")[ask.order - 1] if ask.order <= 2 else "higher"
    return verify(program=program, shapes={name: () for name in program.variables},
                  given=dict(derivatives.values), kind=kind,
                  texts=texts if printed is None else {}, levels=levels, python=printed,
                  python_kind="scalar", wrt=list(derivatives.wrt))


def defaults_note(kept: Mapping[str, float], used: Mapping[str, float]) -> str | None:
    """What became of the program's own values (``x = 2``): ``kept`` as symbols, or ``used``
    (substituted)."""
    if kept:
        verb, them = ("stays a symbol", "it") if len(kept) == 1 else ("stay symbols", "them")
        return f"note: the program's own {format_point(kept)} {verb}; --defaults substitutes {them}"
    if used:
        return f"note: substituted the program's own {format_point(used)}"
    return None


# --- several scalar outputs ---------------------------------------------------------------------

def _outputs(program: Program, ask: DiffAsk, verify: Verify | None) -> Diff:
    """``gradcli diff "f = x*y; g = x + y; f, g"``: one line per entry, ``df/dx = y``; each
    output's row by ``differentiate`` of that output alone (``0`` for a variable it does not
    use)."""
    if ask.order != 1:
        raise UsageError("a program with several outputs has a Jacobian: --order 1",
                         hint="differentiate one output at a time for higher orders")
    given = {**(program.defaults if ask.defaults else {}), **ask.values}
    names = wrt_names(program, ask.wrt, [n for n in program.variables if n not in given])
    variables = list(program.variables.values())
    found: dict[str, Derivatives | None] = {}  # None: the output uses none of ``names``
    rows: dict[str, dict[str, str]] = {}
    labels = output_labels(program)
    shown = latex_names(program, given, labels)
    for label, output in zip(labels, program.outputs, strict=True):
        part = Program.build(program.source, output, variables, program.defaults)
        part.arrays = any(node.op.is_array or not isinstance(node.value, float)
                          for node in part.nodes)
        used = [name for name in names if name in part.variables]
        found[label] = differentiate(part, used, 1, ask.values, ask.defaults,
                                     ask.max_nodes) if used else None
        rows[label] = _row(found[label], names, "latex" if ask.fmt == "latex" else "text",
                           shown)
    checked = None
    if verify is not None:
        text_form = rows if ask.fmt == "text" else {
            label: _row(derivatives, names, "text") for label, derivatives in found.items()}
        checked = verify(program=program, shapes={name: () for name in program.variables},
                         given=given, kind="jacobian", texts=text_form)
    own = {name: value for name, value in program.defaults.items()
           if name in program.variables and name not in ask.values}
    kept, used = ({}, own) if ask.defaults else (own, {})
    return Diff({"order": 1, "jacobian": rows, "values": {**used, **ask.values},
                 "kept_defaults": kept}, rows, True, None, checked, defaults_note(kept, used),
                shown)


def _row(derivatives: Derivatives | None, names: list[str], fmt: str,
         shown: Sequence[str] | None = None) -> dict[str, str]:
    """One output's derivatives by ``names`` (0 where it does not use one); LaTeX writes the
    ``shown`` names (the whole program's) unlike each other."""
    texts = derivatives.texts(fmt, shown) if derivatives is not None else {}
    return {name: texts.get(name, "0") for name in names}


# --- a program with arrays ----------------------------------------------------------------------

def _arrays(program: Program, ask: DiffAsk, verify: Verify | None) -> Diff:
    """``_arrays_once``; when the check finds a short form (``prod(x)/x``) undefined where the
    program is defined, once more with the forms exact at every point."""
    from gradcli.symbolic.arrays import EXACT_FORMS

    try:
        return _arrays_once(program, ask, verify)
    except CheckError as error:
        if "is not defined at" not in error.message and "nan" not in error.message:
            raise
    token = EXACT_FORMS.set(True)
    try:
        return _arrays_once(program, ask, verify)
    finally:
        EXACT_FORMS.reset(token)


def _arrays_once(program: Program, ask: DiffAsk, verify: Verify | None) -> Diff:
    """The gradients, the Jacobian of an array output or of several outputs, or (``--order
    2``) the Hessian, built and checked at the values given (docs/matrix-calculus.md)."""
    from gradcli.symbolic.jacobians import array_derivatives, has_array_output

    own = program.defaults if ask.defaults else {}
    given = {name: value for name, value in {**own, **ask.values}.items()
             if name in program.variables}
    if not ask.wrt:  # as for scalars: the variables without a value (all, if each has one)
        ask = replace(ask, wrt=[name for name in program.variables if name not in given] or None)
    shapes = program_shapes(program, ask.shapes, given)
    several = has_array_output(program, shapes)
    if ask.order > 2 or (several and ask.order != 1):
        raise UsageError("the derivatives of an array program are printed at order 1 (the "
                         "gradient, or the Jacobian of several outputs or an array output) or "
                         "2 (the Hessian of one scalar output)", hint="use --order 1 or 2")
    kind = "jacobian" if several else ("gradient", "hessian")[ask.order - 1]
    found = array_derivatives(program, shapes, kind, ask.wrt, ask.max_nodes, given)
    source = None
    if ask.fmt == "python":  # a NumPy function returning the value and the derivatives
        from gradcli.symbolic.numpy_export import numpy_source

        source = numpy_source(program, shapes, kind, found)
    fmt = "latex" if ask.fmt == "latex" else "text"
    names = latex_names(program, (), list(found.blocks) if several else ())
    texts = None if source is not None else found.printed(fmt, names)
    checked = None
    if verify is not None:
        text_form = texts if ask.fmt == "text" or texts is None else found.printed("text")
        checked = verify(program=program, shapes=shapes, given=given, kind=kind,
                         texts=text_form or {}, levels={}, python=source,
                         python_kind="array" if kind == "gradient" else "blocks")
    if texts is None and ask.texts:
        texts = found.printed(fmt, names)
    fields = {"order": ask.order, "jacobian" if several else "derivatives": texts,
              "shapes": {name: list(shape) for name, shape in shapes.items()}}
    if source is not None:
        fields["python"] = source
    return Diff(fields, texts, several, source, checked, _own_values_note(program, ask), names)


def _own_values_note(program: Program, ask: DiffAsk) -> str | None:
    """What became of an array program's values (given, or its own with ``--defaults``): the
    point its derivatives, which keep every variable a symbol, are built and checked at."""
    given = [name for name in ask.values if name in program.variables]
    own = [name for name in program.defaults
           if name in program.variables and name not in ask.values]
    stay = "stays a symbol" if len(own) == 1 else "stay symbols"
    notes = []
    if given:
        notes.append(f"note: the derivatives keep {', '.join(given)} "
                     f"{'a symbol' if len(given) == 1 else 'symbols'} and were checked with "
                     f"the {', '.join(given)} given")
    if own and ask.defaults:
        notes.append(f"note: took the derivatives at the program's own {', '.join(own)}, "
                     f"which {stay} in them")
    elif own:
        notes.append(f"note: the program's own {', '.join(own)} {stay}; --defaults takes the "
                     f"derivatives at {'its value' if len(own) == 1 else 'their values'}")
    return "\n".join(notes) or None


# --- shapes -------------------------------------------------------------------------------------

def read_shape(name: str, text: str) -> tuple[int, ...]:
    """``3x2`` -> (3, 2), ``4`` -> (4,), ``scalar`` -> (); anything else a UsageError."""
    text = text.strip().lower()
    if text in ("scalar", "()", ""):
        return ()
    parts = text.split("x")
    if len(parts) > 2 or not all(part.isdigit() and int(part) > 0 for part in parts):
        raise UsageError(f"cannot read the shape {text!r} of {name}",
                         hint=f"write e.g. --shape {name}=3 (a vector), {name}=3x2 (a matrix) "
                              f"or {name}=scalar")
    return tuple(int(part) for part in parts)


def program_shapes(program: Program, given: Mapping[str, tuple[int, ...]],
                   values: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """Every variable's shape: ``--shape``, else a given value's, else the program's default;
    a variable with none of them is a UsageError naming it."""
    np = arrays.numpy()
    shapes: dict[str, tuple[int, ...]] = {}
    for name in program.variables:
        if name in given:
            shapes[name] = given[name]
        elif name in values:
            shapes[name] = tuple(np.shape(np.asarray(values[name], dtype=float)))
        elif name in program.defaults:
            shapes[name] = tuple(np.shape(program.defaults[name]))
        else:
            raise UsageError(f"no shape for {name}",
                             hint=f"give it: --shape {name}=3x2 (or =3 for a vector, =scalar "
                                  f"for a number), or a value --{name} \"[1, 2, 3]\"")
    unknown = [name for name in given if name not in program.variables]
    if unknown:
        raise UsageError(f"--shape {unknown[0]}: the program has no variable {unknown[0]}",
                         hint=f"its variables: {', '.join(program.variables)}")
    return shapes
