"""``gradcli diff`` checks what it prints, before it is shown: each printed derivative is read
back with gradcli's own parser (as a user would paste it) and a ``--format python`` export is
imported and called, at the values given or at sample points (symbolic/sampling.py), and both
are compared with the numeric engine, which shares no code with the symbolic derivatives: the
reverse-mode gradient or Jacobian, central differences of it for a Hessian, of the checked order
below for higher orders. A disagreement is a ``CheckError`` (status 1) naming the entry, the
point and both numbers. What is checked, the tolerances and the truth: ``derivative_truth``.
"""

from __future__ import annotations

import math
from typing import Any

from gradcli.engine import arrays
from gradcli.engine.graph import node_text
from gradcli.engine.ops import CONDITIONAL
from gradcli.errors import CheckError, NumericError, listed
from gradcli.gradcheck.agreement import BUG_HINT, compare, mismatch, unresolved
from gradcli.gradcheck.derivative_truth import (
    LARGE,
    POINTS,
    Checked,
    DiffCheck,
    Truth,
    entry_label,
    paths,
    read_entry,
    value_at,
)
from gradcli.gradcheck.differences import live_in
from gradcli.symbolic.sampling import candidates


def check(request: DiffCheck, points: int = POINTS) -> Checked:
    """Compare every printed entry (and the Python export) with the numeric engine at up to
    ``points`` points; a CheckError at the first disagreement. Order k >= 3 checks the orders
    below too (each is the reference of the next)."""
    readers = [Reader(DiffCheck(request.program, request.shapes, request.given,
                                "hessian" if order == 2 else "higher", request.levels[order],
                                request.levels))
               for order in sorted(request.levels) if request.kind == "higher"]
    reader = Reader(request)
    if sum(math.prod(shape) for shape in request.shapes.values()) > LARGE:
        points = 1  # a large program: its cost, not its sample, bounds the check
    for index, node in enumerate(request.program.nodes):  # a printer may have renumbered them
        node.index = index
    checked = 0
    at_given = all(name in request.given for name in request.shapes)  # the user's point only
    pieces = Pieces(request.program)
    for point in candidates(request.shapes, request.given):
        try:
            truth = Truth(request, point)
            truth.prepare()
            for each in (*readers, reader):
                each.compare(truth)  # a printed entry that fails here is a CheckError
        except NumericError:  # a reference, not a printed entry, cannot be computed here
            if at_given:
                break  # the user's point, where diff computed: a reference fails, not diff
            continue  # the program is not defined here (or not differentiable): elsewhere
        checked += 1
        pieces.see(point)
        if checked >= points and pieces.all_seen():
            break
    against = {"gradient": "the reverse-mode gradient", "jacobian": "the reverse-mode Jacobian",
               "hessian": "central differences of the reverse-mode gradient",
               "higher": "central differences of the order below"}[request.kind]
    printed = {path[-1] for path, _, _ in reader.parsed}
    given = [name for name in request.shapes if name in printed and request.by_differences(name)]
    if all(request.by_differences(name) for name in request.shapes):
        against = "central differences of the value"
    elif given:  # the rest against the engine
        against += f" ({listed(given)}: central differences of the value)"
    conventions = {label: why for each in (*readers, reader)
                   for label, why in each.conventions.items()}
    return Checked(checked, sum(each.entries for each in (*readers, reader)), against,
                   at_given, tuple(conventions.values()),
                   () if at_given else pieces.unseen())


# An array program's printed derivative keeps its pieces apart (symbolic/jacobians.py); should
# one still compute a branch not taken that has no value, the formula has none (see
# docs/derivatives.md).
PIECES_HINT = ("diff's array formulas compute both pieces of a where, and one not taken has no "
               "value here, so none was printed: give values (--x ...) for the derivatives at "
               "a point, or use gradcli eval")


class Pieces:
    """Which side of each condition of a piecewise program the checked points took where its
    ``where`` decides (is live there: an inner one in a branch not taken decides nothing): a
    printed derivative keeps each piece apart (``where(x > 2, ..., ...)``), so each piece is
    checked only at points where the conditions pick it, and the check goes on drawing points
    (up to the sample's end) until every side has been taken at one."""

    def __init__(self, program: Any) -> None:
        self.program = program
        self.wheres = [node for node in program.nodes if node.op is CONDITIONAL]
        self.seen: dict[int, set[bool]] = {node.index: set() for node in self.wheres}

    def see(self, point: dict[str, Any]) -> None:
        if not self.wheres or self.all_seen():
            return
        np = arrays.numpy()
        value_at(self.program, point)  # every node's value there (a branch's errors: none)
        live = live_in(self.program)
        for node in self.wheres:
            mask = True if live is None else live[node.index]
            if mask is False:
                continue
            value = np.broadcast_to(np.asarray(node.inputs[0].value), np.shape(node.value))
            if mask is not True:
                value = value[np.broadcast_to(mask, value.shape)]
            sides = self.seen[node.index]
            if np.any(value != 0):
                sides.add(True)
            if np.any(value == 0):
                sides.add(False)

    def all_seen(self) -> bool:
        return all(len(sides) == 2 for sides in self.seen.values())

    def unseen(self) -> tuple[str, ...]:
        """Each side no checked point took, as a note: its piece is printed unchecked."""
        notes = []
        for node in self.wheres:
            seen = self.seen[node.index]
            side = "" if len(seen) == 2 else "true or false" if not seen else (
                "false" if True in seen else "true")
            if side:
                notes.append(f"not checked where {node_text(node.inputs[0])} is {side} (no "
                             "sample point took that piece)")
        return tuple(dict.fromkeys(notes))


