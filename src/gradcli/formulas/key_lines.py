"""Where a key is in a check file's text: ``tomllib`` reports no positions for keys, so
``KeyLines`` finds a key's line in the text. The n-th ``[[check]]`` header starts the n-th
check's block, and a key is the first line of that block that assigns it (``key =``,
``key.sub =`` or a ``[check.key]`` sub-table).

The text is read once into an index (for every key, the lines that assign it), so finding a line
is a binary search, never a scan: a file of 32,000 checks loads in seconds.
"""

from __future__ import annotations

import bisect
import re


class KeyLines:
    """Finds the line of a key in a check file's text (1-based), simply: see the module docstring.

    The text is read once: for every key, the lines that assign it at the start of a line
    (``key =``, ``key.sub =``, ``[check.key]``, ``[key]``) and the lines where it is assigned
    anywhere (``{key = ...}``, ``.key =``), each list in order; a look-up is then a binary search
    of one list, so a whole file's keys take linear time, whatever the number of checks or keys.
    """

    def __init__(self, text: str) -> None:
        self.count = 0
        self.headers: list[int] = []  # 0-based lines of the [[check]] headers
        self.leading: dict[str, list[int]] = {}
        self.inner: dict[str, list[int]] = {}
        for number, line in enumerate(text.split("\n")):  # TOML ends lines with LF (or CR LF)
            self.count += 1
            if _HEADER.match(line):
                self.headers.append(number)
                continue
            found = _LEADING.match(line)
            if found:
                key = _unquoted(found.group(1) or found.group(2) or found.group(3))
                self.leading.setdefault(key, []).append(number)
            for found in _INNER.finditer(line):
                key = _unquoted(found.group(1))
                lines = self.inner.setdefault(key, [])
                if not lines or lines[-1] != number:
                    lines.append(number)

    def header(self, number: int) -> int:
        return self.headers[number] + 1 if number < len(self.headers) else 1

    def top(self, key: str) -> int | None:
        end = self.headers[0] if self.headers else self.count
        return _first(self.leading.get(key), 0, end)

    def key(self, number: int, *path: str) -> int:
        """The line of ``path`` (``("gradients", "x")``) in the ``number``-th check's block."""
        start = self.headers[number] if number < len(self.headers) else 0
        end = self.headers[number + 1] if number + 1 < len(self.headers) else self.count
        found = _first(self.leading.get(path[0]), start, end) or self.header(number)
        for part in path[1:]:
            found = _first(self.inner.get(part), found - 1, end) or found
        return found


def _first(lines: list[int] | None, start: int, end: int) -> int | None:
    """The first of ``lines`` (sorted, 0-based) in ``start`` ... ``end - 1``, 1-based."""
    if not lines:
        return None
    at = bisect.bisect_left(lines, start)
    return lines[at] + 1 if at < len(lines) and lines[at] < end else None


_KEY = r"""(?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')"""  # bare, "quoted" or 'literal'
_HEADER = re.compile(r"\s*\[\[\s*check\s*\]\]")
# ``key = ``, ``key.sub = ``, a ``[check.key]`` sub-table or a ``[key]`` table
_LEADING = re.compile(rf"\s*(?:({_KEY})\s*[=.]|\[\s*check\s*\.\s*({_KEY})\s*\]|\[\s*({_KEY})\s*\])")
# ``key =`` anywhere: at the start, or after ``{``, ``,``, a space or a dot
_INNER = re.compile(rf"(?:^|(?<=[{{,\s.]))({_KEY})\s*=")



def _unquoted(key: str) -> str:
    return key[1:-1] if key[:1] in "\"'" and len(key) >= 2 else key

