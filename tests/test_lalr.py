"""The shipped LALR tables and their driver agree with Lark itself on the same grammar."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark, Transformer, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedToken

from gradcli.language import driver, lalr
from gradcli.language._lalr_tables import TABLES

PROGRAMS = [
    "x", "2.5e-3", "-x**2", "+-+x", "2**3**-2", "a ^ b ^ c", "x*W + b - t", "(x)", "((x))",
    "f()", "pow(x, y)", "atan2(1, max(a, b, c))", "u = x*W; z = u + b\nerr = z - t; err*err",
    "\n\n x = 2 # default\n;; y = x*x ;\n y / 2 \n", "sin(cos(tan(x)))/-(3)", "a - b - c / d / e",
    # line breaks: inside open parentheses, and after a backslash
    "u = (x\n  + y)\nv = max(u,\n # a comment\n\n w)\n(u\n)*v", "x + \\\n y", "x \\ \t\r\n* y",
    "a = ((\n1)\n)\n\\\n a",
    # arrays: literals over several lines, subscripts, slices, @ and the transpose
    "W = [[1, 2],\n     [3, 4]]\nsum(W@x')", "x[0] + W[1, 0] + sum(x[1:3]) + x[:2]@x[1:] + x[:]",
    # piecewise (issue 15): comparisons, logic, the conditional, keywords inside names
    "x == 2", "x < y", "-x**2 <= 3*y", "a != b", "x > 0 and y >= 0 or not z",
    "not not x", "x if x > 0 else 0.01*x", "a if b else c if d else e", "where(x > 0, x, 0)",
    "(a if b else c) + 1", "android + order + notice + iffy + elsewhere + not_", "x if(y)else(z)",
    # functions of the program's own
    "f(a, b) = a*b + 1; f(x, y) + f(y, x)", "g() = 2\ng()", "h(a) = a if a > 0 else -a\nh(x)",
]
BAD = ["2x", "x +", "(x", "x)", "x = ", "x < y < z", "x if y", "not", "x and", "if x else y",
       "x == y == z", "f(a) =", "f(a) = 1", "x = y if", "x or or y", "else", "$", "x = 2\ny = @",
       "f(,)", ";", "", "x\n\n)",
       "(x\n", "(x;\ny)", "(x))\n+ y", "x +\ny", "x \\", "x \\ y", "x # \\\n+ y", "((x)\n"]


class ParenNewlines:
    """The driver's one rule of its own (see grammar/expr.lark), as a Lark postlexer written
    apart from the driver: a newline separator inside open parentheses is dropped."""

    always_accept = ()

    def process(self, stream):
        depth = 0
        for token in stream:
            if token.type in (lalr.OPEN, lalr.SQUARE_OPEN):
                depth += 1
            elif token.type in (lalr.CLOSE, lalr.SQUARE_CLOSE):
                depth -= 1
            elif token.type == lalr.SEPARATOR and depth > 0 and str(token) == "\n":
                continue
            yield token


class _Shape(Transformer):
    """Reduces Lark's tree to nested tuples: (rule, children...)."""

    def __default__(self, data, children, meta):
        if data.startswith("_"):  # Lark splices these into their parent itself
            return Tree(data, children, meta)
        return (str(data), *children)


class _ShapeBuilder:
    """The same shapes from the gradcli driver's callbacks. A leaf's word comes as its text
    and start (no Token made), so its Token is made here, to be compared with Lark's."""

    text = ""  # the text being parsed (_ShapeParser)

    def __getattr__(self, name):
        def callback(children, start=None):
            if start is not None:
                kind = "NUMBER" if name == "number" else "NAME"
                return (name, lalr.token_at(self.text, children, start, kind))
            return (name, *children)

        return callback


class _ShapeParser:
    """The driver, telling its builder the text (as parser.py tells GraphBuilder)."""

    def __init__(self, tables):
        self.shapes = _ShapeBuilder()
        self.driver = driver.Parser(tables, self.shapes)

    def parse(self, text):
        self.shapes.text = text
        return self.driver.parse(text)


def _tokens(value):
    """Tokens (Lark's or ours) as (type, text, line, column), inside nested tuples."""
    if hasattr(value, "type"):
        return (value.type, str(value), value.line, value.column)
    if isinstance(value, tuple):
        return tuple(_tokens(v) for v in value)
    return value


_PARSERS = (Lark(lalr.grammar_text(), parser="lalr", lexer="basic", transformer=_Shape(),
                 postlex=ParenNewlines()),
            _ShapeParser(TABLES))


@pytest.fixture(scope="module")
def parsers():
    return _PARSERS


def test_shipped_tables_match_the_grammar():
    """Regenerate with gradcli.language.lalr.write_tables() after editing grammar/expr.lark."""
    assert TABLES["grammar_digest"] == lalr.grammar_digest(lalr.grammar_text())
    assert lalr.load_tables() is TABLES


