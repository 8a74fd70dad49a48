"""Friendly errors of the parser: every mistake gets a message that says what to write instead.

The language is ASCII and stays so: a minus sign U+2212, a superscript digit or a no-break space
is refused with the exact ASCII to write, since accepting it would make pasted text mean what its
author may not have checked. A name differing from a constant or function only by case (``PI``)
stays a variable of its own, listed in ``Program.notes``.
"""

from __future__ import annotations

import re

from gradcli.engine.graph import Node
from gradcli.engine.ops import CALLS, CONSTANTS, FUNCTIONS, table_rows
from gradcli.errors import ParseError
from gradcli.language.functions import Head
from gradcli.language.lalr import Token, UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from gradcli.language.values import NAME

_OPERAND_START = {"NUMBER", "NAME"}
_PROGRAM_END = {"_SEP", "$END"}
_NOT_CLOSED = "a '(' is not closed"

# Names that differ from a constant or a function only by case: lower case -> (name, what).
LOOKALIKES = {**{name.lower(): (name, "function") for name in FUNCTIONS},
               **{name.lower(): (name, "constant") for name in CONSTANTS}}


def number_output_error(source: str, number: int) -> ParseError:
    """Output ``number`` of ``f, g`` is a plain number: ``1,5`` meant 1.5, or a slip. The error
    is at the comma next to it: a decimal comma's hint, or what a comma does."""
    commas = _top_level_commas(source)
    position = commas[max(number - 1, 0)]
    line = source.count("\n", 0, position) + 1
    start = source.rfind("\n", 0, position) + 1
    text = source.split("\n")[line - 1]
    hint = _decimal_comma(source[start:position].rstrip(), source[position + 1:]) or (
        "a ',' separates a function's arguments, as in max(x, y), or the program's outputs, "
        "as in f, g; a number is not an output")
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


def written_outputs(source: str, count: int) -> list[str | None]:
    """The name each of the ``count`` outputs of ``f, g`` is written as (None: an expression),
    read from the text: ``f = x; g = x; f, g`` has the outputs f and g, though both are the
    node x, which would label them x and x #0."""
    every = _top_level_commas(source)
    commas = every[len(every) - count + 1:]
    if count < 2 or len(commas) != count - 1:
        return [None] * count
    start = max(source.rfind(";", 0, commas[0]), source.rfind("\n", 0, commas[0])) + 1
    names: list[str | None] = []
    for begin, end in zip([start, *(c + 1 for c in commas)], [*commas, len(source)],
                          strict=True):
        piece = source[begin:end].split("#", 1)[0].strip()
        while piece.startswith("(") and piece.endswith(")"):
            piece = piece[1:-1].strip()
        names.append(piece if NAME.fullmatch(piece) else None)
    return names


def syntax_error(source: str, error: UnexpectedInput, named: dict[str, Node]) -> ParseError:
    """The ParseError for the driver's error (``UnexpectedCharacters`` or ``UnexpectedToken``,
    always at a line and column of ``source``)."""
    lines = source.split("\n")
    line, column = error.line, error.column
    text = lines[line - 1]
    token = None
    if isinstance(error, UnexpectedCharacters):
        what = f"unexpected character {source[error.pos_in_stream]!r}"
        expected = error.allowed
        hint = _character_hint(source, error.pos_in_stream)
    else:
        assert isinstance(error, UnexpectedToken)
        token, expected, hint = error.token, error.expected, None
        if token.type == "$END":
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
    offset = sum(len(row) + 1 for row in lines[:line - 1]) + column - 1
    depth, innermost = _open_parentheses(source, offset)
    message = f"{what}; expected {_describe_expected(expected, depth)}"
    if hint is None:
        hint = _syntax_hint(text, column, depth, expected, token)
    if hint is None and not depth and _open_square(source, offset):
        message += " or ']'"  # [1, 2 at the end: an array's bracket, not a parenthesis
        hint = "a '[' is not closed"
    if innermost and innermost[0] < line and (hint is None or hint == _NOT_CLOSED):
        open_line, open_column = innermost
        hint = (f"the '(' at line {open_line}, column {open_column} is not closed (inside "
                "parentheses a formula goes on over line breaks)")
    return ParseError(message, line=line, column=column, hint=hint, source_line=text)


def _last_statement(error: UnexpectedToken, expected: set[str],
                    named: dict[str, Node]) -> str | None:
    """The name the program's last statement assigns, when the program ends right after it."""
    values = error.values
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


def _open_parentheses(source: str, end: int, pair: str = "()"
                      ) -> tuple[int, tuple[int, int] | None]:
    """How many of ``pair``'s opening bracket ('(' or '[') are still open at ``end`` (comments
    skipped), and the (line, column) of the innermost one; string methods scan, as a program
    may be megabytes."""
    code = source[:end]
    if "#" in code:  # blank comments out, keeping every position
        code = re.sub(r"#[^\n]*", lambda comment: " " * len(comment.group()), code)
    if code.count(pair[0]) == code.count(pair[1]):
        return 0, None
    opened: list[int] = []
    for paren in re.finditer(f"[{re.escape(pair)}]", code):
        if paren.group() == pair[0]:
            opened.append(paren.start())
        elif opened:
            opened.pop()
    if not opened:
        return 0, None
    pos = opened[-1]
    return len(opened), (code.count("\n", 0, pos) + 1, pos - code.rfind("\n", 0, pos))


