"""Typed errors and exit statuses. Nothing here prints: the CLI decides how errors look."""

from __future__ import annotations

import re
from enum import IntEnum

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from typing_extensions import Self


class ExitStatus(IntEnum):
    """The documented exit statuses; a batch exits with the largest status among its records."""

    OK = 0
    CHECK_FAILED = 1  # a finite-difference check disagreed with the reverse-mode gradient
    USAGE = 2  # usage, parse or name error
    NUMERIC = 3  # a value or gradient is not finite (domain error, overflow, division by zero)
    OUTPUT_FAILED = 4  # stdout could not be written (a full disk, a closed descriptor, EIO)
    HANGUP = 129  # SIGHUP during a batch, as shells report it
    INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
    READER_GONE = 141  # the reader of stdout went away (| head -1), as shells report SIGPIPE
    TERMINATED = 143  # SIGTERM during a batch, as shells report it


class GradcliError(Exception):
    """An error in the user's input: where (1-based ``line`` and ``column`` in the program
    text) when known, and a ``hint`` of what to try."""

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
        message, hint = shortened(message), None if hint is None else shortened(hint)
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.hint = hint
        self.source_line = source_line  # the text of the offending line, for a caret display
        self.marks: tuple[int, ...] = ()  # more columns of that line to mark (a name used twice)

    @classmethod
    def at(cls, token: Any, message: str, hint: str | None = None) -> Self:
        """The error at ``token``, a ``lalr.Token`` of the program text (its line and column)."""
        return cls(message, line=token.line, column=token.column, hint=hint)

    def __str__(self) -> str:
        """``line 1, column 2: unexpected name x``: a traceback's last line (the CLI and JSON
        records print ``title``, ``message`` and ``hint`` instead)."""
        where = self.where
        return f"{where}: {self.message}" if where else self.message

    @property
    def where(self) -> str:
        """``line 1, column 2``, ``line 3``, or empty when the error has no position."""
        return _where(self.line, self.column)

    def fields(self) -> dict[str, Any]:
        """The ``error`` of a JSON record: kind, message, line, column and hint."""
        return {"kind": self.kind, "message": self.message, "line": self.line,
                "column": self.column, "hint": self.hint}

    @property
    def title(self) -> str:
        """``parse error at line 1, column 2``: what kind of error and where."""
        what = "numeric error" if self.kind == "domain" else f"{self.kind} error"
        return f"{what} at {self.where}" if self.line is not None else what

    def one_line(self) -> str:
        """The whole error on one line: what, where, and the hint."""
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{self.title}: {self.message}{hint}"


def _where(line: int | None, column: int | None) -> str:
    if line is None:
        return ""
    return f"line {line}" + ("" if column is None else f", column {column}")


def visible(text: str) -> str:
    """``text`` with unprintable characters as Python escapes (``\\x1b``), so that a name from
    the input can neither break a one-line message nor drive the terminal."""
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
    valueless: str | None = None  # a function's name used as a variable without a value


class Note:
    """A program that parses but may not say what was meant, by its ``reading``: ``case``
    (``PI*x``: a variable, the constant is ``pi``), ``function`` (``beta*x``: only ``beta(a, b)``
    calls), ``shadow`` (``e = 2`` hides the constant) or ``number`` (``NaN*x``: a variable
    whose name reads as a float that gradcli does not have). Such names may well be meant, so the
    caller decides: show the note when the name gets no value, or refuse with ``error()``. Its
    fields are a ``GradcliError``'s, so one display serves both (a plain class: a dataclass
    would cost every start of gradcli about 1 ms)."""

    kind: ClassVar[str] = "note"

    def __init__(self, name: str, meant: str, what: str, line: int | None = None,
                 column: int | None = None, source_line: str | None = None,
                 reading: str = "case") -> None:
        self.name = name  # the name as written: "PI"
        self.meant = meant  # the constant or function it may stand for; a function's call
        self.what = what  # "constant" or "function"
        self.line = line
        self.column = column
        self.source_line = source_line
        self.reading = reading  # "case", "function", "shadow" or "number" (above)

    def __repr__(self) -> str:
        return (f"Note(name={self.name!r}, meant={self.meant!r}, what={self.what!r}, "
                f"reading={self.reading!r})")

    def __eq__(self, other: object) -> bool:  # (and so unhashable: it is mutable)
        return isinstance(other, Note) and vars(self) == vars(other)

    @property
    def message(self) -> str:
        """``PI is a variable, not the constant pi``."""
        if self.reading == "function":
            return f"{self.name} is a variable here; {self.meant} would call the function"
        if self.reading == "number":
            return (f"{self.name} is a variable, not a number: gradcli's numbers are finite, "
                    "it has no NaN or infinity")
        return f"{self.name} is a variable, not the {self.what} {self.meant}"

    @property
    def hint(self) -> str:
        if self.reading == "function":
            return "a name followed by ( is a call; any other use of it is a variable"
        if self.reading == "number":
            return f"give {self.name} a value if it is a variable, or rename it ({self.name}_)"
        if self.reading == "shadow":
            return (f"a value for {self.name}, given or assigned, hides the constant; rename "
                    "the variable if you meant the constant")
        use = f"{self.meant}(...)" if self.what == "function" else self.meant
        return (f"names are case-sensitive: write {use} for the {self.what}, or give "
                f"{self.name} a value if it is a variable")

    @property
    def title(self) -> str:
        """``note at line 1, column 1``."""
        return f"note at {_where(self.line, self.column)}" if self.line is not None else "note"

    def one_line(self) -> str:
        return f"{self.title}: {self.message} (hint: {self.hint})"

    def error(self) -> GradcliNameError:
        """The note as an error, for a caller that refuses such a name without a value."""
        if self.reading == "function":
            error = GradcliNameError(
                f"{self.name} is a function: call it as {self.meant}", line=self.line,
                column=self.column, source_line=self.source_line,
                hint=f"to use {self.name} as a variable, give it a value (--{self.name} VALUE) "
                     f"or assign it ({self.name} = ...)")
            error.valueless = self.name
            return error
        if self.reading == "number":
            return GradcliNameError(f"{self.name} has no value; {self.message}", line=self.line,
                                    column=self.column, hint=self.hint,
                                    source_line=self.source_line)
        return GradcliNameError(
            f"{self.name} has no value; did you mean the {self.what} {self.meant}?",
            line=self.line, column=self.column, hint=self.hint, source_line=self.source_line)


