"""The plain writer (output/plain.py) prints a piped result as Rich prints it, line for line.

Each result is drawn twice at several widths: by a Rich console in a pipe (what gradcli piped
printed before the plain writer, ``make_console``'s settings and its trimmed line ends), and by
``plain_lines``. Where the plain writer takes the layout, the lines are identical; where it
declines (None), Rich draws, and the common results must not be declined (the start-up it
saves is the point).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from gradcli.gradcheck.evaluation import evaluate
from gradcli.output.console import _TrimmedLines
from gradcli.output.plain import _cell_lines, plain_lines, writes_plain
from gradcli.output.tables import MAX_TABLE_ROWS
from gradcli.output.text import Text
from gradcli.output.views import result_parts, result_view

WIDTHS = (30, 60, 80, 120, 200, 1000)
RNG = np.random.default_rng(30)

CASES = {
    "seed": ("(x*W+b-t)**2", {"x": 2.0, "W": 3.0, "b": 1.0, "t": 8.0}, {}),
    "statements": ("u = x*W; z = u + b; err = z - t; err*err",
                   {"x": 2.0, "W": 3.0, "b": 1.0, "t": 8.0}, {}),
    "long label": ("+".join(f"sin(x*{i})" for i in range(1, 30)), {"x": 0.3}, {}),
    "a failed check": ("abs(x)", {"x": 0.0}, {}),
    "a pole": ("1/x", {"x": 1e-9}, {}),
    "no check": ("x*y", {"x": 2.0, "y": -3.5}, {"check": False}),
    "hessian": ("x**3*y + exp(x*y)", {"x": 0.5, "y": -1.25}, {"order": 2}),
    "greek": ("beta*alpha**2", {"beta": 2.0, "alpha": 1e-300}, {}),
    "arrays": ("sum(W*x)", {"W": np.array([[1.0, 2.0], [3.0, 4.0]]),
                            "x": np.array([0.5, -1.0])}, {}),
    "large array": ("sum(x*x)", {"x": np.linspace(0.0, 1.0, 50)}, {}),
    "many nodes": ("+".join(f"x*{i}" for i in range(MAX_TABLE_ROWS)), {"x": 1.5}, {}),
    # issue 30's A1: summarised arrays whose cells wrap over several lines
    "A1": ("mean((W@x + b - t)**2)", {name: RNG.normal(size=shape) for name, shape in (
        ("W", (40, 40)), ("x", 40), ("b", 40), ("t", 40))}, {}),
    "A1 unchecked": ("mean((W@x + b - t)**2)", {"W": RNG.normal(size=(7, 3)) * 1e-200,
                                                "x": RNG.normal(size=3) * 1e150,
                                                "b": np.zeros(7), "t": np.ones(7)},
                     {"check": False}),
}


def rich_lines(renderable, width: int) -> list[str]:
    """What a Rich console in a pipe prints, as ``console.make_console`` makes it."""
    out = io.StringIO()
    console = Console(file=_TrimmedLines(out), width=width, highlight=False, soft_wrap=True,
                      emoji=False, force_terminal=False)
    console.print(renderable)
    console.file.flush()
    return out.getvalue().split("\n")[:-1]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", CASES)
def test_the_plain_lines_are_rich_s_lines(case, width):
    text, values, settings = CASES[case]
    for digits in (None, 3):
        result = evaluate(text, values, strict=False, **settings)
        lines = plain_lines(result_parts(result, True, digits), width)
        if lines is not None:
            assert lines == rich_lines(result_view(result, plain=True, digits=digits), width)


@pytest.mark.parametrize("case", ["seed", "statements", "a failed check", "no check",
                                  "hessian", "greek", "arrays", "many nodes", "large array",
                                  "A1", "A1 unchecked"])
def test_common_results_are_printed_without_rich(case):
    text, values, settings = CASES[case]
    result = evaluate(text, values, strict=False, **settings)
    assert plain_lines(result_parts(result, True), 200) is not None


def test_a_label_that_folds_is_written_plain():
    """At 120 columns the long label folds over several lines of its column."""
    text, values, _ = CASES["long label"]
    lines = plain_lines(result_parts(evaluate(text, values), True), 120)
    assert lines is not None and len(lines) > 12


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab ,-[]…\n", max_size=40), width=st.integers(1, 12),
       justify=st.sampled_from(["left", "right"]), wrap=st.booleans())
def test_a_cell_wraps_as_rich_wraps_it(text, width, justify, wrap):
    """Any text of narrow characters, spaces and line ends: the lines of Rich's ``Text.wrap``
    (overflow "fold"), padded to the width as a table cell pads them."""
    from rich.text import Text as RichText

    console = Console(width=200, file=io.StringIO())
    theirs = RichText(text).wrap(console, width, justify=justify, overflow="fold",
                                 no_wrap=not wrap)
    expected = [line.plain + " " * (width - len(line.plain)) for line in theirs]
    assert _cell_lines(text, width, justify, wrap) == expected


@given(st.text(max_size=30))
def test_narrow_text_is_what_it_was_written_as(text):
    """``is_narrow``'s quick form against its definition, character by character."""
    from gradcli.output.text import MARKS, is_narrow

    assert is_narrow(text) == (text.isprintable() and all(
        ord(char) < 0x300 or 0x370 <= ord(char) < 0x400 or char in MARKS for char in text))


def test_what_only_rich_can_lay_out_is_left_to_it():
    """A table too wide for the width (the record layout), wide and control characters."""
    text, values, _ = CASES["long label"]
    result = evaluate(text, values)
    assert plain_lines(result_parts(result, True), 80) is None
    wide = Text("label")
    wide.append("字", style="bold")  # two columns wide
    assert plain_lines([wide], 200) is None
    assert plain_lines([Text("a\x1bb")], 200) is None


def test_gradcli_text_becomes_the_same_rich_text():
    """Spans, base styles and control codes as Rich's own Text keeps them."""
    from rich.text import Text as RichText

    ours = Text("✓ ", style="bold green").append("ok\r", style="dim")
    ours = Text.assemble(ours, ("x", "red"), Text("y", style="blue"), style="italic")
    ours.append(RichText("z", style="cyan").append("w", style="bold"))
    theirs = RichText("✓ ", style="bold green").append("ok\r", style="dim")
    theirs = RichText.assemble(theirs, ("x", "red"), RichText("y", style="blue"),
                               style="italic")
    theirs.append(RichText("z", style="cyan").append("w", style="bold"))
    converted = ours.__rich__()
    assert (converted.plain, converted.style, converted.spans) == (
        theirs.plain, theirs.style, theirs.spans)
    assert ours.copy().__rich__().spans == theirs.copy().spans


class _Pipe(io.StringIO):
    encoding = "utf-8"


def test_rich_draws_where_the_environment_asks_for_colour(monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    assert writes_plain(_Pipe())
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not writes_plain(_Pipe())


def test_a_piped_seed_example_loads_no_rich():
    code = ("import atexit, sys; atexit.register(lambda: print('rich:', *(m for m in "
            "sys.modules if m.startswith('rich')), file=sys.stderr))\n"
            "from gradcli.cli import main; sys.argv[0] = 'gradcli'; main()")
    done = subprocess.run([sys.executable, "-c", code, "eval", "(x*W+b-t)**2", "--x", "2",
                           "--W", "3", "--b", "1", "--t", "8"], capture_output=True,
                          text=True, check=False, env={**os.environ, "COLUMNS": "120"})
    assert done.returncode == 0
    assert "✓ check passed: 8 gradients agree" in done.stdout
    assert done.stderr.splitlines()[-1] == "rich:"