def _open_square(source: str, end: int) -> bool:
    """Whether a '[' is still open where the program ends, at ``end``."""
    if re.sub(r"#[^\n]*", "", source[end:]).strip():  # more of the program follows
        return False
    return _open_parentheses(source, end, "[]")[0] > 0


def _describe_token(token: Token) -> str:
    if token.type in _OPERAND_START:  # number 2, name x
        return f"{token.type.lower()} {token!s}"
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
        return (_decimal_comma(before, after[1:])
                or "a ',' only separates a function's arguments, as in max(x, y)")
    if expected and expected <= _PROGRAM_END:
        return ("only the program's last part is an expression to evaluate: make the one "
                "before a statement (name = ...) or remove it")
    if token is not None and token.type == "_SEP" and str(token) == "\n" and depth == 0:
        return ("the line ends the statement: to go on on the next line, end this one with "
                "'\\' or put the formula in ( )")
    if before and (before[-1].isalnum() or before[-1] in "_)]") and after[:1].isalnum():
        left = before.split()[-1].split("(")[-1]  # before ends in a word or a bracket
        right = _take_word(after)
        if left in FUNCTIONS:
            return f"did you mean {left}({right})? a function's argument goes in parentheses"
        return f"did you mean {left}*{right}? gradcli needs * between factors"
    if re.search(r"\bif\b", text) and not re.search(r"\belse\b", text):
        return "a conditional is written a if c else b, with its else"
    if token is not None and token.type == "COMPARE":
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
    return _WORD.match(text).group()  # always matches (maybe empty)


_WORD = re.compile(r"[\w.]*")


def _decimal_comma(before: str, after: str) -> str | None:
    """``did you mean 1.5?`` for ``1,5``: a whole number (not the end of a name such as x1)
    right before the comma, ASCII digits right after it."""
    whole = before[len(before.rstrip("0123456789.")):]
    digits = after[:len(after) - len(after.lstrip("0123456789"))]
    start = len(before) - len(whole)
    if (not whole or "." in whole or not digits
            or (start and (before[start - 1].isalpha() or before[start - 1] == "_"))):
        return None
    return f"did you mean {whole}.{digits}? gradcli writes decimals with a point"


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

    char = source[pos]
    if char.isascii() and char.isprintable() and char != "\\":
        return None
    described = f"U+{ord(char):04X} {unicodedata.name(char, '')}".rstrip()
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
        return None  # a second one (the parser drops a leading byte-order mark)
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
    letter = re.search(r"GREEK (SMALL|CAPITAL) LETTER (\S+)$", described)  # not "ALPHA WITH ..."
    if letter is None:
        return None
    word = "lambda" if letter[2] == "LAMDA" else letter[2]  # Unicode spells it LAMDA
    return word.lower() if letter[1] == "SMALL" else word.capitalize()


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
    "cot": ("cot(x)", "1/tan(x)"),
    "csch": ("csch(x)", "1/sinh(x)"), "coth": ("coth(x)", "1/tanh(x)"),
    # C's fmod keeps the sign of x; mod (NumPy's remainder, Python's %) that of y
    "fmod": ("fmod(x, y)", "x - y*trunc(x/y) (the sign of x; mod(x, y) takes the sign of y)"),
}


def function_hint(name: str) -> str:
    """How to write a call of a function gradcli does not have under that name."""
    listed = "gradcli functions lists them all"
    meant = _SPELLED_OTHERWISE.get(name)
    if meant is not None:
        return f"did you mean {meant}? gradcli's name for {name} is {meant}"
    if name in _FORMULAS:
        call, formula = _FORMULAS[name]
        return f"gradcli has no {name}; write {formula} for {call}"
    lower = LOOKALIKES.get(name.lower())
    if lower is not None and lower[1] == "function":
        return f"did you mean {lower[0]}? names are case-sensitive"
    for row in table_rows():  # an operator that ``gradcli functions`` lists by name (add, matmul)
        if row["name"] == name and "function" not in row["kind"]:
            return f"{name} is an operator: write {' or '.join(row['written'])}"
    import difflib  # only for this message

    close = difflib.get_close_matches(name, list(CALLS), n=1)
    if close:
        return f"did you mean {close[0]}? {listed}"
    return f"{listed}; for a product write {name}*(...)"


def language_signature(name: str) -> str:
    """How the language's function ``name`` is called: ``beta(a, b)``, ``mean(x)``, and both
    forms of ``max``: ``max(x, y) or max(x)``."""
    return " or ".join(f"{name}({', '.join(op.operands)})" for op in CALLS.get(name, ()))
