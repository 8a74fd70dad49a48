"""Jacobians of programs with several outputs, or an array output (docs/matrix-calculus.md).

The Jacobian of an output f (shape F) with respect to an input x (shape X) has shape F + X. Two
ways, on the op table's rules alone: reverse mode, one backward pass per output element (a row);
forward mode, one tangent pass per input element (a column). ``choose_mode`` takes the one with
fewer passes.
"""

from __future__ import annotations

import math
from typing import Any

from gradcli.engine import arrays, masks
from gradcli.engine.graph import Node, Program, describe, output_labels
from gradcli.engine.ops import NUMPY
from gradcli.errors import NumericError


def blocks(program: Program, mode: str) -> dict[str, dict[str, Any]]:
    """The Jacobian of an evaluated program by output label, then input name: plain arrays
    (copies), ``mode`` forward or reverse."""
    outputs = program.outputs or [program.nodes[-1]]
    inputs = list(program.variables.values())
    found = jacobian(program.nodes, outputs, inputs, mode)
    return {label: {v.name: arrays.plain(found[out.index][v.index], copy=True) for v in inputs}
            for label, out in zip(output_labels(program), outputs, strict=True)}


def choose_mode(outputs: list[Node], inputs: list[Node], mode: str = "auto") -> str:
    """``forward`` when the inputs have fewer elements than the outputs (fewer passes), else
    ``reverse``; a mode other than ``auto`` is kept."""
    if mode != "auto":
        return mode
    return "forward" if _elements(inputs) < _elements(outputs) else "reverse"


def _elements(nodes: list[Node]) -> int:
    return sum(math.prod(arrays.numpy().shape(node.value)) for node in nodes)


def jacobian(nodes: list[Node], outputs: list[Node], inputs: list[Node],
             mode: str) -> dict[int, dict[int, Any]]:
    """``{output index: {input index: array of shape out + in}}``, with the values already
    computed (``arrays.forward``); ``mode`` is ``forward`` (the blocks' columns, one tangent pass
    per input element) or ``reverse`` (their rows, ``contributions``)."""
    np = arrays.numpy()
    with np.errstate(all="ignore"):
        if mode == "forward":
            found = _forward_blocks(nodes, outputs, inputs)
        else:
            wanted, found = {v.index for v in inputs}, {}
            for out in outputs:  # a row a pass; an input the output does not use: zeros
                reached = contributions(nodes, out, wanted)
                found[out.index] = {v.index: reached[v.index] if v.index in reached else
                                    np.zeros(np.shape(out.value) + np.shape(v.value))
                                    for v in inputs}
    for out, row in found.items():
        for source, block in row.items():
            if not np.all(np.isfinite(block)):
                raise NumericError(f"the Jacobian of {describe(nodes[out])} with respect to "
                                   f"{nodes[source].name} is not finite")
    return found


def _forward_blocks(nodes: list[Node], outputs: list[Node],
                    inputs: list[Node]) -> dict[int, dict[int, Any]]:
    """The blocks a column at a time: one tangent pass per input element."""
    np = arrays.numpy()
    found = {out.index: {v.index: np.zeros(np.shape(out.value) + np.shape(v.value))
                         for v in inputs} for out in outputs}
    taken = masks.live_nodes(nodes, outputs)
    for v in inputs:
        shape = np.shape(v.value)
        for element in np.ndindex(*shape):
            direction = np.zeros(shape)
            direction[element] = 1.0
            tangents = tangents_from(nodes, v, direction, taken)
            for out in outputs:
                tangent = tangents.get(out.index)
                if tangent is not None:
                    found[out.index][v.index][(Ellipsis, *element)] = tangent
    return found


def passes(outputs: list[Node], inputs: list[Node], mode: str) -> int:
    """How many passes ``mode`` makes: output elements (reverse) or input elements (forward)."""
    return _elements(inputs if mode == "forward" else outputs)


def contributions(nodes: list[Node], output: Node,
                  only: set[int] | None = None) -> dict[int, Any]:
    """``{node index: d output / d node}`` (shape of the output followed by the node's) for
    every node (or those ``only`` names) the output depends on through a path that needs a
    gradient: one reverse pass per output element, each giving that element's gradient with
    respect to every node."""
    np = arrays.numpy()
    shape = np.shape(output.value)
    found: dict[int, Any] = {}
    with np.errstate(all="ignore"):
        for element in np.ndindex(*shape):
            seed = np.zeros(shape)
            seed[element] = 1.0
            for index, grad in arrays.backward_from(nodes, output, seed).items():
                if only is not None and index not in only:
                    continue
                block = found.get(index)
                if block is None:
                    node_shape = np.shape(nodes[index].value)
                    block = found[index] = np.zeros(shape + node_shape)
                block[element] = np.broadcast_to(grad, block.shape[len(shape):])
    return found


def tangents_from(nodes: list[Node], source: Node, direction: Any,
                  live: list[Any] | None = None) -> dict[int, Any]:
    """One forward (tangent) pass: the derivative of every node downstream of ``source`` along
    ``direction`` (the source's shape); nodes it does not reach, and those ``live``
    (``masks.live_nodes``) says are in a branch not taken, have no entry (elements: 0)."""
    tangents: dict[int, Any] = {source.index: direction}
    for node in nodes[source.index + 1:]:
        mask = True if live is None else live[node.index]
        if mask is False:
            continue
        inputs = [tangents.get(s.index) for s in node.inputs]
        if any(t is not None for t in inputs):
            tangents[node.index] = jvp(node, [s.value for s in node.inputs], inputs, mask)
    return tangents


def jvp(node: Node, args: list[Any], tangents: list[Any], live: Any = True) -> Any:
    """The tangent of ``node`` from its operands' tangents (None: zero); with ``live`` (a
    ``masks.live_nodes`` array), of its live elements only (0 elsewhere)."""
    np = arrays.numpy()
    op = node.op
    if op.is_array:
        if op.jvp is not None:
            return np.asarray(op.jvp(np, tangents, node.value, *args), dtype=float)
        total = 0.0  # the op's value is a number: its gradient (VJP of 1) dotted with t
        for position, t in enumerate(tangents):
            if t is not None:
                total = total + np.sum(op.vjp(NUMPY, position, 1.0, node.value, *args) * t)
        return np.asarray(total, dtype=float)
    total = None
    for position, t in enumerate(tangents):
        if t is None:
            continue
        slope = (op.rules[position](*args, node.value) if live is True
                 else arrays.live_slope(node, args, position, live))
        part = slope * t
        total = part if total is None else total + part
    return np.broadcast_to(np.asarray(total, dtype=float), np.shape(node.value))
