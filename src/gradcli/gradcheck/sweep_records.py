"""A sweep's points for machines: JSON-ready records and CSV rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from gradcli.engine.notation import format_number
from gradcli.gradcheck.sweep_results import Sweep


def point_records(sweep: Sweep) -> Iterator[dict[str, Any]]:
    """Each point as a JSON-ready dict: point, value, gradients, check (or null), error (or null).

    Arrays become Python lists once, up front: converting NumPy scalars one by one is what would
    make 100,000 records slow.
    """
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
