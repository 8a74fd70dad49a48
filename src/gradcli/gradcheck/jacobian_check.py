"""Programs with several outputs or an array output (``f, g``, ``W@x``): every output's value,
the Jacobian (engine/jacobian.py) and its check by central differences, two forward passes per
input element, each giving a whole column; past ``ARRAY_CHECK_ELEMENTS`` input elements an
evenly spread sample of them, and the verdict says how many.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gradcli.engine import arrays, jacobian
from gradcli.engine.graph import Node, Program, output_labels
from gradcli.engine.notation import expression_texts
from gradcli.errors import ExitStatus, NumericError, UsageError
from gradcli.gradcheck.elements import sample
from gradcli.limits import ARRAY_CHECK_ELEMENTS, MAX_CONTRIBUTION_CELLS

_STEP = 6e-6  # about the cube root of the float epsilon: central differences' best step


@dataclass
class EntryCheck:
    """The check of one block of the Jacobian (one output, one input)."""

    checked: int  # entries compared (all outputs' elements times the perturbed input elements)
    size: int  # entries in the block
    failed: int
    max_error: float
    where: tuple[int, ...]  # the worst entry: output index then input index
    analytic: float
    numeric: float

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def abs_error(self) -> float:
        """The worst entry's error under the gradient check's name (one table cell for both)."""
        return self.max_error


@dataclass
class JacobianCheck:
    """Every block's check, and the tolerances they were held to."""

    blocks: dict[str, dict[str, EntryCheck]]
    rtol: float
    atol: float
    columns: int  # input elements perturbed
    inputs: int  # input elements

    @property
    def ok(self) -> bool:
        return all(entry.ok for row in self.blocks.values() for entry in row.values())

    @property
    def checked(self) -> int:
        return sum(entry.checked for row in self.blocks.values() for entry in row.values())

    @property
    def failed(self) -> int:
        return sum(entry.failed for row in self.blocks.values() for entry in row.values())

    @property
    def max_error(self) -> float:
        return max((entry.max_error for row in self.blocks.values() for entry in row.values()),
                   default=0.0)


@dataclass
class JacobianResult:
    """A program with several outputs (or an array output) evaluated at one point."""

    program: Program
    point: dict[str, Any]  # every input variable's value
    values: dict[str, Any]  # every output's value, by its label
    jacobian: dict[str, dict[str, Any]]  # output label -> input name -> shape out + in
    mode: str  # "forward" or "reverse": which ran
    passes: int  # how many passes it made
    check: JacobianCheck | None = None
    notes: list[str] = field(default_factory=list)
    _contributions: dict[str, dict[int, Any]] | None = field(default=None, repr=False)

    @property
    def status(self) -> ExitStatus:
        failed = self.check is not None and not self.check.ok
        return ExitStatus.CHECK_FAILED if failed else ExitStatus.OK

    @property
    def value(self) -> Any:
        """The value of the only output (the last one when there are several)."""
        return list(self.values.values())[-1]

    def contributions(self) -> dict[str, dict[int, Any]] | None:
        """Each output's gradient with respect to every node it depends on: ``{output label:
        {node index: array of shape output + node}}``, by one reverse pass per output element;
        None past ``MAX_CONTRIBUTION_CELLS`` numbers. Made when first asked (a table or JSON
        shows them; a Jacobian alone does not pay for them), at this result's point."""
        if self._contributions is None and self.contribution_cells() <= MAX_CONTRIBUTION_CELLS:
            np, nodes = arrays.numpy(), self.program.nodes
            # back at this result's point if the program was evaluated elsewhere since (the
            # same parsed program given to ``evaluate`` twice)
            if any(not np.array_equal(node.value, self.point[name])
                   for name, node in self.program.variables.items()):
                arrays.bind(self.program, self.point)
                arrays.forward(nodes)
            outputs = self.program.outputs or [nodes[-1]]
            self._contributions = {label: jacobian.contributions(nodes, out) for label, out
                                   in zip(self.values, outputs, strict=True)}
        return self._contributions

    def contribution_cells(self) -> int:
        """How many numbers the per-node contributions hold."""
        np = arrays.numpy()
        outputs = sum(int(np.size(value)) for value in self.values.values())
        return outputs * sum(int(np.size(node.value)) for node in self.program.nodes)

    def node_records(self, only: Iterable[int] | None = None) -> Iterator[dict[str, Any]]:
        """One record per node: id, op, label, value, shape, inputs, and ``"gradients"``: each
        output's gradient with respect to the node (None where the output does not depend on
        it; every one None past ``MAX_CONTRIBUTION_CELLS``)."""
        nodes = self.program.nodes
        texts = expression_texts(nodes)
        found = self.contributions() or {}
        np = arrays.numpy()
        for i in range(len(nodes)) if only is None else only:
            node = nodes[i]
            yield {"id": i, "op": node.op.name, "label": node.name or texts[i],
                   "value": _plain(np.array(node.value)), "shape": list(np.shape(node.value)),
                   "inputs": [source.index for source in node.inputs],
                   "gradients": {label: None if (g := found.get(label, {}).get(i)) is None
                                 else _plain(g) for label in self.values}}


