"""Evaluation at one point (``gradcli eval``, and a batch per line): value, reverse-mode
gradients of every input and their check, asked for by one frozen ``EvalSettings``; a ``Result``,
or a ``FreeResult`` (expressions) when variables have no value and ``strict`` is off."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace

from gradcli.engine.graph import (
    Program,
    node_records,
    values_and_gradients,
    values_and_grads_of,
)
from gradcli.engine.notation import texts_in_order, texts_of
from gradcli.errors import (
    MAX_LISTED_NAMES,
    ExitStatus,
    GradcliError,
    Note,
    UsageError,
    listed,
)
from gradcli.gradcheck.tolerances import DEFAULT_ATOL, DEFAULT_RTOL, METHODS, NODE_CHECK_LIMIT
from gradcli.language.parser import parse, program_of
from gradcli.language.values import runs_on_arrays, validate_values
from gradcli.limits import MAX_NODES

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from gradcli.gradcheck.check import CheckReport
    from gradcli.gradcheck.derivative_truth import Checked
    from gradcli.gradcheck.hessian import HessianResult, HvpResult
    from gradcli.symbolic.derivatives import SymbolicResult


@dataclass(frozen=True)
class EvalSettings:
    """How to evaluate, apart from the program and its values: from the CLI's options, or
    the API's keywords (``evaluate(p, v, check=False)``)."""

    check: bool = True  # run the finite-difference check
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    check_method: str = "central"  # one of check.METHODS
    node_check_limit: int = NODE_CHECK_LIMIT  # check every node's gradient up to this size
    order: int = 1  # 2 adds the Hessian
    strict: bool = True  # False: variables without a value stay free (a FreeResult)
    max_nodes: int = MAX_NODES
    mode: str = "auto"  # a Jacobian's: forward, reverse or auto (the one with fewer passes)
    # H·v (an array program's): a direction per input (name -> array)
    hvp: Mapping[str, Any] | None = field(default=None, compare=False)
    nodes: bool = True  # --json lists every node; False: a lean record, quicker (a batch's)
    full: bool = False  # --json writes every array whole (--full); False: long ones summarised

    def __post_init__(self) -> None:
        for name in ("rtol", "atol"):  # as the CLI's options: inf or nan would make every
            value = getattr(self, name)  # check pass or fail
            if not _tolerance_number(value):
                raise UsageError(f"{name} is {value!r}, not a finite number >= 0",
                                 hint=f"give e.g. {name}=1e-5")
        if self.mode not in ("auto", "forward", "reverse"):
            raise UsageError(f"unknown mode {self.mode!r}", hint="use auto, forward or reverse")
        if self.check_method not in METHODS:
            raise UsageError(f"unknown check method {self.check_method!r}",
                             hint="use " + ", ".join(METHODS))
        if self.order not in (1, 2):
            raise UsageError(f"order must be 1 or 2, not {self.order!r}",
                             hint="gradcli diff --order N prints higher derivatives")


def _tolerance_number(value: Any) -> bool:
    if isinstance(value, (bool, str, bytes)):
        return False
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    return math.isfinite(number) and number >= 0


@dataclass(slots=True)  # one per node: no __dict__ keeps a 10^6-node table small
class NodeRow:
    """One node of an evaluated graph, as the table and the JSON show it."""

    id: int
    op: str
    label: str  # the name a statement gave it, or its expression
    value: float | None  # None: in a branch not taken, and undefined there (log(-1))
    grad: float | None  # None for constants, which need no gradient
    inputs: list[int]
    numeric_grad: float | None = None  # the per-node check's estimate, when it ran
    ok: bool | None = None  # the per-node check's verdict, when it ran


_ROW_FIELDS = NodeRow.__dataclass_fields__.keys()


