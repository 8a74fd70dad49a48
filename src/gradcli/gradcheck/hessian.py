"""Hessians and Hessian-vector products at a point, and their check, for programs of numbers and
of arrays (a number is the array of shape ``()``). Exact second derivatives come from reverse
mode run on first derivatives built as graphs: symbolic/builder.py's d/da for a program of
numbers (one reverse pass of it is the row H[a]), symbolic/jacobians.py's gradient graphs
(``exact=True``) for an array program, whose reverse passes seeded with v give H v (one per
input element for the whole Hessian). The check differentiates the first derivatives by finite
differences with the gradient check's step policy (gradcheck/steps.py). The gradient check's
report, verdict and one-node check come in as a ``Checking``: this module imports neither the
check nor evaluation (which import it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from gradcli.engine.graph import Node, Program, is_masked, nodes_of, values_and_gradients
from gradcli.engine.ops import VAR, numpy
from gradcli.engine.replay import Replayer
from gradcli.errors import NumericError, UsageError, gradient_formula_error
from gradcli.gradcheck.steps import STENCILS, Estimates, base_step, no_estimates, settle
from gradcli.limits import CHECK_BUDGET, MAX_ARRAY_HESSIAN_INPUTS, MAX_HESSIAN_ENTRIES, MAX_NODES
from gradcli.symbolic.builder import Builder, gradients
from gradcli.symbolic.printing import to_text


class Checking(NamedTuple):
    """What the Hessian's check takes from the gradient check (gradcheck/check.py): the
    report's and one verdict's constructors and ``check_node``, at its tolerances."""

    rtol: float
    atol: float
    report: Callable[..., Any]
    verdict: Callable[..., Any]
    check_node: Callable[..., Any]


@dataclass
class HessianResult:
    """Second derivatives at a point (``matrix[a][b]``: a float for numbers, else a block of
    shape a followed by shape b) and their finite-difference check (keys ``"a,b"``)."""

    matrix: dict[str, dict[str, Any]]
    check: Any  # the gradient check's report; None when not checked


@dataclass
class HvpResult:
    """H·v by input (each the input's shape), the direction, and the check along v."""

    product: dict[str, Any]
    direction: dict[str, Any]
    check: Any  # the gradient check's report; None when not checked


def hessian_at(
    program: Program,
    point: Mapping[str, Any],
    checking: Checking | None = None,
    budget: int = CHECK_BUDGET,
    max_nodes: int = MAX_NODES,
) -> HessianResult:
    """The Hessian of the evaluated ``program`` at ``point``, checked when ``checking`` is
    given. An array program (``program.arrays``) gets blocks; ``budget`` bounds the check of a
    program of numbers, ``max_nodes`` the gradient graphs of an array program."""
    if program.arrays:
        return _array_hessian(program, checking, max_nodes)
    names = list(program.variables)
    if len(names) ** 2 > MAX_HESSIAN_ENTRIES:
        raise UsageError(
            f"the Hessian of {len(names):,} variables has {len(names) ** 2:,} entries, over the "
            f"limit of {MAX_HESSIAN_ENTRIES:,}",
            hint="differentiate with respect to fewer variables: gradcli diff --order 2 --wrt …")
    share = budget // max(1, len(names))
    matrix: dict[str, dict[str, Any]] = {}
    report = None if checking is None else checking.report(checking.rtol, checking.atol,
                                                           nodes_skipped=True)
    for name, gradient_program in gradient_programs(program):
        matrix[name] = hessian_row(name, gradient_program, point, names)
        if checking is not None:
            _check_row(checking, report, name, gradient_program, share)
    return HessianResult(once_each(matrix, names), report)


def gradient_programs(program: Program) -> list[tuple[str, Program]]:
    """The gradient of a program of numbers by each variable, as a program of its own whose
    own gradient is a row of the Hessian: built once, evaluated at any point
    (``hessian_row``)."""
    names = list(program.variables)
    builder = Builder()
    (output,) = builder.import_graph([program.output])
    grads = gradients(output, [builder.variable(n) for n in names])
    rows = []
    for name, grad in zip(names, grads, strict=True):
        nodes = nodes_of([grad])
        variables = [node for node in nodes if node.op is VAR]
        rows.append((name, Program.build(to_text(grad), grad, variables, {}, is_masked(nodes))))
    return rows


def hessian_row(name: str, gradient_program: Program, point: Mapping[str, Any],
                names: list[str]) -> dict[str, Any]:
    """Row ``name`` of the Hessian at ``point``: ``gradient_program``'s gradient there."""
    for index, node in enumerate(gradient_program.nodes):  # nodes shared with other rows,
        node.index = index  # numbered by whichever was built last: numbered for this one
    gradient_program.bind(point)
    try:
        values_and_gradients(gradient_program)
    except NumericError as error:  # its nodes are the formula's, not the program's
        raise gradient_formula_error(name, gradient_program.source, error) from None
    row = gradient_program.variables
    return {other: row[other].grad if other in row else 0.0 for other in names}


def once_each(matrix: dict[str, dict[str, Any]], names: list[str]) -> dict[str, dict[str, Any]]:
    """``matrix`` with each mixed derivative taken once: H[b][a] is H[a][b] where a comes
    first in ``names``, as ``diff`` prints it. Rows a and b differentiate different formulas,
    whose roundings differ in the last bits (even in sign, for a 0)."""
    for position, name in enumerate(names):
        for other in names[:position]:
            matrix[name][other] = matrix[other][name]
    return matrix


def _check_row(checking: Checking, report: Any, name: str, row: Program, budget: int) -> None:
    """Check the entries of one row, the diagonal first, as far as its ``budget`` share of
    node recomputations reaches; the entries past it go to ``report.unchecked``."""
    nodes = row.nodes
    replayer = Replayer(nodes)
    entries = sorted(row.variables.items(), key=lambda item: item[0] != name)
    spent = 0
    for other, node in entries:
        cost = 2 * (len(nodes) - node.index)  # two replays of what depends on the node
        key = f"{name},{other}"
        if spent and spent + cost > budget:
            report.unchecked.append(key)
            continue
        spent += cost
        report.gradients[key] = checking.check_node(replayer, node, checking.rtol,
                                                    checking.atol)


# --- array programs ------------------------------------------------------------------------------

class GradientGraphs:
    """The gradient of every input as one program with an output per input, and the numeric
    gradient of the original program, at the point the program was evaluated at."""

    def __init__(self, program: Program, max_nodes: int) -> None:
        from gradcli.engine import arrays
        from gradcli.symbolic.diff import program_shapes
        from gradcli.symbolic.jacobians import gradients as array_gradients

        np = arrays.numpy()
        self.program = program
        self.names = list(program.variables)
        self.point = {n: node.value for n, node in program.variables.items()}
        self.shapes = {n: tuple(np.shape(v)) for n, v in self.point.items()}
        self.sizes = {n: int(np.size(v)) for n, v in self.point.items()}
        starts = list(itertools.accumulate(self.sizes.values(), initial=0))
        # each input's rows (and columns) in the joined, flattened Hessian
        self.spans = {n: slice(start, stop) for n, start, stop
                      in zip(self.names, starts, starts[1:], strict=False)}
        shapes = program_shapes(program, {}, self.point)
        _, found = array_gradients(program, shapes, self.names, max_nodes, self.point,
                                   exact=True)
        outputs: list[Node] = [found[name] for name in self.names]
        leaves = [node for node in nodes_of(outputs) if node.op is VAR]
        self.graph = Program.build_outputs("hessian", outputs, leaves, {})
        self.outputs = outputs
        arrays.bind(self.graph, {n: self.point[n] for n in self.graph.variables})
        arrays.forward(self.graph.nodes, self.graph.outputs)
        # the numeric gradient at the point: the evaluated program's backward pass
        self.numeric = self.flat({n: node.grad for n, node in program.variables.items()})

    def product(self, direction: Mapping[str, Any]) -> dict[str, Any]:
        """H v = J(grad)' v: one reverse pass from each input's gradient graph, seeded with
        that input's part of v, the passes summed (the Hessian is symmetric)."""
        from gradcli.engine import arrays

        np = arrays.numpy()
        found = {name: np.zeros(self.shapes[name]) for name in self.names}
        for name, output in zip(self.names, self.outputs, strict=True):
            if not output.needs_grad:
                continue  # a gradient that does not depend on any input: a zero block
            seed = np.broadcast_to(direction[name], np.shape(output.value))
            grads = arrays.backward_from(self.graph.nodes, output, seed)
            for other, node in self.graph.variables.items():
                part = grads.get(node.index)
                if part is not None:
                    found[other] = found[other] + np.reshape(part, self.shapes[other])
        return found

    def flat(self, parts: Mapping[str, Any]) -> Any:
        """Every input's part, flattened and joined in the inputs' order."""
        np = numpy()
        return np.concatenate([np.ravel(parts[n]).astype(float) for n in self.names])


class _Line:
    """The numeric gradient of the program (flattened, joined) at point + t * direction, each
    computed once (``_Checked`` puts the node values back)."""

    def __init__(self, graphs: GradientGraphs, direction: Mapping[str, Any]) -> None:
        self.graphs, self.direction = graphs, direction
        self.cache: dict[float, Any] = {0.0: graphs.numeric}
        self.moved = [n for n in graphs.names if numpy().any(direction[n])]  # others stay

    def at(self, t: float) -> Any:
        """The gradient at point + t * direction (computed once); a NumericError where that
        point is outside the domain."""
        if t in self.cache:
            return self.cache[t]
        from gradcli.engine import arrays

        np = arrays.numpy()
        graphs = self.graphs
        nodes = graphs.program.nodes
        for name, node in graphs.program.variables.items():
            node.value = graphs.point[name] + t * self.direction[name] if (
                name in self.moved) else graphs.point[name]
        try:
            arrays.forward(nodes)
            grads = arrays.backward_from(nodes, nodes[-1], np.ones(np.shape(nodes[-1].value)))
        except FloatingPointError as error:  # an overflow the careful path did not name
            raise NumericError(str(error)) from None
        self.cache[t] = graphs.flat({n: grads.get(node.index, np.zeros(graphs.shapes[n]))
                                     for n, node in graphs.program.variables.items()})
        return self.cache[t]


def _array_hessian(program: Program, checking: Checking | None,
                   max_nodes: int) -> HessianResult:
    """Every block H[a][b] (shape of a followed by shape of b) of the evaluated program,
    exact, each column checked by differences of the numeric gradient along its element."""
    np = numpy()
    names = list(program.variables)
    elements = sum(int(np.size(program.variables[n].value)) for n in names)
    if elements > MAX_ARRAY_HESSIAN_INPUTS:
        raise UsageError(
            f"the Hessian of {elements:,} input elements is {elements:,}x{elements:,}, over the "
            f"limit of {MAX_ARRAY_HESSIAN_INPUTS:,} input elements",
            hint="--hvp NAME=ARRAY gives the Hessian-vector product H·v along one direction")
    if not names:  # sum(ones(3)): nothing to differentiate, as a program of numbers
        return HessianResult({}, None if checking is None else checking.report(
            checking.rtol, checking.atol, nodes_skipped=True))
    graphs = GradientGraphs(program, max_nodes)
    columns, units = [], []
    for b in names:
        for k in range(graphs.sizes[b]):
            unit = {n: np.zeros(graphs.shapes[n]) for n in names}
            unit[b].reshape(-1)[k] = 1.0
            units.append((unit, base_step(float(np.ravel(graphs.point[b])[k]))))
            columns.append(graphs.flat(graphs.product(unit)))
    matrix = np.stack(columns, axis=-1) if columns else np.zeros((0, 0))
    report = None if checking is None else _Checked(checking, graphs, matrix, units, {
        f"{a},{b}": (rows, cols, graphs.shapes[a] + graphs.shapes[b])
        for a, rows in graphs.spans.items() for b, cols in graphs.spans.items()}).report
    blocks = {a: {b: _plain(matrix[rows, cols].reshape(graphs.shapes[a] + graphs.shapes[b]))
                  for b, cols in graphs.spans.items()} for a, rows in graphs.spans.items()}
    return HessianResult(blocks, report)


def hvp_at(program: Program, direction: Mapping[str, Any], checking: Checking | None = None,
           max_nodes: int = MAX_NODES) -> HvpResult:
    """H v of the evaluated program for ``direction`` (every input's shape; a missing input
    moves by 0), checked by differences of the numeric gradient along v."""
    from gradcli.engine import arrays

    np = arrays.numpy()
    names = list(program.variables)
    unknown = [n for n in direction if n not in program.variables]
    if unknown:
        raise UsageError(f"--hvp {unknown[0]}: the program has no variable {unknown[0]}",
                         hint=f"its variables: {', '.join(names)}")
    if not direction:
        raise UsageError("--hvp needs a direction for at least one input",
                         hint='e.g. --hvp x="[1, 0, 0]"')
    v = {}
    for name in names:
        shape = np.shape(program.variables[name].value)
        given = arrays.as_array(f"--hvp {name}", direction[name]) if name in direction else (
            np.zeros(shape))
        if np.shape(given) != shape:
            raise UsageError(f"--hvp {name} has shape {arrays.shape_text(np.shape(given))}, and "
                             f"{name} has shape {arrays.shape_text(shape)}",
                             hint="the direction has the shape of the input it moves")
        v[name] = np.asarray(given, dtype=float)
    graphs = GradientGraphs(program, max_nodes)
    product = graphs.product(v)
    report = None if checking is None else _Checked(
        checking, graphs, graphs.flat(product)[:, None], [(v, _line_step(graphs, v))],
        {name: (rows, slice(0, 1), graphs.shapes[name]) for name, rows in graphs.spans.items()}
    ).report
    return HvpResult({n: _plain(p) for n, p in product.items()},
                     {n: _plain(d) for n, d in v.items()}, report)


def _line_step(graphs: GradientGraphs, direction: Mapping[str, Any]) -> float:
    """The first step along ``direction``: the largest that moves no element further than
    its own step (eps^(1/3) * max(1, |value|)) would; eps^(1/3) for a direction of zeros."""
    np = numpy()
    limits = [base_step(graphs.point[n], np.maximum)[moved] / np.abs(direction[n])[moved]
              for n in graphs.names
              if (moved := np.asarray(direction[n]) != 0).any()]
    return float(min(np.min(limit) for limit in limits)) if limits else base_step(0.0)


class _Checked:
    """Every column k of ``analytic`` checked along ``lines[k]`` (a direction and its first
    step), and a ``report`` of each block's verdict (``blocks``: key -> rows, columns, shape;
    an empty block has none)."""

    def __init__(self, checking: Checking, graphs: GradientGraphs, analytic: Any,
                 lines: list[tuple[Mapping[str, Any], float]],
                 blocks: dict[str, tuple[slice, slice, tuple[int, ...]]]) -> None:
        self.checking, self.analytic = checking, analytic
        self.columns = no_estimates(numpy().shape(analytic))
        nodes = graphs.program.nodes
        values = [node.value for node in nodes]  # put back after the lines moved the inputs
        try:
            for k, (direction, base) in enumerate(lines):
                column = self._check_line(_Line(graphs, direction), base, analytic[:, k])
                for mine, theirs in zip(self.columns, column, strict=True):
                    mine[:, k] = theirs
        finally:
            for node, value in zip(nodes, values, strict=True):
                node.value = value
        self.report = checking.report(checking.rtol, checking.atol, nodes_skipped=True)
        for key, (rows, cols, shape) in blocks.items():
            if math.prod(shape):
                self.report.gradients[key] = self.verdict(rows, cols, shape)

    def _check_line(self, line: _Line, base: float, analytic: Any) -> Estimates:
        """Every entry of a column checked at once with ``check_node``'s policy
        (``steps.settle``), f being the numeric gradient along the line (one evaluation per
        step for every entry)."""
        np = numpy()

        def sample(rows: Any, offset: float, h: Any) -> tuple[Any, Any, Any]:
            try:
                value = line.at(offset * float(h[0]))[rows]  # one step for the whole line
            except NumericError:
                return (np.full(rows.size, np.nan), np.full(rows.size, np.nan),
                        np.ones(rows.size, bool))
            return value, np.abs(value), np.zeros(rows.size, dtype=bool)

        size = len(analytic)
        return settle(analytic, np.full(size, base), line.at(0.0), sample, np.arange(size),
                      self.checking.rtol, self.checking.atol)

    def verdict(self, rows: slice, cols: slice, shape: tuple[int, ...]) -> Any:
        """One verdict for the block ``rows`` x ``cols`` (of ``shape``): counts, and the worst
        entry (the failure with the largest error, else the largest error)."""
        np = numpy()
        part = Estimates(*(field[rows, cols].reshape(-1) for field in self.columns))
        analytic = self.analytic[rows, cols].reshape(-1)
        known = np.where(np.isfinite(part.error), part.error, 0.0)
        failed = int((~part.ok).sum())
        worst = int(np.argmax(np.where(part.ok, -1.0, known) if failed else known))
        estimated = part.stencil[worst] >= 0
        return self.checking.verdict(
            analytic=float(analytic[worst]),
            numeric=float(part.numeric[worst]) if estimated else None,
            abs_error=float(part.error[worst]) if estimated else None,
            tolerance=float(part.tolerance[worst]), ok=failed == 0,
            method=STENCILS[part.stencil[worst]].method if estimated else "none",
            step=float(part.step[worst]), checked=int(part.ok.size), size=int(part.ok.size),
            failed=failed, where=tuple(int(i) for i in np.unravel_index(worst, shape)))


def _plain(value: Any) -> Any:
    """``arrays.plain``, and + 0.0 turns the -0.0 of products with zero into 0.0."""
    from gradcli.engine import arrays

    return arrays.plain(value) + 0.0

