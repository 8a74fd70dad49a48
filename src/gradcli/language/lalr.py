"""A small LALR(1) driver for the tables Lark computes from ``grammar/expr.lark``.

Importing Lark and building its tables costs more than a small ``gradcli eval``, and its generic
lexer dominates a batch of small programs; so ``generate_tables`` turns Lark's terminals, rules
and parse table into plain literals, shipped as ``_lalr_tables.py`` (``write_tables()`` rewrites
it after a grammar edit; ``load_tables`` regenerates them in memory when the grammar no longer
matches). The driver applies Lark's tree-shaping rules and raises its ``UnexpectedCharacters`` /
``UnexpectedToken``; its one rule of its own, a postlexer's in Lark, drops a newline inside open
brackets, so a formula goes on over lines. A keyword (``"and"``) is lexed as a NAME and retyped.
"""

from __future__ import annotations

import operator
import os
import re
import zlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

GRAMMAR_FILE = "expr.lark"
# Inside open parentheses a newline does not end a statement (see the grammar): the driver
# drops a newline separator token while more OPEN than CLOSE tokens have been read. Square
# brackets (array literals, subscripts) count as parentheses: a matrix may span lines.
OPEN, CLOSE, SEPARATOR = "LPAR", "RPAR", "_SEP"
SQUARE_OPEN, SQUARE_CLOSE = "LSQB", "RSQB"
_SHIFT, _REDUCE = 0, 1  # action kinds in the tables
_PASS, _CALL, _SPLICE = 0, 1, 2  # how a reduction makes its value
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
    def __init__(self, token: Token, expected: set[str], values: list | None = None) -> None:
        super().__init__(f"unexpected token {token.type} at line {token.line}")
        self.token, self.expected = token, expected
        self.line, self.column = token.line, token.column
        # The parser's value stack when it stopped (ours only, not Lark's): what was read so
        # far, for a message such as "the program ends with the statement f = ...".
        self.values = values if values is not None else []


