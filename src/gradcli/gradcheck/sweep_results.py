"""What a block of a sweep evaluates to (``Sweep``: values, gradients, the check at every
point) and the agreement with the scalar path it is held to (``sweep``'s docstring).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gradcli.engine.graph import Program
from gradcli.errors import ExitStatus, GradcliError
from gradcli.gradcheck.check import DEFAULT_ATOL, DEFAULT_RTOL

# Agreement with the scalar path (``sweep``'s docstring): a value or gradient whose perturbed runs
# move it by more than AGREEMENT relative, times SAFETY, is re-evaluated on the scalar path.
AGREEMENT = 1e-9
SAFETY = 16.0  # the runs' random signs can cancel what the worst case adds up
RUNS = 2


@dataclass
class GradientSweepCheck:
    """One input gradient compared with finite differences at every point (arrays of the size)."""

    numeric: Any  # nan where no difference could be evaluated
    abs_error: Any  # inf where no difference could be evaluated
    tolerance: Any
    ok: Any  # bool array


@dataclass
class Sweep:
    """A program evaluated at ``size`` points; every array is indexed by point."""

    program: Program
    columns: dict[str, Any]  # each input variable's coordinate at every point
    value: Any
    gradients: dict[str, Any]
    failed: Any  # bool: a value or gradient is not finite at that point
    errors: dict[int, GradcliError] = field(default_factory=dict)  # scalar message per failed point
    checks: dict[str, GradientSweepCheck] | None = None  # None: check not run
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    # Agreement with the scalar path (``sweep``'s docstring); None where not measured.
    unsure: Any = None  # bool: NumPy's result may differ too much from the scalar path's here
    value_spread: Any = None  # how far the value may be from the scalar path's (absolute)
    gradient_spreads: dict[str, Any] | None = None  # the same per gradient
    rechecked: int = 0  # unsure points re-evaluated on the scalar path
    unsettled: int = 0  # unsure points left as NumPy computed them (the budget ran out)

    @property
    def size(self) -> int:
        return int(self.failed.size)

    @property
    def check_ok(self) -> Any:
        """Bool per point: every gradient agrees with finite differences (False where failed)."""
        ok = ~self.failed
        for check in (self.checks or {}).values():
            ok = ok & check.ok
        return ok

    @property
    def status(self) -> ExitStatus:
        """3 if any point has a numeric error, else 1 if any check disagrees, else 0."""
        if self.failed.any():
            return ExitStatus.NUMERIC
        if self.checks is not None and not self.check_ok.all():
            return ExitStatus.CHECK_FAILED
        return ExitStatus.OK

    def point(self, index: int) -> dict[str, float]:
        return {name: float(column[index]) for name, column in self.columns.items()}

    def error_message(self, index: int) -> str:
        error = self.errors.get(index)
        return error.one_line() if error else "numeric error: a value or gradient is not finite"
