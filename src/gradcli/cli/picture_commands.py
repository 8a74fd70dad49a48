"""``gradcli graph`` and ``gradcli plot``: the graph and the function as pictures."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from gradcli.cli.arguments import (
    MAX_NODES_OPTION,
    BindingCommand,
    digits_option,
    given_values,
    option_given,
    program_arguments,
)
from gradcli.cli.base import cli
from gradcli.cli.files import write_file
from gradcli.cli.program_text import ProgramText
from gradcli.cli.show import print_tree, show_error
from gradcli.cli.streams import binary_stdout, can_encode
from gradcli.errors import GradcliError, UsageError, plural, visible
from gradcli.language.values import as_point
from gradcli.limits import MAX_DRAWN_NODES, MAX_NODES

GRAPH_HELP = """Draw the computational graph of EXPR: values on the nodes, gradients on the edges.

\b
--format tree   a tree from the output down (the default on a terminal)
--format dot    Graphviz source (the default in a pipe): gradcli graph ... | dot -Tsvg
--format mermaid  a Mermaid flowchart (renders in GitHub Markdown)
--format svg|png  rendered by Graphviz's `dot` program (install graphviz)
With -o FILE the format follows the suffix (.svg .png .dot .gv .mmd .txt); --format may
name it too, but not another format than the suffix names (.txt takes tree, dot or mermaid).
Without values for every variable: no gradients, and values only where the given
variables decide them; the picture names the variables without values. The gradients drawn
are checked as gradcli eval checks them: the verdict is the tree's last line, the DOT caption
or a Mermaid comment; a failed check exits 1 (--no-check skips it).

\b
Examples:
  gradcli graph "u = x*W; z = u + b; err = z - t; err*err" --x 2 --W 3 --b 1 --t 8
  gradcli graph -f examples/seed.grad -o seed.svg
  gradcli graph "sin(x)*x" --format mermaid
"""

PLOT_HELP = """Plot EXPR and its derivative along one variable given a range (--x -3:3:200).

\b
In the terminal by default; -o FILE.svg or FILE.png saves an image (needs matplotlib:
pip install 'gradcli[plot]'). Points with a numeric error (log of a negative number, overflow)
are gaps in the curves. The other variables take one value each. The derivative drawn is
checked at every point as eval's sweeps are: the last line says so or names the first point
where it disagrees with finite differences (then the exit status is 1; --no-check skips it).

\b
Examples:
  gradcli plot "tanh(x)" --x -3:3:200
  gradcli plot "x*W + b" --x -2:2:50 --W 3 --b 1 -o line.png