class Parser:
    """Parses text with ``tables``, calling ``builder.<rule alias>(children)`` at each reduction.
    Actions are ints (a state to shift to, or ``~rule``); only kept terminals become Tokens."""

    def __init__(self, tables: dict[str, Any], builder: object) -> None:
        terminals = tables["terminals"]
        ignore = set(tables["ignore"])
        # Ignored text (spaces, comments) is skipped by the match of the token after it, and
        # the end of the text is a match of its own (no group: ``$END``), so every token costs
        # one match. That is safe because no kept terminal can begin with ignored text (a test
        # compares tokens and errors with Lark's own lexer).
        skip = "|".join(f"(?:{regex})" for name, regex in terminals if name in ignore)
        kept = [f"(?P<{name}>{regex})" for name, regex in terminals if name not in ignore]
        kept.append(f"(?P<{_ERROR}>.|\\n)")
        prefix = f"(?:{skip})*" if skip else ""
        self.scanner = re.compile(f"{prefix}(?:{'|'.join(kept)}|\\Z)")
        self.allowed = {name for name, _ in terminals} - ignore
        self.valued = frozenset(tables["valued"])  # terminals whose text some rule keeps
        # keywords: (pattern terminal, {text: keyword terminal}), e.g. ("NAME", {"and": "AND"})
        retype = tables.get("retype") or {}
        (self.named, self.keywords), = retype.items() if len(retype) == 1 else ((None, {}),)
        patterns = dict(terminals)
        if not (re.fullmatch(patterns.get(OPEN, "$^"), "(")
                and re.fullmatch(patterns.get(CLOSE, "$^"), ")")
                and re.fullmatch(patterns.get(SEPARATOR, "$^"), "\n")):
            raise ValueError(f"the grammar has no terminals {OPEN} '(', {CLOSE} ')' and "
                             f"{SEPARATOR} matching a newline, which line breaks rely on")
        self.brackets = frozenset((OPEN, CLOSE, SQUARE_OPEN, SQUARE_CLOSE, SEPARATOR))
        self.start, self.end = tables["start"], tables["end"]
        self.steps: list[dict[str, int]] = []  # per state: terminal -> state or ~rule
        self.gotos: list[dict[str, int]] = []  # per state: rule name -> state
        for state in tables["actions"]:
            self.steps.append({symbol: arg if kind == _SHIFT else ~arg
                               for symbol, (kind, arg) in state.items() if symbol.isupper()})
            self.gotos.append({symbol: arg for symbol, (_, arg) in state.items()
                               if not symbol.isupper()})
        self.rules = [self._reducer(rule, builder) for rule in tables["rules"]]
        # Rules that only pass their one child up (``?sum: product``) come in chains (atom ->
        # power -> unary -> product -> sum) after a reduction's goto: each step replaces the top
        # state and keeps the one below, so where a reduction lands depends only on (state
        # below, the rule reduced, lookahead) and is worked out once per such triple.
        self.landings: dict[tuple[int, str, str], int] = {}  # see _landing

    @staticmethod
    def _reducer(rule: list, builder: object) -> tuple[int, str, int, Any]:
        """(length, origin, how, what) for one grammar rule: _PASS (the popped value at
        position ``what``), _CALL (``what`` is (method, pick), ``pick`` None when all are kept)
        or _SPLICE (``what`` builds the children with ``_rule`` inlining)."""
        origin, length, callback, expand1, kept = rule
        method = getattr(builder, callback, None)
        if not origin.startswith("_") and not expand1 and method is None:
            raise TypeError(f"the parser builder has no method for the rule {callback}")
        plain = not any(splice for _, splice in kept)
        if expand1 and plain and len(kept) == 1:
            return length, origin, _PASS, kept[0][0]
        if plain and not origin.startswith("_") and not expand1:
            positions = [index for index, _ in kept]
            if positions == list(range(length)):
                pick = None
            elif not positions:  # nothing kept (x[:]): the callback gets an empty list
                pick = operator.itemgetter(slice(0, 0))
            elif len(positions) == 1:  # a slice, so that the callback still gets a list
                pick = operator.itemgetter(slice(positions[0], positions[0] + 1))
            else:
                pick = operator.itemgetter(*positions)
            return length, origin, _CALL, (method, pick)

        # A left-recursive list rule (``_x: _x item``) grows its own list in place, as Lark's
        # does: copying it at every item would make a long program quadratic.
        reuse_first = bool(kept) and kept[0] == [0, True]

        def build(values: list) -> Any:
            children: list = values[0] if reuse_first else []
            for index, splice in kept[1:] if reuse_first else kept:
                if splice:
                    children.extend(values[index])
                else:
                    children.append(values[index])
            if origin.startswith("_"):
                return children
            if expand1 and len(children) == 1:
                return children[0]
            assert method is not None  # checked above: only _rules and expand1 lack one
            return method(children)

        return length, origin, _SPLICE, build

    def parse(self, text: str) -> Any:
        steps, rules, valued, landings = self.steps, self.rules, self.valued, self.landings
        named, keywords = self.named, self.keywords
        brackets = self.brackets
        multiline = "\n" in text  # else no newline to drop: skip the counting (a batch's lines)
        new_str = str.__new__
        states: list[int] = [self.start]
        values: list[Any] = []
        line, line_start, counted = 1, 0, 0  # newlines counted up to position ``counted``
        depth = 0  # ( read and not yet closed
        last = None
        for match in self.scanner.finditer(text):
            kind = match.lastgroup
            value = None
            if kind is None:  # the end of the text
                kind = "$END"
            elif kind == _ERROR:
                raise UnexpectedCharacters(*_position(text, match.start(kind)), set(self.allowed))
            else:
                if kind in valued:
                    word = match.group(kind)
                    if word in keywords and kind == named:
                        kind = keywords[word]  # a keyword (not valued), not a name
                    else:
                        pos = match.start(kind)
                        if multiline and counted < pos and "\n" in text[counted:pos]:
                            line += text.count("\n", counted, pos)
                            line_start = text.rfind("\n", 0, pos) + 1
                        counted = pos
                        value = new_str(Token, word)  # Token(...) inlined
                        value.type, value.pos_in_stream = kind, pos
                        value.line, value.column = line, pos - line_start + 1
                elif multiline and kind in brackets:
                    if kind in (OPEN, SQUARE_OPEN):
                        depth += 1
                    elif kind in (CLOSE, SQUARE_CLOSE):
                        depth -= 1
                    elif depth > 0 and text[match.start(kind)] == "\n":
                        continue  # a line break inside ( ): the statement goes on
                last = match
            while True:
                action = steps[states[-1]].get(kind)
                if action is None:
                    if kind == "$END" and states[-1] == self.end:
                        return values[-1]
                    raise UnexpectedToken(_token(text, kind, last), set(steps[states[-1]]),
                                          values)
                if action >= 0:
                    states.append(action)
                    values.append(value)
                    break
                length, origin, how, what = rules[~action]
                if how == _PASS and length == 1:  # right after a shift (``?x: TERMINAL``);
                    # after a reduction, the landing has already taken such chains
                    states[-1] = self._unit_chain((states[-2], states[-1], kind))
                    continue
                if how == _CALL and length == 1 and what[1] is None:  # names and numbers
                    values[-1] = what[0]([values[-1]])
                    key = (states[-2], origin, kind)
                    top = landings.get(key)
                    if top is None:
                        top = landings[key] = self._landing(key)
                    states[-1] = top
                    continue
                popped = values[-length:] if length else []
                if length:
                    del values[-length:]
                    del states[-length:]
                if how == _PASS:
                    values.append(popped[what])
                elif how == _CALL:
                    method, pick = what
                    values.append(method(popped if pick is None else pick(popped)))
                else:
                    values.append(what(popped))
                key = (states[-1], origin, kind)
                top = landings.get(key)
                if top is None:
                    top = landings[key] = self._landing(key)
                states.append(top)
        raise AssertionError("unreachable: the text's end either completes the parse or fails")

    def _landing(self, key: tuple[int, str, str]) -> int:
        """The top state after the goto on a reduced rule and the pass-through reductions that
        follow it (``_unit_chain``), from (state below, the rule's name, lookahead)."""
        below, origin, kind = key
        return self._unit_chain((below, self.gotos[below][origin], kind))

    def _unit_chain(self, key: tuple[int, int, str]) -> int:
        """The top state after every pass-through reduction that ``kind`` triggers in turn."""
        below, top, kind = key
        while True:
            action = self.steps[top].get(kind)
            if action is None or action >= 0:
                return top
            length, origin, how, _ = self.rules[~action]
            if not (how == _PASS and length == 1):
                return top
            top = self.gotos[below][origin]