def test_generated_tables_describe_the_same_language():
    fresh = lalr.generate_tables(lalr.grammar_text())
    assert fresh["terminals"] == TABLES["terminals"]
    assert [fresh[key] for key in ("single", "blank", "runs", "pairs")] == [
        TABLES[key] for key in ("single", "blank", "runs", "pairs")]
    assert sorted(map(str, fresh["rules"])) == sorted(map(str, TABLES["rules"]))
    assert len(fresh["actions"]) == len(TABLES["actions"])


@pytest.mark.parametrize("program", PROGRAMS)
def test_same_tree_as_lark(parsers, program):
    reference, ours = parsers
    assert _tokens(ours.parse(program)) == _tokens(reference.parse(program))


@pytest.mark.parametrize("program", BAD)
def test_same_syntax_error_as_lark(parsers, program):
    _assert_same_error(*parsers, program)


def _assert_same_error(reference, ours, program):
    with pytest.raises((UnexpectedCharacters, UnexpectedToken)) as theirs:
        reference.parse(program)
    with pytest.raises(lalr.UnexpectedInput) as mine:
        ours.parse(program)
    assert type(mine.value).__name__ == type(theirs.value).__name__
    assert (mine.value.line, mine.value.column) == (theirs.value.line, theirs.value.column)
    if isinstance(theirs.value, UnexpectedToken):
        assert mine.value.token.type == theirs.value.token.type
        assert mine.value.expected == theirs.value.expected
    else:
        assert mine.value.pos_in_stream == theirs.value.pos_in_stream


# Texts made of the language's own pieces, spaces and comments included, so that the driver's
# lexer (which skips ignored text inside the next token's match, and reads blanks and
# one-character tokens without its regex) meets every boundary case.
PIECES = ["x", "y1", "2", ".5", "3e-2", "1.", "+", "-", "*", "/", "**", "^", "(", ")", ",", "=",
          ";", "\n", " ", "\t", "# note", "sin", "$", "<", "<=", "==", "!=", ">",
          "and", "or", "not", "if", "else", "f(a)", "orb", "\r\n", "\\", "\\\n", "\\ \r\n",
          "\ufeff", "[", "]", "@", "'", ":", "%", "\x0c", "\r", "  ", "é", "xé", "_1", "and_",
          "x2y3z", "    "]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14))
def test_same_result_as_lark_on_generated_text(program_pieces):
    reference, ours = _PARSERS
    program = "".join(program_pieces)
    try:
        expected = _tokens(reference.parse(program))
    except (UnexpectedCharacters, UnexpectedToken):
        _assert_same_error(reference, ours, program)
        return
    assert _tokens(ours.parse(program)) == expected


def _outcome(parser, text):
    """The tokens of ``text``, or its syntax error's kind and place."""
    try:
        return _tokens(parser.parse(text))
    except lalr.UnexpectedInput as error:
        return type(error).__name__, error.line, error.column


def test_deep_nesting_needs_no_recursion(parsers):
    _, ours = parsers
    depth = 100_000
    tree = ours.parse("(" * depth + "x" + ")" * depth)
    assert _tokens(tree) == ("start", ("name", ("NAME", "x", 1, depth + 1)))