"""

MIN_PLOT_WIDTH, MAX_PLOT_WIDTH = 20, 1000  # --width: honoured, also past the terminal's width
MIN_PLOT_HEIGHT, MAX_PLOT_HEIGHT = 8, 1000
FORMATS = ("tree", "dot", "mermaid", "svg", "png")  # the tree is render's, the rest pictures'
_SUFFIX_FORMATS = {".svg": "svg", ".png": "png", ".dot": "dot", ".gv": "dot", ".mmd": "mermaid",
                   ".txt": "tree"}


@cli.command("graph", cls=BindingCommand, help=GRAPH_HELP)
@program_arguments("Give a variable a value (repeatable).")
@click.option("--format", "picture_format", type=click.Choice(FORMATS),
              help="tree, dot, mermaid, svg or png (default: see above).")
@click.option("-o", "--output", "output_path", metavar="FILE",
              help="Write to FILE instead of stdout (all of it or nothing).")
@click.option("--max-nodes", type=click.IntRange(0, MAX_NODES_OPTION), default=MAX_DRAWN_NODES,
              show_default=True, help="Draw at most N nodes, nearest the output (0: all).")
@digits_option("an array of more than 4 elements is drawn as its range [min ... max], "
               "beside its shape")
@click.option("--no-check", is_flag=True,
              help="Draw the gradients without the finite-difference check.")
@click.pass_context
def graph_command(ctx: click.Context, expr: str | None, assignments: tuple[str, ...],
                  program_file: str | None, picture_format: str | None,
                  output_path: str | None, max_nodes: int, digits: int | None,
                  no_check: bool) -> None:
    from gradcli.output.pictures import prepare, render_with_graphviz, to_dot, to_mermaid

    try:
        _check_output_path(output_path, "graph.svg")
        given = given_values(ctx, assignments)
        values = as_point(given.values)
        text = ProgramText.read("graph", expr, program_file)
        picture_format = _checked_format(picture_format, output_path)
        program = text.parsed(given)
        picture = prepare(program, values, digits, check=not no_check)
        if picture_format == "tree":
            _write_tree(picture, max_nodes, output_path)
        elif picture_format in ("dot", "mermaid"):
            dot_or_mermaid = to_mermaid if picture_format == "mermaid" else to_dot
            _write_bytes(dot_or_mermaid(picture, max_nodes).encode("utf-8"), output_path)
        else:
            if output_path is None and picture_format == "png" and sys.stdout.isatty():
                raise UsageError("a PNG is binary and stdout is a terminal", hint="add -o FILE.png")
            _write_bytes(render_with_graphviz(to_dot(picture, max_nodes), picture_format),
                         output_path)
        ctx.exit(picture.status)
    except GradcliError as error:
        if "--max-nodes" in (error.hint or ""):  # the parser's hint; graph's option draws less
            error.hint = (f"gradcli graph reads programs of up to {MAX_NODES:,} nodes; its "
                          "--max-nodes only limits how many are drawn")
        ctx.exit(show_error(error, False))


def _check_output_path(path: str | None, example: str) -> None:
    """``-o ""`` or ``-o DIR``: a usage error before any work (not ``cannot write : ...``)."""
    if path == "":
        raise UsageError("-o was given an empty path",
                         hint=f"give -o the file to write, e.g. -o {example}")
    if path is not None and os.path.isdir(path):
        raise UsageError(f"cannot write {visible(path)}: it is a directory",
                         hint=f"give -o a file in it: -o {os.path.join(visible(path), example)}")


def _checked_format(picture_format: str | None, output_path: str | None) -> str:
    """--format, or the format -o's suffix names (``-o g.pdf`` must not quietly get DOT text);
    ``-o g.svg --format png`` is refused."""
    if output_path is None:
        return picture_format or ("tree" if sys.stdout.isatty() else "dot")
    suffix = os.path.splitext(output_path)[1].lower()
    named = _SUFFIX_FORMATS.get(suffix)
    if picture_format is None:
        if not suffix and os.path.exists(output_path) and not os.path.isfile(output_path):
            return "dot"  # /dev/stdout, a FIFO: a stream, as when stdout is piped
        if named is None:
            what = f"a {visible(suffix)} file" if suffix else "a file without a suffix"
            raise UsageError(f"gradcli graph cannot write {what} ({visible(output_path)})",
                             hint="name the file " + ", ".join(_SUFFIX_FORMATS)
                             + ", or give --format " + "|".join(FORMATS))
        return named
    text = picture_format in ("tree", "dot", "mermaid")  # what a .txt file may hold
    if named in (None, picture_format) or (suffix == ".txt" and text):
        return picture_format
    suffixes = {name: suffix for suffix, name in reversed(_SUFFIX_FORMATS.items())}
    renamed = os.path.splitext(output_path)[0] + suffixes[picture_format]
    raise UsageError(f"-o {visible(output_path)} is a {suffix} file, and --format "
                     f"{picture_format} would write {picture_format} into it",
                     hint=f"write -o {visible(renamed)}, or drop --format to write "
                          f"{named} (the format {suffix} names)")


def _write_tree(picture: Any, max_nodes: int, output_path: str | None) -> None:
    from gradcli.output.trees import graph_tree

    if output_path is None:
        print_tree(picture, max_nodes)
        return
    import io

    from rich.console import Console

    text = io.StringIO()
    Console(file=text, width=200, no_color=True, highlight=False).print(
        graph_tree(picture, max_nodes))
    _write_bytes(text.getvalue().encode("utf-8"), output_path)


def _write_bytes(data: bytes, output_path: str | None) -> None:
    """``data`` to stdout, or whole to the file ``output_path`` (a UsageError if it cannot)."""
    if output_path is None:
        stream = binary_stdout()
        stream.write(data)
        stream.flush()
        return
    write_file(output_path, data)


@cli.command("plot", cls=BindingCommand, help=PLOT_HELP)
@program_arguments("Give a variable a value or a range (repeatable).")
@click.option("-o", "--output", "output_path", metavar="FILE",
              help="Save the plot as FILE.svg or FILE.png instead (all of it or nothing).")
@click.option("--width", type=click.IntRange(MIN_PLOT_WIDTH, MAX_PLOT_WIDTH),
              help="Terminal plot width in columns (default: the terminal's, 80 in a pipe; "
                   "not with -o).")
@click.option("--height", type=click.IntRange(MIN_PLOT_HEIGHT, MAX_PLOT_HEIGHT), default=22,
              show_default=True, help="Terminal plot height in rows (not with -o).")
@click.option("--no-check", is_flag=True,
              help="Draw the derivative without the finite-difference check.")
@click.pass_context
def plot_command(ctx: click.Context, expr: str | None, assignments: tuple[str, ...],
                 program_file: str | None, output_path: str | None, width: int | None,
                 height: int, no_check: bool) -> None:
    import shutil

    from gradcli.output.plot import image_format, plot_image, sample, terminal_plot

    try:
        _check_output_path(output_path, "plot.svg")
        file_format = None if output_path is None else image_format(output_path)
        _refuse_terminal_sizes(ctx, output_path)
        given = given_values(ctx, assignments)
        program = ProgramText.read("plot", expr, program_file).parsed(given)
        curve = sample(program, given.values, check=not no_check)
        gaps = f"; {curve.gaps} with a numeric error left as gaps" if curve.gaps else ""
        gaps += f"; {curve.verdict}"
        if output_path is not None and file_format is not None:
            _write_bytes(plot_image(curve, file_format), output_path)
            click.echo(f"wrote {visible(output_path)} ({plural(curve.xs.size, 'point')}{gaps})")
            ctx.exit(curve.status)
        terminal = sys.stdout.isatty()
        columns = width or (shutil.get_terminal_size().columns if terminal else 80)
        columns = min(max(columns, MIN_PLOT_WIDTH), MAX_PLOT_WIDTH)
        colour = terminal and not os.environ.get("NO_COLOR")  # set and not empty: no colour
        ascii_only = not can_encode(getattr(sys.stdout, "encoding", None) or "utf-8")
        click.echo(terminal_plot(curve, columns, height, colour, ascii_only))
        click.echo(f"{plural(curve.xs.size, 'point')}{gaps}")
        ctx.exit(curve.status)
    except GradcliError as error:
        ctx.exit(show_error(error, False))


def _refuse_terminal_sizes(ctx: click.Context, output_path: str | None) -> None:
    """--width and --height with -o would be ignored in silence: an image has its own size."""
    if output_path is None:
        return
    for name in ("width", "height"):
        if option_given(ctx, name):
            raise UsageError(f"--{name} sizes the plot in the terminal, and -o "
                             f"{visible(output_path)} saves an image of a fixed size",
                             hint=f"drop --{name}, or -o to plot in the terminal")
