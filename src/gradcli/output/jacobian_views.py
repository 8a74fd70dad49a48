"""Tables of Jacobians (docs/matrix-calculus.md): the outputs' values, one row per (output,
input) block with the check's worst error in it, and a verdict naming the mode and passes."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from gradcli.engine.notation import derivative_label, shape_text
from gradcli.engine.ops import numpy
from gradcli.errors import plural
from gradcli.gradcheck.jacobian_check import JacobianCheck, JacobianResult
from gradcli.limits import MAX_CONTRIBUTION_CELLS
from gradcli.output.nodes import (
    add_node_rows,
    node_cells,
    node_columns,
    value_cell,
    value_column,
)
from gradcli.output.tables import Column, FittedTable
from gradcli.output.values import value_text
from gradcli.output.verdicts import (
    KINK_CAUSE,
    SKIPPED,
    check_cells,
    check_columns,
    check_mark,
    check_verdict,
    tolerances,
)

_MODE_WORDS = {"reverse": "reverse mode, one pass per output element",
               "forward": "forward mode, one pass per input element"}


def jacobian_view(result: JacobianResult, plain: bool = False, digits: int | None = None,
                  full: bool = False) -> RenderableType:
    """The outputs, the Jacobian's blocks, and the verdict."""
    np = numpy()
    outputs = FittedTable("outputs", [
        Column("output", fold=True, head=True, style="bold"), Column("shape"),
        Column("value", fold=True, words=True, justify="right", style="cyan")], plain)
    for label, value in result.values.items():
        outputs.add_row(Text(label), Text(shape_text(np.shape(value))),
                        Text(value_text(value, digits, full)))
    title = (f"Jacobian ({_MODE_WORDS[result.mode]}: "
             f"{plural(result.passes, 'pass', 'passes')})")
    blocks = FittedTable(title, [
        Column("output", fold=True, head=True, style="bold"), Column("input", style="bold"),
        Column("shape"), Column("jacobian", fold=True, words=True, justify="right",
                                style="magenta"),
        *check_columns(True), Column("ok")], plain)
    for label, row in result.jacobian.items():
        for name, block in row.items():
            check = result.check.blocks[label][name] if result.check is not None else None
            blocks.add_row(Text(label), Text(name), Text(_block_shape(result, label, name)),
                           Text(value_text(block, digits, full)), *check_cells(check, True),
                           check_mark(check))
    verdict = (Text(SKIPPED, style="dim") if result.check is None
               else jacobian_verdict(result.check))
    return Group(contribution_table(result, plain, digits, full), outputs, blocks, verdict)


def contribution_table(result: JacobianResult, plain: bool = False, digits: int | None = None,
                       full: bool = False) -> FittedTable:
    """One row per node: its value and each output's gradient with respect to it."""
    columns = [*node_columns(True), value_column("value", "cyan", True)]
    for label in result.values:
        columns.append(value_column(derivative_label(("node",), label), "magenta", True))
    table = FittedTable("nodes (each output's gradient with respect to each node)", columns,
                        plain)

    def cells(row: dict[str, Any]) -> list[Text]:
        return [*node_cells(row, True), value_cell(row["value"], "cyan", True, digits, full),
                *(Text("—", style="dim") if grad is None
                  else value_cell(grad, "magenta", True, digits, full)
                  for grad in row["gradients"].values())]

    add_node_rows(table, result, cells)
    if result.contributions() is None:
        table.add_note(Text(f"gradients with respect to the nodes left out: "
                            f"{result.contribution_cells():,} numbers, over the limit of "
                            f"{MAX_CONTRIBUTION_CELLS:,}", style="yellow"))
    return table


def _block_shape(result: JacobianResult, label: str, name: str) -> str:
    """``3 x 2x2``: the output's shape, then the input's (a scalar's is left out)."""
    np = numpy()
    out, into = np.shape(result.values[label]), np.shape(result.point[name])
    parts = [shape_text(shape) for shape in (out, into) if shape]
    return " x ".join(parts) or "scalar"


def jacobian_verdict(check: JacobianCheck) -> Text:
    """``✓ check passed: 12 Jacobian entries agree with finite differences ...``."""
    things = plural(check.checked, "Jacobian entry", "Jacobian entries")
    columns = plural(check.columns, "perturbed input element")
    text = check_verdict(
        check.ok,
        f"{things} agree with finite differences ({columns}, each giving every output; max "
        f"abs error {check.max_error:.1e}; {tolerances(check)})",
        f"{check.failed:,} of {things} disagree with finite differences "
        f"({tolerances(check)}); {KINK_CAUSE}")
    if check.columns < check.inputs:
        text.append(f"\nperturbed {check.columns:,} of {check.inputs:,} input elements (an "
                    "evenly spread sample)", style="yellow")
    return text
