"""Float helpers of the special rows' derivative rules: the slopes whose forms as written
would cancel (digamma differences) or underflow a factor (beta's, gamma's), on floats; the
float functions of ``dbeta``, ``dlbeta`` and ``dgamma``, the slopes of beta, lbeta and gamma as
rows of their own, with their derivatives (a Hessian's second derivatives of those); and the
scaled Bessel functions ``ive``, ``i0e``, ``i1e`` and ``dive`` (ive's slope as a row), whose
values and derivatives are one sum of their series, rounded once.

A rule calls one of these on floats and keeps its textbook form for formulas (``gradcli diff``
prints it), as ops/special_functions.py says of each. The rows' functions are written
against ``math`` alone, as engine/special.py (``diff --format python`` copies them and the
``_`` helpers they call); the exact paths of a Hessian (``_gamma_exact``, ``_scaled_beta``,
``_mean_excess_head``) import ``decimal`` where they use it. Tested against mpmath in
tests/test_accuracy.py.
"""

from __future__ import annotations

import math

from gradcli.engine.forms import MAX_IVE_ORDER, order_problem, positive_pair
from gradcli.engine.special import TINY_NORMAL, _beta, _digamma, _lbeta, _polygamma, _refuse

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from decimal import Decimal

BERNOULLI = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6)


def _digamma_difference(a: float, b: float) -> float:
    """psi(b + a) - psi(b) for a, b > 0, without subtracting the two: beta's and lbeta's slopes
    (psi(b) - psi(a + b) is -1.6e-10 at a = 1e-10, b = 1, where psi(b) is -0.58 and the
    difference of two floats keeps 6 digits). A helper of the derivative rules, not a row.

    psi(x + 1) = psi(x) + 1/x moves b up to 20 and adds a / (b (b + a)) at each step; from there
    on the asymptotic series' differences: log1p(a/b) + a / (2 b (b + a)) + sum_k B_2k / (2k)
    (b^-2k - (b + a)^-2k), the last as b^-2k (-expm1(-2k log1p(a/b))): each term positive
    (the k-th relatively B_2k / b^2k: the eighth, left out, is 7e-16 at b = 10, 1e-20 at 20).
    The terms are summed exactly (fsum): the first step's 1/b at a tiny b dwarfs the others,
    whose roundings in a running sum added up to 4 ulps at b = 1e-15, a = 10."""
    terms = []
    while b < 20.0:  # a/(b (b + a)) as a/(b + a)/b: b (b + a) overflows or underflows
        terms.append(a / (b + a) / b)
        b += 1.0
    ratio = math.log1p(a / b)
    terms += [ratio, a / (b + a) / (2.0 * b)]
    inverse = 1.0 / (b * b)
    power = 1.0
    for k, bernoulli in enumerate(BERNOULLI, 1):
        power *= inverse
        terms.append(bernoulli / (2 * k) * power * -math.expm1(-2 * k * ratio))
    return math.fsum(terms)


def _ive(n: float, x: float) -> float:
    """exp(-|x|) I_n(x), I_n the modified Bessel function of the first kind of whole order
    n >= 0 (the domain check, n <= 30): the ``ive`` row."""
    return _scaled_bessel(0, n, x)


def _i0e(x: float) -> float:
    return _scaled_bessel(0, 0.0, x)


def _i1e(x: float) -> float:
    return _scaled_bessel(0, 1.0, x)


def _dive(n: float, x: float) -> float:
    """d/dx ive(n, x): the ``dive`` row, ive's slope as a row of its own, so that a Hessian
    differentiates it by a rule that keeps its digits (``_scaled_bessel`` of order 2)."""
    return _scaled_bessel(1, n, x)


BESSEL_SWITCH = 60.0  # |x| above which Hankel's series, where it converges to 1e-18


