"""What the seed example imports at start-up (issue 31): every module on the path is on a list.

``gradcli eval "(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8`` (and with ``--json``) runs in a fresh
process under ``-X importtime``; every module it imports must be imported by its dependencies
anyway (the baseline: ``import click`` and orjson, or click and Rich's console and table for
the table) or be on the allow-list below. A new import on the path fails here, so that adding
one is a decision: lazy-import it where it is used, or add it to the list and say why.
"""

from __future__ import annotations

import os
import subprocess
import sys

import click
import pytest

from gradcli.cli.commands import COMMANDS, every_command

SEED = ["eval", "(x*W+b-t)**2", "--x", "2", "--W", "3", "--b", "1", "--t", "8"]
# The finite-difference check: loaded only when it runs
CHECK = {"gradcli.gradcheck.check", "gradcli.gradcheck.steps", "gradcli.engine.replay"}

# gradcli's own modules on the path of one scalar eval: the command, the parser and its
# tables, the graph and its ops, the evaluation and its finite-difference check.
GRADCLI = {
    "gradcli", "gradcli.errors", "gradcli.limits",
    "gradcli.cli", "gradcli.cli.base", "gradcli.cli.streams",
    "gradcli.cli.commands", "gradcli.cli.arguments", "gradcli.cli.program_text",
    "gradcli.cli.given", "gradcli.cli.usage",
    "gradcli.cli.eval_command", "gradcli.cli.show",
    "gradcli.cli.cluster",  # --cluster and --skip: the options only, Dask is not imported
    "gradcli.language", "gradcli.language.values", "gradcli.language.parser",
    "gradcli.language.lalr", "gradcli.language._lalr_tables",
    "gradcli.language.grammar",  # the tables' digest is checked against the grammar's text
    "gradcli.language.functions",
    # the parser by concern: the builder's reductions, and the friendly errors they raise
    "gradcli.language.building", "gradcli.language.syntax_errors",
    "gradcli.engine", "gradcli.engine.ops", "gradcli.engine.core_ops", "gradcli.engine.forms",
    "gradcli.engine.special", "gradcli.engine.graph", "gradcli.engine.node",
    "gradcli.engine.special_slopes",  # the float functions of the dbeta and dlbeta rows
    "gradcli.engine.notation",
    "gradcli.engine.replay",
    # the op table, one package: its row class and its sections, array rows too (one registry
    # for the parser's names); building them imports no NumPy
    "gradcli.engine.ops.row", "gradcli.engine.ops.xp", "gradcli.engine.ops.elementary",
    "gradcli.engine.ops.special_functions", "gradcli.engine.ops.logic",
    "gradcli.engine.ops.linear_algebra",
    "gradcli.engine.core__mypyc",  # the compiled core's one extension, where it is compiled
    "gradcli.gradcheck", "gradcli.gradcheck.evaluation", "gradcli.gradcheck.tolerances",
    "gradcli.output",
    *CHECK,
}
# Standard modules gradcli adds to what its dependencies import.
STANDARD = {
    "signal",  # the Ctrl-C guard of start-up (cli/__init__.py)
    "gc",  # the exit skips the last collection (cli/base.py)
    "cmath",  # the ops' complex-step forms
    "zlib",  # the grammar's digest, checked against the shipped tables (language/lalr.py)
    "locale", "_locale",  # click's gettext, for its --help option's text
}
ALLOWED = {
    # The table: the view of one result, in its pieces by concern (the same code views.py
    # held whole): the console, tables that fit, numbers as text, the per-node tables, verdicts.
    "table": GRADCLI | STANDARD | {
        "gradcli.output.views", "gradcli.output.console", "gradcli.output.tables",
        "gradcli.output.values", "gradcli.output.nodes", "gradcli.output.verdicts"},
    "json": GRADCLI | STANDARD | {"gradcli.output.records"},
}
BASELINE = {
    "table": "import click, rich.console, rich.table",
    "json": "import click, orjson",
}


# At exit, the modules loaded: ``-X importtime`` does not list those that ``importlib``
# imports (the commands, loaded by name), only those of ``import`` statements.
_AT_EXIT = ("import atexit, sys; atexit.register(lambda: print('loaded:', *sorted(sys.modules), "
            "file=sys.stderr))\n")


def _imported(code: str, args: list[str]) -> list[str]:
    """The modules a fresh process imports, as ``-X importtime`` lists them (in order), then
    the others it has loaded at exit."""
    environment = {**os.environ, "COLUMNS": "120"}
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", _AT_EXIT + code, *args],
                          capture_output=True, text=True, env=environment, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stderr.splitlines()
    rows = [line.removeprefix("import time:").split("|") for line in lines
            if line.startswith("import time:") and line.count("|") == 2]
    timed = [name.strip() for own, _, name in rows if own.strip().isdigit()]
    loaded = next(line.split()[1:] for line in lines if line.startswith("loaded: "))
    return timed + sorted(set(loaded) - set(timed))


@pytest.mark.parametrize("output", ["table", "json"])
def test_the_seed_example_imports_only_what_it_uses(output):
    flags = ["--json"] if output == "json" else []
    run = "import sys; from gradcli.cli import main; sys.argv[0] = 'gradcli'; main()"
    modules = _imported(run, [*SEED, *flags])
    assert "gradcli.gradcheck.evaluation" in modules  # it ran
    baseline = set(_imported(BASELINE[output], []))
    unexpected = [name for name in modules if name not in baseline | ALLOWED[output]
                  and not (output == "table" and name.startswith("rich."))]  # Rich's own, to draw
    assert not unexpected, (
        f"the seed example ({output}) now imports {unexpected}: import it where it is used, "
        "or add it to ALLOWED in tests/test_startup.py with the reason")


@pytest.mark.parametrize("output", [[], ["--json"]], ids=["table", "json"])
def test_the_check_loads_only_when_it_runs(output):
    run = "import sys; from gradcli.cli import main; sys.argv[0] = 'gradcli'; main()"
    assert set(_imported(run, [*SEED, *output])) >= CHECK
    assert not CHECK & set(_imported(run, [*SEED, *output, "--no-check"]))


def test_other_commands_load_only_when_they_run():
    run = "import sys; from gradcli.cli import main; sys.argv[0] = 'gradcli'; main()"
    modules = _imported(run, [*SEED, "--json"])
    for name, (module, _) in COMMANDS.items():
        assert (module in modules) == (name == "eval"), module


def test_the_command_list_matches_the_commands():
    """``COMMANDS`` names each command's module and its long flags: the other commands' flags
    are read from it, so that eval need not load them to tell a flag from a variable."""
    from gradcli.cli import cli

    commands = every_command(cli)
    assert set(commands) == set(COMMANDS)
    for name, command in commands.items():
        module, flags = COMMANDS[name]
        assert command.callback is not None and command.callback.__module__ == module, name
        assert set(flags) == {flag for param in command.params
                              if isinstance(param, click.Option) and param.is_flag
                              for flag in param.opts if flag.startswith("--")}, name
