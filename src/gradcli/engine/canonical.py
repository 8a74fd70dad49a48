"""The canonical form of a derivative: sums and products flattened, sorted and collected.

The builder (``symbolic``) simplifies locally while a derivative is built, looking a fixed number
of levels down. This pass runs once on the finished graphs, in one topological walk, and gives
every sum and product one written form whatever order the rules produced it in:

- a sum is a number plus terms with numeric coefficients, like terms collected
  (``2*sin(x)*cos(x) - 2*cos(x)*sin(x)`` is 0), nested sums flattened;
- a product is a numeric coefficient times bases raised to exponents, powers of one base merged
  (``x*x**(x - 1)`` is ``x**x``, ``t**2/t**6`` is ``t**-4``), exponents added as sums;
- terms and factors are written in one order (by their text), a positive term first and the
  number last; negative exponents as division (``1/t**4``); the sign goes in front of the
  quotient (``-3*x/(y - 2)**4``); a factor that every term of a sum shares is pulled out
  (``x**x*(log(x) + 1)``), and so is a number when that saves multiplications;
- plain signs are used (relu of a visibly positive sum is the sum, its heaviside 1), and
  ``exp(u)/(exp(u) + 1)`` is ``sigmoid(u)``; a small sum in a product is multiplied out where
  that cancels terms.

Every rewrite is an identity for real numbers where the original is defined; the ones that
extend the domain (``x/x`` -> 1, ``x**a*x**b`` -> ``x**(a + b)``) are those docs/derivatives.md
lists. Never done: ``sqrt(x**2)`` -> x, ``(x*y)**0.5`` -> ``x**0.5*y**0.5``, ``(x**2)**0.5`` ->
x (only integer powers are distributed). Numbers are folded with the op table's float functions
(a sum's terms are reassociated, so values agree with the unsimplified graph up to rounding).

The pass is linear: a sum or product used more than once is merged into its users only while it
is small (else it stays one shared term, printed once as ``t1 = ...``), merges copy at most
``MERGE_LIMIT`` entries, and caps on size and time (``SIZE_FACTOR``, ``SECONDS``, ``GROWTH``)
make it give up and return the graphs it was given (correct, just less simplified).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from gradcli.engine.graph import nodes_and_uses, nodes_of
from gradcli.engine.notation import format_number
from gradcli.engine.ops import CONST, CONSTANTS, OPS, VAR
from gradcli.engine.symbolic import Builder, SymNode, fold_constants, is_short

ADD, SUB, MUL, DIV, NEG, POW = (OPS[n] for n in ("add", "sub", "mul", "div", "neg", "pow"))

MERGE_LIMIT = 48  # a sum or product with more entries is used as one term by its users
# ... and one used more than once in an output, past these (a product merged into a product, or a
# sum into a sum, is written out again; used as a factor or a term it stays one shared node)
SHARED_SUM_LIMIT, SHARED_PRODUCT_LIMIT = 8, 3
DISTRIBUTED_TERMS = 2  # a number multiplies out a sum of at most this many terms
OPENED_LEVELS = 4  # shared products within shared products multiplied out in a term
EXPANDED_TERMS = 3  # sums of at most this many terms are multiplied out when that cancels
FACTORING_DEPTH = 4  # common factors are pulled out of a sum at most this many levels deep
SIZE_FACTOR, SIZE_EXTRA = 4, 2_000  # stop past SIZE_FACTOR * input nodes + SIZE_EXTRA made
SECONDS = 10.0  # ... or past this much CPU time (a safety net: the pass is linear)
GROWTH, GROWTH_EXTRA = 1.25, 8  # a canonical form larger than this keeps the graphs given
SIGNATURE = 60  # characters of a node's text that decide its place in a sum or product


class TooLarge(Exception):  # noqa: N818 (not an error: a reason to stop)
    """The canonical form grew too large, took too long or met a number that does not fold."""


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


def canonical(outputs: Sequence[SymNode], named: bool = False,
              seconds: float = SECONDS) -> list[SymNode]:
    """``outputs`` in canonical form, in a new builder; ``outputs`` themselves if it gives up.
    ``named`` writes the numbers of ``NAMED`` as calls (for formulas, not for points)."""
    nodes, uses = nodes_and_uses(outputs)  # an output listed twice is one node
    limit = SIZE_FACTOR * len(nodes) + SIZE_EXTRA
    builder = Builder(max_nodes=limit + 1, exact_constants=True)
    try:
        work = Canonical(builder, limit, time.process_time() + seconds, named)
        result = work.run(nodes, uses, outputs)
    except TooLarge:
        return list(outputs)
    # The canonical form is written out, never factored in: on graphs it cannot flatten (nested
    # functions' high derivatives) it may be larger. Then the graphs given are the answer.
    larger = GROWTH * len(nodes) + GROWTH_EXTRA
    if len(builder._table) > larger and len(nodes_of(result)) > larger:
        return list(outputs)
    return result


class Canonical:
    """One canonicalization: the forms of the nodes of a graph and the nodes they make."""

    def __init__(self, builder: Builder, limit: int, deadline: float, named: bool) -> None:
        self.builder = builder
        self.limit = limit
        self.deadline = deadline
        self.named = named
        self.sums: dict[SymNode, Sum] = {}  # node written from a sum -> that sum (exponents)
        self.keys = Places()  # node -> its place among factors: (sum?, text, seq)
        self.made: dict[Sum | Product, SymNode] = {}  # form (by identity) -> its node
        self.atoms: dict[SymNode, Term] = {}
        self.term_keys: dict[Term, tuple] = {}
        self.products: dict[SymNode, Factors] = {}  # shared product -> its factors
        self.signs = Signs()  # POSITIVE or NON_NEGATIVE where that is plain

    def run(self, nodes: list, uses: dict[SymNode, int],
            outputs: Sequence[SymNode]) -> list[SymNode]:
        """The canonical forms of ``nodes`` (a topological order), given how often each is an
        operand over all outputs (as the printer counts them for one output, or fewer: a piece
        may be named needlessly), written out for ``outputs``."""
        forms: dict[SymNode, Form] = {}
        shared, form = self.shared, self.form
        for count, node in enumerate(nodes):
            if count % 256 == 255:
                self.check()
            forms[node] = form(node, [shared(forms[s], uses[s]) for s in node.inputs])
        return [self.node(forms[node]) for node in outputs]

    def check(self) -> None:
        if len(self.builder._table) > self.limit or time.process_time() > self.deadline:
            raise TooLarge

    def shared(self, form: Form, uses: int) -> Form:
        """A form merges into its users while it is small (a number times one term, 2*x, when it
        is used more than once in an output: else it is one term, printed as a statement)."""
        if not isinstance(form, (Sum, Product)):
            return form
        shared = SHARED_SUM_LIMIT if isinstance(form, Sum) else SHARED_PRODUCT_LIMIT
        if _entries(form) <= (shared if uses > 1 else MERGE_LIMIT):
            return form
        if isinstance(form, Product):  # 2*t1: the 2 still folds
            piece = self.node(Product(1.0, form.factors))
            self.products[piece] = form.factors  # in a sum, its term is its factors
            return piece if form.coefficient == 1.0 else Product(form.coefficient, {piece: 1.0})
        return self.node(form)

    # --- the forms of a node -------------------------------------------------------------------

    def form(self, node: SymNode, args: list[Form]) -> Form:
        op = node.op
        if op is VAR:
            return self.leaf(self.builder.variable(str(node.name)))
        if op is CONST:
            if node.name in CONSTANTS:
                return self.leaf(self.builder.constant(node.value, str(node.name)))
            if self.named and node.value in NAMED:
                function, argument = NAMED[node.value]
                return self.make(OPS[function], (self.node(argument),))
            return node.value
        name = op.name
        if name == "add":
            return self.add(self.as_sum(args[0]), self.as_sum(args[1]), 1.0)
        if name == "sub":
            return self.add(self.as_sum(args[0]), self.as_sum(args[1]), -1.0)
        if name == "neg":
            return self.scaled(args[0], -1.0)
        if name == "mul":
            return self.multiply(args[0], args[1], 1.0)
        if name == "div":
            return self.multiply(args[0], args[1], -1.0)
        if name == "pow":
            return self.power(args[0], args[1])
        return self.call(op, args)

    def leaf(self, node: SymNode) -> SymNode:
        return node  # its place and sign are worked out when asked for (``Places``, ``Signs``)

    def call(self, op, args: list[Form]) -> Form:
        if all(isinstance(arg, float) for arg in args):
            folded = fold_constants(op, args, self.builder.exact_constants)
            if folded is not None:
                return folded
        if op.name in _ON_SIGNS and self.sign(args[0]) >= NON_NEGATIVE:
            # sign(u) = heaviside(u) = 1 for u > 0; relu(u) = abs(u) = u for u >= 0
            if op.name in ("relu", "abs"):
                return args[0]
            if self.sign(args[0]) == POSITIVE:
                return 1.0
        return self.make(op, tuple(self.node(arg) for arg in args))

    def sign(self, form: Form) -> int:
        """POSITIVE or NON_NEGATIVE where the form's own shape shows it (x**2 + 0.5, exp(x),
        relu(x)), else UNKNOWN: a look at its terms and factors, never deeper."""
        if isinstance(form, float):
            return _number_sign(form)
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
            least = min(least, _power_sign(signs[base], exponent))
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
                    return self.scaled(self.sums[base], form.coefficient)
            return Sum(0.0, {self.term(form.factors): form.coefficient})
        if form in self.products:  # a shared product: the same term as its factors
            return Sum(0.0, {frozenset(self.products[form].items()): 1.0})
        return Sum(0.0, {self.atom(form): 1.0})

    def term(self, factors: Factors) -> Term:
        """The factors as a term of a sum, shared products among them multiplied out: in a sum,
        w*x*y*z and t1*x with t1 = w*y*z are one term (written back, it is the same node)."""
        if not any(base in self.products for base in factors):
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

    def add(self, left: Sum, right: Sum, sign: float) -> Sum:
        const = _plus(left.const, _times(sign, right.const))
        if sign == 1.0 and len(right.terms) > len(left.terms):
            left, right = right, left
        terms = dict(left.terms)
        for term, coefficient in right.terms.items():
            total = _plus(terms.get(term, 0.0), _times(sign, coefficient))
            if total == 0.0:
                terms.pop(term, None)
            else:
                terms[term] = total
        return Sum(const, terms)

    def scaled(self, form: Form, factor: float) -> Form:
        """factor * form: a number times a sum goes into its terms (collected, then pulled out
        again when written, so 2*(a + b) prints as it reads)."""
        if isinstance(form, float):
            return _times(factor, form)
        if isinstance(form, Sum):
            return Sum(_times(factor, form.const),
                       {term: _times(factor, c) for term, c in form.terms.items()})
        product = self.as_product(form)
        return Product(_times(factor, product.coefficient), product.factors)

    def times(self, form: Form, factor: float) -> Form:
        """factor * form as a product: a number goes into a sum's terms when they are few
        (-(a - b) is b - a), else it multiplies the sum (2*(x + y - z**2) stays as written)."""
        if isinstance(form, Sum) and len(form.terms) > DISTRIBUTED_TERMS and factor != -1.0:
            return Product(factor, {self.node(form): 1.0})
        return self.scaled(form, factor)

    def multiply(self, left: Form, right: Form, sign: float) -> Form:
        """left * right (sign 1) or left / right (sign -1)."""
        if isinstance(right, float):
            if sign == 1.0:
                return self.times(left, right)
            quotient = _short_quotient(1.0, right)
            if quotient is not None:
                return self.times(left, quotient)
        if isinstance(left, float) and sign == 1.0:
            return self.times(right, left)
        a, b = self.as_product(left), self.as_product(right)
        if sign == 1.0 and len(b.factors) > len(a.factors):
            a, b = b, a
        factors = dict(a.factors)
        if sign == 1.0:
            coefficient = _times(a.coefficient, b.coefficient)
        else:
            coefficient = _short_quotient(a.coefficient, b.coefficient)
            if coefficient is None:  # x/3 stays a division by 3
                self.merge(factors, self.node(abs(b.coefficient)), -1.0)
                coefficient = math.copysign(a.coefficient, a.coefficient * b.coefficient)
        for base, exponent in b.factors.items():
            self.merge(factors, base, exponent if sign == 1.0 else self.negated(exponent))
            if sign == -1.0 and exponent == 1.0:
                self.logistic(factors, base)
        for piece in [b for b in factors if b in self.products]:
            self.opened(factors, piece)
        return Product(coefficient, factors)

    def opened(self, factors: Factors, piece: SymNode) -> None:
        """A shared product among factors is multiplied out, in place, where it shares a base
        with them (t1*z with t1 = x*z is x*z**2): else it stays one factor."""
        inner = self.products[piece]
        exponent = factors.get(piece)
        if not isinstance(exponent, float) or not any(b in factors for b in inner):
            return
        if not all(isinstance(power, float) for power in inner.values()):
            return  # a symbolic power inside: the piece stays one factor (never half-opened)
        del factors[piece]
        for base, power in inner.items():
            self.merge(factors, base, power * exponent)

    def logistic(self, factors: Factors, divisor: SymNode) -> None:
        """exp(u)/(exp(u) + 1) -> sigmoid(u), in place: the identity that makes the derivative
        of log(1 + exp(x)) the derivative of softplus(x)."""
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

    def merge(self, factors: Factors, base: SymNode, exponent: float | SymNode) -> None:
        """factors * base**exponent: x**a * x**b -> x**(a + b)."""
        before = factors.get(base)
        if before is None:
            factors[base] = exponent
            return
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

    def power(self, base: Form, exponent: Form) -> Form:
        if isinstance(exponent, float):
            if isinstance(base, float):
                folded = fold_constants(POW, [base, exponent], self.builder.exact_constants)
                if folded is not None:
                    return folded
                return self.make(POW, (self.node(base), self.node(exponent)))
            if exponent == 0.0:
                return 1.0
            if exponent == 1.0:
                return base
            if exponent == math.floor(exponent):  # (a*b)**n = a**n * b**n for integers n
                product = self.as_product(base)
                coefficient = fold_constants(POW, [product.coefficient, exponent], False)
                if coefficient is not None and all(isinstance(e, float)
                                                   for e in product.factors.values()):
                    return Product(coefficient, {b: e * exponent
                                                 for b, e in product.factors.items()})
        exponent = self.exponent(exponent)
        if exponent == 0.0:
            return 1.0
        return Product(1.0, {self.node(base): exponent})

    # --- writing forms as nodes ---------------------------------------------------------------

    def node(self, form: Form) -> SymNode:
        if isinstance(form, SymNode):
            return form
        if isinstance(form, float):
            return self.leaf(self.builder.constant(form))
        made = self.made.get(form)
        if made is None:
            made = self.write_sum(form) if isinstance(form, Sum) else self.write_product(form)
            self.made[form] = made
        return made

    def make(self, op, inputs: tuple[SymNode, ...]) -> SymNode:
        """The node op(inputs), as it is (the canonical forms are already simplified)."""
        return self.builder.raw(op, inputs)

    def term_key(self, term: Term) -> tuple:
        """A term's place in a sum: by its text, with ``keys``' order of its factors."""
        key = self.term_keys.get(term)
        if key is None:
            keys = self.keys
            parts = sorted((keys[base], exponent if isinstance(exponent, float) else
                            keys[exponent][1]) for base, exponent in term)
            text = "*".join(f"{k[1]}**{e}" for k, e in parts)[:SIGNATURE]
            key = self.term_keys[term] = (text, min(k[2] for k, _ in parts))
        return key

    def write_sum(self, form: Sum, depth: int = 0) -> SymNode:
        node = self._write_sum(form, depth)
        if node.inputs:
            self.sums.setdefault(node, form)
        return node

    def _write_sum(self, form: Sum, depth: int) -> SymNode:
        terms = {t: c for t, c in form.terms.items() if c != 0.0}
        if depth == 0 and len(terms) > 1:
            terms = self.expanded(terms)
        if not terms:
            return self.node(form.const)
        if form.const == 0.0 and len(terms) == 1:
            ((term, coefficient),) = terms.items()
            return self.write_product(Product(coefficient, dict(term)))
        ordered = sorted(terms, key=self.term_key)
        common = _common_coefficient(terms[ordered[0]], terms.values(), form.const)
        if common is not None:  # 6*b - 6*t + 36 -> 6*(b - t + 6), -2*a + 2*b -> -2*(a - b)
            inner = Sum(form.const / common, {t: c / common for t, c in terms.items()})
            return self.write_product(Product(common, {self.write_sum(inner, depth): 1.0}))
        if depth < FACTORING_DEPTH and len(terms) > 1:
            factored = self.factored(form.const, terms, depth)
            if factored is not None:
                return factored
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

    def in_order(self, term: Term) -> list:
        """A term's (base, exponent) pairs in the order of ``keys``: a frozenset's own order
        follows the nodes' hashes (their addresses), which differ from run to run."""
        keys = self.keys
        return sorted(term, key=lambda pair: keys[pair[0]])

    def small_sum(self, term: Term) -> Sum | None:
        """The first factor of ``term`` (in the order of ``keys``) that is a sum of at most
        ``EXPANDED_TERMS`` terms to the power 1, or None."""
        sums = self.sums
        found = [b for b, e in term if e == 1.0 and b in sums
                 and len(sums[b].terms) <= EXPANDED_TERMS]
        if not found:
            return None
        return sums[found[0] if len(found) == 1 else min(found, key=self.keys.__getitem__)]

    def expanded(self, terms: dict[Term, float]) -> dict[Term, float]:
        """The terms with small sums among their factors multiplied out, when that cancels
        terms: t/y + (x/y - 1/y**2)*t*y -> t*x. Else the terms as they are (multiplying out
        lengthens what does not cancel)."""
        result: dict[Term, float] = {}
        changed = False
        for term, coefficient in terms.items():
            inner = self.small_sum(term) if len(term) <= EXPANDED_TERMS else None
            if inner is None:
                result[term] = _plus(result.get(term, 0.0), coefficient)
                continue
            changed = True
            rest = Product(coefficient, {b: e for b, e in term if b not in self.sums
                                         or self.sums[b] is not inner})
            for part in (*inner.terms.items(), (None, inner.const)):
                piece, c = part
                if c == 0.0:
                    continue
                factors = dict(rest.factors)
                for base, exponent in self.in_order(piece or ()):
                    self.merge(factors, base, exponent)
                key = frozenset(factors.items())
                result[key] = _plus(result.get(key, 0.0), _times(rest.coefficient, c))
        if not changed:
            return terms
        result = {t: c for t, c in result.items() if c != 0.0}
        return result if len(result) < len(terms) and frozenset() not in result else terms

    def factored(self, const: float, terms: dict[Term, float], depth: int) -> SymNode | None:
        """The sum with a factor that all its terms share pulled out, or None when they share
        none: x**x*log(x) + x**x -> x**x*(log(x) + 1), a/x + b/x -> (a + b)/x. (Pulling a
        factor out of some of the terms is not done: it rarely pays for its search.)"""
        if const != 0.0:
            return None
        smallest = min(terms, key=len)
        bases = {base for base, _ in smallest}
        for term in terms:
            bases.intersection_update(base for base, _ in term)
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
                inner[rest] = _plus(inner.get(rest, 0.0), coefficient)
            else:
                inner_const = _plus(inner_const, coefficient)
        inside = Sum(inner_const, inner)
        ordered = sorted(inner, key=self.term_key)
        common = _common_coefficient(inner[ordered[0]], inner.values(), inner_const) or 1.0
        if common != 1.0:
            inside = Sum(inner_const / common, {t: c / common for t, c in inner.items()})
        return self.write_product(Product(common, {base: exponent,
                                                    self.write_sum(inside, depth + 1): 1.0}))

    def write_product(self, form: Product) -> SymNode:
        coefficient = form.coefficient
        if coefficient == 0.0:
            return self.node(0.0)
        up, down = [], []
        keys = self.keys
        for base in sorted(form.factors, key=keys.__getitem__):
            exponent = form.factors[base]
            if isinstance(exponent, float):
                if exponent > 0.0:
                    up.append(self.raised(base, exponent))
                elif exponent < 0.0:
                    down.append(self.raised(base, -exponent))
            else:
                up.append(self.raised(base, exponent))
        if up:
            if abs(coefficient) != 1.0:  # the sign goes on the first factor: -3*x*y, -x*y
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


