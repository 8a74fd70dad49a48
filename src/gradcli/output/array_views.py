"""Tables of array programs (docs/arrays.md): a shape column, arrays whole or summarised.

An array of up to ``SHOWN_ELEMENTS`` elements is printed whole, as the language writes it
(``[[1, 2], [3, 4]]``); a larger one as its first and last entries, minimum and maximum (its
shape is in the shape column; ``--full`` prints every element). The check columns summarise
each node's per-element check: the largest error, the element where it is, and how many
elements were checked.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from gradcli.errors import plural
from gradcli.gradcheck.check import CheckReport, GradientCheck
from gradcli.gradcheck.evaluation import Result
from gradcli.output.views import (
    _METHOD_WORDS,
    KINK_CAUSE,
    MAX_TABLE_ROWS,
    Column,
    FittedTable,
    check_verdict,
    number_text,
    tolerances,
)

SHOWN_ELEMENTS = 12  # larger arrays are summarised unless --full
_EDGE = 3  # entries shown at each end of a summarised array


def shape_text(shape: Any) -> str:
    return "x".join(str(n) for n in shape) if len(shape) else "scalar"


def array_text(value: Any, digits: int | None = None, full: bool = False) -> str:
    """A value as the language writes it: a number, or nested brackets; large ones summarised."""
    import numpy as np

    array = np.asarray(value)
    if not array.ndim:
        return number_text(float(array), digits)
    if full or array.size <= SHOWN_ELEMENTS:
        return _nested(array.tolist(), digits)
    flat = array.ravel()
    ends = [number_text(v, digits) for v in flat[:_EDGE].tolist()]
    ends += ["…"] + [number_text(v, digits) for v in flat[-_EDGE:].tolist()]
    return (f"[{', '.join(ends)}] min {number_text(float(flat.min()), digits)}, max "
            f"{number_text(float(flat.max()), digits)}")


def _nested(items: Any, digits: int | None) -> str:
    """Nested lists as ``[[1, 2], [3, 4]]`` (iterative: a list of rows at a time)."""
    if not isinstance(items, list):
        return number_text(items, digits)
    if items and isinstance(items[0], list):
        return "[" + ", ".join(_nested(row, digits) for row in items) + "]"
    return "[" + ", ".join(number_text(v, digits) for v in items) + "]"


def _check_cells(check: GradientCheck | None) -> list[Text]:
    """error (the largest, at its element), and how many elements were checked."""
    if check is None:
        return [Text("—", style="dim"), Text("—", style="dim")]
    size, checked = getattr(check, "size", 1), getattr(check, "checked", 1)
    where = getattr(check, "where", ())
    style = "green" if check.ok else "bold red"
    error = "n/a" if check.abs_error is None else f"{check.abs_error:.1e}"
    at = f" at [{', '.join(map(str, where))}]" if where else ""
    count = f"{checked:,}" if checked == size else f"{checked:,} of {size:,}"
    return [Text(error + at, style=style), Text(count, style="dim")]


def _mark(check: GradientCheck | None) -> Text:
    if check is None:
        return Text("—", style="dim")
    return Text("✓", style="green") if check.ok else Text("✗", style="bold red")


def array_node_table(result: Result, plain: bool = False, digits: int | None = None,
                     full: bool = False) -> FittedTable:
    """One row per node: id, label, op, shape, inputs, value, gradient and its check."""
    checks = result.check.nodes if result.check is not None else {}
    table = FittedTable(f"value {number_text(result.value, digits)}", [
        Column("id", head=True, style="dim"), Column("label", fold=True, head=True),
        Column("op", style="dim"), Column("shape"),
        Column("inputs", fold=True, words=True, style="dim"),
        Column("value", fold=True, words=True, justify="right", style="cyan"),
        Column("gradient", fold=True, words=True, justify="right", style="magenta"),
        Column("max error", justify="right"), Column("checked", justify="right")], plain)
    count = len(result.program.nodes)
    wanted = None if count <= MAX_TABLE_ROWS else [*range(MAX_TABLE_ROWS // 2), count - 1]
    for row in result.node_records(wanted):
        table.add_row(*_node_cells(row, checks.get(row["id"]), digits, full))
    if count > MAX_TABLE_ROWS:
        table.add_note(Text(f"{plural(count - MAX_TABLE_ROWS // 2 - 1, 'more node')} "
                            "(--json lists all)"))
    return table


def _node_cells(row: dict[str, Any], check: GradientCheck | None, digits: int | None,
                full: bool) -> list[Text]:
    """A node record (``Result.node_records``: with its shape) as table cells."""
    grad = row["grad"]
    return [
        Text(f"#{row['id']}"),
        Text(row["label"], style="bold" if row["op"] == "var" else ""),
        Text(row["op"]),
        Text(shape_text(row["shape"])),
        Text(" ".join(f"#{i}" for i in row["inputs"])),
        Text(array_text(row["value"], digits, full)),
        Text("—", style="dim") if grad is None else Text(array_text(grad, digits, full)),
        *_check_cells(check),
    ]


def array_gradient_table(result: Result, plain: bool = False, digits: int | None = None,
                         full: bool = False) -> FittedTable:
    """One row per input variable: shape, value, gradient, the check's worst error, ✓/✗."""
    import numpy as np

    table = FittedTable("gradients of the output", [
        Column("variable", fold=True, head=True, style="bold"), Column("shape"),
        Column("value", fold=True, words=True, justify="right", style="cyan"),
        Column("gradient", fold=True, words=True, justify="right", style="magenta"),
        Column("max error", justify="right"), Column("checked", justify="right"),
        Column("ok")], plain)
    checks = result.check.gradients if result.check is not None else {}
    for name, gradient in result.gradients.items():
        check = checks.get(name)
        table.add_row(Text(name), Text(shape_text(np.shape(gradient))),
                      Text(array_text(result.point[name], digits, full)),
                      Text(array_text(gradient, digits, full)), *_check_cells(check),
                      _mark(check))
    return table


