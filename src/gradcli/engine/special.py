"""Float functions behind the op table's special rows: digamma and polygamma, the inverse error
function, and the accurate forms of cbrt, logit, logaddexp and the activations.

Only the float ``forward`` of a row lives here; its derivative rules, domain check and other
forms stay in its row of the op table (engine/ops/). Each function is written against ``math``
alone, because ``gradcli diff --format python`` copies a row's forward verbatim (with the
functions of gradcli it calls) into code that imports only ``math``; so a function whose
domain ``math`` does not guard refuses it itself (``_refuse`` of its row's domain check), and
the export refuses where ``eval`` does (lbeta(-2.5, 1) is no number). The accuracy of each one
is tested against mpmath in tests/test_special.py.

SciPy would be the natural source of several of them, but it costs some 0.3 s to import and a
large install; the standard library has erf, erfc, gamma and lgamma, and the rest are short.
"""

from __future__ import annotations

import math

from gradcli.engine.forms import (
    MAX_POLYGAMMA_ORDER,
    not_a_pole,
    order_problem,
    ordered_bounds,
    positive_pair,
)


def _sigmoid(x: float) -> float:
    # Two branches so that exp never overflows: sigmoid(-1000) is 0, not an OverflowError.
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def _softplus(x: float) -> float:
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): exact for large |x|, no overflow.
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def _sign(x: float) -> float:
    return 0.0 if x == 0.0 else math.copysign(1.0, x)


def _relu(x: float) -> float:
    return max(0.0, x)


def _heaviside(x: float) -> float:
    return 1.0 if x > 0.0 else 0.0


def _cbrt(x: float) -> float:
    # A real cube root (negative for negative x): x ** (1/3) of |x| is within an ulp or two, and
    # one Newton step, written so that nothing overflows, rounds it as well as math.cbrt does.
    if x == 0.0 or not math.isfinite(x):
        return x
    y = math.copysign(math.fabs(x) ** (1.0 / 3.0), x)
    return y - (y - x / (y * y)) / 3.0


def _sinc(x: float) -> float:
    # The normalized sinc of NumPy: sin(pi x)/(pi x), and 1 at 0. The sine's argument is reduced
    # exactly first (period 2: fmod is exact), so sinc(250.5) keeps all its digits.
    if x == 0.0:
        return 1.0
    return math.sin(math.pi * math.fmod(x, 2.0)) / (math.pi * x)


# dsinc(x) = -pi**2 x (1/3 - p/30 + ...), p = (pi x)**2: the k-th coefficient is
# (-1)**(k - 1) 2k/(2k + 1)!; twelve reach 1e-20 relatively at |x| = 0.5.
DSINC_SERIES = tuple((-1) ** (k - 1) * 2 * k / math.factorial(2 * k + 1) for k in range(1, 13))
PI_SQUARED = 9.869604401089358  # pi**2 correctly rounded (math.pi**2 is too, by luck)
TINY_NORMAL = 2.2250738585072014e-308  # the smallest normal float: below it, few digits


def _dsinc(x: float) -> float:
    # sinc'(x) = (cos(pi x) - sinc(x))/x loses digits near 0, where both terms are 1 (a factor
    # 30 at 0.1, 5 at 0.3); below |x| = 0.5 the series in (pi x)**2 (Horner, smallest term
    # first) is within 2.5 ulps, and the quotient beyond it within 2.
    if abs(x) < 0.5:
        p, total = (math.pi * x) ** 2, 0.0
        for coefficient in reversed(DSINC_SERIES):
            total = total * p + coefficient
        return -PI_SQUARED * x * total + 0.0  # + 0.0: dsinc(0) is 0, not -0
    return (math.cos(math.pi * math.fmod(x, 2.0)) - _sinc(x)) / x


