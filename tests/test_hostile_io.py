"""Batch input from other programs: any bytes, any size, pipes that close, Ctrl-C.

These run the real console script in a subprocess, because buffering, SIGINT, SIGPIPE and the
flush at interpreter exit only happen for real there.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcli.cli import cli
from gradcli.limits import max_chars

GRADCLI = [sys.executable, "-m", "gradcli", "eval"]
# A child that reports its peak memory (KiB) on stderr as it exits. VmHWM, not ru_maxrss: the
# latter survives exec and so includes the forking test process's own memory.
MEASURED = [sys.executable, "-c",
            "import atexit, sys\n"
            "def peak():\n"
            "    status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
            "    print('peak', status.split()[0], file=sys.stderr)\n"
            "atexit.register(peak)\n"
            "from gradcli.cli import main\nsys.argv[0] = 'gradcli'\nmain()", "eval"]
needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/status"),
                                reason="peak memory is read from Linux's /proc/self/status")


def _lines_reader(stream) -> queue.Queue:
    """Lines of ``stream`` as they arrive, read by a thread (so a test can wait with a timeout)."""
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def expected_lines(data: bytes) -> list[int]:
    """The documented record lines: every line that is not blank and not a # comment."""
    numbers = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        text = raw.decode("utf-8", errors="replace").rstrip("\r").removeprefix("\ufeff")
        if text.strip() and not text.lstrip().startswith("#"):
            numbers.append(number)
    if data.endswith(b"\n"):
        numbers = [n for n in numbers if n <= data.count(b"\n")]
    return numbers


def run_batch(data: bytes, *args: str) -> tuple[int, list[dict], str]:
    result = CliRunner().invoke(cli, ["eval", "-", "--json", *args], input=data)
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()], \
        result.stderr


def test_weird_bytes_give_exactly_one_record_per_line_in_order():
    data = (b"x+1\r\n\xff\xfe\xfd\n\x00\nx\x00+1\n\t\x0b\x0c\n  # comment\r\n\r\n"
            b"\x1b[31mx\n\xef\xbb\xbfx\nx*2\rx\n" + "\u2028x".encode() + b"\nx*3")
    status, records, stderr = run_batch(data, "--x", "2")
    assert [r["line"] for r in records] == expected_lines(data)
    assert records[0]["value"] == 3.0 and records[-1]["value"] == 6.0
    # A byte-order mark that starts a program is dropped, as `-f` always did; the rest fail.
    bom = expected_lines(data).index(data.split(b"\n").index(b"\xef\xbb\xbfx") + 1)
    assert records[bom]["value"] == 2.0 and records[bom]["error"] is None
    assert all(r["error"]["kind"] == "parse" for r in records[1:-1] if r is not records[bom]), \
        records
    assert status == 2 and "Traceback" not in stderr


def test_a_byte_order_mark_before_a_comment_or_a_blank_line_makes_no_record():
    """Found by a bug hunt: a file saved by a Windows editor starts with a byte-order mark; before
    a comment or a blank line it made a parse error's record (status 2)."""
    for data in (b"\xef\xbb\xbf# formulas\nx*2\n", b"\xef\xbb\xbf\nx*2\n", b"\xef\xbb\xbfx*2\n"):
        status, records, stderr = run_batch(data, "--x", "2")
        assert [(r["line"], r["expression"], r["value"]) for r in records] == [
            (expected_lines(data)[0], "x*2", 4.0)], data
        assert status == 0 and stderr == "", (data, stderr)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=30),
                          st.sampled_from([b"x*y", b"sin(x", b"2x", b"9**9**9", b"log(-x)",
                                           b"# c", b"", b"\r", b"q"])), max_size=12))
