"""``gradcli check``: formula checks from TOML files, with JUnit XML and GitHub annotations."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from gradcli.cli.base import cli
from gradcli.cli.cluster import checks_on, cluster_address, cluster_option
from gradcli.cli.files import write_atomically
from gradcli.cli.show import say_shadowed, show_report, with_progress
from gradcli.errors import GradcliError, UsageError, visible

if TYPE_CHECKING:
    from gradcli.runs.cluster import ClusterAddress

CHECK_HELP = """Run the checks in TOML check FILEs (- reads one from stdin): values, gradients,
derivative identities and the finite-difference check of every gradient, at points and over
sweeps (vectorised).

\b
Examples:
  gradcli check examples/checks.toml
  gradcli check checks/*.toml --junit report.xml -k sigmoid
  gradcli check examples/checks.toml --json --fail-fast
  gradcli check checks/*.toml --cluster tcp://10.0.0.5:8786   # on a Dask cluster

\b
Under GitHub Actions (GITHUB_ACTIONS=true) each failure is also printed as an
::error file=...,line=...:: annotation.
Exit status: 0 all passed; 1 a check failed; 2 a bad check file or usage; 3 numeric error.
"""


@cli.command("check", help=CHECK_HELP)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), metavar="PATH",
              help="Also write a JUnit XML report to PATH.")
@click.option("--fail-fast", is_flag=True, help="Stop after the first check that does not pass.")
@click.option("-k", "pattern", metavar="PATTERN",
              help="Run only checks whose name contains PATTERN (or matches it as a glob).")
@cluster_option
@click.pass_context
def check_command(ctx: click.Context, cluster: str | None, **options: Any) -> None:
    try:
        address = cluster_address(ctx, cluster)
    except UsageError as error:
        ctx.exit(show_report([], [error], options["as_json"]))
    ctx.exit(run_check_command(**options, cluster=address))


def run_check_command(files: tuple[str, ...], as_json: bool, junit_path: str | None,
                      fail_fast: bool, pattern: str | None,
                      cluster: ClusterAddress | None = None) -> int:
    """Everything ``gradcli check`` does; returns the exit status. Nothing runs if a file is
    bad, ``-k`` selects nothing, ``--junit`` is empty or the checks are too large; a JUnit
    report that cannot be written is said after the results (status at least 2)."""
    from gradcli.formulas.files import load_check_files
    from gradcli.formulas.reports import github_annotations, junit_xml
    from gradcli.formulas.run import no_match_error, run_budget_error, run_checks, select

    if junit_path == "":
        empty = UsageError("--junit was given an empty path",
                           hint="give --junit the file to write, e.g. report.xml")
        return show_report([], [empty], as_json)
    specs, errors = load_check_files(files)
    selected = select(specs, pattern)
    for spec in selected:  # at = {e = 2}: the constant is a variable of that check
        say_shadowed(spec.program, where=f"{spec.file}:{spec.line_of('expr')}: check "
                                         f"{spec.name!r}")
    if not errors and not selected and pattern is not None:
        return show_report([], [no_match_error(pattern, specs)], as_json)
    too_large = None if errors else run_budget_error(selected)
    if too_large is not None:
        return show_report([], [too_large], as_json)
    try:
        runs = run_checks(selected, fail_fast) if errors or cluster is None else checks_on(
            cluster, selected, fail_fast)
        outcomes = [] if errors else list(with_progress(runs, len(selected), "checking",
                                                        quiet=as_json))
    except GradcliError as error:  # the cluster: unreachable, or lost
        return show_report([], [error], as_json)
    late: list[UsageError] = []
    if junit_path is not None:
        try:
            write_atomically(junit_path, junit_xml(outcomes, errors).encode("utf-8"))
        except OSError as error:
            late.append(UsageError(f"cannot write the JUnit report {visible(junit_path)}: "
                                   f"{error.strerror or error}",
                                   hint="give --junit a path in a writable directory"))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github_annotations(outcomes, errors):
            click.echo(line, err=as_json)
    return show_report(outcomes, errors, as_json, late)
