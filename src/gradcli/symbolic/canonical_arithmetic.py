"""The arithmetic of canonical forms: sums and products added, scaled and multiplied, like terms
collected and powers of one base merged, with the signs their shapes show. The middle layer of
``Canonical`` (symbolic/canonical.py): it reads nodes into these forms; ``Writer`` writes them.
"""

from __future__ import annotations

from typing import cast

from gradcli.engine.core_ops import CONST
from gradcli.symbolic.canonical_forms import (
    DISTRIBUTED_TERMS,
    OPENED_LEVELS,
    POSITIVE,
    UNKNOWN,
    Factors,
    Form,
    Product,
    Sum,
    Term,
    add_numbers,
    multiply_numbers,
    number_sign,
    power_sign,
)
from gradcli.symbolic.canonical_writing import Writer
from gradcli.symbolic.nodes import SymNode


class Arithmetic(Writer):
    """Sums and products of forms, and their signs where their shape shows them."""

    def sign(self, form: Form) -> int:
        """POSITIVE or NON_NEGATIVE where the form's own shape shows it (x**2 + 0.5, exp(x),
        relu(x)), else UNKNOWN: a look at its terms and factors, never deeper."""
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
        """The factors as a term of a sum, shared products among them multiplied out: in a sum,
        w*x*y*z and t1*x with t1 = w*y*z are one term (written back, it is the same node)."""
        if not self.products or self.products.keys().isdisjoint(factors):
            return frozenset(factors.items())
        factors = dict(factors)
        for _ in range(OPENED_LEVELS):  # a shared product may hold shared products
            pieces = [b for b in factors if b in self.products]
            if not pieces:
                break
            for piece in pieces:
                exponent = factors[piece]
                inner = self.products[piece]
                if isinstance(exponent, float) and all(isinstance(e, float)
                                                       for e in inner.values()):
                    del factors[piece]
                    for base, power in inner.items():
                        self.merge(factors, base, power * exponent)
        return frozenset(factors.items())

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
        """left + sign * right for any forms (``add`` once both are sums); the usual sum plus
        a number keeps the sum's terms as they are (forms are never changed once made)."""
        if right.__class__ is float:
            form = self.as_sum(left)
            return Sum(add_numbers(form.const, sign * right), form.terms)
        if left.__class__ is float and sign == 1.0:
            form = self.as_sum(right)
            return Sum(add_numbers(left, form.const), form.terms)
        return self.add(self.as_sum(left), self.as_sum(right), sign)

    def add(self, left: Sum, right: Sum, sign: float) -> Sum:
        """left + sign * right, for a sign of 1 or -1 (which never overflows a number, so only
        the sums are checked: ``add_numbers``)."""
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
        """factor * form: a number times a sum goes into its terms (collected, then pulled out
        again when written, so 2*(a + b) prints as it reads)."""
        if isinstance(form, float):
            return multiply_numbers(factor, form)
        if isinstance(form, Sum):
            return Sum(multiply_numbers(factor, form.const),
                       {term: multiply_numbers(factor, c) for term, c in form.terms.items()})
        product = self.as_product(form)
        return Product(multiply_numbers(factor, product.coefficient), product.factors)

    def times(self, form: Form, factor: float) -> Form:
        """factor * form as a product: a number goes into a sum's terms when they are few
        (-(a - b) is b - a), else it multiplies the sum (2*(x + y - z**2) stays as written)."""
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
