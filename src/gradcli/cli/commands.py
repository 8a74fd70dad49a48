"""The group's commands, each module imported only when its command runs (``COMMANDS``).

``gradcli eval`` so loads neither ``diff`` nor ``check``. The group (``cli.base``) is a
``LazyGroup``; ``every_command`` loads them all for the messages that need every command's
options (``gradcli eval ... --wrt y``: an option of ``gradcli diff``).
"""

from __future__ import annotations

import importlib

import click

from gradcli.cli.command_table import COMMANDS


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
