"""``--cluster ADDRESS`` and ``--skip N``: batches, sweeps and check files on a Dask cluster.
The glue between click and ``runs.cluster``/``runs.cluster_runs``, imported only when a cluster
is asked for."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from itertools import islice
from typing import TYPE_CHECKING, Any

import click

from gradcli.errors import GradcliError, UsageError, visible

if TYPE_CHECKING:
    from gradcli.output.batch_lines import TableStyle
    from gradcli.runs.cluster import Cluster, ClusterAddress

# ``--cluster ADDRESS``, also read from ``$GRADCLI_CLUSTER``.
cluster_option = click.option(
    "--cluster", metavar="ADDRESS", envvar="GRADCLI_CLUSTER",
    help="Run on the Dask scheduler at ADDRESS (tcp://HOST:8786, a scheduler .json file, or "
         "local:N for N local worker processes); env GRADCLI_CLUSTER. Needs gradcli[cluster]. "
         "Batches, sweeps and gradcli check.")


def cluster_address(ctx: click.Context, text: str | None,
                    refused: UsageError | None = None) -> ClusterAddress | None:
    """The ``--cluster`` address, checked; None without one. Where a cluster does not apply,
    ``--cluster`` is the ``refused`` error, while ``$GRADCLI_CLUSTER`` (set for a whole
    session) is ignored, as is an empty one; an empty ``--cluster ""`` is refused."""
    if not text or not text.strip():
        if text is not None and ctx.get_parameter_source("cluster") == \
                click.core.ParameterSource.COMMANDLINE:
            raise UsageError("--cluster needs an address",
                             hint="tcp://HOST:8786, a scheduler file (.json), or local:2; "
                                  "leave --cluster out to run here")
        return None
    if refused is not None:
        if ctx.get_parameter_source("cluster") == click.core.ParameterSource.ENVIRONMENT:
            return None
        raise refused
    from gradcli.runs.cluster import parse_address

    return parse_address(text)


ONE_POINT = UsageError("--cluster runs batches and sweeps: one program at one point is "
                       "evaluated here", hint="drop --cluster, or give a batch on stdin "
                                              "(gradcli eval - --json) or a sweep (--x 0:1:100)")
def placement(ctx: click.Context, cluster: str | None, skip: int, *, batch: bool,
              json_lines: bool, sweep: bool) -> ClusterAddress | None:
    """Where ``gradcli eval`` runs (None: here): a cluster takes a batch or a sweep; ``--skip``
    a batch in JSON Lines."""
    refused = None if batch or sweep else ONE_POINT
    address = cluster_address(ctx, cluster, refused)
    if skip and not batch:
        raise UsageError("--skip skips lines of a batch on stdin",
                         hint="give the programs on stdin: gradcli eval - --json --skip N")
    if skip and not json_lines:
        raise UsageError("--skip needs a batch in JSON Lines", hint="add --json")
    return address


def connect(address: ClusterAddress) -> Cluster:
    """The cluster at ``address``; a note on stderr if it has no workers yet."""
    from gradcli.runs.cluster import connect as connect_to

    cluster = connect_to(address)
    if not cluster.workers():
        click.echo(f"gradcli: note: the Dask scheduler at {visible(address.text)} has no "
                   "workers yet; the work waits for them", err=True)
    return cluster


def batch_on(address: ClusterAddress | None, skip: int, lines: Iterable[str],
             show: Callable[..., int], table: TableStyle | None = None) -> int:
    """``show(lines, runs=...)`` (``show_batch``) on the cluster at ``address`` (None: here),
    from input line ``skip + 1``; ``table``: a table batch, whose lines the workers make."""
    written: set[str] | None = None  # the names the skipped lines write: a value they use is
    # used (None: none skipped)
    if skip:
        from gradcli.language.values import NAME

        lines = iter(lines)
        written = set()
        skipped = 0
        for line in islice(lines, skip):
            skipped += 1
            written.update(NAME.findall(line))
        if skipped < skip:  # not "no programs on stdin": there were, before line skip + 1
            raise UsageError(f"--skip {skip} passes the end of the input: stdin has {skipped} "
                             f"line{'' if skipped == 1 else 's'}",
                             hint="--skip N goes on from line N + 1 of the same input")
    if address is None:
        from gradcli.runs.batch import json_runs

        return show(lines, runs=partial(json_runs, first=skip + 1), skipped_names=written)
    try:
        cluster = connect(address)
    except GradcliError as error:  # before any line: with --json, an error record as well
        from gradcli.cli.show import show_error

        return show_error(error, table is None)
    from gradcli.runs.cluster_runs import ClusterRuns

    try:
        return show(lines, runs=lambda lines, values, settings: ClusterRuns(
            cluster, lines, values, settings, first=skip + 1, table=table),
            skipped_names=written)
    finally:
        cluster.close()


def sweep_on(address: ClusterAddress, text: str, max_nodes: int, program: Any,
             values: Mapping[str, Any], options: Mapping[str, Any]) -> Iterator[Any]:
    """The blocks of a sweep evaluated on the cluster, in grid order; the grid is checked and
    the cluster reached before this returns, so that errors come at the call."""
    from gradcli.gradcheck.sweep_stream import sweep_plan
    from gradcli.limits import MAX_CLUSTER_SWEEP_CELLS, MAX_CLUSTER_SWEEP_POINTS
    from gradcli.runs.cluster_runs import cluster_sweep

    plan = sweep_plan(program, values, max_points=MAX_CLUSTER_SWEEP_POINTS,
                      max_cells=MAX_CLUSTER_SWEEP_CELLS)
    cluster = connect(address)
    return _closing_after(cluster_sweep(cluster, text, max_nodes, plan, options), cluster)


def checks_on(address: ClusterAddress, specs: list[Any], fail_fast: bool) -> Iterator[Any]:
    """``run_checks`` on the cluster, with the check files' text (a worker need not see them)."""
    from gradcli.runs.cluster import ClusterError
    from gradcli.runs.cluster_runs import cluster_checks

    texts = {}
    for path in dict.fromkeys(spec.file for spec in specs):
        try:
            with open(path, encoding="utf-8") as stream:
                texts[path] = stream.read()
        except (OSError, UnicodeDecodeError) as error:
            raise ClusterError(f"cannot read {path} again to send it: {error}") from None
    cluster = connect(address)
    return _closing_after(cluster_checks(cluster, specs, texts, fail_fast), cluster)


def _closing_after(items: Iterator[Any], cluster: Cluster) -> Iterator[Any]:
    try:
        yield from items  # closed with this generator (PEP 380): its cluster futures let go
    finally:
        cluster.close()
