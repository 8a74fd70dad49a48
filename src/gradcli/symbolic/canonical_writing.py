"""Writing canonical forms as nodes (the part of ``Canonical`` that does it): terms in one order,
negative exponents as division, a shared factor pulled out, small sums multiplied out where
that cancels terms.
"""

from __future__ import annotations

import math

from gradcli.engine.core_ops import ADD, CONST, DIV, MUL, NEG, POW, SUB
from gradcli.symbolic.builder import Builder
from gradcli.symbolic.canonical_forms import (
    EXPANDED_FACTORS,
    EXPANDED_TERMS,
    EXPANSION_GROWTH,
    EXPANSION_ROUNDS,
    FACTORING_DEPTH,
    SIGNATURE,
    Factors,
    Form,
    Places,
    Product,
    Signs,
    Sum,
    Term,
    add_numbers,
    multiply_numbers,
)
from gradcli.symbolic.nodes import SymNode


class Writer:
    """One canonicalization's state, and its forms written as nodes (``merge`` and
    ``negated`` are its subclass ``Arithmetic``'s)."""

    def __init__(self, builder: Builder, limit: int, deadline: float, named: bool) -> None:
        self.builder = builder
        # make(op, inputs): the node op(inputs) as it is (the canonical forms are already
        # simplified), the builder's own method rather than a call through one more.
        self.make = builder.raw
        self.limit = limit
        self.deadline = deadline
        self.named = named
        self.sums: dict[SymNode, Sum] = {}  # node written from a sum -> that sum (exponents)
        # (node, 1.0) for each node of ``sums`` with at most EXPANDED_TERMS terms: a term (a set
        # of (base, exponent) pairs) has a small sum to multiply out iff it meets this set, a
        # test made in one set operation rather than a loop over the term's factors.
        self.small: set[tuple[SymNode, float]] = set()
        self.keys = Places()  # node -> its place among factors: (sum?, text, seq)
        self.made: dict[Sum | Product, SymNode] = {}  # form (by identity) -> its node
        self.atoms: dict[SymNode, Term] = {}
        self.term_keys: dict[Term, tuple] = {}
        self.products: dict[SymNode, Factors] = {}  # shared product -> its factors
        # sums written as a product, a factor pulled out (``pulled``): in a product they are
        # opened (``Canonical.opened``), so z * (z*(1 - 4*y)) is z**2*(1 - 4*y)
        self.pulled_products: set[SymNode] = set()
        self.signs = Signs()  # POSITIVE or NON_NEGATIVE where that is plain

    # The forms' arithmetic: ``Arithmetic``'s.
    def merge(self, factors: Factors, base: SymNode, exponent: float | SymNode) -> None:
        raise NotImplementedError

    def negated(self, exponent: float | SymNode) -> float | SymNode:
        raise NotImplementedError

    def node(self, form: Form) -> SymNode:
        if isinstance(form, SymNode):
            return form
        if isinstance(form, float):
            return self.builder.constant(form)
        made = self.made.get(form)
        if made is None:
            made = self.write_sum(form) if isinstance(form, Sum) else self.write_product(form)
            self.made[form] = made
        return made

    def term_key(self, term: Term) -> tuple:
        """A term's place in a sum: by its text, with ``keys``' order of its factors."""
        key = self.term_keys.get(term)
        if key is not None:
            return key
        keys = self.keys
        if len(term) == 1:  # the usual term: one base, nothing to sort
            ((base, exponent),) = term
            place = keys[base]
            power = exponent if isinstance(exponent, float) else keys[exponent][1]
            key = (f"{place[1]}**{power}"[:SIGNATURE], place[2])
        else:
            parts = sorted([(keys[base], exponent if isinstance(exponent, float) else
                             keys[exponent][1]) for base, exponent in term])
            text = "*".join([f"{place[1]}**{power}" for place, power in parts])[:SIGNATURE]
            key = (text, min([place[2] for place, _ in parts]))
        self.term_keys[term] = key
        return key

    def write_sum(self, form: Sum, depth: int = 0) -> SymNode:
        node = self._write_sum(form, depth)
        if node.inputs and node not in self.sums:  # the first sum written as this node
            self.sums[node] = form
            if len(form.terms) <= EXPANDED_TERMS:
                self.small.add((node, 1.0))
        return node

    def _write_sum(self, form: Sum, depth: int) -> SymNode:
        terms = form.terms
        if 0.0 in terms.values():
            terms = {t: c for t, c in terms.items() if c != 0.0}
        if len(terms) > 1:
            terms, const = self.expanded(terms, form.const)
            if const != form.const:
                form = Sum(const, terms)
        if not terms:
            return self.node(form.const)
        if form.const == 0.0 and len(terms) == 1:
            ((term, coefficient),) = terms.items()
            return self.write_product(Product(coefficient, dict(term)))
        common, inner = self.common_pulled(terms, form.const)
        if common != 1.0:  # 6*b - 6*t + 36 -> 6*(b - t + 6), -2*a + 2*b -> -2*(a - b)
            return self.write_product(Product(common, {self.write_sum(inner, depth): 1.0}))
        if depth < FACTORING_DEPTH and len(terms) > 1:
            factored = self.factored(form.const, terms, depth)
            if factored is not None:
                return factored
        ordered = sorted(terms, key=self.term_key)
        first = next((t for t in ordered if terms[t] > 0.0), None)
        if first is None and form.const > 0.0:  # 14 - 4*W rather than -4*W + 14
            result, const = self.node(form.const), 0.0
        else:
            first = ordered[0] if first is None else first
            ordered.remove(first)
            result = self.write_product(Product(terms[first], dict(first)))
            const = form.const
        for term in ordered:
            coefficient = terms[term]
            op = ADD if coefficient > 0.0 else SUB
            addend = self.write_product(Product(abs(coefficient), dict(term)))
            result = self.make(op, (result, addend))
        if const != 0.0:
            op = ADD if const > 0.0 else SUB
            result = self.make(op, (result, self.node(abs(const))))
        return result

    def small_sum(self, term: Term) -> Sum | None:
        """The first factor of ``term`` (by ``keys``) that is a small sum to the power 1."""
        found = self.small.intersection(term)
        if not found:
            return None
        if len(found) == 1:
            ((base, _),) = found
        else:
            base = min((base for base, _ in found), key=self.keys.__getitem__)
        return self.sums[base]

    def expanded(self, terms: dict[Term, float], const: float) -> tuple[dict[Term, float], float]:
        """The terms and constant with small sums among their factors multiplied out (up to
        ``EXPANSION_ROUNDS`` rounds) when that costs less (``_cost``): t/y + (x/y - 1/y**2)*t*y
        is t*x, t1*t2*(1/t1 + 1/t2) with t2 = 1 - t1 is 1; else the terms as they are."""
        current, number = terms, const
        cap = EXPANSION_GROWTH * len(terms) + EXPANSION_GROWTH
        for _ in range(EXPANSION_ROUNDS):
            step = self._expanded_once(current, number)
            if step is None or len(step[0]) > cap:
                break
            current, number, cancelled = step
            if not cancelled:  # a round that merged nothing: the next would not pay either
                break
        if current is not terms and _cost(current, number) < _cost(terms, const):
            return current, number
        return terms, const

    def _expanded_once(self, terms: dict[Term, float],
                       const: float) -> tuple[dict[Term, float], float, bool] | None:
        """Each term's first small sum multiplied out (None if none has one), and whether two
        terms or factors met (else nothing cancelled)."""
        small, small_sum = self.small, self.small_sum
        inners = [small_sum(term) if len(term) <= EXPANDED_FACTORS
                  and not small.isdisjoint(term) else None for term in terms]
        if not any(inners):
            return None
        result: dict[Term, float] = {}
        met = False
        for (term, coefficient), inner in zip(terms.items(), inners, strict=True):
            if inner is None:
                met = met or term in result
                result[term] = add_numbers(result.get(term, 0.0), coefficient)
            elif self._multiplied_out(result, term, coefficient, inner):
                met = True
        number = add_numbers(const, result.pop(frozenset(), 0.0))
        met = met or (number != 0.0 and const != 0.0)
        return {t: c for t, c in result.items() if c != 0.0}, number, met

    def _multiplied_out(self, result: dict[Term, float], term: Term, coefficient: float,
                        inner: Sum) -> bool:
        """coefficient * term, its factor ``inner`` multiplied out, added to ``result``; whether
        a piece met a term there or a base cancelled."""
        sums, keys = self.sums, self.keys
        rest = {base: exponent for base, exponent in term if sums.get(base) is not inner}
        met = False
        for piece, c in (*inner.terms.items(), (None, inner.const)):
            if c == 0.0:
                continue
            factors = rest.copy()
            if piece is not None:  # in the order of ``keys`` (a frozenset's follows addresses)
                pairs = piece if len(piece) == 1 else sorted(piece, key=lambda p: keys[p[0]])
                for base, exponent in pairs:
                    self.merge(factors, base, exponent)
                    met = met or base not in factors  # merged to the power 0: cancelled
            key = frozenset(factors.items())
            met = met or key in result
            result[key] = add_numbers(result.get(key, 0.0), multiply_numbers(coefficient, c))
        return met

    def factored(self, const: float, terms: dict[Term, float], depth: int) -> SymNode | None:
        """The sum with a factor all its terms share pulled out (a/x + b/x -> (a + b)/x), or
        None; from some of the terms only, it would rarely pay for its search."""
        if const != 0.0:
            return None
        smallest = min(terms, key=len)
        bases = {base for base, _ in smallest}
        for term in terms:
            if term is smallest:
                continue
            bases.intersection_update([base for base, _ in term])
            if not bases:
                return None
        for base in sorted(bases, key=self.keys.__getitem__):
            exponent = _shared_exponent([e for t in terms for b, e in t if b is base])
            if exponent is not None:
                return self.pulled(terms, base, exponent, depth)
        return None

    def pulled(self, terms: dict[Term, float], base: SymNode, exponent: float | SymNode,
               depth: int) -> SymNode:
        """base**exponent * (the sum of ``terms`` divided by it)."""
        negated = self.negated(exponent)
        inner: dict[Term, float] = {}
        inner_const = 0.0
        for term, coefficient in terms.items():
            factors = dict(term)
            self.merge(factors, base, negated)
            if factors:
                rest = frozenset(factors.items())
                inner[rest] = add_numbers(inner.get(rest, 0.0), coefficient)
            else:
                inner_const = add_numbers(inner_const, coefficient)
        common, inside = self.common_pulled(inner, inner_const)
        written = self.write_sum(inside, depth + 1)
        if written.op is CONST and written.name is None:  # y - (y - 1) multiplied out: 1
            return self.write_product(Product(multiply_numbers(common, written.value),
                                              {base: exponent}))
        factors = {base: exponent}
        # the sum left may be the base itself: t + t*y, t = x*(y + 1), is x*(y + 1)**2
        self.merge(factors, written, 1.0)
        node = self.write_product(Product(common, factors))
        if common == 1.0 and node not in self.products:  # its factors, for ``opened``
            self.products[node] = factors
            self.pulled_products.add(node)
        return node

    def common_pulled(self, terms: dict[Term, float], const: float) -> tuple[float, Sum]:
        """The sum as common * inner: ``_common_coefficient`` signed as the sum's first term,
        else 1 and the sum itself."""
        common = _common_coefficient(terms.values(), const)
        if common is None:
            return 1.0, Sum(const, terms)
        common = math.copysign(common, terms[min(terms, key=self.term_key)])
        return common, Sum(const / common, {t: c / common for t, c in terms.items()})

    def write_product(self, form: Product) -> SymNode:
        if len(form.factors) == 1 and form.coefficient == 1.0:
            ((base, exponent),) = form.factors.items()
            if exponent.__class__ is float and exponent > 0.0 and (  # the usual term: x, x**2
                    base.op is not CONST or base.name is not None):
                return self.raised(base, exponent)
        form = _numbers_folded(form)
        coefficient = form.coefficient
        if coefficient == 0.0:
            return self.node(0.0)
        factors = form.factors
        if 1 < len(factors) <= EXPANDED_FACTORS and not self.small.isdisjoint(factors.items()):
            term = frozenset(factors.items())  # t1*(1/t1 + 1/t2)*t2 with t2 = 1 - t1 is 1
            inner = self.small_sum(term)
            if inner is not None and any(  # a factor that a term of the sum could cancel
                    base in factors for piece in inner.terms for base, _ in piece):
                terms, const = self.expanded({term: coefficient}, 0.0)
                if term not in terms:
                    return self.write_sum(Sum(const, terms), FACTORING_DEPTH)
        return self.quotient(coefficient, factors)

    def quotient(self, coefficient: float, factors: Factors) -> SymNode:
        """coefficient * factors as a node, in the order of ``keys``, negative exponents under
        a division, the sign on the first factor (-x*y/z)."""
        up, down = [], []
        keys = self.keys
        for base in sorted(factors, key=keys.__getitem__) if len(factors) > 1 else factors:
            exponent = factors[base]
            if not isinstance(exponent, float) or exponent > 0.0:
                up.append(self.raised(base, exponent))
            elif exponent < 0.0:
                down.append(self.raised(base, -exponent))
        if up:
            if abs(coefficient) != 1.0:
                numerator, rest = self.node(coefficient), up
            elif coefficient < 0.0:
                numerator, rest = self.make(NEG, (up[0],)), up[1:]
            else:
                numerator, rest = up[0], up[1:]
            for factor in rest:
                numerator = self.make(MUL, (numerator, factor))
        else:
            numerator = self.node(coefficient)
        if not down:
            return numerator
        denominator = down[0]
        for factor in down[1:]:
            denominator = self.make(MUL, (denominator, factor))
        return self.make(DIV, (numerator, denominator))

    def raised(self, base: SymNode, exponent: float | SymNode) -> SymNode:
        if isinstance(exponent, float):
            if exponent == 1.0:
                return base
            return self.make(POW, (base, self.node(exponent)))
        return self.make(POW, (base, exponent))


