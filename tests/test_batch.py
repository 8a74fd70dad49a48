"""Batch JSON Lines on several processes: the same records, in input order, streamed."""

from __future__ import annotations

import json
import math
import os
import sys
import threading

import pytest

import gradcli
from gradcli import limits
from gradcli.gradcheck.evaluation import EvalSettings, evaluate_lines
from gradcli.runs import batch

LINES = [
    "x*y + sin(x)",
    "",
    "# a comment",
    "log(x - 5)",
    "2x",
    "u = x*y; u*u - y",
    "sqrt(y)*exp(-x)",
] * 40  # 280 lines, so that several chunks go to the workers


@pytest.fixture()
def small_serial_start(monkeypatch):
    monkeypatch.setattr(batch, "SERIAL_LINES", 5)
    monkeypatch.setattr(batch, "CHUNK", 7)


def _serial_reference(lines, values):
    return [batch.json_line(outcome) for outcome in evaluate_lines(lines, values)]


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_parallel_records_equal_serial_records_in_order(small_serial_start, jobs):
    values = {"x": 1.5, "y": 2.0}
    got = list(batch.json_lines(LINES, values, jobs=jobs))
    expected = _serial_reference(LINES, values)
    assert got == expected
    numbers = [record.line for record in got]
    assert numbers == sorted(numbers) and len(numbers) == 200  # blank and comment lines skipped
    for record in got:
        parsed = json.loads(record.text)
        assert parsed["line"] == record.line
        assert (parsed["error"] is None) == (record.error is None)


@pytest.mark.parametrize("count", [5, 6])
def test_a_batch_that_ends_within_the_serial_lines_starts_no_worker(small_serial_start,
                                                                    monkeypatch, count):
    """Five lines are evaluated here (SERIAL_LINES): a sixth starts the workers, and the end of
    the input right after the fifth starts none and loads none."""
    started = []
    monkeypatch.setattr(os, "fork", lambda: started.append(1) or _no_fork())
    monkeypatch.delitem(sys.modules, "gradcli.runs.workers", raising=False)
    lines = [f"x*{k} + y" for k in range(count)]
    values = {"x": 1.5, "y": 2.0}
    assert list(batch.json_lines(lines, values, jobs=2)) == _serial_reference(lines, values)
    assert bool(started) == (count > 5)
    assert ("gradcli.runs.workers" in sys.modules) == (count > 5)


def _no_fork() -> int:
    raise OSError(11, "Resource temporarily unavailable")  # the batch then evaluates here


def test_statuses_and_errors_survive_the_workers(small_serial_start):
    got = list(batch.json_lines(LINES, {"x": 1.5, "y": 2.0}, EvalSettings(check=False), jobs=2))
    kinds = {json.loads(r.text)["error"]["kind"] for r in got if r.error is not None}
    assert kinds == {"domain", "parse"}
    assert {r.status for r in got} == {0, 2, 3}


def test_records_stream_before_the_input_ends(small_serial_start):
    """A slow producer: each record appears while later lines have not been written yet."""
    more = threading.Event()

    def slow_lines():
        for k in range(12):
            yield f"x*{k}"
        more.wait(timeout=30)  # the consumer must see the first 12 records before this
        yield "x*100"

    records = batch.json_lines(slow_lines(), {"x": 2.0}, jobs=2)
    first = [next(records) for _ in range(12)]
    assert [json.loads(r.text)["value"] for r in first] == [2.0 * k for k in range(12)]
    more.set()
    assert json.loads(next(records).text)["value"] == 200.0
    assert list(records) == []


def test_a_failing_reader_is_raised_after_the_records_before_it(small_serial_start):
    def broken():
        yield from (f"x+{k}" for k in range(20))
        raise OSError("disk gone")

    records = batch.json_lines(broken(), {"x": 1.0}, jobs=2)
    seen = []
    with pytest.raises(OSError, match="disk gone"):
        for record in records:
            seen.append(record)
    assert [r.line for r in seen] == list(range(1, 21))


def test_default_jobs_follows_the_environment(monkeypatch):
    monkeypatch.setenv(limits.JOBS_ENV, "3")
    assert batch.default_jobs() == 3
    monkeypatch.setenv(limits.JOBS_ENV, "nonsense")
    assert batch.default_jobs() >= 1


