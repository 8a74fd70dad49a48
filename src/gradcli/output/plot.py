"""The output and its derivative along one swept variable: sampled in one vectorised pass,
drawn in the terminal (plotext) or saved as SVG/PNG (matplotlib, ``gradcli[plot]``), both
imported only when a picture is drawn. A point without a finite value or gradient is a gap in
both curves, never a crash."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradcli.engine.graph import Program
from gradcli.engine.notation import expression_texts, format_number
from gradcli.engine.ops import numpy
from gradcli.errors import ExitStatus, GradcliError, NumericError, UsageError, plural, visible
from gradcli.gradcheck.evaluation import evaluate, require_values
from gradcli.gradcheck.sweep import vector_sweep
from gradcli.language.parser import program_of
from gradcli.language.values import Value, runs_on_arrays, validate_values

FILE_FORMATS = ("svg", "png")
PLOT_EXTRA_HINT = "pip install 'gradcli[plot]' (it adds matplotlib)"
MAX_IMAGE_POINTS = 20_000  # a picture 700 pixels wide shows no more; an SVG stays a few MB


@dataclass
class Curve:
    """The output ``values`` and ``derivative`` d(output)/d(``name``) at the points ``xs``, NaN
    where the function has a numeric error (``gaps`` of them); the derivative drawn is checked
    at every point as ``eval``'s sweeps are (``disagree``: the points where it failed)."""

    name: str
    title: str  # the output's expression
    xs: Any
    values: Any
    derivative: Any
    gaps: int
    disagree: Any = None  # the xs where the derivative disagrees with finite differences

    @property
    def status(self) -> int:
        """1 where the derivative drawn disagrees with finite differences somewhere; else 0."""
        failed = self.disagree is not None and len(self.disagree) > 0
        return ExitStatus.CHECK_FAILED if failed else ExitStatus.OK

    @property
    def verdict(self) -> str:
        """The check of the curve drawn, in one clause."""
        if self.disagree is None:
            return f"d/d{self.name} not checked (--no-check)"
        if not len(self.disagree):
            return f"d/d{self.name} checked at every point"
        first = format_number(float(self.disagree[0]))
        return (f"d/d{self.name} disagrees with finite differences at "
                f"{plural(len(self.disagree), 'point')} (the first at {self.name} = {first}: "
                "a kink or a jump there, or a wrong rule; gradcli eval shows it)")


def sample(program: str | Program, values: Mapping[str, Value], check: bool = True) -> Curve:
    """Evaluate ``program`` along the one variable given several values (``--x -3:3:200``)."""
    program = program_of(program, given=values)
    validate_values(values)
    if runs_on_arrays(program, values):
        what = "several outputs" if program.outputs else "arrays"
        raise UsageError(f"plot draws scalar programs; this one has {what}",
                         hint="gradcli eval gives an array program's value and gradients")
    swept = [name for name, value in values.items() if isinstance(value, tuple)]
    example = 'e.g. --x -3:3:200 (START:STOP:COUNT) or --x 0,0.5,1'
    if len(swept) != 1:
        what = ("no variable was" if not swept
                else f"{len(swept)} variables ({', '.join(swept)}) were")
        raise UsageError(f"plot sweeps exactly one variable, and {what} given several values",
                         hint=f"give one variable a range, {example}")
    name = swept[0]
    if name not in program.variables:
        used = ", ".join(program.variables) or "none"
        raise UsageError(f"the program does not use {name} (its variables: {used})",
                         hint=f"sweep one of its variables, {example}")
    require_values(program, values)
    np = numpy()
    xs = np.asarray(values[name], dtype=float)
    columns = {key: np.broadcast_to(np.asarray(values[key], dtype=float), xs.shape)
               for key in program.variables if key in values}
    swept = vector_sweep(program, columns, check=check)  # the derivative drawn: every point
    derivative = np.array(swept.gradients[name], dtype=float)
    output = np.array(swept.value, dtype=float)
    output[swept.failed] = np.nan
    derivative[swept.failed] = np.nan
    title = expression_texts(program.nodes)[-1]
    if swept.failed.all():
        raise _nothing_to_draw(program, values, name, title, xs)
    disagree = xs[~swept.failed & ~swept.check_ok] if check else None
    return Curve(name, title, xs, output, derivative, int(swept.failed.sum()), disagree)


def _nothing_to_draw(program: Program, values: Mapping[str, Value], name: str, title: str,
                     xs: Any) -> NumericError:
    """Every point is a numeric error (an empty frame would look like a plot): say so, with the
    reason at the first point."""
    first = {key: value[0] if isinstance(value, tuple) else value
             for key, value in values.items() if key in program.variables}
    reason = ""
    try:
        evaluate(program, first, check=False)
    except GradcliError as error:
        reason = f"; at {name} = {first[name]!r}: {error.message}"
    return NumericError(
        f"{title} has no finite value or derivative at any of the {xs.size:,} points "
        f"{name} = {float(xs.min())!r} … {float(xs.max())!r}{reason}",
        hint=f"plot a range of {name} inside the function's domain")


