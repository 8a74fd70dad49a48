"""Program text -> graph: the LALR parser (``driver.py``, Lark's tables shipped as literals) calls
the builder (building.py) at every reduction, so nodes are built while parsing, with no parse
tree and no recursion; syntax errors become ``ParseError``s with a hint (syntax_errors.py)."""

from __future__ import annotations

import re
from _thread import allocate_lock  # threading's Lock, without threading's import
from collections.abc import Collection

from gradcli.engine.graph import Program
from gradcli.engine.ops import CONSTANTS
from gradcli.errors import GradcliError, UsageError
from gradcli.language.building import GraphBuilder
from gradcli.language.driver import Parser
from gradcli.language.lalr import UnexpectedInput, load_tables, token_at
from gradcli.language.syntax_errors import syntax_error, written_outputs
from gradcli.limits import MAX_NODES, max_chars


class _Parser:
    """The LALR tables, built once per process; the builder is reused, so parses take a lock."""

    def __init__(self) -> None:
        self.builder = GraphBuilder()
        self.lalr = Parser(load_tables(), self.builder)
        self.lock = allocate_lock()

    def parse(self, source: str, max_nodes: int = MAX_NODES, given: Collection[str] = (),
              both_ways: bool = False) -> Program:
        if len(source) > max_chars(max_nodes):
            # Comments cost nothing to parse: only the program's own text counts (a batch keeps
            # the first max_chars + 1 characters of a long line, cut inside its comment).
            source = _COMMENT.sub("", source)
        if len(source) > max_chars(max_nodes):
            raise UsageError(f"the program is longer than {max_chars(max_nodes):,} characters",
                             hint="split it, or raise the limit with --max-nodes N "
                                  f"(it allows {max_chars(1)} characters per node)")
        if source[:1] == "\ufeff":  # a byte-order mark, as some editors start a file
            source = source[1:]
        with self.lock:
            self.builder.reset(max_nodes)
            self.builder.source = source
            if given:
                self.builder.shadowing = frozenset(name for name in given if name in CONSTANTS)
            self.builder.both_ways = both_ways
            parse = self.lalr.parse
            if len(source) >= _PAUSED_FROM:  # the cycle collector paused (engine.collector)
                from gradcli.engine.collector import collector_paused

                parse = collector_paused(parse)
            try:
                output = parse(source)
                builder = self.builder
                variables, defaults = builder.variables.values(), builder.defaults
                if isinstance(output, list):
                    program = Program.build_outputs(source, output, variables, defaults,
                                                    builder.masked, builder.nodes)
                    program.output_names = written_outputs(source, len(output))
                else:
                    program = Program.build(source, output, variables, defaults,
                                            builder.masked, builder.nodes)
                program.arrays, program.parameters = builder.arrays, builder.parameters
                _refuse_unused(builder)
                if builder.notes:
                    lines = source.split("\n")
                    program.notes = [note for note in builder.notes
                                     if note.name in program.variables]
                    for note in program.notes:
                        note.source_line = lines[note.line - 1] if note.line else None
            except UnexpectedInput as error:
                raise syntax_error(source, error, self.builder.named) from None
            except GradcliError as error:  # a builder's error or _refuse_unused's: its line
                if error.line is not None and error.source_line is None:
                    error.source_line = source.split("\n")[error.line - 1]
                raise
            finally:
                self.builder.reset()  # holds nothing of the program between parses
        return program


def _refuse_unused(builder: GraphBuilder) -> None:
    """An intermediate that nothing reads, or a function never called, is a slip (the output
    names the wrong thing, or a statement was left behind): a usage error at its statement.
    One read only by an unused statement is not reported: that statement is, first."""
    for name, position in builder.assigned.items():
        if name not in builder.read:
            token = token_at(builder.source, name, position)
            raise UsageError.at(token, f"{name} is assigned but the output never uses it",
                                f"use {name} in the output, or delete the statement '{name} = ...'")
    for name, function in builder.functions.items():
        if name not in builder.called:
            raise UsageError.at(function.token, f"{name} is defined but never called",
                                f"call it in the output, as {function.signature}, or delete its "
                                "definition")


# A text this long pauses the cycle collector while it is parsed: a long program's nodes would
# be scanned by it over and over (a fifth of the parse of 10^5 nodes). A short one's would not
# (a batch's lines): pausing would then only add a collection per program.
_PAUSED_FROM = 1 << 14

_parser: _Parser | None = None


_COMMENT = re.compile(r"#[^\n]*")


def parse(source: str, max_nodes: int = MAX_NODES, given: Collection[str] = (),
          both_ways: bool = False) -> Program:
    """Parse a gradcli program into a graph; raises ParseError, GradcliNameError or UsageError
    (past ``max_nodes`` nodes, or a text too long to hold that many, as soon as it is passed).

    ``given``: the names that will get values from outside (``--e 2``), a constant among them
    a variable of the program. ``both_ways``: a name may be both called and read, as in a
    printed derivative (d/dx of ``cos*x + sin(x)`` is ``cos(x) + cos``) that ``diff`` reads back.
    """
    global _parser
    if type(source) is not str:  # the Python API's callers: a clear TypeError, not len()'s
        raise TypeError(f"a program's text is a str, not {type(source).__name__}")
    if _parser is None:
        _parser = _Parser()
    return _parser.parse(source, max_nodes, given, both_ways)


def program_of(program: str | Program, max_nodes: int = MAX_NODES,
               given: Collection[str] = ()) -> Program:
    """A program given as text (parsed here) or parsed already, as the API's functions take
    it; anything else is a TypeError saying so (bytes, a number)."""
    if isinstance(program, Program):
        return program
    if isinstance(program, str):
        return parse(program, max_nodes, given)
    raise TypeError(f"a program is a str or a parsed Program, not {type(program).__name__}")
