"""``gradcli functions``: every operator and function of the language, from the op table."""

from __future__ import annotations

import click

from gradcli.cli.base import cli
from gradcli.errors import ExitStatus

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
@click.pass_context
def functions_command(ctx: click.Context, as_json: bool) -> None:
    from gradcli.output.functions import listing_rows

    rows = listing_rows()
    if as_json:
        import json

        click.echo(json.dumps(rows, ensure_ascii=False))
    else:
        from gradcli.output.console import make_console
        from gradcli.output.functions import functions_table

        console = make_console()
        console.print(functions_table(rows, plain=not console.is_terminal))
    ctx.exit(ExitStatus.OK)