def _scaled_bessel(m: int, n: float, x: float) -> float:
    """d^m/dx^m exp(-|x|) I_n(x), m = 0, 1, 2: ive, its slope and its second derivative, odd
    or even in x as n + m, at 0 the limits of both sides (0 at a kink: ive(0, x)'s slope and
    ive(1, x)'s second derivative, as abs's). Above |x| = BESSEL_SWITCH Hankel's series, else
    the power series times exp(-|x|), each differentiated term by term and summed in whole
    numbers (the power series' in fixed point), rounded once: the written slope
    (I_n-1 + I_n+1)/2 - sign(x) I_n subtracts numbers that agree to 1 - O(1/x) (|x| ulps lost,
    and as much again by its own derivative), the series' terms in floats each carry the
    roundings of the ones before (30 ulps at 60)."""
    _refuse(order_problem("ive", n, MAX_IVE_ORDER + 1))  # as _polygamma's
    k, size = int(n), abs(x)
    if size == 0.0:
        return ((1.0,), (0.0, 0.5), (1.5, 0.0, 0.25))[m][k] if k <= m else 0.0
    value = _bessel_hankel(m, k, size) if size > BESSEL_SWITCH else None
    if value is None:
        value = _bessel_series(m, k, size) * math.exp(-size)
    return -value if x < 0.0 and (k + m) % 2 else value


def _bessel_hankel(m: int, n: int, s: float) -> float | None:
    """d^m/ds^m of Hankel's exp(-s) I_n(s) ~ (2 pi s)^-1/2 sum_k (-1)^k a_k / s^k,
    a_k = prod_{j <= k} (4 n^2 - (2j - 1)^2) / (k! 8^k): its k-th term times
    (-1)^m (k + 1/2) ... (k + m - 1/2) / s^m; None where the series diverges before its terms
    fall below 1e-18 of the sum (s not large enough beside n^2). The terms, up to e^(n^2/2s),
    cancel to a sum of order 1: summed exactly, the only error is the series' remainder."""
    mu = 4 * n * n
    term, total, k = 1.0, float(math.prod(range(1, 2 * m, 2))), 0
    while True:  # how many terms, in floats
        k += 1
        following = -term * (mu - (2 * k - 1) ** 2) / (8.0 * k * s)
        if k > n and abs(following) >= abs(term):
            return None  # past its smallest term the series diverges
        term = following
        weight = math.prod(range(2 * k + 1, 2 * k + 2 * m, 2))
        total += term * weight
        if abs(term) * weight <= abs(total) * 1e-18:
            break
    top, den = s.as_integer_ratio()
    # sum_j (-1)^j A_j P(j) den^j 8^(K - j) K!/j! top^(K - j), A_j = prod (mu - (2i - 1)^2),
    # P(j) = (2j + 1) ... (2j + 2m - 1), over 8^K K! top^K (rest) times (2s)^m
    weights, rest = [1] * (k + 1), 1
    for j in range(k, 0, -1):
        rest *= 8 * j * top
        weights[j - 1] = rest
    exact, product = 0, 1
    for j in range(k + 1):
        exact += product * math.prod(range(2 * j + 1, 2 * j + 2 * m, 2)) * weights[j]
        product *= -(mu - (2 * j + 1) ** 2) * den
    # 1/sqrt(2 pi s) as 1/(4 sqrt(pi/8 s)): 2 pi s overflows past 2.8e307
    scaled = (-1) ** m * exact * den ** m / (rest * (2 * top) ** m)
    return scaled / (4.0 * math.sqrt(0.125 * math.pi * s))