class ResourceError(GradcliError):
    """A program that needs more memory than gradcli may use, or a batch line whose worker died:
    status 2, like a program over ``--max-nodes``."""

    kind = "resource"


OUT_OF_MEMORY = "not enough memory to evaluate this program"
RESOURCE_HINT = ("it may need more memory than gradcli may use here: evaluate it on its own, or "
                 "refuse such programs early with a smaller --max-nodes")


def no_room_to_load(error: ImportError) -> bool:
    """Whether an import failed for want of memory (under ``prlimit --as`` a library such as
    NumPy's cannot be mapped), which is a resource error, not a missing module."""
    text = str(error)
    return "map segment" in text or "memory" in text.lower()


def out_of_memory() -> ResourceError:
    """The error a ``MemoryError`` becomes, made once the memory of the attempt is free."""
    return ResourceError(OUT_OF_MEMORY, hint=RESOURCE_HINT)


class NumericError(GradcliError):
    """A value or gradient that is not a finite number, naming the node that produced it."""

    kind = "domain"
    status = ExitStatus.NUMERIC


class CheckError(GradcliError):
    """A derivative ``gradcli diff`` was about to print that disagrees with the numeric engine:
    never printed as an answer."""

    kind = "check"
    status = ExitStatus.CHECK_FAILED


def gradient_formula_error(name: str, formula: str, error: NumericError) -> NumericError:
    """``error`` of a Hessian's row, told as what it is: the formula of d/d``name``, which
    ``eval --hessian`` and ``diff --order 2`` differentiate, has no value at the point (the
    node it names is the formula's: ``x**y`` has no ``log(x)``, its d/dy = x**y*log(x) does),
    though the program and its gradient may have one."""
    return NumericError(
        f"the second derivatives by {name} differentiate the gradient's formula d/d{name} = "
        f"{formula}, which has no value here: {error.message}",
        hint="the gradient itself may be defined there (gradcli eval gives it); this formula "
             "is not, so no Hessian is given at this point")


MAX_LISTED_NAMES = 10  # messages list this many names, then "and N more"


def listed(names: list[str], limit: int = MAX_LISTED_NAMES) -> str:
    """``a, b, c`` -- or ``a, b, ... and 99,990 more`` when there are many."""
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f" and {len(names) - limit:,} more"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 point``, ``2 points``, ``1,000 points`` (``nouns``: an irregular plural)."""
    return f"{count:,} " + (noun if count == 1 else nouns or noun + "s")


LONGEST_ECHO = 80  # characters of one word of the input that a message repeats


def shortened(text: str, longest: int = LONGEST_ECHO) -> str:
    """``text`` with every word longer than ``longest`` characters cut to its start, end and
    length (``99999…99999 (1,000,000 characters)``), so that an echo stays one readable line."""
    if len(text) <= longest:
        return text
    return _LONG_WORD.sub(_elided, text) if _LONG_WORD.search(text) else text


def _elided(match: re.Match[str]) -> str:
    word = match.group(0)
    return f"{word[:40]}…{word[-20:]} ({len(word):,} characters)"


_LONG_WORD = re.compile(rf"\S{{{LONGEST_ECHO + 1},}}")
