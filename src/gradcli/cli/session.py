"""The interactive session behind ``gradcli repl``: definitions that persist (a name defined
again replaces its definition), expressions that print what ``gradcli eval`` prints, and
``:commands``. An expression is evaluated as the last line of a program of the definitions it
needs, each after those it uses, so ``u = x*W`` may come before ``x = 2``. No terminal is read
here: ``cli.terminal`` or a stream (``cli.repl``) feeds the entries, which end at a newline
outside brackets (``open_brackets``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from click import echo

from gradcli.errors import ExitStatus, GradcliError, GradcliNameError, UsageError, visible

if TYPE_CHECKING:
    from gradcli.engine.graph import Program

# `name = ...` but not `name == ...` (a comparison).
_DEFINITION = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)(.*)", re.DOTALL)
_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?!\s*\()")  # a name, not a function call
# `f(a, b) = ...`: a function of the session (issue 15); its calls are uses of it.
_FUNCTION = re.compile(r"\s*([A-Za-z_]\w*)\s*\(([^()]*)\)\s*=(?!=)(.*)", re.DOTALL)
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(")
_COMMENT = re.compile(r"#[^\r\n]*")

COMMANDS = {  # name -> what it does (the order of :help)
    ":diff": ":diff [x,y]     derivatives of the last expression as expressions",
    ":hessian": ":hessian        the last expression with its Hessian, checked",
    ":graph": ":graph          the last expression's graph as a tree",
    ":json": ":json           the last expression's result as a JSON record",
    ":vars": ":vars           the definitions of this session",
    ":del": ":del NAME       forget a definition",
    ":reset": ":reset          forget every definition",
    ":help": ":help           this list",
    ":quit": ":quit           leave (Ctrl-D too)",
}
# The commands that take nothing after them, and what to type instead: `:reset x` must not
# forget every definition when x alone was meant.
_NO_ARGUMENT = {
    ":reset": ":reset forgets every definition; :del NAME forgets one",
    ":vars": ":vars lists every definition",
    ":help": ":help lists the commands",
    ":quit": "type :quit alone to leave",
}
ALIASES = {":q": ":quit", ":exit": ":quit", ":h": ":help", ":?": ":help"}

HELP = """Type definitions and expressions:
  W = 3                a variable with a value (an input of the expressions that use it)
  u = x*W              a named node (x without a value stays free: results are expressions)
  f(a, b) = a*b + 1    a function of your own, written out where it is called
  (u + b - t)**2       value, every node's gradient, and the finite-difference check
