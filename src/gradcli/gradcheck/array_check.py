"""Array programs at one point: value, gradients of every input, and a per-element check.

The check's first pass replays many perturbed elements of a node together, one column each
(``array_columns.central_columns``, as the scalar check's vectorised pass does); an element it
does not settle is perturbed alone, replaying the nodes downstream of it on arrays
(``ArrayReplayer``), with the scalar check's own step policies (``point.check_node``:
central differences with smaller steps and one-sided ones at a domain edge, complex step,
Richardson): an element is a ``_Probe`` that looks like a scalar node to them. Every element of
a gradient is checked up to ``ARRAY_CHECK_ELEMENTS`` per node, an evenly spread, deterministic
sample beyond (fewer when the replays would pass ``ARRAY_CHECK_BUDGET``); each node's verdict is
an ``ArrayGradientCheck``: how many elements were checked, how many failed, and the worst one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradcli.engine import arrays
from gradcli.engine.graph import Node, Program
from gradcli.engine.ops import NONE
from gradcli.errors import UsageError
from gradcli.gradcheck.array_columns import COLUMN_MAX_ELEMENTS, central_columns, replayable
from gradcli.gradcheck.evaluation import EvalSettings, Result, require_values
from gradcli.gradcheck.point import METHODS, CheckReport, GradientCheck, check_node
from gradcli.language.values import validate_values
from gradcli.limits import (
    ARRAY_CHECK_BUDGET,
    ARRAY_CHECK_ELEMENTS,
    ARRAY_CHECK_MIN,
    ARRAY_COLUMN_FACTOR,
)

# A node costs as much to recompute as this many array elements (NumPy's per-call overhead).
_NODE_OVERHEAD = 2_000


@dataclass
class ArrayGradientCheck(GradientCheck):
    """The check of every sampled element of one node's gradient; the scalar fields describe
    the worst element (the first failure with the largest error, else the largest error)."""

    checked: int = 1  # elements checked
    size: int = 1  # elements in the gradient
    failed: int = 0  # elements that disagree
    where: tuple[int, ...] = ()  # the worst element's index ([] for a scalar)


class _Probe:
    """One element of a node, as ``check_node`` reads a node: value, gradient, index."""

    __slots__ = ("grad", "index", "value")

    def __init__(self, value: float, grad: float, index: int) -> None:
        self.value, self.grad, self.index = value, grad, index


class ArrayReplayer:
    """The output's value if one element of one node had another value (``point.Replayer``'s
    interface: ``replay(index, value, complex_step)`` and ``nodes``)."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self.users: list[list[int]] = [[] for _ in nodes]
        for node in nodes:
            for source in node.inputs:
                self.users[source.index].append(node.index)
        self.target: Node = nodes[-1]
        self.downstream: list[Node] = []
        self.moved: dict[bool, Any] = {}  # the target's value, real and complex, perturbed

    def aim(self, node: Node) -> int:
        """Perturb elements of ``node`` from now on; returns the array elements a replay reads
        and writes (a matrix product reads all of its matrix)."""
        np = arrays.numpy()
        seen, stack = {node.index}, [node.index]
        while stack:
            for user in self.users[stack.pop()]:
                if user not in seen:
                    seen.add(user)
                    stack.append(user)
        seen.discard(node.index)
        self.target, self.downstream = node, [self.nodes[i] for i in sorted(seen)]
        # The replays perturb an element of a private copy in place, and put it back.
        self.moved = {False: np.array(node.value, dtype=float, order="C"), True: None}
        return sum(np.size(n.value) + sum(np.size(s.value) for s in n.inputs)
                   for n in self.downstream)

    def replay(self, index: int, value: Any, complex_step: bool = False) -> tuple[Any, float]:
        np = arrays.numpy()
        node = self.target
        moved = self.moved[complex_step]
        if moved is None:
            moved = self.moved[True] = np.array(node.value, dtype=complex, order="C")
        flat = moved.reshape(-1)  # a view: the copy itself changes
        kept = flat[index]
        flat[index] = value
        try:
            return self._replay_from(moved, abs(value), complex_step)
        finally:
            flat[index] = kept

    def _replay_from(self, moved: Any, largest: float, complex_step: bool) -> tuple[Any, float]:
        np = arrays.numpy()
        changed = {self.target.index: moved}
        for user in self.downstream:
            args = [changed.get(source.index, source.value) for source in user.inputs]
            result = arrays.compute(user, args, complex_step)
            changed[user.index] = result
            if result.size:
                largest = max(largest, float(np.max(np.abs(result))))
        last = self.nodes[-1]
        output = changed.get(last.index, last.value)
        return output.item() if hasattr(output, "item") else output, largest


def sample(size: int, count: int) -> list[int]:
    """``count`` flat indices spread evenly over ``size`` elements, first and last included."""
    if count >= size:
        return list(range(size))
    np = arrays.numpy()
    return sorted(set(np.linspace(0, size - 1, count).round().astype(int).tolist()))