def _sech(x: float) -> float:
    # 1/cosh(x) (within 1.5 ulps) until cosh overflows at 710; past 700 it is 2 e**-|x|, whose
    # 1 + e**-2|x| is 1 in floats.
    if math.fabs(x) < 700.0:
        return 1.0 / math.cosh(x)
    return 2.0 * math.exp(-math.fabs(x))


def _exp2(x: float) -> float:
    return 2.0 ** x


def _logit(x: float) -> float:
    # log(x / (1 - x)): near x = 1/2 the quotient is close to 1 and its log loses the digits,
    # so there log1p((2x - 1) / (1 - x)), whose numerator is exact.
    if 0.25 <= x <= 0.75:
        return math.log1p((2.0 * x - 1.0) / (1.0 - x))
    return math.log(x / (1.0 - x))


def _logaddexp(x: float, y: float) -> float:
    # log(e**x + e**y) = max + log1p(e**-|x - y|): no overflow, exact for far-apart arguments.
    return max(x, y) + math.log1p(math.exp(-math.fabs(x - y)))


def _logaddexp2(x: float, y: float) -> float:
    # log2(2**x + 2**y), as _logaddexp.
    return max(x, y) + math.log1p(2.0 ** -math.fabs(x - y)) / math.log(2.0)


def _xlogy(x: float, y: float) -> float:
    # x * log(y), and 0 wherever x is 0 (whatever y): the convention of scipy.special.xlogy,
    # torch.xlogy and jax's, which makes d/dy of 0**y zero.
    if x == 0.0:
        return 0.0
    return x * math.log(y)


def _erfinv(x: float) -> float:
    # Giles's single-precision approximation (2010) as a first guess, then Halley steps on
    # erf(y) = |x| below |x| = 1/2, and Newton steps on log erfc(y) = log(1 - |x|) from there on:
    # 1 - |x| is exact where erf(y) would have lost the digits that matter, and the log keeps
    # the steps good where the guess is poor (|x| within 1e-12 of 1).
    a = math.fabs(x)
    if a == 0.0:
        return x
    w = -math.log((1.0 - a) * (1.0 + a))
    if w < 5.0:
        w -= 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            p = c + p * w
    y = p * a
    for _ in range(10):
        slope = 1.1283791670955126 * math.exp(-y * y)  # erf'(y)
        if a < 0.5:
            step = (math.erf(y) - a) / slope
            step /= 1.0 + y * step
            y -= step
        else:
            tail = math.erfc(y)
            step = (math.log(tail) - math.log1p(-a)) * tail / slope
            y += step
        if math.fabs(step) <= 1e-17 * y:
            break
    return math.copysign(y, x)


def _lgamma(x: float) -> float:
    # log |Gamma(x)|. math.lgamma loses up to 1e-3 relatively near its zeros 1 and 2 (and tens of
    # ulps near its minimum), so between 0.5 and 2.5 it is the series about 2,
    # lgamma(2 + z) = (1 - euler) z + sum_k>=2 (-1)^k (zeta(k) - 1) z^k / k, whose terms fall
    # like (z/2)^k: for z = x - 2 from -0.75 on (x - 2 exact), and below 1.25 through
    # lgamma(x) = lgamma(x + 1) - log(x), z = x - 1 (exact); math.lgamma elsewhere.
    # Within 0.2 of its minimum x0 = 1.46163 (where digamma is 0) it is the Taylor series about
    # x0, lgamma(x0) + sum_k>=2 psi^(k-1)(x0) z^k / k! (DIGAMMA_AT_ZERO's terms integrated): no
    # linear term, so nothing cancels (the series about 2 loses a factor 2-3 there), and
    # z = x - x0 is exact to 1e-32.
    if math.fabs(x - 1.4616321449683622) <= 0.2:
        z = (x - 1.4616321449683622) - 9.549995429965697e-17  # x0 in two parts
        total = 0.0
        for j in range(20, 0, -1):  # psi^(j)(x0) z^(j + 1) / (j + 1)!: 20 terms for |z| <= 0.2
            total = total * z + DIGAMMA_AT_ZERO[j - 1] / (j + 1)
        return -0.12148629053584961 + total * z * z
    if not 0.5 <= x <= 2.5:
        return math.lgamma(x)
    z = x - 2.0 if x >= 1.25 else x - 1.0
    total, power = 0.42278433509846713 * z, -z
    for k, coefficient in enumerate(ZETA_MINUS_ONE, 2):
        power *= -z
        total += coefficient * power / k
    return total if x >= 1.25 else total - math.log(x)


