"""How a command reads its arguments: an option given twice, ``--NAME VALUE`` bindings, an
EXPR that starts with ``-``, ``-f FILE``, ``--set NAME=VALUE`` and ``--values FILE`` together.

``--values FILE`` gives many values at once, from a shared point file: the file's values come
first and ``--NAME VALUE`` options override them one by one. A name in the file that the
program does not use is the same usage error as an unused ``--NAME`` (a typo in a point file is
as silent as one on the command line), unless ``--allow-unused`` says the file is shared by
programs that use different names."""

from __future__ import annotations

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
    from gradcli.language.values_file import FileValue

class GradcliCommand(click.Command):
    """Every gradcli command: an option that takes a value, given twice, is a usage error.

    click keeps the last one, so ``--wrt x --wrt y`` would differentiate by y alone and
    ``--values a.json --values b.json`` would read only b.json; gradcli never drops what a
    person typed. Flags (``--json --json``) and repeatable options (``--set``) are fine."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            _, _, order = self.make_parser(ctx).parse_args(args=list(args))
            _refuse_repeats(order)
        return super().parse_args(ctx, args)


def _refuse_repeats(order: Iterable[click.Parameter]) -> None:
    """A UsageError for the first single-valued option that ``order`` (click's record of the
    options seen, one entry per time) holds more than once."""
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
    """Lets any ``--NAME VALUE`` bind a variable and lets EXPR start with ``-`` (eval, graph, plot).

    Before click parses, arguments that are not the command's own options are taken out:
    ``--NAME VALUE`` and ``--NAME=VALUE`` become bindings; anything else is the expression, passed
    after ``--`` so that ``-x**2`` is never read as a cluster of short options.
    """

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
        """The program's own variables (``--x --W``) before the options (``cli.completion``)."""
        from gradcli.cli.completion import variable_options

        return [*variable_options(ctx, incomplete), *super().shell_complete(ctx, incomplete)]

    def long_options(self, ctx: click.Context) -> tuple[str, ...]:
        """``--rtol``, ``--json``, ...: what a mistyped ``--rtl 1`` may have meant."""
        return tuple(flag for param in self.get_params(ctx) if isinstance(param, click.Option)
                     for flag in param.opts if flag.startswith("--") and flag != "--help")


def options_of_other_commands(group: object, own: Iterable[str]) -> dict[str, str]:
    """Each long option of gradcli's other commands (those of ``group``) that this one lacks,
    with its commands (``--wrt`` -> ``gradcli diff``): the words of the error for ``gradcli
    eval ... --wrt y``."""
    return {flag: " and ".join(names) for flag, names in option_owners(group).items()
            if flag.startswith("--") and flag not in own}


# The largest --max-nodes (8 GB of program text): a larger number is a usage error, never an
# OverflowError where a size must fit a machine word.
MAX_NODES_OPTION = 10**9