class _ByInputs(dict):
    """A property of nodes computed from their inputs' (``of``), the first time it is asked for:
    most nodes a canonical form writes are never sorted nor asked their sign. An explicit
    stack, so any depth is safe."""

    __slots__ = ()

    def __missing__(self, node: SymNode):
        stack = [node]
        while stack:
            top = stack[-1]
            missing = [source for source in top.inputs if source not in self]
            if missing:
                stack += missing
                continue
            stack.pop()
            if top not in self:
                self[top] = self.of(top)
        return self[node]

    def of(self, node: SymNode):
        raise NotImplementedError


class Places(_ByInputs):
    """node -> (is a sum, its text cut to ``SIGNATURE``, seq): its place among terms and
    factors (by text, then by creation: deterministic)."""

    __slots__ = ()

    def of(self, node: SymNode) -> tuple:
        op = node.op
        if not node.inputs:
            text = str(node.name) if node.name is not None else "~" + format_number(node.value)
            return (False, text, node.seq)
        text = _signature(op, [self[s][1] for s in node.inputs], node.needs_grad)
        return (op is ADD or op is SUB, text, node.seq)


class Signs(_ByInputs):
    """node -> POSITIVE, NON_NEGATIVE or UNKNOWN, where its shape shows it (``_node_sign``)."""

    __slots__ = ()

    def of(self, node: SymNode) -> int:
        if node.op is CONST:
            return _number_sign(node.value)
        if not node.inputs:
            return UNKNOWN
        return _node_sign(node.op, [self[s] for s in node.inputs], node.inputs)


