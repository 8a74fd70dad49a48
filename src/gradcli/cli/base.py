"""The command group and click's entry point (the exit statuses: ``cli.exits``)."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from gradcli import __version__
from gradcli.cli.arguments import GradcliCommand
from gradcli.cli.command_table import COMMANDS
from gradcli.cli.exits import ReaderGoneError, UserInterruptError, run_to_exit
from gradcli.cli.usage import shown
from gradcli.engine import stale_core_modules
from gradcli.errors import GradcliError

ARGS_KEY = "gradcli.args"


class _Group(click.Group):
    """The group: each command's module (``COMMANDS``) is imported when the command is asked
    for, so that ``gradcli eval`` loads neither ``diff`` nor ``check``."""

    command_class = GradcliCommand

    def get_command(self, ctx: click.Context | None, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(COMMANDS[cmd_name][0])  # importing registers it
        return self.commands.get(cmd_name)

    def list_commands(self, ctx: click.Context | None) -> list[str]:
        return sorted(COMMANDS)

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        """gradcli's own options (``--help``, ``--version``): usage errors in gradcli's style,
        and a reader that went away is 141, not click's 1."""
        given = list(args)
        if not args and sys.stdin.isatty() and sys.stdout.isatty():
            args = ["repl"]  # `gradcli` alone on a terminal: a session (in a pipe: the help)
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError:
            raise ReaderGoneError from None
        except _NO_ARGS:
            raise  # `gradcli` alone: the help, on stderr, status 2
        except click.ClickException as error:
            raise shown(error, given, self) from None
        ctx.meta[ARGS_KEY] = given
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        """A command's BrokenPipeError and KeyboardInterrupt go past click (its 1 would say "check
        failed") to main(): 141 and 130; usage errors are shown in gradcli's style."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise ReaderGoneError from None
        except KeyboardInterrupt:
            raise UserInterruptError from None
        except (click.ClickException, GradcliError) as error:
            raise shown(error, ctx.meta.get(ARGS_KEY, []), self) from None


def _print_version(context: click.Context, _: click.Parameter, asked: bool) -> None:
    """gradcli's version, and whether its symbolic core is compiled: a machine with no C
    compiler installs it as Python, silently."""
    if not asked or context.resilient_parsing:
        return
    from gradcli.engine import core_is_compiled

    core = ("compiled" if core_is_compiled()
            else "Python; GRADCLI_COMPILE=1 pip install compiles it, with a C compiler, and "
                 "gradcli diff runs 1.7x faster")
    if stale_core_modules():
        core += ", older than its source: pip install -e . again"
    click.echo(f"gradcli, version {__version__} (symbolic core: {core})")
    context.exit()


_NO_ARGS = getattr(click.exceptions, "NoArgsIsHelpError", ())


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-V", "--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and exit.")
def cli() -> None:
    """Differentiate formulas: every node's value and gradient, checked by finite differences.

    \b
    Start with:   gradcli eval "(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8
    More:         gradcli eval --help
    Functions:    gradcli functions   (every operator and function of the language)
    Interactive:  gradcli repl        (or gradcli alone, on a terminal)
    In CI:        gradcli check examples/checks.toml   (gradcli check --help)
    Manual:       gradcli man | man -l -
    """

def main(argv: list[str] | None = None) -> None:
    """Entry point of every command line the plain eval does not take."""
    run_to_exit(lambda: _run_click(argv), argv)


def _run_click(argv: list[str] | None) -> int:
    """click's run of the command line; its errors shown in gradcli's style."""
    try:
        return cli.main(args=argv, prog_name="gradcli", standalone_mode=False) or 0
    except click.exceptions.Abort:
        raise UserInterruptError from None
    except click.ClickException as error:
        error.show()  # gradcli's style (cli.usage); `gradcli` alone: click's help
        return error.exit_code
