"""stdin, stdout and stderr in whatever state the shell hands them over, like a Unix tool.

``settle()`` runs first in ``main()``. A closed descriptor (``>&-``) gets ``/dev/null``, so no
file opened later lands on 0, 1 or 2; a closed stdin reads as empty (a batch then has no
programs: a usage error). stdout writes every byte or fails (``_WholeWrites``): a
gone reader is a ``BrokenPipeError`` (status 141), any other failure an ``OutputFailedError``
(status 4), which no ``except OSError`` in a command mistakes for a file of its own. stderr never
changes the outcome (``_QuietText``). An encoding without gradcli's marks gets ASCII stand-ins
(``ASCII_STAND_INS``). Streams a test or program put in place (``CliRunner``) are kept.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import IO, Any

# The characters gradcli prints that a non-UTF encoding may lack, and what stands in for them.
ASCII_STAND_INS = {
    "✓": "ok", "✗": "FAIL", "—": "-", "\u2013": "-", "…": "...", "·": "|", "•": "*", "↺": "^",
    "←": "<-", "→": "->", "±": "+-", "▀": "#", "━": "-", "─": "-", "│": "|", "┃": "|",
    "╭": "+", "╮": "+", "╰": "+", "╯": "+", "┌": "+", "┐": "+", "└": "+", "┘": "+", "├": "+",
    "┤": "+", "┬": "+", "┴": "+", "┼": "+", "\ufeff": "",
}
_ASCII_ERRORS = "gradcli-ascii"
_MARKS = "✓✗—│"


class OutputFailedError(Exception):
    """stdout could not be written (not a reader that went away: that is a BrokenPipeError)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error)
        self.error = error

    @property
    def reason(self) -> str:
        """``No space left on device``: what went wrong, as the OS says it."""
        return self.error.strerror or str(self.error)


class _WholeWrites(io.RawIOBase):
    """stdout's descriptor, written until every byte is out: a short write to a pipe whose
    reader left would otherwise be dropped in silence by Python's buffered writer (status 0);
    writing the rest gets the EPIPE. A descriptor closed at start fails every write (EBADF)."""

    def __init__(self, fd: int, closed: bool = False) -> None:
        super().__init__()
        self.fd = fd
        self.closed_at_start = closed
        self.discard = False  # after the failure was reported: later writes go nowhere

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return not self.closed_at_start and os.isatty(self.fd)

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        if self.discard:
            return len(view)
        if self.closed_at_start:
            raise OutputFailedError(OSError(errno.EBADF, os.strerror(errno.EBADF)))
        done = 0
        while done < len(view):
            try:
                done += os.write(self.fd, view[done:])
            except BrokenPipeError:
                raise
            except BlockingIOError:  # a non-blocking stdout that is full for now: wait
                import select

                select.select([], [self.fd], [], 1.0)
            except OSError as error:
                raise OutputFailedError(error) from None
        return done


