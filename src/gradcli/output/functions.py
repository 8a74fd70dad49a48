"""The language's operators and functions from ``ops.table_rows()``: a Rich table (``gradcli
functions``) and docs/functions.md, exactly ``markdown()`` (``python tests/test_op_table.py``
rewrites it)."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from gradcli.engine.ops import CONSTANTS, table_rows

COMPLEX_WORDS = {True: "yes", False: "no: --check-method complex refuses it"}
VECTOR_WORDS = {True: "NumPy", False: "no: point by point (slower)"}

_INTRO = """\
# Functions and operators

Every operator and function of gradcli's language, from the op table
(`src/gradcli/engine/ops/`; the array rows are in `linear_algebra.py`, see
[arrays](arrays.md)). `gradcli functions` prints the same list, and `gradcli functions --json`
gives it as JSON.

- **complex step**: whether `--check-method complex` can check a program that uses it (without
  it, use `--check-method central` or `richardson`).
- **vector**: how sweeps, check files, plots and large checks evaluate it at many points at once:
  with NumPy, or with the float function point by point (the same numbers, only slower).

A function's aliases (`ln` for `log`, `arcsin` for `asin`, ...) are among its spellings: they are
accepted wherever the function is, and printed under its name. Conventions at kinks, jumps and
poles: [the language](language.md#conventions-and-domains). How accurate each function and its
first and second derivatives are, measured against mpmath: [accuracy](accuracy.md).

The constants are {constants}.

<!-- Generated from the op table by `python tests/test_op_table.py`: do not edit by hand. -->

"""


def markdown(rows: list[dict[str, Any]] | None = None) -> str:
    """docs/functions.md: an introduction and one table row per operator or function."""
    lines = ["| name | written | what it computes | complex step | vector |",
             "| --- | --- | --- | --- | --- |"]
    for row in table_rows() if rows is None else rows:
        written = ", ".join(f"`{_cell(text)}`" for text in row["written"])
        cells = [row["name"], written, _cell(_plain(row["summary"])),
                 COMPLEX_WORDS[row["complex_step"]], VECTOR_WORDS[row["vector"]]]
        lines.append("| " + " | ".join(cells) + " |")
    constants = " and ".join(f"`{name}`" for name in CONSTANTS)
    return _INTRO.format(constants=constants) + "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Text for a Markdown table cell: a ``|`` would end the cell (also inside code)."""
    return text.replace("|", "\\|")


def _plain(text: str) -> str:
    """Text that Markdown shows as typed: ``x**2 + y**2`` would turn bold between the stars."""
    for special in "\\`*_<[":
        text = text.replace(special, "\\" + special)
    return text


def functions_table(rows: list[dict[str, Any]], plain: bool = False) -> Table:
    """The rows as a Rich table (user text as ``Text``, never markup)."""
    from rich import box

    table = Table(title="functions and operators", title_justify="left", header_style="bold",
                  box=box.SIMPLE if plain else box.ROUNDED, title_style="bold")
    for column in ("name", "written", "what it computes", "complex step", "vector"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            Text(row["name"], style="bold"),
            Text(", ".join(row["written"]), style="cyan"),
            Text(row["summary"]),
            Text("yes" if row["complex_step"] else "no", style="" if row["complex_step"]
                 else "yellow"),
            Text("NumPy" if row["vector"] else "point by point", style="" if row["vector"]
                 else "yellow"),
        )
    return table
