"""The plain ``gradcli eval EXPR --NAME VALUE ... [--json] [--no-check]``, read without click
(a fifth of a run that a shell loop or CI step makes thousands of times). Anything else -- another
option, ``-f``, stdin, a sweep, a name given twice, any usage error -- is left to click, whose
reading makes the same request (tests/test_startup.py)."""

from __future__ import annotations

from gradcli.cli.bindings import flags_of_other_commands, split_arguments
from gradcli.cli.command_table import EVAL_OPTIONS
from gradcli.cli.eval_run import EvalRequest, run_eval
from gradcli.cli.given import Given
from gradcli.cli.program_text import ProgramText
from gradcli.cli.show import show_error
from gradcli.errors import GradcliError, UsageError
from gradcli.gradcheck.evaluation import EvalSettings

# eval's long options as click's ``BindingCommand.long_options`` has them (naming a near miss)
LONG_OPTIONS = tuple(flag for flag in EVAL_OPTIONS if flag.startswith("--") and flag != "--help")

PLAIN_OPTIONS = frozenset(("--json", "--no-check"))


def plain_form(args: list[str]) -> tuple[str, Given, list[str]] | None:
    """``(EXPR, the values, the options)`` when ``args`` (after ``gradcli``) are the plain eval,
    else None. Nothing is printed or evaluated (files are read)."""
    if not args or args[0] != "eval":
        return None
    try:
        options, bindings, positional = split_arguments(
            args[1:], EVAL_OPTIONS, flags_of_other_commands(EVAL_OPTIONS))
    except UsageError:
        return None
    if (not PLAIN_OPTIONS.issuperset(options) or len(set(options)) != len(options)
            or len(positional) != 1 or positional[0] == "-"):
        return None
    try:
        given = Given.read(bindings, LONG_OPTIONS, _options_elsewhere, "gradcli eval")
    except (UsageError, ImportError):  # click's reading says it (an array's NumPy found no
        return None  # room to load: cli/exits.py)
    if any(isinstance(value, tuple) for value in given.values.values()):
        return None  # a sweep (2,3 or -2:2:9): click's reading checks its options
    return positional[0], given, options


def run_plain(expr: str, given: Given, options: list[str]) -> int:
    """What the plain eval does; its exit status."""
    as_json = "--json" in options
    try:
        program = ProgramText.read("eval", expr, None)
    except GradcliError as error:
        return show_error(error, as_json, expr)
    settings = EvalSettings(strict=False, check="--no-check" not in options)
    return run_eval(EvalRequest(program, given, settings, "json" if as_json else "table"))


def _options_elsewhere() -> dict[str, str]:
    """The other commands' options, for the words of an error about one of them."""
    from gradcli.cli.arguments import options_of_other_commands
    from gradcli.cli.base import cli

    return options_of_other_commands(cli, LONG_OPTIONS)
