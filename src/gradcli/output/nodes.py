"""The tables of one program at a point: per node, per input (gradients, H·v), the Hessian.
Numbers and arrays get the same tables from the same loop (a number is of shape ``()``); arrays
add a shape column and check columns of the largest error and the elements checked. The Hessian
of numbers is a matrix; of arrays, one row per block d²f/da db."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gradcli.engine.notation import shape_text
from gradcli.errors import plural
from gradcli.output.tables import MAX_TABLE_ROWS, Column, FittedTable
from gradcli.output.text import Text
from gradcli.output.values import checked_digits, number_text, value_text
from gradcli.output.verdicts import check_cells, check_columns, check_mark

if TYPE_CHECKING:
    from gradcli.gradcheck.evaluation import Result


def value_column(header: str, style: str, arrays: bool) -> Column:
    """A column of numbers (as wide as the longest), or of arrays (which wrap)."""
    if arrays:
        return Column(header, fold=True, words=True, justify="right", style=style)
    return Column(header, justify="right")


def value_cell(value: Any, style: str, arrays: bool, digits: int | None = None,
               full: bool = False, seen: dict[int, tuple[Any, str]] | None = None) -> Text:
    """A number in ``style`` (its column's, where the column holds arrays); ``seen`` as
    ``value_text`` keeps it."""
    return Text(value_text(value, digits, full, seen), style="" if arrays else style)


def node_columns(arrays: bool) -> list[Column]:
    """The columns every per-node table starts with: id, label, op, (shape,) inputs."""
    return [Column("id", head=True, style="dim"), Column("label", fold=True, head=True),
            Column("op", style="dim"), *([Column("shape")] if arrays else []),
            Column("inputs", fold=True, words=True, style="dim")]


def node_cells(row: dict[str, Any], arrays: bool) -> list[Text]:
    """A node record's (``node_records``) cells of ``node_columns``."""
    return [
        Text(f"#{row['id']}"),
        Text(row["label"], style="bold" if row["op"] == "var" else ""),
        Text(row["op"]),
        *([Text(shape_text(row["shape"]))] if arrays else []),
        Text(" ".join(f"#{i}" for i in row["inputs"])),
    ]


def add_node_rows(table: FittedTable, result: Any,
                  cells: Callable[[dict[str, Any]], list[Text]]) -> None:
    """One row per node of ``result`` (``cells`` of its ``node_records``); past
    ``MAX_TABLE_ROWS`` nodes, the first half of that, a note of how many are hidden, and the
    output (only the rows shown are built)."""
    count = len(result.program.nodes)
    wanted = None if count <= MAX_TABLE_ROWS else [*range(MAX_TABLE_ROWS // 2), count - 1]
    rows = list(result.node_records(wanted))
    shown = rows if count <= MAX_TABLE_ROWS else rows[:-1]
    for row in shown:
        table.add_row(*cells(row))
    if count > len(shown):
        hidden = count - len(shown) - 1
        table.add_note(Text(f"{plural(hidden, 'more node')} (--json lists all)"))
        table.add_row(*cells(rows[-1]))


def node_table(result: Result, plain: bool = False, digits: int | None = None,
               full: bool = False, seen: dict[int, tuple[Any, str]] | None = None) -> FittedTable:
    """One row per node: id, label, op, (shape,) inputs, value, gradient, its check (``seen``:
    the arrays already written, as ``value_text`` keeps them)."""
    digits = checked_digits(digits)
    arrays = result.program.arrays
    checks = result.check.nodes if result.check is not None else {}
    table = FittedTable(f"value {number_text(result.value, digits)}", [
        *node_columns(arrays), value_column("value", "cyan", arrays),
        value_column("gradient", "magenta", arrays), *check_columns(arrays)], plain)

    def cells(row: dict[str, Any]) -> list[Text]:
        grad = row["grad"]
        return [*node_cells(row, arrays),
                value_cell(row["value"], "cyan", arrays, digits, full, seen),
                Text("—", style="dim") if grad is None
                else value_cell(grad, "magenta", arrays, digits, full, seen),
                *check_cells(checks.get(row["id"]), arrays, digits)]

    add_node_rows(table, result, cells)
    return table


def gradient_table(result: Result, plain: bool = False, digits: int | None = None,
                   full: bool = False,
                   seen: dict[int, tuple[Any, str]] | None = None) -> FittedTable:
    """One row per input variable: (shape,) value, gradient, its check and ✓/✗ (``seen`` as
    ``node_table`` takes it)."""
    checks = _checks(result.check)
    shown = itertools.islice(result.gradients.items(), MAX_TABLE_ROWS)
    table = _input_table("gradients of the output", "variable", ("value", "gradient"),
                         result.program.arrays,
                         [(name, checks.get(name), (result.point[name], gradient))
                          for name, gradient in shown], plain, digits, full, seen)
    if len(result.gradients) > MAX_TABLE_ROWS:
        hidden = len(result.gradients) - MAX_TABLE_ROWS
        table.add_note(Text(f"{plural(hidden, 'more variable')} (--json lists all)"))
    return table


def hvp_table(result: Result, plain: bool = False, digits: int | None = None,
              full: bool = False) -> FittedTable:
    """One row per input: the direction v and (H·v) for that input, and its check."""
    assert result.hvp is not None
    hvp, checks = result.hvp, _checks(result.hvp.check)
    return _input_table("Hessian-vector product H·v", "variable", ("v", "H·v"),
                        result.program.arrays,
                        [(name, checks.get(name), (hvp.direction[name], product))
                         for name, product in hvp.product.items()], plain, digits, full)


def _checks(report: Any) -> dict[str, Any]:
    """A report's checks by name (none without a report: --no-check)."""
    return {} if report is None else report.gradients


def _input_table(title: str, head: str, headers: tuple[str, ...], arrays: bool,
                 rows: list[tuple[str, Any, tuple[Any, ...]]], plain: bool,
                 digits: int | None, full: bool,
                 seen: dict[int, tuple[Any, str]] | None = None) -> FittedTable:
    """One row per input (or Hessian block): (shape,) its values under ``headers`` (the last
    one's shape; in magenta, a first of two in cyan), the check's cells and ✓/✗."""
    digits = checked_digits(digits)
    styles = ("cyan", "magenta")[-len(headers):]
    table = FittedTable(title, [
        Column(head, fold=True, head=True, style="bold"), *([Column("shape")] if arrays else []),
        *map(value_column, headers, styles, [arrays] * len(headers)),
        *check_columns(arrays), Column("ok")], plain)
    for name, check, values in rows:
        shape = [Text(shape_text(getattr(values[-1], "shape", ())))] if arrays else []
        table.add_row(Text(name), *shape,
                      *(value_cell(value, style, arrays, digits, full, seen)
                        for value, style in zip(values, styles, strict=True)),
                      *check_cells(check, arrays, digits), check_mark(check))
    return table


def hessian_table(result: Result, plain: bool = False, digits: int | None = None,
                  full: bool = False) -> FittedTable:
    """The Hessian at the point: a matrix of numbers, or one row per block of arrays."""
    assert result.hessian is not None
    digits = checked_digits(digits)
    checks = _checks(result.hessian.check)
    if result.program.arrays:
        return _input_table("Hessian of the output", "block", ("second derivatives",), True,
                            [(f"d²/d{a} d{b}", checks.get(f"{a},{b}"), (block,))
                             for a, row in result.hessian.matrix.items()
                             for b, block in row.items()], plain, digits, full)
    names = list(result.hessian.matrix)
    table = FittedTable("Hessian of the output", [
        Column("", fold=True, words=True, in_records=False, style="bold"),
        *(Column(name, justify="right") for name in names)], plain)
    for row_name, row in result.hessian.matrix.items():
        cells = []
        for name in names:
            check = checks.get(f"{row_name},{name}")
            cell = Text(number_text(row[name], digits), style="magenta")
            if check is not None:
                cell.append(" ✓" if check.ok else " ✗", style="green" if check.ok else "bold red")
            cells.append(cell)
        # Too wide for the screen: one line of ``row,column entry`` fields per row.
        table.add_row(Text(row_name), *cells, fields=[f"{row_name},{name}" for name in names])
    return table

