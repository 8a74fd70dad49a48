"""``gradcli completion bash|zsh|fish``: prints the shell's completion script (click's
machinery); what Tab then offers beyond click's own is in ``cli.completion``."""

from __future__ import annotations

import click

from gradcli.cli.base import cli

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_GRADCLI_COMPLETE"
# The line for each shell's start-up file (documented in --help and docs/interactive.md).
START_UP = {
    "bash": ('~/.bashrc', 'eval "$(gradcli completion bash)"'),
    "zsh": ("~/.zshrc", 'eval "$(gradcli completion zsh)"'),
    "fish": ("~/.config/fish/config.fish", "gradcli completion fish | source"),
}

COMPLETION_HELP = """Print the shell completion script for SHELL (bash, zsh or fish).

\b
Add one line to your shell's start-up file:
""" + "\n".join(f"  {line:<42} # {shell}: {path}" for shell, (path, line) in START_UP.items()) + """

\b
Tab then completes commands and options, and offers a formula's own variables first:
  gradcli eval "(x*W+b-t)**2" --<Tab>      --x --W --b --t, then the options
  gradcli diff "x*y + z" --wrt <Tab>       x y z
"""


@cli.command("completion", help=COMPLETION_HELP)
@click.argument("shell", type=click.Choice(SHELLS))
def completion_command(shell: str) -> None:
    from click.shell_completion import get_completion_class

    completion_class = get_completion_class(shell)
    assert completion_class is not None  # click knows all three
    click.echo(completion_class(cli, {}, "gradcli", COMPLETE_VAR).source())