def test_parsing_imports_neither_lark_nor_numpy():
    """Start-up cost: the shipped tables make Lark unnecessary on every path of a valid grammar."""
    import subprocess
    import sys

    code = ("import sys, gradcli\n"
            "gradcli.evaluate('u = x*W; (u + b - t)**2', {'x': 2, 'W': 3, 'b': 1, 't': 8})\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in {'lark', 'numpy'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_frequent_terminals_move_ahead_only_of_terminals_they_cannot_clash_with():
    """The scanner tries NAME, the parentheses and arithmetic first, but never ahead of a
    terminal whose match may begin with the same character (``->`` before ``-``), nor of one
    whose first characters the regex does not simply tell (``\\w``)."""
    terminals = [["ARROW", "\\->"], ["AT", "@"], ["MINUS", "\\-"], ["PLUS", "\\+"],
                 ["NAME", "[A-Za-z_][A-Za-z0-9_]*"], ["_POW", "(?:\\*\\*|\\^)"], ["STAR", "\\*"]]
    order = [name for name, _ in lalr._often_first(terminals)]
    assert order == ["NAME", "_POW", "STAR", "PLUS", "ARROW", "AT", "MINUS"]
    unclear = [["WORD", "\\w+"], *terminals]
    assert [name for name, _ in lalr._often_first(unclear)] == [name for name, _ in unclear]
    assert lalr._first_characters("[<>]=?|[=!]=") == frozenset(map(ord, "<>=!"))
    assert lalr._first_characters("a?b") is None  # an optional start


def test_characters_read_without_the_regex_begin_one_terminal_whatever_follows():
    """A character is read alone (``single``) only when nothing tried before its terminal,
    ignored text included, may begin with it, and the terminal is that one character (not
    kept in the tree) or a run (``[a-z][a-z0-9]*``, read to its end): ``*`` is not (``**`` is
    tried first), nor ``=`` (``==``); a blank only when no other ignored terminal begins with
    it (``\\`` begins a line continuation)."""
    terminals = [["NAME", "[A-Za-z_][A-Za-z0-9_]*"], ["RPAR", "\\)"], ["_POW", "(?:\\*\\*|\\^)"],
                 ["STAR", "\\*"], ["SEP", "[;\n]"], ["COMPARE", "[<>]=?|[=!]="],
                 ["EQUAL", "="], ["VALUED", "\\$"], ["CASELESS", "(?i:q)"], ["DIGITS", "[0-9]+"],
                 ["SPACES", "[ \t]+"], ["TABS", "\t+"], ["CONTINUE", "\\\\[ ]*\n"],
                 ["UNCLEAR", "\\w+"], ["AFTER", "&"]]
    ignore = {"SPACES", "TABS", "CONTINUE"}
    single, blank, runs = lalr._single_characters(terminals, ignore, {"NAME", "VALUED"})
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
    assert single == {"NAME": letters, "RPAR": ")", "SEP": "\n;"}
    assert runs == {"NAME": "0123456789" + letters}  # [0-9]+ is no class-and-run: the regex's
    assert blank == ""  # a tab of [ \t]+ also begins TABS: which one skips it is the regex's
    apart = [["SPACES", "[ ]+"], ["TABS", "\\t+"], ["CONTINUE", "\\\\[ ]*\n"], ["RPAR", "\\)"]]
    assert lalr._single_characters(apart, ignore, set()) == ({"RPAR": ")"}, " \t", {})
    # a review's: a caseless terminal tried first may begin with any case of its letters, and
    # an anchor makes a one-character terminal depend on what follows (-\\b before -)
    caseless = [["SELECT", "(?i:select)"], ["NAME", "[A-Za-z_][A-Za-z0-9_]*"]]
    assert lalr._single_characters(caseless, set(), {"NAME", "SELECT"}) == ({}, "", {})
    assert lalr._single_characters([["NEG", "-\\b"], ["MINUS", "-"]], set(), set()) == (
        {}, "", {})
    assert lalr._single_characters([["REM", "(?i:rem)[^\n]*"], ["SPACES", "[ ]+"],
                                    ["NAME", "[a-z]+"]], {"REM", "SPACES"}, set()) == ({}, "", {})
    # a blank past ASCII is left to the regex (the driver's table has 128 places): here one
    # the regex does not skip, so the text reads as without it in the table, error and all
    wide = _ShapeParser({**TABLES, "blank": TABLES["blank"] + "\xa0"})
    for text in ("x +  y", "x +  \xa0y", "x + \xa0y", "x +\xa0 y", "x\xa0\xa0+ y"):
        assert _outcome(wide, text) == _outcome(_PARSERS[1], text)
    # an ignored terminal whose first characters are unclear: nothing is read alone
    assert lalr._single_characters([["RPAR", "\\)"], ["SKIP", "\\s+"]], {"SKIP"}, set()) == (
        {}, "", {})
    # the grammar's own: brackets, + - / and names read alone, never * = < nor a number
    alone = "".join(TABLES["single"].values())
    assert set("()[]+-/,;\nxW_") <= set(alone) and not set("*=<>!1.") & set(alone)
    assert TABLES["blank"] == "\t\x0c\r "


def test_tokens_of_one_or_two_characters_are_read_by_a_table():
    """``pairs``: a first character whose terminals all match at most two characters is read
    with the next one by a table (``*`` then ``*``: the power), the scanner's own token for
    every pair; a first character lexed differently by a longer match, or one that ignored
    text begins, is left to the regex."""
    terminals = [["_POW", "(?:\\*\\*|\\^)"], ["STAR", "\\*"], ["COMPARE", "[<>]=?|[=!]="],
                 ["EQUAL", "="], ["ARROW", "-->"], ["MINUS", "-"], ["SPACES", "[ ]+"],
                 ["REM", "%[^\n]*"], ["PERCENT", "%"]]
    pairs = lalr._pairs(terminals, {"SPACES", "REM"}, {})
    assert pairs["*"] == {"": "STAR", "*": "_POW"} and pairs["^"] == {"": "_POW"}
    assert pairs["="] == {"": "EQUAL", "=": "COMPARE"} and pairs["!"] == {"": None, "=": "COMPARE"}
    assert "-" not in pairs  # --> is three characters: -- is a prefix of it, not a token
    assert "%" not in pairs  # ignored text (a comment) begins with it
    assert set(pairs) == set("*^=!<>")
    # the grammar's own: what the regex would read there, for every pair
    scanner = re.compile("|".join(f"(?P<{name}>{regex})" for name, regex in TABLES["terminals"]))
    for first, row in TABLES["pairs"].items():
        for code in range(128):
            match = scanner.match(first + chr(code))
            kind = row.get(chr(code), row[""]) if match and match.end() == 2 else row[""]
            assert (match.lastgroup if match else None) == kind, (first, chr(code))
