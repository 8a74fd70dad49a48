"""One per-node view for numbers and arrays (issue 29): where the two used to differ, a program
of numbers and the same program on arrays now behave alike.

Each case runs a program twice, on numbers and on one-element arrays (``[2]``: the same
arithmetic, so the same values), and reads the rendered table back as text.
"""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from gradcli.gradcheck.check import CheckReport, GradientCheck
from gradcli.gradcheck.evaluation import evaluate
from gradcli.output.nodes import gradient_table, node_table
from gradcli.output.tables import MAX_TABLE_ROWS
from gradcli.output.verdicts import verdict
from gradcli.output.views import result_view

KINDS = ("numbers", "arrays")


def render(renderable, width: int = 200) -> list[str]:
    console = Console(record=True, width=width, file=io.StringIO(), no_color=True,
                      highlight=False, soft_wrap=False, emoji=False)
    console.print(renderable)
    return console.export_text().rstrip("\n").split("\n")


def run(text: str, values: dict[str, float], kind: str, **settings):
    """``text`` evaluated at ``values``, given as numbers or as one-element arrays (then the
    output is the sum of the one-element result)."""
    if kind == "numbers":
        return evaluate(text, {name: float(value) for name, value in values.items()}, **settings)
    import numpy as np

    given = {name: np.array([float(value)]) for name, value in values.items()}
    return evaluate(f"sum({text})", given, **settings)


@pytest.mark.parametrize("kind", KINDS)
def test_one_row_per_node_with_the_values_a_closed_form_gives(kind):
    """f = x*x + 3*x at x = 2: 10, df/dx = 2x + 3 = 7; every node's row, in order."""
    result = run("x*x + 3*x", {"x": 2}, kind)
    lines = render(node_table(result, plain=True))
    rows = [line.split() for line in lines if line.strip().startswith("#")]
    assert [row[0] for row in rows] == [f"#{i}" for i in range(len(result.program.nodes))]
    x_row = next(row for row in rows if row[1] == "x")
    assert ("2" in x_row and "7" in x_row) or ("[2]" in x_row and "[7]" in x_row)
    headers = next(line.split() for line in lines if line.split()[:2] == ["id", "label"])
    assert ("shape" in headers) == (kind == "arrays")
    assert result.value == pytest.approx(10.0)


@pytest.mark.parametrize("kind", KINDS)
def test_a_long_graph_notes_the_hidden_nodes_where_they_were(kind):
    """Past MAX_TABLE_ROWS nodes: the first half of that, the note, then the output's row."""
    terms = MAX_TABLE_ROWS + 50
    result = run("+".join(["x"] * terms), {"x": 1}, kind, check=False)
    count = len(result.program.nodes)
    lines = render(node_table(result, plain=True))
    rows = [i for i, line in enumerate(lines) if line.strip().startswith("#")]
    note = next(i for i, line in enumerate(lines) if "more nodes (--json lists all)" in line)
    hidden = count - MAX_TABLE_ROWS // 2 - 1
    assert f"{hidden:,} more nodes" in lines[note]
    assert len(rows) == MAX_TABLE_ROWS // 2 + 1
    assert rows[-2] < note < rows[-1]  # the note sits in the gap, the output's row after it
    assert lines[rows[-1]].split()[0] == f"#{count - 1}"


@pytest.mark.parametrize("kind", KINDS)
def test_many_variables_show_the_first_and_say_how_many_more(kind):
    names = [f"v{i}" for i in range(MAX_TABLE_ROWS + 3)]
    result = run("+".join(names), dict.fromkeys(names, 1), kind, check=False)
    lines = render(gradient_table(result, plain=True))
    assert sum(line.split()[0] in names for line in lines if line.split()) == MAX_TABLE_ROWS
    assert any("3 more variables (--json lists all)" in line for line in lines)


