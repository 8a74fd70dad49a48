"""The plain ``gradcli eval EXPR --NAME VALUE ... [--json] [--no-check]``, and the plain batch
``gradcli eval - --json [--no-nodes] [--no-check] --NAME VALUE ...``, read without click (a fifth
of a run that a shell loop or CI step makes thousands of times, a third of a small batch's).
Anything else -- another option, ``-f``, a table batch, a sweep, a name given twice, a cluster
(``$GRADCLI_CLUSTER``), any usage error -- is left to click, whose reading makes the same
request (tests/test_startup.py)."""

from __future__ import annotations

import os

from gradcli.cli.bindings import flags_of_other_commands, split_arguments
from gradcli.cli.command_table import EVAL_OPTIONS
from gradcli.cli.eval_run import EvalRequest, refuse_closed_stdin, run_eval
from gradcli.cli.given import Given
from gradcli.cli.program_text import ProgramText
from gradcli.cli.show import show_error
from gradcli.errors import GradcliError, UsageError
from gradcli.gradcheck.evaluation import EvalSettings
from gradcli.gradcheck.tolerances import BATCH_NODE_CHECK_LIMIT

# eval's long options as click's ``BindingCommand.long_options`` has them (naming a near miss)
LONG_OPTIONS = tuple(flag for flag in EVAL_OPTIONS if flag.startswith("--") and flag != "--help")

PLAIN_OPTIONS = frozenset(("--json", "--no-check"))
BATCH_OPTIONS = PLAIN_OPTIONS | {"--no-nodes"}  # a batch's, with --json


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
    batch = positional == ["-"]
    if (len(positional) != 1 or len(set(options)) != len(options)
            or not (BATCH_OPTIONS if batch else PLAIN_OPTIONS).issuperset(options)
            or (batch and ("--json" not in options or os.environ.get("GRADCLI_CLUSTER")))):
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
    check = "--no-check" not in options
    if expr == "-":  # a batch: a program per line of stdin
        try:
            refuse_closed_stdin()
        except GradcliError as error:
            return show_error(error, as_json, "")
        settings = EvalSettings(strict=False, check=check, nodes="--no-nodes" not in options,
                                node_check_limit=BATCH_NODE_CHECK_LIMIT)
        return run_eval(EvalRequest(None, given, settings, "json"))
    try:
        program = ProgramText.read("eval", expr, None)
    except GradcliError as error:
        return show_error(error, as_json, expr)
    settings = EvalSettings(strict=False, check=check)
    return run_eval(EvalRequest(program, given, settings, "json" if as_json else "table"))


def _options_elsewhere() -> dict[str, str]:
    """The other commands' options, for the words of an error about one of them."""
    from gradcli.cli.arguments import options_of_other_commands
    from gradcli.cli.base import cli

    return options_of_other_commands(cli, LONG_OPTIONS)
