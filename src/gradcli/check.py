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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import NumericError
from .graph import Node, Program, forget_replays, replay

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
) -> CheckReport:
    """Compare every gradient of an evaluated program (forward and backward done) with FD."""
    report = CheckReport(rtol, atol)
    nodes = program.nodes
    per_node = len(nodes) <= node_check_limit
    targets = [n for n in nodes if n.needs_grad] if per_node else list(program.variables.values())
    passed = _central_at_once(program, targets, rtol, atol)
    for name, node in program.variables.items():
        report.gradients[name] = passed.get(node.index) or check_node(nodes, node, rtol, atol)
    if not per_node:
        report.nodes_skipped = True
        forget_replays()  # do not keep a large graph alive after its check
        return report
    for node in targets:
        known = report.gradients.get(str(node.name)) if node.is_leaf else None
        report.nodes[node.index] = (
            known or passed.get(node.index) or check_node(nodes, node, rtol, atol))
    forget_replays()
    return report


# Below this much scalar replay work (checked nodes x graph size) NumPy's import and per-call
# cost outweigh what it saves, unless NumPy is already loaded (a batch, a sweep).
_COLUMNS_ALWAYS, _COLUMNS_IF_LOADED = 200_000, 400


def _central_at_once(
    program: Program, targets: list[Node], rtol: float, atol: float
) -> dict[int, GradientCheck]:
    """The first step of ``check_node`` -- a central difference at the base step -- for every
    target in one vectorised replay (``vector.replay_columns``); only the checks that pass are
    returned, so anything else goes through ``check_node`` as before (smaller steps, one-sided
    differences near a domain edge, the exact scalar message)."""
    work = len(targets) * len(program.nodes)
    if work < _COLUMNS_IF_LOADED or (work < _COLUMNS_ALWAYS and "numpy" not in sys.modules):
        return {}
    from .vector import replay_columns

    steps = [EPS ** (1.0 / 3.0) * max(1.0, abs(node.value)) for node in targets]
    pinned = [node.index for node in targets] * 2
    shifted = [node.value + h for node, h in zip(targets, steps, strict=True)]
    shifted += [node.value - h for node, h in zip(targets, steps, strict=True)]
    replayed = replay_columns(program, pinned, shifted)
    outputs, largest = replayed.output.tolist(), replayed.largest.tolist()
    f0, count, passed = program.nodes[-1].value, len(targets), {}
    for k, (node, h) in enumerate(zip(targets, steps, strict=True)):
        most = max(largest[k], largest[k + count], abs(f0))
        if not math.isfinite(most):
            continue
        numeric = (outputs[k] - outputs[k + count]) / (2.0 * h)
        error = abs(node.grad - numeric)
        allowed = tolerance(node.grad, numeric, rtol, atol, noise_allowance(most, h))
        if error <= allowed:
            passed[node.index] = GradientCheck(
                node.grad, numeric, error, allowed, True, "central", h)
    return passed


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
    noise = noise_allowance(largest, h)
    allowed = tolerance(analytic, numeric, rtol, atol, noise)
    return GradientCheck(analytic, numeric, error, allowed, error <= allowed, method, h), noise


def noise_allowance(largest: Any, h: Any) -> Any:
    """Rounding error a difference quotient of values up to ``largest`` at step ``h`` can carry.

    Works on floats and, elementwise, on NumPy arrays (the vectorised sweep uses it too).
    """
    return _NOISE_FACTOR * EPS * largest / h


def tolerance(
    analytic: Any, numeric: Any, rtol: float, atol: float, noise: Any = 0.0,
    maximum: Callable[[Any, Any], Any] = max,
) -> Any:
    """atol + rtol * max(|analytic|, |numeric|) + noise: how far apart two gradients may be.

    ``maximum`` is ``max`` for floats and ``numpy.maximum`` for arrays.
    """
    return atol + rtol * maximum(abs(analytic), abs(numeric)) + noise


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
        largest = max(largest_a, largest_b, abs(f0))
        return formula(fa, fb), method, largest
    return None
