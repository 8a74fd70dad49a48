"""Gradients, Jacobians and Hessians of array programs as expressions (docs/matrix-calculus.md).

A gradient is ``backward`` (symbolic/builder.py) run on an ``ArrayBuilder``'s nodes: element-wise
ops use the op table's own rules, array ops their rows' VJP rules on ``GraphArrays``, so there is
no second list of derivatives. A block d(output)/d(input) of a Jacobian or a Hessian (the
Jacobian of the gradient) is built vectorized, by forward mode on symbolic nodes (an
element-wise node's Jacobian kept as its diagonal, a vector, so that a where picks a piece
element by element; ``eye(n)*d`` where a matrix is needed: the language has no ``diag``), or row
by row (output element ``k`` is ``sum(y * E_k)``, the rows stacked as ``[row0, row1, ...]``; a
scalar output's one row first); whichever is printed agrees with the numeric Jacobian
(engine/jacobian.py) at the point.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradcli.engine import arrays, jacobian
from gradcli.engine.graph import Program, nodes_of, output_labels
from gradcli.engine.notation import shape_text
from gradcli.engine.ops import CONDITIONAL, CONST, OPS, VAR, index_op, stack_op
from gradcli.errors import UsageError
from gradcli.limits import MAX_JACOBIAN_ROWS
from gradcli.symbolic.arrays import (
    ArrayBuilder,
    is_zero,
    op_node,
    shape_of,
    spread,
    unbroadcast,
    zeros,
)
from gradcli.symbolic.builder import backward
from gradcli.symbolic.derivatives import wrt_names
from gradcli.symbolic.matrix_notation import matrix_latex
from gradcli.symbolic.nodes import SymNode
from gradcli.symbolic.printing import latex_notation, to_text
from gradcli.symbolic.sampling import defined_point

MUL, ADD, DIV = OPS["mul"], OPS["add"], OPS["div"]


# --- gradients: reverse mode on an ArrayBuilder's nodes -------------------------------------------

def gradients(program: Program, shapes: Mapping[str, tuple[int, ...]], wrt: Sequence[str],
              max_nodes: int, point: Mapping[str, Any], *, exact: bool = False
              ) -> tuple[SymNode, dict[str, SymNode]]:
    """The scalar output and d(output)/d(each of ``wrt``) as expressions, their nodes carrying
    values at ``point``; ``exact`` builds forms exact at every point (second derivatives)."""
    np = arrays.numpy()
    b = ArrayBuilder({n: np.asarray(v, dtype=float) for n, v in point.items()}, max_nodes,
                     exact)
    (output,) = b.import_graph([program.output])
    if shape_of(output):
        raise UsageError(f"gradcli diff of an array program needs a scalar output, not shape "
                         f"{shape_text(shape_of(output))}",
                         hint="gradcli eval gives the Jacobian of an array output")
    grads = backward(output)
    found = {}
    for name in wrt:
        grad = grads.get(b.variable(name))
        grad = None if grad is None else unbroadcast(b, grad, shapes[name])
        found[name] = zeros(b, shapes[name]) if grad is None or is_zero(grad) else grad
    b.raise_live([output, *found.values()])
    return output, found


@dataclass
class Blocks:
    """An array program's derivatives as nodes of one builder, and its outputs' values by label
    ("value": one scalar output's): the blocks of a Jacobian or a Hessian by label (a Hessian's
    rows by input), then by input; a gradient is the one row of its output, "value"."""

    values: dict[str, SymNode]
    blocks: dict[str, dict[str, SymNode]]
    gradient: bool = False

    def printed(self, fmt: str, names: Sequence[str] = ()) -> dict[str, Any]:
        """The texts in ``fmt`` (text or latex) by label then input; a gradient's by input.
        LaTeX writes the ``names`` (the program's variables and outputs) so that no two read
        alike (``latex_notation``)."""
        notation = latex_notation(names) if fmt == "latex" else None

        def printer(node: SymNode) -> str:
            return to_text(node) if notation is None else matrix_latex(node, notation)

        texts = {label: {name: printer(node) for name, node in row.items()}
                 for label, row in self.blocks.items()}
        return texts["value"] if self.gradient else texts


def array_derivatives(program: Program, shapes: Mapping[str, tuple[int, ...]], kind: str,
                      wrt: Sequence[str] | None, max_nodes: int,
                      given: Mapping[str, Any] | None = None) -> Blocks:
    """The ``kind`` ("gradient", "jacobian" or "hessian") of an array program by each of
    ``wrt`` (default every variable), built at the ``given`` values, else at a sample point
    where the program is defined (``log(x - 2)`` at x = 1 is retried elsewhere)."""
    if kind != "gradient":
        order = 1 if kind == "jacobian" else 2
        return jacobian_nodes(program, shapes, wrt, max_nodes, given, order)
    names = wrt_names(program, wrt)
    output, found = defined_point(_of(program, shapes), given, lambda point: gradients(
        program, shapes, names, max_nodes, point))
    return Blocks({"value": output}, {"value": found}, gradient=True)


def gradient_texts(program: Program, shapes: Mapping[str, tuple[int, ...]],
                   wrt: Sequence[str] | None, max_nodes: int, fmt: str = "text") -> dict[str, str]:
    """d(output)/d(each of ``wrt``, default every variable) printed in ``fmt``."""
    found = array_derivatives(program, shapes, "gradient", wrt, max_nodes)
    return found.printed(fmt, list(program.variables))


# --- Jacobians and Hessians -----------------------------------------------------------------------

class _NoFormError(Exception):
    """A node whose Jacobian has no vectorized form here: the block is built row by row."""


def has_array_output(program: Program, shapes: Mapping[str, tuple[int, ...]]) -> bool:
    """Whether the program has several outputs or an array output: a Jacobian."""
    return bool(program.outputs) or bool(arrays.value_shape(program, shapes))


def jacobian_nodes(program: Program, shapes: Mapping[str, tuple[int, ...]],
                   wrt: Sequence[str] | None, max_nodes: int,
                   given: Mapping[str, Any] | None = None, order: int = 1) -> Blocks:
    """Every output's Jacobian by each of ``wrt`` (default every variable), built at the
    ``given`` values or a sample point where the program is defined; at ``order`` 2 the
    Hessian, the Jacobian of each gradient."""
    names = wrt_names(program, wrt)

    def build(point: dict[str, Any]) -> Blocks:
        grads = gradients(program, shapes, names, max_nodes, point)[1] if order == 2 else {}
        b = ArrayBuilder(point, max_nodes)
        if order == 2:
            rows = dict(zip(names, b.import_graph([grads[name] for name in names]), strict=True))
            values = {"value": b.import_graph([program.output])[0]}
        else:
            values = rows = dict(zip(output_labels(program),
                                     b.import_graph(program.outputs or [program.output]),
                                     strict=True))
        blocks = Blocks(values, {label: {name: block(b, row, name, shapes, max_nodes)
                                         for name in names} for label, row in rows.items()})
        b.raise_live([*values.values(), *(part for row in blocks.blocks.values()
                                          for part in row.values())])
        return blocks

    return defined_point(_of(program, shapes), given, build)


def _of(program: Program, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    return {name: shapes[name] for name in program.variables}


# --- one block ------------------------------------------------------------------------------------

def block(b: ArrayBuilder, output: SymNode, name: str, shapes: Mapping[str, tuple[int, ...]],
          max_nodes: int) -> SymNode:
    """d(output)/d(name), of the output's shape then the input's, in the first form that
    equals the numeric Jacobian at b's point."""
    numeric = _numeric(b, output, name)
    if numeric is None:
        return b.constant(0.0)
    ways = (_rows, forward_jacobian) if not shape_of(output) else (forward_jacobian, _rows)
    refusal: UsageError | None = None
    for way in ways:
        try:
            found = way(b, output, name, shapes, max_nodes)
        except UsageError as error:  # no form for an op, or too many rows
            refusal = refusal or error
            continue
        except _NoFormError:
            continue
        if found is not None and _agrees(found.value, numeric):
            return found
    if refusal is not None:
        raise refusal
    raise UsageError(f"gradcli diff found no form of the Jacobian with respect to {name} that "
                     "agrees with the numeric one", hint="gradcli eval gives the numbers")


def _agrees(value: Any, numeric: Any) -> bool:
    np = arrays.numpy()
    return np.shape(value) == np.shape(numeric) and bool(
        np.allclose(value, numeric, rtol=1e-7, atol=1e-9))


def _numeric(b: ArrayBuilder, output: SymNode, name: str) -> Any:
    """The numeric Jacobian of ``output`` at the builder's point (engine/jacobian.py), or None
    when the output does not depend on ``name``."""
    leaves = [node for node in nodes_of([output]) if node.op is VAR]
    program = Program.build_outputs("jacobian", [output], leaves, {})
    if name not in program.variables:
        return None
    found = jacobian.jacobian(program.nodes, [output], [program.variables[name]], "reverse")
    return found[output.index][program.variables[name].index]


def _rows(b: ArrayBuilder, output: SymNode, name: str, shapes: Mapping[str, tuple[int, ...]],
          max_nodes: int) -> SymNode:
    """The gradient of each output element ``sum(y * E_k)``, stacked as ``[row0, row1, ...]``."""
    shape = shape_of(output)
    size = math.prod(shape)
    if size > MAX_JACOBIAN_ROWS:
        raise UsageError(f"the Jacobian of an output of {size:,} elements has no vectorized form "
                         f"here, and printing it row by row is limited to {MAX_JACOBIAN_ROWS} "
                         "output elements",
                         hint="gradcli eval gives its numeric Jacobian")
    rows = []
    for element in arrays.numpy().ndindex(*shape):
        picked = op_node(b, "sum", b.make(MUL, (output, _one_hot(b, shape, element)))) \
            if shape else output
        leaves = [node for node in nodes_of([picked]) if node.op is VAR]
        program = Program.build_outputs("row", [picked], leaves, {})
        if name in program.variables:
            grad = gradients(program, _of(program, shapes), [name], max_nodes,
                             {n: b.point[n] for n in program.variables})[1][name]
            rows.append(b.import_graph([grad])[0])
        else:
            rows.append(zeros(b, shapes[name]))
    return _stack(b, rows, shape) if shape else rows[0]


def _one_hot(b: ArrayBuilder, shape: tuple[int, ...], element: tuple[int, ...]) -> SymNode:
    """A 1 at ``element`` as rows of ``eye`` (printed so): ``outer(eye(3)[1], eye(2)[0])``."""
    if len(shape) > 2:
        raise UsageError("gradcli diff prints Jacobians of numbers, vectors and matrices")
    rows = [b.make(index_op((i,), f"[{i}]"), (b.arrays.eye(n),))
            for n, i in zip(shape, element, strict=True)]
    return rows[0] if len(rows) == 1 else op_node(b, "outer", *rows)


def _stack(b: ArrayBuilder, rows: list[SymNode], shape: tuple[int, ...]) -> SymNode:
    """Rows in C order stacked back into ``shape`` (nested array literals)."""
    if len(shape) == 1:
        return b.make(stack_op(shape[0]), rows)
    step = len(rows) // shape[0]
    return b.make(stack_op(shape[0]), [_stack(b, rows[i * step:(i + 1) * step], shape[1:])
                                       for i in range(shape[0])])


# --- vectorized: forward mode on symbolic nodes ---------------------------------------------------

def forward_jacobian(b: ArrayBuilder, output: SymNode, name: str,
                     shapes: Mapping[str, tuple[int, ...]], max_nodes: int) -> SymNode | None:
    """J(output) by the number or vector ``name``; None if the output does not depend on it,
    _NoFormError if a node on the way has no form here (``max_nodes``: as ``_rows``, unused).

    Element-wise nodes of the vector keep their Jacobian as its diagonal, a vector, until an
    array op needs the matrix: a where then picks between its pieces' diagonals element by
    element. Inside a piece (a node read through a where's branch) the matrix forms keep a
    piece not taken (sqrt'(-1)) in its own row: ``where(eye(n), d, 0)`` and rows scaled by
    ``outer(p, ones(m))*J``, as ``eye(n)*d`` and ``eye(n)*p@J`` would spread it along a column;
    a where picks rows: ``where(outer(c, ones(m)), Ja, Jb)``."""
    shape = shapes[name]
    if len(shape) > 1:
        raise _NoFormError
    nodes = nodes_of([output])
    forward = _Forward(b, shape, _outside_pieces(nodes, output))
    found: dict[int, SymNode | None] = {}
    diagonal: set[int] = set()  # nodes whose ``found`` is the diagonal of their Jacobian
    for node in nodes:
        if node.op is VAR:
            found[id(node)] = None if node.name != name else b.constant(1.0)
            if node.name == name and shape:
                diagonal.add(id(node))  # a diagonal of ones, written 1 (broadcast)
        elif node.op is CONST:
            found[id(node)] = None
        else:
            operands = [found[id(source)] for source in node.inputs]
            if all(j is None for j in operands):
                found[id(node)] = None
            elif shape and not node.op.is_array and shape_of(node) == shape and all(
                    j is None or id(source) in diagonal
                    for source, j in zip(node.inputs, operands, strict=True)):
                found[id(node)] = _chain(b, node, operands, lambda _, partial, d: b.make(
                    MUL, (partial, d)))
                diagonal.add(id(node))
            else:
                found[id(node)] = forward.node_jacobian(node, [
                    forward.matrix(j, source) if id(source) in diagonal else j
                    for source, j in zip(node.inputs, operands, strict=True)])
    j = found[id(output)]
    return forward.matrix(j, output) if id(output) in diagonal else j


def _outside_pieces(nodes: list[SymNode], output: SymNode) -> set[int]:
    """The ids of the nodes that ``output`` reads other than through a where's branch: where
    they have no value, nor has the program."""
    outside = {id(output)}
    for node in reversed(nodes):
        if id(node) in outside:
            outside.update(id(source) for source in (
                node.inputs[:1] if node.op is CONDITIONAL else node.inputs))
    return outside


def _chain(b: ArrayBuilder, node: SymNode, operands: list[SymNode | None],
           scale: Any) -> SymNode:
    """The chain rule at an element-wise node: the sum over its operands with a Jacobian of
    ``scale(position, partial, J)``, the partial from the op table's rule."""
    total = None
    for position, j in enumerate(operands):
        if j is None:
            continue
        part = scale(position, b.lift(node.op.rules[position](*node.inputs, node)), j)
        total = part if total is None else b.make(ADD, (total, part))
    assert total is not None
    return total


@dataclass
class _Forward:
    """Jacobians as matrices, by the vector (or number) of shape ``wrt``; ``outside``: the
    nodes outside every piece, whose forms may read other rows (see forward_jacobian)."""

    b: ArrayBuilder
    wrt: tuple[int, ...]
    outside: set[int]

    def matrix(self, d: SymNode | None, node: SymNode) -> SymNode | None:
        """The Jacobian of ``node`` whose diagonal is ``d`` (the language has no ``diag``)."""
        if d is None:
            return None
        eye = self.b.arrays.eye(self.wrt[0])
        if id(node) in self.outside or d.op is CONST:
            return self.b.make(MUL, (eye, d))
        return self.b.make(CONDITIONAL, (eye, d, self.b.constant(0.0)))

    def node_jacobian(self, node: SymNode, operands: list[SymNode | None]) -> SymNode:
        b, wrt = self.b, self.wrt
        # the matrix A of A@u, which does not depend on the input (no Jacobian), may be one
        constant = 1 if node.op is OPS["matmul"] and operands[0] is None else 0
        if len(shape_of(node)) > 1 or any(len(shape_of(s)) > 1 for s in node.inputs[constant:]):
            raise _NoFormError
        if node.op.is_array:
            return _op_jacobian(b, node, operands, wrt)
        if node.op is CONDITIONAL and wrt and shape_of(node):
            return self.picked(node, operands)
        return _chain(b, node, operands, lambda position, partial, j: self.scale_rows(
            partial, _broadcast(b, j, node.inputs[position], node, wrt), node))

    def picked(self, node: SymNode, operands: list[SymNode | None]) -> SymNode:
        """where(c, a, b)'s Jacobian: the rows of a's where c holds, of b's elsewhere."""
        b, wrt = self.b, self.wrt
        condition, *branches = node.inputs
        n = shape_of(node)[0]
        rows = [zeros(b, (n, *wrt)) if j is None else _broadcast(b, j, source, node, wrt)
                for source, j in zip(branches, operands[1:], strict=True)]
        if shape_of(condition):
            condition = op_node(b, "outer", condition, spread(b, b.constant(1.0), wrt))
        return b.make(CONDITIONAL, (condition, *rows))

    def scale_rows(self, factor: SymNode, j: SymNode, node: SymNode) -> SymNode:
        """diag(factor) @ J for a vector factor (J's rows scaled), factor * J for a number."""
        b, wrt = self.b, self.wrt
        if not shape_of(factor) or not wrt:
            return b.make(MUL, (factor, j))
        if id(node) not in self.outside:
            return b.make(MUL, (op_node(b, "outer", factor, spread(b, b.constant(1.0), wrt)), j))
        n = shape_of(factor)[0]
        return op_node(b, "matmul", b.make(MUL, (b.arrays.eye(n), factor)), j)


def _broadcast(b: ArrayBuilder, j: SymNode, source: SymNode, node: SymNode,
               wrt: tuple[int, ...]) -> SymNode:
    """The Jacobian of a number operand used where the node is a vector: every row the same."""
    out, have = shape_of(node), shape_of(source)
    if have == out:
        return j
    n = out[0]
    return op_node(b, "outer", spread(b, b.constant(1.0), (n,)), j) if wrt else spread(b, j, (n,))


def _op_jacobian(b: ArrayBuilder, node: SymNode, operands: list[SymNode | None],
                    wrt: tuple[int, ...]) -> SymNode:
    """The array ops whose Jacobian is a product with their operands' (a form per op)."""
    name, inputs = node.op.name, node.inputs
    if name in ("matmul", "dot"):
        left, right = inputs
        if len(shape_of(left)) == 2:  # A@u, A constant (checked by _node_jacobian)
            return op_node(b, "matmul", left, operands[1])
        parts = [op_node(b, "matmul", other, j) if shape_of(other) else b.make(MUL, (other, j))
                 for other, j in ((right, operands[0]), (left, operands[1])) if j is not None]
        return parts[0] if len(parts) == 1 else b.make(ADD, tuple(parts))
    (u,), (j,) = inputs[:1], operands[:1]
    if len(inputs) != 1 or j is None:  # [a, b, c] of numbers: the stack of their Jacobians
        if name != "array" or shape_of(u):
            raise _NoFormError
        return b.make(node.op, [part if part is not None else zeros(b, wrt) for part in operands])
    n = shape_of(u)[0] if shape_of(u) else 0
    if name == "transpose":
        return j
    if name == "index":
        return b.make(node.op, (j,))
    if not n:
        raise _NoFormError
    if name in ("sum", "mean"):
        total = op_node(b, "matmul", spread(b, b.constant(1.0), (n,)), j)
        return total if name == "sum" else b.make(DIV, (total, b.constant(float(n))))
    if name == "norm":
        return op_node(b, "matmul", b.make(DIV, (u, node)), j)
    if name == "logsumexp":
        return op_node(b, "matmul", op_node(b, "softmax", u), j)
    eye = b.arrays.eye(n)
    if name == "softmax":
        local = b.make(OPS["sub"], (b.make(MUL, (eye, node)), op_node(b, "outer", node, node)))
        return op_node(b, "matmul", local, j)
    if name == "log_softmax":
        ones = spread(b, b.constant(1.0), (n,))
        local = b.make(OPS["sub"], (eye, op_node(b, "outer", ones, op_node(b, "softmax", u))))
        return op_node(b, "matmul", local, j)
    raise _NoFormError
