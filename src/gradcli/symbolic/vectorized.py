"""Vectorized gradients of array programs as expressions (``gradcli diff`` of an array program).

The backward pass is the scalar ``diff``'s (``backward``, symbolic/builder.py) run on an
``ArrayBuilder``'s nodes (symbolic/arrays.py): element-wise ops use the op table's own
rules (written with ``F``) on ``SymNode``s, the gradient of a broadcast operand is summed back
(``sum(...)`` to a number, ``ones(m)@G`` to a row), and array ops run their rows' own VJP rules
on ``GraphArrays``. The result is an expression in gradcli's language, with no indices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gradcli.engine import arrays
from gradcli.engine.graph import Program, nodes_of
from gradcli.engine.notation import shape_text
from gradcli.engine.ops import CONST, VAR
from gradcli.errors import UsageError
from gradcli.symbolic.arrays import (
    ArrayBuilder,
    is_zero,
    shape_of,
    unbroadcast,
    zeros,
)
from gradcli.symbolic.builder import backward
from gradcli.symbolic.derivatives import wrt_names
from gradcli.symbolic.nodes import SymNode
from gradcli.symbolic.printing import matrix_latex, to_text
from gradcli.symbolic.sampling import defined_point


def gradients(program: Program, shapes: Mapping[str, tuple[int, ...]], wrt: Sequence[str],
              max_nodes: int, point: Mapping[str, Any] | None = None, keep_value: bool = False,
              *, exact: bool = False) -> tuple[dict[str, SymNode], dict[str, Any]]:
    """d(output)/d(each of ``wrt``) as expressions, and the point they carry values at.

    ``shapes`` gives every variable's shape (``()`` for a number); ``point`` the values (the
    first sample point of symbolic/sampling.py when None). The output must be a scalar.
    ``keep_value`` adds the output itself as ``"__value__"``; ``exact`` builds forms exact at
    every point, for second derivatives (``GraphArrays.others_product``).
    """
    np = arrays.numpy()
    if point is None:
        from gradcli.symbolic.sampling import candidate

        point = candidate({name: shapes[name] for name in program.variables}, 0)
    b = ArrayBuilder({n: np.asarray(v, dtype=float) for n, v in point.items()}, max_nodes,
                     exact)
    made: dict[int, SymNode] = {}
    for node in nodes_of([program.output]):
        if node.op is VAR:
            made[id(node)] = b.variable(str(node.name))
        elif node.op is CONST:
            made[id(node)] = b.constant(node.value)
        else:
            made[id(node)] = b.make(node.op, [made[id(s)] for s in node.inputs])
    output = made[id(program.output)]
    if shape_of(output):
        raise UsageError(f"gradcli diff of an array program needs a scalar output, not shape "
                         f"{shape_text(shape_of(output))}",
                         hint="gradcli eval gives the Jacobian of an array output")
    grads = backward(output)
    found = {"__value__": output} if keep_value else {}
    for name in wrt:
        grad = grads.get(b.variable(name))
        grad = None if grad is None else unbroadcast(b, grad, shapes[name])
        found[name] = zeros(b, shapes[name]) if grad is None or is_zero(grad) else grad
    return found, point


def gradient_texts(program: Program, shapes: Mapping[str, tuple[int, ...]],
                   wrt: Sequence[str] | None, max_nodes: int,
                   fmt: str = "text", given: Mapping[str, Any] | None = None) -> dict[str, str]:
    """d(output)/d(each of ``wrt``, default every variable) printed in ``fmt``."""
    found, _ = sampled_gradients(program, shapes, wrt_names(program, wrt), max_nodes,
                                 given=given)
    printer = to_text if fmt == "text" else matrix_latex
    return {name: printer(node) for name, node in found.items()}


def sampled_gradients(program: Program, shapes: Mapping[str, tuple[int, ...]],
                      names: list[str], max_nodes: int, keep_value: bool = False,
                      given: Mapping[str, Any] | None = None
                      ) -> tuple[dict[str, SymNode], dict[str, Any]]:
    """``gradients`` at the given values, else at a sample point where the program is defined
    (symbolic/sampling.py): the values give shapes, so a point outside a domain (``log(x - 2)``
    at x = 1) is retried elsewhere."""
    return defined_point(
        {name: shapes[name] for name in program.variables}, given,
        lambda point: gradients(program, shapes, names, max_nodes, point, keep_value))[0]
