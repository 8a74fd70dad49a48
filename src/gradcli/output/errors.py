"""An error as a person reads it: ``error: …``, the source line with a caret, and the hint."""

from __future__ import annotations

from rich.text import Text

from gradcli.errors import GradcliError, visible


def error_view(error: GradcliError, source_name: str = "", width: int | None = None) -> Text:
    """``error: …`` then, for a position, the source line with a caret under the column; on a
    terminal ``width`` columns wide, a part of the line that fits (a wrapped line would leave
    the caret under another character)."""
    text = Text("error: ", style="bold red")
    # visible(): a file name or path in a message must not drive the terminal (or add lines)
    text.append(visible(f"{source_name}{error.title}: {error.message}"))
    if error.source_line is not None and error.column is not None:
        side = SOURCE_WINDOW if width is None else max(10, min(SOURCE_WINDOW, (width - 6) // 2))
        line, column = _window(printable(error.source_line), error.column, side)
        text.append(f"\n  {line}\n  ")
        offset = column - error.column
        carets = sorted({column, *(mark + offset for mark in error.marks if mark + offset > 0)})
        done = 1
        for caret in carets:
            text.append(" " * (caret - done))
            text.append("^", style="bold red")
            done = caret + 1
    if error.hint:
        text.append("\n  hint: ", style="yellow")
        text.append(visible(error.hint))
    return text


SOURCE_WINDOW = 60  # characters of the source line shown on each side of the caret


def _window(line: str, column: int, side: int = SOURCE_WINDOW) -> tuple[str, int]:
    """The part of a long line around ``column``, ``side`` characters each way (``…`` where
    cut), and the caret's column."""
    start = max(0, column - 1 - side)
    end = column - 1 + side
    if start == 0 and end >= len(line):
        return line, column
    head = "…" if start else ""
    return head + line[start:end] + ("…" if end < len(line) else ""), column - start + len(head)


def printable(line: str) -> str:
    """The line with control characters shown as '?', one column each, so the caret lines up."""
    return "".join(c if c.isprintable() else "?" for c in line)