def _bessel_series(m: int, n: int, s: float) -> float:
    """e^s d^m/ds^m (e^-s I_n(s)) = (s/2)^n/n! sum_k u_k V_k, u_k = prod_{i <= k}
    (s^2/4)/(i (i + n)), V_k = sum_j C(m, j) (-1)^(m - j) p!/(p - j)! s^-j, p = n + 2k: each
    u_k in units of 2^-bits, floored (u_0 is 1, the K floors move each u_k by K units at
    most), times the whole number (s den)^m V_k (s = top/den, den a power of 2), the sum
    rounded once with (s/2)^n/n! / (s den)^m. The value's terms (m = 0) are all positive;
    the derivatives' have both signs and cancel (up to 7 bits for m = 1, 11 for m = 2 on
    (0, 60], measured), and weigh up to (p/s)^m: below s = 1 the units and the tail go
    m log2(1/s) bits further (i0e'' at 1e-20 takes u_1 = 2.5e-41 times 2/s^2), the tail
    16 m bits further everywhere. Fixed point, not the exact sum: its numbers of thousands
    of bits cost 5 to 50 times the time near s = 60."""
    top, den = s.as_integer_ratio()
    lift = m * max(0, -math.frexp(s)[1])
    square, scale, depth = top * top, 4 * den * den, 64 + 16 * m + lift
    term = mass = total = 1 << FIXED_BITS + lift
    if m:
        total *= _bessel_weight(m, n, top, den)
    k = 0
    while term > mass >> depth or square > scale * k * (k + n):  # past the peak and tiny
        k += 1
        term = term * square // (scale * k * (k + n))
        mass += term
        total += term * _bessel_weight(m, n + 2 * k, top, den) if m else term
    return total * top ** n / ((2 * den) ** n * math.factorial(n) * top ** m << FIXED_BITS + lift)


def _bessel_weight(m: int, p: int, top: int, den: int) -> int:
    """(s den)^m V_k of _bessel_series for m = 1, 2: p den - s den, its square minus p den^2."""
    gap = p * den - top
    return gap if m == 1 else gap * gap - p * den * den


FIXED_BITS = 128  # _bessel_series' fixed point (more below s = 1): K floors cost K units


def _beta_slope(a: float, b: float, value: float) -> float:
    """d/db beta(a, b) = -beta(a, b) (psi(b + a) - psi(b)), ``value`` beta(a, b): beta's
    slope on floats, as the product where neither factor leaves the normal floats. Where the
    digamma difference (about a/b) underflows, it is linear in a to the last digit, so it is
    taken of a times a power of 2 and scaled back (d/db at a = 1e-20, b = 1.7e308 is
    -5.9e-309, not 0); where beta is subnormal (its digits are few) or 0, exp(lbeta + log of
    the difference).
    A helper of the derivative rule, not a row."""
    drop = _digamma_difference(a, b)
    if drop < 1e-290:  # a < 1e-290 b: a scaled to 2**-70 b is still in the linear regime
        shift = math.frexp(b)[1] - math.frexp(a)[1] - 70
        return -math.ldexp(value * _digamma_difference(math.ldexp(a, shift), b), -shift)
    if abs(value) < TINY_NORMAL:
        return -math.exp(_lbeta(a, b) + math.log(drop))
    return -value * drop



def _trigamma_difference(a: float, b: float) -> float:
    """psi'(b) - psi'(b + a) > 0 for a, b > 0, without subtracting the two (lbeta's d2/db2,
    whose trigammas agree to a/b where a << b: 0 at a = 1e100, b = 3.5 for 3.5e-200). As
    _digamma_difference: the recurrence psi'(x) = psi'(x + 1) + 1/x^2 moves b up to 20, adding
    1/b^2 - 1/(b + a)^2 = (1/b - 1/(b + a)) (1/b + 1/(b + a)); from there on the asymptotic
    series' differences, 1/x + 1/(2 x^2) + sum_k B_2k / x^(2k + 1), each term's as
    b^-(2k + 1) (-expm1(-(2k + 1) log1p(a/b))): (2k + 1) B_2k / b^2k, the k-th relatively, is
    1e-14 for k = 8 at b = 10, 2e-19 at 20."""
    terms = []  # summed exactly, as _digamma_difference's
    while b < 20.0:
        terms.append(a / (b + a) / b * (1.0 / b + 1.0 / (b + a)))
        b += 1.0
    gap = a / (b + a) / b  # 1/b - 1/(b + a)
    terms += [gap, 0.5 * gap * (1.0 / b + 1.0 / (b + a))]
    ratio = math.log1p(a / b)
    power, inverse = 1.0 / b, 1.0 / (b * b)
    for k, bernoulli in enumerate(BERNOULLI, 1):
        power *= inverse
        terms.append(bernoulli * power * -math.expm1(-(2 * k + 1) * ratio))
    return math.fsum(terms)


