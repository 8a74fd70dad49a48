"""How a command reads its arguments: an option given twice, ``--NAME VALUE`` bindings, an
EXPR that starts with ``-``, ``-f FILE``, ``--set NAME=VALUE`` and ``--values FILE`` together.
``--NAME VALUE`` overrides the file's values; a name in the file that the program does not use
is a usage error, as an unused ``--NAME`` is, unless ``--allow-unused`` (a shared point file)."""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import click

from gradcli.cli.bindings import flags_of_other_commands, split_arguments
from gradcli.cli.given import BINDINGS_KEY, Given
from gradcli.cli.usage import option_owners
from gradcli.errors import UsageError, visible
from gradcli.language.values import Value
from gradcli.limits import MAX_VALUES_FILE_BYTES

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem


class GradcliCommand(click.Command):
    """Every gradcli command: an option that takes a value, given twice, is a usage error
    (click would keep the last one: ``--wrt x --wrt y`` by y alone)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            _, _, order = self.make_parser(ctx).parse_args(args=list(args))
            _refuse_repeats(order)
        return super().parse_args(ctx, args)


def _refuse_repeats(order: Iterable[click.Parameter]) -> None:
    """A UsageError for the first single-valued option that ``order`` (click's record of the
    options seen) holds more than once."""
    seen: set[str] = set()
    for param in order:
        if not isinstance(param, click.Option) or param.multiple or param.is_flag or (
                param.count or param.name is None):
            continue
        if param.name in seen:
            written = "/".join(param.opts)
            form = f": {max(param.opts, key=len)} {param.metavar}" if param.metavar else ""
            raise UsageError(f"{written} is given twice, and only one can count",
                             hint=f"give it once{form}")
        seen.add(param.name)


class BindingCommand(GradcliCommand):
    """Before click parses, ``--NAME VALUE`` and ``--NAME=VALUE`` become bindings; anything else
    that is not an option is the expression, passed after ``--`` (``-x**2`` is no option)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value = {
            flag: not param.is_flag
            for param in self.get_params(ctx)
            if isinstance(param, click.Option)
            for flag in (*param.opts, *param.secondary_opts)
        }
        foreign = flags_of_other_commands(takes_value)
        try:
            options, bindings, positional = split_arguments(args, takes_value, foreign)
        except UsageError:
            if not ctx.resilient_parsing or not args:
                raise
            # Shell completion of `... --W <Tab>`: what comes before the unfinished binding.
            options, bindings, positional = split_arguments(args[:-1], takes_value, foreign)
        ctx.meta[BINDINGS_KEY] = bindings
        return super().parse_args(ctx, options + (["--", *positional] if positional else []))

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        """The program's own variables (``--x --W``) before the options."""
        return [*variable_options(ctx, incomplete), *super().shell_complete(ctx, incomplete)]

    def long_options(self, ctx: click.Context) -> tuple[str, ...]:
        """``--rtol``, ``--json``, ...: what a mistyped ``--rtl 1`` may have meant."""
        return tuple(flag for param in self.get_params(ctx) if isinstance(param, click.Option)
                     for flag in param.opts if flag.startswith("--") and flag != "--help")


def options_of_other_commands(group: object, own: Iterable[str]) -> dict[str, str]:
    """Each long option of ``group``'s other commands that ``own`` lacks, with its commands
    (``--wrt`` -> ``gradcli diff``): the words of the error for ``gradcli eval ... --wrt y``."""
    return {flag: " and ".join(names) for flag, names in option_owners(group).items()
            if flag.startswith("--") and flag not in own}


# The largest --max-nodes (8 GB of program text): no OverflowError where a size is a word.
MAX_NODES_OPTION = 10**9


