"""A program as the command line gives it: EXPR, ``-f FILE`` (or stdin) read within its size
limit as UTF-8 and parsed with the values given for it, and a batch's lines of stdin as they
arrive."""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Collection, Iterator

from gradcli.cli import streams
from gradcli.errors import UsageError, visible
from gradcli.limits import CHARS_PER_NODE, MAX_NODES, max_chars

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from gradcli.cli.given import Given
    from gradcli.engine.graph import Program

# The commands whose --max-nodes limits the program (graph's limits the drawing).
_NODE_OPTION = {"eval", "diff"}


class ProgramText:
    """A program as given on the command line: EXPR, or the text of ``-f FILE`` and its name.
    (A plain class: a dataclass costs about 1 ms of start-up.)"""

    __slots__ = ("file_name", "text")

    def __init__(self, text: str, file_name: str = "") -> None:
        self.text = text
        self.file_name = file_name  # the file it came from ("" for EXPR): errors name it

    @classmethod
    def read(cls, command: str, expr: str | None, program_file: str | None,
             max_nodes: int = MAX_NODES) -> ProgramText:
        """EXPR or the file's text; a UsageError for both or neither, or a file that cannot be
        read, is too large for ``max_nodes`` nodes or is not UTF-8."""
        if program_file is not None and expr is not None:
            raise UsageError("give either EXPR or -f FILE, not both")
        try_this = (f"try: gradcli {command} --help" if command != "eval" else
                    'try: gradcli eval "(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8')
        if program_file is not None:
            name = "<stdin>" if program_file == "-" else program_file
            text = read_program_file(program_file, max_nodes, command in _NODE_OPTION)
            if is_blank(text):
                what = "is empty" if not text.strip() else "has only comments and blank lines"
                raise UsageError(f"{visible(name)} {what}: no program to read",
                                 hint="put the program in it: one statement per line, the "
                                      "expression last (u = x*W, then u + b on the next line)")
            return cls(text, name)
        if expr is None:
            raise UsageError("no expression given", hint=try_this)
        if is_blank(expr):
            raise UsageError("the expression is empty", hint=try_this)
        return cls(expr)

    def parsed(self, given: Given, max_nodes: int = MAX_NODES, shapes: Collection[str] = (),
               say_free: bool = False) -> Program:
        """The program, parsed as every command parses it: the given names (and ``shapes``,
        ``--shape`` names) are variables even where they name a constant (``--e 2``); then a
        value for a name it does not take is a UsageError, and a constant it hides is a note
        on stderr, as are (``say_free``) the variables left without a value that a command
        keeps as symbols (diff's ``PI``)."""
        from gradcli.cli.show import say_shadowed  # loaded by then: each command shows with it
        from gradcli.language.parser import parse

        program = parse(self.text, max_nodes, [*given.values, *shapes])
        given.check_used(program)
        say_shadowed(program, program.unbound(given.values) if say_free else ())
        return program


def read_program_file(path: str, max_nodes: int = MAX_NODES, node_option: bool = True,
                      limit: int | None = None, what: str = "a program") -> str:
    """The text of ``-f FILE`` (``-``: stdin) as UTF-8, without a BOM. A file larger than the
    longest program of ``max_nodes`` nodes (``limit`` bytes, when ``what`` is not a program) is
    refused before it is read; of a stream no more is read. Bytes that are not UTF-8 are a usage
    error that says where."""
    if path == "":
        raise UsageError("-f was given an empty path", hint="give -f the file to read, e.g. "
                                                            "examples/seed.grad")
    name = "<stdin>" if path == "-" else visible(path)
    raise_limit = (f"raise the limit with --max-nodes N (it allows {CHARS_PER_NODE} characters "
                   "per node)" if node_option else
                   f"a program may have up to {MAX_NODES:,} nodes here")
    too_large = f"{what} may have at most {max_chars(max_nodes):,} characters"
    if limit is not None:  # a values file
        raise_limit = "give large arrays as .npy or .npz files (--W W.npy, --values data.npz)"
        too_large = f"{what} may have at most {limit:,} bytes"
    else:
        limit = max_chars(max_nodes)
    try:
        with contextlib.ExitStack() as stack:
            stream = streams.binary_stdin() if path == "-" else stack.enter_context(
                open(path, "rb"))
            size = _file_size(stream)
            if size is not None and size > limit:
                raise UsageError(f"{name} has {size:,} bytes; {too_large}",
                                 hint=f"split it, or {raise_limit}")
            data = _read_at_most(stream, limit + 1)
    except OSError as error:
        raise UsageError(f"cannot read {name}: {error.strerror or error}",
                         hint="check the path and that the file is readable") from None
    if len(data) > limit:
        raise UsageError(f"{name} has more than {limit:,} bytes; {too_large}",
                         hint=f"split it, or {raise_limit}")
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as error:
        at = bom + error.start
        line = data.count(b"\n", 0, at) + 1
        utf16 = data[:2] in (b"\xff\xfe", b"\xfe\xff")
        hint = ("it starts like UTF-16 text: convert it, e.g. iconv -f UTF-16 -t UTF-8"
                if utf16 else "save it as UTF-8 (iconv -f ENCODING -t UTF-8 converts it)")
        raise UsageError(f"{name} is not UTF-8 at byte {at:,} (0x{data[at]:02x}, on line "
                         f"{line:,})", hint=hint) from None


def _file_size(stream: Any) -> int | None:
    """The size of a regular file (None for a pipe, a terminal, a device)."""
    try:
        info = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _read_at_most(stream: Any, size: int) -> bytes:
    """Up to ``size`` bytes, in pieces (a pipe gives a little at a time)."""
    pieces, left = [], size
    while left > 0 and (piece := stream.read(min(left, 1 << 20))):
        pieces.append(piece)
        left -= len(piece)
    return b"".join(pieces)


_COMMENTS = re.compile(r"#[^\n]*")


def is_blank(text: str) -> bool:
    """Nothing but whitespace, ``;`` and ``# comments``: no program at all."""
    start = text.lstrip(" \t\r\n\f\v;")[:1]
    return not start or (start == "#" and not _COMMENTS.sub("", text).strip(" \t\r\n\f\v;"))


def stdin_lines(max_bytes: int) -> Iterator[str]:
    """Lines of stdin as text, as they arrive; bytes that are not UTF-8 become U+FFFD (then a
    parse error). Of a longer line only ``max_bytes + 1`` bytes are kept, so memory stays flat
    and the line is over the length limit (an error record) unless the cut is in a comment."""
    stream = streams.binary_stdin()
    while True:
        raw = stream.readline(max_bytes + 1)
        if not raw:
            return
        if len(raw) > max_bytes and raw[-1:] not in (b"\n", "\n"):
            while (rest := stream.readline(1 << 20)) and rest[-1:] not in (b"\n", "\n"):
                pass
        yield raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")