TAYLOR_REACH = 0.5  # h/x below which _mean_excess is its Taylor series in h


def _digamma_quotient(h: float, x: float) -> float:
    """(psi(x + h) - psi(x))/h, h, x > 0, where the difference would underflow: psi'(x) where
    h is below 1e-17 x (the next term, h psi''(x)/2, is at most about h/x relatively)."""
    if h < 1e-17 * x:
        return _polygamma(1.0, x)
    return _digamma_difference(h, x) / h


def _trigamma_quotient(h: float, x: float) -> float:
    """(psi'(x) - psi'(x + h))/h, h, x > 0, as _digamma_quotient: -psi''(x) for a tiny h."""
    if h < 1e-17 * x:
        return -_polygamma(2.0, x)
    return _trigamma_difference(h, x) / h


def _mean_excess(h: float, x: float, rest: float = 0.0) -> float:
    """((psi(y + h) - psi(y))/h - psi'(y + h))/h >= 0, y = x + rest >= 1 (``rest`` the rounding
    of a sum that made x, exact), h > 0: psi''s mean over [y, y + h] above its value at
    y + h, over h (beta's mixed second derivative is a sum of these, all positive). Below
    h/x = TAYLOR_REACH its Taylor series in h, -sum_j psi^(j+1)(y) h^(j-1) j/(j + 1)!, whose
    terms fall like (h/x)^j and alternate: the difference as written cancels to O(h/x) there;
    each psi^(j+1)(y) as psi^(j+1)(x) + rest psi^(j+2)(x) (the rounding of 1 + 1e-12 moved
    E(1e-15, 1 + 1e-12) by 1.3 ulps). Above, the difference: it cancels a factor 6 at most.
    Both cancel to several ulps for h/x above HEAD_REACH: there _mean_excess_head."""
    if HEAD_REACH * x < h < HEAD_CAP and x < HEAD_END:
        return _mean_excess_head(h, x, rest)
    if h > TAYLOR_REACH * x:
        return (_digamma_difference(h, x) / h - _polygamma(1.0, x + h)) / h
    return _mean_excess_series(h, x, rest)


def _mean_excess_series(h: float, x: float, rest: float) -> float:
    """_mean_excess's Taylor series in h, h <= TAYLOR_REACH x."""
    total, power, j = 0.0, 1.0, 1
    slope = _polygamma(2.0, x)
    while j < 90:
        following = _polygamma(j + 2.0, x)
        term = -(slope + rest * following) / math.factorial(j + 1) * j * power
        total += term
        if abs(term) <= 1e-18 * abs(total):
            break
        power *= h
        slope = following
        j += 1
    return total


HEAD_REACH = 0.05  # h/x above which _mean_excess's series cancels more than an ulp
HEAD_END = 20.0  # where _mean_excess_head's exact sum hands over to the series
HEAD_CAP = 4.0  # h below which it does (160 terms at most)


def _mean_excess_head(h: float, x: float, rest: float) -> float:
    """_mean_excess for HEAD_REACH x < h < HEAD_CAP, x < HEAD_END, where its series
    alternates and cancels to several ulps (3.6 at h = 0.3, x = 1 + 1e-8) and the difference
    cancels too (6.6 ulps of d/da dbeta at (2.5e-9, 0.55)): the all-positive
    sum E(h, y) = sum_k 1/((y + k) (y + k + h)^2) (psi's and psi''s series, term by term),
    its terms up to y + k = max(HEAD_END, 40 h) in Decimal, the rest E(h, y + K) by the
    series, where h/(y + K) <= 1/40 (0.5 ulps off, not 3.2, with the head to 20 alone) and it
    is 1e-3 of the whole or less: the sum rounded once."""
    from decimal import Decimal, localcontext

    y, steps = Decimal(x) + Decimal(rest), math.ceil(max(HEAD_END, 40.0 * h) - x)
    with localcontext() as context:
        context.prec = GAMMA_DIGITS
        head = sum(1 / ((y + k) * (y + k + Decimal(h)) ** 2) for k in range(steps))
        shifted = y + steps
        top = float(shifted)
        tail = _mean_excess_series(h, top, float(shifted - Decimal(top)))
        return float(head + Decimal(tail))


