"""Printed forms of a graph: numbers, and each node's expression in a notation, with one
precedence logic for every notation (gradcli's own language here, LaTeX and Python in
``printing``). It reads only a node's op, inputs, name and value, so the graph module can name
its nodes in messages.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence

from gradcli.engine.core_ops import (
    ADD,
    CONST,
    PREC_ATOM,
    PREC_COMPARE,
    PREC_NONE,
    PREC_SUM,
    PREC_UNARY,
    SUB,
    VAR,
)
from gradcli.engine.node import last_uses
from gradcli.engine.ops import OPS, shape_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from gradcli.engine.node import Node


def format_number(value: Any) -> str:
    """The shortest text that reads back as the same float (``2`` rather than ``2.0``); an
    array's elements so (``array_text``)."""
    if type(value) is float:
        return repr(value).removesuffix(".0")
    if getattr(value, "ndim", 0):
        return array_text(value)
    return repr(float(value)).removesuffix(".0")


def format_point(point: Mapping[str, Any]) -> str:
    return ", ".join(f"{name} = {format_number(value)}" for name, value in point.items())


def finite_or_none(value: Any) -> float | None:
    """A number as a JSON record holds it: a float, or None (null) for inf and nan, which JSON
    has not."""
    return float(value) if value is not None and math.isfinite(value) else None


def array_text(value: Any, limit: int = 12) -> str:
    """An array constant as the language writes it (``[1, 2]``), or ``[...]`` with its shape when
    it has more than ``limit`` elements (a label, not a value to read back)."""
    if value.size > limit:
        return "[... " + shape_text(value.shape) + "]"
    rows = [value]
    while rows[0].ndim > 1:  # iterative: down to the vectors, then _nest brackets them
        rows = [row for block in rows for row in block]
    texts = ["[" + ", ".join(format_number(float(v)) for v in row) + "]" for row in rows]
    return _nest(texts, value.shape)


def _nest(texts: list[str], shape: tuple[int, ...]) -> str:
    """Vectors' texts grouped into brackets by the leading dimensions of ``shape``."""
    for count in reversed(shape[:-1]):
        texts = ["[" + ", ".join(texts[i:i + count]) + "]" for i in range(0, len(texts), count)]
    return texts[0]


def derivative_label(path: Sequence[str], of: str | None = None) -> str:
    """``d/dx``, ``d2/dx dy``, ``df/dx``, ``d(W@x)/dx``: the derivative by the variables of
    ``path`` in turn, of the output ``of`` (None: the program's one output, left unnamed), as
    gradcli's tables, batch lines, check findings and messages write it; an expression in
    parentheses, so that ``d`` and the expression do not run together."""
    order = "" if len(path) == 1 else str(len(path))
    output = "" if of is None else of if of.isidentifier() else f"({of})"
    return f"d{order}{output}/" + " ".join(f"d{name}" for name in path)


class Notation:
    """How ``expression_texts`` spells numbers, names, calls and operators: gradcli's own
    language, subclassed by ``printing``. ``free_operands``: the operand positions of an op that
    never need parentheses (LaTeX's fraction and exponent)."""

    def number(self, value: Any) -> str:
        return format_number(value)

    def name(self, name: str) -> str:
        return name

    def call(self, op: Any, args: list[str]) -> str:
        return f"{op.name}({', '.join(args)})"

    def prefix(self, op: Any, operand: str) -> str:
        return f"{op.symbol}{operand}"

    def infix(self, op: Any, left: str, right: str) -> str:
        return f"{left}{_spaced(op)}{right}"

    def parenthesized(self, text: str) -> str:
        return f"({text})"

    def free_operands(self, op: Any) -> tuple[int, ...]:
        return ()


TEXT = Notation()


def expression_texts(nodes: Sequence[Node], limit: int | None = 48) -> list[str]:
    """Each node's expression (``nodes`` in topological order) with operands shown by name, or
    as ``#id`` past ``limit`` characters, which keeps this linear in the graph's size; ``None``
    writes them in full (printers name shared nodes first, so that stays linear too)."""
    return list(texts_by_node(nodes, limit).values())


def texts_of(nodes: Sequence[Node], wanted: Sequence[int]) -> dict[Node, str]:
    """``texts_by_node`` of the nodes at the positions ``wanted`` (``nodes`` in topological
    order) and of the nodes their texts are written with -- unnamed operands, theirs, and so
    on (iterative): a table that shows 200 rows of 10^5 nodes writes a few of the others."""
    needed = set(wanted)
    stack = list(needed)
    while stack:
        for source in nodes[stack.pop()].inputs:
            if source.name is None and source.index not in needed:
                needed.add(source.index)
                stack.append(source.index)
    return texts_by_node([nodes[i] for i in sorted(needed)])


