"""What an array pass says where a value has no number or shapes do not fit: the node, the
element's index and the operands' values there (the scalar path's messages, element by element);
and, of a pass that masks branches not taken (``masks``), which failure it raises.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gradcli.engine.graph import Node, describe, node_text, with_respect_to
from gradcli.engine.notation import format_number, shape_text
from gradcli.engine.ops import CONST, PREC_ATOM
from gradcli.errors import NumericError, UsageError


def index_text(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]" if index else ""


def shape_error(node: Node, args: list[Any], detail: str = "") -> UsageError:
    """Shapes that do not fit: the node, the operator and every operand's shape."""
    op = node.op
    written = op.symbol or op.postfix or op.name
    shapes = " and ".join(shape_text(np.shape(arg)) for arg in args)
    if op.is_array and op.name == "array":
        problem = detail or "the elements have different shapes"
        return UsageError(f"{problem} in {describe(node)}",
                          hint="every element of [a, b, ...] needs the same shape")
    if op.is_array and op.name == "matmul":
        hint = "@ needs the columns of the left operand to match the rows of the right one"
    elif op.is_array:
        hint = f"see gradcli functions for what {op.name} takes"
    else:
        hint = ("element-wise operations broadcast as NumPy does: shapes must be equal, or 1 "
                "where they differ (a missing leading axis counts as 1)")
    return UsageError(f"shape mismatch in {describe(node)}: {written} of shapes {shapes}",
                      hint=hint)


def not_finite(node: Node, op: Any, args: list[Any], value: Any) -> NumericError:
    """The scalar path's message for the first element that is not finite, with its index and
    the operands' values there."""
    index = tuple(int(i) for i in np.argwhere(~np.isfinite(value))[0]) if value.ndim else ()
    if op.is_array:
        at = f" at {index_text(index)}" if index else ""
        return NumericError(f"overflow: the result is not a finite float{at} in "
                            f"{describe(node)}")
    points = [np.broadcast_to(arg, value.shape)[index] if value.ndim else arg for arg in args]
    reals = [float(np.real(point)) for point in points]
    problem = op.domain(*reals) if op.domain is not None else None
    return NumericError(f"{problem or 'overflow: the result is not a finite float'} in "
                        f"{describe(node)}{_operands(node, args, reals, index)}")


def _operands(node: Node, args: list[Any], reals: list[float], index: tuple[int, ...]) -> str:
    parts = []
    for source, arg, real in zip(node.inputs, args, reals, strict=False):
        if source.op is CONST and not np.ndim(arg):
            continue
        where = index_text(index[len(index) - np.ndim(arg):]) if np.ndim(arg) else ""
        parts.append(f"{indexed_text(source, where)} = {format_number(real)}")
    return ", where " + ", ".join(parts) if parts else ""


def indexed_text(node: Node, where: str) -> str:
    """``x[0]``, ``log(x)[0]``, ``(x - 2)[0]``: a node's label with an element's index."""
    text = node_text(node)
    if not where:
        return text
    value = node.value if node.op is CONST else 0.0
    atom = node.name or (getattr(node.op, "precedence", 0) >= PREC_ATOM
                         and not (np.ndim(value) == 0 and float(value) < 0))
    return f"{text}{where}" if atom else f"({text}){where}"


def derivative_error(node: Node, position: int, part: Any) -> NumericError:
    index = tuple(int(i) for i in np.argwhere(~np.isfinite(part))[0]) if part.ndim else ()
    where = f" at {indexed_text(node.inputs[position], index_text(index))}" if index else ""
    return NumericError(f"the derivative of {node.op.name}{with_respect_to(node, position)} is "
                        f"not finite{where} in {describe(node)}")


def raise_live_failure(failed: list[tuple[Node, list[Any], Any, NumericError]],
                       live: list[Any] | None) -> None:
    """Of the failed nodes (node, operands, ``masked_value``, error), in order, the first
    that is live where it has no value raises, named at the first such element; nothing if
    every failure is in branches not taken."""
    for node, args, value, error in failed:
        mask = True if live is None else live[node.index]
        if mask is False:
            continue
        if mask is True or node.op.is_array:
            raise error
        bad = ~np.isfinite(value) & mask
        if bad.any():
            raise not_finite(node, node.op, args, np.where(bad, np.nan, 0.0))
