"""Program text -> graph. The LALR parser calls ``_GraphBuilder`` at every reduction, so nodes
are built while parsing (no parse tree, no recursion: 10^5 nesting levels are only a deep stack
list), and syntax errors become ``ParseError``s with a line, a column and a hint. The parse tables
are Lark's, computed from grammar/expr.lark and shipped as literals (see ``lalr.py``), so starting
gradcli neither imports Lark nor rebuilds the tables.
"""

from __future__ import annotations

import threading

from gradcli.engine.graph import Node, Program
from gradcli.engine.ops import CONST, CONSTANTS, FUNCTIONS, OPS
from gradcli.errors import GradcliError, GradcliNameError, ParseError, UsageError
from gradcli.language.lalr import (
    Parser,
    Token,
    UnexpectedCharacters,
    UnexpectedInput,
    UnexpectedToken,
    load_tables,
)
from gradcli.limits import MAX_NODES, max_chars


class _GraphBuilder:
    """Parser callbacks: one per grammar alias, each returning the node for that piece of text."""

    def __init__(self) -> None:
        self.reset()

    def reset(self, max_nodes: int = MAX_NODES) -> None:
        self.max_nodes = max_nodes
        self.made = 0  # nodes built so far, against ``max_nodes``
        self.variables: dict[str, Node] = {}  # input variables, in order of first appearance
        self.named: dict[str, Node] = {}  # names given by statements: intermediates and inputs
        self.defaults: dict[str, float] = {}  # values that statements give input variables

    def made_node(self, node: Node, token: Token | None = None) -> Node:
        """Count a new node; past the limit, stop parsing at once with a usage error."""
        self.made += 1
        if self.made > self.max_nodes:
            where = {} if token is None else {"line": token.line, "column": token.column}
            raise UsageError(f"the program has more than {self.max_nodes:,} nodes",
                             hint="raise the limit with --max-nodes N", **where)
        return node

    # --- leaves ---------------------------------------------------------------------------

    def number(self, children: list[Token]) -> Node:
        token = children[0]
        node = self.made_node(Node.constant(float(token)), token)
        if node.value == float("inf"):
            raise _error_at(ParseError, token, f"the number {token} is too large for a float")
        return node

    def name(self, children: list[Token]) -> Node:
        token = children[0]
        name = str(token)
        if name in self.named:
            return self.named[name]
        if name in CONSTANTS:
            return self.made_node(Node(CONST, (), CONSTANTS[name], name), token)
        if name not in self.variables:
            self.variables[name] = self.made_node(Node.variable(name), token)
        return self.variables[name]

    # --- operators and functions ----------------------------------------------------------

    def neg(self, children: list[Node]) -> Node:
        (operand,) = children
        if operand.op is CONST and operand.name is None:  # a signed number stays one number
            return Node.constant(-operand.value)
        return self.made_node(Node(OPS["neg"], (operand,)))

    def pos(self, children: list[Node]) -> Node:
        return children[0]

    def call(self, children: list) -> Node:
        token, args = children[0], children[1:]
        op = FUNCTIONS.get(str(token))
        if op is None:
            if str(token) in self.variables or str(token) in self.named:
                hint = f"{token!s} is a variable: did you mean {token!s}*(...)?"
            else:
                hint = _function_hint(str(token))
            raise _error_at(GradcliNameError, token, f"unknown function {token!s}", hint=hint)
        if len(args) != op.arity:
            plural = "s" if op.arity > 1 else ""
            raise _error_at(GradcliNameError, token,
                            f"{op.name} takes {op.arity} argument{plural}, not {len(args)}",
                            hint=f"write it as {_signature(op.name)}")
        return self.made_node(Node(op, tuple(args)), token)

    # --- statements -----------------------------------------------------------------------

    def assign(self, children: list) -> None:
        token, value = children
        name = str(token)
        if name in CONSTANTS:
            raise _error_at(UsageError, token, f"{name} is a constant and cannot be assigned",
                            hint="pick another name")
        if name in self.named:
            raise _error_at(GradcliNameError, token, f"{name} is assigned twice",
                            hint="each name can be assigned once")
        if name in self.variables:
            raise _error_at(GradcliNameError, token, f"{name} is used before it is assigned",
                            hint=f"move the statement '{name} = ...' before the first use")
        if value.op is CONST and value.name is None:
            # `x = 2` declares an input variable with a default; the command line may move it.
            self.variables[name] = self.named[name] = Node.variable(name, value.value)
            self.defaults[name] = value.value
        else:
            if value.name is None:
                value.name = name
            self.named[name] = value

    def start(self, children: list) -> Node:
        return children[-1]


def _binary_callback(op_name: str):
    op = OPS[op_name]

    def callback(self: _GraphBuilder, children: list[Node]) -> Node:
        return self.made_node(Node(op, (children[0], children[1])))

    return callback


for _name in ("add", "sub", "mul", "div", "pow"):
    setattr(_GraphBuilder, _name, _binary_callback(_name))