# --- what diff printed, read back --------------------------------------------------------------

class Reader:
    """The printed entries parsed once; compared with the truth at each point."""

    def __init__(self, request: DiffCheck) -> None:
        self.request = request
        variables = request.program.variables
        self.parsed = [(path, text, read_entry(entry_label(request.kind, path), text, variables))
                       for path, text in paths(request.texts)]
        self.entries = len(self.parsed)
        self.conventions: dict[str, str] = {}  # label -> why it stands unchecked (Checked)
        self.module = _imported(request.python) if request.python is not None else None

    def compare(self, truth: Truth) -> None:
        kind = self.request.kind
        for path, text, program in self.parsed:
            label = entry_label(kind, path)
            try:
                printed = value_at(program, truth.point)
            except NumericError as error:
                refused = mismatch(label, text, truth.point, None, None, error.message)
                if self.request.program.masked and any(self.request.shapes.values()):
                    refused.hint = PIECES_HINT
                raise refused from None
            self.judge(truth, label, text, path, truth.project(path, printed))
        if self.module is not None:
            count = _compare_export(self.request, self.module, truth, self.judge)
            self.entries = len(self.parsed) + count

    def judge(self, truth: Truth, label: str, text: str, path: tuple, printed: Any,
              strict: bool = False) -> None:
        """One entry (printed, or the export's: ``strict`` shapes) against the truth: a
        difference that disagrees is taken again with smaller steps, then one-sided; a
        CheckError if the entry still disagrees, a convention noted where no derivative
        exists."""
        found = truth.expected(path)
        exact = found is None
        expected = truth.exact(path) if found is None else found.value
        try:
            compare(label, text, truth.point, printed, expected, exact, strict=strict,
                    noise=0.0 if found is None else found.noise)
        except CheckError:
            if exact or truth.direction(path[-1]) is not None:
                raise
            found = truth.with_smaller_steps(path, printed)
            if found is not None:  # then screened as a pass is
                convention = truth.symmetric_kink(label, path, printed, steep=True)
            else:
                agrees, convention = truth.one_sided_verdict(label, path, printed)
                if not agrees:
                    truth.refuse_a_removable_convention(label, text, path, printed, expected)
                    truth.refuse_a_slow_convergence(label, text, path, printed)
                    raise
        else:
            convention = None if exact else truth.symmetric_kink(label, path, printed)
        if convention is None and found is not None:
            convention = unresolved(label, truth.point, printed, found,
                                    lambda: truth.closer(path), truth.differenced(path))
        if convention is not None:
            self.conventions[label] = convention


# --- the Python export, imported and called ------------------------------------------------------

def _imported(source: str) -> Any:
    """The module of the export's source (gradcli's own generated code), from a temporary
    file: imported the way a user imports it."""
    import importlib.util
    import os
    import tempfile

    handle, path = tempfile.mkstemp(suffix=".py", prefix="gradcli_export_")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(source)
        spec = importlib.util.spec_from_file_location("gradcli_export", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as error:  # the export must import: anything else is the bug
            raise CheckError(f"the --format python export does not import: {error!r}",
                             hint=BUG_HINT) from None
    finally:
        os.unlink(path)
    return module


def _compare_export(request: DiffCheck, module: Any, truth: Truth, judge: Any) -> int:
    """Call ``f`` with the point (positionally, in its parameters' order) and compare what
    it returns, entry by entry, with the truth, each entry judged as a printed one is
    (``Reader.judge``: smaller steps, one-sided differences)."""
    np = arrays.numpy()
    names = [n for n in request.program.variables if n not in request.given
             or request.python_kind != "scalar"]
    args = [truth.point[n] if getattr(truth.point[n], "ndim", 0) or request.python_kind != "scalar"
            else float(truth.point[n]) for n in names]
    try:
        with np.errstate(all="ignore"):
            returned = module.f(*args)
    except Exception as error:  # the export must run: anything else is the bug
        raise CheckError(f"the --format python export fails when called: {error!r}",
                         hint=BUG_HINT) from None
    value, entries = _export_entries(request, returned)
    expected_value = truth.value
    if isinstance(value, dict) and not isinstance(expected_value, dict) and len(value) == 1:
        value = next(iter(value.values()))  # one array output: the export keys it by label
    if isinstance(expected_value, dict) and isinstance(value, dict):
        for label, v in expected_value.items():
            compare(f"value of {label} (python)", "f(...)", truth.point, value[label], v,
                     True, strict=True)
    else:
        compare("value (python)", "f(...)", truth.point, value, expected_value, True,
                 strict=True)
    for path, got in entries.items():
        if request.kind != "jacobian":
            got = truth.project(path, got)
        judge(truth, entry_label(request.kind, path) + " (python)", "f(...)", path, got,
              strict=True)
    return len(entries)


def _export_entries(request: DiffCheck, returned: Any) -> tuple[Any, dict[tuple, Any]]:
    """The export's value and ``{path: entry}``, whatever its kind returns."""
    if request.python_kind == "scalar":
        value, gradient, *rest = returned
        names = request.wrt or list(request.texts)
        found: dict[tuple, Any] = {(name,): g for name, g in zip(names, gradient, strict=True)}
        if rest:
            for a, row in zip(names, rest[0], strict=True):
                for b, h in zip(names, row, strict=True):
                    found[(a, b)] = h
        return value, found
    value, tree = returned
    return value, dict(paths(tree))