def segments(curve: Curve, ys: Any) -> Iterator[tuple[list[float], list[float]]]:
    """The runs of consecutive finite points of ``ys``: each is drawn as its own line."""
    run_x: list[float] = []
    run_y: list[float] = []
    for x, y in zip(curve.xs.tolist(), ys.tolist(), strict=True):
        if y == y:  # not NaN
            run_x.append(x)
            run_y.append(y)
        elif run_x:
            yield run_x, run_y
            run_x, run_y = [], []
    if run_x:
        yield run_x, run_y


def thinned(curve: Curve, most: int) -> Curve:
    """About ``most`` points of ``curve``, strided; a gap if any point of its stride is one."""
    np = numpy()
    size = curve.xs.size
    stride = -(-size // most)
    if stride <= 1:
        return curve
    usable = size - size % stride  # whole strides; the ragged end is kept point by point
    pieces = []
    for ys in (curve.values, curve.derivative):
        head = ys[:usable:stride].copy()
        head[np.isnan(ys[:usable]).reshape(-1, stride).any(axis=1)] = np.nan
        pieces.append(np.concatenate([head, ys[usable:]]))
    xs = np.concatenate([curve.xs[:usable:stride], curve.xs[usable:]])
    return Curve(curve.name, curve.title, xs, pieces[0], pieces[1], curve.gaps, curve.disagree)


def terminal_plot(curve: Curve, width: int = 80, height: int = 22, colour: bool = True,
                  ascii_only: bool = False) -> str:
    """The curve and its derivative as text for a terminal (plotext), thinned to 8 points per
    column; ``ascii_only`` marks the points with ``#`` and ``*``."""
    import plotext

    curve = thinned(curve, 8 * width)
    # plotext prints its own warnings, in colour, to stderr (values too close together to
    # be told apart on an axis): gradcli's stderr keeps to its own lines, and to NO_COLOR
    with contextlib.redirect_stderr(io.StringIO()):
        return _drawn(plotext, curve, width, height, colour, ascii_only)


def _drawn(plotext: Any, curve: Curve, width: int, height: int, colour: bool,
           ascii_only: bool) -> str:
    figure = plotext.figure
    figure.clear()
    plotext.terminal.limit(False, False)  # the size asked for, even past the terminal's
    figure.theme("simple" if colour else "colorless")  # simple: no background colour
    figure.plot_size(width, height)
    # No legend box (it covers the curves): the title names each line by its marker, which
    # tells them apart without colour too.
    value_mark, slope_mark = ("#", "*") if ascii_only else ("▀", "•")
    figure.title(f"{curve.title}:  {value_mark} value   {slope_mark} d/d{curve.name}")
    lines = ((curve.values, "#" if ascii_only else "hd", "blue+"),
             (curve.derivative, slope_mark, "red+"))
    for ys, symbol, colour_name in lines:
        for run_x, run_y in segments(curve, ys):
            marker = plotext.marker(symbol, colour_name)
            figure.draw(figure.signal(run_x, run_y, marker=marker).lines())
    if curve.xs.size > 1:  # the whole swept range, so gaps at either end show as gaps
        figure.ruler(axis=0).lim(float(curve.xs.min()), float(curve.xs.max()))
    text = str(figure.build())
    figure.clear()
    plotext.terminal.limit()
    if colour:
        return text
    return "\n".join(line.rstrip() for line in plotext.uncolorize(text).splitlines())


def image_format(path: str | Path) -> str:
    """``svg`` or ``png``: the suffix of ``path``."""
    file_format = Path(path).suffix.lstrip(".").lower()
    if file_format not in FILE_FORMATS:
        what = f"a .{file_format} file" if file_format else "a file without a suffix"
        raise UsageError(f"cannot save a plot as {visible(what)}",
                         hint="name the file .svg or .png")
    return file_format


def plot_image(curve: Curve, file_format: str) -> bytes:
    """The curve and its derivative as an SVG or PNG file's bytes (thinned to
    ``MAX_IMAGE_POINTS``); matplotlib's warnings are silenced, so it says nothing on stderr."""
    import logging
    import warnings

    # Its log's warnings too: without a writable home, matplotlib makes a temporary config
    # directory (removed at exit) and would say so.
    logging.getLogger("matplotlib").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state
        except ImportError:
            raise UsageError("saving a plot needs matplotlib, which is not installed",
                             hint=PLOT_EXTRA_HINT + "; without -o the plot prints in the terminal"
                             ) from None
        curve = thinned(curve, MAX_IMAGE_POINTS)
        figure = Figure(figsize=(7, 4.2), layout="constrained")
        axes = figure.subplots()
        axes.plot(curve.xs, curve.values, label="value", color="#1d4ed8")
        axes.plot(curve.xs, curve.derivative, label=f"d/d{curve.name}", color="#b91c1c",
                  linestyle="--")
        axes.axhline(0, color="#9ca3af", linewidth=0.6)
        axes.set_xlabel(curve.name)
        axes.set_title(curve.title.replace("$", r"\$"), fontsize=10)  # no mathtext
        axes.legend()
        axes.grid(alpha=0.3)
        image = io.BytesIO()
        figure.savefig(image, format=file_format)
    return image.getvalue()
