"""A person's own functions: ``f(a, b) = a*b + 1; f(x, y) + f(y, x)``. A call inlines the body:
the nodes that depend on a parameter are copied with the arguments in its place (in creation
order, no recursion), the others shared, so the graph is the call written out and nothing else
needs to know. A function is known from its definition on, so inlining always ends.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gradcli.engine.graph import Node, nodes_of
from gradcli.engine.ops import CONDITIONAL, CONST, CONSTANTS, FUNCTIONS
from gradcli.errors import GradcliNameError
from gradcli.language.lalr import Token

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

LABEL_LIMIT = 60  # a call written longer than this is labelled f(...)
name_error = GradcliNameError.at  # the error at a token: a name the program misuses


class Head:
    """``f(a, b)`` before the ``=`` of a definition: the name and the parameters' placeholders
    (plain classes: a dataclass would cost every start of gradcli about 1 ms)."""

    __slots__ = ("parameters", "token")

    def __init__(self, token: Token, parameters: dict[str, Node]) -> None:
        self.token = token
        self.parameters = parameters


class Function:
    """A defined function, ``f(a, b) = body``: what a call copies is its ``template``, the
    body's nodes that depend on a parameter, in the order they were made."""

    __slots__ = ("body", "name", "parameters", "template", "token")

    def __init__(self, head: Head, body: Node) -> None:
        placeholders = set(head.parameters.values())
        depends: set[Node] = set(placeholders)
        self.template: list[Node] = []
        read: set[Node] = {body} & placeholders
        for node in nodes_of([body]):
            if any(source in depends for source in node.inputs):
                depends.add(node)
                self.template.append(node)
                read.update(placeholders.intersection(node.inputs))
        for name, placeholder in head.parameters.items():
            if placeholder not in read:
                raise name_error(head.token, f"the parameter {name} of {head.token} is never "
                                 "used in its body", hint=f"use {name} in the body, or take it "
                                 f"out of {head.token}(...) and out of its calls")
        self.token = head.token  # the name in its definition
        self.name = str(head.token)
        self.parameters = tuple(head.parameters.values())
        self.body = body

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(str(p.name) for p in self.parameters)})"

    def inline(self, arguments: list[Node], made, label: str) -> Node:
        """The body with ``arguments`` in the parameters' places; ``made`` counts each node."""
        copies: dict[Node, Node] = dict(zip(self.parameters, arguments, strict=True))
        get = copies.get
        for node in self.template:
            copies[node] = made(Node(node.op, tuple(get(s, s) for s in node.inputs)))
        result = get(self.body, self.body)
        if result.name is None and self.template:
            result.name = label
        return result


