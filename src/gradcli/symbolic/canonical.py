"""The canonical form of a derivative: sums and products flattened, sorted and collected.

The builder simplifies locally while a derivative is built; this pass runs once on the finished
graphs, in one topological walk, and gives every sum and product one written form whatever order
the rules produced it in (docs/derivatives.md lists its rewrites, the domain they extend and
those never done). It is linear: a shared sum or product is merged into its users only while it
is small, merges copy at most ``MERGE_LIMIT`` entries, and caps on size and time make it give up
and return the graphs it was given (correct, just less simplified). This module reads nodes into
forms (``Canonical``) and adds and multiplies them (``Arithmetic``); ``canonical_writing`` writes
them as nodes; ``canonical_forms`` holds the forms, the limits, and a node's place and sign.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import cast

from gradcli.engine.core_ops import CONST, POW, VAR
from gradcli.engine.graph import nodes_and_uses, nodes_of
from gradcli.engine.ops import CONSTANTS, OPS
from gradcli.symbolic.builder import Builder
from gradcli.symbolic.canonical_forms import (
    DISTRIBUTED_TERMS,
    GROWTH,
    GROWTH_EXTRA,
    MERGE_LIMIT,
    NAMED,
    NON_NEGATIVE,
    OPENED_LEVELS,
    POSITIVE,
    SECONDS,
    SHARED_PRODUCT_LIMIT,
    SHARED_SUM_LIMIT,
    SIZE_EXTRA,
    SIZE_FACTOR,
    UNKNOWN,
    Factors,
    Form,
    Product,
    Sum,
    Term,
    TooLarge,
    add_numbers,
    multiply_numbers,
    number_sign,
    power_sign,
    short_quotient,
)
from gradcli.symbolic.canonical_writing import Writer
from gradcli.symbolic.nodes import SymNode
from gradcli.symbolic.rewrites import fold_constants

_ON_SIGNS = {"sign", "heaviside", "relu", "abs"}


class Arithmetic(Writer):
    """Sums and products of forms, and their signs where their shape shows them."""

    def sign(self, form: Form) -> int:
        """POSITIVE or NON_NEGATIVE where the form's terms and factors show it, else UNKNOWN."""
        if isinstance(form, float):
            return number_sign(form)
        if isinstance(form, Sum):  # non-negative terms, one of them positive
            signs = [self.sign(form.const)]
            signs += [self.term_sign(t) if c > 0.0 else UNKNOWN for t, c in form.terms.items()]
            if min(signs) == UNKNOWN:
                return UNKNOWN
            return max(signs)
        if isinstance(form, Product):
            if form.coefficient < 0.0:
                return UNKNOWN
            return min(self.sign(form.coefficient), self.term_sign(form.factors.items()))
        return self.signs[form]

    def term_sign(self, factors) -> int:
        least = POSITIVE
        signs = self.signs
        for base, exponent in factors:
            least = min(least, power_sign(signs[base], exponent))
        return least

    def atom(self, node: SymNode) -> Term:
        term = self.atoms.get(node)
        if term is None:
            term = self.atoms[node] = frozenset(((node, 1.0),))
        return term

    def as_sum(self, form: Form) -> Sum:
        if isinstance(form, Sum):
            return form
        if isinstance(form, float):
            return Sum(form, {})
        if isinstance(form, Product):
            if not form.factors:
                return Sum(form.coefficient, {})
            if len(form.factors) == 1 and abs(form.coefficient) == 1.0:
                ((base, exponent),) = form.factors.items()  # a + (b - c) is a + b - c
                if exponent == 1.0 and base in self.sums:
                    return cast(Sum, self.scaled(self.sums[base], form.coefficient))
            return Sum(0.0, {self.term(form.factors): form.coefficient})
        if form in self.products:  # a shared product: the same term as its factors
            return Sum(0.0, {frozenset(self.products[form].items()): 1.0})
        return Sum(0.0, {self.atom(form): 1.0})

    def term(self, factors: Factors) -> Term:
        """The factors as a term, shared products multiplied out (t1*x, t1 = w*y*z, is w*x*y*z)."""
        if not self.products or self.products.keys().isdisjoint(factors):
            return frozenset(factors.items())
        factors = dict(factors)
        for _ in range(OPENED_LEVELS):  # a shared product may hold shared products
            pieces = [b for b in factors if b in self.products]
            if not pieces:
                break
            for piece in pieces:
                self.opened(factors, piece, always=True)
        return frozenset(factors.items())

    def opened(self, factors: Factors, piece: SymNode, always: bool = False) -> None:
        """A shared product among factors multiplied out, in place: ``always``, or where it
        shares a base with them (t1*z with t1 = x*z is x*z**2), or is a sum with a factor pulled
        out."""
        inner = self.products[piece]
        exponent = factors.get(piece)
        if not isinstance(exponent, float) or exponent != math.floor(exponent):
            return  # (a*b)**0.5 is not a**0.5 * b**0.5 where a, b < 0: as ``power`` keeps it
        if not always and piece not in self.pulled_products and not any(
                b in factors for b in inner):
            return
        if not all(isinstance(power, float) for power in inner.values()):
            return  # a symbolic power inside: the piece stays one factor (never half-opened)
        del factors[piece]
        for base, power in inner.items():
            self.merge(factors, base, power * exponent)

    def as_product(self, form: Form) -> Product:
        if isinstance(form, Product):
            return form
        if isinstance(form, float):
            return Product(form, {})
        if isinstance(form, Sum):
            if not form.terms:
                return Product(form.const, {})
            if form.const == 0.0 and len(form.terms) == 1:
                ((term, coefficient),) = form.terms.items()
                return Product(coefficient, dict(term))
            return Product(1.0, {self.node(form): 1.0})
        return Product(1.0, {form: 1.0})

    def added(self, left: Form, right: Form, sign: float) -> Sum:
        """left + sign * right for any forms; a sum plus a number shares the sum's terms."""
        if right.__class__ is float:
            form = self.as_sum(left)
            return Sum(add_numbers(form.const, sign * right), form.terms)
        if left.__class__ is float and sign == 1.0:
            form = self.as_sum(right)
            return Sum(add_numbers(left, form.const), form.terms)
        return self.add(self.as_sum(left), self.as_sum(right), sign)

    def add(self, left: Sum, right: Sum, sign: float) -> Sum:
        """left + sign * right of sums, the sign 1 or -1."""
        const = add_numbers(left.const, sign * right.const)
        if sign == 1.0 and len(right.terms) > len(left.terms):
            left, right = right, left
        terms = dict(left.terms)
        for term, coefficient in right.terms.items():
            total = add_numbers(terms.get(term, 0.0), sign * coefficient)
            if total == 0.0:
                terms.pop(term, None)
            else:
                terms[term] = total
        return Sum(const, terms)

    def scaled(self, form: Form, factor: float) -> Form:
        """factor * form, into a sum's terms (pulled out again when written)."""
        if isinstance(form, float):
            return multiply_numbers(factor, form)
        if isinstance(form, Sum):
            return Sum(multiply_numbers(factor, form.const),
                       {term: multiply_numbers(factor, c) for term, c in form.terms.items()})
        product = self.as_product(form)
        return Product(multiply_numbers(factor, product.coefficient), product.factors)

    def times(self, form: Form, factor: float) -> Form:
        """factor * form: into a sum's terms when they are few (-(a - b) is b - a)."""
        if form.__class__ is Product:  # the usual: 2*(x*y) is 2*x*y
            return Product(multiply_numbers(factor, form.coefficient), form.factors)
        if isinstance(form, Sum) and len(form.terms) > DISTRIBUTED_TERMS and factor != -1.0:
            return Product(factor, {self.node(form): 1.0})
        return self.scaled(form, factor)

    def merge(self, factors: Factors, base: SymNode, exponent: float | SymNode) -> None:
        """factors * base**exponent: x**a * x**b -> x**(a + b)."""
        before = factors.get(base)
        if before is None:
            factors[base] = exponent
            return
        total: float | SymNode
        if isinstance(before, float) and isinstance(exponent, float):
            total = before + exponent
        else:
            total = self.exponent(self.add(self.exponent_sum(before),
                                           self.exponent_sum(exponent), 1.0))
        if total == 0.0:  # x/x -> 1 (docs/derivatives.md: the formula, not the program)
            del factors[base]
        else:
            factors[base] = total

    def exponent(self, form: Form) -> float | SymNode:
        node = self.node(form)
        return node.value if node.op is CONST and node.name is None else node

    def exponent_sum(self, exponent: float | SymNode) -> Sum:
        if isinstance(exponent, float):
            return Sum(exponent, {})
        return self.sums.get(exponent) or self.as_sum(exponent)

    def negated(self, exponent: float | SymNode) -> float | SymNode:
        if isinstance(exponent, float):
            return -exponent
        return self.exponent(self.scaled(self.exponent_sum(exponent), -1.0))