def _position(text: str, pos: int) -> tuple[int, int, int]:
    """(pos, line, column) of a character position, 1-based as Lark counts."""
    line_start = text.rfind("\n", 0, pos) + 1
    return pos, text.count("\n", 0, pos) + 1, pos - line_start + 1


def _token(text: str, kind: str, last: re.Match | None) -> Token:
    """A token for an error message (Lark's ``$END`` borrows the last token's position)."""
    if last is None:
        return Token(kind, "", 0, 1, 1)
    group = last.lastgroup  # the token without the ignored text before it
    text_of = "" if kind == "$END" else last.group(group)
    return Token(kind, text_of, *_position(text, last.start(group)))


# --- the tables: generated with Lark, shipped as literals ----------------------------------------

def grammar_text() -> str:
    """The grammar shipped as ``gradcli.language.grammar`` (wheel or editable install alike)."""
    from gradcli.language import (
        grammar,  # a plain file next to the package's __init__: no importlib.resources
    )

    path = os.path.join(os.path.dirname(grammar.__file__ or ""), GRAMMAR_FILE)
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as file:
            return file.read()
    from importlib import resources  # e.g. a zipped package

    return resources.files("gradcli.language.grammar").joinpath(GRAMMAR_FILE).read_text("utf-8")


def grammar_digest(text: str) -> str:
    """A checksum that tells whether the tables were made from this grammar text (a CRC: it
    only detects a forgotten regeneration, and zlib is cheaper to import than hashlib)."""
    return f"crc32:{zlib.crc32(text.encode('utf-8')):08x}:{len(text)}"


def load_tables() -> dict[str, Any]:
    """The shipped tables if they were generated from the current grammar, else fresh ones."""
    text = grammar_text()
    try:
        from gradcli.language._lalr_tables import TABLES
    except ImportError:
        TABLES = None  # noqa: N806 -- the module's constant name
    if TABLES is not None and TABLES["grammar_digest"] == grammar_digest(text):
        return TABLES
    return generate_tables(text)


