"""The public Python API; the CLI is a thin layer over these functions.

    >>> import gradcli
    >>> result = gradcli.evaluate("(x*W+b-t)**2", {"x": 2, "W": 3, "b": 1, "t": 8})
    >>> result.value, result.gradients["x"], result.check.ok
    (1.0, -6.0, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .check import DEFAULT_ATOL, DEFAULT_RTOL, NODE_CHECK_LIMIT, CheckReport, check_gradients
from .errors import ExitStatus, GradcliError, UsageError
from .graph import Program, backward, forward
from .limits import MAX_LISTED_NAMES, MAX_NODES, listed
from .notation import expression_texts
from .parser import parse
from .points import validate_values

if TYPE_CHECKING:  # derive is imported only when a Hessian or a free variable asks for it
    from .derive import HessianResult, SymbolicResult


@dataclass(slots=True)  # one per node: no __dict__ keeps a 10^6-node table small
class NodeRow:
    """One node of an evaluated graph, as the table and the JSON show it."""

    id: int
    op: str
    label: str  # the name a statement gave it, or its expression
    value: float
    grad: float | None  # None for constants, which need no gradient
    inputs: list[int]
    numeric_grad: float | None = None  # the per-node check's estimate, when it ran
    ok: bool | None = None  # the per-node check's verdict, when it ran


@dataclass
class Result:
    """An evaluated program: value, gradients of every input variable, and the check."""

    program: Program
    point: dict[str, float]  # the value of every input variable
    value: float
    gradients: dict[str, float]
    check: CheckReport | None
    hessian: HessianResult | None = None  # with order=2
    symbolic: SymbolicResult | None = None  # free variables: value and gradients are None
    # Every node's value and gradient when this Result was made: evaluating the same Program
    # again (another point) rewrites the nodes, never an earlier Result.
    node_values: list[float] = field(default_factory=list)
    node_grads: list[float] = field(default_factory=list)

    @property
    def status(self) -> ExitStatus:
        failed = self.check is not None and not self.check.ok
        hessian = self.hessian.check if self.hessian is not None else None
        failed = failed or (hessian is not None and not hessian.ok)
        return ExitStatus.CHECK_FAILED if failed else ExitStatus.OK

    def node_rows(self, only: Iterable[int] | None = None) -> list[NodeRow]:
        """Every node in topological order with its label, value and gradient (or just the
        nodes with the ids in ``only``: a table that shows 400 rows need not build 10^6)."""
        return [NodeRow(**record) for record in self.node_records(only)]

    def node_records(self, only: Iterable[int] | None = None) -> Iterator[dict[str, Any]]:
        """The rows of ``node_rows`` as dicts, one at a time: what ``--json`` writes, a chunk
        at a time, so that a 10^6-node record never exists whole."""
        nodes = self.program.nodes
        texts = expression_texts(nodes)
        values = self.node_values or [node.value for node in nodes]
        grads = self.node_grads or [node.grad for node in nodes]
        checks = self.check.nodes if self.check is not None else {}
        for i in range(len(nodes)) if only is None else only:
            node = nodes[i]
            check = checks.get(i) if checks else None
            yield {
                "id": i,
                "op": node.op.name,
                "label": node.name or texts[i],
                "value": values[i],
                "grad": grads[i] if node.needs_grad else None,
                "inputs": [source.index for source in node.inputs],
                "numeric_grad": None if check is None else check.numeric,
                "ok": None if check is None else check.ok,
            }


def evaluate(
    program: str | Program,
    values: Mapping[str, float] | None = None,
    *,
    check: bool = True,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    node_check_limit: int = NODE_CHECK_LIMIT,
    check_method: str = "central",
    order: int = 1,
    strict: bool = True,
    max_nodes: int = MAX_NODES,
) -> Result:
    """Value and reverse-mode gradients of ``program`` at ``values``, checked by finite differences.

    ``values`` override the program's own ``x = 2`` defaults; names the program does not use are
    ignored (so one set of values can serve a whole batch). ``check_method`` is ``"central"``,
    ``"complex"`` or ``"richardson"`` (``check.METHODS``). Raises ``GradcliError`` subclasses:
    ``ParseError``, ``GradcliNameError``, ``UsageError`` (a value missing, a program over
    ``max_nodes``) or ``NumericError``. ``order=2`` adds the Hessian (checked by finite
    differences of the gradient when ``check``). ``strict=False`` turns missing values into a
    symbolic result (``Result.symbolic``).
    """
    if isinstance(program, str):
        program = parse(program, max_nodes)
    values = dict(values or {})
    validate_values(values)
    if not strict and program.unbound(values):
        return symbolic_result(program, values)
    require_values(program, values)
    program.bind(values)
    value = forward(program.nodes)
    backward(program.nodes)
    report = (
        check_gradients(program, rtol, atol, node_check_limit, check_method) if check else None
    )
    point = {name: node.value for name, node in program.variables.items()}
    return Result(
        program=program,
        point=point,
        value=value,
        gradients={name: node.grad for name, node in program.variables.items()},
        check=report,
        hessian=_hessian(program, point, check, rtol, atol) if order >= 2 else None,
        node_values=[node.value for node in program.nodes],
        node_grads=[node.grad for node in program.nodes],
    )


def _hessian(program: Program, point: dict[str, float], check: bool, rtol: float,
             atol: float) -> HessianResult:
    from .derive import hessian_at

    return hessian_at(program, point, check, rtol, atol)


def symbolic_result(program: Program, values: Mapping[str, float]) -> Result:
    """The Result of a program with free variables: texts in ``symbolic``, no numbers."""
    from .derive import partial_evaluate

    symbolic = partial_evaluate(program, values)
    point = {n: float(v) for n, v in {**program.defaults, **values}.items()
             if n in program.variables}
    return Result(program, point, None, None, None, symbolic=symbolic)  # type: ignore[arg-type]


@dataclass
class LineOutcome:
    """One program of a batch: its physical line number and its result or its error."""

    line: int
    source: str
    result: Result | None = None
    error: GradcliError | None = None

    @property
    def status(self) -> ExitStatus:
        return self.error.status if self.error is not None else self.result.status  # type: ignore[union-attr]


def evaluate_lines(
    lines: Iterable[str], values: Mapping[str, float] | None = None, **options: object
) -> Iterator[LineOutcome]:
    """Evaluate each non-blank line not starting with ``#`` as its own program, in order.

    Yields exactly one outcome per such line; an error on one line never stops the others.
    """
    for number, raw in enumerate(lines, start=1):
        outcome = evaluate_line(number, raw, values, **options)
        if outcome is not None:
            yield outcome


def evaluate_line(
    number: int, raw: str, values: Mapping[str, float] | None = None, **options: object
) -> LineOutcome | None:
    """One line of a batch (physical line ``number``); None for a blank or ``#`` line."""
    source = raw.rstrip("\r\n")
    if not source.strip() or source.lstrip().startswith("#"):
        return None
    try:
        result = evaluate(source, values, **options)  # type: ignore[arg-type]
    except GradcliError as error:
        if error.line is not None:
            error.line = number
        return LineOutcome(number, source, error=error)
    return LineOutcome(number, source, result=result)


def require_values(program: Program, values: Mapping[str, Any]) -> None:
    """A UsageError listing every variable the program needs that ``values`` and its own
    defaults do not give, and how to pass them."""
    missing = program.unbound(values)
    if missing:
        raise UsageError(missing_values_message(missing), hint=missing_values_hint(missing))


def missing_values_message(names: list[str]) -> str:
    return f"no value for {names[0]}" if len(names) == 1 else f"no values for {listed(names)}"


def missing_values_hint(names: list[str]) -> str:
    flags = " ".join(f"--{name} VALUE" for name in names[:MAX_LISTED_NAMES])
    return f"pass them as {flags} (or --set NAME=VALUE), or assign them in the program"
