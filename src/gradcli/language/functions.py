"""A person's own functions: ``f(a, b) = a*b + 1; f(x, y) + f(y, x)``.

A definition is parsed like any statement, its body into graph nodes built on placeholder nodes,
one per parameter. A call inlines the body: the nodes that depend on a parameter are copied with
the call's arguments in the parameters' places (in creation order, so no recursion), and the
nodes that do not (numbers, the program's own names) are shared. The graph is then the one the
call written out would give, so values, gradients, the check, ``diff`` and pictures need nothing
of their own; the call's result node is labelled with the call as written, ``f(x, y)``.

A function is known from its definition on: a call to a function defined later, to itself, or
around a cycle is an error naming it, so inlining always ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gradcli.engine.graph import Node, nodes_of
from gradcli.errors import GradcliNameError
from gradcli.language.lalr import Token

LABEL_LIMIT = 60  # a call written longer than this is labelled f(...)


@dataclass
class Head:
    """``f(a, b)`` before the ``=`` of a definition: the name and the parameters' placeholders."""

    token: Token
    parameters: dict[str, Node]


@dataclass
class Function:
    """A defined function: parameters, body, and what a call copies (``template``)."""

    name: str
    parameters: tuple[Node, ...]
    body: Node
    template: list[Node]  # the body's nodes that depend on a parameter, in creation order
    line: int

    @classmethod
    def define(cls, head: Head, body: Node) -> Function:
        placeholders = set(head.parameters.values())
        depends: set[Node] = set(placeholders)
        template = []
        for node in nodes_of([body]):
            if any(source in depends for source in node.inputs):
                depends.add(node)
                template.append(node)
        return cls(str(head.token), tuple(head.parameters.values()), body, template,
                   head.token.line)

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


def defined_later(source: str, name: str, after: int) -> int | None:
    """The line where ``name(...) = ...`` is defined after position ``after``, if it is."""
    pattern = re.compile(rf"(?:^|[;\n])[ \t]*{re.escape(name)}[ \t]*\([^()]*\)[ \t]*=(?!=)")
    found = pattern.search(source, after)
    return None if found is None else source.count("\n", 0, found.end()) + 1


def name_error(token: Token, message: str, hint: str) -> GradcliNameError:
    return GradcliNameError(message, line=token.line, column=token.column, hint=hint)
