"""Tables never cut a number (issue 12): at any width each number is printed whole, or rounded to
``digits`` on request; when the table does not fit, it changes layout instead.

Rendered with ``Console(record=True, width=W)`` and read back: every number in the output equals
the number in the JSON record (values and gradients exactly; the finite-difference estimate to its
10 significant digits, the error to its 2).
"""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from gradcli.engine.notation import format_number
from gradcli.gradcheck.evaluation import EvalSettings, evaluate, evaluate_line
from gradcli.gradcheck.sweep import evaluate_sweep
from gradcli.gradcheck.sweep_stream import sweep_columns
from gradcli.language.parser import parse
from gradcli.output.batch_lines import batch_line
from gradcli.output.console import MIN_WIDTH
from gradcli.output.nodes import gradient_table, hessian_table, node_table
from gradcli.output.records import dumps, result_record
from gradcli.output.sweep_views import sweep_view
from gradcli.output.tables import Column, FittedTable
from gradcli.output.values import MAX_DIGITS, checked_digits, number_text
from gradcli.output.views import result_view

WIDTHS = [40, 60, 80, 120]

# Long and short numbers, a folding label, a constant (no gradient), many variables.
PROGRAMS = [
    ("x*y + sin(x)", {"x": 1.0, "y": 2.0}),
    ("(x*W+b-t)**2", {"x": 2.0, "W": 3.0, "b": 1.0, "t": 8.0}),
    ("exp(-x)*1e-300 + y/3 + sin(x*y*z)", {"x": 0.1, "y": -2.0 / 3.0, "z": 7.25e12}),
    ("a*b*c*d*f*g + tanh(a/b) - sqrt(c)/d", {n: 1.0 / (i + 3) for i, n in enumerate("abcdfg")}),
]
IDS = ["sin", "seed", "extremes", "six"]


def render(renderable, width: int) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), no_color=True,
                      highlight=False, soft_wrap=False, emoji=False)
    console.print(renderable)
    return console.export_text()


def lines_of(text: str) -> list[str]:
    return text.rstrip("\n").split("\n")


def parse_fitted(text: str, head: bool = True) -> tuple[str, list[dict[str, str]]]:
    """A ``FittedTable`` printed with rounded boxes, read back: its layout and one dict per row
    (column header -> cell text; a folded cell's lines joined). In the record layout each block
    is ``head  name text  name text ...`` (``head``: the table has head columns)."""
    lines = [line for line in lines_of(text)[1:] if line.strip()]  # the title first
    if any(line.startswith("╭") for line in lines):
        split = next(i for i, line in enumerate(lines) if line.startswith("├"))
        header_lines = [line.split("│")[1:-1] for line in lines[:split] if line.startswith("│")]
        headers = [" ".join(part[i].strip() for part in header_lines).strip()
                   for i in range(len(header_lines[0]))]
        rows: list[list[str]] = []
        for line in lines[split + 1:]:
            if not line.startswith("│"):
                continue
            cells = [cell.strip() for cell in line.split("│")[1:-1]]
            if cells[0] or not rows:
                rows.append(cells)
            else:  # a continuation line: only folding columns may have one
                rows[-1] = [f"{old} {new}".strip()
                            for old, new in zip(rows[-1], cells, strict=True)]
        return "table", [dict(zip(headers, row, strict=True)) for row in rows]
    blocks: list[str] = []
    for line in lines:
        if line.startswith(" ") and blocks:
            blocks[-1] += "  " + line.strip()
        else:
            blocks.append(line)
    records = []
    for block in blocks:
        pieces = block.split("  ")
        record = {"head": pieces[0]} if head else {}
        for piece in pieces[len(record):]:
            name, _, value = piece.partition(" ")
            record[name] = value
        records.append(record)
    return "records", records


def read_number(text: str) -> float:
    assert "…" not in text, f"a cut number: {text!r}"
    return float(text.split()[0])


def check_lines_fit(text: str, width: int) -> None:
    for line in lines_of(text):
        assert cell_len(line) <= width, f"longer than {width}: {line!r}"


@pytest.fixture(params=PROGRAMS, ids=IDS)
def evaluated(request):
    source, point = request.param
    result = evaluate(source, point, order=2)
    record = json.loads(dumps(result_record(result, source)))
    return result, record


@pytest.mark.parametrize("width", WIDTHS)
def test_node_table_numbers_equal_the_json_at_every_width(evaluated, width):
    result, record = evaluated
    text = render(node_table(result), width)
    check_lines_fit(text, width)
    assert lines_of(text)[0] == f"value {format_number(record['value'])}"
    _, rows = parse_fitted(text)
    nodes = {node["id"]: node for node in record["nodes"]}
    assert len(rows) == len(nodes)
    for row in rows:
        ident = row.get("id") or row["head"].split()[0]
        node = nodes[int(ident.lstrip("#"))]
        assert read_number(row["value"]) == node["value"]
        if node["grad"] is None:
            assert row.get("gradient", "—") == "—"
            continue
        assert read_number(row["gradient"]) == node["grad"]
        if node["numeric_grad"] is not None:
            assert read_number(row["numeric"]) == float(f"{node['numeric_grad']:.10g}")
            check = result.check.nodes[node["id"]]
            assert read_number(row["error"]) == float(f"{check.abs_error:.1e}")


