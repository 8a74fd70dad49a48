"""Styled text for gradcli's tables and verdicts, made without loading Rich: a terminal gets
the same ``rich.text.Text`` (``__rich__``), a pipe its ``plain`` text (``output.plain``)."""

from __future__ import annotations

from typing import Any

# The control codes Rich drops from text it is given (rich.control.strip_control_codes)
_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))


class Text:
    """The part of ``rich.text.Text`` that gradcli uses (a Rich ``Text`` may be appended)."""

    __slots__ = ("plain", "spans", "style")

    def __init__(self, text: str = "", style: str = "") -> None:
        self.plain = text.translate(_STRIPPED)
        self.style = style
        self.spans: list[tuple[int, int, Any]] = []  # (start, end, style), as Rich's Span

    def append(self, text: Any, style: str | None = None) -> Text:
        """``text`` (a string in ``style``, or a Text with its own styles) at the end, as Rich
        appends it."""
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
            spans = text.spans if isinstance(text, Text) else [
                (span.start, span.end, span.style) for span in text.spans]
            self.spans.extend((start + offset, end + offset, span_style)
                              for start, end, span_style in spans)
            self.plain += plain
        return self

    @classmethod
    def assemble(cls, *parts: Any, style: str = "") -> Text:
        """Strings, Texts and ``(string, style)`` pairs, one after the other."""
        text = cls(style=style)
        for part in parts:
            if isinstance(part, str) or hasattr(part, "plain"):  # a Text, gradcli's or Rich's
                text.append(part)
            else:
                text.append(*part)
        return text

    def copy(self) -> Text:
        copied = Text(self.plain, self.style)
        copied.spans = list(self.spans)
        return copied

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


def rich_text(text: Any) -> Any:
    """``text`` as Rich draws it: a gradcli Text as a ``rich.text.Text``, anything else as it is."""
    return text.__rich__() if isinstance(text, Text) else text


# Characters one column wide that gradcli prints besides ASCII and Latin-1 (², ±, ·)
MARKS = frozenset("—✓✗…→←↺•─")


def is_narrow(text: str) -> bool:
    """Whether every character of ``text`` takes one column, as Rich counts them (ASCII and
    Latin-1 letters and signs, Greek, gradcli's marks; no control characters)."""
    if not text.isprintable():
        return False
    rest = text
    for mark in MARKS:  # C's loops, not Python's per character of 200-character lines
        rest = rest.replace(mark, "")
    return rest.isascii() or all(ord(char) < 0x300 or 0x370 <= ord(char) < 0x400 for char in rest)


def cell_len(text: str) -> int:
    """The columns ``text`` takes on a terminal: its length where every character is narrow,
    else Rich's count (wide East Asian characters, combining marks)."""
    if (text.isascii() and text.isprintable()) or is_narrow(text):
        return len(text)
    from rich.cells import cell_len as rich_cell_len

    return rich_cell_len(text)
