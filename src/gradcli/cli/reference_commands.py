"""What gradcli says about itself: ``gradcli functions`` (the language, from the op table),
``gradcli completion`` (the shell's script) and ``gradcli man`` (the manual page, made from the
click commands that print ``--help``, so it cannot drift from the program)."""

from __future__ import annotations

import click

from gradcli import __version__
from gradcli.cli.base import cli

FUNCTIONS_HELP = """List every operator and function of gradcli's language: its name, how it is
written, what it computes, and whether it has a complex-step form (--check-method complex) and a
NumPy form (sweeps, check files, plots; without one it is evaluated point by point).

\b
Examples:
  gradcli functions
  gradcli functions --json          # a JSON list of objects

\b
Exit status: 0; 4 stdout could not be written.
"""


@cli.command("functions", help=FUNCTIONS_HELP)
@click.option("--json", "as_json", is_flag=True,
              help='Print a JSON list of {"name", "kind", "written", "arity", "summary", '
                   '"complex_step", "vector"}.')
def functions_command(as_json: bool) -> None:
    from gradcli.engine.ops import table_rows

    rows = table_rows()
    if as_json:
        import json

        click.echo(json.dumps(rows, ensure_ascii=False))
    else:
        from gradcli.output.console import make_console
        from gradcli.output.functions import functions_table

        console = make_console()
        console.print(functions_table(rows, plain=not console.is_terminal))


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


MAN_HELP = """Print gradcli's manual page (roff), made from the commands' own help.

\b
  gradcli man | man -l -          # read it now
  gradcli man > ~/.local/share/man/man1/gradcli.1   # then: man gradcli
"""

SUMMARY = "differentiate formulas: values, reverse-mode gradients, finite-difference checks"

_ENVIRONMENT = [
    ("NO_COLOR", "When set and not empty, no colours on a terminal, also in the repl."),
    ("COLUMNS", "The width tables are laid out for (default: the terminal's; 200 in a pipe)."),
    ("XDG_STATE_HOME", "The repl keeps its history in $XDG_STATE_HOME/gradcli/history "
                       "(default ~/.local/state/gradcli/history)."),
    ("GITHUB_ACTIONS", "When true, gradcli check also prints failures as GitHub annotations."),
    ("_GRADCLI_COMPLETE", "Set by the shell completion scripts (gradcli completion SHELL)."),
]
_EXIT_STATUS = [
    ("0", "ok"), ("1", "a finite-difference check failed"),
    ("2", "usage, parse or name error"),
    ("3", "numeric error: domain, overflow, division by zero, an infinite derivative"),
    ("4", "stdout could not be written"), ("130", "interrupted (Ctrl-C)"),
    ("141", "the reader of stdout went away"),
]


@cli.command("man", help=MAN_HELP)
def man_command() -> None:
    click.echo(manual_page(), nl=False)


def manual_page() -> str:
    """The whole page in roff's man macros."""
    root = click.Context(cli, info_name="gradcli")
    lines = [f'.TH GRADCLI 1 "" "gradcli {__version__}" "User Commands"', ".SH NAME",
             rf"gradcli \- {roff(SUMMARY)}", ".SH SYNOPSIS",
             r".B gradcli", r"\fICOMMAND\fR [\fIOPTIONS\fR] [\fIARGS\fR]...", ".br",
             ".B gradcli", "(alone on a terminal: an interactive session, see",
             ".BR repl )", ".SH DESCRIPTION", *help_text(cli.help or ""),
             ".PP", "The language's operators and functions:", ".B gradcli functions",
             ".SH COMMANDS"]
    assert isinstance(cli, click.Group)
    for name in cli.list_commands(root):
        command = cli.get_command(root, name)
        assert command is not None
        if command.hidden:
            continue
        ctx = click.Context(command, info_name=name, parent=root)
        usage = " ".join(command.collect_usage_pieces(ctx))
        lines += [f'.SS "gradcli {name} {roff(usage)}"', *help_text(command.help or "")]
        records = [param.get_help_record(ctx) for param in command.get_params(ctx)
                   if isinstance(param, click.Option)]  # arguments: in the usage and the help
        lines += definitions([record for record in records if record is not None])
    lines += [".SH EXIT STATUS", *definitions(_EXIT_STATUS), ".SH ENVIRONMENT",
              *definitions(_ENVIRONMENT), ".SH FILES", r".TP", r"\fI~/.local/state/gradcli/"
              r"history\fR", "The repl's history (see XDG_STATE_HOME).", ".SH SEE ALSO",
              "Every command's --help; the documentation in the source repository's docs/."]
    return "\n".join(lines) + "\n"


def definitions(pairs: list[tuple[str, str]]) -> list[str]:
    return [line for term, text in pairs
            for line in (".TP", rf"\fB{roff(term)}\fR", roff(text) or ".")]


def help_text(text: str) -> list[str]:
    """click's help as roff: paragraphs are filled, a ``\\b`` paragraph keeps its lines."""
    lines: list[str] = []
    for paragraph in text.strip().split("\n\n"):
        raw = paragraph.split("\n")
        if raw and raw[0].strip() == "\b":
            lines += [".PP", ".nf", *(roff(line) for line in raw[1:]), ".fi"]
        else:
            lines += [".PP", roff(" ".join(line.strip() for line in raw))]
    return lines


def roff(text: str) -> str:
    r"""Text that roff prints as written: ``\`` as ``\e``, ``-`` as ``\-`` (a real minus, which
    man pages use in options), no line starting with a control character."""
    text = text.replace("\\", r"\e").replace("-", r"\-")
    return r"\&" + text if text[:1] in (".", "'") else text
