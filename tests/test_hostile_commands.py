"""Every command in a pipeline that closes early, and Ctrl-C during a long check: real
subprocesses, as in test_hostile_io, because SIGPIPE and SIGINT only happen for real."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from gradcli.formulas.files import parse_check_file
from gradcli.formulas.run import check_cells
from gradcli.limits import MAX_CHECK_CELLS, MAX_RUN_CELLS

GRADCLI = [sys.executable, "-m", "gradcli"]


def many_checks(path, count: int = 1200) -> str:
    path.write_text("".join(f'[[check]]\nname = "c{i}"\nexpr = "x*{i}"\nat = {{x = 1}}\n'
                            f"value = {i}\n" for i in range(count)))
    return str(path)


def first_then_close(args: list[str], take: int | None = None) -> tuple[bytes, int, bytes]:
    """What ``gradcli ARGS | head -1`` (or ``| head -c1``) does: read a little, then close."""
    child = subprocess.Popen([*GRADCLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = child.stdout.read(take) if take else child.stdout.readline()
    child.stdout.close()
    stderr = child.stderr.read()
    return first, child.wait(timeout=120), stderr


def balanced(levels: int) -> str:
    """A sum of 2^levels x's, as shallow as it can be: the tree view draws all of it."""
    text = "x"
    for _ in range(levels):
        text = f"({text}+{text})"
    return text


@pytest.mark.parametrize("command", ["check", "check --json", "graph", "graph mermaid",
                                     "graph tree", "diff"])
def test_a_closed_reader_ends_every_command_quietly_with_141(command, tmp_path):
    big_program = "+".join(["x"] * 50_000)  # ~5 MB of DOT, 4 MB of tree
    args = {
        "check": ["check", many_checks(tmp_path / "c.toml")],  # a 100 KB table in one write
        "check --json": ["check", many_checks(tmp_path / "c.toml"), "--json"],
        "graph": ["graph", big_program, "--max-nodes", "0"],
        "graph mermaid": ["graph", big_program, "--max-nodes", "0", "--format", "mermaid"],
        "graph tree": ["graph", balanced(13), "--max-nodes", "0", "--format", "tree"],
        "diff": ["diff", "*".join(f"sin(x{i})" for i in range(150))],  # 220 KB of derivatives
    }[command]
    one_line = command in ("diff", "check --json")  # --json is one line: read one byte of it
    first, status, stderr = first_then_close(args, take=1 if one_line else None)
    assert first
    assert status == 141, (status, stderr[-500:])
    assert stderr == b"", stderr.decode(errors="replace")


def test_ctrl_c_during_a_long_check_is_130_and_one_line(tmp_path):
    nodes = 40  # sin(x*k)*exp(-x*x/k) terms: ~10 nodes each
    points = MAX_CHECK_CELLS // (nodes * 10)
    expr = "+".join(f"sin(x*{k})*exp(-x*x/{k})" for k in range(1, 5))

    def check(i: int) -> str:
        return f'[[check]]\nname = "long{i}"\nexpr = "{expr}"\nsweep = {{x = "-3:3:{points}"}}\n' \
            "finite = true\n"

    # as many as one run may have (MAX_RUN_CELLS): a few seconds on a quiet machine
    count = MAX_RUN_CELLS // check_cells(parse_check_file(check(0))[0])
    path = tmp_path / "long.toml"
    path.write_text("".join(check(i) for i in range(count)))
    child = subprocess.Popen([*GRADCLI, "check", str(path), "-k", "long"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(1.0)  # imported and into the checks (Ctrl-C while starting is 130 too)
        assert child.poll() is None, "the checks ended before Ctrl-C"
        child.send_signal(signal.SIGINT)
        status = child.wait(timeout=30)
        assert status == 130
        assert child.stderr.read().decode().strip() == "gradcli: interrupted"
    finally:
        child.kill()
        child.wait()


def test_a_large_write_reports_a_reader_that_goes_away_mid_write():
    """The kernel returns a short count; the remainder must get the EPIPE, not be dropped."""
    import os
    import threading

    from gradcli.cli.streams import _WholeWrites

    read_end, write_end = os.pipe()

    def read_one_byte_and_go() -> None:
        os.read(read_end, 1)
        os.close(read_end)

    reader = threading.Thread(target=read_one_byte_and_go)
    reader.start()
    try:
        with pytest.raises(BrokenPipeError):
            _WholeWrites(write_end).write(b"x" * 10_000_000)
    finally:
        reader.join()
        os.close(write_end)


def test_a_reader_that_takes_everything_sees_status_0():
    child = subprocess.Popen([*GRADCLI, "eval", "x*2", "--x", "1"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0 and out.startswith(b"value 2") and err == b""
