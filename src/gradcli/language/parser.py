"""Program text -> graph. The LALR parser calls ``_GraphBuilder`` at every reduction, so nodes
are built while parsing (no parse tree, no recursion: 10^5 nesting levels are only a deep stack
list), and syntax errors become ``ParseError``s with a line, a column and a hint. The parse tables
are Lark's, computed from grammar/expr.lark and shipped as literals (see ``lalr.py``), so starting
gradcli neither imports Lark nor rebuilds the tables.

Every mistake gets a message that says what to write instead: a function used as a name
(``exp + x``), a function gradcli spells otherwise (``ln``, ``arctan``), a program that ends with a
statement, a decimal comma, and non-ASCII look-alikes. The language is ASCII, and that stays so:
the minus sign U+2212, the multiplication sign and dot operators, the division sign, superscript
digits, fullwidth or Arabic-Indic digits and no-break spaces are refused, each with the exact
ASCII to write (``write x**2 for x`` + superscript two) -- accepting them would make pasted text
mean something its author may not have checked, and a CI tool should rather stop.
A name that differs from a constant or a function only by case (``PI``, ``E``) stays a variable
of its own, and is listed in ``Program.notes``. One leading byte-order mark (U+FEFF, as editors
on Windows write) is dropped.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection

from gradcli.engine.graph import Node, Program
from gradcli.engine.ops import (
    CALLS,
    CONDITIONAL,
    CONST,
    CONSTANTS,
    FUNCTIONS,
    OPS,
    is_function_name,
)
from gradcli.errors import GradcliError, GradcliNameError, Note, ParseError, UsageError
from gradcli.language.functions import Definitions, Function, Head, defined_later
from gradcli.language.lalr import (
    Parser,
    Token,
    UnexpectedCharacters,
    UnexpectedInput,
    UnexpectedToken,
    load_tables,
)
from gradcli.limits import MAX_NODES, max_chars


class _GraphBuilder(Definitions):
    """Parser callbacks: one per grammar alias, each returning the node for that piece of text."""

    def __init__(self) -> None:
        self.reset()

    def reset(self, max_nodes: int = MAX_NODES) -> None:
        self.max_nodes = max_nodes
        self.made = 0  # nodes built so far, against ``max_nodes``
        self.variables: dict[str, Node] = {}  # input variables, in order of first appearance
        self.named: dict[str, Node] = {}  # names given by statements: intermediates and inputs
        self.assigned: dict[str, Token] = {}  # intermediates' names, where they are assigned
        self.read: set[str] = set()  # the names some expression reads
        self.defaults: dict[str, float] = {}  # values that statements give input variables
        self.notes: list[Note] = []  # variables named like a constant or function: PI, beta
        self.shadowing: frozenset[str] = frozenset()  # constants given values: variables here
        self.constants_read: set[str] = set()  # the constants some expression reads
        self.language_calls: dict[str, Token] = {}  # the language's functions called, first
        self.first_use: dict[str, Token] = {}  # where each name is first read or assigned
        self.both_ways = False  # a name may be called and read (a printed derivative, read back)
        self.arrays = False  # an array literal or array op was built (docs/arrays.md)
        self.functions: dict[str, Function] = {}  # the program's own, in order of definition
        self.called: set[str] = set()  # the functions some statement calls
        self.parameters: dict[str, str] = {}  # every parameter name -> its function's name
        self.defining: Head | None = None  # the definition whose body is being read
        self.statement_start = 0  # len(variables) when the current statement began
        self.masked = False  # a where(...) was built: the program needs masking (graph.py)
        self.source = ""

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
        """A name not followed by ``(``: a statement's name, a constant, or a variable -- also
        when a function has that name (``beta*x``): only a call calls (docs/language.md)."""
        token = children[0]
        name = str(token)
        if name in self.named:
            self.read.add(name)
            return self.named[name]
        if name in CONSTANTS and name not in self.shadowing:
            self.constants_read.add(name)
            return self.made_node(Node(CONST, (), CONSTANTS[name], name), token)
        if name not in self.variables:
            if name in self.functions:
                raise _error_at(GradcliNameError, token,
                                f"{name} is a function: call it as {self._signature(name)}",
                                hint=f"{name} is the program's function; a name is a function "
                                     f"or a variable, not both: for a variable pick another "
                                     f"name, e.g. {name}_")
            if name in self.language_calls and not self.both_ways:
                raise self.both_ways_error(name, self.language_calls[name], token)
            self.variables[name] = self.made_node(Node.variable(name), token)
            self.first_use[name] = token
            note = self._note(name, token)
            if note is not None:
                self.notes.append(note)
        return self.variables[name]

    def _note(self, name: str, token: Token) -> Note | None:
        """The note for a variable that may stand for something else (``errors.Note``)."""
        where = {"line": token.line, "column": token.column}
        if name in CONSTANTS:
            return Note(name, name, "constant", reading="shadow", **where)
        if is_function_name(name):
            return Note(name, language_signature(name), "function", reading="function",
                        **where)
        lookalike = _LOOKALIKES.get(name.lower())
        return None if lookalike is None else Note(name, *lookalike, **where)

    def both_ways_error(self, name: str, call: Token, use: Token) -> GradcliNameError:
        """``beta(a, b) + beta``: one name both called and used as a variable, the one error
        this rule leaves (which one was meant is a guess); both places are marked."""
        first, second = sorted((call, use), key=lambda token: token.pos_in_stream)
        error = _error_at(GradcliNameError, second,
                          f"{name} is both called as a function (line {call.line}, column "
                          f"{call.column}) and used as a variable (line {use.line}, column "
                          f"{use.column})",
                          hint=f"a name is a function or a variable, not both: rename the "
                               f"variable, e.g. {name}_")
        if first.line == second.line:
            error.marks = (first.column,)
        return error

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
        name = str(token)
        if is_function_name(name) and name not in self.functions and not self.both_ways:
            variable = self.first_use.get(name)
            if variable is not None or name in self.named:
                raise self.both_ways_error(name, token, variable or token)
            known = self.language_calls.get(name)  # an inner call is reduced first
            if known is None or token.pos_in_stream < known.pos_in_stream:
                self.language_calls[name] = token
        op = FUNCTIONS.get(name)
        if op is None or len(args) != op.arity:  # sum(x), max(x): an array function?
            from gradcli.language import arrays  # only then: scalar programs never load it

            if arrays.is_array_function(str(token)):
                return self.made_node(arrays.array_call(self, token, args), token)
        if op is None:
            name = str(token)
            if name in self.functions:
                return self.call_defined(self.functions[name], token, args)
            if self.defining is not None and name == str(self.defining.token):
                raise _error_at(GradcliNameError, token, f"{name} calls itself",
                                hint="a function cannot be recursive: each call is written out "
                                     "in place, so it would never end")
            later = defined_later(self.source, name, token.pos_in_stream)
            if later is not None:
                where = (f"{self.defining.token} calls {name}" if self.defining is not None
                         else f"{name} is called")
                raise _error_at(GradcliNameError, token,
                                f"{where} before its definition (line {later})",
                                hint="define a function before its first use (so no function "
                                     "can call itself, even through others)")
            if name in self.variables or name in self.named:
                hint = f"{name} is a variable: did you mean {name}*(...)?"
            elif name in CONSTANTS:
                hint = f"{name} is a constant: did you mean {name}*(...)?"
            else:
                hint = _function_hint(name)
            raise _error_at(GradcliNameError, token, f"unknown function {name}", hint=hint)
        if len(args) != op.arity:
            plural = "s" if op.arity > 1 else ""
            hint = f"write it as {_signature(op.name)}"
            if op.name == "log" and len(args) == 2:
                hint += ", the natural logarithm; in base b: log(x)/log(b), log2(x), log10(x)"
            raise _error_at(GradcliNameError, token,
                            f"{op.name} takes {op.arity} argument{plural}, not {len(args)}",
                            hint=hint)
        if op is CONDITIONAL:
            self.masked = True
        return self.made_node(Node(op, tuple(args)), token)

    def conditional(self, children: list[Node]) -> Node:
        """``a if c else b``, the same node as ``where(c, a, b)``."""
        a, c, b = children
        self.masked = True
        return self.made_node(Node(CONDITIONAL, (c, a, b)))

    def compare(self, children: list) -> Node:
        """``a < b`` and the other comparisons: one grammar rule, the op by the operator."""
        left, operator, right = children
        return self.made_node(Node(_COMPARISON_OPS[str(operator)], (left, right)))

    def logical_not(self, children: list[Node]) -> Node:
        return self.made_node(Node(OPS["logical_not"], (children[0],)))

    # --- statements -----------------------------------------------------------------------

    def assign(self, children: list) -> None:
        token, value = children
        name = str(token)
        if name in self.functions:
            raise _error_at(GradcliNameError, token, f"{name} is a function of the program "
                            "and cannot be assigned", hint="pick another name")
        if name in self.language_calls and not self.both_ways:
            raise self.both_ways_error(name, self.language_calls[name], token)
        if name in self.constants_read:
            raise _error_at(GradcliNameError, token, f"{name} is used as the constant "
                            f"{name} before this statement assigns it",
                            hint=f"rename the variable (e.g. {name}_): a name means one thing "
                                 "in a program")
        self.first_use.setdefault(name, token)
        if name in self.named:
            raise _error_at(GradcliNameError, token, f"{name} is assigned twice",
                            hint="each name can be assigned once")
        if name in self.variables:
            raise _error_at(GradcliNameError, token, f"{name} is used before it is assigned",
                            hint=f"move the statement '{name} = ...' before the first use")
        if name in CONSTANTS:  # e = 2 hides e: said on stderr
            self.notes.append(Note(name, name, "constant", line=token.line, column=token.column,
                                   reading="shadow"))
        if value.op is CONST and value.name is None:
            # `x = 2` declares an input variable with a default; the command line may move it.
            self.variables[name] = self.named[name] = Node.variable(name, value.value)
            self.defaults[name] = value.value
        else:
            if value.name is None:
                value.name = name
            self.named[name] = value
            self.assigned[name] = token
        self.statement_start = len(self.variables)

    def _signature(self, name: str) -> str:
        if name in self.functions:
            return self.functions[name].signature
        return language_signature(name)

    def start(self, children: list) -> Node | list[Node]:
        """The output; a list of the outputs when the program ends with ``f, g``."""
        if len(children) > 1 and children[-2] is not None:  # statements give None
            outputs = [child for child in children if child is not None]
            for number, output in enumerate(outputs):
                if output.op is CONST and output.name is None and type(output.value) is float:
                    raise _NumberOutputError(number)  # parse() says where: `1,5` is a slip
            self.arrays = True  # several outputs are a Jacobian: the array path
            return outputs
        return children[-1]

    # --- arrays: language/arrays.py builds the nodes (imported only when a program has them) -

    def array(self, children: list[Node]) -> Node:
        from gradcli.language import arrays

        return self.made_node(arrays.array_literal(self, children))

    def matmul(self, children: list[Node]) -> Node:
        from gradcli.language import arrays

        return self.made_node(arrays.array_op_node(self, "matmul", children))

    def transpose(self, children: list[Node]) -> Node:
        from gradcli.language import arrays

        return self.made_node(arrays.array_op_node(self, "transpose", children))

    def subscript(self, children: list) -> Node:
        from gradcli.language import arrays

        return self.made_node(arrays.subscript(self, children[0], children[1:]))

    def slice_both(self, children: list[Node]) -> tuple:
        return ("slice", children[0], children[1])

    def slice_from(self, children: list[Node]) -> tuple:
        return ("slice", children[0], None)

    def slice_to(self, children: list[Node]) -> tuple:
        return ("slice", None, children[0])

    def slice_all(self, children: list[Node]) -> tuple:
        return ("slice", None, None)


def _binary_callback(op_name: str):
    op = OPS[op_name]

    def callback(self: _GraphBuilder, children: list[Node]) -> Node:
        return self.made_node(Node(op, (children[0], children[1])))

    return callback


for _name in ("add", "sub", "mul", "div", "mod", "pow", "logical_and", "logical_or"):
    setattr(_GraphBuilder, _name, _binary_callback(_name))


class _Parser:
    """The LALR tables, built once per process; the builder is reused, so parses take a lock."""

    def __init__(self) -> None:
        self.builder = _GraphBuilder()
        self.lalr = Parser(load_tables(), self.builder)
        self.lock = threading.Lock()

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
            try:
                output = self.lalr.parse(source)
            except UnexpectedInput as error:
                raise _syntax_error(source, error, self.builder.named) from None
            except _NumberOutputError as error:
                raise _number_output(source, error.number) from None
            except GradcliError as error:
                if error.line is not None and error.source_line is None:
                    error.source_line = source.split("\n")[error.line - 1]
                raise
            finally:
                builder = self.builder
                variables, defaults, notes = builder.variables, builder.defaults, builder.notes
                arrays, masked, parameters = builder.arrays, builder.masked, builder.parameters
                assigned, read = builder.assigned, builder.read
                functions, called = builder.functions, builder.called
                builder.reset()
        if isinstance(output, list):
            program = Program.build_outputs(source, output, variables.values(), defaults,
                                            masked)
        else:
            program = Program.build(source, output, variables.values(), defaults, masked)
        program.arrays, program.parameters = arrays, parameters
        _refuse_unused(source, assigned, read, functions, called)
        if notes:
            lines = source.split("\n")
            program.notes = [note for note in notes if note.name in program.variables]
            for note in program.notes:
                note.source_line = lines[note.line - 1] if note.line else None
        return program


def _refuse_unused(source: str, assigned: dict[str, Token], read: set[str],
                   functions: dict, called: set[str]) -> None:
    """An intermediate that nothing reads, or a function never called, is a slip (the output
    names the wrong thing, or a statement was left behind): a usage error at its statement.
    One read only by an unused statement is not reported: that statement is, first."""
    for name, token in assigned.items():
        if name not in read:
            raise _unused(source, token, f"{name} is assigned but the output never uses it",
                          f"use {name} in the output, or delete the statement '{name} = ...'")
    for name, function in functions.items():
        if name not in called:
            raise _unused(source, function.token, f"{name} is defined but never called",
                          f"call it in the output, as {function.signature}, or delete its "
                          "definition")


def _unused(source: str, token: Token, message: str, hint: str) -> UsageError:
    error = _error_at(UsageError, token, message, hint)
    error.source_line = source.split("\n")[token.line - 1]
    return error


_parser: _Parser | None = None


_COMMENT = re.compile(r"#[^\n]*")


def parse(source: str, max_nodes: int = MAX_NODES, given: Collection[str] = (),
          both_ways: bool = False) -> Program:
    """Parse a gradcli program into a graph; raises ParseError, GradcliNameError or UsageError.

    ``given``: the names that will get values from outside (``--e 2``): a constant among them
    is a variable of the program, with a note that it hides the constant. ``both_ways``: a
    name may be both called and read as a variable, as in a printed derivative (d/dx of
    ``cos*x + sin(x)`` is ``cos(x) + cos``), which ``diff`` reads back to check it.

    A program of more than ``max_nodes`` nodes (or a text too long to hold that many, see
    ``limits``) is a UsageError, raised as soon as the limit is passed.
    """
    global _parser
    if _parser is None:
        _parser = _Parser()
    return _parser.parse(source, max_nodes, given, both_ways)


# --- friendly errors ---------------------------------------------------------------------------

_OPERAND_START = {"NUMBER", "NAME"}
_PROGRAM_END = {"_SEP", "$END"}
_NOT_CLOSED = "a '(' is not closed"
_COMPARISON_OPS = {"<": OPS["lt"], "<=": OPS["le"], ">": OPS["gt"], ">=": OPS["ge"],
                   "==": OPS["eq"], "!=": OPS["ne"]}
_COMPARISONS = set(_COMPARISON_OPS)

# Names that differ from a constant or a function only by case: lower case -> (name, what).
_LOOKALIKES = {**{name.lower(): (name, "function") for name in FUNCTIONS},
               **{name.lower(): (name, "constant") for name in CONSTANTS}}


class _NumberOutputError(Exception):
    """An output of ``f, g`` is a plain number: ``1,5`` meant 1.5, or a slip (number ``number``
    of the outputs)."""

    def __init__(self, number: int) -> None:
        super().__init__(number)
        self.number = number


def _number_output(source: str, number: int) -> ParseError:
    """The comma next to the number output: a decimal comma's hint, or what a comma does."""
    commas = _top_level_commas(source)
    position = commas[max(number - 1, 0)]
    line = source.count("\n", 0, position) + 1
    start = source.rfind("\n", 0, position) + 1
    text = source.split("\n")[line - 1]
    before, after = source[start:position].rstrip(), source[position + 1:]
    found, digits = _trailing_number(before), _take_digits(after)
    if found and digits and before.endswith(found) and "." not in found:
        hint = f"did you mean {found}.{digits}? gradcli writes decimals with a point"
    else:
        hint = ("a ',' separates a function's arguments, as in max(x, y), or the program's "
                "outputs, as in f, g; a number is not an output")
    return ParseError("unexpected ','", line=line, column=position - start + 1,
                      source_line=text, hint=hint)


def _top_level_commas(source: str) -> list[int]:
    """Positions of the commas outside parentheses and brackets (comments skipped)."""
    found, depth, comment = [], 0, False
    for position, char in enumerate(source):
        if comment:
            comment = char != "\n"
        elif char == "#":
            comment = True
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            found.append(position)
    return found


def _syntax_error(source: str, error: UnexpectedInput, named: dict[str, Node]) -> ParseError:
    lines = source.split("\n")
    line = max(error.line, 1) if isinstance(error.line, int) else len(lines)
    column = error.column if isinstance(error.column, int) and error.column > 0 else 1
    text = lines[line - 1] if line <= len(lines) else ""
    hint = None
    token = None
    if isinstance(error, UnexpectedCharacters):
        pos = error.pos_in_stream
        char = source[pos] if pos < len(source) else ""
        what = f"unexpected character {char!r}"
        expected = set(error.allowed or ())
        hint = _character_hint(source, pos)
    else:
        token = error.token if isinstance(error, UnexpectedToken) else None
        expected = set(getattr(error, "expected", ()) or ())
        if token is None or token.type == "$END":
            what, column = "unexpected end of input", _end_column(text)
            last = _last_statement(error, expected, named)
            if last is not None:
                while line > 1 and _end_column(text) == 1:  # back to the last line of code
                    line -= 1
                    text = lines[line - 1]
                column = _end_column(text)
                example = f"a last line {last}" if "\n" in source.strip() else f"'...; {last}'"
                return ParseError(
                    f"the program ends with the statement {last} = ..., not with an expression "
                    "to evaluate", line=line, column=column, source_line=text,
                    hint=f"add the expression to evaluate after the statements, e.g. {example}")
        else:
            what = f"unexpected {_describe_token(token)}"
    depth, innermost = _open_parentheses(source, _offset(lines, line, column))
    message = f"{what}; expected {_describe_expected(expected, depth)}"
    if hint is None:
        hint = _syntax_hint(text, column, depth, expected, token)
    if innermost and innermost[0] < line and (hint is None or hint == _NOT_CLOSED):
        open_line, open_column = innermost
        hint = (f"the '(' at line {open_line}, column {open_column} is not closed (inside "
                "parentheses a formula goes on over line breaks)")
    return ParseError(message, line=line, column=column, hint=hint, source_line=text)


def _last_statement(error: UnexpectedInput, expected: set[str],
                    named: dict[str, Node]) -> str | None:
    """The name the program's last statement assigns, when the program ends right after it."""
    values = getattr(error, "values", None) or []
    if "_SEP" not in expected or "$END" in expected:
        return None
    if len(values) >= 3 and isinstance(values[-3], Head) and isinstance(values[-1], Node):
        return f"{values[-3].token}(...)"  # right after `f(a) = expr`
    if (len(values) >= 3 and isinstance(values[-3], Token) and values[-3].type == "NAME"
            and values[-2] is None and isinstance(values[-1], Node)):
        return str(values[-3])  # right after `name = expr`
    if named and not any(isinstance(value, (Node, Token)) for value in values):
        return next(reversed(named))  # the stack holds statements and separators only
    return None


def _end_column(text: str) -> int:
    """The column just after the code of a line (before a trailing comment)."""
    return len(text.split("#", 1)[0].rstrip()) + 1


def _offset(lines: list[str], line: int, column: int) -> int:
    return sum(len(text) + 1 for text in lines[: line - 1]) + column - 1


def _open_parentheses(source: str, end: int) -> tuple[int, tuple[int, int] | None]:
    """How many '(' are still open at ``end`` (comments skipped), and the (line, column) of the
    innermost one.

    Only on the way to an error message, but a program may be megabytes: C-speed string
    methods do the scanning, and Python only loops over the parentheses themselves.
    """
    import re  # only for this message

    code = source[:end]
    if "#" in code:  # blank comments out, keeping every position
        code = re.sub(r"#[^\n]*", lambda comment: " " * len(comment.group()), code)
    if code.count("(") == code.count(")"):
        return 0, None
    opened: list[int] = []
    for paren in re.finditer(r"[()]", code):
        if paren.group() == "(":
            opened.append(paren.start())
        elif opened:
            opened.pop()
    if not opened:
        return 0, None
    pos = opened[-1]
    return len(opened), (code.count("\n", 0, pos) + 1, pos - code.rfind("\n", 0, pos))


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
    if expected and expected <= _PROGRAM_END:
        return "the end of the program"
    closing = " or ')'" if depth > 0 else ""
    return f"an operator (+ - * / **){closing}"


def _syntax_hint(text: str, column: int, depth: int, expected: set[str],
                 token: Token | None) -> str | None:
    before, after = text[: column - 1].rstrip(), text[column - 1:]
    if token is not None and token.type == "COMMA":
        number, digits = _trailing_number(before), _take_digits(after[1:])
        if number and digits and before.endswith(number) and "." not in number:
            return f"did you mean {number}.{digits}? gradcli writes decimals with a point"
        return "a ',' only separates a function's arguments, as in max(x, y)"
    if expected and expected <= _PROGRAM_END:
        return ("only the program's last part is an expression to evaluate: make the one "
                "before a statement (name = ...) or remove it")
    if token is not None and token.type == "_SEP" and str(token) == "\n" and depth == 0:
        return ("the line ends the statement: to go on on the next line, end this one with "
                "'\\' or put the formula in ( )")
    if before and (before[-1].isalnum() or before[-1] in "_)]") and after[:1].isalnum():
        left = before.split()[-1].split("(")[-1] if before.split() else before
        right = "".join(c for c in _take_word(after))
        if left in FUNCTIONS:
            return f"did you mean {left}({right})? a function's argument goes in parentheses"
        return f"did you mean {left}*{right}? gradcli needs * between factors"
    if re.search(r"\bif\b", text) and not re.search(r"\belse\b", text):
        return "a conditional is written a if c else b, with its else"
    if token is not None and str(token) in _COMPARISONS:
        return "comparisons do not chain: write a < b and b < c"
    if token is not None and token.type == "EQUAL":
        return "'=' gives a name a value (x = 2) at the start of a statement; to compare, write =="
    if depth > 0 and not after.split("#", 1)[0].strip():
        return _NOT_CLOSED
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


def _take_digits(text: str) -> str:
    end = 0
    while end < len(text) and text[end] in "0123456789":
        end += 1
    return text[:end]


def _trailing_number(text: str) -> str:
    """The ASCII number that ``text`` ends with (``1`` of ``x*1``), if it is one."""
    start = len(text)
    while start > 0 and text[start - 1] in "0123456789.":
        start -= 1
    number = text[start:]
    if not number or (start > 0 and (text[start - 1].isalpha() or text[start - 1] == "_")):
        return ""  # part of a name such as x1
    return number


# --- characters the language does not have -----------------------------------------------------

# Look-alikes of the ASCII operators, as word processors, PDFs and math notation write them.
_ASCII_FOR = {
    **dict.fromkeys("\u2212\u2010\u2011\u2012\u2013\u2014\ufe63\uff0d", "-"),
    **dict.fromkeys("\u00d7\u00b7\u22c5\u2217\u2219\u2715\u2716\uff0a", "*"),
    **dict.fromkeys("\u00f7\u2215\u2044\uff0f", "/"),
    **dict.fromkeys("\uff0b\u2795", "+"),
    "\uff08": "(", "\uff09": ")", "\uff1d": "=", "\uff0c": ",", "\uff1b": ";",
    "\u3001": ",",
}
_SUPERSCRIPTS = dict(zip("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b\u207a",
                         "0123456789-+", strict=True))


def _character_hint(source: str, pos: int) -> str | None:
    """What to write instead of the character at ``pos``, which the language does not have."""
    import unicodedata  # only for this message

    char = source[pos] if pos < len(source) else ""
    if not char or (char.isascii() and char.isprintable() and char != "\\"):
        return None
    code = f"U+{ord(char):04X}"
    described = f"{code} {unicodedata.name(char, '')}".rstrip()
    if char == "\\":
        if not source[pos + 1:].split("\n", 1)[0].strip(" \t\f\r"):
            return ("a '\\' at the end of a line continues the statement on the next line, "
                    "and there is none")
        return "a '\\' continues a line only at its end: nothing may follow it on that line"
    if char in _SUPERSCRIPTS:
        end = pos
        while end < len(source) and source[end] in _SUPERSCRIPTS:
            end += 1
        run = source[pos:end]
        left = _take_word(source[:pos][::-1])[::-1]
        power = "".join(_SUPERSCRIPTS[c] for c in run)
        return f"write {left}**{power} for {left}{run}: gradcli's operators are ASCII"
    if char in _ASCII_FOR:
        ascii_char = _ASCII_FOR[char]
        return (f"write {ascii_char} (U+{ord(ascii_char):04X}) for {char} ({described}): "
                "gradcli's operators are ASCII")
    if char == "\u03c0":
        return "write pi for \u03c0: names are ASCII"
    if char == "\u221a":
        return "write sqrt(x) for \u221ax: names are ASCII"
    if pos == 0 and char == "\ufeff":
        return None  # unreachable: the parser drops a leading byte-order mark
    category = unicodedata.category(char)
    if category == "Zs":
        return f"write a plain space for {described}"
    if category in ("Cc", "Cf", "Zl", "Zp", "Co", "Cn", "Cs"):
        return f"delete the invisible character {described}"
    digit = unicodedata.decimal(char, None)
    if digit is not None:
        return f"write {digit} for {char} ({described}): gradcli's numbers are ASCII digits"
    if char.isalpha() or category.startswith("M"):
        spelled = _greek_name(described)
        if spelled:
            return f"write {spelled} for {char}: names are ASCII letters, digits and _"
        return f"names are ASCII letters, digits and _; {char} is {described}"
    return None


def _greek_name(described: str) -> str | None:
    """``alpha`` for ``U+03B1 GREEK SMALL LETTER ALPHA`` (a name to write instead)."""
    for prefix in ("GREEK SMALL LETTER ", "GREEK CAPITAL LETTER "):
        if prefix in described:
            word = described.split(prefix, 1)[1]
            if " " in word:
                return None
            word = "lambda" if word == "LAMDA" else word
            return word.lower() if "SMALL" in prefix else word.capitalize()
    return None


def _error_at(cls: type, token: Token, message: str, hint: str | None = None):
    return cls(message, line=token.line, column=token.column, hint=hint)


# Other libraries' names for gradcli's functions (the ones people type most are aliases in the op
# table: ln, arcsin, ...), and formulas for functions gradcli lacks.
_SPELLED_OTHERWISE = {
    "power": "pow", "lg": "log10", "sgn": "sign", "signum": "sign", "expit": "sigmoid",
    "maximum": "max", "minimum": "min", "fmax": "max", "fmin": "min", "tg": "tan",
    "arsinh": "asinh", "arcosh": "acosh", "artanh": "atanh", "sqr": "square", "rint": "round",
    "gammaln": "lgamma", "loggamma": "lgamma", "psi": "digamma", "hard_tanh": "hardtanh",
}
_FORMULAS = {  # name -> (its call, what to write for it)
    "sec": ("sec(x)", "1/cos(x)"), "csc": ("csc(x)", "1/sin(x)"),
    "cot": ("cot(x)", "1/tan(x)"), "sech": ("sech(x)", "1/cosh(x)"),
    "csch": ("csch(x)", "1/sinh(x)"), "coth": ("coth(x)", "1/tanh(x)"),
    # C's fmod keeps the sign of x; mod (NumPy's remainder, Python's %) that of y
    "fmod": ("fmod(x, y)", "x - y*trunc(x/y) (the sign of x; mod(x, y) takes the sign of y)"),
}


def _function_hint(name: str) -> str:
    """How to write a call of a function gradcli does not have under that name."""
    listed = "gradcli functions lists them all"
    meant = _SPELLED_OTHERWISE.get(name)
    if meant is not None:
        return f"did you mean {meant}? gradcli's name for {name} is {meant}"
    if name in _FORMULAS:
        call, formula = _FORMULAS[name]
        return f"gradcli has no {name}; write {formula} for {call}"
    lower = _LOOKALIKES.get(name.lower())
    if lower is not None and lower[1] == "function":
        return f"did you mean {lower[0]}? names are case-sensitive"
    written = _operator_spelling(name)
    if written is not None:
        return f"{name} is an operator: write {written}"
    import difflib  # only for this message

    close = difflib.get_close_matches(name, list(CALLS), n=1)
    if close:
        return f"did you mean {close[0]}? {listed}"
    return f"{listed}; for a product write {name}*(...)"


def _signature(name: str) -> str:
    return f"{name}({', '.join(FUNCTIONS[name].operands)})"


def _operator_spelling(name: str) -> str | None:
    """How an operator row that ``gradcli functions`` lists by name is written (``add``:
    ``x + y``, ``matmul``: ``x @ y``), or None for a name that is no operator."""
    from gradcli.engine import ops  # only for this message

    for row in ops.table_rows():
        if row["name"] == name and row["kind"] != "function" and "function" not in row["kind"]:
            return " or ".join(row["written"])
    return None


def language_signature(name: str) -> str:
    """How the language's function ``name`` is called: ``beta(a, b)``, ``mean(x)``, and both
    forms of ``max``: ``max(x, y) or max(x)``."""
    return " or ".join(f"{name}({', '.join(op.operands)})" for op in CALLS.get(name, ()))
