"""The LALR(1) tables Lark computes from ``grammar/expr.lark``, and what the driver
(``driver.py``) gives and raises: Lark's ``Token``, ``UnexpectedCharacters`` and
``UnexpectedToken``.

Importing Lark and building its tables costs more than a small ``gradcli eval``, and its generic
lexer dominates a batch of small programs; so ``generate_tables`` turns Lark's terminals, rules
and parse table into plain literals, shipped as ``_lalr_tables.py`` (``write_tables()`` rewrites
it after a grammar edit; ``load_tables`` regenerates them in memory when the grammar no longer
matches).
"""

from __future__ import annotations

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


class Token(str):
    """A terminal's text with its type and 1-based line and column (Lark's ``Token`` fields)."""

    __slots__ = ("column", "line", "pos_in_stream", "type")
    type: str
    pos_in_stream: int
    line: int
    column: int

    def __new__(cls, type_: str, text: str, pos: int, line: int, column: int) -> Token:
        token = super().__new__(cls, text)
        token.type, token.pos_in_stream, token.line, token.column = type_, pos, line, column
        return token


def token_at(text: str, word: str, pos: int, kind: str = "NAME") -> Token:
    """The Token of ``word`` found at ``pos`` in ``text``, its line and column counted as the
    driver counts them (a name's place kept as a number, for an error that may never come)."""
    return Token(kind, word, pos, text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos))


class UnexpectedInput(Exception):  # noqa: N818 -- Lark's names, which parser.py expects
    line: int
    column: int


class UnexpectedCharacters(UnexpectedInput):
    def __init__(self, pos: int, line: int, column: int, allowed: set[str]) -> None:
        super().__init__(f"unexpected character at line {line}, column {column}")
        self.pos_in_stream, self.line, self.column, self.allowed = pos, line, column, allowed


class UnexpectedToken(UnexpectedInput):
    def __init__(self, token: Token, expected: set[str], values: list) -> None:
        super().__init__(f"unexpected token {token.type} at line {token.line}")
        self.token, self.expected = token, expected
        self.line, self.column = token.line, token.column
        # The parser's value stack when it stopped (ours only, not Lark's): what was read so
        # far, for a message such as "the program ends with the statement f = ...".
        self.values = values


# --- the tables: generated with Lark, shipped as literals ----------------------------------------

