"""The builder's reductions for arrays: literals ``[1, 2]``, array function calls, subscripts.

Called by the parser's builder (building.py) at each reduction, like its other callbacks;
the ops are the op table's array rows (engine/ops/linear_algebra.py). A literal of numbers is
one constant node holding a NumPy array (so ``x = [1, 2, 3]`` is an input with a default, like
``x = 2``); a literal with expressions in it stacks their values (``[x, 2*y]``). Subscripts and
the sizes of ``zeros(n)``, ``ones(n)`` and ``eye(n)`` are constant whole numbers, known when the
program is parsed.
The parser imports this module (and NumPy) only when a program has an array in it.
"""

from __future__ import annotations

from typing import Any

from gradcli.engine.graph import Node
from gradcli.engine.ops import CALLS, CONST, OPS, Op, index_op, stack_op
from gradcli.errors import GradcliNameError, UsageError
from gradcli.language.lalr import Token
from gradcli.limits import MAX_ARRAY_ELEMENTS, check_dims


def _is_number(node: Node) -> bool:
    return node.op is CONST and type(node.value) is float


def _is_array_constant(node: Node) -> bool:
    return node.op is CONST and type(node.value) is not float


def array_literal(builder: Any, children: list[Node]) -> Node:
    """``[1, 2]`` and ``[[1, 2], [3, 4]]`` as one constant; ``[x, y]`` as a stack node."""
    import numpy as np

    builder.arrays = True
    if all(_is_number(child) for child in children):
        return Node(CONST, (), np.array([child.value for child in children], dtype=float))
    if all(_is_array_constant(child) for child in children):
        shapes = {child.value.shape for child in children}
        if len(shapes) > 1:
            lengths = ", ".join(sorted("x".join(map(str, shape)) for shape in shapes))
            raise UsageError(f"the rows of an array literal have different shapes ({lengths})",
                             hint="every row needs the same length, e.g. [[1, 2], [3, 4]]")
        check_dims("an array literal", children[0].value.ndim + 1)
        stacked = np.stack([child.value for child in children])
        if stacked.size > MAX_ARRAY_ELEMENTS:
            raise UsageError(f"an array literal has more than {MAX_ARRAY_ELEMENTS:,} elements",
                             hint="pass large arrays as values (--x), not in the text")
        return Node(CONST, (), stacked)
    return Node(stack_op(len(children)), tuple(children))


def is_array_function(name: str) -> bool:
    return _array_row(name) is not None


def _array_row(name: str) -> Op | None:
    """The array row the language calls ``name`` (``max``: the reduction), if any."""
    return next((op for op in CALLS.get(name, ()) if op.is_array), None)


def array_op_node(builder: Any, name: str, operands: list[Node]) -> Node:
    """``a@b``, ``x'``: a node of the array op ``name``."""
    builder.arrays = True
    return Node(OPS[name], tuple(operands))


def array_call(builder: Any, token: Token, args: list[Node]) -> Node:
    """``sum(x)``, ``max(x)`` (one argument), ``eye(3)``: a node of an array function."""
    name = str(token)
    op = next(row for row in CALLS[name] if row.is_array)  # is_array_function(name) holds
    if len(args) != op.arity:
        from gradcli.language.syntax_errors import language_signature

        counts = sorted({row.arity for row in CALLS[name]})  # max: max(x) and max(x, y)
        taken = " or ".join(map(str, counts))
        raise GradcliNameError(f"{name} takes {taken} argument{'s' if counts[-1] > 1 else ''}, "
                               f"not {len(args)}", line=token.line, column=token.column,
                               hint=f"write it as {language_signature(name)}")
    builder.arrays = True
    if op.constant_args:
        _size(token, args[0], square=name == "eye")
    return Node(op, tuple(args))


def _size(token: Token, node: Node, square: bool) -> int:
    """The ``n`` of ``zeros(n)``: a constant whole number, not too large."""
    value = node.value if _is_number(node) else None
    count = int(value) if value is not None and value == int(value) else 0
    elements = count * count if square else count
    if count < 1 or elements > MAX_ARRAY_ELEMENTS:
        raise UsageError(f"{token}(n) needs n to be a whole number from 1 up, with at most "
                         f"{MAX_ARRAY_ELEMENTS:,} elements", line=token.line,
                         column=token.column, hint=f"write e.g. {token}(3)")
    return count


def subscript(builder: Any, node: Node, items: list[Any]) -> Node:
    """``x[0]``, ``W[1, 0]``, ``x[1:3]``, ``W[:, 0]``: constant whole numbers and slices."""
    builder.arrays = True
    key: list[Any] = []
    written: list[str] = []
    for item in items:
        if isinstance(item, tuple):  # ("slice", start, stop), either may be None
            start, stop = (None if end is None else _whole(end) for end in item[1:])
            key.append((start, stop))
            written.append(f"{'' if start is None else start}:{'' if stop is None else stop}")
        else:
            key.append(_whole(item))
            written.append(str(key[-1]))
    return Node(index_op(tuple(key), "[" + ", ".join(written) + "]"), (node,))


def _whole(node: Node) -> int:
    if _is_number(node) and node.value == int(node.value):
        return int(node.value)
    raise UsageError("an index or a slice's end must be a constant whole number",
                     hint="write e.g. x[0], W[1, 0], x[1:3] or x[-1]")