def generate_tables(text: str) -> dict[str, Any]:
    """Lark's LALR analysis of ``text`` as plain lists, dicts, strings and ints."""
    from lark import Lark  # regenerating the tables is the one use of Lark

    lark = Lark(text, parser="lalr", lexer="basic")
    retype = _keywords(lark.terminals)
    kept_out = {name for words in retype.values() for name in words.values()}
    # Lark's basic lexer tries terminals in this order (an alternation takes the first match).
    terminals = sorted((t for t in lark.terminals if t.name not in kept_out), key=lambda t: (
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
        "terminals": _often_first([[t.name, t.pattern.to_regexp()] for t in terminals]),
        "retype": retype,
        "ignore": sorted(lark.ignore_tokens),
        "valued": sorted(valued),
        "start": table.start_states["start"],
        "end": table.end_states["start"],
        "rules": kept_rules,
        "actions": actions,
    }


# The terminals most programs are made of, most frequent first: the scanner's alternation tries
# its terminals in order, so these are found after a few tries instead of after every array's
# and comparison's terminal (a fifth of a batch line's parse).
_OFTEN = ("NAME", "RPAR", "LPAR", "_POW", "STAR", "PLUS", "MINUS", "SLASH", "NUMBER")


def _often_first(terminals: list[list[str]]) -> list[list[str]]:
    """Lark's order of the terminals, with those of ``_OFTEN`` moved ahead of the terminals
    before them whose matches cannot begin with the same character as theirs: the order of two
    such terminals never decides what a text lexes as, so the scanner's tokens stay Lark's."""
    first = {name: _first_characters(regex) for name, regex in terminals}
    rest = list(terminals)
    ahead: list[list[str]] = []
    for name in _OFTEN:
        at = next((k for k, (other, _) in enumerate(rest) if other == name), None)
        mine = first.get(name)
        if at is not None and mine is not None and all(
                _apart(first[other], mine) for other, _ in rest[:at]):
            ahead.append(rest.pop(at))
    return ahead + rest


def _first_characters(regex: str) -> frozenset[int] | None:
    """The code points a match of ``regex`` can begin with, or None when that is not simply
    known (a class such as ``\\w``, an optional start, an unusual construct)."""
    import re._parser as sre  # only when the tables are generated, with Lark

    return _first_of(list(sre.parse(regex)), sre)


def _first_of(items: list, sre: Any) -> frozenset[int] | None:
    if not items:
        return None
    op, arg = items[0]
    if op is sre.LITERAL:
        return frozenset((arg,))
    if op is sre.IN:
        if any(kind is not sre.LITERAL and kind is not sre.RANGE for kind, _ in arg):
            return None
        return frozenset(code for kind, value in arg for code in (
            (value,) if kind is sre.LITERAL else range(value[0], value[1] + 1)))
    if op is sre.SUBPATTERN:
        return _first_of(list(arg[3]), sre)
    if op is sre.MAX_REPEAT and arg[0] > 0:
        return _first_of(list(arg[2]), sre)
    if op is sre.BRANCH:
        firsts = [_first_of(list(branch), sre) for branch in arg[1]]
        known = [f for f in firsts if f is not None]
        return frozenset().union(*known) if len(known) == len(firsts) else None
    return None


def _apart(theirs: frozenset[int] | None, mine: frozenset[int]) -> bool:
    """Whether no match of the one can begin where a match of the other begins."""
    return theirs is not None and not theirs & mine


def _keywords(terminals: list) -> dict[str, dict[str, str]]:
    """Strings that a pattern terminal of the same priority also matches whole (``"and"`` and
    NAME), as Lark's ``_create_unless`` finds them: {pattern terminal: {text: string terminal}}.
    The driver supports one such pattern (the grammar's NAME)."""
    found: dict[str, dict[str, str]] = {}
    for string in terminals:
        if string.pattern.type != "str":
            continue
        for pattern in terminals:
            if (pattern.pattern.type == "re" and pattern.priority == string.priority
                    and re.fullmatch(pattern.pattern.to_regexp(), string.pattern.value)):
                found.setdefault(pattern.name, {})[string.pattern.value] = string.name
    if len(found) > 1:
        raise ValueError(f"keywords of more than one pattern terminal: {sorted(found)}")
    return found


def write_tables() -> str:
    """Regenerate ``_lalr_tables.py`` next to this file (after editing the grammar)."""
    import pprint
    from pathlib import Path

    header = (
        '"""LALR tables for grammar/expr.lark, generated by ``lalr.write_tables()``: do not'
        ' edit.\n\nPlain literals, nothing deserialised; ``lalr.load_tables`` ignores them'
        ' if the grammar changed.\n"""\n\n'
        "# fmt: off\n"
    )
    tables = pprint.pformat(generate_tables(grammar_text()), width=99, compact=True)
    target = Path(__file__).with_name("_lalr_tables.py")
    target.write_text(header + "TABLES = " + tables + "\n", encoding="utf-8")
    return str(target)