def _plus_one(v: float) -> tuple[float, float]:
    """1 + v as a float and the rest, exact (Fast2Sum, the larger first)."""
    total = 1.0 + v
    return total, (v - (total - 1.0)) if v <= 1.0 else (1.0 - (total - v))


def _dbeta(a: float, b: float) -> float:
    """d/db beta(a, b) = -beta(a, b) (psi(a + b) - psi(b)), a, b > 0: the ``dbeta`` row."""
    return _beta_slope(a, b, _beta(a, b))


def _dlbeta(a: float, b: float) -> float:
    """d/db lbeta(a, b) = psi(b) - psi(a + b), a, b > 0: the ``dlbeta`` row."""
    _refuse(positive_pair(a, b))
    return -_digamma_difference(a, b)


def _dbeta_da(a: float, b: float) -> float:
    """d2/da db beta(a, b) = beta (P Q - psi'(s)), P = psi(a) - psi(s), Q = psi(b) - psi(s),
    s = a + b, a positive quantity whose two terms agree where a << b or both are small
    (2.06 for 2.404 at a = b = 1e-5, as written). psi(x) = psi(x + 1) - 1/x in P and Q and
    psi'(s) = psi'(s + 1) + 1/s^2 take out the parts that cancel: with D(h, x) =
    psi(x + h) - psi(x) and E(h, x) = (D(h, x)/h - psi'(x + h))/h (_mean_excess),
    P Q - psi'(s) = a b/s (E(a, b + 1) + E(b, a + 1)) + D(a, b + 1) D(b, a + 1), every term
    positive. Written with a = min(a, b) as (a beta) (b/s (E + E) + D(a, b + 1)/a D(b, a + 1)),
    so that a beta (about 1 for a small a) neither overflows nor the terms underflow."""
    a, b = min(a, b), max(a, b)
    s = a + b
    scaled = _scaled_beta(a, b)
    (after_a, rest_a), (after_b, rest_b) = _plus_one(a), _plus_one(b)
    excess = _mean_excess(a, after_b, rest_b) + _mean_excess(b, after_a, rest_a)
    return scaled * (b / s * excess
                     + _digamma_quotient(a, after_b) * _digamma_difference(b, after_a))


def _scaled_beta(a: float, b: float) -> float:
    """a beta(a, b) = Gamma(1 + a) Gamma(b) / Gamma(a + b), a <= b, rounded once: from the
    exact gammas below b = 170 (a beta from the rounded beta was 6.1 ulps off at
    (3.6e-11, 1.55), the sum a + b rounded inside it too)."""
    if b >= 170.0:
        return a * _beta(a, b)
    from decimal import Decimal, localcontext

    with localcontext() as context:
        context.prec = GAMMA_DIGITS
        big_a, big_b = Decimal(a), Decimal(b)
        top = _gamma_exact(1 + big_a) * _gamma_exact(big_b)
        return float(top / _gamma_exact(big_a + big_b))


def _dbeta_db(a: float, b: float) -> float:
    """d2/db2 beta(a, b) = beta (D(a, b)^2 + psi'(b) - psi'(a + b)), both terms positive, each
    without a difference of floats; below a = 1 as (a beta) (D/a D + (psi'(b) - psi'(a + b))/a),
    whose factors do not underflow where a is tiny."""
    drop = _digamma_difference(a, b)
    if a < 1.0:
        return (a * _beta(a, b)) * (_digamma_quotient(a, b) * drop + _trigamma_quotient(a, b))
    return _beta(a, b) * (drop * drop + _trigamma_difference(a, b))


