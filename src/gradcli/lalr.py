"""A small LALR(1) driver for tables that Lark computed from ``grammar/expr.lark``.

Why not call Lark at every start: importing Lark and building its LALR tables costs more than
everything else a small ``gradcli eval`` does, and Lark's generic lexer and per-token objects
dominate the time of a batch of small programs. The grammar file stays the only description of
the syntax: ``generate_tables`` asks Lark (imported only then) for its terminals, rules and parse
table and turns them into plain literals, which ``_lalr_tables.py`` ships. That module is Python
source written by this function, checked into the package like any other module: nothing
deserialised, no cache file, nothing loaded from outside the package. ``load_tables`` regenerates
the tables in memory if the grammar no longer matches (an edited grammar in an editable install),
so a stale table is never used. After editing the grammar, ``gradcli.lalr.write_tables()``
rewrites the module.

The driver applies Lark's tree-shaping rules (filtered punctuation, ``_rule`` inlining, ``?rule``
single-child expansion, ``-> alias`` callbacks) and raises ``UnexpectedCharacters`` /
``UnexpectedToken`` with the same fields as Lark's, in the same order (the lexer runs lazily).
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Callable
from typing import Any

GRAMMAR_FILE = "expr.lark"
_SHIFT, _REDUCE = 0, 1
_ERROR = "__ERROR"


class Token(str):
    """A terminal's text with its type and 1-based line and column (Lark's ``Token`` fields)."""

    __slots__ = ("column", "line", "pos_in_stream", "type")

    def __new__(cls, type_: str, text: str, pos: int, line: int, column: int) -> Token:
        token = super().__new__(cls, text)
        token.type, token.pos_in_stream, token.line, token.column = type_, pos, line, column
        return token


class UnexpectedInput(Exception):  # noqa: N818 -- Lark's names, which parser.py expects
    line: int
    column: int


class UnexpectedCharacters(UnexpectedInput):
    def __init__(self, pos: int, line: int, column: int, allowed: set[str]) -> None:
        super().__init__(f"unexpected character at line {line}, column {column}")
        self.pos_in_stream, self.line, self.column, self.allowed = pos, line, column, allowed


class UnexpectedToken(UnexpectedInput):
    def __init__(self, token: Token, expected: set[str]) -> None:
        super().__init__(f"unexpected token {token.type} at line {token.line}")
        self.token, self.expected = token, expected
        self.line, self.column = token.line, token.column


class Parser:
    """Parses text with ``tables``, calling ``builder.<rule alias>(children)`` at each reduction."""

    def __init__(self, tables: dict[str, Any], builder: object) -> None:
        terminals = tables["terminals"]
        alternatives = [f"(?P<{name}>{regex})" for name, regex in terminals]
        self.scanner = re.compile("|".join([*alternatives, rf"(?P<{_ERROR}>.|\n)"]))
        self.ignore = frozenset(tables["ignore"])
        self.allowed = {name for name, _ in terminals} - self.ignore
        self.valued = frozenset(tables["valued"])  # terminals whose text some rule keeps
        self.actions: list[dict[str, tuple[int, int]]] = tables["actions"]
        self.start, self.end = tables["start"], tables["end"]
        self.rules = [self._reducer(rule, builder) for rule in tables["rules"]]

    @staticmethod
    def _reducer(rule: list, builder: object) -> tuple[int, str, Callable[[list], Any]]:
        """(length, origin, function of the popped values) for one grammar rule."""
        origin, length, callback, expand1, kept = rule
        method = getattr(builder, callback, None)
        if not origin.startswith("_") and not expand1 and method is None:
            raise TypeError(f"the parser builder has no method for the rule {callback}")

        def reduce(values: list) -> Any:
            children: list = []
            for index, splice in kept:
                if splice:
                    children.extend(values[index])
                else:
                    children.append(values[index])
            if origin.startswith("_"):
                return children
            if expand1 and len(children) == 1:
                return children[0]
            return method(children)  # type: ignore[misc]

        return length, origin, reduce

    def parse(self, text: str) -> Any:
        actions, rules, ignore, valued = self.actions, self.rules, self.ignore, self.valued
        states, values = [self.start], []
        line, line_start, counted = 1, 0, 0  # newlines counted up to position ``counted``
        last: Token | None = None
        for match in self.scanner.finditer(text):
            kind = match.lastgroup
            if kind in ignore:
                continue
            pos = match.start()
            line += text.count("\n", counted, pos)
            counted = pos
            line_start = text.rfind("\n", 0, pos) + 1
            if kind == _ERROR:
                raise UnexpectedCharacters(pos, line, pos - line_start + 1, set(self.allowed))
            token = last = Token(kind, match.group(), pos, line, pos - line_start + 1)  # type: ignore[arg-type]
            value = token if kind in valued else None
            while True:
                action = actions[states[-1]].get(kind)  # type: ignore[arg-type]
                if action is None:
                    raise UnexpectedToken(token, _expected(actions[states[-1]]))
                if action[0] == _SHIFT:
                    states.append(action[1])
                    values.append(value)
                    break
                self._reduce(rules[action[1]], states, values)
        end = Token("$END", "", *(
            (last.pos_in_stream, last.line, last.column) if last else (0, 1, 1)))
        while states[-1] != self.end:
            action = actions[states[-1]].get("$END")
            if action is None:
                raise UnexpectedToken(end, _expected(actions[states[-1]]))
            self._reduce(rules[action[1]], states, values)
        return values[-1]

    def _reduce(self, rule: tuple, states: list[int], values: list) -> None:
        length, origin, reduce = rule
        if length:
            popped = values[-length:]
            del values[-length:]
            del states[-length:]
        else:
            popped = []
        values.append(reduce(popped))
        states.append(self.actions[states[-1]][origin][1])


def _expected(state_actions: dict[str, tuple[int, int]]) -> set[str]:
    return {symbol for symbol in state_actions if symbol.isupper()}


# --- the tables: generated with Lark, shipped as literals ----------------------------------------

def grammar_text() -> str:
    """The grammar shipped as ``gradcli.grammar`` (wheel or editable install alike)."""
    from . import grammar  # a plain file next to the package's __init__: no importlib.resources

    path = os.path.join(os.path.dirname(grammar.__file__ or ""), GRAMMAR_FILE)
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as file:
            return file.read()
    from importlib import resources  # e.g. a zipped package

    return resources.files("gradcli.grammar").joinpath(GRAMMAR_FILE).read_text("utf-8")


def grammar_digest(text: str) -> str:
    """A checksum that tells whether the tables were made from this grammar text.

    It only detects a forgotten regeneration (the tables and the grammar ship together), so a
    CRC is enough, and zlib is far cheaper to import at start-up than hashlib.
    """
    return f"crc32:{zlib.crc32(text.encode('utf-8')):08x}:{len(text)}"


def load_tables() -> dict[str, Any]:
    """The shipped tables if they were generated from the current grammar, else fresh ones."""
    text = grammar_text()
    try:
        from ._lalr_tables import TABLES
    except ImportError:
        TABLES = None  # noqa: N806 -- the module's constant name
    if TABLES is not None and TABLES["grammar_digest"] == grammar_digest(text):
        return TABLES
    return generate_tables(text)


def generate_tables(text: str) -> dict[str, Any]:
    """Lark's LALR analysis of ``text`` as plain lists, dicts, strings and ints."""
    from lark import Lark  # only here: regenerating the tables is the one use of Lark

    lark = Lark(text, parser="lalr", lexer="basic")
    # Lark's basic lexer tries terminals in this order (an alternation takes the first match).
    terminals = sorted(lark.terminals, key=lambda t: (
        -t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
    table = lark.parser.parser.parser.parse_table
    rules = list(dict.fromkeys(
        arg for state in table.states.values() for action, arg in state.values()
        if action.name == "Reduce"))
    number = {id(rule): i for i, rule in enumerate(rules)}
    kept_rules = []
    valued: set[str] = set()
    for rule in rules:
        kept = []
        for index, symbol in enumerate(rule.expansion):
            if symbol.is_term and symbol.filter_out and not rule.options.keep_all_tokens:
                continue
            if symbol.is_term:
                valued.add(symbol.name)
            kept.append([index, not symbol.is_term and symbol.name.startswith("_")])
        callback = rule.alias or rule.origin.name
        expand1 = bool(rule.options.expand1) and not rule.alias  # as Lark: an alias always calls
        kept_rules.append([str(rule.origin.name), len(rule.expansion), str(callback), expand1,
                           kept])
    actions = [
        {str(symbol): [0 if action.name == "Shift" else 1,
                       arg if action.name == "Shift" else number[id(arg)]]
         for symbol, (action, arg) in sorted(table.states[state].items())}
        for state in range(len(table.states))
    ]
    return {
        "grammar_digest": grammar_digest(text),
        "terminals": [[t.name, t.pattern.to_regexp()] for t in terminals],
        "ignore": sorted(lark.ignore_tokens),
        "valued": sorted(valued),
        "start": table.start_states["start"],
        "end": table.end_states["start"],
        "rules": kept_rules,
        "actions": actions,
    }


def tables_source(tables: dict[str, Any]) -> str:
    """The text of ``_lalr_tables.py``."""
    import pprint

    header = (
        '"""LALR tables for grammar/expr.lark, generated by ``gradcli.lalr.write_tables()``:'
        ' do not edit.\n\nPlain literals, nothing deserialised; ``lalr.load_tables`` ignores them'
        ' if the grammar changed.\n"""\n\n'
        "# fmt: off\n"
    )
    return header + "TABLES = " + pprint.pformat(tables, width=99, compact=True) + "\n"


def write_tables() -> str:
    """Regenerate ``_lalr_tables.py`` next to this file (after editing the grammar)."""
    from pathlib import Path

    target = Path(__file__).with_name("_lalr_tables.py")
    target.write_text(tables_source(generate_tables(grammar_text())), encoding="utf-8")
    return str(target)
