"""Which commands gradcli has: the module of each, imported only when the command runs.

``gradcli eval`` so loads neither ``diff`` nor ``check``. The group (``cli.base``) is a
``LazyGroup``; ``every_command`` loads them all for the messages that need every command's
options (``gradcli eval ... --wrt y``: an option of ``gradcli diff``).
"""

from __future__ import annotations

import importlib

import click

# Each command: the module that defines it (and registers it with ``cli``), imported only when
# the command runs, so that ``gradcli eval`` does not load ``gradcli diff``; and its long flags
# (options without a value), with which a binding command tells another command's flag
# (``gradcli eval ... --defaults``) from a variable without loading the others.
# tests/test_startup.py checks both against the commands themselves.
COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "check": ("gradcli.cli.check_command", ("--fail-fast", "--json")),
    "completion": ("gradcli.cli.reference_commands", ()),
    "diff": ("gradcli.cli.diff_command", ("--allow-unused", "--defaults", "--json",
                                          "--no-check")),
    "eval": ("gradcli.cli.eval_command", ("--allow-unused", "--check-nodes", "--csv", "--full",
                                          "--hessian", "--json", "--no-check", "--no-nodes",
                                          "--strict")),
    "functions": ("gradcli.cli.reference_commands", ("--json",)),
    "graph": ("gradcli.cli.picture_commands", ("--allow-unused",)),
    "man": ("gradcli.cli.reference_commands", ()),
    "plot": ("gradcli.cli.picture_commands", ("--allow-unused",)),
    "repl": ("gradcli.cli.repl", ("--full",)),
}


def every_command(group: object) -> dict[str, click.Command]:
    """All of ``group``'s commands, loaded (gradcli's group loads a command when it runs; the
    messages about another command's options need them all)."""
    if isinstance(group, LazyGroup):
        for name in COMMANDS:
            group.get_command(None, name)
    return getattr(group, "commands", {})


def option_owners(group: object) -> dict[str, list[str]]:
    """Each option of ``group``'s commands and the commands that have it (``--wrt``:
    ``["gradcli diff"]``): the words of the errors about an option of the wrong command."""
    owners: dict[str, list[str]] = {}
    for name, command in every_command(group).items():
        for param in command.params:
            for flag in param.opts if isinstance(param, click.Option) else ():
                owners.setdefault(flag, []).append(f"gradcli {name}")
    return owners


class LazyGroup(click.Group):
    """A group whose commands are the modules of ``COMMANDS``, each imported when asked for."""

    def get_command(self, ctx: click.Context | None, cmd_name: str) -> click.Command | None:
        """The command, its module imported the first time (importing registers it)."""
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(COMMANDS[cmd_name][0])
        return self.commands.get(cmd_name)

    def list_commands(self, ctx: click.Context | None) -> list[str]:
        return sorted(COMMANDS)
