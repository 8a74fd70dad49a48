"""Programs with several outputs or an array output (``f, g``, ``W@x``): every output's value,
the Jacobian (engine/jacobian.py) and its check by the gradient check's finite differences
(gradcheck/steps.py), two forward passes per input element and step, each giving a whole
column; past ``ARRAY_CHECK_ELEMENTS`` input elements an evenly spread sample of them, and the
verdict says how many.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gradcli.engine import arrays, jacobian
from gradcli.engine.graph import Node, Program
from gradcli.engine.masks import live_nodes, live_part
from gradcli.engine.notation import expression_texts
from gradcli.engine.replay import Replayer, rounding_weight
from gradcli.errors import ExitStatus, NumericError, UsageError
from gradcli.gradcheck.elements import sample
from gradcli.gradcheck.steps import Estimates, base_step, no_estimates, own_step, settle
from gradcli.limits import ARRAY_CHECK_ELEMENTS, MAX_CONTRIBUTION_CELLS

_CHUNK_CELLS = 1 << 18  # Jacobian entries settled at once (a few MB of each of settle's arrays)


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
    tolerance: float  # the worst entry's (with the noise allowance of steps.judge)

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


@dataclass(repr=False)  # its own __repr__, as Result
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

    def __repr__(self) -> str:
        """Short, for a Python prompt, as ``Result``'s: outputs, mode and the verdict (the
        tables are ``_repr_html_``/``_repr_pretty_`` in Jupyter and IPython)."""
        verdict = ("not checked" if self.check is None else
                   "passed" if self.check.ok else "FAILED")
        outputs = ", ".join(f"{label}: {arrays.shape_text(arrays.numpy().shape(value))}"
                            for label, value in self.values.items())
        return (f"JacobianResult(outputs={{{outputs}}}, inputs={list(self.point)}, "
                f"mode={self.mode!r}, check={verdict}, nodes={len(self.program.nodes)})")

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
                arrays.forward(nodes, self.program.outputs)
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
        taken = live_nodes(nodes, self.program.outputs)
        np = arrays.numpy()
        for i in range(len(nodes)) if only is None else only:
            node = nodes[i]
            yield {"id": i, "op": node.op.name, "label": node.name or texts[i],
                   "value": arrays.plain(node.value, copy=True)
                   if taken is None or taken[i] is not False or not node.inputs else None,
                   "shape": list(np.shape(node.value)),
                   "inputs": [source.index for source in node.inputs],
                   "gradients": {label: None if (g := found.get(label, {}).get(i)) is None
                                 else arrays.plain(g, copy=True) for label in self.values}}


def evaluate_jacobian(program: Program, settings: Any) -> JacobianResult:
    """Values, Jacobian and its check; the values are bound and computed (``arrays.forward``),
    and no Hessian is asked for (``evaluate`` refuses it first)."""
    if settings.check and settings.check_method != "central":
        raise UsageError("Jacobians are checked by central differences only",
                         hint="drop --check-method (or use --no-check)")
    outputs = program.outputs or [program.nodes[-1]]
    inputs = list(program.variables.values())
    mode = jacobian.choose_mode(outputs, inputs, settings.mode)
    blocks = jacobian.blocks(program, mode)
    labels = list(blocks)
    point = {name: arrays.plain(node.value, copy=True) for name, node in program.variables.items()}
    values = {label: arrays.plain(out.value, copy=True)
              for label, out in zip(labels, outputs, strict=True)}
    result = JacobianResult(program, point, values, blocks, mode,
                            jacobian.passes(outputs, inputs, mode))
    if settings.check:
        result.check = check_jacobian(program, outputs, labels, blocks, settings.rtol,
                                      settings.atol)
    return result


def check_jacobian(program: Program, outputs: list[Node], labels: list[str],
                   blocks: dict[str, dict[str, Any]], rtol: float,
                   atol: float) -> JacobianCheck:
    """Each perturbed input element's column (every output's entries) settled by the gradient
    check's step policy (``steps.settle``: its steps, noise allowance and one-sided stencils),
    the noise allowance of an entry weighing each value by its effect on that entry, as the
    gradient check weighs it (``_entry_weights``)."""
    np = arrays.numpy()
    inputs = list(program.variables.values())
    total = sum(int(np.size(v.value)) for v in inputs)
    share = max(1, ARRAY_CHECK_ELEMENTS // max(1, len(inputs)))
    sizes = [int(np.size(out.value)) for out in outputs]
    f0 = np.concatenate([np.ravel(out.value) for out in outputs]).astype(float)
    checks: dict[str, dict[str, EntryCheck]] = {label: {} for label in labels}
    weights = _entry_weights(program.nodes, outputs, sum(sizes))
    perturbed = 0
    for v in inputs:
        elements = sample(int(np.size(v.value)), max(share, 2))  # both ends, at least
        perturbed += len(elements)
        analytic = np.concatenate([np.reshape(blocks[label][v.name], (size, -1))[:, elements]
                                   for label, size in zip(labels, sizes, strict=True)])
        original = v.value
        try:
            found = _settled(program, outputs, v, elements, f0, analytic, rtol, atol, weights)
        finally:
            v.value = original
            arrays.forward(program.nodes, program.outputs)
        start = 0
        for label, out, size in zip(labels, outputs, sizes, strict=True):
            rows = slice(start, start + size)
            checks[label][v.name] = _entry(analytic[rows], Estimates(*(f[rows] for f in found)),
                                           elements, np.shape(out.value), np.shape(v.value))
            start += size
    return JacobianCheck(checks, rtol, atol, perturbed, total)


def _settled(program: Program, outputs: list[Node], v: Node, elements: list[int], f0: Any,
             analytic: Any, rtol: float, atol: float, weights: Any) -> Estimates:
    """Every entry of ``analytic`` (rows: output entries, columns: ``elements`` of ``v``)
    settled as the gradient check settles one, f of an entry being its output entry with its
    column's element moved; the largest rounding scale an evaluation saw (the rounding a
    difference can carry: ``(1e8 + x) - 1e8``) is the output entry's, the moved element's, or
    that of any value downstream of ``v`` at the point (taken once: a step moves them by a
    step's worth), each weighed by its effect on the entry (``weights``: ``_entry_weights``).
    ``f0``: every output entry at the point. Columns go to ``settle`` a chunk at a time
    (``_CHUNK_CELLS`` entries: its NumPy work shared, its memory bounded), a sample making one
    forward pass per column it touches. Leaves ``v`` moved."""
    np = arrays.numpy()
    original = v.value
    x = np.ravel(original)[elements].astype(float)
    count = analytic.shape[0]  # output entries: entry i of column k is number k * count + i
    downstream = [v, *Replayer(program.nodes).affected(v.index)]
    indices = [node.index for node in downstream]  # v first
    taken = live_nodes(program.nodes, outputs)  # a branch not taken rounds nothing
    magnitudes = np.array([np.max(np.abs(node.value if taken is None else live_part(
        node.value, taken[node.index])), initial=0.0) for node in downstream])
    if weights is None:
        seen = (np.full(count, magnitudes.max()), np.ones(count))
    else:
        weighed = weights[:, indices]
        seen = ((weighed * magnitudes).max(axis=1), weighed[:, 0])
    found = no_estimates(analytic.shape)
    width = max(1, _CHUNK_CELLS // max(1, count))
    for first in range(0, len(elements), width):
        columns = slice(first, min(first + width, len(elements)))
        part = _settled_columns(program, outputs, v, original, seen, elements, x, columns, f0,
                                analytic, rtol, atol)
        for whole, chunk in zip(found, part, strict=True):
            whole[:, columns] = chunk
    return found


def _entry_weights(nodes: list[Node], outputs: list[Node], count: int) -> Any:
    """Each output entry's ``rounding_weight`` of every node, min(1, |d entry / d node|), as
    ``replay.Replayer`` weighs them for one output: one reverse pass per entry, a row each
    (``count`` rows, a column per node). None past ``_WEIGHED_ENTRIES`` entries or
    ``_WEIGHED_CELLS`` weights, or where a pass fails: every weight is then 1 (the bare
    magnitudes: looser, never tighter)."""
    np = arrays.numpy()
    if count > _WEIGHED_ENTRIES or count * len(nodes) > _WEIGHED_CELLS:
        return None
    rows = []
    for out in outputs:
        shape = np.shape(out.value)
        for element in np.ndindex(*shape):
            seed = np.zeros(shape)
            seed[element] = 1.0
            try:
                grads = arrays.backward_from(nodes, out, seed)
            except NumericError:
                return None
            rows.append([rounding_weight(grads.get(node.index, 0.0)) for node in nodes])
    return np.array(rows).reshape(count, len(nodes))


_WEIGHED_ENTRIES = 256  # output entries weighed one reverse pass each (``_entry_weights``)
_WEIGHED_CELLS = 1 << 22  # and at most this many weights (32 MB)


def _settled_columns(program: Program, outputs: list[Node], v: Node, original: Any,
                     seen: tuple[Any, Any], elements: list[int], x: Any, columns: slice,
                     f0: Any, analytic: Any, rtol: float, atol: float) -> Estimates:
    """``_settled`` for the columns ``columns`` (a range of ``elements``); ``seen``: the
    entries' rounding scales at the point and the perturbed input's weights."""
    np = arrays.numpy()
    count = analytic.shape[0]
    width = columns.stop - columns.start

    scales, own = seen

    def sample_at(rows: Any, offset: float, h: Any) -> tuple[Any, Any, Any]:
        value, failed = np.full(rows.size, np.nan), np.zeros(rows.size, dtype=bool)
        entries = rows % count
        largest = scales[entries]
        at = rows // count  # ascending, as settle keeps its rows
        starts = np.flatnonzero(np.r_[True, at[1:] != at[:-1]])
        v.value = np.array(original, dtype=float)  # each column moves one element, then back
        for start, end in zip(starts, [*starts[1:], rows.size], strict=True):
            k = columns.start + int(at[start])
            shifted = x[k] + offset * float(h[start])  # one step a column
            v.value.flat[elements[k]] = shifted
            largest[start:end] = np.maximum(largest[start:end],
                                            abs(shifted) * own[entries[start:end]])
            try:
                arrays.forward(program.nodes, program.outputs)
                moved = np.concatenate([np.ravel(out.value) for out in outputs])  # a copy
            except NumericError:
                failed[start:end] = True
                continue
            finally:
                v.value.flat[elements[k]] = x[k]
            whole = end - start == count
            value[start:end] = moved if whole else moved[rows[start:end] % count]
        return value, np.maximum(np.abs(value), largest), failed

    entries = analytic[:, columns].T.reshape(-1)
    found = settle(entries, np.repeat(base_step(x[columns], np.maximum), count),
                   np.tile(f0, width), sample_at, np.arange(entries.size), rtol, atol,
                   own=np.repeat(own_step(x[columns]), count))
    return Estimates(*(field.reshape(width, count).T for field in found))


def _entry(analytic: Any, found: Estimates, elements: list[int], out_shape: tuple[int, ...],
           in_shape: tuple[int, ...]) -> EntryCheck:
    """One block's verdict from its settled entries (rows: output entries, columns: the
    perturbed elements): counts, and the worst entry by error over tolerance."""
    np = arrays.numpy()
    size = analytic.shape[0] * math.prod(in_shape)
    if not analytic.size:
        return EntryCheck(checked=0, size=size, failed=0, max_error=0.0, where=(),
                          analytic=0.0, numeric=0.0, tolerance=0.0)
    finite = np.isfinite(found.error)
    ratio = np.where(finite, found.error / np.maximum(found.tolerance, 1e-300), np.inf)
    row, col = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    where = (tuple(int(i) for i in np.unravel_index(row, out_shape))
             + tuple(int(i) for i in np.unravel_index(elements[col], in_shape)))
    return EntryCheck(checked=int(analytic.size), size=size,
                      failed=int(np.count_nonzero(~found.ok)),
                      max_error=float(found.error[finite].max(initial=0.0)), where=where,
                      analytic=float(analytic[row, col]), numeric=float(found.numeric[row, col]),
                      tolerance=float(found.tolerance[row, col]))