class Definitions:
    """The parser builder's part for the program's own functions (a mixin of
    ``building.GraphBuilder``, whose state it uses)."""

    variables: dict[str, Node]
    named: dict[str, Node]
    notes: list
    functions: dict[str, Function]
    called: set[str]  # the functions some statement calls
    parameters: dict[str, str]
    defining: Head | None
    statement_start: int
    masked: bool
    source: str
    made: int
    first_use: dict  # where each variable is first read, a position (building.GraphBuilder)

    def made_node(self, node: Node, token: Token | int | None = None) -> Node:
        """Count a new node against the limit (``building.GraphBuilder``'s)."""
        raise NotImplementedError

    def call_defined(self, function: Function, token: Token, args: list[Node]) -> Node:
        """A call of the program's own function: its body inlined with ``args``."""
        if len(args) != len(function.parameters):
            count = len(function.parameters)
            raise name_error(token, f"{function.name} takes {count} argument"
                             f"{'s' * (count != 1)}, not {len(args)}",
                             hint=f"it is defined as {function.signature} on line "
                                  f"{function.token.line}")
        if any(node.op is CONDITIONAL for node in function.template):
            self.masked = True
        self.called.add(function.name)
        return function.inline(args, self.made_node, call_label(self.source, token))

    def signature(self, children: Sequence[Any]) -> Head:
        """``f(a, b)`` before ``=``: its arguments were read as names (the ``=`` comes after
        them), so the variables they made are taken back and become parameters."""
        token, args = children[0], list(children[1:])
        name = str(token)
        self._check_function_name(token)
        fresh = list(self.variables)[self.statement_start:]
        made_here = set(fresh)  # looked up once per parameter: a list would be quadratic
        parameters: dict[str, Node] = {}
        places = argument_tokens(self.source, token)[:len(args)]  # a caret under its parameter
        for arg, place in zip(args, places + [token] * (len(args) - len(places)), strict=True):
            parameter = self._parameter(token, place, arg, made_here)
            if parameter in parameters:
                raise name_error(place, f"the parameter {parameter} of {name} is listed twice",
                                 hint="give each parameter its own name")
            parameters[parameter] = Node.variable(parameter)
        for parameter in fresh:
            del self.variables[parameter]
            self.first_use.pop(parameter, None)
            self.made -= 1
            self.parameters[parameter] = name
        self.notes = [note for note in self.notes if note.name not in made_here]
        self.named.update(parameters)  # the body reads them; define() takes them out again
        head = Head(token, parameters)
        self.defining = head
        return head

    def _check_function_name(self, token: Token) -> None:
        name = str(token)
        if name in FUNCTIONS:
            raise name_error(token, f"{name} is a built-in function and cannot be redefined",
                             hint=f"pick another name, e.g. {name}_ or my_{name}")
        if name in CONSTANTS:
            raise name_error(token, f"{name} is a constant, not a function name",
                             hint="pick another name")
        if name in self.functions:
            raise name_error(token, f"{name} is defined twice (first on line "
                             f"{self.functions[name].token.line})",
                             hint="each function can be defined once; pick another name")
        if name in self.named or name in list(self.variables)[:self.statement_start]:
            raise name_error(token, f"{name} is a variable of the program and cannot also be "
                             "a function", hint="pick another name")

    def _parameter(self, token: Token, place: Token, arg: Node, fresh: set[str]) -> str:
        """The parameter name that the argument ``arg`` (written at ``place``) of a
        definition's head ``token(...)`` stands for."""
        name = arg.name
        if arg.op is CONST and name in CONSTANTS:
            raise name_error(place, f"{name} is a constant and cannot be a parameter of {token}",
                             hint="pick another name")
        if name is None or (arg.inputs and name not in self.named):
            raise name_error(place, f"the parameters of {token} must be names",
                             hint=f"write the definition as {token}(a, b) = ..., with the "
                                  "expressions in its calls")
        if name not in fresh:
            raise name_error(place, f"the parameter {name} of {token} has the name of a "
                             "variable of the program",
                             hint=f"rename the parameter: {name} in the body would be ambiguous")
        return str(name)

    def define(self, children: Sequence[Any]) -> None:
        """``f(a, b) = body``: the parameters go out of scope and ``f`` can be called."""
        head, body = children
        for parameter in head.parameters:
            del self.named[parameter]
        function = Function(head, body)
        self.functions[function.name] = function
        self.defining = None
        self.statement_start = len(self.variables)


def call_label(source: str, token: Token) -> str:
    """The call as written (``f(x, y)``, spaces normalised), read from the source text, or
    ``f(...)`` when it is longer than ``LABEL_LIMIT`` (so labelling costs no more than that)."""
    start = token.pos_in_stream
    window = source[start:start + LABEL_LIMIT + 1]
    depth = 0
    for end, char in enumerate(window):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                text = window[:end + 1]
                if "#" not in text:
                    return " ".join(text.split()).replace("( ", "(").replace(" )", ")")
                break
    return f"{token}(...)"


def argument_tokens(source: str, token: Token) -> list[Token]:
    """Each argument of ``token(...)`` as written, a token at its first character: by the
    time a definition's head is reduced its arguments are nodes, which keep no place."""
    import bisect  # here, not at the top: an eval without a definition never loads it

    start = source.find("(", token.pos_in_stream + len(token))
    found: list[Token] = []
    depth, begin = 0, start + 1
    # the line breaks inside the call, met on the way: an argument's line and column without
    # counting from the start again (40,000 arguments took 6 s, quadratic in their count)
    line0 = token.line + source.count("\n", token.pos_in_stream, max(start, 0))
    breaks = [source.rfind("\n", 0, max(start, 0))]
    for position in range(start, len(source) if start >= 0 else 0):
        char = source[position]
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "\n":
            breaks.append(position)
        if (depth == 0 and char == ")") or (depth == 1 and char == ","):
            text = source[begin:position]
            first = begin + len(text) - len(text.lstrip())
            before = bisect.bisect_left(breaks, first)  # breaks[0]: the one before the call
            line = line0 + before - 1
            column = first - breaks[before - 1]
            if text.strip():  # f() has none
                found.append(Token("ARGUMENT", text.strip(), first, line, column))
            begin = position + 1
            if depth == 0:
                break
    return found


def defined_later(source: str, name: str, after: int) -> int | None:
    """The line where ``name(...) = ...`` is defined after position ``after``, if it is."""
    pattern = re.compile(rf"(?:^|[;\n])[ \t]*{re.escape(name)}[ \t]*\([^()]*\)[ \t]*=(?!=)")
    found = pattern.search(source, after)
    return None if found is None else source.count("\n", 0, found.end()) + 1