ZETA_MINUS_ONE = (  # zeta(k) - 1 for k = 2, 3, ...: the series of lgamma about 2
    0.6449340668482264, 0.2020569031595943, 0.08232323371113819, 0.03692775514336993,
    0.01734306198444914, 0.008349277381922827, 0.00407735619794434, 0.0020083928260822143,
    0.0009945751278180853, 0.0004941886041194645, 0.0002460865533080483, 0.00012271334757848915,
    6.124813505870483e-05, 3.058823630702049e-05, 1.528225940865187e-05, 7.637197637899763e-06,
    3.81729326499984e-06, 1.908212716553939e-06, 9.539620338727962e-07, 4.769329867878064e-07,
    2.38450502727733e-07, 1.1921992596531106e-07, 5.960818905125948e-08, 2.980350351465228e-08,
    1.4901554828365043e-08, 7.45071178983543e-09, 3.725334024788457e-09, 1.862659723513049e-09,
    9.313274324196682e-10, 4.656629065033784e-10, 2.3283118336765053e-10, 1.164155017270052e-10,
    5.820772087902701e-11, 2.9103850444971e-11, 1.4551921891041985e-11, 7.275959835057482e-12,
    3.637979547378651e-12, 1.818989650307066e-12, 9.094947840263888e-13, 4.547473783042154e-13,
)


DIGAMMA_AT_ZERO = (  # psi^(j)(x0) / j! for j = 1, 2, ...: digamma's series about its zero x0
    0.9676722454476212, -0.4427631689835921, 0.258499760955651, -0.16394270544240652,
    0.10782405069126237, -0.07219956125645471, 0.04880428816414311, -0.03316112647484736,
    0.022597648232218104, -0.01542476590494896, 0.010538791616612175, -0.007204534386356869,
    0.004926781395729853, -0.003369801655439328, 0.002305126326734928, -0.0015769367714301972,
    0.0010788252019162967, -0.0007380709389960052, 0.000504953265834602, -0.0003454680251063077,
    0.00023635601564027053, -0.00016170622091974803, 0.0001106337276874741, -7.569179582195066e-05,
    5.178575795222081e-05, -3.5430070947659604e-05, 2.424006611860132e-05, -1.6584242271854135e-05,
    1.134638458466385e-05, -7.762817668462094e-06, 5.3110609208898636e-06, -3.6336507898010456e-06,
    2.486022733129538e-06, -1.7008538854332607e-06, 1.1636675363548843e-06, -7.96142543124197e-07,
    5.446941930669446e-07, -3.7266161283438227e-07, 2.549626552021554e-07, -1.7443695117727745e-07,
    1.1934394829830244e-07, -8.165115189488409e-08, 5.586299683532171e-08, -3.821960061917494e-08,
    2.6148576951961865e-08, -1.788998486491149e-08, 1.2239731403233662e-08, -8.37401629767179e-09,
    5.729222859849993e-09, -3.9197433359423324e-09,
)


