"""Checks of array programs (docs/arrays.md): one point at a time, element by element.

A check whose ``expr`` has arrays in it, or whose ``at`` gives an array, is evaluated at each
point of its grid by ``evaluate`` (the array path, with its per-element finite-difference check)
rather than as a vectorised sweep. ``gradients`` may be arrays (or a number every element must
equal), and a ``derivative`` expression may evaluate to an array of the gradient's shape. A
finding's worst point names the worst element (``W[1, 0] = 3``) beside the scalar variables.
"""

from __future__ import annotations

import time
from typing import Any

from gradcli.engine import arrays
from gradcli.engine.graph import Program
from gradcli.errors import ExitStatus, GradcliError, NumericError, UsageError
from gradcli.formulas.files import CheckSpec, Expected, Range
from gradcli.gradcheck.evaluation import EvalSettings, Result, evaluate
from gradcli.language.values import grid

MAX_ARRAY_CHECK_POINTS = 1_000  # each point is a whole evaluation with its per-element check


def run_array_check(spec: CheckSpec, outcome: Any, finding: Any) -> Any:
    """``run.run_check`` for an array check; ``outcome`` and ``finding`` are the classes
    ``CheckOutcome`` and ``Finding`` (formulas/run.py, which imports this module)."""
    started = time.perf_counter()
    values = {name: value.expand() if isinstance(value, Range) else value
              for name, value in spec.values.items() if name in spec.program.variables}
    names, points = grid(values)
    if len(points) > MAX_ARRAY_CHECK_POINTS:
        raise UsageError(f"check {spec.name!r} has {len(points):,} points; a check of an array "
                         f"program may have at most {MAX_ARRAY_CHECK_POINTS:,}",
                         hint="sweep fewer values")
    judge = _Judge(spec, finding)
    settings = EvalSettings(rtol=spec.rtol, atol=spec.atol)
    skipped = 0
    for combination in points:
        point = dict(zip(names, combination, strict=True))
        try:  # a UsageError (shapes that do not fit) is the check's error: run.run_check
            result = evaluate(spec.program, point, settings)
            judge.point(result.point, result)
        except NumericError as error:
            if spec.finite is False:
                skipped += 1
                continue
            judge.numeric(point, error)
    return outcome(spec, len(points), judge.findings(), skipped, time.perf_counter() - started)


