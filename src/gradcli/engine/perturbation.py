"""How far NumPy's results may be from the scalar path's, and a ``Perturbation`` of that size.

NumPy's transcendental functions are not libm's: they may round differently, a few units in the
last place (``SAME_BITS`` lists the ops that give the scalar path's bits exactly). A
``Perturbation`` makes every other result (and every derivative rule that calls one) a little
wrong on purpose, reproducibly, so that a caller can see how much such differences change the
output at each point (``gradcheck/sweep.py`` re-runs the points where they matter on the scalar
path).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from gradcli.engine.ops import GELU_TANH_SCALE, NONE, Op

# Ops whose NumPy form gives exactly the scalar path's bits from the same operands: IEEE 754
# rounds + - * / and sqrt correctly in both, and the others (the piecewise ops too) are exact.
# (An op without a vector form runs its float function point by point: the same bits too.)
SAME_BITS = frozenset({"add", "sub", "mul", "div", "neg", "sqrt", "abs", "sign", "relu", "min",
                       "max", "var", "const", "square", "reciprocal", "rsqrt", "softsign",
                       "deg2rad", "rad2deg", "floor", "ceil", "round", "trunc", "mod", "clip",
                       "hardtanh", "leaky_relu", "lt", "le", "gt", "ge", "eq", "ne",
                       "logical_and", "logical_or", "logical_not", "where"})
# How far apart NumPy's and libm's results of one other op may be, relative, in units of eps
# (2**-52; an ulp of a result is at most eps times it). NumPy's SIMD functions (SVML on AVX-512)
# are within 4 ulp, glibc's within 1 or 2; measured differences are at most 2. NumPy's sigmoid is
# another formula, exp(-logaddexp(0, -x)): rounding logaddexp's result to a float costs up to
# half an ulp of |x|, |x| / 2 eps relative after exp, where |x| < 40 (measured: 17 eps at -33).
DISAGREEMENT = 8.0
# Ops whose NumPy form goes through that sigmoid or softplus (softplus's derivative is the
# sigmoid), and gelu_tanh, whose sigmoid's argument is scale * (x + 0.044715 x**3).
_WIDER = {"sigmoid", "softplus", "silu", "mish", "gelu_tanh"}
# max(x, y) + a log1p term: the term's few ulps, relative to a sum that may be far smaller (the
# two cancel where the result is near 0); their derivatives are sigmoids of x - y.
_SUMS = {"logaddexp", "logaddexp2"}
EPS_UNITS = 2.0**-52  # amplitudes are in units of eps


def same_bits(op: Op) -> bool:
    """Whether NumPy computes ``op`` with exactly the scalar path's rounding."""
    return op.name in SAME_BITS or op.vector is NONE


def amplitude(np: Any, op: Op, args: list[Any]) -> Any:
    """How far (relative, in eps) NumPy's result of ``op`` at ``args`` may be from libm's."""
    if op.name in _WIDER:
        x = args[0]
        if x is None:
            return DISAGREEMENT + 20.0
        if op.name == "gelu_tanh":
            x = GELU_TANH_SCALE * (x + 0.044715 * x * x * x)
        return DISAGREEMENT + np.minimum(np.abs(x), 40.0) / 2.0
    if op.name in _SUMS:
        x, y = args
        if x is None or y is None:  # not kept: as if the sum had cancelled to a millionth
            return DISAGREEMENT * 1e6
        result = op.apply_vector(x, y)
        term = np.abs(result - np.maximum(x, y))
        wider = np.minimum(np.abs(x - y), 40.0) / 2.0
        return DISAGREEMENT * (1.0 + term / np.maximum(np.abs(result), 1e-300)) + wider
    return DISAGREEMENT


class Perturbation:
    """Each result it is given, times 1 + s * amplitude * eps with s = +1 or -1, s pseudo-random
    per point and per place (node, or derivative rule) but a function of the point's
    coordinates and ``run`` alone: the same point is perturbed the same way in any sweep.

    Running a program with perturbations of the size by which NumPy and libm may differ, and
    comparing with the plain run, shows how much those differences can change each output
    (Monte Carlo arithmetic, D. S. Parker 1997): a difference of a few ulp that the program
    amplifies a millionfold shows up as a millionfold change.
    """

    def __init__(self, np: Any, columns: Mapping[str, Any], size: int, run: int = 0,
                 nodes: Collection[int] | None = None) -> None:
        self.np = np
        self.nodes = None if nodes is None else frozenset(nodes)  # None: every node
        seeds = _mix(np, np.full(size, 0x9E3779B97F4A7C15 * (run + 1) % 2**64, dtype=np.uint64))
        for name in sorted(columns):
            bits = np.ascontiguousarray(np.broadcast_to(
                np.asarray(columns[name], dtype=float), (size,))).view(np.uint64)
            seeds = _mix(np, seeds ^ bits)
        self.seeds = seeds

    def covers(self, node: int) -> bool:
        """Whether results of node ``node`` (its value, its derivative rules) are perturbed."""
        return self.nodes is None or node in self.nodes

    def __call__(self, value: Any, place: int, amplitude: Any) -> Any:
        np = self.np
        odd = np.uint64((2 * place + 1) * 0xD1B54A32D192ED03 % 2**64)
        sign = (self.seeds * odd) >> np.uint64(63)  # 0 or 1
        factor = 1.0 + (1.0 - 2.0 * sign) * (amplitude * EPS_UNITS)
        return value * factor


def _mix(np: Any, z: Any) -> Any:
    """SplitMix64's finaliser: every bit of the result depends on every bit of ``z``."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))