@pytest.mark.parametrize("width", WIDTHS)
def test_gradient_table_numbers_equal_the_json_at_every_width(evaluated, width):
    result, record = evaluated
    text = render(gradient_table(result), width)
    check_lines_fit(text, width)
    _, rows = parse_fitted(text)
    assert len(rows) == len(record["gradients"])
    for row in rows:
        name = row.get("variable") or row["head"]
        check = record["check"]["gradients"][name]
        assert read_number(row["value"]) == record["point"][name]
        assert read_number(row["gradient"]) == record["gradients"][name]
        assert read_number(row["numeric"]) == float(f"{check['numeric']:.10g}")
        assert read_number(row["error"]) == float(f"{check['abs_error']:.1e}")
        assert row["ok"] == ("✓" if check["ok"] else "✗")


@pytest.mark.parametrize("width", WIDTHS)
def test_hessian_numbers_equal_the_json_at_every_width(evaluated, width):
    result, record = evaluated
    text = render(hessian_table(result), width)
    check_lines_fit(text, width)
    layout, rows = parse_fitted(text, head=False)
    matrix = record["hessian"]
    entries = {}
    for row in rows:
        if layout == "table":
            name = row.pop("")
            entries.update({f"{name},{column}": cell for column, cell in row.items()})
        else:
            entries.update(row)
    assert set(entries) == {f"{r},{c}" for r in matrix for c in matrix[r]}
    for key, cell in entries.items():
        r, c = key.split(",")
        assert read_number(cell) == matrix[r][c]


def test_the_layout_changes_with_the_width_and_numbers_stay_whole():
    result = evaluate("x*y + sin(x)", {"x": 1.0, "y": 2.0})
    assert parse_fitted(render(node_table(result), 120))[0] == "table"
    assert parse_fitted(render(node_table(result), 80))[0] == "records"
    text = render(node_table(result), 80)
    assert "2.5403023058681398" in text and "0.8414709848078965" in text
    assert "…" not in text
    # The record layout: one block per node, fields packed to the width, never split.
    assert lines_of(text)[2] == "#0 x  op var  value 1  gradient 2.5403023058681398  numeric " \
                                "2.540302306"
    assert lines_of(text)[3] == "  error 5.4e-12"


def test_a_label_folds_rather_than_a_number():
    long = "+".join(f"sin({n}*x)" for n in range(2, 9))
    result = evaluate(f"u = {long}\nu*x", {"x": 0.5})
    text = render(node_table(result), 120)
    layout, rows = parse_fitted(text)
    assert layout == "table"  # the labels fold; the numbers keep their width
    check_lines_fit(text, 120)
    assert any(len(row["label"]) > 40 for row in rows)
    for row in rows:
        read_number(row["value"])


def test_every_layout_fits_at_the_narrowest_width():
    result = evaluate("exp(-x)*1e-300 + y/3", {"x": -2.2250738585072014e-308, "y": -1e-300 / 3})
    for width in (MIN_WIDTH, MIN_WIDTH + 5):
        text = render(result_view(result), width)
        assert "-2.2250738585072014e-308" in text.split()
        for line in lines_of(text):  # only the verdict (words) may wrap; a number never is cut
            assert cell_len(line) <= width, line


def test_fitted_table_notes_and_empty_cells():
    table = FittedTable("t", [Column("name", fold=True, head=True), Column("n", justify="right")])
    table.add_row(Text("a"), Text("1.5"))
    table.add_note(Text("3 more rows"))
    table.add_row(Text("b"), Text("—"))
    assert "… 3 more rows" in render(table, 80)
    # Too narrow for a table: one block per row; a field too long for a line puts its number
    # on a line of its own.
    narrow = FittedTable("t", [Column("value", justify="right"), Column("gradient")])
    narrow.add_row(Text("-2.2250738585072014e-308"), Text("-2.2250738585072014e-308"))
    assert lines_of(render(narrow, MIN_WIDTH)) == [
        "t", "", "value -2.2250738585072014e-308", "  gradient",
        "    -2.2250738585072014e-308"]


# --- digits ----------------------------------------------------------------------------------


@pytest.mark.parametrize("digits", [1, 3, 6, 17])
def test_digits_rounds_values_and_gradients(digits):
    source, point = PROGRAMS[2]
    result = evaluate(source, point, order=2)
    text = render(result_view(result, digits=digits), 200)
    _, grads = parse_fitted(render(gradient_table(result, digits=digits), 200))
    for row in grads:
        name = row["variable"]
        assert row["gradient"] == f"{result.gradients[name]:.{digits}g}"
        assert row["value"] == f"{result.point[name]:.{digits}g}"
        assert row["numeric"] == f"{result.check.gradients[name].numeric:.{digits}g}"
    assert text.split("\n")[0] == f"value {result.value:.{digits}g}"
    _, entries = parse_fitted(render(hessian_table(result, digits=digits), 200), head=False)
    for row in entries:
        name = row.pop("")
        for column, cell in row.items():
            assert cell.split()[0] == f"{result.hessian.matrix[name][column]:.{digits}g}"