@dataclass(repr=False)  # its own __repr__: the generated one would only be compiled, unused
class Result:
    """An evaluated program: value, gradients of every input variable, and the check."""

    program: Program
    point: dict[str, float]  # the value of every input variable
    value: float
    gradients: dict[str, float]
    check: CheckReport | None
    hessian: HessianResult | None = None  # with order=2
    # Every node's value and gradient when this Result was made: evaluating the same Program
    # again (another point) rewrites the nodes, never an earlier Result.
    node_values: list[float] = field(default_factory=list)
    node_grads: list[float] = field(default_factory=list)
    hvp: HvpResult | None = None  # an array program's H·v, with EvalSettings.hvp

    def __repr__(self) -> str:
        """Short, for a Python prompt: value, gradients and the verdict (the whole table is
        ``_repr_html_``/``_repr_pretty_`` in Jupyter and IPython, ``output.notebook``)."""
        verdict = ("not checked" if self.check is None else
                   "passed" if self.check.ok else "FAILED")
        hessian = "" if self.hessian is None else ", hessian=..."
        return (f"Result(value={self.value!r}, gradients={_short_dict(self.gradients)}, "
                f"check={verdict}{hessian}, nodes={len(self.program.nodes)})")

    @property
    def status(self) -> ExitStatus:
        checks = (self.check, self.hessian and self.hessian.check, self.hvp and self.hvp.check)
        failed = any(check is not None and not check.ok for check in checks)
        return ExitStatus.CHECK_FAILED if failed else ExitStatus.OK

    def node_rows(self, only: Iterable[int] | None = None) -> list[NodeRow]:
        """Every node in topological order with its label, value and gradient (or just the
        nodes with the ids in ``only``: a table that shows 400 rows need not build 10^6)."""
        if self.program.arrays:  # shape and where are for the array tables and JSON only
            return [NodeRow(**{key: record[key] for key in _ROW_FIELDS})
                    for record in self.node_records(only)]
        return [NodeRow(**record) for record in self.node_records(only)]

    def node_records(self, only: Iterable[int] | None = None) -> Iterator[dict[str, Any]]:
        """The rows of ``node_rows`` as dicts, one at a time: what ``--json`` writes, a chunk
        at a time, so that a 10^6-node record never exists whole."""
        nodes = self.program.nodes
        if only is None:
            order, texts = range(len(nodes)), texts_in_order(nodes)
        else:
            only = list(only)
            written = texts_of(nodes, only)
            order, texts = only, (written[nodes[i]] for i in only)
        values = self.node_values or [node.value for node in nodes]
        grads = self.node_grads or [node.grad for node in nodes]
        checks = self.check.nodes if self.check is not None else {}
        return node_records(nodes, order, texts, values, grads, checks, self.program.arrays)


@dataclass(repr=False)  # its own __repr__, as Result
class FreeResult:
    """A program with free variables (``strict`` off): its value and gradients as expressions in
    gradcli's language, with the given values substituted. The gradients are checked as ``diff``
    checks what it prints (``checked``; None with ``check`` off): read back and compared with
    the reverse-mode gradient at sample values of the free variables."""

    program: Program
    point: dict[str, float]  # the variables that do have a value
    symbolic: SymbolicResult
    checked: Checked | None = None

    def __repr__(self) -> str:
        return (f"FreeResult(value={self.value!r}, gradients={_short_dict(self.gradients)}, "
                f"free={self.free!r})")

    @property
    def free(self) -> list[str]:
        return self.symbolic.free

    @property
    def value(self) -> str:
        return self.symbolic.value

    @property
    def gradients(self) -> dict[str, str]:
        return self.symbolic.gradients

    @property
    def notes(self) -> list[Note]:
        """Free variables named like a constant or function (``PI``): probably not meant."""
        return [note for note in self.program.notes if note.name in self.free]

    @property
    def status(self) -> ExitStatus:
        return ExitStatus.OK


SHORT_REPR_ITEMS = 8  # a repr lists this many gradients, then how many more


def _short_dict(items: dict[str, Any]) -> str:
    shown = ", ".join(f"{name!r}: {value!r}"
                      for name, value in itertools.islice(items.items(), SHORT_REPR_ITEMS))
    more = len(items) - SHORT_REPR_ITEMS
    return "{" + shown + (f", ... {more} more" if more > 0 else "") + "}"