UNKNOWN, NON_NEGATIVE, POSITIVE = 0, 1, 2
_ON_SIGNS = {"sign", "heaviside", "relu", "abs"}
_POSITIVE_CALLS = {"exp", "cosh", "sigmoid", "softplus"}
_NON_NEGATIVE_CALLS = {"relu", "abs", "sqrt", "hypot", "heaviside"}


def _number_sign(value: float) -> int:
    return POSITIVE if value > 0.0 else NON_NEGATIVE if value == 0.0 else UNKNOWN


def _power_sign(base: int, exponent: float | SymNode) -> int:
    """The sign of base**exponent from the base's: an even power is at least non-negative."""
    if base == POSITIVE:
        return POSITIVE
    if isinstance(exponent, float):
        if base == NON_NEGATIVE and exponent > 0.0:
            return NON_NEGATIVE
        if exponent % 2.0 == 0.0:
            return NON_NEGATIVE
    return UNKNOWN


def _node_sign(op, signs: list[int], inputs: tuple[SymNode, ...]) -> int:
    """The sign of a node made of inputs of these signs, where it is plain."""
    name = op.name
    if name in _POSITIVE_CALLS:
        return POSITIVE
    if name in _NON_NEGATIVE_CALLS:
        return NON_NEGATIVE
    if name in ("add", "mul", "div") and min(signs) >= NON_NEGATIVE:
        return max(signs) if name == "add" else min(signs)
    if name == "pow":
        exponent = inputs[1]
        return _power_sign(signs[0], exponent.value if exponent.op is CONST else exponent)
    return UNKNOWN