_UNITS = frozenset((1.0, -1.0))


def _power(base: float, exponent: float) -> float:
    try:
        return base ** exponent if exponent != 1.0 else base
    except OverflowError:
        return math.copysign(math.inf, base)


def _cost(terms: dict[Term, float], const: float) -> tuple[float, int]:
    """What a sum costs to write: its terms (a number half a term), then their factors."""
    return len(terms) + 0.5 * (const != 0.0), sum(len(term) for term in terms)


def _numbers_folded(form: Product) -> Product:
    """The product with number bases to positive powers (a shared sum multiplied out to a
    number) folded into the coefficient."""
    factors = form.factors
    for base in factors:  # (a loop, not all(): this runs for every product written)
        if base.op is CONST and base.name is None:
            break
    else:
        return form
    coefficient = form.coefficient
    kept: Factors = {}
    for base, exponent in factors.items():
        if base.op is CONST and base.name is None and isinstance(exponent, float) and (
                exponent > 0.0) and (base.value >= 0.0 or exponent.is_integer()):
            # not 3**-1 (1/3 is exact as written), nor (-2)**0.5 (no real number: it stays
            # written, and evaluating it is the error it is)
            coefficient = multiply_numbers(coefficient, _power(base.value, exponent))
        else:
            kept[base] = exponent
    return Product(coefficient, kept)


