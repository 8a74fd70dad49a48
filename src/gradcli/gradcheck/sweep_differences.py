"""The finite-difference check of a sweep's gradients: each variable at every point at once,
with the step policy of the check at one point (``steps``), and the points where the scalar
path's check could judge otherwise marked unsure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradcli.engine.graph import Node, Program
from gradcli.engine.ops import numpy
from gradcli.engine.perturbation import Perturbation
from gradcli.engine.vector import evaluate_vector
from gradcli.gradcheck.steps import Sample, base_step, first_stencil, noise_allowance, settle
from gradcli.gradcheck.sweep_results import RUNS, SAFETY, GradientSweepCheck, Sweep

# A stencil's estimate moves by at most (sum of |weights|) / 2 = 4 (one-sided) times the change
# of f, divided by h.
_STENCIL_GAIN = 4.0


def check_variable(sweep: Sweep, node: Node, rtol: float, atol: float) -> GradientSweepCheck:
    """Finite differences for one variable at every point, with ``check.check_node``'s policy
    (``steps.settle``): a point that disagrees is retried with a smaller step until it agrees,
    the steps run out or the step is swamped, and keeps its closest estimate.

    Where ``sweep.unsure`` is measured, a point whose verdict at some step could go the other
    way on the scalar path is marked unsure (``_mark_close_calls``)."""
    np = numpy()
    name = str(node.name)
    downstream = _downstream(sweep.program, node)

    def judged(rows: Any, h: Any, shrink: int, numeric: Any, error: Any, allowed: Any,
               largest: Any, stencils: Any) -> None:
        _mark_close_calls(sweep, name, downstream, rows, h, shrink, rtol,
                          _Judged(numeric, error, allowed, noise_allowance(largest, h), stencils))

    found = settle(sweep.gradients[name], base_step(sweep.columns[name], np.maximum),
                   sweep.value, _sampler(sweep, name, downstream), np.flatnonzero(~sweep.failed),
                   rtol, atol, judged)
    return GradientSweepCheck(found.numeric, found.error, found.tolerance, found.ok)


@dataclass
class _Judged:
    """One step of the check at some points: estimate, error, tolerance, noise allowance and
    the stencil used (index into ``STENCILS``; -1: none evaluated)."""

    numeric: Any
    error: Any
    allowed: Any
    noise: Any
    stencils: Any

    def __getitem__(self, at: Any) -> _Judged:
        return _Judged(self.numeric[at], self.error[at], self.allowed[at], self.noise[at],
                       self.stencils[at])

    def close(self, doubt: Any, shrink: int, rtol: float) -> Any:
        """Where moving the estimate and the gradient by up to ``doubt`` could change the
        verdict: |error - tolerance| (agrees) or, after a shrink, |tolerance - 2 noise|
        (swamped; the tolerance moves by rtol times as much) within ``doubt``."""
        np = numpy()
        close = np.abs(self.error - self.allowed) <= doubt
        if shrink > 0:
            close |= np.abs(self.allowed - 2.0 * self.noise) <= rtol * doubt
        return close


def _mark_close_calls(sweep: Sweep, name: str, downstream: list[int], rows: Any, h: Any,
                      shrink: int, rtol: float, judged: _Judged) -> None:
    """Mark unsure the points where the scalar check could judge this step otherwise.

    The verdict compares |gradient - estimate| with a tolerance; the scalar path's gradient is
    within ``gradient_spreads`` of NumPy's, and its estimate differs by what the two paths'
    values of f at the shifted points differ by, over h. First a rough bound: f off by
    ``value_spread`` at each shifted point, independently. Where that could flip the verdict,
    the estimate is computed again with the ops downstream of the variable perturbed
    (``perturbation.Perturbation``; what does not depend on the variable shifts both points
    alike and cancels) and the change, times ``SAFETY``, is the bound."""
    if sweep.unsure is None or sweep.value_spread is None or sweep.gradient_spreads is None:
        return
    np = numpy()
    gradient_doubt = sweep.gradient_spreads[name][rows]
    rough = (gradient_doubt + _STENCIL_GAIN * sweep.value_spread[rows] / h) * (1.0 + rtol)
    at = np.flatnonzero(judged.close(rough, shrink, rtol))
    if not at.size:
        return
    suspects, h = judged[at], h[at]
    moved, _, _ = first_stencil(_sampler(sweep, name, downstream, perturbed=True), sweep.value,
                                rows[at], h)
    with np.errstate(invalid="ignore", over="ignore"):
        shift = SAFETY * np.abs(moved - suspects.numeric)
        # a one-sided stencil also reads f at the point itself: -3 f / 2h
        shift += np.where(suspects.stencils > 0, 1.5 * sweep.value_spread[rows[at]] / h, 0.0)
        doubt = (gradient_doubt[at] + shift) * (1.0 + rtol)
        close = suspects.close(doubt, shrink, rtol) | ~np.isfinite(doubt)
    sweep.unsure[rows[at[close]]] = True


def _sampler(sweep: Sweep, name: str, downstream: list[int], perturbed: bool = False) -> Sample:
    """f at points of the sweep with ``name`` moved (``steps.Sample``); with ``perturbed``, the
    ops downstream of ``name`` perturbed (``_mark_close_calls``)."""

    def sample(rows: Any, offset: float, h: Any) -> tuple[Any, Any, Any]:
        with numpy().errstate(over="ignore"):  # past 1.8e308: inf, a failed replay
            moved = sweep.columns[name][rows] + offset * h
        return _replay(sweep, name, downstream, rows, moved, perturbed)

    return sample


def _replay(
    sweep: Sweep, name: str, downstream: list[int], rows: Any, moved: Any,
    perturbed: bool = False,
) -> tuple[Any, Any, Any]:
    """Output, largest downstream magnitude and failure mask with ``name`` moved to ``moved``
    (with ``perturbed``: the nodes ``downstream`` perturbed, as run ``RUNS``)."""
    np = numpy()
    columns = {key: column[rows] for key, column in sweep.columns.items()}
    columns[name] = moved
    perturbation = Perturbation(np, columns, rows.size, RUNS, downstream) if perturbed else None
    run = evaluate_vector(sweep.program, columns, gradients=False, every_node=True,
                          perturbation=perturbation)
    largest = np.abs(moved)
    for index in downstream:
        largest = np.maximum(largest, np.abs(run.values[index]))
    return run.output, largest, run.failed


def _downstream(program: Program, node: Node) -> list[int]:
    """Indices of the nodes that depend on ``node`` (one pass in topological order)."""
    depends = {node.index}
    for other in program.nodes[node.index + 1 :]:
        if any(source.index in depends for source in other.inputs):
            depends.add(other.index)
    return sorted(depends - {node.index})
