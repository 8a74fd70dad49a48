"""Float helpers of the special rows' derivative rules: the slopes whose forms as written
would cancel (digamma differences, ive's slopes) or underflow a factor (beta's), on floats.

A rule calls one of these on floats and keeps its textbook form for formulas (``gradcli diff``
prints it; a Hessian differentiates it), as ops/special_functions.py says of each. Written
against ``math`` alone, as engine/special.py; tested against mpmath in tests/test_accuracy.py.
"""

from __future__ import annotations

import math

from gradcli.engine.special import _lbeta


def digamma_difference(a: float, b: float) -> float:
    """psi(b + a) - psi(b) for a, b > 0, without subtracting the two: beta's and lbeta's slopes
    (psi(b) - psi(a + b) is -1.6e-10 at a = 1e-10, b = 1, where psi(b) is -0.58 and the
    difference of two floats keeps 6 digits). A helper of the derivative rules, not a row.

    psi(x + 1) = psi(x) + 1/x moves b up to 10 and adds a / (b (b + a)) at each step; from there
    on the asymptotic series' differences: log1p(a/b) + a / (2 b (b + a)) + sum_k B_2k / (2k)
    (b^-2k - (b + a)^-2k), the last as b^-2k (-expm1(-2k log1p(a/b))): each term positive."""
    total = 0.0
    while b < 10.0:  # a/(b (b + a)) as a/(b + a)/b: b (b + a) overflows or underflows
        total += a / (b + a) / b
        b += 1.0
    ratio = math.log1p(a / b)
    total += ratio + a / (b + a) / (2.0 * b)
    inverse = 1.0 / (b * b)
    power = 1.0
    for k, bernoulli in enumerate((1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66,
                                   -691.0 / 2730, 7.0 / 6), 1):
        power *= inverse
        total += bernoulli / (2 * k) * power * -math.expm1(-2 * k * ratio)
    return total


def ive_slope(n: float, x: float) -> float:
    """d/dx ive(n, x) for x != 0, ive's slope on floats, in the two forms of ``_ive``: the
    power series and Hankel's series, each differentiated term by term. The rule's
    (ive(n - 1, x) + ive(n + 1, x))/2 - sign(x) ive(n, x) subtracts two numbers that agree
    to 1 - O(1/x), so it keeps about 16 - log10|x| digits (none from |x| = 1e16 on); the series'
    own terms cancel a factor 2 sqrt|x| at most (the power series), or not at all (Hankel's,
    whose terms the derivative takes times -1/2 - k). A helper of the derivative rule, not a
    row (the rule keeps the form above for formulas, which it prints)."""
    n = int(n)
    size = abs(x)
    slope = _hankel_slope(n, size) if size > 60.0 else None
    if slope is None:
        slope = _ive_series_slope(n, size) * math.exp(-size)
    return slope if x > 0.0 or n % 2 else -slope


def _hankel_slope(n: int, s: float) -> float | None:
    """d/ds of (2 pi s)^-1/2 sum_k (-1)^k a_k / s^k (``_ive``'s Hankel series), its k-th term
    times -(k + 1/2) / s; None where the series diverges before its terms fall below 1e-17 of
    the sum (s not large enough beside n^2). The terms, up to a few units where n^2 is near s,
    cancel to the slope's O(1): summed as whole numbers and rounded once (as the power series
    below), since each term in floats carries the k roundings of the ones before it."""
    mu = 4 * n * n
    term, total, k = 1.0, -0.5, 0
    while True:  # how many terms, in floats
        k += 1
        following = -term * (mu - (2 * k - 1) ** 2) / (8.0 * k * s)
        if k > n and abs(following) >= abs(term):
            return None  # past its smallest term the series diverges
        term = following
        total -= term * (k + 0.5)
        if abs(term) * (k + 0.5) <= abs(total) * 1e-18:
            break
    top, den = s.as_integer_ratio()
    # sum_j (-1)^j A_j (2j + 1) den^j 8^(K - j) K!/j! top^(K - j), A_j = prod (mu - (2i - 1)^2)
    weights, rest = [1] * (k + 1), 1
    for j in range(k, 0, -1):
        rest *= 8 * j * top
        weights[j - 1] = rest
    exact, product = 0, 1
    for j in range(k + 1):
        exact += product * (2 * j + 1) * weights[j]
        product *= -(mu - (2 * j + 1) ** 2) * den
    return -exact / (2 * rest) / s / math.sqrt(2.0 * math.pi * s)


def _ive_series_slope(n: int, s: float) -> float:
    """e^s d/ds (e^-s I_n(s)) = sum_k t_k ((n + 2k)/s - 1), t_k = (s/2)^(n + 2k) / (k! (k + n)!),
    s > 0, in whole numbers (s is one, over a power of 2) and rounded once: its terms have both
    signs and cancel a factor up to 2 sqrt(s), which in floats cost 30 ulps at s = 60 (the
    terms' own roundings, each made of the one before)."""
    quarter, term, weight, k = 0.25 * s * s, 1.0, 1.0, 0
    while True:  # how many terms: as _ive's power series, in floats
        k += 1
        term *= quarter / (k * (k + n))
        weight += term
        if term <= weight * 1e-18 and k * (k + n) > quarter:
            break
    top, den = s.as_integer_ratio()
    square, scale = top * top, 4 * den * den
    # sum_k (top^2)^k scale^(K - k) K!/k! (K + n)!/(k + n)! ((n + 2k) den - top), k = 0 ... K
    total, power, rest = 0, 1, 1
    weights = [1] * (k + 1)
    for j in range(k, 0, -1):
        rest *= scale * j * (j + n)
        weights[j - 1] = rest
    for j in range(k + 1):
        total += power * weights[j] * ((n + 2 * j) * den - top)
        power *= square
    # over scale^K K! (K + n)! den = rest n! den (rest ends as scale^K K! (K + n)!/n!), times
    # (s/2)^n / s = top^n den / ((2 den)^n top)
    return total * top ** n / (rest * math.factorial(n) * (2 * den) ** n * top)


def beta_slope(a: float, b: float, value: float) -> float:
    """d/db beta(a, b) = -beta(a, b) (psi(b + a) - psi(b)), ``value`` beta(a, b): beta's
    slope on floats, as the product where neither factor leaves the normal floats. Where the
    digamma difference (about a/b) underflows, it is linear in a to the last digit, so it is
    taken of a times a power of 2 and scaled back (d/db at a = 1e-20, b = 1.7e308 is
    -5.9e-309, not 0); where beta is subnormal (its digits are few) or 0, exp(lbeta + log of
    the difference).
    A helper of the derivative rule, not a row."""
    drop = digamma_difference(a, b)
    if drop < 1e-290:  # a < 1e-290 b: a scaled to 2**-70 b is still in the linear regime
        shift = math.frexp(b)[1] - math.frexp(a)[1] - 70
        return -math.ldexp(value * digamma_difference(math.ldexp(a, shift), b), -shift)
    if abs(value) < 2.2250738585072014e-308:
        return -math.exp(_lbeta(a, b) + math.log(drop))
    return -value * drop