def _entries(form: Form) -> int:
    if isinstance(form, Sum):
        return len(form.terms) + 1
    if isinstance(form, Product):
        return len(form.factors) + 1
    return 0


def _plus(a: float, b: float) -> float:
    result = a + b
    if not math.isfinite(result):
        raise TooLarge
    return result


def _times(a: float, b: float) -> float:
    result = a * b
    if not math.isfinite(result) or (result == 0.0 and a != 0.0 and b != 0.0):
        raise TooLarge
    return result


def _short_quotient(a: float, b: float) -> float | None:
    """a / b when it is a short number (x/4 -> 0.25*x), None to keep the division (x/3)."""
    if b == 0.0:
        raise TooLarge  # x/0 stays as written: the unsimplified graph reports it when evaluated
    quotient = a / b
    if not math.isfinite(quotient) or (quotient == 0.0 and a != 0.0):
        raise TooLarge
    return quotient if is_short(quotient, a, b) else None


def _common_coefficient(first: float, coefficients, const: float) -> float | None:
    """The number to pull out of a sum, signed as its first term, when that writes fewer
    multiplications (2*a - 2*b -> 2*(a - b), but not 8*W - 28 -> 4*(2*W - 7)); or None.
    It divides every coefficient and the constant into integers: their greatest common
    divisor if they are integers, else the smallest coefficient."""
    if all(abs(c) == 1.0 for c in coefficients):
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
        if quotient != math.floor(quotient) or quotient * common != number:
            return None
    before = sum(abs(c) != 1.0 for c in coefficients)
    after = 1 + sum(abs(c) != common for c in coefficients)
    return math.copysign(common, first) if after < before else None


def _shared_exponent(exponents: list[float | SymNode]) -> float | SymNode | None:
    """The power of a base that several terms share: the smallest of positive numbers (the
    largest of negative ones), or one symbolic exponent they all have."""
    if all(isinstance(e, float) for e in exponents):
        if all(e > 0.0 for e in exponents):
            return min(exponents)
        if all(e < 0.0 for e in exponents):
            return max(exponents)
        return None
    first = exponents[0]
    return first if all(e is first for e in exponents) else None


def _signature(op, inputs: list[str], needs_grad: bool) -> str:
    """The text that orders a node among terms and factors, cut to ``SIGNATURE`` characters;
    numbers and functions of numbers (log(2)) come after what depends on a variable."""
    if op.symbol is None:
        text = f"{op.name}({','.join(inputs)})"
    elif op.arity == 1:
        text = f"{op.symbol}{inputs[0]}"
    else:
        text = f"{inputs[0]}{op.symbol}{inputs[1]}"
    if not needs_grad and not text.startswith("~"):
        text = "~" + text
    return text[:SIGNATURE]