def evaluate(
    program: str | Program,
    values: Mapping[str, float] | None = None,
    settings: EvalSettings | None = None,
    **changes: Any,
) -> Result | FreeResult:
    """Value and reverse-mode gradients of ``program`` at ``values``, checked by finite differences.

    ``settings`` (default ``EvalSettings()``) says how; keywords change single fields
    (``check=False``, ``order=2``, ``strict=False``). ``values`` override the program's defaults;
    names it does not use are ignored (one set of values can serve a batch). Raises
    ``GradcliError``s; with ``strict=False`` missing values give a ``FreeResult``, unless
    ``order=2`` asks for the Hessian, a matrix of numbers.
    """
    settings = _settings(settings, changes) if changes else settings or DEFAULT_SETTINGS
    if values is not None and not hasattr(values, "keys"):
        raise TypeError(f"values are a mapping of names to values, not {type(values).__name__}")
    values = dict(values or {})
    program = program_of(program, settings.max_nodes, values)
    if runs_on_arrays(program, values) or settings.hvp:  # H·v runs on the array path
        return _evaluate_arrays(program, values, settings)
    validate_values(values)
    if not settings.strict and program.unbound(values):
        unbound = program.unbound(values)
        refused = _note_error(program, unbound, "function") or (
            (_note_error(program, unbound) or hessian_needs_values(unbound))
            if settings.order >= 2 else None)
        if refused is not None:
            raise refused
        return free_result(program, values, settings.check)
    require_values(program, values)
    program.bind(values)
    value = values_and_gradients(program)
    point = {name: node.value for name, node in program.variables.items()}
    gradients = {name: node.grad for name, node in program.variables.items()}
    return Result(program, point, value, gradients, _check(program, settings),
                  hessian=_second_derivatives(program, settings, point)[0],
                  **_node_lists(program))


DEFAULT_SETTINGS = EvalSettings()
_CHANGED: dict[tuple[tuple[str, type, str], ...], EvalSettings] = {}  # defaults with keywords
_KEYS = (bool, int, float, str, type(None))  # values a key holds (an H·v direction does not)


def _settings(settings: EvalSettings | None, changes: dict[str, Any]) -> EvalSettings:
    """``settings`` with ``changes``; the defaults with the same keywords made once, not on each
    call (``evaluate(p, v, check=False)`` in a loop: ``replace`` costs as much as a small
    array program's forward pass), for plain values by type and text (``check=1`` is not
    ``check=True``, -0.0 not 0.0, and a NaN is one key), no more than 64."""
    key = tuple((name, type(value), repr(value)) for name, value in changes.items())
    if settings is not None or len(_CHANGED) >= 64 or not all(
            isinstance(value, _KEYS) for value in changes.values()):
        return replace(settings or DEFAULT_SETTINGS, **changes)
    made = _CHANGED.get(key) or replace(DEFAULT_SETTINGS, **changes)
    _CHANGED[key] = made
    return made


def _check(program: Program, settings: EvalSettings) -> CheckReport | None:
    """The finite-difference check of an evaluated program, if asked (loaded only then)."""
    if not settings.check:
        return None
    from gradcli.gradcheck.check import check_gradients

    return check_gradients(program, settings.rtol, settings.atol, settings.node_check_limit,
                           settings.check_method)