def canonical(outputs: Sequence[SymNode], named: bool = False,
              seconds: float = SECONDS) -> list[SymNode]:
    """``outputs`` in canonical form, or themselves if it gives up; ``named`` writes the
    numbers of ``NAMED`` as calls (formulas, not points)."""
    nodes, uses = nodes_and_uses(outputs)  # an output listed twice is one node
    limit = SIZE_FACTOR * len(nodes) + SIZE_EXTRA
    builder = Builder(max_nodes=limit + 1, exact_constants=True)
    try:
        work = Canonical(builder, limit, time.process_time() + seconds, named)
        result = work.run(nodes, cast(dict[SymNode, int], uses), outputs)
    except TooLarge:
        return list(outputs)
    # The canonical form is written out, never factored in: on graphs it cannot flatten (nested
    # functions' high derivatives) it may be larger. Then the graphs given are the answer.
    larger = GROWTH * len(nodes) + GROWTH_EXTRA
    if len(builder._table) > larger and len(nodes_of(result)) > larger:
        return list(outputs)
    return result


class Canonical(Arithmetic):
    """One canonicalization: each node's form made in one topological walk."""

    def run(self, nodes: list, uses: dict[SymNode, int],
            outputs: Sequence[SymNode]) -> list[SymNode]:
        """The canonical forms of ``nodes`` (topological; ``uses`` over all outputs), written
        out for ``outputs``."""
        forms: dict[SymNode, Form] = {}
        given = _Given(self, forms)  # what a node's users read: ``shared``
        operands = given.__getitem__
        readers = self.readers()
        for count, node in enumerate(nodes):
            if count & 255 == 255:
                self.check()
            reader = readers.get(node.op.name)
            if reader is not None:
                value = reader(*map(operands, node.inputs))
            elif node.inputs:
                value = self.call(node.op, list(map(operands, node.inputs)))
            else:
                value = self.leaf_form(node)
            forms[node] = value
            if not _written_when_shared(value, uses[node]):
                given[node] = value  # small: its users read the form itself
        return [self.node(forms[node]) for node in outputs]

    def readers(self) -> dict[str, Callable[..., Form]]:
        """The form of an arithmetic node from its operands' (other ops: ``call``)."""
        return {"add": partial(self.added, sign=1.0), "sub": partial(self.added, sign=-1.0),
                "mul": partial(self.multiply, sign=1.0),
                "div": partial(self.multiply, sign=-1.0),
                "pow": self.power, "neg": partial(self.scaled, factor=-1.0)}

    def check(self) -> None:
        if len(self.builder._table) > self.limit or time.process_time() > self.deadline:
            raise TooLarge

    def shared(self, form: Form) -> Form:
        """A form too large to merge into its users (``_written_when_shared``): one (shared)
        term."""
        if isinstance(form, Product):  # 2*t1: the 2 still folds
            piece = self.node(Product(1.0, form.factors))
            self.products[piece] = form.factors  # in a sum, its term is its factors
            return piece if form.coefficient == 1.0 else Product(form.coefficient, {piece: 1.0})
        return self.node(form)

    def leaf_form(self, node: SymNode) -> Form:
        """A variable or a constant: a node of this builder, or a plain number."""
        op = node.op
        if op is VAR:
            return self.builder.variable(str(node.name))  # its place and sign: when asked
        if op is CONST:
            if node.name in CONSTANTS:
                return self.builder.constant(node.value, str(node.name))
            if self.named and node.value in NAMED:
                function, argument = NAMED[node.value]
                return self.make(OPS[function], (self.node(argument),))
            return node.value
        return self.call(op, [])

    def call(self, op, args: list[Form]) -> Form:
        if all(isinstance(arg, float) for arg in args):
            folded = fold_constants(op, cast(list[float], args), self.builder.exact_constants)
            if folded is not None:
                return folded
        if op.name in _ON_SIGNS and self.sign(args[0]) >= NON_NEGATIVE:
            # sign(u) = heaviside(u) = 1 for u > 0; relu(u) = abs(u) = u for u >= 0
            if op.name in ("relu", "abs"):
                return args[0]
            if self.sign(args[0]) == POSITIVE:
                return 1.0
        return self.make(op, tuple(self.node(arg) for arg in args))

    def multiply(self, left: Form, right: Form, sign: float) -> Form:
        """left * right (sign 1) or left / right (sign -1)."""
        if isinstance(right, float):
            if sign == 1.0:
                return self.times(left, right)
            quotient = short_quotient(1.0, right)
            if quotient is not None:
                return self.times(left, quotient)
        if isinstance(left, float) and sign == 1.0:
            return self.times(right, left)
        if sign == 1.0 and left.__class__ is SymNode and right.__class__ is SymNode and (
                left not in self.products and right not in self.products):  # the usual: x*y
            return Product(1.0, {left: 2.0} if left is right else {left: 1.0, right: 1.0})
        a, b = self.as_product(left), self.as_product(right)
        if sign == 1.0:
            if len(b.factors) > len(a.factors):
                a, b = b, a
            factors = dict(a.factors)
            coefficient = multiply_numbers(a.coefficient, b.coefficient)
            for base, exponent in b.factors.items():
                self.merge(factors, base, exponent)
        else:
            factors = dict(a.factors)
            coefficient = self.divided(factors, a.coefficient, b)
        products = self.products
        if products and not products.keys().isdisjoint(factors):
            for piece in [b for b in factors if b in products]:
                self.opened(factors, piece)
        return Product(coefficient, factors)

    def divided(self, factors: Factors, coefficient: float, divisor: Product) -> float:
        """factors / the divisor's factors, in place; the coefficient of the quotient."""
        quotient = short_quotient(coefficient, divisor.coefficient)
        if quotient is None:  # x/3 stays a division by 3
            self.merge(factors, self.node(abs(divisor.coefficient)), -1.0)
            quotient = math.copysign(coefficient, coefficient * divisor.coefficient)
        for base, exponent in divisor.factors.items():
            self.merge(factors, base, self.negated(exponent))
            if exponent == 1.0:
                self.logistic(factors, base)
        return quotient

    def logistic(self, factors: Factors, divisor: SymNode) -> None:
        """exp(u)/(exp(u) + 1) -> sigmoid(u), in place (d/dx log(1 + exp(x)) is softplus')."""
        form = self.sums.get(divisor)
        if form is None or form.const != 1.0 or len(form.terms) != 1:
            return
        ((term, coefficient),) = form.terms.items()
        if coefficient != 1.0 or len(term) != 1:
            return
        ((power, exponent),) = term
        if exponent == 1.0 and power.op.name == "exp" and factors.get(power) == 1.0 and (
                factors.get(divisor) == -1.0):
            del factors[power], factors[divisor]
            self.merge(factors, self.make(OPS["sigmoid"], power.inputs), 1.0)

    def power(self, base: Form, exponent: Form) -> Form:
        if isinstance(exponent, float):
            if isinstance(base, float):
                return self.call(POW, [base, exponent])
            if exponent == 0.0:
                return 1.0
            if exponent == 1.0:
                return base
            if exponent == math.floor(exponent):  # (a*b)**n = a**n * b**n for integers n
                if base.__class__ is SymNode:  # the usual: x**2
                    return Product(1.0, {base: exponent})
                product = self.as_product(base)
                coefficient = (1.0 if product.coefficient == 1.0 else  # 1**n, the usual
                               fold_constants(POW, [product.coefficient, exponent], False))
                if coefficient is not None and all(isinstance(e, float)
                                                   for e in product.factors.values()):
                    return Product(coefficient, {b: e * exponent
                                                 for b, e in product.factors.items()})
        exponent = self.exponent(exponent)
        if exponent == 0.0:
            return 1.0
        return Product(1.0, {self.node(base): exponent})


def _written_when_shared(form: Form, uses: int) -> bool:
    """Whether ``shared`` writes the form as a node (too large to merge into its users)."""
    if type(form) is Sum:
        return len(form.terms) + 1 > (SHARED_SUM_LIMIT if uses > 1 else MERGE_LIMIT)
    if type(form) is Product:
        return len(form.factors) + 1 > (SHARED_PRODUCT_LIMIT if uses > 1 else MERGE_LIMIT)
    return False


class _Given(dict):
    """node -> the form its users read: ``run`` stores the node's own form; one ``shared``
    writes is written at each use (the nodes made in one order, which breaks ties)."""

    __slots__ = ("canonical", "forms")

    def __init__(self, canonical: Canonical, forms: dict) -> None:
        super().__init__()
        self.canonical, self.forms = canonical, forms

    def __missing__(self, node: SymNode) -> Form:
        return self.canonical.shared(self.forms[node])