def check_node_elements(replayer: ArrayReplayer, node: Node, rtol: float, atol: float,
                        method: str, budget: float) -> tuple[ArrayGradientCheck, float]:
    """The per-element check of ``node``'s gradient; returns it and the budget spent."""
    np = arrays.numpy()
    elements = replayer.aim(node)
    # Columns copy the whole node once each: for a large one, perturbing one element of one
    # copy in place (the loop) costs less.
    columns = (method == "central" and np.size(node.value) <= COLUMN_MAX_ELEMENTS
               and replayable(replayer.downstream))
    # A replay costs the elements it reads and writes, and NumPy's overhead per node (paid
    # once per block of columns when they replay together).
    cost = elements + (0 if columns else _NODE_OVERHEAD * len(replayer.downstream))
    size = int(np.size(node.value))
    affordable = int(budget * (ARRAY_COLUMN_FACTOR if columns else 1) // (2 * max(cost, 1)))
    count = min(size, ARRAY_CHECK_ELEMENTS, max(ARRAY_CHECK_MIN, affordable))
    values, grads = np.ravel(node.value), np.ravel(node.grad)
    flats = sample(size, count)
    passed = central_columns(node, replayer.downstream, replayer.nodes[-1], flats, rtol,
                             atol) if columns else {}
    worst: tuple[float, int, GradientCheck] | None = None
    failed = 0
    for flat in flats:
        probe = _Probe(float(values[flat]), float(grads[flat]), flat)
        verdict = passed.get(flat) or check_node(replayer, probe,  # type: ignore[arg-type]
                                                 rtol, atol, method)
        failed += not verdict.ok
        badness = (0.0 if verdict.ok else 1.0, verdict.abs_error or 0.0)
        if worst is None or badness > worst[0]:
            worst = (badness, flat, verdict)
    assert worst is not None
    _, flat, verdict = worst
    where = tuple(int(i) for i in np.unravel_index(flat, np.shape(node.value)))
    check = ArrayGradientCheck(**vars(verdict), checked=len(flats), size=size, failed=failed,
                               where=where)
    check.ok = failed == 0
    return check, 2 * cost * count / (ARRAY_COLUMN_FACTOR if columns else 1)


def check_arrays(program: Program, settings: EvalSettings) -> CheckReport:
    """Every input's gradient element by element, then every node's when the graph is small."""
    method = settings.check_method
    if method not in METHODS:
        raise UsageError(f"unknown check method {method!r}", hint="use " + ", ".join(METHODS))
    nodes = program.nodes
    if method == "complex":
        for node in nodes:
            if node.inputs and node.needs_grad and node.op.complex is NONE:
                raise node.op.no_complex_form()
    report = CheckReport(settings.rtol, settings.atol, method=method)
    replayer = ArrayReplayer(nodes)
    per_node = len(nodes) <= settings.node_check_limit
    report.nodes_skipped = not per_node
    variables = list(program.variables.values())
    others = [n for n in nodes if n.needs_grad and not n.is_leaf] if per_node else []
    targets = variables + others
    budget = float(ARRAY_CHECK_BUDGET)
    checks: dict[int, ArrayGradientCheck] = {}
    for done, node in enumerate(targets):  # each gets a fair share of what is left
        share = budget / (len(targets) - done)
        checks[node.index], spent = check_node_elements(
            replayer, node, settings.rtol, settings.atol, method, share)
        budget -= spent
    report.gradients = {name: checks[node.index] for name, node in program.variables.items()}
    if per_node:
        report.nodes = {node.index: checks[node.index] for node in nodes
                        if node.needs_grad and node.index in checks}
    return report


def evaluate_arrays(program: Program, values: dict[str, Any], settings: EvalSettings) -> Any:
    """``evaluation.evaluate`` for a program with arrays in it (docs/arrays.md): a Result, or a
    ``JacobianResult`` for several outputs or an array output."""
    validate_values(values)  # no constants, and scalars that are numbers (arrays: bind)
    require_values(program, values, ": an array program needs a value for every variable "
                   "(free variables give expressions for scalar programs only)")
    program.arrays = True
    arrays.bind(program, values)
    value = arrays.forward(program.nodes)
    if program.outputs or arrays.numpy().ndim(value):  # a Jacobian (docs/matrix-calculus.md)
        from gradcli.gradcheck.jacobian_check import evaluate_jacobian

        if settings.order >= 2 or settings.hvp:
            raise UsageError("Hessians (--hessian, --hvp) are of programs with one scalar "
                             "output, and this one has several outputs or an array output",
                             hint="reduce the output to a number, e.g. sum(...), or drop "
                                  "--hessian/--hvp for the Jacobian")

        return evaluate_jacobian(program, settings)
    arrays.backward(program.nodes)
    report = check_arrays(program, settings) if settings.check else None
    hessian, hvp = second_derivatives(program, settings)
    return Result(
        program=program,
        point={name: _plain(node.value) for name, node in program.variables.items()},
        value=float(value),
        gradients={name: _plain(node.grad) for name, node in program.variables.items()},
        check=report,
        node_values=[node.value for node in program.nodes],
        node_grads=[node.grad for node in program.nodes],
        hessian=hessian,
        hvp=hvp,
    )


def second_derivatives(program: Program, settings: EvalSettings) -> tuple[Any, Any]:
    """The Hessian (order 2) and H·v (``settings.hvp``) of the evaluated program, if asked."""
    if settings.order < 2 and not settings.hvp:
        return None, None
    from gradcli.gradcheck.hessian import Checking, hessian_at, hvp_at

    checking = Checking(settings.rtol, settings.atol, CheckReport, ArrayGradientCheck,
                        check_node) if settings.check else None
    hessian = hessian_at(program, {}, checking, max_nodes=settings.max_nodes) if (
        settings.order >= 2) else None
    hvp = hvp_at(program, settings.hvp, checking, settings.max_nodes) if settings.hvp else None
    return hessian, hvp


def _plain(value: Any) -> Any:
    """A 0-d array as a float (a scalar variable of an array program stays a number); an array
    the caller may write to (a reduction's gradient is a read-only broadcast view)."""
    if not arrays.numpy().ndim(value):
        return float(value)
    return value if value.flags.writeable else value.copy()
