"""Jupyter and IPython show a ``Result`` as the table ``gradcli eval`` prints: ``api`` attaches
``_repr_html_`` and ``_repr_pretty_`` (``show_in_notebooks``), as the result classes may not
import ``output``. Rich is imported when a result is first displayed."""

from __future__ import annotations

from typing import Any

NOTEBOOK_WIDTH = 120  # columns of the notebook table (Jupyter's output area scrolls wider ones)
_PRE = ('<pre style="white-space: pre; overflow-x: auto; line-height: normal; '
        "font-family: Menlo, 'DejaVu Sans Mono', consolas, 'Courier New', monospace\">"
        "<code>{code}</code></pre>")


PYTHON_FREE_HINT = "give them values for numbers; strict=True makes this an error"


def _printed(result: Any, color: bool) -> Any:
    """A Rich console that has recorded ``result``'s view, in memory: the notebook's page."""
    import io

    from rich.console import Console

    from gradcli.output.views import result_view

    console = Console(file=io.StringIO(), record=True, width=NOTEBOOK_WIDTH, force_terminal=color,
                      no_color=not color, color_system="truecolor" if color else None,
                      highlight=False, emoji=False, force_jupyter=False)
    console.print(result_view(result, free_hint=PYTHON_FREE_HINT))
    return console


def result_html(result: Any) -> str:
    """The result's tables and verdict as HTML with inline styles (a notebook cell)."""
    return _printed(result, True).export_html(inline_styles=True, code_format=_PRE)


def result_text(result: Any) -> str:
    """The same tables as plain text (the IPython terminal)."""
    return _printed(result, False).export_text().rstrip("\n")


def _repr_pretty_(self: Any, printer: Any, cycle: bool) -> None:
    printer.text(repr(self) if cycle else result_text(self))


def show_in_notebooks(*classes: type) -> None:
    """Give ``classes`` (``Result``, ``FreeResult``) the methods IPython and Jupyter look for."""
    methods = {"_repr_html_": result_html, "_repr_pretty_": _repr_pretty_}
    for cls in classes:
        for name, method in methods.items():  # set by name: the classes do not declare them
            setattr(cls, name, method)
