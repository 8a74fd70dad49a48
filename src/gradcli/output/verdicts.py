"""What a check found, in words: the verdict under a table (``✓ check passed:`` or ``✗ check
failed:``, counting an array's elements), and the check's cells in a table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradcli.engine.notation import format_number
from gradcli.errors import listed, plural
from gradcli.output.tables import Column
from gradcli.output.text import Text

if TYPE_CHECKING:
    from gradcli.gradcheck.check import CheckReport, GradientCheck
    from gradcli.gradcheck.conditioning import Conditioning
    from gradcli.gradcheck.jacobian_check import EntryCheck

NUMERIC_DIGITS = 10  # the finite-difference estimate's column, when --digits is not given
POLE_GRADIENT = 1e12  # a gradient this large is a pole's, not a formula's mistake
SKIPPED = "finite-difference check skipped (--no-check)"
# How the verdict names each --check-method (central keeps the words it always had).
METHOD_WORDS = {
    "central": "finite differences",
    "complex": "complex-step derivatives",
    "richardson": "Richardson-extrapolated differences",
}
KINK_CAUSE = ("a point where the function is not differentiable (relu or abs at 0, min/max at a "
              "tie) or jumps (floor or round at a whole number) fails this way too")


def _likely_cause(failed: list[GradientCheck], boundaries: list[str] | None = None,
                  conditioning: Conditioning | None = None) -> str:
    """What else makes a correct gradient fail: a condition that switched (``boundaries``), an
    ill-conditioned point, a pole (a huge gradient) or a kink."""
    if conditioning is not None:
        return conditioning.cause()
    if boundaries:
        return (f"the condition {listed(boundaries)} switches within a finite-difference "
                "step of this point: the pieces meet here and the difference mixes both, as at "
                "relu's kink (the gradient is that of the piece the condition picks)")
    largest = max(abs(check.analytic) for check in failed)
    if largest >= POLE_GRADIENT:
        return (f"a gradient of {largest:.1e} means the point is at or next to a "
                "pole (tan at pi/2, 1/x at 0), where finite differences cannot converge")
    return KINK_CAUSE


def tolerances(check: Any) -> str:
    return f"rtol {format_number(check.rtol)}, atol {format_number(check.atol)}"


def check_verdict(ok: bool, agreement: str, disagreement: str) -> Text:
    """``✓ check passed: …`` or ``✗ check failed: …``: every check's verdict looks alike."""
    if ok:
        return Text("✓ check passed: ", style="bold green").append(agreement)
    return Text("✗ check failed: ", style="bold red").append(disagreement)


def verdict(check: CheckReport | None, what: tuple[str, str] = ("gradient", "gradients"),
            against: str | None = None, of: tuple[str, str] | None = None) -> Text:
    """``✓ check passed: 5 gradients agree with ...`` or ``✗ check failed: 1 of 5 gradients
    disagrees ...``; ``what`` is the thing checked (singular, plural), counted element by
    element, ``of`` what holds the elements (``19 gradient elements of 9 nodes``); ``SKIPPED``
    without a check (--no-check)."""
    if check is None:
        return Text(SKIPPED, style="dim")
    checks, failures = check.checks, check.failures
    if not checks and not check.unchecked:  # 2*3, or a function of the session called at 2
        return Text(f"✓ nothing to check: no {what[1]} (the program has no variables)",
                    style="dim")
    checked = sum(getattr(c, "checked", 1) for c in checks)
    size = sum(getattr(c, "size", 1) for c in checks)
    failed = sum(getattr(c, "failed", 1) for c in failures)
    against = against or METHOD_WORDS[check.method]
    things = plural(checked, *what) + ("" if of is None else f" of {plural(len(checks), *of)}")
    text = check_verdict(
        not failures,
        f"{things} {'agrees' if checked == 1 else 'agree'} with {against} "
        f"(max abs error {check.max_abs_error:.1e}; {tolerances(check)})",
        f"{failed:,} of {things} {'disagrees' if failed == 1 else 'disagree'} with "
        f"{against} ({tolerances(check)}); "
        + (_likely_cause(failures, check.boundaries, getattr(check, "conditioning", None))
           if failures else ""))  # a Hessian's and a Jacobian's reports have no conditioning
    if check.nodes_skipped and what[0].startswith("gradient"):  # the per-node gradient check
        text.append("\nper-node check skipped: the graph is too large; input gradients checked",
                    style="dim")
    if check.unchecked:
        text.append(f"\n{plural(len(check.unchecked), 'variable')} unchecked (not verified): the "
                    f"check's budget ran out ({listed(check.unchecked)})", style="yellow")
    if checked < size:
        counts = {getattr(c, "directions", 0) for c in checks} - {0}
        directions = max(counts, default=0)
        most = plural(directions, "random direction")
        along = (f"; every element of the larger arrays along "
                 f"{most if len(counts) == 1 else 'up to ' + most}" if directions else "")
        text.append(f"\nchecked {checked:,} of {size:,} {what[1]} (an evenly spread sample of "
                    f"the larger arrays{along})", style="dim" if directions else "yellow")
    unresolved = getattr(check, "unresolved", [])
    if unresolved:
        widest = max(check.gradients[name].tolerance for name in unresolved)
        text.append(f"\nnot resolved for {listed(unresolved)}: the program's values are so "
                    "much larger than their changes that rounding swamps the differences (a "
                    f"gradient {widest:.1e} away would pass too)", style="yellow")
    shrunk = getattr(check, "shrunk", [])
    if shrunk:
        text.append(f"\nthe check's budget ran out: fewer elements or directions checked for "
                    f"{listed(shrunk)}", style="yellow")
    return text


