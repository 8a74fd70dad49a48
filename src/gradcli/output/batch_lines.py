"""One line per program of a batch (``gradcli eval --batch``): value, gradients, Hessian, H·v,
verdict, or the error; numbers in full or to ``digits`` significant digits, arrays summarised
unless ``full``."""

from __future__ import annotations

import itertools
from typing import NamedTuple

from rich.text import Text

from gradcli.engine.notation import derivative_label
from gradcli.errors import listed, visible
from gradcli.gradcheck.evaluation import FreeResult, LineOutcome, Result
from gradcli.output.values import checked_digits, number_text, value_text

MAX_LINE_GRADIENTS = 50  # a batch line shows this many gradients, then how many more


class TableStyle(NamedTuple):
    """How a table batch writes its lines (``--digits``, ``--full``), for a cluster's workers."""

    digits: int | None = None
    full: bool = False


class TableLine(NamedTuple):
    """One line of a table batch, made where the program was evaluated, with its status, its
    error for stderr and its names."""

    line: int
    status: int
    error: str | None  # the error on one line, or None
    names: tuple[str, ...] | None  # the line's input variables; None: it did not parse
    view: Text


def table_line(outcome: LineOutcome, style: TableStyle) -> TableLine:
    error = None if outcome.error is None else outcome.error.one_line()
    names = None if outcome.names is None else tuple(outcome.names)  # names, not the nodes
    return TableLine(outcome.line, int(outcome.status), error, names,
                     batch_line(outcome, style.digits, style.full))


def batch_line(outcome: LineOutcome, digits: int | None = None, full: bool = False) -> Text:
    """One line of human batch output: value, gradients, Hessian, H·v, verdict, or the error."""
    digits = checked_digits(digits)
    text = Text(f"line {outcome.line}: ", style="dim")
    if outcome.error is not None:
        text.append(visible(outcome.error.one_line()), style="red")
        return text
    result = outcome.result
    assert result is not None
    if isinstance(result, FreeResult):
        text.append(f"value {result.value}", style="cyan")
        for name, gradient in result.gradients.items():
            text.append(f"  d/d{name} {gradient}", style="magenta")
        text.append(f"  (free: {listed(result.free)})", style="yellow")
        for note in result.notes:
            text.append(f"  ({note.message})", style="yellow")
        if result.checked is not None and result.checked.confirmed:
            text.append("  ✓", style="green")
        elif result.checked is not None:  # a kink's convention, or nowhere to check
            text.append(f"  (not all checked: {result.checked.note()})", style="yellow")
        return text
    if isinstance(result, Result):
        _result_parts(text, result, digits, full)
    else:  # several outputs or an array output: values and the Jacobian's blocks
        values = ", ".join(f"{label} {value_text(value, digits, full)}"
                           for label, value in result.values.items())
        text.append(f"outputs {values}", style="cyan")
        for label, row in result.jacobian.items():
            for name, block in row.items():
                text.append(f"  {derivative_label((name,), label)} "
                            f"{value_text(block, digits, full)}", style="magenta")
    if result.check is not None:
        text.append("  ✓" if result.status == 0 else "  ✗ check failed",
                    style="green" if result.status == 0 else "bold red")
    return text


def _result_parts(text: Text, result: Result, digits: int | None, full: bool) -> None:
    """Value, gradients, Hessian and H·v of a program with one scalar output."""
    text.append(f"value {number_text(result.value, digits)}", style="cyan")
    for name, gradient in itertools.islice(result.gradients.items(), MAX_LINE_GRADIENTS):
        text.append(f"  d/d{name} {value_text(gradient, digits, full)}", style="magenta")
    if len(result.gradients) > MAX_LINE_GRADIENTS:
        text.append(f"  … {len(result.gradients) - MAX_LINE_GRADIENTS:,} more", style="dim")
    if result.hessian is not None:
        _hessian_line(text, result.hessian.matrix, digits, full)
    if result.hvp is not None:  # an array program's H·v (--hvp), one part per input
        for name, part in result.hvp.product.items():
            text.append(f"  H·v {name} {value_text(part, digits, full)}", style="magenta")


def _hessian_line(text: Text, matrix: dict, digits: int | None, full: bool) -> None:
    """``d2/dx [6, 4]`` per row of numbers; an array program's blocks one by one,
    ``d2/dz dz [[6, 0], [0, 12]]``."""
    blocks = [block for row in matrix.values() for block in row.values()]
    if not any(getattr(block, "ndim", 0) for block in blocks):
        for row_name, row in matrix.items():
            entries = ", ".join(number_text(v, digits) for v in row.values())
            text.append(f"  d2/d{row_name} [{entries}]", style="magenta")
        return
    for row_name, row in matrix.items():
        for name, block in row.items():
            text.append(f"  d2/d{row_name} d{name} {value_text(block, digits, full)}",
                        style="magenta")