def program_arguments(set_help: str, file_help: str = "Read the program from FILE (- for stdin)."
                      ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """EXPR, --set NAME=VALUE, -f FILE and --values FILE: how a command is given a program."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        command = values_file_options(command)
        command = file_option(file_help)(command)
        command = click.option("--set", "assignments", multiple=True, metavar="NAME=VALUE",
                               help=set_help)(command)
        return click.argument("expr", required=False)(command)

    return decorate


def digits_option(more: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--digits N``, one option for every command that prints numbers for people (its range
    is ``output.values.MAX_DIGITS``: every float reads back from 17 digits); ``more``: what
    else it means in the command."""
    return click.option(
        "--digits", type=click.IntRange(1, 17), metavar="N",
        help="Print numbers with N significant digits (default: every digit, the shortest form "
             f"that reads back as the same float); {more}.")


def full_option(more: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--full``: tables print every element of large arrays (``more``: what else it does in
    the command)."""
    return click.option("--full", is_flag=True,
                        help="Tables print every element of large arrays (default: shape, min, "
                             "max and a few entries)" + (f"; {more}" if more else "") + ".")


def file_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-f FILE``: a path, read by ``ProgramText.read`` (gradcli's errors, its size limit)."""
    return click.option("-f", "--file", "program_file", metavar="FILE", help=help_text,
                        shell_complete=complete_files)


def given_values(ctx: click.Context, assignments: tuple[str, ...]) -> Given:
    """``--NAME VALUE`` bindings and ``--set NAME=VALUE`` together (ranges allowed), with how
    each was written and the command's options, for the errors about them (``cli.given``)."""
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


def _program_on_stdin(ctx: click.Context) -> bool:
    """``-f -``, EXPR ``-``, or (eval's batch) neither EXPR nor -f with stdin not a terminal."""
    expr, path = ctx.params.get("expr"), ctx.params.get("program_file")
    implicit = ctx.info_name == "eval" and expr is None and path is None
    return "-" in (expr, path) or (implicit and not sys.stdin.isatty())


VALUES_FILE_KEY = "gradcli.values_file"  # ctx.meta: the path given to --values, or absent
ALLOW_UNUSED_KEY = "gradcli.allow_unused"


def values_file_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Adds ``--values FILE`` and ``--allow-unused`` to a command that takes ``--NAME VALUE``.

    They are read by ``cli.arguments.given_values`` from ``ctx.meta``, so a command's own signature
    does not change."""
    command = click.option(
        "--allow-unused", is_flag=True, expose_value=False, callback=_remember(ALLOW_UNUSED_KEY),
        help="Names in --values FILE that the program does not use are ignored (a shared "
             "point file), not an error.")(command)
    return click.option(
        "--values", metavar="FILE", expose_value=False, callback=_remember(VALUES_FILE_KEY),
        shell_complete=complete_files,
        help="Read values from FILE: a JSON or TOML object of name -> number or array, or a "
             "NumPy .npz archive of arrays by name (- for stdin); --NAME VALUE overrides them.")(
        command)


def _remember(key: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is not None:
            ctx.meta[key] = value

    return callback


def complete_files(ctx: click.Context, param: click.Parameter,
                    incomplete: str) -> list[click.shell_completion.CompletionItem]:
    """A path: the shell completes it (Tab after -f, --values)."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="file")]


def with_file_values(given: Given, path: str, allow_unused: bool = False) -> Given:
    """``given`` (the command line's values) on top of the values of the file at ``path``."""
    from gradcli.cli.program_text import read_program_file  # the file's size limit and UTF-8 errors
    from gradcli.language.values_file import kind_of, parse_values_text

    file_name = "<stdin>" if path == "-" else path
    if path != "-" and _is_binary(path):
        return _with_archive(given, path, allow_unused)
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
        values[entry.name] = _number(entry, file_name)
        spelled[entry.name] = f"{entry.name} = {_shown(entry.value)} in {entry.where(file_name)}"
    optional = frozenset(values) if allow_unused else frozenset()
    return Given({**values, **given.values}, {**spelled, **given.spelled}, given.options,
                 given.optional | optional)


def _is_binary(path: str) -> bool:
    """An ``.npz`` (or ``.npy``) file, told by its first bytes: never decoded as text. Only a
    regular file is sniffed: a pipe (``--values <(...)``) is read once, as text."""
    import os

    from gradcli.language.data_files import kind_of as binary_kind

    if path.lower().endswith((".npz", ".npy")):
        return True
    return os.path.isfile(path) and binary_kind(path) != "csv"


def _with_archive(given: Given, path: str, allow_unused: bool) -> Given:
    """``--values data.npz``: each array to the variable of its name (``--NAME`` overrides)."""
    from gradcli.language.data_files import read_arrays

    arrays = {name: value for name, value in read_arrays(path).items()
              if name not in given.values}
    if not arrays and not given.values:
        raise UsageError(f"{visible(path)} has no arrays", hint="write them with numpy.savez")
    spelled = {name: f"{name} in {visible(path)}" for name in arrays}
    optional = frozenset(arrays) if allow_unused else frozenset()
    return Given({**arrays, **given.values}, {**spelled, **given.spelled}, given.options,
                 given.optional | optional)


def _number(entry: FileValue, file_name: str) -> Value:
    """A number, or an array (docs/arrays.md) as a NumPy array: a tuple would be a sweep."""
    if entry.is_array:
        import numpy as np

        return np.array(entry.value, dtype=float)
    assert isinstance(entry.value, float)
    return entry.value


def _shown(value: Any) -> str:
    from gradcli.engine.notation import format_number

    return format_number(value) if isinstance(value, float) else "[...]"
