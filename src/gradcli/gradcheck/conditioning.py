"""Why a correct gradient can still fail the check: the program is ill-conditioned at the point.

Near a singular matrix no step is both small enough to follow the function and large enough to
beat rounding (``sum(inv(A))`` at A = [[1, 1], [1, 1.0001]] changes on a scale of 1e-4 while its
values reach 1e4). The check tells this apart from a wrong gradient (whose error stays at every
step) or a kink by the next, smaller step: there the disagreement shrank as truncation does and
is within that step's rounding allowance. The verdict names the largest 2-norm condition number
of a matrix that ``inv``, ``det`` or ``logdet`` takes, else the rounding amplification measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gradcli.engine.notation import finite_or_none

if TYPE_CHECKING:
    from gradcli.engine.graph import Program

MATRIX_OPS = ("inv", "det", "logdet")  # ops whose matrix's condition number bounds the error
# A smaller step explains the disagreement when its error is below this share of the earlier
# step's (truncation falls by 256 for a step 16 times smaller; a wrong gradient's does not move).
CONVERGED_SHARE = 0.25


@dataclass(frozen=True)
class Conditioning:
    """How ill-conditioned the program is at the point: a condition number and what it is of."""

    number: float
    matrix: str | None = None  # the matrix's text, or None: the amplification the check measured
    op: str | None = None  # the op that takes the matrix

    def record(self) -> dict[str, object]:
        """The JSON form: ``{"condition_number": ..., "matrix": "A" or null}`` (a number past
        the floats is null, as JSON has no infinity)."""
        return {"condition_number": finite_or_none(self.number), "matrix": self.matrix}

    def cause(self) -> str:
        """The verdict's words: why a correct gradient fails here."""
        of = (f"the condition number of {self.matrix} (which {self.op} takes) is "
              f"{self.number:.1e}" if self.matrix is not None else
              "the output is 0 here, so the rounding of the values it is computed from is all "
              "of it" if math.isinf(self.number) else
              f"rounding is amplified {self.number:.1e} times (the largest value the output is "
              "computed from, times its effect on the output, over the output)")
        return (f"the program is ill-conditioned at this point: {of}; the disagreement shrinks "
                "with the step as a correct gradient's does, but no step is both small enough "
                "to follow the function and large enough to beat rounding (the gradient may be "
                "right; check it nearer a well-conditioned point)")


# Rounding amplified at most this much (the largest value the output is computed from, over the
# output) is no ill-conditioning: a step swamped there is swamped by the tolerance's smallness.
QUIET = 10.0


def settles_quietly(error: Any, earlier: Any, agrees: Any, largest: Any, output: Any) -> Any:
    """Whether a swamped step's estimate settles the check all the same (element-wise for
    arrays): it agrees, the differences closed in on the gradient (its error below
    ``CONVERGED_SHARE`` of the best earlier step's, ``earlier``: NaN or inf for none), and
    rounding is not amplified (``QUIET``): what swamps it is a tolerance of 1e-8 at a gradient
    of 0 (relu(x)**2 + 1 at 0, where the differences close in only as h does)."""
    return _converged(error, earlier, agrees) & (largest / QUIET <= abs(output))  # (not
    # QUIET * |output|: it may overflow)


def _converged(error: Any, earlier: Any, agrees: Any) -> Any:
    """A swamped step's estimate agrees, and its error fell below ``CONVERGED_SHARE`` of the
    best earlier step's (``earlier``: NaN or inf for none): the differences closed in."""
    return agrees & (error <= CONVERGED_SHARE * earlier) & (earlier < math.inf)


def ill_conditioned(error: float, earlier: list[float], agrees_within_noise: bool,
                    largest: float, output: float) -> float | None:
    """The rounding amplification (the values a difference subtracts over the output) when a
    smaller step's estimate, swamped by rounding, explains the earlier steps' failure (its
    error fell below ``CONVERGED_SHARE`` of theirs); None when it does not."""
    if not _converged(error, min(earlier, default=math.nan), agrees_within_noise):
        return None
    return largest / abs(output) if output else math.inf  # 0: no digit of it is its own


def conditioning(program: Program, measured: float) -> Conditioning:
    """The largest 2-norm condition number of a matrix that inv/det/logdet takes and that
    depends on a variable (one NumPy cannot take is passed over); the check's ``measured``
    amplification where the program has none."""
    from gradcli.engine.graph import node_text
    from gradcli.engine.ops import numpy

    worst: tuple[float, str, str] | None = None
    for node in program.nodes:
        if node.op.name not in MATRIX_OPS or not node.inputs or not node.inputs[0].needs_grad:
            continue
        np = numpy()
        try:
            number = float(np.linalg.cond(np.asarray(node.inputs[0].value, dtype=float)))
        except (ValueError, TypeError, np.linalg.LinAlgError):
            continue
        if math.isfinite(number) and (worst is None or number > worst[0]):
            worst = (number, node_text(node.inputs[0]), node.op.name)
    if worst is None:
        return Conditioning(float(measured))
    return Conditioning(*worst)
