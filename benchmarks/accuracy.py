"""How accurate every function of the op table is: value, first and second derivatives against
mpmath, in ulps, on a fixed grid and seeded random points over each function's domain.

What is measured is what users get: the value and gradient from gradcli's own forward and
backward passes on the parsed program (``values_and_gradients``), the second derivatives from
``hessian_at`` (the reverse-mode gradient of the symbolic first derivative, as ``eval --hessian``
computes it). The reference is mpmath: values by its functions, derivatives by ``mpmath.diff``
of the same function (or of the smooth branch a piecewise function is on at that point), at 50
digits and more: a result is accepted only when it agrees with the one at twice the precision,
so cancellation in a finite difference (cos' at 1e-300) is caught and the precision raised.

The bound a point must meet is the issue's (#28): with ``c`` the condition number of the
quantity at the point (``sum |x_i d_i g| / |g|``, g the value or the derivative), value and first
derivatives within ``4 max(1, c)`` ulps, second derivatives within ``1e-13 max(1, c)``
relatively. A point where gradcli raises its numeric error is *refused*: right where the true
value is not a finite float, a missed answer where it is (counted apart, never a wrong number).

    python benchmarks/accuracy.py                 # every row, the full grid: a few minutes
    python benchmarks/accuracy.py --only beta,asin --points 50
    python benchmarks/accuracy.py --markdown      # the table of docs/accuracy.md

Every element-wise row of ``gradcli.engine.ops.ROWS`` must have an entry in ``REFERENCES`` (tests:
tests/test_accuracy.py), so a new function is measured the day it is added.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import mpmath
from mpmath import mp, mpf

from gradcli.engine.graph import forward, values_and_gradients
from gradcli.engine.ops import ROWS, spellings
from gradcli.errors import GradcliError
from gradcli.gradcheck.hessian import hessian_at
from gradcli.language.parser import parse

DPS = 50  # the first precision tried; doubled until two agree (``settled``)
MAX_DPS = 400
STEP_BITS = 180  # mpmath.diff's step: 2**-180, relative to the operand below 1
BIG = mpf(2) ** 1024 * (1 - mpf(2) ** -54)  # the first value that rounds to infinity
TINY = mpf(2) ** -1022  # smallest normal: below it, errors are absolute
VALUE_ULPS = 4.0  # value and first derivatives: ulps times max(1, condition number)
SECOND_RELATIVE = 1e-13  # second derivatives: relative error times max(1, condition number)
SMALL = 5e-324


# --- domains: where each operand's points come from ------------------------------------------

@dataclass(frozen=True)
class Domain:
    """An interval of one operand, its ends open or closed, with points worth a look."""

    lo: float = -math.inf
    hi: float = math.inf
    open_ends: bool = True
    special: tuple[float, ...] = ()  # zeros, poles, branch points: and points right next to them
    integer: bool = False  # whole numbers only (the order of polygamma)
    cap: float = 1.7e308  # the largest magnitude worth trying (exp overflows past 710)

    def contains(self, x: float) -> bool:
        if self.integer and x != math.floor(x):
            return False
        if self.open_ends:
            return self.lo < x < self.hi
        return self.lo <= x <= self.hi

    def grid(self) -> list[float]:
        """The fixed points: magnitudes from subnormal to huge, both signs, the ends and the
        special points with their neighbours at 1e-1 ... 1e-15 relative distance."""
        magnitudes = [0.0, SMALL, 1e-320, 1e-300, 1e-150, 1e-20, 1e-8, 1e-3, 0.1, 0.5, 1.0, 2.0,
                      3.5, 10.0, 100.0, 1e4, 1e8, 1e20, 1e100, 1e200, 1e300, 1.7e308]
        points = [s * m for m in magnitudes for s in (1.0, -1.0) if m <= self.cap]
        anchors = [*self.special, *(end for end in (self.lo, self.hi) if math.isfinite(end))]
        for anchor in anchors:
            scale = max(1.0, abs(anchor))
            points.append(anchor)
            points += [anchor + s * 10.0 ** -k * scale for k in (1, 2, 4, 8, 12, 15)
                       for s in (1.0, -1.0)]
            points += [math.nextafter(anchor, math.inf), math.nextafter(anchor, -math.inf)]
        return _unique(p for p in points if self.contains(p))

    def random(self, rng: random.Random, count: int) -> list[float]:
        """Half log-uniform in magnitude (any scale the domain allows), half uniform near 0."""
        lo, hi = max(self.lo, -self.cap), min(self.hi, self.cap)
        points = []
        while len(points) < count:
            if rng.random() < 0.5:
                x = rng.uniform(max(lo, -20.0), min(hi, 20.0)) if lo < 20 and hi > -20 else \
                    rng.uniform(lo, hi)
            else:
                x = math.copysign(10.0 ** rng.uniform(-300.0, math.log10(self.cap)),
                                  rng.choice((-1.0, 1.0)))
            if self.integer:
                x = float(round(x))
            if self.contains(x):
                points.append(x)
        return points


def _unique(points: Iterator[float]) -> list[float]:
    return sorted(set(points))


REAL = Domain()
POSITIVE = Domain(0.0)
UNIT = Domain(-1.0, 1.0, open_ends=False, special=(0.0,))
OPEN_UNIT = Domain(-1.0, 1.0, special=(0.0,))
GAMMA_X = Domain(cap=1e300, special=(-100.5, -20.5, -2.5, -2.0, -1.0, -0.5, 0.0, 1.0,
                                     1.4616321449683622, 2.0, 171.0))


# --- the reference of each row ---------------------------------------------------------------

Branch = Callable[..., Callable[..., Any] | None]


@dataclass(frozen=True)
class Reference:
    """mpmath's version of one row: ``function`` on mpf operands, the domains to sample, and for
    a piecewise row ``branch(*floats)``: the smooth piece that holds around that point (None at a
    kink or jump: the point is left out; the conventions there are tests/test_ops.py's)."""

    function: Callable[..., Any]
    domains: tuple[Domain, ...]
    branch: Branch | None = None
    fixed: tuple[tuple[float | None, ...], ...] = ()  # operands held at these constants
    pairs: tuple[tuple[float, ...], ...] = ()  # points of several operands worth a look
    closed: Callable[..., Any] | None = None  # closed(*args, orders): a partial derivative

    def piece(self, point: Sequence[float]) -> Callable[..., Any] | None:
        return self.function if self.branch is None else self.branch(*point)


def _flat(value: Callable[..., Any]) -> Branch:
    """A step: constant around each point that is not a jump."""
    def branch(*point: float) -> Callable[..., Any]:
        constant = mpf(value(*point))
        return lambda *args: constant

    return branch


def _sincpi(x: Any) -> Any:
    return mpmath.sincpi(x)


def _dsinc(x: Any) -> Any:
    # (cos(pi x) - sinc(x)) / x, by its series near 0 where the difference cancels
    if abs(x) < mpf("0.5"):
        total, term, k = mpf(0), -mp.pi ** 2 * x / 3, 1
        while abs(term) > abs(total) * mpf(2) ** (-mp.prec - 8) or k < 3:
            total += term
            term *= -(mp.pi * x) ** 2 / (2 * k * (2 * k + 3))
            k += 1
        return total
    return (mpmath.cospi(x) - mpmath.sincpi(x)) / x


def _ive(n: Any, x: Any) -> Any:
    return mpmath.besseli(n, x) * mpmath.exp(-abs(x))


def _ive_branch(n: float, x: float) -> Callable[..., Any] | None:
    if x == 0.0:  # exp(-|x|) has a kink there
        return None
    return (lambda m, t: mpmath.besseli(m, t) * mpmath.exp(-t)) if x > 0 else \
        (lambda m, t: mpmath.besseli(m, t) * mpmath.exp(t))


def _dive_branch(n: float, x: float) -> Callable[..., Any] | None:
    """ive's slope on the side of 0 that x is on: exp(-|t|) (I_n'(t) - sign(t) I_n(t))."""
    if x == 0.0:
        return None
    side = 1 if x > 0 else -1
    return lambda m, t: mpmath.exp(-side * t) * (
        (mpmath.besseli(m - 1, t) + mpmath.besseli(m + 1, t)) / 2 - side * mpmath.besseli(m, t))


def _sign(x: float) -> float:
    return 0.0 if x == 0 else math.copysign(1.0, x)


GELU_C = mpf("0.044715")
SELU_SCALE, SELU_ALPHA = mpf(1.0507009873554805), mpf(1.6732632423543772)
GELU_SCALE = mpf(1.5957691216057308)


def _lbeta(a: Any, b: Any) -> Any:
    # loggamma differences, with the digits that a + b's size takes from them: mpmath.beta(3,
    # 1e300) at 50 digits rounds a + b to b, and says log B = log 2 at every precision below 300
    extra = 2 * int(max(mpmath.mag(a), mpmath.mag(b), 0)) + 64
    with mp.extraprec(extra):
        return +(mpmath.loggamma(a) + mpmath.loggamma(b) - mpmath.loggamma(a + b))


def _lgamma(x: Any) -> Any:
    return mpmath.log(abs(mpmath.gamma(x)))


def _dgamma(x: Any) -> Any:
    return mpmath.gamma(x) * mpmath.digamma(x)


def _psi(order: int, x: Any) -> Any:
    """polygamma(order, x); order -1 is log |gamma(x)|."""
    return _lgamma(x) if order < 0 else mpmath.polygamma(order, x)


def _off_poles(x: float, function: Callable[..., Any]) -> Callable[..., Any] | None:
    return None if x <= 0 and x == math.floor(x) else function


def _lbeta_partial(a: Any, b: Any, i: int, j: int) -> Any:
    """d^i/da^i d^j/db^j lbeta: polygamma differences, with the digits a + b's size takes,
    and those of the tiny operand in a + b (psi(b) - psi(a + b) at a = 1e-150, b = 0.5 is 0
    where a + b rounds to b, at every precision below 150 digits: two agree on it)."""
    if i == j == 0:
        return _lbeta(a, b)
    extra = min(2 * (abs(int(mpmath.mag(a))) + abs(int(mpmath.mag(b)))), 1200) + 64
    with mp.extraprec(extra):
        s = a + b
        if i and j:
            return -mpmath.polygamma(i + j - 1, s)
        x, k = (a, i) if i else (b, j)
        return +(mpmath.polygamma(k - 1, x) - mpmath.polygamma(k - 1, s))


def _beta_partial(a: Any, b: Any, i: int, j: int) -> Any:
    """d^i/da^i d^j/db^j of exp(lbeta) (Faa di Bruno): beta times, over the set partitions of
    the i + j derivatives, the products of lbeta's partials of each block."""
    which = [0] * i + [1] * j
    total = mpf(0)
    for blocks in _partitions(list(range(len(which)))):
        term = mpf(1)
        for block in blocks:
            term *= _lbeta_partial(a, b, sum(1 for k in block if which[k] == 0),
                                   sum(1 for k in block if which[k] == 1))
        total += term
    return mpmath.exp(_lbeta(a, b)) * total


def _partitions(items: list[int]) -> list[list[list[int]]]:
    if not items:
        return [[]]
    first, rest = items[0], items[1:]
    found = []
    for partition in _partitions(rest):
        found.append([[first], *partition])
        for k in range(len(partition)):
            found.append([*partition[:k], [first, *partition[k]], *partition[k + 1:]])
    return found


def _pow(x: Any, y: Any) -> Any:
    return mpmath.power(x, y) if x != 0 else (mpf(1) if y == 0 else mpf(0))


def _of_order(n: float, x: float) -> Callable[..., Any] | None:
    """i0e and i1e: ive's branch with its order fixed."""
    piece = _ive_branch(n, x)
    return None if piece is None else (lambda t: piece(n, t))


def _hardtanh_branch(x: float) -> Callable[..., Any] | None:
    piece = _clip_branch(x, -1.0, 1.0)
    return None if piece is None else (lambda t: piece(t, mpf(-1), mpf(1)))


def _mod_branch(x: float, y: float) -> Callable[..., Any] | None:
    q = mpmath.floor(mpf(x) / mpf(y))
    return None if mpf(x) == q * mpf(y) else (lambda a, b: a - q * b)


def _clip_branch(x: float, lo: float, hi: float) -> Callable[..., Any] | None:
    if x in (lo, hi) or lo >= hi:  # lo > hi is clip's domain error
        return None
    if x < lo:
        return lambda a, b, c: b
    return (lambda a, b, c: c) if x > hi else (lambda a, b, c: a)


def _side(x: float, below: Callable[..., Any], above: Callable[..., Any]) -> Callable | None:
    return None if x == 0.0 else (above if x > 0.0 else below)


def _truth(test: Callable[..., bool]) -> Branch:
    return _flat(lambda *p: 1.0 if test(*p) else 0.0)


PAIR = (REAL, REAL)
R = Reference
REFERENCES: dict[str, Reference] = {
    "add": R(lambda x, y: x + y, PAIR),
    "sub": R(lambda x, y: x - y, PAIR),
    "mul": R(lambda x, y: x * y, PAIR),
    "div": R(lambda x, y: x / y, PAIR),
    "neg": R(lambda x: -x, (REAL,)),
    "pow": R(_pow, (Domain(0.0, special=(1.0,)), Domain(-60.0, 60.0, special=(0.0, 0.5, 2.0))),
             pairs=((0.5, 2.0), (2.0, 0.5), (1e-300, 0.5), (1e300, 0.5), (0.9, 300.0))),
    "exp": R(mpmath.exp, (Domain(cap=800.0),)),
    "log": R(mpmath.log, (Domain(0.0, special=(1.0,)),)),
    "log2": R(lambda x: mpmath.log(x, 2), (Domain(0.0, special=(1.0,)),)),
    "log10": R(mpmath.log10, (Domain(0.0, special=(1.0,)),)),
    "log1p": R(mpmath.log1p, (Domain(-1.0, special=(0.0,)),)),
    "expm1": R(mpmath.expm1, (Domain(cap=800.0, special=(0.0,)),)),
    "exp2": R(lambda x: mpmath.power(2, x), (Domain(cap=1100.0),)),
    "logaddexp": R(lambda x, y: mpmath.log(mpmath.exp(x) + mpmath.exp(y)), PAIR,
                   pairs=((1e300, 1e300), (-1e300, -1e300), (0.0, 0.0), (1000.0, -1000.0))),
    "logaddexp2": R(lambda x, y: mpmath.log(mpmath.power(2, x) + mpmath.power(2, y), 2), PAIR,
                    pairs=((1e300, 1e300), (0.0, 0.0), (1000.0, -1000.0))),
    "xlogy": R(lambda x, y: x * mpmath.log(y), (REAL, Domain(0.0, special=(1.0,)))),
    "sqrt": R(mpmath.sqrt, (POSITIVE,)),
    "cbrt": R(mpmath.cbrt, (REAL,), branch=lambda x: None if x == 0 else (
        (lambda t: mpmath.cbrt(t)) if x > 0 else (lambda t: -mpmath.cbrt(-t)))),
    "rsqrt": R(lambda x: 1 / mpmath.sqrt(x), (POSITIVE,)),
    "square": R(lambda x: x * x, (REAL,)),
    "reciprocal": R(lambda x: 1 / x, (REAL,)),
    "sin": R(mpmath.sin, (Domain(special=(math.pi, 1e22)),)),
    "cos": R(mpmath.cos, (Domain(special=(math.pi / 2, 1e22)),)),
    "tan": R(mpmath.tan, (Domain(special=(math.pi / 2, math.pi)),)),
    "asin": R(mpmath.asin, (OPEN_UNIT,)),
    "acos": R(mpmath.acos, (OPEN_UNIT,)),
    "atan": R(mpmath.atan, (REAL,)),
    "atan2": R(mpmath.atan2, PAIR, branch=lambda y, x: None if y == 0 and x <= 0 else (
        lambda a, b: mpmath.atan2(a, b)), pairs=(
            (1.0, 1e200), (1e-300, 1e-300), (1e300, 1e300), (5e-324, 5e-324), (1.0, -1e200))),
    "hypot": R(mpmath.hypot, PAIR, branch=lambda x, y: None if x == 0 and y == 0 else mpmath.hypot,
               pairs=((5e-324, 5e-324), (1e300, 1e300), (1e-300, 3e-300), (3.0, 4.0))),
    "deg2rad": R(lambda x: x * mp.pi / 180, (REAL,)),
    "rad2deg": R(lambda x: x * 180 / mp.pi, (REAL,)),
    "sinh": R(mpmath.sinh, (Domain(cap=800.0),)),
    "cosh": R(mpmath.cosh, (Domain(cap=800.0),)),
    "tanh": R(mpmath.tanh, (Domain(special=(20.0, -20.0, 300.0)),)),
    "sech": R(mpmath.sech, (Domain(special=(20.0, -300.0, 720.0)),)),
    "asinh": R(mpmath.asinh, (REAL,)),
    "acosh": R(mpmath.acosh, (Domain(1.0, special=(1.0,)),)),
    "atanh": R(mpmath.atanh, (OPEN_UNIT,)),
    "erf": R(mpmath.erf, (REAL,)),
    "sinc": R(_sincpi, (Domain(cap=1e15, special=(0.0, 1.0, 250.5)),)),
    "dsinc": R(_dsinc, (Domain(cap=1e15, special=(0.0, 1.0, 250.5)),)),
    "erfc": R(mpmath.erfc, (REAL,)),
    "erfinv": R(mpmath.erfinv, (OPEN_UNIT,)),
    "gamma": R(mpmath.gamma, (Domain(-180.0, 180.0, special=GAMMA_X.special[:-1]),),
               branch=lambda x: None if x <= 0 and x == math.floor(x) else mpmath.gamma),
    "dgamma": R(_dgamma, (Domain(-180.0, 180.0, special=GAMMA_X.special[:-1]),),
                branch=lambda x: None if x <= 0 and x == math.floor(x) else _dgamma),
    "lgamma": R(_lgamma, (GAMMA_X,), branch=lambda x: _off_poles(x, _lgamma),
                closed=lambda x, orders: _psi(orders[0] - 1, x)),
    "digamma": R(mpmath.digamma, (GAMMA_X,), branch=lambda x: _off_poles(x, mpmath.digamma),
                 closed=lambda x, orders: _psi(orders[0], x)),
    "polygamma": R(mpmath.polygamma, (Domain(0.0, 100.0, False, integer=True), GAMMA_X),
                   fixed=tuple((float(n), None) for n in (1, 2, 4, 10, 20, 50, 98)),
                   branch=lambda n, x: _off_poles(x, mpmath.polygamma),
                   closed=lambda n, x, orders: _psi(int(n) + orders[1], x),
                   pairs=((4.0, -100.5), (10.0, -100.5), (20.0, -2.5), (3.0, -2.5))),
    "i0e": R(lambda x: _ive(0, x), (REAL,), branch=lambda x: _of_order(0.0, x)),
    "i1e": R(lambda x: _ive(1, x), (REAL,), branch=lambda x: _of_order(1.0, x)),
    "ive": R(_ive, (Domain(0.0, 30.0, False, integer=True), REAL),
             fixed=tuple((float(n), None) for n in (2, 5, 12, 28)), branch=_ive_branch),
    "dive": R(lambda n, x: _dive_branch(n, x)(n, x), (Domain(0.0, 30.0, False, integer=True), REAL),
              fixed=tuple((float(n), None) for n in (1, 5, 28)), branch=_dive_branch),
    "beta": R(lambda a, b: mpmath.exp(_lbeta(a, b)), (POSITIVE, POSITIVE),
              closed=lambda a, b, orders: _beta_partial(a, b, *orders), pairs=(
        (1.0, 1e10), (1e-10, 1.0), (1e-5, 1e-5), (0.5, 1e12), (1e3, 1e3), (1e-300, 1e-300),
        (1e5, 3e5), (2.5, 1e15), (30.0, 200.0))),
    "lbeta": R(_lbeta, (POSITIVE, POSITIVE), closed=lambda a, b, orders: _lbeta_partial(
        a, b, *orders), pairs=(
        (0.5, 1e12), (1.0, 1e10), (1e-10, 1.0), (1e-5, 1e-5), (1e3, 1e3), (1e200, 1e200),
        (1e5, 3e5), (2.5, 1e15), (30.0, 200.0))),
    "dbeta": R(lambda a, b: _beta_partial(a, b, 0, 1), (POSITIVE, POSITIVE),
               closed=lambda a, b, orders: _beta_partial(a, b, orders[0], orders[1] + 1),
               pairs=((1e-5, 1e-5), (1e-10, 1.0), (1e-5, 100.0), (1e-150, 10.0), (1.0, 1e10))),
    "dlbeta": R(lambda a, b: _lbeta_partial(a, b, 0, 1), (POSITIVE, POSITIVE),
                closed=lambda a, b, orders: _lbeta_partial(a, b, orders[0], orders[1] + 1),
                pairs=((1e-5, 1e-5), (1e100, 3.5), (3.5, 1e100), (1e-10, 1.0), (0.5, 1e12))),
    "sigmoid": R(lambda x: 1 / (1 + mpmath.exp(-x)), (Domain(special=(40.0, -500.0, 720.0)),)),
    "relu": R(lambda x: max(x, 0), (REAL,),
              branch=lambda x: _side(x, lambda t: 0 * t, lambda t: t)),
    "softplus": R(lambda x: mpmath.log1p(mpmath.exp(x)), (REAL,)),
    "logit": R(lambda x: mpmath.log(x / (1 - x)), (Domain(0.0, 1.0, special=(0.5,)),)),
    "silu": R(lambda x: x / (1 + mpmath.exp(-x)), (REAL,)),
    "gelu": R(lambda x: x * mpmath.ncdf(x), (REAL,)),
    "gelu_tanh": R(lambda x: x / (1 + mpmath.exp(-GELU_SCALE * (x + GELU_C * x ** 3))),
                   (Domain(cap=1e100),)),
    "elu": R(lambda x: x if x > 0 else mpmath.expm1(x), (REAL,),
             branch=lambda x: _side(x, mpmath.expm1, lambda t: t)),
    "selu": R(lambda x: SELU_SCALE * (x if x > 0 else SELU_ALPHA * mpmath.expm1(x)), (REAL,),
              branch=lambda x: _side(x, lambda t: SELU_SCALE * SELU_ALPHA * mpmath.expm1(t),
                                     lambda t: SELU_SCALE * t)),
    "leaky_relu": R(lambda x, a: x if x > 0 else a * x, PAIR,
                    branch=lambda x, a: _side(x, lambda t, b: b * t, lambda t, b: t)),
    "softsign": R(lambda x: x / (1 + abs(x)), (REAL,),
                  branch=lambda x: _side(x, lambda t: t / (1 - t), lambda t: t / (1 + t))),
    "mish": R(lambda x: x * mpmath.tanh(mpmath.log1p(mpmath.exp(x))),
              (Domain(special=(20.0, 300.0)),)),
    "hardtanh": R(lambda x: min(max(x, -1), 1), (Domain(special=(-1.0, 1.0)),),
                  branch=lambda x: _hardtanh_branch(x)),
    "abs": R(abs, (REAL,), branch=lambda x: _side(x, lambda t: -t, lambda t: t)),
    "sign": R(mpmath.sign, (REAL,), branch=lambda x: None if x == 0 else _flat(_sign)(x)),
    "heaviside": R(lambda x: 1 if x > 0 else 0, (REAL,), branch=lambda x: None if x == 0 else
                   _flat(lambda t: 1.0 if t > 0 else 0.0)(x)),
    "min": R(min, PAIR, branch=lambda x, y: None if x == y else (
        (lambda a, b: a) if x < y else (lambda a, b: b))),
    "max": R(max, PAIR, branch=lambda x, y: None if x == y else (
        (lambda a, b: a) if x > y else (lambda a, b: b))),
    "clip": R(lambda x, lo, hi: min(max(x, lo), hi), (REAL, REAL, REAL), branch=_clip_branch),
    "floor": R(mpmath.floor, (REAL,), branch=lambda x: None if x == math.floor(x) else
               _flat(math.floor)(x)),
    "ceil": R(mpmath.ceil, (REAL,), branch=lambda x: None if x == math.floor(x) else
              _flat(math.ceil)(x)),
    "round": R(lambda x: mpf(round(float(x))), (Domain(special=(0.5, 2.5)),),
               branch=lambda x: None if x - math.floor(x) == 0.5 else _flat(round)(x)),
    "trunc": R(lambda x: mpf(math.trunc(float(x))), (REAL,),
               branch=lambda x: None if x == math.floor(x) else _flat(math.trunc)(x)),
    "mod": R(lambda x, y: x - mpmath.floor(x / y) * y, (Domain(special=(1.0,)),
                                                        Domain(special=(0.1,))),
             branch=_mod_branch, pairs=((1.0, 0.1), (3.0, 0.3), (7.0, 0.7), (1e17, 3.0))),
    "lt": R(lambda x, y: 1 if x < y else 0, PAIR, branch=_truth(lambda x, y: x < y)),
    "le": R(lambda x, y: 1 if x <= y else 0, PAIR, branch=_truth(lambda x, y: x <= y)),
    "gt": R(lambda x, y: 1 if x > y else 0, PAIR, branch=_truth(lambda x, y: x > y)),
    "ge": R(lambda x, y: 1 if x >= y else 0, PAIR, branch=_truth(lambda x, y: x >= y)),
    "eq": R(lambda x, y: 1 if x == y else 0, PAIR, branch=_truth(lambda x, y: x == y)),
    "ne": R(lambda x, y: 1 if x != y else 0, PAIR, branch=_truth(lambda x, y: x != y)),
    "logical_and": R(lambda x, y: 1 if x and y else 0, PAIR,
                     branch=_truth(lambda x, y: bool(x and y))),
    "logical_or": R(lambda x, y: 1 if x or y else 0, PAIR,
                    branch=_truth(lambda x, y: bool(x or y))),
    "logical_not": R(lambda x: 0 if x else 1, (REAL,), branch=_truth(lambda x: not x)),
    "where": R(lambda c, a, b: a if c else b, (REAL, REAL, REAL),
               branch=lambda c, a, b: (lambda p, q, r: q) if c else (lambda p, q, r: r)),
}


# --- the reference numbers: mpmath.diff at a precision that has settled ----------------------

def partial(function: Callable[..., Any], args: Sequence[Any], orders: Sequence[int]) -> Any:
    """The mixed partial derivative of ``function`` at ``args``, one operand at a time, each
    by ``mpmath.diff`` with a step of 2**-STEP_BITS, relative to the operand below 1 (its own
    ``relative=True`` makes the step larger for smaller operands). The step does not shrink as
    the precision grows, so a difference that cancels (cos' at 1e-300, d/dx (x + 1e138)) is
    resolved by a higher precision (``settled``) rather than chased by a smaller step."""
    i = next((i for i, k in enumerate(orders) if k), None)
    if i is None:
        return function(*args)
    k = orders[i]
    rest = (*orders[:i], 0, *orders[i + 1:])

    def along(t: Any) -> Any:
        return partial(function, (*args[:i], t, *args[i + 1:]), rest)

    x = args[i]
    step = mpmath.ldexp(1, min(mpmath.mag(x) if x else 0, 0) - STEP_BITS)
    return mp.diff(along, x, k, h=step)


def settled(compute: Callable[[], Any], most: int | None = None,
            rough: bool = False) -> Any | None:
    """``compute()`` at DPS, 2 DPS, ... until two precisions agree to 30 digits; None if they
    never do by ``most`` digits (MAX_DPS; ``rough``: the last value all the same). A zero is
    never believed: a difference that cancels completely (sin'' at 1e-300) is 0 at every
    precision too low, so an exact zero (relu'') is left out with the rest."""
    most = MAX_DPS if most is None else most
    previous = value = None
    dps = DPS
    while dps <= most:
        with mp.workdps(dps):
            try:
                value = compute()
            except (ValueError, ZeroDivisionError, ArithmeticError):
                return None
            if isinstance(value, mpmath.mpc):
                if abs(value.imag) > abs(value.real) * mpf(10) ** -40:
                    return None
                value = value.real
            value = mpf(value)
            if previous is not None and value and (
                    abs(value - previous) <= abs(value) * mpf(10) ** -30):
                return +value
            previous = value
        dps *= 2
    return value if rough else None


def _multi_indices(variables: int, order: int) -> list[tuple[int, ...]]:
    """Every way to take ``order`` derivatives of ``variables`` operands (sorted, no repeats)."""
    if variables == 0:
        return [()] if order == 0 else []
    return [(k, *rest) for k in range(order, -1, -1)
            for rest in _multi_indices(variables - 1, order - k)]


# --- gradcli's numbers, the way users get them --------------------------------------------------

@dataclass
class Case:
    """One function to measure: a row with some operands held constant (polygamma(4, x))."""

    row: str
    text: str
    names: tuple[str, ...]  # the variables, in operand order
    fixed: tuple[float | None, ...]  # per operand: a constant, or None for a variable
    reference: Reference

    def full(self, values: Sequence[float]) -> tuple[float, ...]:
        it = iter(values)
        return tuple(next(it) if f is None else f for f in self.fixed)


def cases(only: Sequence[str] | None = None) -> list[Case]:
    """Every row of the op table, with each of its held operands (``fixed``)."""
    found = []
    for op in ROWS:
        name = op.name
        if op.is_array:
            continue
        if only and name not in only:
            continue
        reference = REFERENCES[name]
        for fixed in reference.fixed or ((None,) * op.arity,):
            operands = op.operands
            args = [operands[i] if f is None else repr(int(f)) for i, f in enumerate(fixed)]
            names = tuple(operands[i] for i, f in enumerate(fixed) if f is None)
            text = f"{name}({', '.join(args)})" if op.is_function else spellings(op)[0]
            found.append(Case(name, text, names, fixed, reference))
    return found


def points(case: Case, rng: random.Random, count: int, grid: bool = True) -> list[tuple]:
    """The fixed grid (whole for one variable, a sample of the product for more), the row's
    ``pairs`` and ``count`` random points."""
    domains = [d for d, f in zip(case.reference.domains, case.fixed, strict=True) if f is None]
    chosen: list[tuple] = []
    if grid:
        grids = [d.grid() for d in domains]
        if len(grids) == 1:
            chosen += [(x,) for x in grids[0]]
        else:
            product = [()]
            for g in grids:
                product = [(*p, x) for p in product for x in g]
            chosen += rng.sample(product, min(len(product), 40 * len(grids)))
        for pair in case.reference.pairs:
            if all(f is None or f == v for f, v in zip(case.fixed, pair, strict=True)):
                chosen.append(tuple(v for f, v in zip(case.fixed, pair, strict=True) if f is None))
    randoms = [d.random(rng, count) for d in domains]
    chosen += list(zip(*randoms, strict=True))
    return chosen


@dataclass
class Numbers:
    """gradcli's value, gradient and Hessian at a point; None where it refused."""

    value: float | None
    gradient: dict[str, float] | None
    hessian: dict[str, dict[str, float]] | None
    error: str = ""


def gradcli_numbers(program: Any, case: Case, point: Sequence[float]) -> Numbers:
    bound = dict(zip(case.names, point, strict=True))
    program.bind(bound)
    try:
        value = forward(program.nodes)
    except GradcliError as error:
        return Numbers(None, None, None, str(error))
    try:  # eval says nothing when the gradient fails: the value is counted on its own all the same
        values_and_gradients(program)
    except GradcliError as error:
        return Numbers(value, None, None, str(error))
    gradient = {name: program.variables[name].grad for name in case.names}
    try:
        hessian = hessian_at(program, bound).matrix
    except GradcliError as error:
        return Numbers(value, gradient, None, str(error))
    return Numbers(value, gradient, hessian)


# --- errors and bounds ---------------------------------------------------------------------------

@dataclass
class Tally:
    """The errors of one case at one derivative order."""

    errors: list[float] = field(default_factory=list)  # in ulps
    ratios: list[float] = field(default_factory=list)  # error / bound
    worst: tuple[float, tuple, str] = (0.0, (), "")  # ratio, point, what
    over: int = 0  # a number printed outside the bound
    missed: int = 0  # refused where the true answer is a finite float
    refused: int = 0  # refused rightly: the true answer is not a finite float
    skipped: int = 0  # no settled reference, or a kink or jump
    failures: list[str] = field(default_factory=list)  # each point over its bound or refused

    def add(self, got: float | None, true: Any, bound_ulps: float, point: tuple, what: str,
            excused: bool = False) -> None:
        """``excused``: a refusal is right even for a finite answer, because something eval
        computes along with it is not finite (the value, another entry of the gradient)."""
        finite = abs(true) < BIG
        if got is None:
            if finite and not excused:
                self.missed += 1
                self.failures.append(f"{what} at {_point(point)}: refused, true {_short(true)}")
            else:
                self.refused += 1
            return
        error = math.inf if not finite else float(abs(mpf(got) - true) / ulp(true))
        ratio = error / bound_ulps if bound_ulps else (0.0 if error == 0 else math.inf)
        self.errors.append(error)
        self.ratios.append(ratio)
        if ratio > 1.0:
            self.over += 1
            self.failures.append(f"{what} at {_point(point)}: {got!r}, true {_short(true)}, "
                                 f"{_number(error)} ulps, {_number(ratio)} x bound")
        if ratio >= self.worst[0]:
            self.worst = (ratio, point, what)


def ulp(true: Any) -> Any:
    return mpf(math.ulp(float(true)))


def condition(g: Any, derivatives: Sequence[Any], args: Sequence[Any]) -> float:
    """sum |x_i d_i g| / |g|: how much a relative change of the operands moves g."""
    moved = sum(abs(x * d) for x, d in zip(args, derivatives, strict=True))
    if g == 0:
        return 1.0 if moved == 0 else math.inf
    return float(moved / abs(g))


def bound(order: int, true: Any, cond: float) -> float:
    """The bound of a point, in ulps of the true value."""
    scale = max(1.0, cond)
    if order < 2:
        return VALUE_ULPS * scale
    return float(SECOND_RELATIVE * scale * max(abs(true), TINY) / ulp(true))


def measure(case: Case, sample: Sequence[tuple]) -> list[Tally]:
    """Tallies of orders 0, 1 and 2 of ``case`` over the points of ``sample``."""
    tallies = [Tally(), Tally(), Tally()]
    program = parse(case.text)
    varying = [i for i, f in enumerate(case.fixed) if f is None]
    count = len(varying)
    for point in sample:
        full = case.full(point)
        piece = case.reference.piece(full)
        if piece is None:
            for tally in tallies:
                tally.skipped += 1
            continue
        args = [mpf(v) for v in full]
        truths: dict[tuple[int, ...], Any] = {}
        for order in range(4):
            for index in _multi_indices(count, order):
                orders = [0] * len(full)
                for i, k in zip(varying, index, strict=True):
                    orders[i] = k
                # third derivatives only give second ones their condition number: roughly
                truths[index] = _truth(case.reference, piece, args, orders, order == 3)
        if any(v is None for v in truths.values()):
            for tally in tallies:
                tally.skipped += 1
            continue
        numbers = gradcli_numbers(program, case, point)
        _tally(tallies, case, numbers, truths, [args[i] for i in varying], point)
    return tallies


def _truth(reference: Reference, piece: Callable[..., Any], args: list, orders: list[int],
           rough: bool) -> Any | None:
    """The true partial derivative: the row's closed form if it has one, else mpmath.diff."""
    if reference.closed is not None and piece is reference.function:
        return settled(lambda: reference.closed(*args, orders))
    # third derivatives only give second ones their condition number: roughly
    return settled(lambda: partial(piece, args, orders), *((2 * DPS, True) if rough else ()))


def _unit(count: int, i: int, more: tuple[int, ...] = ()) -> tuple[int, ...]:
    index = [0] * count
    index[i] += 1
    for j in more:
        index[j] += 1
    return tuple(index)


def _tally(tallies: list[Tally], case: Case, numbers: Numbers, truths: dict, args: list,
           point: tuple) -> None:
    count = len(case.names)
    # eval gives the gradient whole, and the Hessian only with a finite gradient: a refusal is
    # right where any of what it needs is not a finite float
    unfinished = [any(abs(truths[at]) >= BIG for at in _multi_indices(count, order))
                  for order in range(3)]

    def check(order: int, got: float | None, at: tuple[int, ...], what: str) -> None:
        true = truths[at]
        ups = [truths[tuple(k + (j == i) for j, k in enumerate(at))] for i in range(count)]
        tallies[order].add(got, true, bound(order, true, condition(true, ups, args)), point,
                           what, excused=any(unfinished[:order + 1]))

    check(0, numbers.value, (0,) * count, "value")
    for i, name in enumerate(case.names):
        grad = None if numbers.gradient is None else numbers.gradient[name]
        check(1, grad, _unit(count, i), f"d/d{name}")
        for j in range(i, count):
            other = case.names[j]
            entry = None if numbers.hessian is None else numbers.hessian[name][other]
            check(2, entry, _unit(count, i, (j,)), f"d2/d{name}d{other}")


# --- the report -----------------------------------------------------------------------------

@dataclass
class Row:
    case: Case
    tallies: list[Tally]


def run(only: Sequence[str] | None = None, count: int = 60, seed: int = 28,
        grid: bool = True, progress: bool = False) -> list[Row]:
    """Measure every case (``only``: these rows) on its grid and ``count`` random points."""
    rows = []
    for case in cases(only):
        rng = random.Random(f"{seed}:{case.text}")
        start = time.perf_counter()
        rows.append(Row(case, measure(case, points(case, rng, count, grid))))
        if progress:
            print(f"  {case.text}: {time.perf_counter() - start:.1f} s", file=sys.stderr,
                  flush=True)
    return rows


ORDER_NAMES = ("value", "1st", "2nd")


def _number(x: float) -> str:
    if math.isinf(x):
        return "inf"
    if x == 0:
        return "0"
    return f"{x:.2g}" if x < 100 else f"{x:.1e}".replace("e+0", "e").replace("e+", "e")


def _short(true: Any) -> str:
    return mpmath.nstr(true, 17)


def _point(point: tuple) -> str:
    return "(" + ", ".join(f"{v:.17g}" for v in point) + ")" if point else ""


def markdown(rows: list[Row]) -> str:
    """The table: per function and order, points, max and median ulps, the worst error over
    its bound (<= 1 meets it), numbers outside the bound, finite answers refused."""
    lines = ["| function | order | points | max ulps | median ulps | worst / bound | over | "
             "refused | worst at |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        for order, tally in enumerate(row.tallies):
            if not tally.errors and not tally.missed:
                continue
            errors = tally.errors or [0.0]
            worst = tally.worst
            at = f"{worst[2]} at {_point(worst[1])}" if worst[0] > 0.25 else ""
            lines.append(
                f"| `{row.case.text}` | {ORDER_NAMES[order]} | {len(tally.errors)} | "
                f"{_number(max(errors))} | {_number(statistics.median(errors))} | "
                f"{_number(worst[0])} | {tally.over} | {tally.missed} | {at} |")
    return "\n".join(lines)


def summary(rows: list[Row]) -> str:
    over = sum(t.over for r in rows for t in r.tallies)
    missed = sum(t.missed for r in rows for t in r.tallies)
    measured = sum(len(t.errors) for r in rows for t in r.tallies)
    return (f"{len(rows)} functions, {measured} numbers compared with mpmath: {over} outside "
            f"their bound, {missed} finite answers refused (numeric error)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated row names")
    parser.add_argument("--points", type=int, default=60, help="random points per function")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--worst", action="store_true", help="only rows outside their bound")
    parser.add_argument("--detail", action="store_true",
                        help="list every point outside its bound or refused")
    args = parser.parse_args(argv)
    only = args.only.split(",") if args.only else None
    rows = run(only, args.points, args.seed, progress=True)
    if args.worst:
        rows = [r for r in rows if any(t.over or t.missed for t in r.tallies)]
    print(markdown(rows))
    print()
    print(summary(rows))
    if args.detail:
        for row in rows:
            for tally in row.tallies:
                for failure in tally.failures:
                    print(f"{row.case.text}: {failure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
