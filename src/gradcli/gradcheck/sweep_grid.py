"""A sweep's grid: every combination of the swept values (the first varying slowest), checked
against the size limits up front and made a block of points at a time."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gradcli.engine.graph import Program
from gradcli.engine.ops import numpy
from gradcli.errors import UsageError
from gradcli.gradcheck.evaluation import require_values
from gradcli.language.values import Value, validate_values
from gradcli.limits import MAX_SWEEP_CELLS, MAX_SWEEP_POINTS, SWEEP_BLOCK_CELLS, SWEEP_BLOCK_POINTS


@dataclass(frozen=True)
class SweepPlan:
    """A validated grid: the swept values of each variable (``axes``, first varies slowest), the
    fixed ones, and its size. Its points are made a block at a time (``blocks``)."""

    program: Program
    axes: dict[str, Any]  # name -> array of its values (the swept variables, in grid order)
    fixed: dict[str, float]  # every other input variable of the program: given or its default
    size: int

    def blocks(self, points: int | None = None) -> Iterator[dict[str, Any]]:
        """The grid's points, ``points`` at a time (``block_points`` by default): one array per
        input variable of the program, in the program's order."""
        np = numpy()
        step_ = points or block_points(self.program)
        for start in range(0, self.size, step_):
            count = min(self.size, start + step_) - start
            given = {}
            rest = np.arange(start, start + count)
            for name, axis in reversed(self.axes.items()):  # the last one varies fastest
                rest, at = np.divmod(rest, axis.size)
                given[name] = axis[at]
            yield {name: given[name] if name in given else np.full(count, self.fixed[name])
                   for name in self.program.variables}


def sweep_plan(program: Program, values: Mapping[str, Value], *,
               max_points: int = MAX_SWEEP_POINTS, max_cells: int = MAX_SWEEP_CELLS) -> SweepPlan:
    """The grid of ``values`` for ``program`` (names it does not use ignored), checked: a
    UsageError for a value that is not a finite number, a variable with no value, or a grid past
    ``max_points`` points or ``max_cells`` points x nodes (a cluster allows more)."""
    np = numpy()
    validate_values(values)
    if program.arrays or any(hasattr(value, "ndim") for value in values.values()):
        what = "several outputs" if program.outputs else "arrays"
        raise UsageError(f"sweeps vary scalar programs; this one has {what}",
                         hint="evaluate an array program one point at a time (a batch: "
                              "gradcli eval - with one program per line)")
    used = {name: value for name, value in values.items() if name in program.variables}
    require_values(program, used)
    count = math.prod(len(v) if isinstance(v, tuple) else 1 for v in used.values())
    if count > max_points:
        raise UsageError(f"the sweep has {count:,} points; at most {max_points:,} fit",
                         hint="use fewer values per variable")
    nodes = len(program.nodes)
    if count * nodes > max_cells:
        raise UsageError(
            f"the sweep has {count:,} points of a {nodes:,}-node program: {count * nodes:,} "
            f"cells (points x nodes); at most {max_cells:,} fit",
            hint="use fewer values per variable, or sweep a smaller program")
    axes = {name: np.asarray(value, dtype=float) for name, value in used.items()
            if isinstance(value, tuple)}
    fixed = {name: float(used.get(name, program.defaults.get(name, math.nan)))
             for name in program.variables if name not in axes}
    return SweepPlan(program, axes, fixed, count)


def block_points(program: Program) -> int:
    """Points evaluated at a time: at most ``SWEEP_BLOCK_POINTS``, and at most
    ``SWEEP_BLOCK_CELLS`` points x nodes (the check keeps every node's value of a block)."""
    return max(1, min(SWEEP_BLOCK_POINTS, SWEEP_BLOCK_CELLS // max(1, len(program.nodes))))


def sweep_columns(program: Program, values: Mapping[str, Value]) -> dict[str, Any]:
    """The whole grid of ``values`` as one array per input variable of ``program`` (defaults
    filled in): every point at once, for small grids and tests (``SweepPlan.blocks`` streams)."""
    plan = sweep_plan(program, values)
    return next(plan.blocks(plan.size))
