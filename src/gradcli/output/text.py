"""Styled text for gradcli's tables and verdicts, made without loading Rich.

``Text`` keeps what Rich's ``rich.text.Text`` keeps of the calls gradcli makes (the text, a
base style, styled spans) and becomes that Rich object when Rich draws it (``__rich__``), so
that a terminal shows exactly what it did. In a pipe, where styles print as nothing, the plain
writer (``output.plain``) prints its ``plain`` text without Rich at all: Rich's modules are
most of the start-up of a ``gradcli eval`` whose table goes to a file or a program.
"""

from __future__ import annotations

from typing import Any

# The control codes Rich drops from text it is given (rich.control.strip_control_codes)
_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))


class Text:
    """The part of ``rich.text.Text`` that gradcli's tables and verdicts use: made from a
    string and a style, ``append``, ``assemble`` and ``copy``, read through ``plain``; a Rich
    ``Text`` may be appended to it (its spans kept)."""

    __slots__ = ("plain", "spans", "style")

    def __init__(self, text: str = "", style: str = "") -> None:
        self.plain = text.translate(_STRIPPED)
        self.style = style
        self.spans: list[tuple[int, int, Any]] = []  # (start, end, style), as Rich's Span

    def append(self, text: Any, style: str | None = None) -> Text:
        """``text`` (a string in ``style``, or a Text with its own styles) at the end, as
        ``rich.text.Text.append`` does it."""
        if isinstance(text, str):
            text = text.translate(_STRIPPED)
            if text and style:
                self.spans.append((len(self.plain), len(self.plain) + len(text), style))
            self.plain += text
            return self
        if style is not None:
            raise ValueError("style must not be set when appending Text instance")
        offset, plain = len(self.plain), text.plain
        if plain:
            if text.style:
                self.spans.append((offset, offset + len(plain), text.style))
            self.spans.extend((start + offset, end + offset, span_style)
                              for start, end, span_style in _spans(text))
            self.plain += plain
        return self

    @classmethod
    def assemble(cls, *parts: Any, style: str = "") -> Text:
        """Strings, Texts and ``(string, style)`` pairs, one after the other."""
        text = cls(style=style)
        for part in parts:
            if isinstance(part, (str, Text)) or hasattr(part, "plain"):
                text.append(part)
            else:
                text.append(*part)
        return text

    def copy(self) -> Text:
        copied = Text(self.plain, self.style)
        copied.spans = list(self.spans)
        return copied

    def __bool__(self) -> bool:
        return bool(self.plain)

    def __len__(self) -> int:
        return len(self.plain)

    def __str__(self) -> str:
        return self.plain

    def __repr__(self) -> str:
        return f"Text({self.plain!r}, style={self.style!r})"

    def __rich__(self) -> Any:
        """The same text as a ``rich.text.Text``, for Rich to draw."""
        from rich.text import Span
        from rich.text import Text as RichText

        return RichText(self.plain, style=self.style,
                        spans=[Span(start, end, style) for start, end, style in self.spans])


def _spans(text: Any) -> list[tuple[int, int, Any]]:
    """The styled spans of a gradcli Text or of a Rich one."""
    if isinstance(text, Text):
        return text.spans
    return [(span.start, span.end, span.style) for span in text.spans]


def rich_text(text: Any) -> Any:
    """``text`` as Rich draws it: a gradcli Text as a ``rich.text.Text``, anything else as it is."""
    return text.__rich__() if isinstance(text, Text) else text


# Characters one column wide that gradcli prints besides ASCII: its marks, rules and ellipses
MARKS = frozenset("—✓✗…→←↺•─")  # Latin-1 signs (², ±, ·) are below U+0300


def is_narrow(text: str) -> bool:
    """Whether every character of ``text`` takes one column, as Rich counts them (ASCII and
    Latin-1 letters and signs, Greek, gradcli's marks; no control characters)."""
    if not text.isprintable():
        return False
    rest = text
    for mark in MARKS:  # C's loops, not one of Python's per character: a table line of an
        rest = rest.replace(mark, "")  # array's elements is some 200 characters
    try:
        rest.encode("latin-1")
    except UnicodeEncodeError:
        return all(ord(char) < 0x300 or 0x370 <= ord(char) < 0x400 for char in rest)
    return True


def cell_len(text: str) -> int:
    """The columns ``text`` takes on a terminal: its length where every character is narrow,
    else Rich's count (wide East Asian characters, combining marks)."""
    if (text.isascii() and text.isprintable()) or is_narrow(text):
        return len(text)
    from rich.cells import cell_len as rich_cell_len

    return rich_cell_len(text)
