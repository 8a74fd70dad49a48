"""Local rewrites: what a ``Builder`` does to each node it makes, before keeping it.

Constant folding with the table's own forward functions, identities (x*1, x - x, --x), like
terms and powers gathered, common factors pulled; each looks a fixed number of levels down, so
building stays linear. A formula's builder (``exact_constants``) keeps log(2), 1/3, pi and e as
written. A factor, a sign or a sum of two conditionals on one condition moves into the branches
(g*where(c, a, b) -> where(c, g*a, g*b)), so that d/dx where(x > 0, log(x), 0) is where(x > 0,
1/x, 0), which like the program is 0 at x = 0; nothing moves out of a branch.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

from gradcli.engine.core_ops import ADD, CONST, DIV, LOG, MUL, NEG, POW, SUB, WHERE
from gradcli.engine.graph import Node
from gradcli.engine.notation import format_number
from gradcli.engine.ops import Op
from gradcli.symbolic.nodes import Maker, SymNode


def fold(op: Op, values: list[float]) -> float | None:
    """``op`` on constant operands, or None where that is not a finite float (left unfolded,
    so evaluating the expression reports the error at that node)."""
    if op.domain is not None and op.domain(*values) is not None:
        return None
    try:
        result = op.forward(*values)
        return float(result) if math.isfinite(result) else None
    # TypeError: array constants (vectorized derivatives), not folded into a number
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):
        return None


# Ops whose value on numbers is written as a number: arithmetic, and the piecewise functions whose
# results are their operands or small integers. Other functions of numbers (log(2), sqrt(3))
# stay calls in a formula unless the result is an integer (log(1) is 0, sqrt(4) is 2).
_ALWAYS_FOLDED = frozenset({"add", "sub", "mul", "div", "neg", "abs", "sign", "relu", "min",
                            "max"})


def fold_constants(op: Op, values: list[float], exact_constants: bool) -> float | None:
    """``fold``, except that ``exact_constants`` leaves a function's value that is no integer
    (log(2), 2**0.5) and a quotient that is no short number (1/3) as written."""
    folded = fold(op, values)
    if folded is None or not exact_constants:
        return folded
    if op.name == "div":  # 1/4 is 0.25, but 1/3 stays 1/3
        return folded if is_short(folded, *values) else None
    if op.name in _ALWAYS_FOLDED:
        return folded
    if op.name == "pow" and values[1] == math.floor(values[1]):
        return folded
    return folded if folded == math.floor(folded) else None


def is_short(quotient: float, numerator: float, divisor: float) -> bool:
    """Whether a quotient of numbers reads as well as the division does: 0.25, not 1/4; but 1/3
    rather than 0.3333333333333333."""
    return len(format_number(quotient)) <= max(len(format_number(numerator)),
                                               len(format_number(divisor))) + 3


# --- local rewrites: each returns a simpler node, or None to keep the node as it is ------------
# They run for every node made, so they read each operand's op once and test the cheap cases
# (a number, a product) before building anything.

def _is(node: Node, value: float) -> bool:
    return node.op is CONST and node.value == value


def _number(node: Node) -> bool:
    """A number that may be folded into a coefficient (pi and e are names: they stay)."""
    return node.op is CONST and node.name is None


def _term(node: SymNode) -> tuple[Any, SymNode]:
    """``node`` as coefficient * rest: 3*x -> (3, x), -x -> (-1, x), x -> (1, x)."""
    if node.op is MUL and _number(node.inputs[0]):
        return node.inputs[0].value, node.inputs[1]
    if node.op is NEG:
        return -1.0, node.inputs[0]
    return 1.0, node


def _base(node: SymNode) -> SymNode:
    """``node`` as base ** exponent: the base (x**3 -> x, x -> x)."""
    return node.inputs[0] if node.op is POW else node


def _exponent(b: Maker, node: SymNode) -> SymNode:
    """``node`` as base ** exponent: the exponent (x**3 -> 3, x -> 1)."""
    return node.inputs[1] if node.op is POW else b.constant(1.0)


def _other_operand(node: SymNode, operand: SymNode) -> SymNode:
    """The operand of a binary ``node`` that is not ``operand`` (one of them is)."""
    first, second = node.inputs
    return second if first is operand else first


def _scaled(b: Maker, coefficient: float | None, node: SymNode) -> SymNode | None:
    """coefficient * node, or None (no rewrite) when the coefficient did not fold to a float."""
    return None if coefficient is None else b.make(MUL, (coefficient, node))


def _factors(node: SymNode) -> tuple[SymNode, SymNode | None]:
    """``node`` as a product of two factors; a non-product is (node, None), None meaning 1."""
    if node.op is MUL:
        return node.inputs[0], node.inputs[1]
    return node, None


def _like_terms(b: Maker, op: Op, x: SymNode, y: SymNode) -> SymNode | None:
    """x ± y as one term when they are like terms (2*x + x -> 3*x), else with a common factor
    pulled out (``_common_factor``)."""
    if x.op is not MUL and y.op is not MUL and x.op is not NEG and y.op is not NEG:
        return _scaled(b, fold(op, [1.0, 1.0]), x) if x is y and x.op is not CONST else None
    (cx, rx), (cy, ry) = _term(x), _term(y)
    if rx is ry and rx.op is not CONST:
        return _scaled(b, fold(op, [cx, cy]), rx)
    return _common_factor(b, op, x, y)


def _common_factor(b: Maker, op: Op, x: SymNode, y: SymNode) -> SymNode | None:
    """p*q ± p*s -> p*(q ± s) (any pairing); p ± p*s -> p*(1 ± s)."""
    if x.op is not MUL and y.op is not MUL:
        return None  # only x ± x would pair, and like terms are gathered before
    (p, q), (r, s) = _factors(x), _factors(y)
    if not (p is r or p is s or (q is not None and (q is r or q is s))):
        return None  # no factor in common: the usual case
    for left, right, other_x, other_y in ((p, r, q, s), (p, s, q, r), (q, r, p, s), (q, s, p, r)):
        if left is not None and left is right and left.op is not CONST:
            one = b.constant(1.0)
            inner = b.make(op, (one if other_x is None else other_x,
                                one if other_y is None else other_y))
            return b.make(MUL, (left, inner))
    return None


def _add(b: Maker, x: SymNode, y: SymNode) -> SymNode | None:
    xop, yop = x.op, y.op
    if xop is CONST or yop is CONST:
        if xop is CONST and x.value == 0.0:
            return y
        if yop is CONST and y.value == 0.0:
            return x
    elif xop is WHERE and yop is WHERE and x.inputs[0] is y.inputs[0]:
        return _into_branches(b, ADD, x, y)
    if yop is NEG:
        return b.make(SUB, (x, y.inputs[0]))
    if xop is NEG:
        return b.make(SUB, (y, x.inputs[0]))
    if yop is CONST and y.value < 0.0:
        return b.make(SUB, (x, -y.value))
    return _like_terms(b, ADD, x, y)


def _sub(b: Maker, x: SymNode, y: SymNode) -> SymNode | None:
    xop, yop = x.op, y.op
    if yop is CONST and y.value == 0.0:
        return x
    if xop is CONST and x.value == 0.0:
        return b.make(NEG, (y,))
    if x is y:
        return b.constant(0.0)
    if xop is WHERE and yop is WHERE and x.inputs[0] is y.inputs[0]:
        return _into_branches(b, SUB, x, y)
    if yop is NEG:
        return b.make(ADD, (x, y.inputs[0]))
    if yop is CONST and y.value < 0.0:
        return b.make(ADD, (x, -y.value))
    if xop is ADD and y in x.inputs:
        return _other_operand(x, y)  # (p + y) - y -> p
    return _like_terms(b, SUB, x, y)


def _mul(b: Maker, x: SymNode, y: SymNode) -> SymNode | None:
    xop, yop = x.op, y.op
    number = xop is CONST or yop is CONST  # the rules on numbers are tried only then
    if number:
        if (xop is CONST and x.value == 0.0) or (yop is CONST and y.value == 0.0):
            return b.constant(0.0)
        if xop is CONST and x.value == 1.0:
            return y
        if yop is CONST and y.value == 1.0:
            return x
    if xop is WHERE or yop is WHERE:
        return _into_branches(b, MUL, x, y)
    if _pieces_summed(x):
        return _spread_over(b, MUL, x, y, True)
    if _pieces_summed(y):
        return _spread_over(b, MUL, x, y, False)
    if number:
        if xop is CONST and x.value == -1.0:
            return b.make(NEG, (y,))
        if yop is CONST:
            if y.value == -1.0:
                return b.make(NEG, (x,))
            if xop is not CONST:
                return b.make(MUL, (y, x))  # numbers first: 2*x
    if xop is NEG:
        return b.make(NEG, (b.make(MUL, (x.inputs[0], y)),))
    if yop is NEG:
        return b.make(NEG, (b.make(MUL, (x, y.inputs[0])),))
    if yop is MUL and _number(y.inputs[0]):
        if _number(x):
            return _scaled(b, fold(MUL, [x.value, y.inputs[0].value]), y.inputs[1])
        return b.make(MUL, (y.inputs[0], b.make(MUL, (x, y.inputs[1]))))
    if xop is MUL and _number(x.inputs[0]) and yop is not CONST:
        return b.make(MUL, (x.inputs[0], b.make(MUL, (x.inputs[1], y))))
    if xop is DIV:
        numerator = _moved_product(b, x.inputs[0], y)
        return None if numerator is None else b.make(DIV, (numerator, x.inputs[1]))
    if yop is DIV:
        numerator = _moved_product(b, x, y.inputs[0])
        return None if numerator is None else b.make(DIV, (numerator, y.inputs[1]))
    return None if xop is CONST else _gather_powers(b, x, y)


def _moved_product(b: Maker, p: SymNode, q: SymNode) -> SymNode | None:
    """p*q for a factor moved across a division; None where numbers p and q have no normal
    product (a/(1e200*1e200) would divide by an overflow, (a/1e200)/1e200 does not)."""
    if p.op is CONST and q.op is CONST and p.value != 0.0 and q.value != 0.0:
        product = fold(MUL, [p.value, q.value])
        if product is None or abs(product) < sys.float_info.min:
            return None
    return b.make(MUL, (p, q))


def _gather_powers(b: Maker, x: SymNode, y: SymNode) -> SymNode | None:
    """x**a * x**b -> x**(a + b); also one level into a product on the right (x not a number)."""
    base = _base(x)
    if base is _base(y) and base.op is not CONST:
        return b.make(POW, (base, b.make(ADD, (_exponent(b, x), _exponent(b, y)))))
    if y.op is MUL:
        p, q = y.inputs
        if _base(p) is base:
            return b.make(MUL, (b.make(MUL, (x, p)), q))
        if _base(q) is base:
            return b.make(MUL, (p, b.make(MUL, (x, q))))
    return None


def _div(b: Maker, x: SymNode, y: SymNode) -> SymNode | None:
    xop, yop = x.op, y.op
    if yop is CONST and y.value == 1.0:
        return x
    if xop is WHERE:
        return _into_branches(b, DIV, x, y)
    if _pieces_summed(x):
        return _spread_over(b, DIV, x, y, True)
    if yop is CONST and y.value == -1.0:
        return b.make(NEG, (x,))
    if xop is CONST and x.value == 0.0:
        return b.constant(0.0)
    if x is y:
        return b.constant(1.0)
    if xop is NEG:
        return b.make(NEG, (b.make(DIV, (x.inputs[0], y)),))
    if yop is NEG:
        return b.make(NEG, (b.make(DIV, (x, y.inputs[0])),))
    if xop is DIV:
        divisor = _moved_product(b, x.inputs[1], y)
        return None if divisor is None else b.make(DIV, (x.inputs[0], divisor))
    if yop is DIV:
        numerator = _moved_product(b, x, y.inputs[1])
        return None if numerator is None else b.make(DIV, (numerator, y.inputs[0]))
    if xop is MUL and y in x.inputs:
        return _other_operand(x, y)  # (p*y)/y -> p
    base = _base(x)
    if base is _base(y) and base.op is not CONST:
        return b.make(POW, (base, b.make(SUB, (_exponent(b, x), _exponent(b, y)))))
    return None


def _neg(b: Maker, x: SymNode) -> SymNode | None:
    if x.op is NEG:
        return x.inputs[0]
    if x.op is WHERE:
        condition, taken, other = x.inputs
        return b.make(WHERE, (condition, b.make(NEG, (taken,)), b.make(NEG, (other,))))
    if x.op is SUB:
        return b.make(SUB, (x.inputs[1], x.inputs[0]))
    if x.op is MUL and _number(x.inputs[0]):
        return b.make(MUL, (-x.inputs[0].value, x.inputs[1]))
    return None


def _pow(b: Maker, x: SymNode, y: SymNode) -> SymNode | None:
    if _is(y, 1.0):
        return x
    if _is(y, 0.0) or _is(x, 1.0):
        return b.constant(1.0)
    if x.op is POW and x.inputs[1].op is CONST and y.op is CONST and y.value == math.floor(y.value):
        return b.make(POW, (x.inputs[0], b.make(MUL, (x.inputs[1], y))))
    return None


def _xlogy(b: Maker, x: SymNode, y: SymNode) -> SymNode | None:
    """xlogy(0, y) -> 0; xlogy(x, c) -> x*log(c) for a number c > 0 (log(c) is then finite, so
    the two agree everywhere): ``diff "2**x"`` prints a product, as before xlogy."""
    if _is(x, 0.0):
        return b.constant(0.0)
    if y.op is CONST and y.value > 0.0:
        return b.make(MUL, (x, b.make(LOG, (y,))))
    return None


def _where(b: Maker, c: SymNode, x: SymNode, y: SymNode) -> SymNode | None:
    if c.op is CONST:
        return x if c.value else y
    if x is y:
        return x
    if x.op is WHERE and x.inputs[0] is c:  # where(c, where(c, p, q), y) -> where(c, p, y)
        return b.make(WHERE, (c, x.inputs[1], y))
    if y.op is WHERE and y.inputs[0] is c:
        return b.make(WHERE, (c, x, y.inputs[2]))
    return None


def _into_branches(b: Maker, op: Op, x: SymNode, y: SymNode) -> SymNode:
    """``op`` of x and y moved into the branches of the conditional among them (x's if both):
    g*where(c, p, q) -> where(c, g*p, g*q); each branch keeps what it had."""
    split = x if x.op is WHERE else y
    condition = split.inputs[0]

    def branch(pick: int) -> SymNode:
        left = x.inputs[pick] if x.op is WHERE and x.inputs[0] is condition else x
        right = y.inputs[pick] if y.op is WHERE and y.inputs[0] is condition else y
        return b.make(op, (left, right))

    return b.make(WHERE, (condition, branch(1), branch(2)))


def _pieces_summed(node: SymNode, depth: int = 4) -> bool:
    """A sum of conditionals (a gradient that reached a node through several wheres:
    where(x > 0, 1, 0) + where(x > 1, 1, 0)), up to ``depth`` levels down: building stays
    linear."""
    if node.op is WHERE:
        return True
    return depth > 0 and (node.op is ADD or node.op is SUB) and all(
        _pieces_summed(source, depth - 1) for source in node.inputs)


def _spread_over(b: Maker, op: Op, x: SymNode, y: SymNode, first: bool) -> SymNode:
    """g*(w1 + w2) -> g*w1 + g*w2 (and (w1 + w2)/g), each then moved into its branches: a
    factor pulled out of the pieces would be computed where none of them is taken
    (0.5/sqrt(x) at x < 0 in d/dx of where(x > 0, sqrt(x), 0) + where(x > 1, sqrt(x), 0));
    ``first``: the sum is x, else y."""
    summed, other = (x, y) if first else (y, x)
    left, right = summed.inputs
    if first:
        return b.make(summed.op, (b.make(op, (left, other)), b.make(op, (right, other))))
    return b.make(summed.op, (b.make(op, (other, left)), b.make(op, (other, right))))


REWRITES: dict[str, Callable[..., SymNode | None]] = {
    "add": _add, "sub": _sub, "mul": _mul, "div": _div, "neg": _neg, "pow": _pow,
    "xlogy": _xlogy, "where": _where,
}
