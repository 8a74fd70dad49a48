"""The LALR(1) driver: parses a program with the tables of ``lalr.py``, calling the builder at
every reduction, with Lark's tree-shaping rules, and raising Lark's ``UnexpectedCharacters`` /
``UnexpectedToken`` (``lalr.py``). Its one rule of its own, a postlexer's in Lark, drops a
newline inside open brackets, so a formula goes on over lines. A keyword (``"and"``) is lexed as
a NAME and retyped. Blanks, names, one-character tokens (``(``, ``+``) and those of one or two
(``*``, ``**``) are read by a table, without the regex (all of a batch line's tokens but its
numbers; a match costs as much as the rest of a token's work). Plain code on lists and ints,
compiled with the core where it is (setup.py).
"""

from __future__ import annotations

import operator
import re
import sys

from gradcli.language.lalr import (
    CLOSE,
    OPEN,
    SEPARATOR,
    SQUARE_CLOSE,
    SQUARE_OPEN,
    Token,
    UnexpectedCharacters,
    UnexpectedToken,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any, Final

# ``Final``: compiled (setup.py), C constants, not names looked up in the module's dictionary at
# every reduction (as engine/core_ops.py's).
_SHIFT: Final = 0  # an action kind in the tables (1: reduce)
# how a reduction makes its value
_UNIT: Final = 0
_PASS: Final = 1
_LEAF: Final = 2
_CALL: Final = 3
_SPLICE: Final = 4
_ERROR = "__ERROR"
_REGEX: Final = -1  # a character the scanner's regex reads (Parser.single)
_BLANK: Final = -2  # a character of ignored text read alone (Parser.single)
_PAIR: Final = -3  # a token of one or two characters, read with the next (Parser.pairs)
_NOTHING: Final = -(1 << 28)  # no action: a syntax error (or, on $END in the end state: done)


class Parser:
    """Parses text with ``tables``, calling ``builder.<rule alias>(children)`` at each reduction.

    Terminals are numbered by their group in the scanner's regex (``match.lastindex``, 0 for
    the text's end), so a state's actions are a list of ints indexed by that number: a state to
    shift to, ``~rule``, or ``_NOTHING``. Only kept terminals become Tokens, and a name or number
    that a leaf rule (``atom: NAME -> name``) takes at once none: the leaf's method gets the
    word and where it begins, ``builder.name("x", 4)``, and makes a Token only if it needs one
    (``lalr.token_at``). Most of a batch line's words are such; a Token costs as much as the
    rest of their parse."""

    def __init__(self, tables: dict[str, Any], builder: object) -> None:
        terminals = tables["terminals"]
        ignore = set(tables["ignore"])
        # Ignored text (spaces, comments) is skipped by the match of the token after it, and
        # the end of the text is a match of its own (no group: ``$END``). That is safe because
        # no kept terminal can begin with ignored text (a test compares tokens and errors with
        # Lark's own lexer), nor is skipped text ever given back (the error group takes any
        # character): a possessive skip (Python 3.11+) is faster. Most tokens never reach the
        # regex, though: the tables' ``single`` and ``blank`` characters are read by the table
        # below (``lalr._single_characters`` shows from the terminals that the tokens are the
        # regex's; a test, from Lark's lexer).
        skip = "|".join(f"(?:{regex})" for name, regex in terminals if name in ignore)
        kept = [f"(?P<{name}>{regex})" for name, regex in terminals if name not in ignore]
        kept.append(f"(?P<{_ERROR}>.|\\n)")
        repeat = "*+" if sys.version_info >= (3, 11) else "*"
        prefix = f"(?:{skip}){repeat}" if skip else ""
        self.scanner = re.compile(f"{prefix}(?:{'|'.join(kept)}|\\Z)")
        patterns = dict(terminals)
        if not (re.fullmatch(patterns.get(OPEN, "$^"), "(")
                and re.fullmatch(patterns.get(CLOSE, "$^"), ")")
                and re.fullmatch(patterns.get(SEPARATOR, "$^"), "\n")):
            raise ValueError(f"the grammar has no terminals {OPEN} '(', {CLOSE} ')' and "
                             f"{SEPARATOR} matching a newline, which line breaks rely on")
        # keywords: (pattern terminal, {text: keyword terminal}), e.g. ("NAME", {"and": "AND"})
        retype = tables.get("retype") or {}
        (named, keywords), = retype.items() if len(retype) == 1 else ((None, {}),)
        # A terminal's number: its group's (inner groups of a terminal's regex number nothing:
        # a match's lastindex is the outermost group, closed last), then the keywords'.
        self.names: list[str | None] = ["$END"] + [None] * self.scanner.groups
        for name, group in self.scanner.groupindex.items():
            self.names[group] = name
        self.names.extend(keywords.values())
        number = {name: k for k, name in enumerate(self.names) if name is not None}
        self.named = number.get(named or "", -1)
        self.keywords = {word: number[kind] for word, kind in keywords.items()}
        self.error = number[_ERROR]
        self.valued = [name in tables["valued"] for name in self.names]  # kept in the tree
        # per ASCII code: the terminal of a token it always begins, _BLANK for ignored text,
        # else _REGEX; per run terminal (a name), its run's characters and a match of the rest
        # of a run two or more long at once (so are runs of blanks: a loop per character would
        # make the Python build slower than the regex on long names and blanks)
        self.single: list[int] = [_REGEX] * 128
        self.runs: list[list[bool] | None] = [None] * len(self.names)
        self.rests: list[Any] = [None] * len(self.names)
        for name, characters in (tables.get("single") or {}).items():
            for code in map(ord, characters):
                if code < 128:  # (the table's size; others go to the regex)
                    self.single[code] = number[name]
        for name, characters in (tables.get("runs") or {}).items():
            self.runs[number[name]] = [chr(code) in characters for code in range(128)]
            self.rests[number[name]] = re.compile(f"[{re.escape(characters)}]*").match
        blank = "".join(c for c in tables.get("blank") or "" if ord(c) < 128)  # (the others:
        for code in map(ord, blank):  # the regex skips them, as the ignored text they are)
            self.single[code] = _BLANK
        self.blanks: Any = re.compile(f"[{re.escape(blank)}]*" if blank else "").match
        # per ASCII code of a pair's first character: the terminal of each next character
        # (128 places), then that of the first alone, -1 for none (``lalr._pairs``: * and **)
        self.pairs: list[list[int]] = [[] for _ in range(128)]
        for first, row in (tables.get("pairs") or {}).items():
            code = ord(first)
            self.single[code] = _PAIR
            self.pairs[code] = [number[row[chr(c)]] if chr(c) in row else -1 for c in range(128)]
            self.pairs[code].append(-1 if row[""] is None else number[row[""]])
        self.brackets = {number[name]: name for name in (
            OPEN, CLOSE, SQUARE_OPEN, SQUARE_CLOSE, SEPARATOR) if name in number}
        self.start: int = tables["start"]
        self.end: int = tables["end"]
        # per state: terminal number -> action, and rule name -> state
        self.steps: list[list[int]] = [_row(state, number, len(self.names))
                                       for state in tables["actions"]]
        self.gotos: list[dict[str, int]] = [
            {symbol: arg for symbol, (_, arg) in state.items() if not symbol.isupper()}
            for state in tables["actions"]]
        origins = sorted({rule[0] for rule in tables["rules"]})
        self.origins = origins
        self.rules = [self._reducer(rule, builder, origins.index(rule[0]))
                      for rule in tables["rules"]]
        # Rules that only pass their one child up (``?sum: product``) come in chains (atom ->
        # power -> unary -> product -> sum) after a reduction's goto: each step replaces the top
        # state and keeps the one below, so where a reduction lands depends only on (state
        # below, the rule reduced, lookahead) and is worked out once per such triple: in the
        # row ``below * len(origins) + origin``, made when first needed, at the lookahead's
        # number (lists, not a dict: a key would be a new int object at every reduction).
        self.landings: list[list[int] | None] = [None] * (len(self.steps) * len(origins))

    @staticmethod
    def _reducer(rule: list, builder: object, origin: int) -> tuple[int, int, int, Any]:
        """(length, origin, how, what) for one grammar rule (``origin``: the number of the
        rule's name, for landings): _UNIT (``?x: y``, the one child passed up), _PASS (the
        popped value at position ``what``), _LEAF (``what`` the method, called with the one
        child: ``[value]``, or ``word, start`` for a word just read), _CALL (``what`` is
        (method, pick), ``pick`` taking the kept children straight from the top of the value
        stack: no copy of the popped values) or _SPLICE (``what`` builds the children with
        ``_rule`` inlining)."""
        name, length, callback, expand1, kept = rule
        method = getattr(builder, callback, None)
        if not name.startswith("_") and not expand1 and method is None:
            raise TypeError(f"the parser builder has no method for the rule {callback}")
        plain = not any(splice for _, splice in kept)
        if expand1 and plain and len(kept) == 1:
            return length, origin, _UNIT if length == 1 else _PASS, kept[0][0]
        if plain and not name.startswith("_") and not expand1:
            positions = [index for index, _ in kept]
            if positions == [0] and length == 1:  # names and numbers
                return length, origin, _LEAF, method
            if not positions:  # nothing kept (x[:]): the callback gets an empty list
                pick = operator.itemgetter(slice(0, 0))
            elif positions == list(range(length)):
                pick = operator.itemgetter(slice(-length, None))
            elif len(positions) == 1:  # a slice, so that the callback still gets a list
                end = positions[0] - length + 1
                pick = operator.itemgetter(slice(end - 1, end or None))
            else:
                pick = operator.itemgetter(*[index - length for index in positions])
            return length, origin, _CALL, (method, pick)

        # A left-recursive list rule (``_x: _x item``) grows its own list in place, as Lark's
        # does: copying it at every item would make a long program quadratic.
        reuse_first = bool(kept) and kept[0] == [0, True]
        # worked out once, not at each reduction (compiled: typed pairs, no method call)
        children_at = [(int(index), bool(splice))
                       for index, splice in (kept[1:] if reuse_first else kept)]
        inlined = name.startswith("_")

        def build(values: list) -> Any:
            children: list = values[0] if reuse_first else []
            for index, splice in children_at:
                if splice:
                    children.extend(values[index])
                else:
                    children.append(values[index])
            if inlined:
                return children
            if expand1 and len(children) == 1:
                return children[0]
            assert method is not None  # checked above: only _rules and expand1 lack one
            return method(children)

        return length, origin, _SPLICE, build

    def parse(self, text: str) -> Any:
        steps, rules, landings, origins = self.steps, self.rules, self.landings, len(self.origins)
        valued, named, keywords, brackets = self.valued, self.named, self.keywords, self.brackets
        single, runs, rests, scan = self.single, self.runs, self.rests, self.scanner.match
        blanks, pairs = self.blanks, self.pairs
        multiline = "\n" in text  # else no newline to drop: skip the counting (a batch's lines)
        names, error = self.names, self.error
        new_str: Any = str.__new__
        token_class = Token  # a local: not looked up by name for every token
        top = self.start
        states: list[int] = [top]
        values: list[Any] = []
        line, line_start, counted = 1, 0, 0  # newlines counted up to position ``counted``
        depth = 0  # ( read and not yet closed
        size = len(text)
        at = 0  # where the next token's reading begins
        start = 0  # where the token begins (after the ignored text before it)
        last = -1  # where the token before it began (-1: none yet)
        made: Any = None
        word_at, word_kind = -1, 0  # where the word on top of the stack begins (-1: none)
        while True:
            k, skipped = _BLANK, False
            while at < size:  # blanks, then a token the table knows or the regex's
                code = ord(text[at])
                k = single[code] if code < 128 else _REGEX
                if k != _BLANK:
                    break
                if skipped:  # a second blank: the rest of the run at once
                    at = blanks(text, at).end()
                else:
                    at, skipped = at + 1, True
            if at >= size:
                k, start = 0, size  # $END
            elif k == _PAIR:  # * or **, < or <=: the token by the next character
                pair = pairs[code]
                second = ord(text[at + 1]) if at + 1 < size else 128
                if second < 128 and pair[second] >= 0:
                    k, start, at = pair[second], at, at + 2
                elif second <= 128 and pair[128] >= 0:
                    k, start, at = pair[128], at, at + 1
                else:  # no token alone (an error), or a second character past ASCII
                    k = _REGEX
            elif k != _REGEX:
                start, at = at, at + 1
                run = runs[k]
                if run is not None and at < size:  # a name: its letters and digits
                    code = ord(text[at])
                    if code < 128 and run[code]:
                        at = rests[k](text, at).end()
            if k == _REGEX:
                match: Any = scan(text, at)  # never None: the error group takes any character
                k = match.lastindex or 0
                start, at = match.span(k)  # (the group ends where the match does)
            value: Any = None  # a word (valued terminal): its text, a Token once it must be
            if valued[k]:
                value = text[start:at]
                if k == named and value in keywords:
                    k, value = keywords[value], None  # a keyword (not valued), not a name
            if multiline and k in brackets:
                kind = brackets[k]
                if kind in (OPEN, SQUARE_OPEN):
                    depth += 1
                elif kind in (CLOSE, SQUARE_CLOSE):
                    depth -= 1
                elif depth > 0 and text[start] == "\n":
                    continue  # a line break inside ( ): the statement goes on
            while True:
                action = steps[top][k]
                if word_at >= 0 and (action >= 0 or action == _NOTHING
                                     or rules[~action][2] != _LEAF):
                    # the word on top is read by more than a leaf: its Token, line counted
                    if multiline and counted < word_at and "\n" in text[counted:word_at]:
                        line += text.count("\n", counted, word_at)
                        line_start = text.rfind("\n", 0, word_at) + 1
                    counted = word_at
                    token = new_str(token_class, values[-1])  # Token(...) inlined
                    token.type, token.pos_in_stream = names[word_kind], word_at
                    token.line, token.column = line, word_at - line_start + 1
                    values[-1], word_at = token, -1
                if action >= 0:
                    states.append(action)
                    values.append(value)
                    top = action
                    if value is not None:
                        word_at, word_kind = start, k
                    break
                if action == _NOTHING:  # the text's end, or a syntax error
                    if k == 0 and top == self.end:
                        return values[-1]
                    # what this state takes (after a whole operand: an operator or the end)
                    expected = {names[j] or "" for j, a in enumerate(steps[top]) if a != _NOTHING}
                    if k == error:
                        raise UnexpectedCharacters(*_position(text, start), expected)
                    raise UnexpectedToken(_token(text, names[k] or "", start, at, last),
                                          expected, values)
                length, origin, how, what = rules[~action]
                if how == _LEAF:  # right after a shift: the top state is replaced
                    if word_at >= 0:  # a name or number: no Token made unless it is needed
                        values[-1], word_at = what(values[-1], word_at), -1
                    else:
                        values[-1] = what([values[-1]])
                elif how == _UNIT:  # right after a shift; after a reduction, the landing
                    # has already taken such chains
                    top = states[-1] = self._unit_chain(states[-2], top, k)
                    continue
                else:
                    if how == _CALL:
                        call: tuple[Any, Any] = what  # unpacked as a pair, not iterated
                        method, pick = call
                        made = method(pick(values))
                    elif how == _PASS:
                        made = values[what - length]
                    else:
                        made = what(values[-length:] if length else [])
                    if length:
                        for _ in range(length - 1):  # leaves the place of the value made
                            values.pop()  # (pops: a slice's del costs more for 1 to 3)
                            states.pop()
                        values[-1] = made
                    else:
                        values.append(made)
                        states.append(states[-1])
                below = states[-2]
                row = landings[below * origins + origin]
                if row is None:
                    row = landings[below * origins + origin] = [-1] * len(names)
                top = row[k]
                if top < 0:
                    top = row[k] = self._landing(below, origin, k)
                states[-1] = top
            last = start

    def _landing(self, below: int, origin: int, k: int) -> int:
        """The top state after the goto on a reduced rule and the pass-through reductions that
        follow it (``_unit_chain``), from the state below, the rule's origin and lookahead."""
        return self._unit_chain(below, self.gotos[below][self.origins[origin]], k)

    def _unit_chain(self, below: int, top: int, k: int) -> int:
        """The top state after every pass-through reduction that terminal ``k`` triggers."""
        while True:
            action = self.steps[top][k]
            if action >= 0 or action == _NOTHING:
                return top
            _, origin, how, _ = self.rules[~action]
            if how != _UNIT:
                return top
            top = self.gotos[below][self.origins[origin]]


def _row(state: dict[str, list[int]], number: dict[str, int], size: int) -> list[int]:
    """A state's actions on terminals as a list by terminal number."""
    row = [_NOTHING] * size
    for symbol, (kind, arg) in state.items():
        if symbol.isupper():
            row[number[symbol]] = arg if kind == _SHIFT else ~arg
    return row


def _position(text: str, pos: int) -> tuple[int, int, int]:
    """(pos, line, column) of a character position, 1-based as Lark counts."""
    line_start = text.rfind("\n", 0, pos) + 1
    return pos, text.count("\n", 0, pos) + 1, pos - line_start + 1


def _token(text: str, kind: str, start: int, end: int, last: int) -> Token:
    """The token at ``start:end`` for an error message (Lark's ``$END`` borrows the position
    of the last token, which began at ``last``: -1 for none)."""
    if kind != "$END":
        return Token(kind, text[start:end], *_position(text, start))
    if last < 0:
        return Token(kind, "", 0, 1, 1)
    return Token(kind, "", *_position(text, last))
