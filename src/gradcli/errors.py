"""Typed errors and exit statuses. Nothing here prints: the CLI decides how errors look."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """The documented exit statuses; a batch exits with the largest status among its records."""

    OK = 0
    CHECK_FAILED = 1  # a finite-difference check disagreed with the reverse-mode gradient
    USAGE = 2  # usage, parse or name error
    NUMERIC = 3  # a value or gradient is not finite (domain error, overflow, division by zero)
    INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
    READER_GONE = 141  # the reader of stdout went away (| head -1), as shells report SIGPIPE


class GradcliError(Exception):
    """An error in the user's input, with where it happened when that is known.

    ``line`` and ``column`` are 1-based positions in the program text; ``hint`` says what to try.
    """

    kind = "usage"
    status = ExitStatus.USAGE

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
        source_line: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.hint = hint
        self.source_line = source_line  # the text of the offending line, for a caret display

    def __str__(self) -> str:
        return self.message

    @property
    def title(self) -> str:
        """``parse error at line 1, column 2``: what kind of error and where."""
        what = "numeric error" if self.kind == "domain" else f"{self.kind} error"
        if self.line is None:
            return what
        where = f"line {self.line}" + ("" if self.column is None else f", column {self.column}")
        return f"{what} at {where}"

    def one_line(self) -> str:
        """The whole error on one line: what, where, and the hint."""
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{self.title}: {self.message}{hint}"


def visible(text: str) -> str:
    """``text`` with control and other unprintable characters as Python escapes (``\\x1b``,
    ``\\n``): a file name or key from the input can then neither break a one-line message nor
    drive the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class UsageError(GradcliError):
    """Bad command-line use: a missing value, a value bound to a constant, a bad option."""

    kind = "usage"


class ParseError(GradcliError):
    """The program text does not follow the grammar."""

    kind = "parse"


class GradcliNameError(GradcliError):
    """An unknown function, a wrong number of arguments, a name assigned twice."""

    kind = "name"


class NumericError(GradcliError):
    """A value or gradient that is not a finite number, naming the node that produced it."""

    kind = "domain"
    status = ExitStatus.NUMERIC


MAX_LISTED_NAMES = 10  # messages list this many names, then "and N more"


def listed(names: list[str], limit: int = MAX_LISTED_NAMES) -> str:
    """``a, b, c`` -- or ``a, b, ... and 99,990 more`` when there are many."""
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f" and {len(names) - limit:,} more"