def _evaluate_arrays(program: Program, values: dict[str, Any], settings: EvalSettings) -> Any:
    """``evaluate`` for a program with arrays in it (docs/arrays.md): a Result, or a
    ``JacobianResult`` for several outputs or an array output."""
    from gradcli.engine import arrays

    validate_values(values)  # no constants, and scalars that are numbers (arrays: bind)
    kind = "a program of several outputs (a Jacobian)" if program.outputs else "an array program"
    why = (": H·v (--hvp) needs a value for every variable" if settings.hvp and not (
        runs_on_arrays(program, values)) else
        f": {kind} needs a value for every variable (free variables give expressions for "
        "programs of one scalar output only)")
    require_values(program, values, why)
    program.arrays = True
    arrays.bind(program, values)
    value = arrays.forward(program.nodes, program.outputs)
    if program.outputs or value.ndim:  # a Jacobian (docs/matrix-calculus.md)
        from gradcli.gradcheck.jacobian_check import evaluate_jacobian

        if settings.order >= 2 or settings.hvp:
            raise UsageError("Hessians (--hessian, --hvp) are of programs with one scalar "
                             "output, and this one has several outputs or an array output",
                             hint="reduce the output to a number, e.g. sum(...), or drop "
                                  "--hessian/--hvp for the Jacobian")

        return evaluate_jacobian(program, settings)
    arrays.backward(program.nodes)
    report = _check(program, settings)
    hessian, hvp = _second_derivatives(program, settings, {})
    point = {name: arrays.plain(node.value) for name, node in program.variables.items()}
    gradients = {name: arrays.plain(node.grad) for name, node in program.variables.items()}
    return Result(program, point, float(value), gradients, report, hessian=hessian, hvp=hvp,
                  **_node_lists(program))


def _second_derivatives(program: Program, settings: EvalSettings,
                        point: Mapping[str, Any]) -> tuple[Any, Any]:
    """The Hessian (order 2) and H·v (``settings.hvp``) of the program evaluated at ``point``
    (an array program's Hessian reads its point from its nodes), if asked."""
    if settings.order < 2 and not settings.hvp:
        return None, None
    from gradcli.gradcheck.hessian import Checking, hessian_at, hvp_at

    checking = None
    if settings.check:  # what the Hessian module needs of the gradient check (not imported there)
        from gradcli.gradcheck.check import CheckReport, GradientCheck, check_node

        checking = Checking(settings.rtol, settings.atol, CheckReport, GradientCheck, check_node)
    hessian = hessian_at(program, point, checking, max_nodes=settings.max_nodes) if (
        settings.order >= 2) else None
    hvp = hvp_at(program, settings.hvp, checking, settings.max_nodes) if settings.hvp else None
    return hessian, hvp


def _node_lists(program: Program) -> dict[str, list[Any]]:
    """A Result's ``node_values`` and ``node_grads``: every node's value, NaN for a node in a
    branch not taken (shown as "not taken"), and gradient."""
    values, grads = values_and_grads_of(program.nodes)
    if program.masked:  # (with no branch nothing is left out, and the check is not loaded)
        from gradcli.gradcheck.differences import live_in

        live = live_in(program)
        assert live is not None
        values = [value if taken is not False or not node.inputs else math.nan  # inputs keep
                  for node, value, taken in zip(program.nodes, values, live, strict=True)]
    return {"node_values": values, "node_grads": grads}


def free_result(program: Program, values: Mapping[str, float], check: bool = True) -> FreeResult:
    """A program with free variables: texts in ``symbolic``, no numbers. The bound part is
    computed first (``partial_evaluate``), so outside its domain it is eval's NumericError; the
    gradients' texts are then checked (a CheckError where one disagrees)."""
    from gradcli.symbolic.derivatives import partial_evaluate

    point = {n: float(v) for n, v in {**program.defaults, **values}.items()
             if n in program.variables}
    symbolic = partial_evaluate(program, values)
    if not check:
        return FreeResult(program, point, symbolic)
    from gradcli.gradcheck.derivative_check import DiffCheck
    from gradcli.gradcheck.derivative_check import check as check_printed

    shapes: dict[str, tuple[int, ...]] = {name: () for name in program.variables}
    checked = check_printed(DiffCheck(program, shapes, dict(point), "gradient",
                                      dict(symbolic.gradients)))
    return FreeResult(program, point, symbolic, checked)


@dataclass
class LineOutcome:
    """One program of a batch: its physical line number and its result or its error."""

    line: int
    source: str
    result: Result | FreeResult | None = None  # exactly one of result and error is set
    error: GradcliError | None = None
    program: Program | None = None  # the parsed program (None: the line did not parse)

    @property
    def names(self) -> Iterable[str] | None:
        """The line's input variables (which given values it used); None if it did not parse."""
        return self.program.variables if self.program is not None else None

    @property
    def status(self) -> ExitStatus:
        if self.error is not None:
            return self.error.status
        assert self.result is not None
        return self.result.status