def gradient_verdict(check: CheckReport | None, arrays: bool = False) -> Text:
    """The gradient check's verdict, or that it was skipped."""
    if arrays:
        return verdict(check, ("gradient element", "gradient elements"), of=("node", "nodes"))
    return verdict(check)


def hessian_verdict(check: CheckReport | None,
                    what: tuple[str, str] = ("second derivative", "second derivatives"),
                    of: tuple[str, str] | None = None) -> Text:
    """The check of second derivatives (the Hessian's, or H·v's) against finite differences of
    the gradient; ``nothing to check`` where every entry is an exact 0."""
    if check is not None and not check.checks and not check.unchecked:
        return Text("✓ nothing to check: no gradient depends on a variable, so every entry of "
                    "the Hessian is exactly 0", style="green")
    return verdict(check, what, "finite differences of the gradient", of)


# --- the check's cells in a table -------------------------------------------------------------


def check_columns(arrays: bool) -> list[Column]:
    """A number's check: estimate and error; an array's: largest error and elements checked."""
    if arrays:
        return [Column("max error", justify="right"), Column("checked", justify="right")]
    return [Column("numeric", justify="right"), Column("error", justify="right")]


def check_cells(check: GradientCheck | EntryCheck | None, arrays: bool,
                digits: int | None = None) -> list[Text]:
    """The cells of ``check_columns`` (of a Jacobian block's check too); the estimate to
    ``NUMERIC_DIGITS`` (or ``digits``), about what central differences get right."""
    if check is None:
        return [Text("—", style="dim"), Text("—", style="dim")]
    style = "green" if check.ok else "bold red"
    if arrays:
        size, checked = getattr(check, "size", 1), getattr(check, "checked", 1)
        where = getattr(check, "where", ())
        error = check.abs_error
        error = "n/a" if error is None else f"{error:.1e}"
        at = f" at [{', '.join(map(str, where))}]" if where else ""
        count = f"{checked:,}" if checked == size else f"{checked:,} of {size:,}"
        directions = getattr(check, "directions", 0)
        count = f"{plural(directions, 'direction')} + {count}" if directions else count
        return [Text(error + at, style=style), Text(count, style="dim")]
    if check.numeric is None:
        return [Text("n/a", style="bold red"), Text("no finite difference", style="bold red")]
    return [Text(f"{check.numeric:.{digits or NUMERIC_DIGITS}g}"),
            Text(f"{check.abs_error:.1e}", style=style)]


def check_mark(check: Any) -> Text:
    """``✓`` or ``✗`` for a check (or a sweep point's verdict, a bool); ``—`` where nothing was
    checked."""
    if check is None:
        return Text("—", style="dim")
    ok = check if isinstance(check, bool) else check.ok
    return Text("✓", style="green") if ok else Text("✗", style="bold red")