class _QuietText:
    """stderr: a write or flush that fails puts ``/dev/null`` in its place; the messages are
    lost and the exit status stays the command's."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError:
            self._lost()
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError:
            self._lost()

    def _lost(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            _occupy(2, os.O_WRONLY, always=True)
            self.stream.flush()  # what was buffered goes to /dev/null now

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno, ...: the stream's
        return getattr(self.stream, name)


class _AsciiText(io.TextIOWrapper):
    """A text stream in an encoding without gradcli's marks. It hides ``buffer``, which click
    would write UTF-8 bytes to; binary output goes to ``binary`` (``binary_stdout()``)."""

    binary: IO[bytes]

    @property
    def buffer(self) -> Any:
        raise AttributeError("buffer")


stdin_closed = False  # stdin was closed when gradcli started (`<&-`): it reads as empty


def settle() -> None:
    """Put the standard streams in the state described in the module docstring."""
    global stdin_closed
    closed = [_occupy(fd, os.O_RDONLY if fd == 0 else os.O_WRONLY) for fd in (0, 1, 2)]
    if sys.stdin is None or (closed[0] and sys.stdin is sys.__stdin__):
        stdin_closed = True
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "rb", closefd=False), encoding="utf-8")
    if sys.stdout is None or sys.stdout is sys.__stdout__:
        shut = sys.stdout is None or closed[1]
        sys.stdout = _text_stream(io.BufferedWriter(_WholeWrites(1, closed=shut)), sys.stdout)
    if sys.stderr is None or sys.stderr is sys.__stderr__:
        sys.stderr = _QuietText(_text_stream(io.FileIO(2, "wb", closefd=False), sys.stderr,
                                             unbuffered=True))


def _occupy(fd: int, flags: int, always: bool = False) -> bool:
    """True if ``fd`` was closed; it is then ``/dev/null`` (``always``: whatever it was)."""
    try:
        os.fstat(fd)
        if not always:
            return False
    except OSError:
        pass
    try:
        spare = os.open(os.devnull, flags)
    except OSError:
        return True
    if spare != fd:
        os.dup2(spare, fd)
        os.close(spare)
    return True


def _text_stream(binary: Any, old: IO[str] | None, unbuffered: bool = False) -> IO[str]:
    """A text stream over ``binary`` with ``old``'s encoding, or ASCII stand-ins. ``unbuffered``
    (stderr): no buffer's lock is ever held by a thread (Rich's progress refresh) that
    interpreter exit cannot wait for, which would be a SIGABRT."""
    encoding = getattr(old, "encoding", None) or "utf-8"
    line_buffering = bool(getattr(old, "line_buffering", True))
    if can_encode(encoding):
        errors = getattr(old, "errors", None) or "strict"
        errors = "backslashreplace" if unbuffered else (
            "replace" if errors == "strict" else errors)
        return io.TextIOWrapper(binary, encoding=encoding, errors=errors,
                                line_buffering=line_buffering, write_through=unbuffered)
    _register_stand_ins()
    stream = _AsciiText(binary, encoding=encoding, errors=_ASCII_ERRORS,
                        line_buffering=line_buffering, write_through=unbuffered)
    stream.binary = binary
    return stream


def can_encode(encoding: str) -> bool:
    """Whether ``encoding`` writes ✓ ✗ — │ as they are."""
    try:
        _MARKS.encode(encoding)
    except (UnicodeError, LookupError):
        return False
    return True


def _register_stand_ins() -> None:
    try:
        codecs.lookup_error(_ASCII_ERRORS)
    except LookupError:
        codecs.register_error(_ASCII_ERRORS, _stand_in)


def _stand_in(error: UnicodeError) -> tuple[str, int]:
    """The ASCII for the characters ``error`` could not encode. A stand-in wider than its
    character (``ok`` for ``✓``) takes the room from a table cell's padding after it."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text, end = error.object, error.end
    stand_in = "".join(ASCII_STAND_INS.get(c, "?") for c in text[error.start:end])
    wider = len(stand_in) - (end - error.start)
    if wider > 0:
        run = 0  # spaces after it (counted up to one more than needed)
        while run <= wider and end + run < len(text) and text[end + run] == " ":
            run += 1
        ends_line = end + run >= len(text) or text[end + run] == "\n"
        end += max(0, min(wider, run if ends_line else run - 1))
    return stand_in, end


def echo(line: str, err: bool = False) -> None:
    """``line`` on stdout (``err``: stderr), flushed: click.echo without loading click."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # no such stream at all (pythonw)
        return
    stream.write(line + "\n")
    stream.flush()


def binary_stdout() -> IO[bytes]:
    """Where bytes for stdout go (a PNG, DOT source), after what was written as text."""
    sys.stdout.flush()
    binary = getattr(sys.stdout, "binary", None) or getattr(sys.stdout, "buffer", None)
    if binary is None:
        raise OutputFailedError(OSError(errno.EBADF, "stdout takes no bytes"))
    return binary


def binary_stdin() -> IO[bytes]:
    """stdin as bytes (``-f -``, a batch's lines); without a buffer, stdin is a binary stream
    put in its place."""
    return getattr(sys.stdin, "buffer", sys.stdin)


def silence_stdout() -> None:
    """After stdout failed or its reader went away: what is buffered or written later goes
    nowhere instead of failing again."""
    binary = getattr(sys.stdout, "binary", None) or getattr(sys.stdout, "buffer", None)
    raw = getattr(binary, "raw", None)
    if isinstance(raw, _WholeWrites):
        raw.discard = True
    with contextlib.suppress(AttributeError, OSError, ValueError):  # no descriptor (tests)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def quiet_after_stop() -> None:
    """After a stop has been said: what the signal cut off half-way (a Dask ``Future``) may
    fail in its ``__del__`` at exit; those "Exception ignored" reports are not the user's."""
    sys.unraisablehook = lambda unraisable: None