def test_large_batch_values_are_right(small_serial_start):
    """Every record's value and gradient against the closed form, through the workers."""
    lines = [f"sin({k}*x)*y + x**2" for k in range(300)]
    got = list(batch.json_lines(lines, {"x": 0.3, "y": 1.7}, jobs=2))
    for k, record in enumerate(got):
        parsed = json.loads(record.text)
        assert parsed["value"] == pytest.approx(math.sin(k * 0.3) * 1.7 + 0.09, rel=1e-12)
        assert parsed["gradients"]["x"] == pytest.approx(
            k * math.cos(k * 0.3) * 1.7 + 0.6, rel=1e-12, abs=1e-12)
        assert parsed["check"]["ok"]
    assert gradcli.evaluate("x", {"x": 1}).value == 1.0  # the parent's parser still works


def test_the_cli_batch_through_the_workers(monkeypatch):
    """gradcli eval - --json with more lines than the serial start: one record per line, in
    order, errors on stderr, the largest status."""
    from click.testing import CliRunner

    from gradcli.cli import cli

    monkeypatch.setenv(limits.JOBS_ENV, "2")
    lines = [f"x*{k} + y" if k % 50 else "log(x - 9)" for k in range(300)]
    result = CliRunner().invoke(cli, ["eval", "-", "--json", "--x", "2", "--y", "1"],
                                input="\n".join(lines) + "\n")
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["line"] for r in records] == list(range(1, 301))
    for k, record in enumerate(records):
        if k % 50:
            assert record["value"] == 2.0 * k + 1.0 and record["gradients"] == {"x": k, "y": 1}
        else:
            assert record["error"]["kind"] == "domain"
    assert result.exit_code == 3
    assert result.stderr.count("numeric error") == 6


def _cli_records(args, lines):
    from click.testing import CliRunner

    from gradcli.cli import cli

    result = CliRunner().invoke(cli, ["eval", *args], input="\n".join(lines) + "\n")
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()]


def test_a_batch_checks_input_gradients_and_nodes_only_when_asked(monkeypatch):
    """A batch checks input gradients only (nodes_checked false); --check-nodes adds the
    per-node check, and one program keeps it. Values, gradients and the input checks are the
    same either way (node entries then say null, as for a graph over 300 nodes); the per-node
    numbers match a single program's."""
    monkeypatch.setenv(limits.JOBS_ENV, "1")
    lines = ["u = x*y; u*u - y + sin(x)", "x/(1 + y*y)", "relu(x - 5) * y"]
    point = ["--x", "0.7", "--y", "1.3"]
    _, quick = _cli_records(["-", "--json", *point], lines)
    _, full = _cli_records(["-", "--json", "--check-nodes", *point], lines)
    for fast, slow, source in zip(quick, full, lines, strict=True):
        assert fast["check"]["nodes_checked"] is False and slow["check"]["nodes_checked"]
        assert fast["check"]["gradients"] == slow["check"]["gradients"]
        assert fast["check"]["ok"] and slow["check"]["ok"]
        for key in ("value", "gradients", "point"):
            assert fast[key] == slow[key]
        for node, checked in zip(fast["nodes"], slow["nodes"], strict=True):
            assert node == {**checked, "numeric_grad": None, "ok": None}  # as over 300 nodes
            if checked["grad"] is not None:
                assert checked["ok"]
                assert checked["numeric_grad"] == pytest.approx(checked["grad"], abs=1e-6)
        status, (single,) = _cli_records([source, "--json", *point], [])
        assert status == 0
        assert single["nodes"] == slow["nodes"] and single["check"] == slow["check"]


def test_a_kink_inside_the_graph_fails_only_the_per_node_check(monkeypatch):
    """relu(x - x) is 0 for every x: its input gradient 0 passes; the node x - x sits on
    relu's kink, which --check-nodes reports (as one program does)."""
    monkeypatch.setenv(limits.JOBS_ENV, "1")
    status, (record,) = _cli_records(["-", "--json", "--x", "1"], ["relu(x - x)"])
    assert status == 0 and record["check"]["ok"] and record["gradients"] == {"x": 0.0}
    status, (record,) = _cli_records(["-", "--json", "--x", "1", "--check-nodes"],
                                     ["relu(x - x)"])
    assert status == 1 and not record["check"]["ok"]
    kink = [(n["label"], n["ok"], n["numeric_grad"]) for n in record["nodes"] if not n["ok"]]
    assert kink == [("x - x", False, 0.5)]  # central differences across relu's kink: 1/2
