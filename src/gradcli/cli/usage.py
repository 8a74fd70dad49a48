"""click's own usage errors in gradcli's style (``error: usage error: no such option
--hesian``, ``hint: did you mean --hessian?``, status 2; with ``--json`` a JSON error record),
never click's ``Usage: ... Error: ...``: every command has one error style."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import IO, Any

import click

from gradcli.cli.command_table import COMMANDS
from gradcli.errors import GradcliError, UsageError, visible


def every_command(group: object) -> dict[str, click.Command]:
    """All of ``group``'s commands, loaded, in the command table's order (the messages about
    another command's options name them in an order that does not depend on what ran before)."""
    if not isinstance(group, click.Group):
        return getattr(group, "commands", {})
    ctx = click.Context(group)
    loaded = {name: group.get_command(ctx, name) for name in COMMANDS}
    return {name: command for name, command in loaded.items() if command is not None}


def option_owners(group: object) -> dict[str, list[str]]:
    """Each option of ``group``'s commands and the commands that have it (``--wrt``:
    ``["gradcli diff"]``)."""
    owners: dict[str, list[str]] = {}
    for name, command in every_command(group).items():
        for param in command.params:
            for flag in param.opts if isinstance(param, click.Option) else ():
                owners.setdefault(flag, []).append(f"gradcli {name}")
    return owners


class ShownError(click.ClickException):
    """A usage error on its way out, shown in gradcli's style by click's ``show()`` call."""

    def __init__(self, error: GradcliError, as_json: bool = False, command: str = "") -> None:
        super().__init__(error.message)
        self.error = error
        self.as_json = as_json
        self.command = command
        self.exit_code = int(error.status)

    def show(self, file: IO[Any] | None = None) -> None:
        from gradcli.cli.show import show_error, show_report

        if self.as_json and self.command == "check":
            show_report([], [self.error], True)
        else:
            show_error(self.error, self.as_json)


def shown(error: Exception, args: Sequence[str], group: click.Group) -> ShownError:
    """``error`` as gradcli shows it; ``args`` (after ``gradcli``) say which command ran and
    whether ``--json`` was asked for."""
    if isinstance(error, ShownError):
        return error
    name = _command_name(args)
    command = group.get_command(None, name) if name else None
    as_json = command is not None and "--json" in _options(args) and any(
        "--json" in param.opts for param in command.params if isinstance(param, click.Option))
    usage = error if isinstance(error, GradcliError) else from_click(error, args, group)
    return ShownError(usage, as_json, name or "")


def from_click(error: Exception, args: Sequence[str], group: click.Group) -> UsageError:
    """click's exception as a gradcli UsageError: message and hint."""
    ctx = getattr(error, "ctx", None)
    see = f"see {_command_path(ctx)} --help"
    if isinstance(error, click.NoSuchOption):
        owners = option_owners(group).get(error.option_name, []) if ctx is not None and (
            ctx.command is group) else []
        if owners:  # `gradcli --json eval ...`: a command's option before the command
            typed = f"gradcli {_command_name(args)}"
            where = typed if typed in owners else " or ".join(owners)
            return UsageError(f"no such option {visible(error.option_name)} before the command",
                              hint=f"{error.option_name} is an option of {where}: put it after "
                                   f"the command ({where.split(' or ')[0]} ... "
                                   f"{error.option_name})")
        close = error.possibilities or []
        return UsageError(f"no such option {visible(error.option_name)}",
                          hint=f"did you mean {close[0]}?" if close else see)
    if isinstance(error, click.BadOptionUsage):
        name = visible(error.option_name)
        if "requires an argument" in error.message:
            return UsageError(f"{name} needs a value", hint=f"write {name} VALUE; {see}")
        if "does not take a value" in error.message:
            return UsageError(f"{name} does not take a value", hint=f"write {name} alone")
        return UsageError(_sentence(error.message), hint=see)
    if isinstance(error, click.MissingParameter):
        param = error.param
        what = "argument" if isinstance(param, click.Argument) else "option"
        named = _param_name(param) if param is not None else ""
        choices = _choices(param) if param is not None else ""
        return UsageError(f"missing {what} {named}".rstrip(),
                          hint=f"give one of {choices}; {see}" if choices else see)
    if isinstance(error, click.BadParameter):
        named = _param_name(error.param) if error.param is not None else (error.param_hint or "")
        return UsageError(f"invalid value for {named}: {_sentence(error.message)}",
                          hint=_choice_hint(error) or see)
    if isinstance(error, click.FileError):
        return UsageError(f"cannot read {visible(error.ui_filename)}: "
                          f"{_sentence(error.message)}", hint=see)
    if isinstance(error, click.UsageError):
        if error.message.startswith("No such command"):
            return _no_such_command(args, group)
        extra = re.fullmatch(r"Got unexpected extra arguments? \((.*)\)", error.message, re.S)
        if extra is not None and ctx is not None and re.fullmatch(r"-[A-Za-z]", extra.group(1)):
            return UsageError(f"no such option {extra.group(1)}",
                              hint=f"the short options of {_command_path(ctx)}: "
                                   f"{_short_options(ctx.command)}; see {_command_path(ctx)} "
                                   "--help")
        if extra is not None:
            return UsageError(f"unexpected extra arguments: {visible(extra.group(1))}",
                              hint=_extra_hint(ctx) or see)
    message = error.format_message() if isinstance(error, click.ClickException) else str(error)
    return UsageError(_sentence(message), hint=see)


def _short_options(command: click.Command) -> str:
    """``-f, -h``: the one-letter options of ``command``."""
    flags = [flag for param in command.params if isinstance(param, click.Option)
             for flag in param.opts if re.fullmatch(r"-[A-Za-z]", flag)]
    return ", ".join([*flags, "-h"])


def _sentence(message: str) -> str:
    """click's ``Invalid value.`` as gradcli writes messages: lower case, no full stop."""
    message = message.strip().rstrip(".")
    if message[:1].isupper() and not message[1:2].isupper():
        message = message[:1].lower() + message[1:]
    return visible(message)


def _param_name(param: click.Parameter) -> str:
    """``--rtol`` for an option (its long name), ``FILES`` for an argument."""
    if isinstance(param, click.Option):
        long = [opt for opt in param.opts if opt.startswith("--")]
        return (long or param.opts)[0]
    return param.human_readable_name


def _choice_hint(error: click.BadParameter) -> str | None:
    """``did you mean 'central'?`` for ``--check-method centrl``."""
    param = error.param
    if param is None or not isinstance(param.type, click.Choice):
        return None
    import difflib  # only for this message

    given = re.match(r"'(.*?)' is not", error.message)
    choices = [str(choice) for choice in param.type.choices]
    close = difflib.get_close_matches(given.group(1), choices, n=1) if given else []
    return f"did you mean {close[0]}?" if close else f"choose one of: {', '.join(choices)}"


def _command_path(ctx: click.Context | None) -> str:
    """``gradcli eval``, whatever name the program was run by."""
    if ctx is None:
        return "gradcli"
    return " ".join(["gradcli", *ctx.command_path.split()[1:]])


def _extra_hint(ctx: click.Context | None) -> str | None:
    """What the command takes: no arguments, EXPR in quotes, or its one argument."""
    if ctx is None:
        return None
    arguments = [p for p in ctx.command.params if isinstance(p, click.Argument)]
    if not arguments:
        return f"{_command_path(ctx)} takes no arguments"
    if arguments[0].name != "expr":
        taken = arguments[0]
        choices = _choices(taken)
        one = f"one of {choices}" if choices else f"one {taken.human_readable_name}"
        return f"{_command_path(ctx)} takes {one}"
    return f'give EXPR as one argument, in quotes: {_command_path(ctx)} "x + y" --x 1 --y 2'


def _choices(param: click.Parameter) -> str:
    """``bash, zsh or fish`` for a parameter with choices ("" for any other)."""
    if not isinstance(param.type, click.Choice):
        return ""
    names = [str(choice) for choice in param.type.choices]
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else "".join(names)


def _no_such_command(args: Sequence[str], group: click.Group) -> UsageError:
    """``gradcli "x*2" --x 2``: an expression where the command goes; ``gradcli evl``: a typo."""
    import difflib  # only for this message

    name = _command_name(args) or ""
    at = list(args).index(name) if name in args else 0
    names = group.list_commands(None)
    commands = ", ".join(names)
    close = difflib.get_close_matches(name, names, n=1)
    rest = " ".join(_shell_word(arg) for arg in args[at + 1:])
    evaluate = f"gradcli eval {_shell_word(name)} {rest}".rstrip()
    if close:
        hint = f"did you mean {close[0]}? the commands: {commands}"
    elif re.fullmatch(r"[A-Za-z_]\w*", name):  # a word: a command, or a one-name expression
        hint = f"the commands: {commands}; to evaluate an expression: {evaluate}"
    else:
        hint = f"to evaluate an expression: {evaluate}"
    return UsageError(f"no such command {visible(name)}", hint=hint)


def _shell_word(arg: str) -> str:
    """``arg`` as one shell word: as it is when that is safe, else in double quotes."""
    if re.fullmatch(r"[\w@%+=:,./-]+", arg):
        return visible(arg)
    return visible('"' + re.sub(r'([\\"$`])', r"\\\1", arg) + '"')


def _command_name(args: Sequence[str]) -> str | None:
    """The first argument that is not an option (gradcli's own options take no values)."""
    return next((arg for arg in _options(args) if not arg.startswith("-")), None)


def _options(args: Sequence[str]) -> list[str]:
    """The arguments before ``--`` (after it, ``--json`` is an expression's text)."""
    args = list(args)
    return args[:args.index("--")] if "--" in args else args