@pytest.mark.parametrize("kind", KINDS)
def test_an_unchecked_hessian_says_so_under_its_table(kind):
    result = run("x*x*y", {"x": 2, "y": 3}, kind, check=False, order=2)
    lines = render(result_view(result, plain=True))
    skipped = [i for i, line in enumerate(lines) if "check skipped (--no-check)" in line]
    hessian = next(i for i, line in enumerate(lines) if "Hessian of the output" in line)
    assert len(skipped) == 2 and skipped[0] < hessian < skipped[1]


@pytest.mark.parametrize("kind", KINDS)
def test_a_checked_hessian_reads_alike(kind):
    """d²(x*x*y) = [[2y, 2x], [2x, 0]] = [[6, 4], [4, 0]] at (2, 3), in either kind; the
    verdict's words are the same (an array program's counts its blocks too)."""
    result = run("x*x*y", {"x": 2, "y": 3}, kind, order=2)
    assert result.hessian is not None
    entries = {(a, b): float(sum(getattr(v, "flat", [v])))
               for a, row in result.hessian.matrix.items() for b, v in row.items()}
    assert entries == pytest.approx({("x", "x"): 6, ("x", "y"): 4, ("y", "x"): 4, ("y", "y"): 0})
    text = "\n".join(render(result_view(result, plain=True)))
    blocks = " of 4 Hessian blocks" if kind == "arrays" else ""
    assert re.search(rf"✓ check passed: \d second derivatives{blocks} agree with finite "
                     "differences of the gradient", text)


def _element_check(analytic: float, ok: bool, checked: int = 1) -> GradientCheck:
    error = 0.0 if ok else 1.0
    return GradientCheck(analytic, analytic + error, error, 1e-5, ok, "central", 1e-6,
                         checked=checked, size=checked, failed=0 if ok else 1, where=(0,))


ELEMENTS = (("gradient element", "gradient elements"), None, ("node", "nodes"))


def test_one_element_agrees_in_the_singular():
    text = verdict(CheckReport(1e-5, 1e-8, {"x": _element_check(2.0, True)}), *ELEMENTS).plain
    assert text.startswith("✓ check passed: 1 gradient element of 1 node agrees with")


@pytest.mark.parametrize(("analytic", "cause"), [(1e13, "pole"), (2.0, "not differentiable")])
def test_an_array_check_names_the_likely_cause_as_a_number_check_does(analytic, cause):
    failed = _element_check(analytic, False, checked=3)
    text = verdict(CheckReport(1e-5, 1e-8, {"x": failed}), *ELEMENTS).plain
    assert text.startswith("✗ check failed: 1 of 3 gradient elements of 1 node disagrees")
    assert cause in text and ("pole" in text) == (cause == "pole")


def test_each_array_is_summarised_once_per_result(monkeypatch):
    """The node table and the variables' table both show W, x and their gradients: each large
    array is read (``np.asarray`` in ``value_text``) once per result, and every cell still
    says its own array's ends, minimum and maximum (W = 0..19 and x = 1..5 by hand)."""
    import numpy as np

    from gradcli.output import values
    from gradcli.output.views import result_parts

    w, x = np.arange(20.0).reshape(4, 5), np.arange(1.0, 6.0)
    result = evaluate("sum(W@x)", {"W": w, "x": x}, check=False)
    read: list[int] = []
    real = np.asarray
    monkeypatch.setattr(np, "asarray", lambda value, *args, **kwargs: (
        read.append(id(value)), real(value, *args, **kwargs))[1])
    parts = result_parts(result, plain=True)
    assert read.count(id(result.point["W"])) == 1
    assert read.count(id(result.gradients["W"])) == 1
    text = "\n".join(" ".join(cell.plain for cell in cells) for part in parts
                     if hasattr(part, "cells") for cells in part.cells())
    assert text.count("[0, 1, 2, …, 17, 18, 19] min 0, max 19") == 2  # W in both tables
    # d/dW[i, j] = x[j]: the rows of x, 1..5, four times
    assert text.count("[1, 2, 3, …, 3, 4, 5] min 1, max 5") == 2
    assert values.value_text(w) == "[0, 1, 2, …, 17, 18, 19] min 0, max 19"
