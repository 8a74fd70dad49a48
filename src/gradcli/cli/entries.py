"""Where a session's entry ends: at a newline outside brackets. An open parenthesis or bracket
continues the entry on the next line, as a newline inside brackets does in a file (the session
on a terminal, ``cli.terminal``, and from a stream, ``cli.repl``)."""

from __future__ import annotations

import re


def open_brackets(text: str) -> int:
    """How many ``(`` and ``[`` are not closed yet (comments ignored): the entry goes on, as a
    newline inside brackets does in a file. Counted by ``str.count``, not a loop per character:
    the terminal asks at every key of a 90 KB paste."""
    if "#" in text:
        text = _COMMENT.sub("", text)
    return text.count("(") + text.count("[") - text.count(")") - text.count("]")


_COMMENT = re.compile(r"#[^\r\n]*")


class GrowingEntry:
    """``open_brackets`` of an entry that grows at its end, as typing or a paste makes it: the
    whole lines seen before are counted once, so a key costs a comparison with them (C speed)
    and a count of the last line, not a count of the whole entry."""

    def __init__(self) -> None:
        self.counted = ""  # whole lines, up to and with their last newline
        self.depth = 0

    def open_brackets(self, text: str) -> int:
        if not text.startswith(self.counted):
            self.counted, self.depth = "", 0
        cut = text.rfind("\n") + 1
        if cut > len(self.counted):
            self.depth += open_brackets(text[len(self.counted):cut])
            self.counted = text[:cut]
        return self.depth + open_brackets(text[cut:])
