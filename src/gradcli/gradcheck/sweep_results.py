"""What a block of a sweep evaluates to (``Sweep``: values, gradients, the check at every
point), the agreement with the scalar path it is held to, and its points as JSON-ready records
and CSV rows."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gradcli.engine.graph import Program
from gradcli.engine.notation import format_number
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


# --- a sweep's points as JSON-ready records and CSV rows ------------------------------------------

def point_records(sweep: Sweep) -> Iterator[dict[str, Any]]:
    """Each point as a JSON-ready dict: point, value, gradients, check and error (or nulls);
    arrays become lists once, up front (NumPy scalars one by one would be slow)."""
    names = list(sweep.columns)
    columns = {name: sweep.columns[name].tolist() for name in names}
    values = sweep.value.tolist()
    gradients = {name: sweep.gradients[name].tolist() for name in names}
    failed = sweep.failed.tolist()
    checks = None if sweep.checks is None else {
        name: {"numeric": c.numeric.tolist(), "abs_error": c.abs_error.tolist(),
               "tolerance": c.tolerance.tolist(), "ok": c.ok.tolist()}
        for name, c in sweep.checks.items()}
    check_ok = sweep.check_ok.tolist()
    for i in range(sweep.size):
        point = {name: columns[name][i] for name in names}
        if failed[i]:
            error = sweep.errors.get(i)
            message = error.message if error else "a value or gradient is not finite"
            yield {"point": point, "value": None, "gradients": None, "check": None,
                   "error": {"kind": "domain", "message": message, "hint": None}}
            continue
        check = None if checks is None else {"ok": check_ok[i], "gradients": {
            name: {"numeric": _finite_or_none(c["numeric"][i]),
                   "abs_error": _finite_or_none(c["abs_error"][i]),
                   "tolerance": c["tolerance"][i], "ok": c["ok"][i]}
            for name, c in checks.items()}}
        yield {"point": point, "value": values[i],
               "gradients": {name: gradients[name][i] for name in names},
               "check": check, "error": None}


def csv_header(names: list[str]) -> list[str]:
    """The CSV header of a sweep over a program with these input variables."""
    return [*names, "value", *(f"d/d{name}" for name in names), "ok", "error"]


def csv_body(sweep: Sweep) -> Iterator[list[str]]:
    """One CSV row per point: variables, value, d/dNAME for each, ok, error."""
    names = list(sweep.columns)
    columns = [sweep.columns[name].tolist() for name in names]
    numbers = [sweep.value.tolist(), *(sweep.gradients[name].tolist() for name in names)]
    failed = sweep.failed.tolist()
    ok = sweep.check_ok.tolist()
    for i in range(sweep.size):
        coordinates = [format_number(column[i]) for column in columns]
        if failed[i]:
            yield [*coordinates, *[""] * len(numbers), "false", sweep.error_message(i)]
        else:
            verdict = "" if sweep.checks is None else ("true" if ok[i] else "false")
            yield [*coordinates, *(format_number(column[i]) for column in numbers), verdict, ""]


def csv_rows(sweep: Sweep) -> Iterator[list[str]]:
    """A header, then one row per point (``csv_header``, ``csv_body``)."""
    yield csv_header(list(sweep.columns))
    yield from csv_body(sweep)


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