def program_arguments(set_help: str, file_help: str = "Read the program from FILE (- for stdin)."
                      ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """EXPR, --set NAME=VALUE, -f FILE, --values FILE and --allow-unused: how a command is given
    a program. The last two go to ``ctx.meta`` (``given_values`` reads them), so the commands'
    signatures do not change."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        command = click.option(
            "--allow-unused", is_flag=True, expose_value=False, callback=_remember,
            help="Names in --values FILE that the program does not use are ignored (a shared "
                 "point file), not an error.")(command)
        command = click.option(
            "--values", metavar="FILE", expose_value=False, callback=_remember,
            shell_complete=complete_files,
            help="Read values from FILE: a JSON or TOML object of name -> number or array, or a "
                 "NumPy .npz archive of arrays by name (- for stdin); --NAME VALUE overrides "
                 "them.")(command)
        command = click.option("-f", "--file", "program_file", metavar="FILE", help=file_help,
                               shell_complete=complete_files)(command)
        command = click.option("--set", "assignments", multiple=True, metavar="NAME=VALUE",
                               help=set_help)(command)
        return click.argument("expr", required=False)(command)

    return decorate


def digits_option(more: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--digits N`` for every command that prints numbers for people; ``more``: what else it
    means in the command (17 digits read back as the same float)."""
    return click.option(
        "--digits", type=click.IntRange(1, 17), metavar="N",
        help="Print numbers with N significant digits (default: every digit, the shortest form "
             f"that reads back as the same float); {more}.")


def full_option(more: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--full``; ``more``: what else it does in the command."""
    return click.option("--full", is_flag=True,
                        help="Tables print every element of large arrays (default: shape, min, "
                             "max and a few entries)" + (f"; {more}" if more else "") + ".")


def given_values(ctx: click.Context, assignments: tuple[str, ...]) -> Given:
    """``--NAME VALUE``, ``--set NAME=VALUE`` and ``--values FILE`` together, with how each was
    written and the command's options, for the errors about them (``cli.given``)."""
    written = [*ctx.meta.get(BINDINGS_KEY, []),
               *((text, f"--set {text.strip()}") for text in assignments)]
    command = ctx.command
    options = command.long_options(ctx) if isinstance(command, BindingCommand) else ()
    group = ctx.parent.command if ctx.parent is not None else None
    given = Given.read(written, options, lambda: options_of_other_commands(group, options),
                       f"gradcli {ctx.info_name}")
    path = ctx.meta.get(VALUES_FILE_KEY)
    if path is None and ctx.meta.get(ALLOW_UNUSED_KEY):
        raise UsageError("--allow-unused is about the names of --values FILE, and no --values "
                         "was given",
                         hint="drop --allow-unused (an unused --NAME VALUE is always an error), "
                              "or add --values FILE")
    if path is None:
        return given
    if path == "-" and _program_on_stdin(ctx):
        raise UsageError("--values - and the program both read stdin",
                         hint="give the values as a file (--values point.toml) or the program "
                              "as EXPR")
    return with_file_values(given, path, ctx.meta.get(ALLOW_UNUSED_KEY, False))


def option_given(ctx: click.Context, name: str) -> bool:
    """Whether the option ``name`` was given (on the command line), not left at its default."""
    return ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)


def _program_on_stdin(ctx: click.Context) -> bool:
    """``-f -``, EXPR ``-``, or eval's batch from stdin."""
    expr, path = ctx.params.get("expr"), ctx.params.get("program_file")
    implicit = ctx.info_name == "eval" and expr is None and path is None
    return "-" in (expr, path) or (implicit and not sys.stdin.isatty())


VALUES_FILE_KEY = "gradcli.values"  # ctx.meta: the path given to --values, or absent
ALLOW_UNUSED_KEY = "gradcli.allow_unused"


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """--values and --allow-unused are kept aside (ctx.meta) for ``given_values``, which reads
    them under the keys below, whatever the options' parameter names."""
    if value is not None:
        ctx.meta[{"values": VALUES_FILE_KEY, "allow_unused": ALLOW_UNUSED_KEY}[param.name]] = value


def complete_files(ctx: click.Context, param: click.Parameter,
                   incomplete: str) -> list[CompletionItem]:
    """A path: the shell completes it (Tab after -f, --values)."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="file")]


def with_file_values(given: Given, path: str, allow_unused: bool = False) -> Given:
    """``given`` (the command line's values) on top of the values of the file at ``path``."""
    if path != "-" and _is_binary(path):
        values, spelled = _archive_values(given, path)
    else:
        values, spelled = _text_values(given, path)
    optional = frozenset(values) if allow_unused else frozenset()
    return Given({**values, **given.values}, {**spelled, **given.spelled}, given.options,
                 given.optional | optional)


def _text_values(given: Given, path: str) -> tuple[dict[str, Value], dict[str, str]]:
    """A TOML or JSON file's values that ``given`` does not override, and how each is written;
    an array as a NumPy array (a tuple would be a sweep)."""
    from gradcli.cli.program_text import read_program_file  # the file's size limit and UTF-8 errors
    from gradcli.engine.notation import format_number
    from gradcli.language.values_file import kind_of, parse_values_text

    file_name = "<stdin>" if path == "-" else path
    text = read_program_file(path, node_option=False, limit=MAX_VALUES_FILE_BYTES,
                             what="a values file")
    entries = parse_values_text(text, file_name, kind_of(path))
    if not entries:
        raise UsageError(f"{visible(file_name)} has no values",
                         hint='write name = number lines (TOML) or {"x": 2, ...} (JSON)')
    values: dict[str, Value] = {}
    spelled: dict[str, str] = {}
    for entry in entries:
        if entry.name in given.values:
            continue  # --NAME VALUE overrides the file
        values[entry.name] = entry.value
        shown = "[...]" if entry.is_array else format_number(entry.value)
        spelled[entry.name] = f"{entry.name} = {shown} in {entry.where(file_name)}"
    return values, spelled


def _is_binary(path: str) -> bool:
    """An ``.npz`` (or ``.npy``) file, told by its first bytes: never decoded as text. Only a
    regular file is sniffed: a pipe (``--values <(...)``) is read once, as text."""
    from gradcli.language.values import kind_of as binary_kind

    if path.lower().endswith((".npz", ".npy")):
        return True
    return os.path.isfile(path) and binary_kind(path) != "csv"


def _archive_values(given: Given, path: str) -> tuple[dict[str, Value], dict[str, str]]:
    """``--values data.npz``: each array to the variable of its name (``--NAME`` overrides)."""
    from gradcli.language.values import read_arrays

    arrays = {name: value for name, value in read_arrays(path).items()
              if name not in given.values}
    if not arrays and not given.values:
        raise UsageError(f"{visible(path)} has no arrays", hint="write them with numpy.savez")
    return arrays, {name: f"{name} in {visible(path)}" for name in arrays}


# Shell completion that knows the formula: after ``gradcli eval "(x*W+b-t)**2" --``, Tab
# offers ``--x --W --b --t`` (those without a value) before the options; ``--wrt`` the
# variables.
# A name in a formula that does not parse yet (functions are left out where it is used).
# A name not inside another word or number, or right after a number (2x, a slip for 2*x) but
# not an exponent (1e5, 2.5E-3)
_NAME = r"(?:(?<![\w.])|(?<=\d)(?![eE][+-]?\d))[A-Za-z_]\w*"
_KEYWORDS = frozenset({"if", "else", "and", "or", "not"})


def program_variables(ctx: click.Context) -> list[str]:
    """The variables of the program on the command line (EXPR or ``-f FILE``), in order."""
    text = _program_text(ctx)
    if not text:
        return []
    from gradcli.errors import GradcliError
    from gradcli.language.parser import parse

    try:
        return list(parse(text).variables)
    except GradcliError:  # half-typed: the names written in it, but calls and constants
        from gradcli.engine.ops import CONSTANTS

        names = dict.fromkeys(re.findall(_NAME, re.sub(r"#[^\n]*", "", text)))
        assigned = set(re.findall(r"([A-Za-z_]\w*)\s*=(?!=)", text))
        # a definition's parameters (f(a, b) = ...) and the keywords are not variables either
        for head in re.findall(r"[A-Za-z_]\w*\s*\(([^()]*)\)\s*=(?!=)", text):
            assigned.update(part.strip() for part in head.split(","))
        assigned.update(re.findall(r"([A-Za-z_]\w*)\s*\(", text))  # called: a function
        return [name for name in names if name not in CONSTANTS and name not in assigned
                and name not in _KEYWORDS]


def _program_text(ctx: click.Context) -> str:
    path = ctx.params.get("program_file")
    if path and path != "-":
        return _file_start(path)
    expr = ctx.params.get("expr")
    return expr if isinstance(expr, str) and expr != "-" else ""


def _file_start(path: str) -> str:
    """The first MB of a regular program file, or nothing: Tab never waits on a FIFO or a
    device."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return ""
        return os.read(descriptor, 1 << 20).decode("utf-8", errors="replace")
    except OSError:
        return ""
    finally:
        os.close(descriptor)


def variable_options(ctx: click.Context, incomplete: str) -> list[CompletionItem]:
    """``--x``, ``--W``...: the program's variables without a value, matching ``incomplete``."""
    from click.shell_completion import CompletionItem

    if not incomplete.startswith("-") or incomplete.startswith("---"):
        return []
    given = {text.partition("=")[0] for text, _ in ctx.meta.get(BINDINGS_KEY, [])}
    return [CompletionItem(f"--{name}", help="a variable of the program")
            for name in program_variables(ctx)
            if name not in given and f"--{name}".startswith(incomplete)]


def complete_wrt(ctx: click.Context, param: click.Parameter,
                 incomplete: str) -> list[CompletionItem]:
    """``--wrt``'s values: the program's variables, also after a comma (``x,`` -> ``x,W``)."""
    from click.shell_completion import CompletionItem

    done, _, start = incomplete.rpartition(",")
    listed = set(done.split(",")) if done else set()
    prefix = f"{done}," if done else ""
    return [CompletionItem(prefix + name) for name in program_variables(ctx)
            if name.startswith(start) and name not in listed]