def _common_coefficient(coefficients, const: float) -> float | None:
    """The positive number to pull out of a sum where that saves multiplications (2*a - 2*b,
    not 8*W - 28), else None: the integers' gcd, else the smallest coefficient, if it divides
    every one into an integer."""
    if _UNITS.issuperset(coefficients):
        return None  # no multiplication to save
    numbers = [*coefficients, const] if const else [*coefficients]
    if all(n == math.floor(n) and abs(n) < 2.0**53 for n in numbers):
        common = float(math.gcd(*(int(n) for n in numbers)))
    else:
        common = min(abs(c) for c in coefficients)
    if common == 1.0:
        return None
    for number in numbers:
        quotient = number / common
        if (not math.isfinite(quotient) or quotient != math.floor(quotient)
                or quotient * common != number):  # 1e300/5e-324 overflows: no common factor
            return None
    before = sum(abs(c) != 1.0 for c in coefficients)
    after = 1 + sum(abs(c) != common for c in coefficients)
    return common if after < before else None


def _shared_exponent(exponents: list[float | SymNode]) -> float | SymNode | None:
    """The power of a base that several terms share: the smallest of positive numbers (the
    largest of negative ones), or one symbolic exponent they all have."""
    numbers = [e for e in exponents if isinstance(e, float)]
    if len(numbers) == len(exponents):
        if all(e > 0.0 for e in numbers):
            return min(numbers)
        if all(e < 0.0 for e in numbers):
            return max(numbers)
        return None
    first = exponents[0]
    return first if all(e is first for e in exponents) else None