def test_digits_in_batch_lines_and_sweeps():
    outcome = evaluate_line(1, "x/3 + y", {"x": 1.0, "y": 2.0}, EvalSettings())
    assert batch_line(outcome).plain == ("line 1: value 2.3333333333333335  "
                                         "d/dx 0.3333333333333333  d/dy 1  ✓")
    assert batch_line(outcome, digits=3).plain == "line 1: value 2.33  d/dx 0.333  d/dy 1  ✓"
    hessian = evaluate_line(1, "x**3/3", {"x": 1.1}, EvalSettings(order=2))
    assert "d2/dx [2.2]" in batch_line(hessian, digits=2).plain
    program = parse("x/3")
    sweep = evaluate_sweep(program, sweep_columns(program, {"x": (0.1, 0.2)}))
    text = render(sweep_view(sweep, digits=4), 80)
    assert "0.03333" in text and "0.3333" in text and "0.03333333" not in text
    full = render(sweep_view(sweep), 80)
    assert "0.03333333333333333" in full and "0.06666666666666667" in full


def test_digits_must_be_1_to_17():
    assert checked_digits(None) is None and checked_digits(5) == 5
    for bad in (0, -1, MAX_DIGITS + 1, 2.5, True):
        with pytest.raises(ValueError, match="digits must be 1 to 17"):
            checked_digits(bad)
    result = evaluate("x", {"x": 1.0})
    with pytest.raises(ValueError):
        result_view(result, digits=0)
    assert number_text(0.1) == "0.1" and number_text(0.1, 17) == "0.10000000000000001"
    assert number_text(2.0) == "2" and number_text(123456.0, 2) == "1.2e+05"
    assert number_text(float("inf"), 3) == "inf" and number_text(-0.0, 3) == "-0"


@pytest.mark.parametrize("width", WIDTHS)
def test_sweep_numbers_equal_the_json_at_every_width(width):
    program = parse("sin(x*y)/3 + z")
    sweep = evaluate_sweep(program, sweep_columns(
        program, {"x": (0.1, 2.0 / 3.0, 1e-7), "y": 1.7, "z": -1e300}))
    from gradcli.gradcheck.sweep import point_records

    records = list(point_records(sweep))
    text = render(sweep_view(sweep), width)
    check_lines_fit(text, width)
    body = text.split("\n✓")[0]  # the summary after the table
    _, rows = parse_fitted(body, head=False)
    assert len(rows) == len(records)
    for row, record in zip(rows, records, strict=True):
        for name in ("x", "y", "z"):
            assert read_number(row[name]) == record["point"][name]
            assert read_number(row[f"d/d{name}"]) == record["gradients"][name]
        assert read_number(row["value"]) == record["value"]


# --- on a terminal ---------------------------------------------------------------------------


def on_terminal(width: int, args: list[str], columns: str | None = None) -> str:
    """What ``gradcli ARGS`` shows on a terminal ``width`` columns wide (no colour)."""
    import fcntl
    import os
    import struct
    import subprocess
    import sys
    import termios

    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, width, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR")}
    env["NO_COLOR"] = "1"
    if columns is not None:
        env["COLUMNS"] = columns
    child = subprocess.Popen([sys.executable, "-m", "gradcli", *args], stdin=subprocess.DEVNULL,
                             stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    try:
        while chunk := os.read(leader, 65536):
            chunks.append(chunk)
    except OSError:  # the terminal closed: the child has ended
        pass
    finally:
        os.close(leader)
    assert child.wait(timeout=60) in (0, 1)  # 1: a gradient disagrees (z = 7.25e12)
    text = b"".join(chunks).decode().replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;]*m", "", text)  # bold and dim stay with NO_COLOR


@pytest.mark.skipif(not hasattr(__import__("os"), "openpty"), reason="needs a pseudo-terminal")
@pytest.mark.parametrize(("width", "columns", "layout"), [
    (120, None, 120), (80, None, 80), (10, None, MIN_WIDTH), (80, "0", 80), (80, "1", 80),
    (200, "60", 60)])
def test_on_a_terminal_every_number_is_whole_and_lines_fit(width, columns, layout):
    source, point = PROGRAMS[2]
    args = ["eval", source, *(f"--{name}={value!r}" for name, value in point.items())]
    text = on_terminal(width, args, columns)
    result = evaluate(source, point)
    words = set(text.split())
    for number in [result.value, *result.gradients.values(),
                   *(node.value for node in result.program.nodes)]:
        assert format_number(number) in words
    assert "…" not in text
    for line in lines_of(text):
        assert cell_len(line) <= layout, line