def texts_in_order(nodes: Sequence[Node], chunk: int = 1024) -> Iterator[str]:
    """``texts_by_node``'s texts of a program's nodes (``index``: their position), one at a
    time: written a chunk at a time, each kept only until its last reader, so that the labels
    of --json's 10^5 nodes never exist all at once (W3: 15 MB)."""
    if len(nodes) <= chunk or any(node.index != k for k, node in enumerate(nodes)):
        yield from texts_by_node(nodes).values()  # one chunk, or not numbered by position
        return
    last = last_uses(nodes)[0]  # each node's last reader (itself: none)
    # the nodes whose texts go after each chunk: those last read in it, and its named ones (an
    # operand's name is its text, ``operand`` below: a named node's is never read)
    expiring: list[list[Node]] = [[] for _ in range(0, len(nodes), chunk)]
    for node in nodes:
        expiring[(node.index if node.name is not None else last[node.index]) // chunk].append(node)
    texts: dict[Node, str] = {}
    precedences: dict[Node, int] = {}
    for start in range(0, len(nodes), chunk):
        part = nodes[start:start + chunk]
        texts_by_node(part, texts=texts, precedences=precedences)
        yield from [texts[node] for node in part]
        for node in expiring[start // chunk]:
            del texts[node], precedences[node]
        expiring[start // chunk] = []


def texts_by_node(
    nodes: Sequence[Node], limit: int | None = 48, notation: Notation = TEXT,
    minus: bool = False, texts: dict[Node, str] | None = None,
    precedences: dict[Node, int] | None = None,
) -> dict[Node, str]:
    """``expression_texts`` as a dictionary node -> text, in the order of ``nodes``. With
    ``minus``, a sum of a negative term is written as a difference (``a - 2*x``, not
    ``a + -2*x``): the same number to the bit, as negation is exact in every operation.
    ``texts`` and ``precedences``: those of operands written before (``texts_in_order``),
    which the new texts join."""
    texts = {} if texts is None else texts
    precedences = {} if precedences is None else precedences

    def operand(source: Node, binding: int, tighter: bool = False) -> str:
        """Operand text, in parentheses when it binds looser than ``binding`` needs."""
        if source.name is not None:
            return notation.name(source.name)
        text = texts[source]
        if limit is not None and len(text) > limit:
            return f"#{source.index}"
        precedence = precedences[source]
        if precedence < binding or (tighter and precedence == binding):
            return notation.parenthesized(text)
        return text

    # What the notation does as gradcli's own does is not asked at every node: an operator
    # between its operands, spaced as ``_spaced`` says; no operand free of parentheses.
    infix = None if type(notation).infix is Notation.infix else notation.infix
    free_operands = (None if type(notation).free_operands is Notation.free_operands
                     else notation.free_operands)
    for node in nodes:
        op = node.op
        if op is VAR:
            text, precedence = notation.name(str(node.name)), PREC_ATOM
        elif op is CONST:
            value = node.value
            if type(value) is not float and getattr(value, "ndim", 0) != 0:  # [1, 2]
                text, precedence = array_text(value), PREC_ATOM
            else:
                text = notation.number(value)
                precedence = PREC_UNARY if text.startswith("-") else PREC_ATOM
        elif (postfix := op.postfix) is not None:
            text, precedence = operand(node.inputs[0], PREC_ATOM) + postfix, PREC_ATOM  # x[1:3]
        elif op.symbol is None:  # a call, or an array literal: no operator between operands
            if op.name == "array" and op.is_array:  # [a, b]
                args = [operand(source, 0) for source in node.inputs]
                text = "[" + ", ".join(args) + "]"
            else:
                args = [operand(source, PREC_NONE) for source in node.inputs]
                text = notation.call(op, args)
            precedence = PREC_ATOM
        else:
            precedence = op.precedence
            free = free_operands(op) if free_operands is not None else ()
            if op.arity == 1:
                inner = operand(node.inputs[0], PREC_NONE if 0 in free else precedence)
                text = notation.prefix(op, inner)
            else:
                first, second = node.inputs
                # Comparisons do not chain: (a < b) < c keeps its parentheses on either side.
                left = operand(first, PREC_NONE if 0 in free else precedence,
                               op.right_assoc or precedence == PREC_COMPARE)
                right = operand(second, PREC_NONE if 1 in free else precedence,
                                not op.right_assoc)
                shown = op
                if minus and op is ADD and right.startswith("-"):  # a product or a power
                    shown, right = SUB, right[1:]
                text = (f"{left}{_SPACED.get(id(shown)) or _spaced(shown)}{right}"
                        if infix is None else infix(shown, left, right))
        texts[node] = text
        precedences[node] = precedence
    return texts


def _spaced(op: Any) -> str:
    # Sums get spaces (x*W + b), tighter operators none, as people write them.
    return f" {op.symbol} " if op.precedence <= PREC_SUM else str(op.symbol)


# The usual operators' spaced symbols, looked up rather than formatted at every node.
_SPACED = {id(OPS[name]): _spaced(OPS[name]) for name in ("add", "sub", "mul", "div", "pow")}
