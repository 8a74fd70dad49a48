"""Printed forms of a graph: numbers, and each node's expression in a notation.

One precedence logic for every notation: gradcli's own language here (``TEXT``), LaTeX and Python
in ``printing``. Node labels in tables and JSON, error messages and symbolic derivatives are all
written by ``expression_texts``. It needs only what every graph node has (``Written``), so the
graph module can name its nodes in messages without this module knowing about graphs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from gradcli.engine.ops import (
    CONST,
    OPS,
    PREC_ATOM,
    PREC_COMPARE,
    PREC_NONE,
    PREC_SUM,
    PREC_UNARY,
    VAR,
    Op,
)


class Written(Protocol):
    """What printing reads of a node (``graph.Node`` and ``symbolic.SymNode`` have it)."""

    op: Op
    inputs: Sequence[Written]
    name: str | None
    value: float
    index: int


def format_number(value: float) -> str:
    """The shortest text that reads back as the same float (``2`` rather than ``2.0``); an
    array's elements so (``array_text``)."""
    if type(value) is float:
        return repr(value).removesuffix(".0")
    if getattr(value, "ndim", 0):
        return array_text(value)
    return repr(float(value)).removesuffix(".0")


def array_text(value: Any, limit: int = 12) -> str:
    """An array constant as the language writes it (``[1, 2]``), or ``[...]`` with its shape when
    it has more than ``limit`` elements (a label, not a value to read back)."""
    if value.size > limit:
        return "[... " + "x".join(map(str, value.shape)) + "]"
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


class Notation:
    """How ``expression_texts`` spells numbers, names, calls and operators.

    The default is gradcli's own language; ``printing`` subclasses it for LaTeX and Python, so
    every notation shares the one precedence logic below. ``free_operands`` lists the operand
    positions of an op that never need parentheses (LaTeX's fraction and exponent).
    """

    def number(self, value: float) -> str:
        return format_number(value)

    def name(self, name: str) -> str:
        return name

    def call(self, op: Op, args: list[str]) -> str:
        return f"{op.name}({', '.join(args)})"

    def prefix(self, op: Op, operand: str) -> str:
        return f"{op.symbol}{operand}"

    def infix(self, op: Op, left: str, right: str) -> str:
        return f"{left}{_spaced(op)}{right}"

    def parenthesized(self, text: str) -> str:
        return f"({text})"

    def free_operands(self, op: Op) -> tuple[int, ...]:
        return ()


TEXT = Notation()


def expression_texts(
    nodes: Sequence[Written], limit: int | None = 48, notation: Notation = TEXT
) -> list[str]:
    """Each node's expression with operands shown by name, or as ``#id`` once they grow long.

    ``nodes`` must be in topological order. Capping operand texts keeps this linear in the graph
    size however deep the expression is; ``limit=None`` writes operands out in full (printers
    name shared nodes first, so the full text stays linear in size).
    """
    return list(texts_by_node(nodes, limit, notation).values())


def texts_by_node(
    nodes: Sequence[Written], limit: int | None = 48, notation: Notation = TEXT,
    minus: bool = False,
) -> dict[Written, str]:
    """``expression_texts`` as a dictionary node -> text, in the order of ``nodes``. With
    ``minus``, a sum of a negative term is written as a difference (``a - 2*x``, not
    ``a + -2*x``): the same number to the bit, as negation is exact in every operation."""
    texts: dict[Written, str] = {}
    precedences: dict[Written, int] = {}

    def operand(source: Written, binding: int, tighter: bool = False) -> str:
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
            if type(node.value) is not float and getattr(node.value, "ndim", 0):  # [1, 2]
                text, precedence = array_text(node.value), PREC_ATOM
            else:
                text = notation.number(node.value)
                precedence = PREC_UNARY if text.startswith("-") else PREC_ATOM
        elif type(op) is not Op and op.postfix is not None:  # an array op: x', x[1:3]
            text, precedence = operand(node.inputs[0], PREC_ATOM) + op.postfix, PREC_ATOM
        elif type(op) is not Op and op.name == "array":  # [a, b]
            args = [operand(source, 0) for source in node.inputs]
            text, precedence = "[" + ", ".join(args) + "]", PREC_ATOM
        elif op.symbol is None:
            args = [operand(source, PREC_NONE) for source in node.inputs]
            text, precedence = notation.call(op, args), PREC_ATOM
        else:
            precedence = op.precedence
            free = free_operands(op) if free_operands is not None else ()
            if op.arity == 1:
                inner = operand(node.inputs[0], PREC_NONE if 0 in free else precedence)
                text = notation.prefix(op, inner)
            else:
                left, right = node.inputs
                # Comparisons do not chain: (a < b) < c keeps its parentheses on either side.
                left = operand(left, PREC_NONE if 0 in free else precedence,
                               op.right_assoc or precedence == PREC_COMPARE)
                right = operand(right, PREC_NONE if 1 in free else precedence,
                                not op.right_assoc)
                shown = op
                if minus and op is _ADD and right.startswith("-"):  # a product or a power
                    shown, right = _SUB, right[1:]
                text = (f"{left}{_SPACED.get(id(shown)) or _spaced(shown)}{right}"
                        if infix is None else infix(shown, left, right))
        texts[node] = text
        precedences[node] = precedence
    return texts


def _spaced(op: Op) -> str:
    # Sums get spaces (x*W + b), tighter operators none, as people write them.
    return f" {op.symbol} " if op.precedence <= PREC_SUM else str(op.symbol)


# The usual operators' spaced symbols, looked up rather than formatted at every node.
_SPACED = {id(OPS[name]): _spaced(OPS[name]) for name in ("add", "sub", "mul", "div", "pow")}
_ADD, _SUB = OPS["add"], OPS["sub"]
