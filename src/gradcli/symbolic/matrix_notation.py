"""Array programs' derivatives in LaTeX's matrix notation (``A^\\top``, ``\\odot``,
``\\otimes``, ``X^{-1}``, ``I_{n}``): the printed form of ``gradcli diff --format latex`` of a
program with arrays (symbolic/jacobians.py); names and numbers as the scalar LaTeX
(``printing.LatexNotation``) writes them.
"""

from __future__ import annotations

from typing import Any

from gradcli.engine.core_ops import CONST, VAR
from gradcli.engine.graph import Node, nodes_of
from gradcli.symbolic.printing import LATEX, LatexNotation

# How tightly a text binds: a sum, an outer product (⊗), an element-wise product (⊙), a
# product written \cdot or by juxtaposition (a matrix product), a power, an atom. A matrix
# product binds tighter than ⊙ (A \odot B C reads A ⊙ (B C)), and ⊗ and ⊙ do not mix unbracketed.
SUM, OUTER, HADAMARD, PRODUCT, POWER, ATOM = 0, 1, 2, 3, 4, 5

# op -> (template of its operands' texts, how tightly each must bind, how tightly it binds)
_MATRIX_LATEX: dict[str, tuple[str, tuple[int, ...], int]] = {
    "add": ("{0} + {1}", (SUM, OUTER), SUM), "sub": ("{0} - {1}", (SUM, OUTER), SUM),
    "neg": ("-{0}", (OUTER,), SUM), "div": (r"\frac{{{0}}}{{{1}}}", (SUM, SUM), POWER),
    "matmul": ("{0} {1}", (PRODUCT, POWER), PRODUCT),
    "transpose": (r"{0}^\top", (ATOM,), POWER),
    "outer": (r"{0} \otimes {1}", (POWER, POWER), OUTER),
    "inv": ("{0}^{{-1}}", (ATOM,), POWER),
    "eq": (r"\left[{0} = {1}\right]", (OUTER, OUTER), ATOM),  # Iverson's
    "norm": (r"\left\lVert {0} \right\rVert_{{2}}", (SUM,), ATOM),
    "norm1": (r"\left\lVert {0} \right\rVert_{{1}}", (SUM,), ATOM),
    "dot": (r"\left\langle {0}, {1} \right\rangle", (SUM, SUM), ATOM),
}  # any other op: as ``LatexNotation.call`` writes it (\operatorname{tr}, \det)


def matrix_latex(output: Node, notation: LatexNotation = LATEX) -> str:
    """Matrix notation (``A^\\top``, ``\\odot``, ``\\otimes``, ``X^{-1}``, ``I_{n}``), each
    node's text written out at each use; names as ``notation`` writes them."""
    texts: dict[int, tuple[str, int]] = {}  # id -> (text, how tightly it binds)
    for node in nodes_of([output]):
        op = node.op
        if op is VAR:  # W_in as \mathrm{W\_in}, x_0 as x_{0}: as the scalar LaTeX writes them
            texts[id(node)] = (notation.name(str(node.name)), ATOM)
        elif op is CONST:
            text = notation.number(node.value) if not getattr(node.value, "ndim", 0) else (
                _latex_matrix(node.value))
            texts[id(node)] = (text, ATOM if not text.startswith("-") else SUM)
        else:
            texts[id(node)] = _matrix_latex_node(node, texts)
    return texts[id(output)][0]


def _operand(texts: dict[int, tuple[str, int]], node: Node, at_least: int) -> tuple[str, int]:
    """``node``'s text as an operand that must bind ``at_least`` so tightly (in brackets if it
    does not), and how tightly it then binds."""
    text, precedence = texts[id(node)]
    return (text, precedence) if precedence >= at_least else (rf"\left({text}\right)", ATOM)


def _latex_matrix(value: Any) -> str:
    """A constant array as a bracketed matrix (a vector: one row), not Python's list."""
    rows = value.tolist() if value.ndim == 2 else [value.tolist()] if value.ndim == 1 else None
    if rows is None:  # three or more axes: no matrix notation
        return str(value.tolist())
    body = r" \\ ".join(" & ".join(LATEX.number(float(v)) for v in row) for row in rows)
    return rf"\begin{{bmatrix}} {body} \end{{bmatrix}}"


def _matrix_latex_node(node: Node, texts: dict[int, tuple[str, int]]) -> tuple[str, int]:
    op, inputs = node.op, node.inputs
    name = op.name

    def arg(source: Node, at_least: int) -> str:
        return _operand(texts, source, at_least)[0]

    array = [bool(getattr(source.value, "ndim", 0)) for source in inputs]
    if name in _MATRIX_LATEX:
        template, binding, precedence = _MATRIX_LATEX[name]
        return template.format(*map(arg, inputs, binding)), precedence
    if name == "mul" and all(array):
        return arg(inputs[0], HADAMARD) + r" \odot " + arg(inputs[1], POWER), HADAMARD
    if name == "mul":  # by a scalar: any product reads the same around it (2 \cdot A B), so
        # the \cdot binds as loosely as its loosest operand (2 \cdot A \odot B: as ⊙)
        left, first = _operand(texts, inputs[0], OUTER)
        right, second = _operand(texts, inputs[1], OUTER)
        return left + r" \cdot " + right, min(PRODUCT, first, second)
    if name == "pow":
        hadamard = r"\circ " if array[0] else ""
        return f"{arg(inputs[0], ATOM)}^{{{hadamard}{arg(inputs[1], SUM)}}}", POWER
    if name == "index":  # x_{0} indexed: {x_{0}}_{1:3}, not a double subscript
        base = arg(inputs[0], ATOM)
        return f"{{{base}}}_{{{op.postfix[1:-1]}}}" if "_" in base else \
            f"{base}_{{{op.postfix[1:-1]}}}", ATOM
    if name in ("ones", "eye"):
        size = LATEX.number(inputs[0].value)
        return (rf"\mathbf{{1}}_{{{size}}}" if name == "ones" else f"I_{{{size}}}"), ATOM
    if getattr(op, "symbol", None) and len(inputs) == 2:  # comparisons, and, or
        return LATEX.infix(op, arg(inputs[0], OUTER), arg(inputs[1], OUTER)), SUM
    if name == "logical_not":
        return LATEX.prefix(op, arg(inputs[0], ATOM)), SUM
    operands = [arg(source, SUM) for source in inputs]
    return LATEX.call(op, operands), ATOM
