"""The pieces of a canonical form: sums and products as data, the pass's limits, numbers folded
only while they stay finite, and a node's place and sign, known from its inputs alone.
"""

from __future__ import annotations

import math

from gradcli.engine.core_ops import ADD, CONST, SUB
from gradcli.engine.notation import format_number
from gradcli.symbolic.nodes import SymNode
from gradcli.symbolic.rewrites import is_short

MERGE_LIMIT = 48  # a sum or product with more entries is used as one term by its users
# ... and one used more than once in an output, past these (a product merged into a product, or a
# sum into a sum, is written out again; used as a factor or a term it stays one shared node)
SHARED_SUM_LIMIT, SHARED_PRODUCT_LIMIT = 8, 3
DISTRIBUTED_TERMS = 2  # a number multiplies out a sum of at most this many terms
OPENED_LEVELS = 4  # shared products within shared products multiplied out in a term
EXPANDED_TERMS = 3  # sums of at most this many terms are multiplied out when that cancels,
EXPANDED_FACTORS = 4  # in terms of at most this many factors
EXPANSION_ROUNDS, EXPANSION_GROWTH = 3, 4  # multiplied out this many times, while the terms
# stay at most this many times as many (plus as many again): linear in the sum's size
FACTORING_DEPTH = 4  # common factors are pulled out of a sum at most this many levels deep
SIZE_FACTOR, SIZE_EXTRA = 4, 2_000  # stop past SIZE_FACTOR * input nodes + SIZE_EXTRA made
SECONDS = 10.0  # ... or past this much CPU time (a safety net: the pass is linear)
GROWTH, GROWTH_EXTRA = 1.25, 8  # a canonical form larger than this keeps the graphs given
SIGNATURE = 60  # characters of a node's text that decide its place in a sum or product


class TooLarge(Exception):  # noqa: N818 (not an error: a reason to stop)
    """The canonical form grew too large, took too long or met a number that does not fold."""


# A form is never changed once made (a new form may share its dict: a sum plus a number keeps
# the sum's terms); ``merge`` changes only the new dicts that it is given.
Factors = dict  # base node -> exponent (a float, or a node)

Term = frozenset  # the (base, exponent) pairs of a product whose coefficient is 1


class Sum:
    """const + sum(coefficient * term)."""

    __slots__ = ("const", "terms")

    def __init__(self, const: float, terms: dict[Term, float]) -> None:
        self.const = const
        self.terms = terms


class Product:
    """coefficient * prod(base ** exponent)."""

    __slots__ = ("coefficient", "factors")

    def __init__(self, coefficient: float, factors: Factors) -> None:
        self.coefficient = coefficient
        self.factors = factors


Form = float | SymNode | Sum | Product  # a node is an atom: a variable, a call, a shared piece


# The numbers the op table's rules compute from constants (log2's rule divides by log(2)): in a
# formula, a number equal to one of them to the last bit is written as the call.
NAMED = {math.log(2.0): ("log", 2.0), math.log(10.0): ("log", 10.0)}


# --- numbers: folded only while they stay finite and normal ------------------------------------

def add_numbers(a: float, b: float) -> float:
    result = a + b
    if not math.isfinite(result):
        raise TooLarge
    return result


def multiply_numbers(a: float, b: float) -> float:
    result = a * b
    if not math.isfinite(result) or (result == 0.0 and a != 0.0 and b != 0.0):
        raise TooLarge
    return result


def short_quotient(a: float, b: float) -> float | None:
    """a / b when it is a short number (x/4 -> 0.25*x), None to keep the division (x/3)."""
    if b == 0.0:
        raise TooLarge  # x/0 stays as written: the unsimplified graph reports it when evaluated
    quotient = a / b
    if not math.isfinite(quotient) or (quotient == 0.0 and a != 0.0):
        raise TooLarge
    if b == 1.0 or b == -1.0:  # the usual divisor: a itself, as short as it is
        return quotient
    return quotient if is_short(quotient, a, b) else None


# --- what a node's inputs tell: its place among terms and factors, its sign ---------------------

class _ByInputs(dict):
    """A property of nodes computed from their inputs' (``of``) when first asked for (most
    nodes are never asked), by an explicit stack."""

    __slots__ = ()

    def __missing__(self, node: SymNode):
        stack = [node]
        while stack:
            top = stack[-1]
            ready = True
            for source in top.inputs:
                if source not in self:
                    stack.append(source)  # (compiled: a direct call, unlike a bound method)
                    ready = False
            if ready:
                stack.pop()
                if top not in self:
                    self[top] = self.of(top)
        return self[node]

    def of(self, node: SymNode):
        raise NotImplementedError


class Places(_ByInputs):
    """node -> (is a sum, text cut to ``SIGNATURE``, seq): its place among terms and factors."""

    __slots__ = ()

    def of(self, node: SymNode) -> tuple:
        inputs = node.inputs
        if not inputs:
            text = str(node.name) if node.name is not None else "~" + format_number(node.value)
            return (False, text, node.seq)
        op, texts = node.op, [self[source][1] for source in inputs]
        if op.symbol is None:
            text = f"{op.name}({','.join(texts)})"
        else:  # -a, a + b
            text = op.symbol.join(texts) if len(texts) == 2 else op.symbol + texts[0]
        if not node.needs_grad and not text.startswith("~"):  # after what depends on a variable
            text = "~" + text
        return (op is ADD or op is SUB, text[:SIGNATURE], node.seq)


class Signs(_ByInputs):
    """node -> POSITIVE, NON_NEGATIVE or UNKNOWN, where its shape shows it."""

    __slots__ = ()

    def of(self, node: SymNode) -> int:
        if node.op is CONST:
            return number_sign(node.value)
        inputs, name = node.inputs, node.op.name
        if not inputs:
            return UNKNOWN
        if name in _POSITIVE_CALLS:
            return POSITIVE
        if name in _NON_NEGATIVE_CALLS:
            return NON_NEGATIVE
        signs = [self[source] for source in inputs]
        if name in ("add", "mul", "div") and min(signs) >= NON_NEGATIVE:
            return max(signs) if name == "add" else min(signs)
        if name == "pow":
            exponent = inputs[1]
            return power_sign(signs[0], exponent.value if exponent.op is CONST else exponent)
        return UNKNOWN


UNKNOWN, NON_NEGATIVE, POSITIVE = 0, 1, 2


_POSITIVE_CALLS = {"exp", "cosh", "sigmoid", "softplus"}

_NON_NEGATIVE_CALLS = {"relu", "abs", "sqrt", "hypot", "heaviside"}


def number_sign(value: float) -> int:
    return POSITIVE if value > 0.0 else NON_NEGATIVE if value == 0.0 else UNKNOWN


def power_sign(base: int, exponent: float | SymNode) -> int:
    """The sign of base**exponent from the base's: an even power is at least non-negative."""
    if base == POSITIVE:
        return POSITIVE
    if isinstance(exponent, float):
        if base == NON_NEGATIVE and exponent > 0.0:
            return NON_NEGATIVE
        if exponent % 2.0 == 0.0:
            return NON_NEGATIVE
    return UNKNOWN