def array_verdict(check: CheckReport) -> Text:
    """``✓ check passed: 14 gradient elements of 8 nodes agree ...``, and how many of them a
    sample left out."""
    checks = check.checks
    checked = sum(getattr(c, "checked", 1) for c in checks)
    size = sum(getattr(c, "size", 1) for c in checks)
    failed = sum(getattr(c, "failed", not c.ok) for c in checks)
    things = f"{plural(checked, 'gradient element')} of {plural(len(checks), 'node')}"
    against = _METHOD_WORDS[check.method]
    text = check_verdict(
        not failed,
        f"{things} agree with {against} (max abs error {check.max_abs_error:.1e}; "
        f"{tolerances(check)})",
        f"{failed:,} of {things} disagree with {against} ({tolerances(check)}); {KINK_CAUSE}")
    if check.nodes_skipped:
        text.append("\nper-node check skipped: the graph is too large; input gradients checked",
                    style="dim")
    if checked < size:
        text.append(f"\nchecked {checked:,} of {size:,} gradient elements (an evenly spread "
                    "sample of the larger arrays)", style="yellow")
    return text


def array_result_view(result: Result, plain: bool = False, digits: int | None = None,
                      full: bool = False) -> RenderableType:
    parts: list[RenderableType] = [array_node_table(result, plain, digits, full),
                                   array_gradient_table(result, plain, digits, full)]
    if result.check is not None:
        parts.append(array_verdict(result.check))
    else:
        parts.append(Text("finite-difference check skipped (--no-check)", style="dim"))
    if result.hessian is not None:
        parts += [Text(""), array_hessian_table(result, plain, digits, full)]
        parts.append(second_verdict(result.hessian.check, "Hessian block"))
    if result.hvp is not None:
        parts += [Text(""), hvp_table(result, plain, digits, full)]
        parts.append(second_verdict(result.hvp.check, "Hessian-vector product"))
    return Group(*parts)


def array_hessian_table(result: Result, plain: bool = False, digits: int | None = None,
                        full: bool = False) -> FittedTable:
    """One row per pair of inputs: the block d²f/da db (shape of a, then of b) and its check."""
    import numpy as np

    assert result.hessian is not None
    checks = result.hessian.check.gradients if result.hessian.check is not None else {}
    table = FittedTable("Hessian of the output", [
        Column("block", fold=True, head=True, style="bold"), Column("shape"),
        Column("second derivatives", fold=True, words=True, justify="right", style="magenta"),
        Column("max error", justify="right"), Column("checked", justify="right"),
        Column("ok")], plain)
    for a, row in result.hessian.matrix.items():
        for b, block in row.items():
            check = checks.get(f"{a},{b}")
            table.add_row(Text(f"d²/d{a} d{b}"), Text(shape_text(np.shape(block))),
                          Text(array_text(block, digits, full)), *_check_cells(check),
                          _mark(check))
    return table


def hvp_table(result: Result, plain: bool = False, digits: int | None = None,
              full: bool = False) -> FittedTable:
    """One row per input: the direction v and (H·v) for that input, and its check."""
    import numpy as np

    assert result.hvp is not None
    checks = result.hvp.check.gradients if result.hvp.check is not None else {}
    table = FittedTable("Hessian-vector product H·v", [
        Column("variable", fold=True, head=True, style="bold"), Column("shape"),
        Column("v", fold=True, words=True, justify="right", style="cyan"),
        Column("H·v", fold=True, words=True, justify="right", style="magenta"),
        Column("max error", justify="right"), Column("checked", justify="right"),
        Column("ok")], plain)
    for name, product in result.hvp.product.items():
        check = checks.get(name)
        table.add_row(Text(name), Text(shape_text(np.shape(product))),
                      Text(array_text(result.hvp.direction[name], digits, full)),
                      Text(array_text(product, digits, full)), *_check_cells(check),
                      _mark(check))
    return table


def second_verdict(check: CheckReport | None, what: str) -> Text:
    """The check of second derivatives against central differences of the gradient."""
    if check is None:
        return Text("finite-difference check skipped (--no-check)", style="dim")
    checks = check.checks
    checked = sum(getattr(c, "checked", 1) for c in checks)
    failed = sum(getattr(c, "failed", not c.ok) for c in checks)
    things = f"{plural(checked, 'second derivative')} ({plural(len(checks), what)})"
    against = "central differences of the gradient"
    return check_verdict(
        not failed,
        f"{things} agree with {against} (max abs error {check.max_abs_error:.1e}; "
        f"{tolerances(check)})",
        f"{failed:,} of {things} disagree with {against} ({tolerances(check)}); {KINK_CAUSE}")
