"""Hessians and Hessian-vector products of scalar-output array programs (issue 17).

Exact second derivatives come from reverse mode run twice: symbolic/array_diff.py builds each
input's gradient as a graph of array ops (the array ops' own VJP rules, the ones that give
numeric gradients, run on graph nodes, in forms exact at every point: ``exact=True``), and
reverse passes of those gradient graphs seeded with a direction ``v`` (one cotangent per
input, engine/arrays.py's ``backward_from``) give J(grad)' v = H v, since the Hessian is
symmetric. The full Hessian is one such product per input element (a column each);
``--hvp`` is one product.

The check is independent of those rules: central differences of the numeric gradient
(engine/arrays.py's backward pass). One perturbed pair of gradients checks a whole column, or,
for ``--hvp``, the whole product along ``v``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gradcli.engine import arrays
from gradcli.engine.graph import Program, nodes_of
from gradcli.engine.ops import VAR
from gradcli.errors import UsageError
from gradcli.gradcheck.check import CheckReport, GradientCheck
from gradcli.gradcheck.hessian import HessianResult
from gradcli.limits import MAX_ARRAY_HESSIAN_INPUTS
from gradcli.symbolic.array_diff import gradients, program_shapes

_STEP = 6e-6  # about the cube root of the float epsilon: central differences' best step


@dataclass
class HvpResult:
    """H·v by input (each the input's shape), the direction, and the check along v."""

    product: dict[str, Any]
    direction: dict[str, Any]
    check: CheckReport | None


class GradientGraphs:
    """The gradient of every input as one program with an output per input, and the numeric
    gradient of the original program, both at the bound point."""

    def __init__(self, program: Program, max_nodes: int) -> None:
        self.program = program
        self.names = list(program.variables)
        self.point = {n: node.value for n, node in program.variables.items()}
        shapes = program_shapes(program, {}, self.point)
        found, _ = gradients(program, shapes, self.names, max_nodes, self.point, exact=True)
        outputs = [found[name] for name in self.names]
        leaves = [node for node in nodes_of(outputs) if node.op is VAR]
        self.graph = Program.build_outputs("hessian", outputs, leaves, {})
        self.outputs = outputs
        arrays.bind(self.graph, {n: self.point[n] for n in self.graph.variables})
        arrays.forward(self.graph.nodes)

    def product(self, direction: Mapping[str, Any]) -> dict[str, Any]:
        """H v = J(grad)' v: one reverse pass from each input's gradient graph, seeded with
        that input's part of v, the passes summed (the Hessian is symmetric)."""
        np = arrays.numpy()
        found = {name: np.zeros(np.shape(self.point[name])) for name in self.names}
        for name, output in zip(self.names, self.outputs, strict=True):
            if not output.needs_grad:
                continue  # a gradient that does not depend on any input: a zero block
            seed = np.broadcast_to(direction[name], np.shape(output.value))
            grads = arrays.backward_from(self.graph.nodes, output, seed)
            for other, node in self.graph.variables.items():
                part = grads.get(node.index)
                if part is not None:
                    found[other] = found[other] + np.reshape(part, np.shape(found[other]))
        return found

    def gradient_at(self, shift: Mapping[str, Any], scale: float) -> dict[str, Any]:
        """The numeric gradient of the original program at point + scale * shift."""
        values = {n: self.point[n] + scale * shift[n] for n in self.names}
        arrays.bind(self.program, values)
        arrays.forward(self.program.nodes)
        arrays.backward(self.program.nodes)
        found = {n: arrays.numpy().array(node.grad, dtype=float)
                 for n, node in self.program.variables.items()}
        arrays.bind(self.program, self.point)  # leave the program as it was evaluated
        arrays.forward(self.program.nodes)
        arrays.backward(self.program.nodes)
        return found

    def difference(self, direction: Mapping[str, Any]) -> tuple[dict[str, Any], float]:
        """Central difference of the gradient along ``direction`` and the step it took."""
        np = arrays.numpy()
        size = max(float(np.max(np.abs(direction[n]))) for n in self.names) or 1.0
        reach = max(float(np.max(np.abs(self.point[n]))) for n in self.names)
        step = _STEP * max(1.0, reach) / size
        ahead, behind = self.gradient_at(direction, step), self.gradient_at(direction, -step)
        return {n: (ahead[n] - behind[n]) / (2 * step) for n in self.names}, step


def hessian_size_error(elements: int) -> UsageError:
    return UsageError(
        f"the Hessian of {elements:,} input elements is {elements:,}x{elements:,}, over the "
        f"limit of {MAX_ARRAY_HESSIAN_INPUTS:,} input elements",
        hint="--hvp NAME=ARRAY gives the Hessian-vector product H·v along one direction")


def array_hessian(program: Program, check: bool, rtol: float, atol: float,
                  max_nodes: int) -> HessianResult:
    """Every block H[a][b] (shape of a followed by shape of b) of the bound program, exact,
    each column checked by a central difference of the numeric gradient."""
    np = arrays.numpy()
    names = list(program.variables)
    sizes = {n: int(np.size(program.variables[n].value)) for n in names}
    elements = sum(sizes.values())
    if elements > MAX_ARRAY_HESSIAN_INPUTS:
        raise hessian_size_error(elements)
    graphs = GradientGraphs(program, max_nodes)
    shapes = {n: np.shape(graphs.point[n]) for n in names}
    columns: dict[str, list[dict[str, Any]]] = {b: [] for b in names}
    differences: dict[str, list[dict[str, Any]]] = {b: [] for b in names}
    for b in names:
        for k in range(sizes[b]):
            unit = {n: np.zeros(shapes[n]) for n in names}
            unit[b] = np.zeros(sizes[b])
            unit[b][k] = 1.0
            unit[b] = unit[b].reshape(shapes[b])
            columns[b].append(graphs.product(unit))
            if check:
                differences[b].append(graphs.difference(unit)[0])
    matrix = {a: {b: np.stack([column[a].reshape(-1) for column in columns[b]], axis=-1)
                  .reshape(shapes[a] + shapes[b]) for b in names} for a in names}
    report = None
    if check:
        numeric = {a: {b: np.stack([d[a].reshape(-1) for d in differences[b]], axis=-1)
                       .reshape(shapes[a] + shapes[b]) for b in names} for a in names}
        report = CheckReport(rtol, atol, nodes_skipped=True)
        for a in names:
            for b in names:
                report.gradients[f"{a},{b}"] = compare(matrix[a][b], numeric[a][b], rtol, atol,
                                                       _STEP)
    plain = {a: {b: _plain(block) for b, block in row.items()} for a, row in matrix.items()}
    return HessianResult(plain, report)


def array_hvp(program: Program, direction: Mapping[str, Any], check: bool, rtol: float,
              atol: float, max_nodes: int) -> HvpResult:
    """H v for ``direction`` (every input's shape; a missing input moves by 0), checked by a
    central difference of the numeric gradient along v."""
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
        v[name] = given
    graphs = GradientGraphs(program, max_nodes)
    product = graphs.product(v)
    report = None
    if check:
        numeric, step = graphs.difference(v)
        report = CheckReport(rtol, atol, nodes_skipped=True)
        for name in names:
            report.gradients[name] = compare(product[name], numeric[name], rtol, atol, step)
    return HvpResult({n: _plain(p) for n, p in product.items()},
                     {n: _plain(d) for n, d in v.items()}, report)


def compare(analytic: Any, numeric: Any, rtol: float, atol: float,
            step: float) -> GradientCheck:
    """Element by element: within atol + rtol * |numeric|; the worst element's numbers."""
    np = arrays.numpy()
    shape = np.shape(analytic)
    analytic, numeric = np.atleast_1d(analytic), np.atleast_1d(numeric)
    error = np.abs(analytic - numeric)
    tolerance = atol + rtol * np.maximum(np.abs(numeric), np.abs(analytic))
    bad = error > tolerance
    worst = int(np.argmax(np.where(bad, np.inf, 0) + error))
    where = tuple(int(i) for i in np.unravel_index(worst, shape)) if shape else ()
    checked = GradientCheck(
        analytic=float(analytic.flat[worst]), numeric=float(numeric.flat[worst]),
        abs_error=float(error.flat[worst]), tolerance=float(tolerance.flat[worst]),
        ok=not bool(bad.any()), method="central", step=step, checked=int(analytic.size),
        size=int(analytic.size), failed=int(bad.sum()), where=where)
    return checked


def _plain(value: Any) -> Any:
    """A 0-d array as a float; + 0.0 turns the -0.0 of products with zero into 0.0."""
    np = arrays.numpy()
    return float(value) + 0.0 if not np.ndim(value) else np.asarray(value, dtype=float) + 0.0
