"""Finite-difference verification of reverse-mode gradients.

For a node with value v, d(output)/d(node) is estimated by central differences,
(f(v + h) - f(v - h)) / 2h with h = eps^(1/3) * max(1, |v|) (the step that balances truncation
error, O(h^2), against rounding error, O(eps/h)). Only the nodes downstream of the perturbed one
are recomputed (``graph.replay``). Where v - h or v + h leaves the domain (sqrt near 0), a
second-order one-sided difference is used instead.

A gradient passes when |analytic - numeric| <= atol + rtol * max(|analytic|, |numeric|) + noise,
where noise = 16 * eps * M / h is the rounding error the difference itself can carry (M is the
largest magnitude among the recomputed values): without it, ``1e8 + x`` would "fail" because the
difference quotient of numbers near 1e8 cannot resolve 1e-8. If a step disagrees, a step 16 times
smaller is tried (its truncation error is 256 times smaller; the noise allowance grows with 1/h),
up to ``SHRINKS`` times and never past the step where the noise allowance alone would exceed the
user's tolerance (so the allowance can never wave a wrong gradient through). Thus sqrt(x) at
x = 1e-7 -- a function that changes on a scale far below h -- is not reported as a wrong
gradient, while a wrong gradient disagrees at every step.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

from .errors import NumericError
from .graph import Node, Program, replay
from .limits import CHECK_BUDGET

EPS = sys.float_info.epsilon
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-8
# Above this many nodes the per-node check (one replay per node: quadratic) is skipped.
NODE_CHECK_LIMIT = 300
SHRINKS = 8  # smaller steps tried after a disagreement: down to h / 16**8
_NOISE_FACTOR = 16.0


@dataclass
class GradientCheck:
    """One gradient compared with its finite-difference estimate."""

    analytic: float
    numeric: float | None  # None when no difference could be evaluated (domain on both sides)
    abs_error: float | None
    tolerance: float
    ok: bool
    method: str  # "central", "forward" or "backward"
    step: float


@dataclass
class CheckReport:
    """The verdict of the finite-difference check of one evaluated program."""

    rtol: float
    atol: float
    gradients: dict[str, GradientCheck] = field(default_factory=dict)  # by input variable
    nodes: dict[int, GradientCheck] = field(default_factory=dict)  # by node id, when run
    nodes_skipped: bool = False  # True when the graph was too large for the per-node check
    unchecked: list[str] = field(default_factory=list)  # variables past the check's budget

    @property
    def checks(self) -> list[GradientCheck]:
        """Every check once (a variable's node shares its check with ``gradients``)."""
        unique = {id(c): c for c in (*self.gradients.values(), *self.nodes.values())}
        return list(unique.values())

    @property
    def failures(self) -> list[GradientCheck]:
        return [check for check in self.checks if not check.ok]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def max_abs_error(self) -> float:
        return max((c.abs_error for c in self.checks if c.abs_error is not None), default=0.0)


def check_gradients(
    program: Program,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    node_check_limit: int = NODE_CHECK_LIMIT,
    budget: int = CHECK_BUDGET,
) -> CheckReport:
    """Compare every gradient of an evaluated program (forward and backward done) with FD.

    Each variable costs two replays of the nodes downstream of it; the first variable is always
    checked, and once ``budget`` node recomputations are spent the remaining variables are listed
    in ``unchecked`` (a sum of 10^5 distinct variables would otherwise take hours).
    """
    report = CheckReport(rtol, atol)
    nodes = program.nodes
    spent = 0
    for name, node in program.variables.items():
        cost = 2 * (len(nodes) - node.index)
        if report.gradients and spent + cost > budget:
            report.unchecked.append(name)
            continue
        spent += cost
        report.gradients[name] = check_node(nodes, node, rtol, atol)
    if len(nodes) > node_check_limit or report.unchecked:
        report.nodes_skipped = True
        return report
    for node in nodes:
        if node.needs_grad:
            known = report.gradients.get(str(node.name)) if node.is_leaf else None
            report.nodes[node.index] = known or check_node(nodes, node, rtol, atol)
    return report


def check_node(nodes: list[Node], node: Node, rtol: float, atol: float) -> GradientCheck:
    """d(output)/d(node) by finite differences, compared with ``node.grad``."""
    base = EPS ** (1.0 / 3.0) * max(1.0, abs(node.value))
    tried: list[GradientCheck] = []
    for step in (base / 16.0**k for k in range(SHRINKS + 1)):
        check, noise = _estimate(nodes, node, step, rtol, atol)
        if check.ok:
            return check
        if tried and noise > check.tolerance - noise:  # noise would dominate the tolerance
            break
        tried.append(check)
    return min(tried, key=lambda c: math.inf if c.abs_error is None else c.abs_error)


def _estimate(
    nodes: list[Node], node: Node, h: float, rtol: float, atol: float
) -> tuple[GradientCheck, float]:
    """The check at step ``h`` and the rounding-noise allowance included in its tolerance."""
    analytic = node.grad
    estimate = _difference(nodes, node, h)
    if estimate is None:
        return GradientCheck(analytic, None, None, 0.0, False, "none", h), 0.0
    numeric, method, largest = estimate
    error = abs(analytic - numeric)
    noise = _NOISE_FACTOR * EPS * largest / h
    tolerance = atol + rtol * max(abs(analytic), abs(numeric)) + noise
    return GradientCheck(analytic, numeric, error, tolerance, error <= tolerance, method, h), noise


def _difference(nodes: list[Node], node: Node, h: float) -> tuple[float, str, float] | None:
    """(estimate, method, largest recomputed magnitude), or None if no difference evaluates."""
    v, i = node.value, node.index
    f0 = nodes[-1].value
    attempts = (
        ("central", (v + h, v - h), lambda a, b: (a - b) / (2.0 * h)),
        # second-order one-sided differences: (-3 f0 + 4 f(v ± h) - f(v ± 2h)) / ±2h
        ("forward", (v + h, v + 2.0 * h), lambda a, b: (4.0 * a - b - 3.0 * f0) / (2.0 * h)),
        ("backward", (v - h, v - 2.0 * h), lambda a, b: (3.0 * f0 - 4.0 * a + b) / (2.0 * h)),
    )
    for method, (first, second), formula in attempts:
        try:
            fa, largest_a = replay(nodes, i, first)
            fb, largest_b = replay(nodes, i, second)
        except NumericError:
            continue
        estimate = formula(fa, fb)
        if not math.isfinite(estimate):  # f(v + h) - f(v - h) overflowed (values near 1e308)
            continue
        largest = max(largest_a, largest_b, abs(f0))
        return estimate, method, largest
    return None
