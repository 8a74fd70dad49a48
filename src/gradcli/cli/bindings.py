"""How ``--NAME VALUE`` bindings are told from a command's options and from EXPR, before any
option parser sees the arguments: click's (``cli.arguments.BindingCommand``) and the plain
eval's (``cli.plain_eval``) alike."""

from __future__ import annotations

import re
from collections.abc import Collection

from gradcli.cli.command_table import COMMANDS
from gradcli.cli.given import closest_option
from gradcli.errors import UsageError, visible
from gradcli.language.values import NAME

# What an option looks like; anything else after `--` (`---x`, `--(x)`) is an expression.
_OPTION_LIKE = re.compile(r"--[A-Za-z][-A-Za-z0-9_]*")


def flags_of_other_commands(own: Collection[str]) -> set[str]:
    """The other commands' flags (``--json``...) that ``own`` lacks: a mistaken option (click
    says so), not a variable waiting for a value; read from ``COMMANDS``, no command loaded."""
    return {flag for _, flags in COMMANDS.values() for flag in flags if flag not in own}


def split_arguments(
    args: list[str], takes_value: dict[str, bool], foreign_flags: Collection[str] = frozenset()
) -> tuple[list[str], list[tuple[str, str]], list[str]]:
    """``args`` in three parts: the command's options (and what looks like an option, for click
    to report), ``(NAME=VALUE, as written)`` bindings in the order given, and the rest (EXPR)."""
    options: list[str] = []
    bindings: list[tuple[str, str]] = []
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        flag, has_value, value = arg.partition("=")
        if arg == "--":
            positional += args[i + 1 :]
            break
        if flag in takes_value:
            options.append(arg)
            if takes_value[flag] and not has_value:
                if i + 1 >= len(args) or _is_option(args[i + 1], takes_value, foreign_flags):
                    raise UsageError(f"{flag} needs a value", hint=f"write {flag} VALUE")
                options.append(args[i + 1])
                i += 1
        elif flag in foreign_flags and not has_value:
            options.append(arg)  # click reports it as an option this command does not have
        elif arg.startswith("--") and NAME.fullmatch(flag[2:]):
            written = arg
            if not has_value:
                following = args[i + 1] if i + 1 < len(args) else None
                if following is None or _is_option(following, takes_value, foreign_flags):
                    raise _needs_a_value(flag, takes_value)
                value = following
                written = f"{flag} {value.strip()}"
                i += 1
            bindings.append((f"{flag[2:]}={value}", written))
        elif arg.startswith("--") and _OPTION_LIKE.fullmatch(flag):
            options.append(arg)  # click reports it as an unknown option
        else:
            positional.append(arg)
        i += 1
    return options, bindings, positional


def _is_option(arg: str, takes_value: Collection[str], foreign_flags: Collection[str]) -> bool:
    """``--b``, ``--json``, ``-f``: an option, not the value of the ``--W`` before it."""
    flag = arg.partition("=")[0]
    return flag in takes_value or flag in foreign_flags or bool(_OPTION_LIKE.fullmatch(flag))


def _needs_a_value(flag: str, options: Collection[str]) -> UsageError:
    """``--W`` with no value after it: a variable without its value, or a misspelt option."""
    meant = closest_option(flag[2:], [o for o in options if o.startswith("--") and o != "--help"])
    if meant is not None:
        return UsageError(f"no such option {visible(flag)}", hint=f"did you mean {meant[0]}?")
    return UsageError(f"{visible(flag)} needs a value",
                      hint=f"write {visible(flag)} VALUE, e.g. {visible(flag)} 2")
