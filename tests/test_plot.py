"""gradcli plot: samples against closed forms, gaps at numeric errors, valid image files."""

from __future__ import annotations

import math
import sys
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
from click.testing import CliRunner

from gradcli.cli import cli
from gradcli.errors import UsageError
from gradcli.language.values import parse_value
from gradcli.output.plot import plot_image, sample, segments, terminal_plot, thinned

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run(*args: str):
    return CliRunner().invoke(cli, ["plot", *args])


def test_samples_match_closed_forms():
    xs = parse_value("x", "-3:3:61")
    curve = sample("x**3*W + sin(x)", {"x": xs, "W": 0.5})
    grid = np.array(xs)
    assert curve.name == "x" and curve.gaps == 0
    np.testing.assert_allclose(curve.values, 0.5 * grid**3 + np.sin(grid), rtol=1e-12)
    np.testing.assert_allclose(curve.derivative, 1.5 * grid**2 + np.cos(grid), rtol=1e-12,
                               atol=1e-15)


def test_numeric_errors_are_gaps_not_crashes():
    curve = sample("log(x)*x", {"x": (-1.0, 0.0, 0.5, 1.0, 2.0)})
    assert curve.gaps == 2
    assert np.isnan(curve.values[:2]).all() and np.isnan(curve.derivative[:2]).all()
    # d/dx x log x = log x + 1
    np.testing.assert_allclose(curve.derivative[2:], [math.log(v) + 1 for v in (0.5, 1, 2)])
    assert [run_x for run_x, _ in segments(curve, curve.values)] == [[0.5, 1.0, 2.0]]


def test_a_gap_in_the_middle_splits_the_line():
    curve = sample("sqrt(x**2 - 1)", {"x": parse_value("x", "-2:2:9")})
    runs = [run_x for run_x, _ in segments(curve, curve.values)]
    assert runs == [[-2.0, -1.5], [1.5, 2.0]]  # |x| <= 1 is outside the domain (or infinite d/dx)


def test_long_sweeps_are_thinned_for_the_terminal_keeping_gaps():
    curve = sample("sqrt(x)", {"x": parse_value("x", "-1:1:20001")})
    small = thinned(curve, 500)
    assert small.xs.size <= 500 + 41  # whole strides of 41, then the ragged end
    finite = ~np.isnan(small.values)
    np.testing.assert_allclose(small.values[finite], np.sqrt(small.xs[finite]))
    assert np.isnan(small.values[small.xs <= 0]).all()  # x <= 0 is still a gap (sqrt'(0) = inf)
    assert finite[small.xs > 0.001].all()
    assert thinned(curve, 30_000) is curve


@pytest.mark.parametrize(("values", "message"), [
    ({"x": 1.0}, "no variable was given several values"),
    ({"x": (1.0, 2.0), "y": (1.0, 2.0)}, "2 variables (x, y) were given several values"),
    ({"z": (1.0, 2.0), "x": 1.0, "y": 2.0}, "does not use z"),
    ({"x": (1.0, 2.0)}, "no value for y"),
])
def test_usage_errors(values, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sample("x*y", values)


def test_terminal_plot_plain_and_coloured():
    curve = sample("tanh(x)", {"x": parse_value("x", "-3:3:100")})
    plain = terminal_plot(curve, width=60, height=15, colour=False)
    assert "\x1b[" not in plain
    lines = plain.splitlines()
    assert "tanh(x):  ▀ value   • d/dx" in lines[0]
    assert len(lines) == 15 and max(len(line) for line in lines) <= 60
    assert "-3" in lines[-1] and "3" in lines[-1]
    assert "\x1b[" in terminal_plot(curve, width=60, height=15, colour=True)


def test_plotext_s_own_warnings_stay_off_stderr():
    """A sweep whose values are one number (x over 1:1:5) made plotext print a coloured
    warning to stderr, past NO_COLOR and gradcli's own lines (found by a bug hunt)."""
    done = CliRunner().invoke(cli, ["plot", "x", "--x", "1:1:5"], env={"NO_COLOR": "1"})
    assert done.exit_code == 0 and done.stderr == "", done.stderr


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_plot_to_a_file_is_a_valid_image(tmp_path, suffix):
    target = tmp_path / f"plot.{suffix}"
    result = run("log(x)", "--x", "-1:3:50", "-o", str(target))
    assert result.exit_code == 0, result.output
    assert "50 points; 13 with a numeric error left as gaps" in result.stdout
    if suffix == "png":
        assert target.read_bytes().startswith(PNG_SIGNATURE)
    else:
        root = ElementTree.parse(target).getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg"


def test_plot_title_text_is_not_mathtext(tmp_path):
    curve = sample("a = x*2; a", {"x": (0.0, 1.0)})
    curve.title = "$\\frac{1"  # would be a mathtext parse error if interpreted
    assert plot_image(curve, "svg").startswith(b"<?xml")


def test_cli_terminal_plot_and_errors():
    result = run("x**2", "--x", "-2:2:41", "--width", "60", "--height", "12")
    assert result.exit_code == 0
    assert "\x1b[" not in result.stdout and "x**2:  ▀ value   • d/dx" in result.stdout
    assert result.stdout.rstrip().endswith("41 points; d/dx checked at every point")
    result = run("x**2", "--x", "2")
    assert result.exit_code == 2 and "give one variable a range" in result.stderr
    result = run("x**2", "--x", "-2:2:5", "-o", "plot.pdf")
    assert result.exit_code == 2 and "name the file .svg or .png" in result.stderr
    assert "cannot save a plot as a .pdf file" in result.stderr
    result = run("x**2", "--x", "-2:2:5", "-o", "plot")  # it quoted 'a file without a suffix'
    assert result.exit_code == 2 and "cannot save a plot as a file without a suffix" in (
        result.stderr)
    result = run("x**2", "--x", "-2:2:5", "-o", "/nonexistent-dir/plot.png")
    assert result.exit_code == 2 and "cannot write /nonexistent-dir/plot.png" in result.stderr
    assert "Traceback" not in result.output


def test_without_matplotlib_saving_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import now fails
    result = run("x**2", "--x", "-2:2:5", "-o", str(tmp_path / "p.png"))
    assert result.exit_code == 2
    assert "pip install 'gradcli[plot]'" in result.stderr


def test_the_curve_drawn_is_checked_and_a_kink_on_the_grid_says_so():
    """Found by an audit: plot drew the derivative with no check. It is checked at every point,
    as eval's sweeps are: relu's kink at x = 0 (no derivative) is named, status 1."""
    result = run("relu(x)*y", "--x", "-2:2:5", "--y", "2", "--width", "60", "--height", "12")
    assert result.exit_code == 1
    assert result.stdout.rstrip().endswith(
        "5 points; d/dx disagrees with finite differences at 1 point (the first at x = 0: a "
        "kink or a jump there, or a wrong rule; gradcli eval shows it)")
    assert run("relu(x)*y", "--x", "-2:2:4", "--y", "2", "--width", "60",
               "--height", "12").exit_code == 0  # 0 not on the grid
    unchecked = run("relu(x)*y", "--x", "-2:2:5", "--y", "2", "--width", "60", "--height", "12",
                    "--no-check")
    assert unchecked.exit_code == 0
    assert unchecked.stdout.rstrip().endswith("5 points; d/dx not checked (--no-check)")