def evaluate_jacobian(program: Program, settings: Any) -> JacobianResult:
    """Values, Jacobian and its check; the values are bound and computed (``arrays.forward``),
    and no Hessian is asked for (``evaluate`` refuses it first)."""
    np = arrays.numpy()
    if settings.check and settings.check_method != "central":
        raise UsageError("Jacobians are checked by central differences only",
                         hint="drop --check-method (or use --no-check)")
    outputs = program.outputs or [program.nodes[-1]]
    inputs = list(program.variables.values())
    mode = jacobian.choose_mode(outputs, inputs, settings.mode)
    found = jacobian.jacobian(program.nodes, outputs, inputs, mode)
    labels = output_labels(program)
    blocks = {label: {v.name: _plain(found[out.index][v.index]) for v in inputs}
              for label, out in zip(labels, outputs, strict=True)}
    point = {name: _plain(node.value) for name, node in program.variables.items()}
    values = {label: _plain(np.array(out.value)) for label, out in zip(labels, outputs,
                                                                        strict=True)}
    result = JacobianResult(program, point, values, blocks, mode,
                            jacobian.passes(outputs, inputs, mode))
    if settings.check:
        result.check = check_jacobian(program, outputs, labels, blocks, settings.rtol,
                                      settings.atol)
    return result


def _plain(value: Any) -> Any:
    """A 0-d array as a float, an array as a copy of its own."""
    np = arrays.numpy()
    return float(value) if not np.ndim(value) else np.array(value, dtype=float)


def check_jacobian(program: Program, outputs: list[Node], labels: list[str],
                   blocks: dict[str, dict[str, Any]], rtol: float,
                   atol: float) -> JacobianCheck:
    """Central differences, one column (every output) per perturbed input element."""
    np = arrays.numpy()
    inputs = list(program.variables.values())
    total = sum(int(np.size(v.value)) for v in inputs)
    share = max(1, ARRAY_CHECK_ELEMENTS // max(1, len(inputs)))
    checks: dict[str, dict[str, EntryCheck]] = {label: {} for label in labels}
    perturbed = 0
    for v in inputs:
        elements = sample(int(np.size(v.value)), max(share, 2))  # both ends, at least
        perturbed += len(elements)
        columns = _columns(program, outputs, v, elements)
        for label, out in zip(labels, outputs, strict=True):
            checks[label][v.name] = _compare(np.asarray(blocks[label][v.name]), elements,
                                             columns[out.index], np.shape(v.value), rtol, atol)
    return JacobianCheck(checks, rtol, atol, perturbed, total)


def _columns(program: Program, outputs: list[Node], v: Node,
             elements: list[int]) -> dict[int, Any]:
    """For each output, the central differences along ``elements`` of ``v``: an array of shape
    ``out + (len(elements),)``, NaN in a column whose step leaves the domain."""
    np = arrays.numpy()
    original = v.value
    found: dict[int, list[Any]] = {out.index: [] for out in outputs}
    try:
        for flat in elements:
            x = float(np.ravel(original)[flat])
            h = _STEP * max(1.0, abs(x))
            ends = []
            for moved in (x + h, x - h):
                v.value = np.array(original, dtype=float)
                v.value.flat[flat] = moved  # a number is the array of shape ()
                try:
                    arrays.forward(program.nodes)
                    ends.append([np.array(out.value, dtype=float) for out in outputs])
                except NumericError:
                    ends.append([np.full(np.shape(out.value), np.nan) for out in outputs])
            for out, up, down in zip(outputs, *ends, strict=True):
                found[out.index].append((up - down) / (2 * h))
    finally:
        v.value = original
        arrays.forward(program.nodes)
    return {index: np.moveaxis(np.array(cols), 0, -1) for index, cols in found.items()}


def _compare(analytic: Any, elements: list[int], numeric: Any, in_shape: tuple[int, ...],
             rtol: float, atol: float) -> EntryCheck:
    """The analytic block's columns at ``elements`` against the central differences."""
    np = arrays.numpy()
    out_shape = analytic.shape[:analytic.ndim - len(in_shape)]
    flat = analytic.reshape((*out_shape, -1))[..., elements]
    allowed = atol + rtol * np.maximum(np.abs(flat), np.abs(numeric))
    error = np.abs(flat - numeric)
    bad = ~(error <= allowed)  # nan (a column outside the domain) fails
    ratio = np.where(np.isnan(error), np.inf, error / allowed)
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape) if ratio.ndim else ()
    column = elements[worst[-1]] if worst else 0
    where = tuple(int(i) for i in worst[:-1]) + tuple(
        int(i) for i in np.unravel_index(column, in_shape)) if worst else ()
    return EntryCheck(checked=int(flat.size), size=int(analytic.size),
                      failed=int(np.count_nonzero(bad)),
                      max_error=float(np.nanmax(error)) if error.size else 0.0, where=where,
                      analytic=float(flat[worst]), numeric=float(numeric[worst]))