class _Parser:
    """The LALR tables, built once per process; the builder is reused, so parses take a lock."""

    def __init__(self) -> None:
        self.builder = _GraphBuilder()
        self.lalr = Parser(load_tables(), self.builder)
        self.lock = threading.Lock()

    def parse(self, source: str, max_nodes: int = MAX_NODES) -> Program:
        if len(source) > max_chars(max_nodes):
            raise UsageError(f"the program is longer than {max_chars(max_nodes):,} characters",
                             hint="split it, or raise the limit with --max-nodes N "
                                  f"(it allows {max_chars(1)} characters per node)")
        with self.lock:
            self.builder.reset(max_nodes)
            try:
                output = self.lalr.parse(source)
            except UnexpectedInput as error:
                raise _syntax_error(source, error) from None
            except GradcliError as error:
                if error.line is not None and error.source_line is None:
                    error.source_line = source.split("\n")[error.line - 1]
                raise
            finally:
                variables, defaults = self.builder.variables, self.builder.defaults
                self.builder.reset()
        return Program.build(source, output, variables.values(), defaults)


_parser: _Parser | None = None


def parse(source: str, max_nodes: int = MAX_NODES) -> Program:
    """Parse a gradcli program into a graph; raises ParseError, GradcliNameError or UsageError.

    A program of more than ``max_nodes`` nodes (or a text too long to hold that many, see
    ``limits``) is a UsageError, raised as soon as the limit is passed.
    """
    global _parser
    if _parser is None:
        _parser = _Parser()
    return _parser.parse(source, max_nodes)


# --- friendly errors ---------------------------------------------------------------------------

_OPERAND_START = {"NUMBER", "NAME"}


def _syntax_error(source: str, error: UnexpectedInput) -> ParseError:
    lines = source.split("\n")
    line = max(error.line, 1) if isinstance(error.line, int) else len(lines)
    column = error.column if isinstance(error.column, int) and error.column > 0 else 1
    text = lines[line - 1] if line <= len(lines) else ""
    if isinstance(error, UnexpectedCharacters):
        char = source[error.pos_in_stream] if error.pos_in_stream < len(source) else ""
        what = f"unexpected character {char!r}"
        expected = set(error.allowed or ())
    else:
        token = error.token if isinstance(error, UnexpectedToken) else None
        if token is None or token.type == "$END":
            what, column = "unexpected end of input", len(text.rstrip()) + 1
        else:
            what = f"unexpected {_describe_token(token)}"
        expected = set(getattr(error, "expected", ()) or ())
    text_before = "\n".join([*lines[:line - 1], text[:column - 1]])
    depth = text_before.count("(") - text_before.count(")")
    message = f"{what}; expected {_describe_expected(expected, depth)}"
    hint = _syntax_hint(text, column, depth, expected)
    return ParseError(message, line=line, column=column, hint=hint, source_line=text)


def _describe_token(token: Token) -> str:
    if token.type == "NUMBER":
        return f"number {token!s}"
    if token.type == "NAME":
        return f"name {token!s}"
    if token.type == "_SEP":
        return "';'" if str(token) == ";" else "end of line"
    return f"{str(token)!r}"


def _describe_expected(expected: set[str], depth: int) -> str:
    if expected & _OPERAND_START:
        return "a number, a name, a function call or '('"
    closing = " or ')'" if depth > 0 else ""
    return f"an operator (+ - * / **){closing}"


def _syntax_hint(text: str, column: int, depth: int, expected: set[str]) -> str | None:
    before, after = text[: column - 1].rstrip(), text[column - 1:]
    if before and (before[-1].isalnum() or before[-1] in "_)") and after[:1].isalnum():
        left = before.split()[-1].split("(")[-1] if before.split() else before
        right = "".join(c for c in _take_word(after))
        return f"did you mean {left}*{right}? gradcli needs * between factors"
    if "==" in text:
        return "gradcli has no comparisons; '=' assigns a name: x = 2"
    if depth > 0 and not after.strip():
        return "a '(' is not closed"
    if after.startswith(")") and depth <= 0:
        return "this ')' has no matching '('"
    if after[:1] and after[0] in "[{":
        return "use ( ) for grouping"
    return None


def _take_word(text: str) -> str:
    word = []
    for char in text:
        if not (char.isalnum() or char in "._"):
            break
        word.append(char)
    return "".join(word)


def _error_at(cls: type, token: Token, message: str, hint: str | None = None):
    return cls(message, line=token.line, column=token.column, hint=hint)


def _function_hint(name: str) -> str:
    import difflib  # only for this message

    close = difflib.get_close_matches(name, FUNCTIONS, n=1)
    known = ", ".join(sorted(FUNCTIONS))
    guess = f"did you mean {close[0]}? " if close else f"for a product write {name}*(...); "
    return f"{guess}functions: {known}"


def _signature(name: str) -> str:
    op = FUNCTIONS[name]
    args = "x" if op.arity == 1 else ("y, x" if name == "atan2" else "x, y")
    return f"{name}({args})"
