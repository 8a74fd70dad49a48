"""``Result`` where people already look (issue 19): the eval table in Jupyter (``_repr_html_``)
and IPython (``_repr_pretty_``), a short ``repr`` at a plain Python prompt -- and Rich is still
not imported by ``import gradcli`` and an evaluation."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys

import pytest

import gradcli
from gradcli.output.notebook import result_text

SEED = "(x*W+b-t)**2"
POINT = {"x": 2, "W": 3, "b": 1, "t": 8}


def rows(text: str, title: str) -> dict[str, list[str]]:
    """The rows of the table under ``title``, by their first cell, boxes or not."""
    found: dict[str, list[str]] = {}
    for line in text[text.index(title):].splitlines()[1:]:
        cells = [cell for cell in re.split(r"[│\s]+", line) if cell]
        if not cells or set(cells[0]) <= set("─┼├┤╭╮╰╯┬┴"):
            if found:
                break
            continue
        if cells[0] not in ("variable", "id"):
            found[cells[0]] = cells[1:]
    return found


def test_a_plain_prompt_gets_a_short_repr():
    result = gradcli.evaluate(SEED, POINT)
    assert repr(result) == ("Result(value=1.0, gradients={'x': -6.0, 'W': -4.0, 'b': -2.0, "
                            "'t': 2.0}, check=passed, nodes=9)")
    wide = gradcli.evaluate(" + ".join(f"v{i}*v{i}" for i in range(500)),
                            {f"v{i}": i for i in range(500)})
    assert len(repr(wide)) < 250 and "... 492 more" in repr(wide)
    free = gradcli.evaluate("x*y", {"x": 3}, strict=False)
    assert repr(free) == "FreeResult(value='3*y', gradients={'x': 'y', 'y': '3'}, free=['y'])"


def test_an_array_or_several_outputs_get_a_short_repr_and_tables_too():
    """A JacobianResult printed the whole dataclass, its Program and nodes, on 800 characters,
    and had no notebook tables (a bug hunt)."""
    result = gradcli.evaluate("x*2", {"x": [1, 2]})
    assert repr(result) == ("JacobianResult(outputs={x*2: 2}, inputs=['x'], mode='reverse', "
                            "check=passed, nodes=3)")
    page = html.unescape(re.sub(r"<[^>]+>", "", result._repr_html_()))
    assert "outputs" in page and "[2, 4]" in page and page.strip() == result_text(result)


def test_the_notebook_shows_the_table_eval_prints():
    result = gradcli.evaluate(SEED, POINT)
    page = result._repr_html_()
    assert page.startswith("<pre") and "<span style=" in page  # styled, inline
    shown = html.unescape(re.sub(r"<[^>]+>", "", page)).strip()
    assert shown == result_text(result)
    eval_output = subprocess.run(
        [sys.executable, "-m", "gradcli", "eval", SEED,
         *[text for name, value in POINT.items() for text in (f"--{name}", str(value))]],
        capture_output=True, text=True, check=True, env={**os.environ, "COLUMNS": "120"}).stdout
    for title in ("gradients of the output", "value 1"):
        assert rows(shown, title) == rows(eval_output, title)
    # and the numbers are the closed form's: d/dx = 2*(x*W+b-t)*W = -6, d/dW = -4, ...
    assert {name: cells[1] for name, cells in rows(shown, "gradients of the output").items()} == {
        "x": "-6", "W": "-4", "b": "-2", "t": "2"}
    assert "✓ check passed" in shown


def test_ipython_prints_the_table():
    pretty = pytest.importorskip("IPython.lib.pretty")
    result = gradcli.evaluate(SEED, POINT, order=2)
    text = pretty.pretty(result)
    assert text == result_text(result) and "Hessian of the output" in text
    free = gradcli.evaluate("x*y", {"x": 3}, strict=False)
    assert "free variables: y" in pretty.pretty(free)


def test_displaying_loads_rich_only_when_asked():
    probe = ("import sys, gradcli\n"
             "result = gradcli.evaluate('sin(x)', {'x': 1.0})\n"
             "repr(result)\n"
             "assert 'rich' not in sys.modules\n"
             "result._repr_html_()\n"
             "assert 'rich' in sys.modules\n")
    subprocess.run([sys.executable, "-c", probe], check=True)