def _digamma(x: float) -> float:
    # psi(x): reflection psi(x) = psi(1 - x) - pi / tan(pi x) for x < 0; below 4 the
    # recurrence psi(x) = psi(x + 1) - 1/x into [1, 2) and the series about the zero there;
    # from 4 on the recurrence up to x >= 10 (psi > 1.2 there: the terms cancel little), then
    # the asymptotic series log x - 1/(2x) - sum B_2k / (2k x**2k), whose terms past the
    # seventh are below 1e-17 there.
    result = 0.0
    if x < 0.0:  # cot(pi x), as in _polygamma: exactly 0 at a half-integer
        t = x - round(x)
        cot = (1.0 / math.tan(math.pi * t) if math.fabs(t) <= 0.25
               else math.copysign(math.tan(math.pi * (0.5 - math.fabs(t))), t))
        result = -math.pi * cot
        x = 1.0 - x
    if x < 4.0:
        # the recurrence into [1, 2) (down: x - 1 is exact, and every 1/x is added), then the
        # series about digamma's zero x0, |z| <= 0.54: exact relatively at the zero (where the
        # recurrence up to 10 cancelled to 8e-16 absolutely), and no sum of terms of both signs
        # a few times larger than the answer (1.4 times the bound at x = 0.3 and 3.1)
        while x < 1.0:
            result -= 1.0 / x
            x += 1.0
        while x >= 2.0:
            x -= 1.0
            result += 1.0 / x
        z = (x - 1.4616321449683622) - 9.549995429965697e-17  # x0 in two parts
        total = 0.0
        for coefficient in reversed(DIGAMMA_AT_ZERO):
            total = total * z + coefficient
        return result + total * z
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    t = 1.0 / (x * x)
    series = t * (1.0 / 12 - t * (1.0 / 120 - t * (1.0 / 252 - t * (
        1.0 / 240 - t * (1.0 / 132 - t * (691.0 / 32760 - t / 12.0))))))
    return result + math.log(x) - 0.5 / x - series


