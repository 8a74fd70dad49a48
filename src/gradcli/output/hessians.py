"""Second derivatives at a point: the Hessian and the Hessian-vector product, with their checks.

A program of numbers shows its Hessian as a matrix, a mark on each entry checked; a program
with arrays shows one row per block d²f/da db (the shape of a, then of b), its largest error
and how many of its entries were checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from gradcli.engine.notation import shape_text
from gradcli.output.nodes import shape_columns, value_cell, value_column
from gradcli.output.tables import Column, FittedTable
from gradcli.output.values import checked_digits, number_text
from gradcli.output.verdicts import check_cells, check_columns, check_mark

if TYPE_CHECKING:
    from gradcli.gradcheck.evaluation import Result


def hessian_table(result: Result, plain: bool = False, digits: int | None = None,
                  full: bool = False) -> FittedTable:
    """The Hessian at the point: a matrix of numbers, or one row per block of arrays."""
    assert result.hessian is not None
    digits = checked_digits(digits)
    if result.program.arrays:
        return _hessian_blocks(result, plain, digits, full)
    checks = result.hessian.check.gradients if result.hessian.check is not None else {}
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


def _hessian_blocks(result: Result, plain: bool, digits: int | None,
                    full: bool) -> FittedTable:
    assert result.hessian is not None
    checks = result.hessian.check.gradients if result.hessian.check is not None else {}
    table = FittedTable("Hessian of the output", [
        Column("block", fold=True, head=True, style="bold"), *shape_columns(True),
        value_column("second derivatives", "magenta", True), *check_columns(True),
        Column("ok")], plain)
    for a, row in result.hessian.matrix.items():
        for b, block in row.items():
            check = checks.get(f"{a},{b}")
            table.add_row(Text(f"d²/d{a} d{b}"), Text(shape_text(getattr(block, "shape", ()))),
                          value_cell(block, "magenta", True, digits, full),
                          *check_cells(check, True), check_mark(check))
    return table


def hvp_table(result: Result, plain: bool = False, digits: int | None = None,
              full: bool = False) -> FittedTable:
    """One row per input: the direction v and (H·v) for that input, and its check."""
    assert result.hvp is not None
    digits = checked_digits(digits)
    arrays = result.program.arrays
    checks = result.hvp.check.gradients if result.hvp.check is not None else {}
    table = FittedTable("Hessian-vector product H·v", [
        Column("variable", fold=True, head=True, style="bold"), *shape_columns(arrays),
        value_column("v", "cyan", arrays), value_column("H·v", "magenta", arrays),
        *check_columns(arrays), Column("ok")], plain)
    for name, product in result.hvp.product.items():
        check = checks.get(name)
        shape = [Text(shape_text(getattr(product, "shape", ())))] if arrays else []
        table.add_row(Text(name), *shape,
                      value_cell(result.hvp.direction[name], "cyan", arrays, digits, full),
                      value_cell(product, "magenta", arrays, digits, full),
                      *check_cells(check, arrays, digits), check_mark(check))
    return table
