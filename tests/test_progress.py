"""Long work on a terminal shows progress -- on stderr, never mixed into the records on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

pty = pytest.importorskip("pty", reason="needs a pseudo-terminal (POSIX)")


def _run_with_terminal_stderr(args: list[str], stdin: str) -> tuple[int, str, bytes]:
    """Run gradcli with stdout a pipe and stderr a pseudo-terminal; (status, stdout, stderr)."""
    master, slave = os.openpty()
    process = subprocess.Popen([sys.executable, "-m", "gradcli", *args], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    captured: dict[str, str] = {}

    def feed_and_collect() -> None:
        captured["stdout"] = process.communicate(stdin)[0]

    worker = threading.Thread(target=feed_and_collect)
    worker.start()
    terminal = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        terminal += chunk
    worker.join()
    os.close(master)
    return process.returncode, captured["stdout"], terminal


def test_batch_progress_goes_to_the_terminal_and_records_to_stdout():
    lines = "".join(f"x*{i} + y\n" for i in range(300)) + "log(x - 1)\n"
    status, stdout, terminal = _run_with_terminal_stderr(
        ["eval", "-", "--json", "--x", "1", "--y", "2"], lines)
    records = [json.loads(line) for line in stdout.splitlines()]
    assert [r["line"] for r in records] == list(range(1, 302))
    assert status == 3
    assert b"programs" in terminal  # the live counter
    assert b"line 301: numeric error" in terminal  # errors still reach stderr, above it
