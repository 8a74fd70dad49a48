"""Sweeps in blocks (issue 13): the same output as all points at once, memory that does not grow
with the number of points, the points x nodes budget, and ranges whose step overflows."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner
from rich.console import Console

import gradcli
from gradcli.cli import cli
from gradcli.gradcheck import sweep_stream
from gradcli.gradcheck.sweep import csv_body, csv_header, csv_rows, evaluate_sweep, point_records
from gradcli.gradcheck.sweep_stream import (
    PointMask,
    SweepSummary,
    stream_sweep,
    sweep_columns,
    sweep_plan,
)
from gradcli.language.values import parse_value
from gradcli.limits import MAX_SWEEP_CELLS
from gradcli.output import sweep_views
from gradcli.output.sweep_views import sweep_view

np = pytest.importorskip("numpy")

# Awkward points in every block: numeric errors (log of x <= 0), kinks, a pole, the edge of
# sqrt's domain (one-sided differences), and a wrong-looking gradient at relu's kink.
CASES = [
    ("log(x)*y + relu(y - 1)", {"x": "-1:2:13", "y": "0:2:5"}),
    ("sqrt(x) + 1/(y - 0.5) + abs(x - y)", {"x": "0:1e-6:3", "y": "-1:2:7", "z": "3"}),
    ("k = 3; sin(k*x)*exp(-y*y) + atan2(y, x)", {"x": "-2:2:9", "y": "-1,0,1"}),
]


def _values(given):
    return {name: parse_value(name, text) for name, text in given.items()}


def _csv(rows) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _render(renderable, width: int = 120) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), no_color=True)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize(("text", "given"), CASES)
@pytest.mark.parametrize(("points", "threads"), [(1, 1), (4, 2), (7, 3), (1000, 2)])
@pytest.mark.parametrize("check", [True, False])
def test_blocks_give_exactly_what_all_points_at_once_give(text, given, points, threads, check,
                                                          monkeypatch):
    monkeypatch.setattr(sweep_views, "MAX_TABLE_ROWS", 5)  # the table shows 5 rows, then "..."
    program = gradcli.parse(text)
    values = _values(given)
    whole = evaluate_sweep(program, sweep_columns(program, values), check=check, reconcile=True)
    blocks = list(stream_sweep(program, values, check=check, points=points, threads=threads))
    assert [b.size for b in blocks[:-1]] == [points] * (len(blocks) - 1)
    assert sum(b.size for b in blocks) == whole.size

    streamed_csv = _csv([csv_header(list(program.variables)),
                         *(row for block in blocks for row in csv_body(block))])
    assert streamed_csv == _csv(csv_rows(whole))
    streamed_json = [json.dumps(r) for block in blocks for r in point_records(block)]
    assert streamed_json == [json.dumps(r) for r in point_records(whole)]

    summary = SweepSummary(keep=5)
    for block in blocks:
        summary.add(block)
    assert summary.size == whole.size and summary.status == whole.status
    assert summary.failures == int(whole.failed.sum())
    assert summary.disagreements == int((~whole.check_ok & ~whole.failed).sum())
    assert summary.failed.sum() == summary.failures
    assert (~summary.check_ok & ~summary.failed).sum() == summary.disagreements
    # the table: its first 5 rows and the summary line, as if the sweep had been held whole
    assert _render(sweep_view(summary)) == _render(sweep_view(_first(whole, 5, summary)))


def _first(sweep, count, summary):
    """``sweep`` as the table sees it: the first ``count`` points, but counted in full."""
    head = sweep_stream._joined([sweep], count)

    class Whole:
        columns, value, gradients, checks = head.columns, head.value, head.gradients, head.checks
        rtol, atol, size = head.rtol, head.atol, sweep.size
        failed, check_ok = sweep.failed, sweep.check_ok
        error_message = head.error_message

    assert summary.head is not None and summary.head.size == min(count, sweep.size)
    return Whole()


def test_the_summary_counts_the_disagreements_past_its_head():
    program = gradcli.parse("x**2 + relu(y)")
    values = _values({"x": "-3:2:6", "y": "-1,0,1"})
    summary = SweepSummary(keep=2)
    for block in stream_sweep(program, values, points=4, threads=1):
        summary.add(block)
    assert summary.disagreements == 6 and summary.status == gradcli.ExitStatus.CHECK_FAILED


def test_a_point_mask_counts_what_it_does_not_hold():
    counts = {"failed": 2, "disagree": 3, "ok": 5}
    failed = PointMask(np.array([True, False]), frozenset({"failed"}), counts)
    ok = PointMask(np.array([False, True]), frozenset({"ok"}), counts)
    assert failed.sum() == 3 and ok.sum() == 6 and (~ok & ~failed).sum() == 3
    assert bool(failed[0]) and not bool(ok[0])
    with pytest.raises(IndexError, match="not among the 2 kept"):
        failed[2]


def test_blocks_are_made_and_evaluated_lazily(monkeypatch):
    program = gradcli.parse("x*y")
    plan = sweep_plan(program, {"x": tuple(float(i) for i in range(3000)),
                                "y": tuple(float(i) for i in range(3000))})
    assert plan.size == 9_000_000
    first = next(plan.blocks(5))  # 9 * 10^6 points planned, 5 made
    assert first["x"].tolist() == [0.0] * 5 and first["y"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    evaluated = []
    original = sweep_stream.vector_sweep

    def counting(*args, **kwargs):
        evaluated.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(sweep_stream, "vector_sweep", counting)
    stream = stream_sweep(program, {"x": tuple(range(100)), "y": (1.0, 2.0)}, points=10,
                          threads=2)
    assert not evaluated  # nothing runs before the first block is asked for
    next(stream)
    assert len(evaluated) <= 3  # the first block and at most one more per thread
    stream.close()


def test_the_grid_order_and_defaults_of_the_blocks():
    program = gradcli.parse("k = 3; k*x + y")
    plan = sweep_plan(program, {"x": (1.0, 2.0), "y": (10.0, 20.0, 30.0), "z": 5.0})
    blocks = list(plan.blocks(4))
    assert [b["x"].tolist() for b in blocks] == [[1, 1, 1, 2], [2, 2]]
    assert [b["y"].tolist() for b in blocks] == [[10, 20, 30, 10], [20, 30]]
    assert [b["k"].tolist() for b in blocks] == [[3] * 4, [3] * 2]


def test_a_sweep_past_the_cell_budget_is_refused_with_its_size():
    program = gradcli.parse(" + ".join(f"sin({k}*x*y)" for k in range(1, 80)))  # 400 nodes
    nodes = len(program.nodes)
    values = {"x": tuple(float(i) for i in range(10_000)),
              "y": tuple(float(i) for i in range(1000))}
    with pytest.raises(gradcli.UsageError) as caught:
        sweep_plan(program, values)
    message = str(caught.value)
    assert f"10,000,000 points of a {nodes:,}-node program" in message
    assert f"{10_000_000 * nodes:,} cells (points x nodes)" in message
    assert f"at most {MAX_SWEEP_CELLS:,}" in message


def test_the_cli_refuses_it_before_writing_anything():
    text = " + ".join(f"sin({k}*x*y)" for k in range(1, 80))
    result = CliRunner().invoke(cli, ["eval", text, "--x", "0:1:10000", "--y", "0:1:1000",
                                      "--csv"])
    assert result.exit_code == 2
    assert result.stdout == "" and "cells (points x nodes)" in result.stderr


def test_cli_csv_and_json_stream_every_block_in_grid_order(monkeypatch):
    monkeypatch.setattr(sweep_stream, "SWEEP_BLOCK_POINTS", 3)  # 35 points: 12 blocks
    args = ["eval", "log(x)*y", "--x", "-1:2:7", "--y", "1:2:5"]
    program = gradcli.parse("log(x)*y")
    whole = evaluate_sweep(program, sweep_columns(program, _values({"x": "-1:2:7", "y": "1:2:5"})),
                           reconcile=True)
    result = CliRunner().invoke(cli, [*args, "--csv"])
    assert result.exit_code == 3
    assert result.stdout == _csv(csv_rows(whole))
    result = CliRunner().invoke(cli, [*args, "--json"])
    lines = result.stdout.splitlines()
    assert [json.loads(line)["point"] for line in lines] == [
        whole.point(i) for i in range(whole.size)]
    table = CliRunner().invoke(cli, args)
    assert table.exit_code == 3 and "35 points" in table.stdout
    assert "numeric error at 15 of 35 points" in table.stdout


# --- START:STOP:COUNT whose step overflows ----------------------------------------------------

def test_a_range_across_the_whole_float_line():
    assert parse_value("x", "1e308:-1e308:3") == (1e308, 0.0, -1e308)
    big = 1.7976931348623157e308
    values = parse_value("x", f"{-big!r}:{big!r}:9")
    assert values[0] == -big and values[-1] == big and values[4] == 0.0
    assert all(math.isfinite(v) for v in values)
    assert all(a < b for a, b in itertools.pairwise(values))
    # ranges whose step does not overflow keep their points (start + i * step) bit for bit
    assert parse_value("x", "0:1:11") == tuple([0.1 * i for i in range(10)] + [1.0])
    assert parse_value("x", "-2:2:9") == (-2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2)


def test_the_cli_sweeps_such_a_range_instead_of_saying_nan():
    result = CliRunner().invoke(cli, ["eval", "x", "--x", "1e308:-1e308:3", "--csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["x,value,d/dx,ok,error", "1e+308,1e+308,1,true,",
                                          "0,0,1,true,", "-1e+308,-1e+308,1,true,"]


# --- memory ---------------------------------------------------------------------------------------

_PEAK = textwrap.dedent("""
    import os, sys
    pid = os.posix_spawn(sys.executable, [sys.executable, "-m", "gradcli", *sys.argv[1:]],
                         os.environ, file_actions=[
                             (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
    _, status, usage = os.wait4(pid, 0)
    print(usage.ru_maxrss, os.waitstatus_to_exitcode(status))
""")


def _peak_rss(*args: str) -> int:
    """Peak RSS in KiB of ``gradcli ARGS`` with stdout to /dev/null (a fresh small launcher,
    so that this process's pages do not count)."""
    out = subprocess.run([sys.executable, "-c", _PEAK, *args], capture_output=True, text=True,
                         check=True, env={**os.environ, "GRADCLI_JOBS": "2"}).stdout.split()
    assert out[1] == "0"
    return int(out[0])


@pytest.mark.slow
@pytest.mark.parametrize("output", ["--csv", "--json", "--no-check"])
def test_memory_does_not_grow_with_the_number_of_points(output):
    formula = ("sin(x)*cos(y) + exp(-x*x/4)*log(1+y*y) + tanh(x*y) - sqrt(1+x*x)*atan(y)"
               " + x/(2+y)")
    small = _peak_rss("eval", formula, "--x", "-3:3:100", "--y", "0:1:1000", output)
    large = _peak_rss("eval", formula, "--x", "-3:3:1000", "--y", "0:1:1000", output)
    assert large < small * 1.3 + 20 * 1024, (small, large)  # 10^5 and 10^6 points


# --- a stream that stops early -----------------------------------------------------------------

_LARGE = ["eval", "sin(x)*exp(-y*y) + atan2(y, x)", "--x", "-3:3:2000", "--y", "0.5:1:1000",
          "--csv"]


def _start_large():
    child = subprocess.Popen([sys.executable, "-m", "gradcli", *_LARGE], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env={**os.environ, "GRADCLI_JOBS": "2"})
    assert child.stdout is not None
    assert child.stdout.readline() == b"x,y,value,d/dx,d/dy,ok,error\n"
    assert child.stdout.readline().startswith(b"-3,0.5,")  # the first block, long before the end
    return child


def test_ctrl_c_in_a_large_sweep_ends_it_with_130():
    import signal

    child = _start_large()
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130 and err == b"gradcli: interrupted\n"


def test_a_large_sweep_whose_reader_goes_away_ends_with_141():
    child = _start_large()
    child.stdout.close()
    assert child.wait(timeout=60) == 141
    assert child.stderr.read() == b""