def _polygamma(n: float, x: float) -> float:
    # psi^(n)(x), the n-th derivative of digamma, for an integer n >= 0 (the domain check):
    # for x < 0 the reflection psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) cot^(n)(pi x), with
    # cot^(n) a polynomial in cot (P_0 = c, P_k+1 = -(1 + c^2) P_k'); then the recurrence
    # psi^(n)(x) = psi^(n)(x + 1) + (-1)^(n+1) n! / x^(n+1) up to x >= n + 15, and the
    # asymptotic series (-1)^(n+1) [(n-1)!/x^n + n!/(2 x^(n+1))
    #                               + sum B_2k (2k+n-1)! / ((2k)! x^(2k+n))].
    # its row's domain, up to the order of the largest order's derivative (its rule's, on numbers)
    _refuse(order_problem("polygamma", n, MAX_POLYGAMMA_ORDER + 1) or not_a_pole(x))
    n = int(n)
    result, sign = 0.0, 1.0
    if x < 0.0:
        # P_n's coefficients are whole numbers of one sign, past 2**53 from n = 22 on: made as
        # ints, each rounded once (in floats each step rounded them again, ~n ulps in all)
        poly = [0, 1]
        for _ in range(n):
            derived = [k * poly[k] for k in range(1, len(poly))] + [0, 0]
            poly = [-derived[k] - (derived[k - 2] if k >= 2 else 0)
                    for k in range(len(derived))]
        # cot(pi x) from t = x - round(x) in [-1/2, 1/2] (exact): 1/tan(pi t) near 0, and
        # tan(pi (1/2 - |t|)) (1/2 - |t| exact) near +-1/2, where it is exactly 0 at a
        # half-integer: 1/tan(pi/2) would be 6e-17, which the polynomial multiplies by n!.
        t = x - round(x)
        c = (1.0 / math.tan(math.pi * t) if math.fabs(t) <= 0.25
             else math.copysign(math.tan(math.pi * (0.5 - math.fabs(t))), t))
        cot = 0.0
        for coefficient in reversed(poly):
            cot = cot * c + float(coefficient)
        # pi**(n + 1) of the float pi is (n + 1) times its rounding off (0.18 ulp each): the
        # rest of pi, 1.2246467991473532e-16, put back to first order
        result = -math.pi ** (n + 1) * (1.0 + (n + 1) * 3.8981718325193755e-17) * cot
        sign = -1.0 if n % 2 else 1.0
        x = 1.0 - x
    factorial = float(math.factorial(n))
    odd = 1.0 if n % 2 else -1.0  # (-1)^(n+1)
    total = 0.0
    while x < n + 15.0:
        total += odd * factorial / x ** (n + 1)
        x += 1.0
    bernoulli = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6,
                 -3617.0 / 510, 43867.0 / 798, -174611.0 / 330)
    inverse = 1.0 / x  # powers of 1/x underflow to 0 where powers of x would overflow
    if n == 0:
        total += math.log(x) - 0.5 * inverse
        for k, b in enumerate(bernoulli, 1):
            total -= b / (2 * k) * inverse ** (2 * k)
    else:
        # x**-n times the series in 1/x, x**-n in two halves: (1/x)**n underflows (1e-4**98)
        # where the whole, (n - 1)!/x**n, does not, and 1/x's rounding would be taken n times
        series = math.factorial(n - 1) + factorial / 2.0 * inverse
        for k, b in enumerate(bernoulli, 1):
            series += (b * math.factorial(2 * k + n - 1) / math.factorial(2 * k)
                       * inverse ** (2 * k))
        total += odd * (series * x ** -(n // 2)) * x ** -(n - n // 2)
    return result + sign * total


def _gelu(x: float) -> float:
    # x * Phi(x), Phi the normal CDF, as 0.5 x erfc(-x / sqrt 2): no 1 + erf cancellation.
    return 0.5 * x * math.erfc(-x * 0.7071067811865476)


def _gelu_tanh(x: float) -> float:
    # 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): no cancellation.
    u = 1.5957691216057308 * (x + 0.044715 * x * x * x)
    if u >= 0.0:
        return x / (1.0 + math.exp(-u))
    z = math.exp(u)
    return x * z / (1.0 + z)


def _silu(x: float) -> float:
    # x * sigmoid(x), the sigmoid in two branches so that exp never overflows.
    if x >= 0.0:
        return x / (1.0 + math.exp(-x))
    z = math.exp(x)
    return x * z / (1.0 + z)


def _mish(x: float) -> float:
    # x * tanh(softplus(x)), softplus as max(x, 0) + log1p(e**-|x|).
    return x * math.tanh(max(x, 0.0) + math.log1p(math.exp(-math.fabs(x))))


def _elu(x: float) -> float:
    return x if x > 0.0 else math.expm1(x)


def _selu(x: float) -> float:
    # The self-normalising constants of Klambauer et al. (2017), as PyTorch and JAX have them.
    if x > 0.0:
        return 1.0507009873554805 * x
    return 1.0507009873554805 * 1.6732632423543772 * math.expm1(x)


def _leaky_relu(x: float, a: float) -> float:
    return x if x > 0.0 else a * x


def _softsign(x: float) -> float:
    return x / (1.0 + math.fabs(x))


def _clip(x: float, lo: float, hi: float) -> float:
    _refuse(ordered_bounds(x, lo, hi))
    return min(max(x, lo), hi)


def _refuse(problem: str | None) -> None:
    """Raise a domain check's problem: where math would compute a number the function has
    none, it refuses as gradcli eval does (special.py's docstring)."""
    if problem is not None:
        raise ValueError(problem)


def _hardtanh(x: float) -> float:
    return min(max(x, -1.0), 1.0)


def _floor(x: float) -> float:
    return float(math.floor(x))


def _ceil(x: float) -> float:
    return float(math.ceil(x))


def _round(x: float) -> float:
    return float(round(x))  # half to even, as Python and NumPy round


def _trunc(x: float) -> float:
    return float(math.trunc(x))


def _mod(x: float, y: float) -> float:
    return x % y  # the sign of y, as Python, NumPy's mod and PyTorch's remainder


def _rsqrt(x: float) -> float:
    return 1.0 / math.sqrt(x)


def _square(x: float) -> float:
    return x * x


def _reciprocal(x: float) -> float:
    return 1.0 / x


def _beta(a: float, b: float) -> float:
    # Gamma(a) (Gamma(b) / Gamma(a + b)), a <= b, below b = 10 (the quotient stays moderate,
    # and no gamma overflows); beyond, exp(lbeta), lbeta from _lbeta_far: Gamma(b)/Gamma(a + b)
    # of a tiny a is a ratio near 1 of two large gammas, each a few ulps off. Below a = 1 it is
    # exp(log(a B))/a, lgamma(1 + a) in place of lgamma(a) = lgamma(1 + a) - log(a): lbeta
    # itself is about -log(a) there (690 at a = 1e-300), and exp takes its rounding that many
    # times (65 ulps at a = 1e-150), where log(a B) is small and 1/a exact to an ulp.
    _refuse(positive_pair(a, b))
    a, b = min(a, b), max(a, b)
    if a >= 1e-300 and b < 10.0:
        return math.gamma(a) * (math.gamma(b) / math.gamma(a + b))
    if a < 1.0:
        return math.exp(_lbeta_far(a, b, _lgamma(1.0 + a))) / a
    return math.exp(_lbeta_far(a, b, _lgamma(a)))


def _lbeta(a: float, b: float) -> float:
    _refuse(positive_pair(a, b))
    a, b = min(a, b), max(a, b)
    if a >= 1e-300 and b < 10.0:
        return math.log(math.gamma(a) * (math.gamma(b) / math.gamma(a + b)))
    return _lbeta_far(a, b, _lgamma(a))


def _lbeta_far(a: float, b: float, lgamma_a: float) -> float:
    # log B(a, b), a <= b, from b = 10 on or where a is tiny. lgamma(a) + lgamma(b) -
    # lgamma(a + b) would cancel (lgamma(1e10) is 2e11, lbeta(1, 1e10) is -23), so Stirling's
    # lgamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + d(x), d its correction series (x >= 10),
    # is subtracted by hand, s = a + b:
    #   a >= 10: log(2 pi)/2 - log(s)/2 + (a - 1/2) log(a/s) + (b - 1/2) log(b/s)
    #            + d(a) + d(b) - d(s), every log term negative (nothing cancels);
    #   a < 10:  lgamma(a) - a log s + b (u - log1p(u)) + log1p(u)/2 + d(b) - d(s), u = a/b,
    #            u - log1p(u) by its series below 1/2 (it is about u^2/2).
    # (``lgamma_a`` is lgamma(a), or lgamma(1 + a) for log(a B(a, b)): _beta's)
    if b < 10.0:  # a tiny: lgamma(b) - lgamma(a + b) is small, and so is its rounding
        return lgamma_a + (_lgamma(b) - _lgamma(a + b))
    s = a + b
    corrections = []
    for x in (a, b, s):
        t = 1.0 / (x * x) if x >= 10.0 else 0.0
        corrections.append((1.0 / 12 - t * (1.0 / 360 - t * (1.0 / 1260 - t * (
            1.0 / 1680 - t * (1.0 / 1188 - t * (691.0 / 360360 - t / 156.0)))))) / x
                           if x >= 10.0 else 0.0)
    correction = corrections[1] - corrections[2]
    if a >= 10.0:
        return (0.9189385332046728 - 0.5 * math.log(s) - (a - 0.5) * math.log1p(b / a)
                - (b - 0.5) * math.log1p(a / b) + corrections[0] + correction)
    u = a / b
    if u < 0.5:
        rest, power, k = 0.0, u * u, 2
        while power > 1e-17 * u * u:
            rest += power / k if k % 2 == 0 else -power / k
            power *= u
            k += 1
    else:
        rest = u - math.log1p(u)
    return (lgamma_a - a * math.log(s) + b * rest + 0.5 * math.log1p(u) + correction)