def evaluate_lines(
    lines: Iterable[str],
    values: Mapping[str, float] | None = None,
    settings: EvalSettings | None = None,
    **changes: Any,
) -> Iterator[LineOutcome]:
    """One outcome per non-blank line not starting with ``#``, each its own program, in
    order; an error on one line never stops the others. ``lines``: an iterable of lines (a
    file), or one text of several lines."""
    settings = replace(settings or DEFAULT_SETTINGS, **changes)
    if isinstance(lines, str):  # not one program per character
        lines = lines.splitlines()
    for number, raw in enumerate(lines, start=1):
        if type(raw) is not str:  # bytes (a file opened "rb"): said, not an error deep inside
            raise TypeError(f"line {number} is {type(raw).__name__}, not a str: decode the text "
                            "first")
        outcome = evaluate_line(number, raw, values, settings)
        if outcome is not None:
            yield outcome


def evaluate_line(
    number: int, raw: str, values: Mapping[str, float] | None, settings: EvalSettings
) -> LineOutcome | None:
    """One line of a batch (physical line ``number``); None for a blank or ``#`` line."""
    if not is_program(raw):
        return None
    source = _text(raw)
    program = None  # kept apart from evaluating: a line that fails later still used its names
    try:
        program = parse(source, settings.max_nodes, values or ())
        result = evaluate(program, values, settings)
    except GradcliError as error:
        if error.line is not None:
            error.line = number
        return LineOutcome(number, source, error=error, program=program)
    return LineOutcome(number, source, result=result, program=program)


def is_program(raw: str) -> bool:
    """Whether a line of a batch gets an outcome (and a record): not blank, not a ``#``
    comment, a byte-order mark before it aside (a file saved by a Windows editor)."""
    source = _text(raw)
    return bool(source.strip()) and not source.lstrip().startswith("#")


def _text(raw: str) -> str:
    """A line without its line end, nor the byte-order mark a Windows editor starts a file
    with (the parser drops it too: the record's expression is what the parser read)."""
    return raw.rstrip("\r\n").removeprefix("\ufeff")


def require_values(program: Program, values: Mapping[str, Any], why: str = "") -> None:
    """A UsageError listing every variable the program needs that ``values`` and its own
    defaults do not give, and how to pass them (``why``: said after the names)."""
    missing = program.unbound(values)
    if missing:
        raise (_note_error(program, missing, "function") or _note_error(program, missing)
               or UsageError(missing_values_message(missing) + why,
                             hint=f"pass them as {_flags(missing)} (or --set NAME=VALUE), or "
                                  "assign them in the program"))


def _note_error(program: Program, missing: list[str],
                reading: str | None = None) -> GradcliError | None:
    """The error of the first note (of ``reading``) on a name without a value: ``exp is a
    function: call it as exp(x)`` for ``exp + x``, ``PI has no value; did you mean the constant
    pi?``: that, not a forgotten --PI, is the likely slip."""
    notes = [note for note in program.notes
             if note.name in missing and reading in (None, note.reading)]
    return notes[0].error() if notes else None


HESSIAN_NEEDS_VALUES = "the Hessian needs a value for every variable"


def hessian_needs_values(missing: list[str]) -> UsageError:
    """order=2 with free variables: the Hessian is numbers, so every variable needs a value."""
    return UsageError(f"{HESSIAN_NEEDS_VALUES}: {missing_values_message(missing)}",
                      hint=f"pass {_flags(missing)}; gradcli diff --order 2 gives the Hessian "
                           "as expressions")


def missing_values_message(names: list[str]) -> str:
    return f"no value for {names[0]}" if len(names) == 1 else f"no values for {listed(names)}"


def _flags(names: list[str]) -> str:
    return " ".join(f"--{name} VALUE" for name in names[:MAX_LISTED_NAMES])