GAMMA_NORMAL_FROM = -170.0  # gamma is a normal float above -171 (1.1e-308 at -171.5)
GAMMA_UNDERFLOW = -200.0  # below, gamma'' < 1e-330 even a rounding from a pole: 0


def _gamma_times(x: float, factor: float, value: float | None = None) -> float:
    """gamma(x) factor rounded once, ``value`` gamma(x) if known. Below x = -171 gamma is
    subnormal, with few digits (one or two bits near -180, 0 from -178 on away from the poles),
    which a product keeps: there gamma(x + k) / (x (x + 1) ... (x + k - 1)), x + k in
    (-170, -169] (each x + i exact: all are in [128, 256) in size), computed 2**600 times too
    large and scaled back, so that the one rounding into the subnormals is the last."""
    if value is None:
        value = math.gamma(x)
    if abs(value) >= TINY_NORMAL or x >= GAMMA_NORMAL_FROM:
        return value * factor
    if x < GAMMA_UNDERFLOW:
        return 0.0 * value * factor
    shift = math.ceil(GAMMA_NORMAL_FROM - x)
    product = 1.0
    for i in range(shift):
        product *= x + i
    return math.ldexp(math.ldexp(math.gamma(x + shift), 600) * factor / product, -600)


def _dgamma(x: float) -> float:
    """gamma'(x) = gamma(x) digamma(x): the ``dgamma`` row (gamma's slope in a Hessian)."""
    return _gamma_times(x, _digamma(x))


def _dgamma_slope(x: float) -> float:
    """gamma''(x) = gamma(x) (digamma(x)**2 + trigamma(x)): dgamma's slope on floats, gamma's
    second derivative, the product rounded once. Below 0 gamma from _gamma_exact (math.gamma,
    by reflection there, is up to 5.7 ulps off in (-1, 0), and subnormal below -171), ten times
    slower than math.gamma, which is used above 0 and below GAMMA_UNDERFLOW (``_gamma_times``)."""
    psi = _digamma(x)
    factor = psi * psi + _polygamma(1.0, x)
    if not GAMMA_UNDERFLOW <= x < 0.0:
        return _gamma_times(x, factor)
    from decimal import Decimal  # only here: the decimal module is a start-up cost

    return float(_gamma_exact(Decimal(x)) * Decimal(factor))


GAMMA_DIGITS = 40  # _gamma_exact's working precision (Stirling's dropped term, 6e-27, dominates)
STIRLING = ((1, 12), (-1, 360), (1, 1260), (-1, 1680), (1, 1188), (-691, 360360), (1, 156),
            (-3617, 122400), (43867, 244188), (-174611, 125400))  # B_2k / (2k (2k - 1))
HALF_LOG_TAU = "0.918938533204672741780329736405617639861397474"  # log(2 pi) / 2


def _gamma_exact(x: Decimal) -> Decimal:
    """Gamma(x) to about 1e-26 relatively, x not a pole, above -200 and below 172: for the
    slope paths that need gamma to its last bit (a Hessian's, 100 us a call), not the rows'
    values. Gamma(z) / (x (x + 1) ... (x + N - 1)), z = x + N >= 20 (each factor one rounding
    of an exact sum, also next to a pole and below -171), log Gamma(z) by Stirling's series:
    (z - 1/2) log z - z + log(2 pi)/2 + sum_k B_2k / (2k (2k - 1) z^(2k - 1)), whose
    eleventh term, left out, is 6e-27 at z = 20. The caller rounds it once to a float
    (Decimal's float() rounds correctly, into the subnormals too)."""
    from decimal import Decimal, localcontext

    with localcontext() as context:
        context.prec = GAMMA_DIGITS
        shift = max(0, math.ceil(20 - x))
        product = Decimal(1)
        for k in range(shift):
            product *= x + k
        z = x + shift
        inverse = 1 / z
        square = inverse * inverse
        series = Decimal(0)
        for top, bottom in reversed(STIRLING):
            series = series * square + Decimal(top) / bottom
        log = (z - Decimal("0.5")) * z.ln() - z + Decimal(HALF_LOG_TAU) + series * inverse
        return log.exp() / product