def test_random_bytes_in_a_batch_never_lose_or_reorder_a_record(chunks):
    data = b"\n".join(chunks)
    status, records, stderr = run_batch(data, "--x", "1.5", "--y", "2")
    assert [r["line"] for r in records] == expected_lines(data)
    assert "Traceback" not in stderr
    bad = [r for r in records if r["error"] is not None]
    assert status == max([2 if r["error"]["kind"] != "domain" else 3 for r in bad] + [0, status])
    for record in bad:
        assert record["error"]["kind"] in {"parse", "name", "usage", "domain"}


def test_each_record_is_flushed_before_the_next_line_is_written():
    child = subprocess.Popen([*GRADCLI, "-", "--json", "--x", "2"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = _lines_reader(child.stdout)
    try:
        child.stdin.write(b"x*3\n")
        child.stdin.flush()
        first = json.loads(lines.get(timeout=30))  # line 2 is not written yet
        assert first["line"] == 1 and first["value"] == 6.0
        child.stdin.write(b"x+1\n")
        child.stdin.close()
        second = json.loads(lines.get(timeout=30))
        assert second["line"] == 2 and second["value"] == 3.0
        assert child.wait(timeout=30) == 0
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("mode", [["--json"], []])
def test_closed_reader_ends_quietly_with_status_141(mode, tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("x*y + sin(x)\n" * 20_000)
    with big.open("rb") as source:
        child = subprocess.Popen([*GRADCLI, "-", "--x", "1", "--y", "2", "--no-check", *mode],
                                 stdin=source, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        first = child.stdout.readline()  # what `| head -1` does, then it exits
        child.stdout.close()
        stderr = child.stderr.read()
        status = child.wait(timeout=60)
    assert b"line 1" in first or b'"line":1,' in first
    assert status == 141
    assert stderr == b"", stderr.decode(errors="replace")


@pytest.mark.parametrize("args", [["x*2", "--x", "1"], ["x*2", "--x", "1", "--json"]])
def test_reader_gone_before_the_first_write_is_quiet_too(args):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the flush at exit hits a closed pipe
    done = subprocess.run([*GRADCLI, *args], stdout=write_end, stderr=subprocess.PIPE,
                          check=False, timeout=60)
    os.close(write_end)
    assert done.returncode == 141
    assert done.stderr == b""


def _interrupt_after_first_record(args: list[str], stdin: bytes) -> tuple[int, str]:
    """Start a batch, wait for its first record, send SIGINT: the status and stderr."""
    child = subprocess.Popen([*GRADCLI, "-", *args], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = _lines_reader(child.stdout)
    try:
        child.stdin.write(stdin)
        child.stdin.flush()
        first = lines.get(timeout=30)
        assert first.startswith((b"line 1", b'{"line":1,')), first
        child.send_signal(signal.SIGINT)
        return child.wait(timeout=30), child.stderr.read().decode()
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["--json", "--x", "2"], b"x*3\n" + b"-" * 300_000 + b"x\n"),  # busy on a slow line
        (["--x", "2"], b"x\n"),  # waiting for the next line
    ],
    ids=["busy", "waiting"],
)
def test_ctrl_c_mid_batch_is_status_130_and_one_line(args, stdin):
    status, stderr = _interrupt_after_first_record(args, stdin)
    assert status == 130
    assert stderr == "gradcli: interrupted\n", repr(stderr)  # no blank line from click


# A child whose import of one module blocks (after touching a marker file) until it is
# interrupted, then runs `python -m gradcli eval ...`: SIGINT arrives while gradcli starts up.
SLOW_START = """
import os, runpy, sys, time
slow, marker = sys.argv[1], sys.argv[2]
delay = float(sys.argv[3]) if len(sys.argv) > 3 else 60

class SlowImport:
    def find_spec(self, name, path=None, target=None):
        if name == slow:
            open(marker, "w").close()
            time.sleep(delay)
        return None

sys.meta_path.insert(0, SlowImport())
sys.argv = ["gradcli", *(sys.argv[4:] or ["eval", "x*2", "--x", "1"])]
runpy.run_module("gradcli", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("slow", [
    "gradcli.cli.plain_eval", "gradcli.gradcheck.evaluation", "gradcli.language.parser",
    "gradcli.output.plain", "click", "rich"])
def test_ctrl_c_during_start_up_is_status_130_and_one_line(slow, tmp_path):
    """The plain eval loads neither click nor Rich: those two are slowed in a command line
    that click reads (--rtol) and whose table Rich draws (FORCE_COLOR)."""
    marker = tmp_path / "importing"
    extra = ["60", "eval", "x*2", "--x", "1", "--rtol", "1e-5"] if slow in ("click", "rich") else []
    child = subprocess.Popen([sys.executable, "-c", SLOW_START, slow, str(marker), *extra],
                             env={**os.environ, "FORCE_COLOR": "1"} if slow == "rich" else None,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert marker.exists(), f"{slow} was never imported"
        child.send_signal(signal.SIGINT)
        status = child.wait(timeout=30)
        assert (status, child.stderr.read().decode(), child.stdout.read()) == (
            130, "gradcli: interrupted\n", b"")
    finally:
        child.kill()
        child.wait()


def test_ctrl_c_stays_ignored_where_the_shell_ignores_it(tmp_path):
    """Started in the background (`gradcli ... &`: SIGINT ignored), gradcli ignores Ctrl-C, in
    start-up too: the program still runs to its end."""
    marker = tmp_path / "importing"
    child = subprocess.Popen([sys.executable, "-c", SLOW_START, "gradcli.language.parser",
                              str(marker), "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.monotonic() + 30
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert marker.exists(), "the parser was never imported"
        child.send_signal(signal.SIGINT)
        status = child.wait(timeout=30)
        assert (status, child.stderr.read()) == (0, b"")
        assert b"value 2" in child.stdout.read()
    finally:
        child.kill()
        child.wait()


def _peak_kib(lines: int, tmp_path) -> tuple[int, list[bytes]]:
    path = tmp_path / f"{lines}.txt"
    path.write_text(("x # " + "c" * 96 + "\n") * lines)  # 10 MB for 10^5 lines
    with path.open("rb") as source:
        done = subprocess.run([*MEASURED, "-", "--x", "1", "--no-check", "--json"], stdin=source,
                              capture_output=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stderr.split()[-1]), done.stdout.splitlines()


@needs_proc
def test_100k_lines_one_record_each_in_order_memory_flat(tmp_path):
    small, _ = _peak_kib(1_000, tmp_path)
    large, records = _peak_kib(100_000, tmp_path)
    assert len(records) == 100_000
    numbers = [json.loads(records[i])["line"] for i in (0, 1, 49_999, 99_999)]
    assert numbers == [1, 2, 50_000, 100_000]
    assert large - small < 8_000, (small, large)  # holding 10 MB of lines would show here


@needs_proc
def test_a_10_mb_line_is_one_clear_error_record_and_memory_stays_flat(tmp_path):
    path = tmp_path / "huge.txt"
    with path.open("wb") as out:
        out.write(b"x+1\n")
        out.write(b"x+" * (5 * 2**20) + b"x\n")  # 10 MiB
        out.write(b"# " + b"c" * (10 * 2**20) + b"\n")  # a 10 MiB comment: no record
        out.write(b"x*2\n")
    with path.open("rb") as source:
        done = subprocess.run([*MEASURED, "-", "--x", "1", "--json"], stdin=source,
                              capture_output=True, check=False, timeout=120)
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["line"] for r in records] == [1, 2, 4]
    assert records[0]["value"] == 2.0 and records[2]["value"] == 2.0
    error = records[1]["error"]
    assert error["kind"] == "usage"
    assert f"longer than {max_chars():,} characters" in error["message"]
    assert "--max-nodes" in error["hint"]
    assert len(records[1]["expression"]) <= max_chars() + 1
    assert done.returncode == 2
    peak_kib = int(done.stderr.split()[-1])
    assert peak_kib < 120_000  # the line is cut at 8 MB and the rest dropped as it is read