An open ( continues on the next line; Ctrl-C cancels the line; Ctrl-D leaves.
Commands:
""" + "\n".join(f"  {line}" for line in COMMANDS.values())


@dataclass
class Session:
    """The definitions typed so far and the last expression; ``run`` takes one entry."""

    definitions: dict[str, str] = field(default_factory=dict)  # name -> its expression text
    parameters: dict[str, str] = field(default_factory=dict)  # a function's name -> "a, b"
    last: str | None = None  # the last expression evaluated (what :diff, :graph... are about)
    quit: bool = False
    digits: int | None = None  # --digits: significant digits of tables and trees (None: all)
    full: bool = False  # --full: tables print every element of large arrays

    def run(self, entry: str) -> int:
        """One entry (a command, or definitions and at most one expression, split by ``;`` or
        newlines), printed; returns its status."""
        from gradcli.cli.show import show_error

        text = entry.strip()
        if not text:
            return ExitStatus.OK
        try:
            if text.startswith(":"):
                return self.command(text)
            return self.program(text)
        except GradcliError as error:
            return show_error(error, False)
        except Exception as error:  # a bug of gradcli's must not end the session and its work
            import click

            click.echo(f"gradcli: internal error (a bug in gradcli, please report it with the "
                       f"entry): {type(error).__name__}: {error}; the session goes on", err=True)
            return ExitStatus.CHECK_FAILED  # as Python's own status for an uncaught error

    # --- definitions and expressions -------------------------------------------------------

    def program(self, text: str) -> int:
        """The entry's definitions and expression, all or nothing: a part refused forgets the
        definitions before it in the same entry (``a = b2; b2 = a`` keeps neither)."""
        kept = dict(self.definitions), dict(self.parameters)
        try:
            return self._program(text)
        except GradcliError:
            self.definitions, self.parameters = kept
            raise

    def _program(self, text: str) -> int:
        code = _COMMENT.sub("", text)  # the same lines, and columns up to a comment
        items = [(start + len(piece) - len(piece.lstrip()), piece.strip())
                 for start, piece in _items(code) if piece.strip()]
        status: int = ExitStatus.OK
        for number, (at, item) in enumerate(items, start=1):
            try:
                status = self._item(item, number == len(items))
            except GradcliError as error:
                _place(error, item, text, code.count("\n", 0, at) + 1,
                       at - (code.rfind("\n", 0, at) + 1))
                raise
        return status

    def _item(self, item: str, last: bool) -> int:
        """One part of an entry: a definition, or (the last part) an expression."""
        match = _DEFINITION.fullmatch(item)
        function = _FUNCTION.fullmatch(item)
        if function is not None:
            self.define_function(function.group(1), function.group(2).strip(),
                                 function.group(3).strip())
        elif match is not None:
            self.define(match.group(1), match.group(2).strip(), item)
        elif not last:
            raise UsageError(f"{item!r} is an expression before the end of the entry",
                             hint="only the last part of an entry can be an expression")
        else:
            return self.evaluate(item)
        return ExitStatus.OK

    def define(self, name: str, expression: str, typed: str | None = None) -> None:
        """Keep ``name = expression`` (``typed``: as typed) if the session's program still
        parses with it."""
        from gradcli.language.parser import parse

        if not expression:
            raise UsageError(f"{name} = needs an expression", hint=f"e.g. {name} = 2")
        _refuse_name(name, expression, self.parameters)
        statement = typed or f"{name} = {expression}"
        if open_brackets(statement) > 0:  # the end of what was typed, not of the line after
            parse(statement)
        try:
            parse(f"{statement}\n{name}")  # its own errors, at line 1 of what was typed
        except GradcliNameError:  # unless it calls the session's own functions: u = h(x)
            if not _names(expression, self.parameters) & self.parameters.keys():
                raise
        trial = Session({**self.definitions, name: expression}, self.parameters)
        parse(trial.source(name))
        self.definitions = trial.definitions
        self.parameters.pop(name, None)

    def define_function(self, name: str, parameters: str, expression: str) -> None:
        """Keep ``name(parameters) = expression`` if the session's program parses with it."""
        from gradcli.language.parser import parse

        if not expression:
            raise UsageError(f"{name}({parameters}) = needs an expression",
                             hint=f"e.g. {name}({parameters}) = 2*{parameters or 1}")
        trial = Session({**self.definitions, name: expression},
                        {**self.parameters, name: parameters})
        arguments = ", ".join("0" for part in parameters.split(",") if part.strip())
        parse(trial.source(f"{name}({arguments})"))
        self.definitions, self.parameters = trial.definitions, trial.parameters

    def statement(self, name: str) -> str:
        """``name = ...`` or, for a function, ``name(a, b) = ...``."""
        text = self.definitions[name]
        head = f"{name}({self.parameters[name]})" if name in self.parameters else name
        return f"{head} = {text}"

    def evaluate(self, expression: str, order: int = 1) -> int:
        from gradcli.cli.show import say_shadowed, show_result
        from gradcli.gradcheck.evaluation import HESSIAN_NEEDS_VALUES, EvalSettings, evaluate

        try:
            program = self.parsed(expression)
            try:
                result = evaluate(program, {}, EvalSettings(order=order, strict=False))
            except GradcliError as error:  # a note's place is in the program put together
                self._own_lines(error, expression)
                raise
        except GradcliError as error:
            if error.hint and error.hint.startswith("it is defined as "):  # not on that line
                error.hint = error.hint.partition(" on line ")[0] + " (:vars lists them)"
            if error.message.startswith(HESSIAN_NEEDS_VALUES):  # a session has no --y VALUE
                error.hint = ("define them first, as y = 2; :diff x,y gives derivatives as "
                              "expressions")
            elif isinstance(error, GradcliNameError) and error.valueless:  # nor --exp VALUE
                name = error.valueless
                error.hint = f"to use {name} as a variable, define it first ({name} = ...)"
            raise
        self.last = expression
        say_shadowed(result.program, where="this entry")
        free = getattr(result, "free", None) or ["y"]
        return show_result(result, expression, False, self.digits, self.full,
                           free_hint=f"define them, as {free[0]} = 2, for numbers")

    def parsed(self, expression: str) -> Program:
        """The program of ``expression`` and the definitions it needs; an error in the
        expression itself points into the expression."""
        from gradcli.language.parser import parse

        if not set(_CALL.findall(expression)) & self.parameters.keys():
            parse(expression)  # errors at its lines as typed (alone, it knows no f(...))
        try:
            return parse(self.source(expression))
        except GradcliError as error:
            self._own_lines(error, expression)
            raise

    def _own_lines(self, error: GradcliError, expression: str) -> None:
        """``error``, placed in the program put together (the definitions ``expression``
        needs, then its own lines), placed in ``expression`` where it is in its lines."""
        first = self.source(expression).count("\n") - expression.count("\n") + 1
        if error.line is not None and error.line >= first:
            error.line -= first - 1

    def source(self, expression: str) -> str:
        """The definitions ``expression`` needs, each after those it uses, then the expression."""
        ordered = _definition_order(expression, self.definitions, self.parameters)
        return "".join(f"{self.statement(name)}\n" for name in ordered) + expression

    # --- :commands ------------------------------------------------------------------------

    def command(self, text: str) -> int:
        name, _, argument = text.partition(" ")
        name = ALIASES.get(name, name)
        # an action that only prints returns None: its status is OK
        action: Callable[[str], int | None] | None = getattr(self, f"_{name[1:]}", None)
        if name not in COMMANDS or action is None:
            from gradcli.cli.given import closest_option

            near = closest_option(name[1:], [f"--{c[1:]}" for c in COMMANDS])
            raise UsageError(f"no such command {name}",
                             hint=(f"did you mean :{near[0][2:]}? " if near else "")
                             + ":help lists the commands")
        if argument.strip() and name in _NO_ARGUMENT:
            raise UsageError(f"{name} takes no argument ({visible(argument.strip())} would be "
                             "ignored)", hint=_NO_ARGUMENT[name])
        status = action(argument.strip())
        return ExitStatus.OK if status is None else status

    def _help(self, argument: str) -> None:
        echo(HELP)

    def _quit(self, argument: str) -> None:
        self.quit = True

    def _vars(self, argument: str) -> None:
        if not self.definitions:
            echo("no definitions yet (W = 3 defines one)")
        for name in _definition_order(" ".join(f"{n}()" if n in self.parameters else n
                                               for n in self.definitions),
                                      self.definitions, self.parameters):
            echo(self.statement(name))

    def _reset(self, argument: str) -> None:
        self.definitions, self.parameters, self.last = {}, {}, None
        echo("forgot every definition")

    def _del(self, argument: str) -> None:
        if not argument:
            raise UsageError(":del needs the NAME of a definition to forget",
                             hint=":vars lists the definitions; :reset forgets them all")
        if argument not in self.definitions:
            raise UsageError(f"{argument} is not defined",
                             hint=":vars lists the definitions; :del NAME forgets one")
        users = [name for name, text in self.definitions.items()
                 if argument in _names(text, self.parameters) and name != argument]
        if users:
            raise UsageError(f"{', '.join(users)} {'uses' if len(users) == 1 else 'use'} "
                             f"{argument}", hint="forget or redefine them first")
        del self.definitions[argument]
        self.parameters.pop(argument, None)

    def _hessian(self, argument: str) -> int:
        return self.evaluate(self._last(argument), order=2)

    def _json(self, argument: str) -> int:
        """The record ``gradcli eval --json`` writes, an error's too (log(-1): its error
        record, as eval's)."""
        from gradcli.cli.show import show_error, show_result
        from gradcli.gradcheck.evaluation import EvalSettings, evaluate

        expression = self._last(argument)
        try:
            result = evaluate(self.parsed(expression), {}, EvalSettings(strict=False))
        except GradcliError as error:
            return show_error(error, True, expression)
        return show_result(result, self.source(expression), True)

    def _graph(self, argument: str) -> int:
        from gradcli.cli.show import print_tree
        from gradcli.limits import MAX_DRAWN_NODES
        from gradcli.output.pictures import prepare

        picture = prepare(self.parsed(self._last(argument)), {}, self.digits)
        print_tree(picture, MAX_DRAWN_NODES)
        return picture.status  # a failed check is the session's status 1, as gradcli graph's

    def _diff(self, argument: str) -> int:
        """Derivatives as expressions in the session's names, by ``gradcli diff``'s own path:
        its values stay symbols (the table printed the numbers)."""
        from gradcli.cli.diff_command import DiffRequest, show_diff, wrt_names
        from gradcli.cli.given import Given
        from gradcli.cli.program_text import ProgramText
        from gradcli.symbolic.diff import DiffAsk

        names = wrt_names(argument, ":diff") if argument.strip() else None
        expression = self._last("")
        program = self.parsed(expression)
        return show_diff(DiffRequest(ProgramText(self.source(expression)), DiffAsk(names),
                                     as_json=False, given=Given(), session=True), program)

    def _last(self, argument: str) -> str:
        """``:graph EXPR`` is about EXPR; ``:graph`` about the last expression."""
        if argument:
            return argument
        if self.last is None:
            raise UsageError("no expression yet", hint="type one first, e.g. x**2 + W")
        return self.last


def _items(text: str) -> list[tuple[int, str]]:
    """The entry split at ``;`` and line ends outside parentheses and brackets (inside them a
    line end only continues the expression), each part with its start in ``text``."""
    items, depth, start = [], 0, 0
    for position, char in enumerate(text):
        depth += (char in "([") - (char in ")]")
        if char in ";\n" and depth <= 0:
            items.append((start, text[start:position]))
            start = position + 1
    return [*items, (start, text[start:])]


def _place(error: GradcliError, item: str, entry: str, line: int, column: int) -> None:
    """An error placed in ``item`` (by its line and column there) placed in the ``entry`` as
    typed, where ``item`` starts at ``line`` and ``column`` (0-based): where the caret goes.
    An error placed elsewhere (in an earlier definition) stays as it is."""
    lines = item.split("\n")
    if error.line is None or not 1 <= error.line <= len(lines) or (
            error.source_line is not None and error.source_line != lines[error.line - 1]):
        return
    if error.line == 1 and error.column is not None:
        error.column += column
        error.marks = tuple(mark + column for mark in error.marks)
    error.line += line - 1
    error.source_line = entry.split("\n")[error.line - 1]


def _refuse_name(name: str, expression: str, functions: Collection[str]) -> None:
    """A definition the session could not keep as meant: a name defined by its own old value
    (``u = u*2``: a definition replaces the old one, it does not update it). A function's name
    is a variable's too (``beta = 0.9``, docs/language.md): not refused."""
    if name in _names(expression, functions):
        raise UsageError(f"{name} = {expression} defines {name} by itself: a definition "
                         "replaces the old one, it does not update it",
                         hint=f"give the new value a name of its own, e.g. {name}2 = "
                              f"{expression}")


def _names(text: str, functions: Collection[str]) -> set[str]:
    """The names ``text`` uses: variables, and the session's ``functions`` it calls. A call of
    any other name is a built-in function's, not a use of a variable so named: after ``sin =
    3``, ``sin(x)`` is the sine, not a program that calls sin and also has a variable sin."""
    code = _COMMENT.sub("", text)
    return set(_NAME.findall(code)) | (set(_CALL.findall(code)) & set(functions))


def _definition_order(expression: str, definitions: dict[str, str],
                      parameters: dict[str, str]) -> list[str]:
    """The definitions ``expression`` needs, each after the ones it uses (depth first, with a
    stack); a UsageError for a circle. A function's ``parameters`` are not uses."""
    order: list[str] = []
    state: dict[str, int] = {}  # 1: being visited, 2: done
    position = {name: number for number, name in enumerate(definitions)}
    functions = parameters.keys()
    own = {name: {p.strip() for p in text.split(",")} for name, text in parameters.items()}

    def uses(name: str) -> Iterator[str]:
        used = _names(definitions[name], functions) - own.get(name, set())
        return iter(sorted(used & position.keys(), key=position.get))

    for root in sorted(_names(expression, functions) & position.keys(), key=position.get):
        if root in state:
            continue
        state[root] = 1
        stack = [(root, uses(root))]
        while stack:
            name, pending = stack[-1]
            following = next(pending, None)
            if following is None:
                stack.pop()
                state[name] = 2
                order.append(name)
            elif state.get(following) == 1:
                if following == name:
                    raise UsageError(f"{name} is defined by itself", hint="the definition is "
                                     "not kept: gradcli has no recursion; define it without "
                                     f"{name}")
                raise UsageError(f"{name} and {following} are defined in terms of each other",
                                 hint="the definition is not kept: define one of them "
                                      "without the other")
            elif following not in state:
                state[following] = 1
                stack.append((following, uses(following)))
    return order


def open_brackets(text: str) -> int:
    """How many ``(`` and ``[`` are not closed yet (comments ignored): the entry goes on. By
    ``str.count``, not a loop per character: the terminal asks at every key of a paste."""
    if "#" in text:
        text = _COMMENT.sub("", text)
    return text.count("(") + text.count("[") - text.count(")") - text.count("]")


class GrowingEntry:
    """``open_brackets`` of an entry that grows at its end (typing, a paste): whole lines are
    counted once, so a key costs a count of the last line, not of the whole entry."""

    def __init__(self) -> None:
        self.counted = ""  # whole lines, up to and with their last newline
        self.depth = 0

    def open_brackets(self, text: str) -> int:
        if not text.startswith(self.counted):
            self.counted, self.depth = "", 0
        cut = text.rfind("\n") + 1
        if cut > len(self.counted):
            self.depth += open_brackets(text[len(self.counted):cut])
            self.counted = text[:cut]
        return self.depth + open_brackets(text[cut:])