class _Judge:
    """Collects every assertion's verdict over the points: failures and the worst one."""

    def __init__(self, spec: CheckSpec, finding: Any) -> None:
        self.spec, self.finding = spec, finding
        self.judged: dict[str, Any] = {}  # assertion -> (Finding, worst ratio)
        self.error: Any = None

    def numeric(self, point: dict[str, Any], error: GradcliError) -> None:
        if self.error is None:
            self.error = self.finding("finite", "expr", self.spec.line, 1, 1,
                                      worst_point=_scalars(point), message=error.message,
                                      status=ExitStatus.NUMERIC)
        else:
            self.error.points += 1
            self.error.failures += 1

    def point(self, point: dict[str, Any], result: Any) -> None:
        spec = self.spec
        if not isinstance(result, Result):  # several outputs or an array output: a Jacobian
            self._jacobian(point, result)
            return
        for name, check in (result.check.gradients.items() if result.check else ()):
            where = getattr(check, "where", ())
            actual = check.numeric if check.numeric is not None else float("nan")
            self._add(f"finite differences d/d{name}", f"gradients.{name}", point, name, where,
                      check.analytic, actual, check.tolerance)
        if spec.value is not None:
            expected = _expected(spec.value, point)
            self._compare("value", "value", point, None, expected, result.value)
        for name, expected in spec.gradients.items():
            self._compare(f"gradient d/d{name}", f"gradients.{name}", point, name, expected,
                          result.gradients[name])
        for name, expected in spec.derivative.items():
            self._compare(f"derivative d/d{name}", f"derivative.{name}", point, name,
                          _expected(expected, point), result.gradients[name])

    def _jacobian(self, point: dict[str, Any], result: Any) -> None:
        """The Jacobian's check (every block), ``value`` (the last output) and ``jacobian``."""
        spec = self.spec
        if spec.gradients or spec.derivative:
            raise UsageError(f"check {spec.name!r}: gradients and derivative are of one scalar "
                             "output; this expr has several outputs or an array output",
                             hint="assert its Jacobian: jacobian = {f = {x = ...}}")
        for label, row in (result.check.blocks.items() if result.check else ()):
            for name, entry in row.items():
                allowed = spec.atol + spec.rtol * max(abs(entry.analytic), abs(entry.numeric))
                self._add(f"finite differences {_d(label, name)}", "jacobian", point, None, (),
                          entry.analytic, entry.numeric, allowed, entry.failed)
        if spec.value is not None:
            self._compare("value", "value", point, None, _expected(spec.value, point),
                          result.value)
        for label, row in spec.jacobian.items():
            for name, expected in row.items():
                if isinstance(expected, Expected):
                    expected = _expected(expected, point)
                self._compare(f"jacobian {_d(label, name)}", f"jacobian.{label}", point, None,
                              expected, result.jacobian[label][name])

    def _compare(self, assertion: str, key: str, point: dict[str, Any], name: str | None,
                 expected: Any, actual: Any) -> None:
        np = arrays.numpy()
        expected, actual = np.asarray(expected, dtype=float), np.asarray(actual, dtype=float)
        if expected.shape != actual.shape and expected.ndim:
            raise UsageError(f"check {self.spec.name!r}: {key} has shape "
                             f"{arrays.shape_text(expected.shape)}, the gradient "
                             f"{arrays.shape_text(actual.shape)}", hint="give it the same shape")
        expected = np.broadcast_to(expected, actual.shape)
        allowed = self.spec.atol + self.spec.rtol * np.maximum(np.abs(actual), np.abs(expected))
        ratio = np.abs(actual - expected) / allowed
        worst = np.unravel_index(int(np.argmax(ratio)), actual.shape) if actual.ndim else ()
        self._add(assertion, key, point, name, tuple(int(i) for i in worst),
                  float(expected[worst]), float(actual[worst]), float(allowed[worst]),
                  int(np.count_nonzero(ratio > 1)))

    def _add(self, assertion: str, key: str, point: dict[str, Any], name: str | None,
             where: tuple[int, ...], expected: float, actual: float, allowed: float,
             failed: int | None = None) -> None:
        error = abs(actual - expected)
        failed = int(not error <= allowed) if failed is None else failed
        ratio = error / allowed if allowed else (0.0 if error == 0 else float("inf"))
        at = _scalars(point)
        if where and name is not None:
            element = ", ".join(map(str, where))
            at[f"{name}[{element}]"] = float(arrays.numpy().asarray(point[name])[where])
        found = self.finding(assertion, key, self.spec.line_of(key), 1, int(failed > 0), error,
                             at, expected, actual, allowed,
                             status=ExitStatus.CHECK_FAILED if failed else ExitStatus.OK)
        earlier = self.judged.get(assertion)
        if earlier is None:
            self.judged[assertion] = (found, ratio)
            return
        kept, worst = earlier
        kept.points += 1
        kept.failures += found.failures
        if (found.failures and kept.status == ExitStatus.OK) or (ratio > worst and (
                bool(found.failures) >= bool(kept.failures - found.failures))):
            for field in ("worst_error", "worst_point", "expected", "actual", "tolerance"):
                setattr(kept, field, getattr(found, field))
            self.judged[assertion] = (kept, ratio)
        if kept.failures:
            kept.status = ExitStatus.CHECK_FAILED

    def findings(self) -> list[Any]:
        errors = [self.error] if self.error is not None else []
        return errors + [found for found, _ in self.judged.values()]


def _d(label: str, name: str) -> str:
    """``df/dx``, ``d(W@x)/dx``: a Jacobian block's name."""
    return f"d{label}/d{name}" if label.isidentifier() else f"d({label})/d{name}"


def _scalars(point: dict[str, Any]) -> dict[str, float]:
    """The point's scalar variables (arrays are named by their worst element instead)."""
    return {name: float(value) for name, value in point.items() if not hasattr(value, "ndim")}


def _expected(expected: Expected, point: dict[str, Any]) -> Any:
    """An expected number, or the value of an expected expression at ``point`` (any shape)."""
    if expected.program is None:
        return expected.number
    return forward_value(expected.program, point)


def forward_value(program: Program, point: dict[str, Any]) -> Any:
    """The value of ``program`` at ``point`` on the array path (no gradients: any shape)."""
    arrays.bind(program, {name: point[name] for name in program.variables if name in point})
    return arrays.forward(program.nodes)