def grammar_text() -> str:
    """The grammar shipped as ``gradcli.language.grammar`` (wheel or editable install alike)."""
    # a plain file next to the package's __init__: no importlib.resources
    from gradcli.language import grammar

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
    ordered = _often_first([[t.name, t.pattern.to_regexp()] for t in terminals])
    single, blank, runs = _single_characters(ordered, set(lark.ignore_tokens), valued)
    return {
        "grammar_digest": grammar_digest(text),
        "terminals": ordered,
        "single": single,
        "runs": runs,
        "blank": blank,
        "pairs": _pairs(ordered, set(lark.ignore_tokens), single),
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
        if at is not None and mine is not None and all(  # no match of theirs begins as mine
                first[other] is not None and not first[other] & mine for other, _ in rest[:at]):
            ahead.append(rest.pop(at))
    return ahead + rest


def _single_characters(terminals: list[list[str]], ignore: set[str],
                       valued: set[str]) -> tuple[dict[str, str], str, dict[str, str]]:
    """What the driver may read without its regex, a character at a time.

    ``single``: the characters that begin a token of one terminal whatever follows them
    ({"LPAR": "(", "NAME": "A...z"}): no ignored terminal, nor any terminal the scanner tries
    before it, can begin so, and the terminal is that one character (and not kept in the tree,
    not in ``valued``) or a run (``runs``). ``runs``: for a terminal that is a class and then a
    run of another (``[a-z][a-z0-9]*``), the characters of its run. ``blank``: the characters
    of an ignored run of one class (``[ \\t]+``) that no other ignored terminal begins with.
    Anything unclear is left to the regex (``None`` first characters)."""
    first = {name: _first_characters(regex) for name, regex in terminals}
    skipped = [name for name, _ in terminals if name in ignore]
    if any(first[name] is None for name in skipped):
        return {}, "", {}
    blank = ""
    for name in skipped:
        run = _class_run(dict(terminals)[name], 1)
        others = frozenset().union(*(first[other] or () for other in skipped if other != name))
        if run is not None and not run[1] & others:
            blank += "".join(sorted(map(chr, run[1])))
    starts_skipped = frozenset().union(*(first[name] or () for name in skipped))
    single: dict[str, str] = {}
    runs: dict[str, str] = {}
    tried: set[int] = set()  # the first characters of the terminals tried so far
    for name, regex in terminals:
        if name in ignore:
            continue
        mine = first[name]
        if mine is None:
            break  # it may begin with anything: nothing after it is single
        run = _class_run(regex, 0)
        if run is not None and all(code < 128 for code in run[1]):
            runs[name] = "".join(sorted(map(chr, run[1])))
        alone = mine - tried - starts_skipped
        if alone and (name in runs or (name not in valued and _one_character(regex))):
            single[name] = "".join(sorted(map(chr, alone)))
        tried |= mine
    return single, blank, runs


def _pairs(terminals: list[list[str]], ignore: set[str],
           single: dict[str, str]) -> dict[str, dict[str, str | None]]:
    """The tokens of one or two characters the driver reads by a table, not by its regex
    (``*`` and ``**``, ``<`` and ``<=``): {first character: {second character: terminal,
    "": the terminal of the first alone, or None}} ({"*": {"*": "_POW", "": "STAR"}}). Only
    where every terminal that may begin with the character matches at most two characters,
    so that the scanner's token there depends on the next character alone (found by running
    the scanner on each pair); none that ignored text begins."""
    first = {name: _first_characters(regex) for name, regex in terminals}
    if any(known is None for known in first.values()):
        return {}
    sre = _sre()
    read_alone = {code for characters in single.values() for code in map(ord, characters)}
    skipped = frozenset().union(*(first[name] or () for name in ignore if name in first))
    kept = [(name, regex) for name, regex in terminals if name not in ignore]
    scanner = re.compile("|".join(f"(?P<{name}>{regex})" for name, regex in kept))
    found: dict[str, dict[str, str | None]] = {}
    for code in sorted(frozenset().union(*(first[name] or () for name, _ in kept))):
        if code >= 128 or code in read_alone or code in skipped or any(
                sre.parse(regex).getwidth()[1] > 2 for name, regex in kept
                if code in (first[name] or ())):
            continue
        alone = scanner.match(chr(code))
        row: dict[str, str | None] = {"": alone.lastgroup if alone else None}
        for second in map(chr, range(128)):
            match = scanner.match(chr(code) + second)
            if match is not None and match.end() == 2:
                row[second] = match.lastgroup
            elif (match.lastgroup if match else None) != row[""]:
                break  # the first alone lexes differently by what follows: left to the regex
        else:
            found[chr(code)] = row
    return found


def _one_character(regex: str) -> bool:
    """Whether every match of ``regex`` is one character (of its ``_first_characters``),
    whatever comes after it: a literal or a class, nothing else (``-\\b`` is one character
    wide but depends on the next)."""
    sre, items = _sre(), _items(regex)
    return items is not None and len(items) == 1 and items[0][0] in (sre.LITERAL, sre.IN) and (
        _first_of(items, sre) is not None)


def _class_run(regex: str, least: int) -> tuple[frozenset[int], frozenset[int]] | None:
    """(first, run): ``regex`` as a run of one class, at least ``least`` long (``[ \\t]+``:
    first and run alike), after one character of a class of its own when ``least`` is 0
    (``[a-z][a-z0-9]*``); None for any other form."""
    sre, items = _sre(), _items(regex)
    if items is None:
        return None
    repeats = (sre.MAX_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT))  # 3.11+
    if len(items) != 2 - least or items[-1][0] not in repeats:
        return None
    low, high, inner = items[-1][1]
    inner = list(inner)
    if low != least or high != sre.MAXREPEAT or len(inner) != 1 or any(
            item[0] not in (sre.LITERAL, sre.IN) for item in [*inner, *items[:-1]]):
        return None
    run = _first_of(inner, sre)
    head = _first_of(items[:1], sre) if least == 0 else run
    return None if run is None or head is None else (head, run)


def _first_characters(regex: str) -> frozenset[int] | None:
    """The code points a match of ``regex`` can begin with, or None when that is not simply
    known (a class such as ``\\w``, an optional start, a flag such as ``(?i)``, an unusual
    construct)."""
    items = _items(regex)
    return None if items is None else _first_of(items, _sre())


def _items(regex: str) -> list | None:
    """``regex`` parsed, its items in order; None with a flag for the whole of it (``(?i)``:
    what a character begins, or is, is then more than its items say; a group's own flags are
    ``_first_of``'s to refuse)."""
    parsed = _sre().parse(regex)
    return None if parsed.state.flags & ~re.UNICODE else list(parsed)


def _sre() -> Any:
    """The regex parser of ``re`` (only when the tables are generated, with Lark)."""
    try:
        import re._parser as sre  # Python 3.11+
    except ImportError:
        import sre_parse as sre  # Python 3.10
    return sre


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
    if op is sre.SUBPATTERN:  # (group, flags added, flags removed, pattern)
        return None if arg[1] or arg[2] else _first_of(list(arg[3]), sre)
    if op is sre.MAX_REPEAT and arg[0] > 0:
        return _first_of(list(arg[2]), sre)
    if op is sre.BRANCH:
        firsts = [_first_of(list(branch), sre) for branch in arg[1]]
        known = [f for f in firsts if f is not None]
        return frozenset().union(*known) if len(known) == len(firsts) else None
    return None


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
