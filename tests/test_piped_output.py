"""Output in a pipe is for programs too (issue 13): a line that is one record (a batch line, a
derivative, an error) is never wrapped or cut whatever ``COLUMNS`` says; ``COLUMNS`` below a sane
minimum is ignored (0 used to print nothing, 1 a character per line); tables keep every number
whole; no line ends in spaces.

Each case runs ``gradcli`` with stdout and stderr pipes and ``COLUMNS`` set to 0, 1, 30, 1000 or
not at all.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gradcli.output.console import (
    MAX_WIDTH,
    MIN_WIDTH,
    PIPE_WIDTH,
    _TrimmedLines,
    console_width,
    make_console,
)

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ["0", "1", "30", "1000", None]
LONG = "sin(x)*cos(x)**3*exp(x*y)"  # its 4th derivatives are lines of 300 to 1,000 characters
BATCH = "x*y + sin(x)\nx**3\n(\n1/3 + x*y*2.5e-7\n"


def run(args: list[str], columns: str | None, stdin: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE")}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run([sys.executable, "-m", "gradcli", *args], input=stdin,
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=60,
                          check=False)


# (name, arguments, stdin, exit status)
CASES = [
    ("eval table", ["eval", "x*y + sin(x)", "--x", "1", "--y", "2", "--hessian"], "", 0),
    ("free table", ["eval", "(x*W+b-t)**2", "--x", "2", "--W", "3"], "", 0),
    ("sweep table", ["eval", "sin(x*y)/3", "--x", "-1:1:5", "--y", "0.7"], "", 0),
    ("check table", ["check", "examples/checks.toml"], "", None),
    ("diff", ["diff", LONG, "--order", "4"], "", 0),
    ("batch text", ["eval", "-", "--x", "1", "--y", "2"], BATCH, 2),
    ("graph tree", ["graph", "x*W + b", "--x", "2", "--W", "3", "--b", "1", "--format", "tree"],
     "", 0),
    ("parse error", ["eval", "x*", "--x", "1"], "", 2),
    ("usage error", ["eval", "x*y", "--x", "1", "--strict"], "", 2),
]


@pytest.mark.parametrize("columns", COLUMNS, ids=lambda c: f"COLUMNS={c}")
@pytest.mark.parametrize(("name", "args", "stdin", "status"), CASES, ids=[c[0] for c in CASES])
def test_piped_output_has_no_trailing_spaces_and_is_never_empty(name, args, stdin, status,
                                                                 columns):
    done = run(args, columns, stdin)
    if status is not None:
        assert done.returncode == status, done.stderr
    output = done.stdout + done.stderr
    assert output.strip(), f"{name}: nothing printed"
    for stream in (done.stdout, done.stderr):
        for line in stream.split("\n"):
            assert line == line.rstrip(), f"{name}: a line ends in spaces: {line!r}"
    if columns in ("0", "1"):  # ignored: the same as no COLUMNS at all
        assert (done.stdout, done.stderr) == (run(args, None, stdin).stdout,
                                              run(args, None, stdin).stderr)


@pytest.mark.parametrize("columns", COLUMNS, ids=lambda c: f"COLUMNS={c}")
def test_piped_derivatives_are_one_line_each_and_read_back(columns):
    texts = json.loads(run(["diff", LONG, "--order", "4", "--json"], columns).stdout)
    expected = []

    def walk(path: tuple[str, ...], level: dict | str) -> None:
        if isinstance(level, str):
            label = "d4/" + " ".join(f"d{name}" for name in path)
            expected.append(f"{label}{': ' if '; ' in level else ' = '}{level}")
        else:
            for name, inner in level.items():
                walk((*path, name), inner)

    walk((), texts["derivatives"])
    lines = run(["diff", LONG, "--order", "4"], columns).stdout.rstrip("\n").split("\n")
    assert lines == expected
    assert max(len(line) for line in lines) > 300  # longer than any layout width here


@pytest.mark.parametrize("columns", COLUMNS, ids=lambda c: f"COLUMNS={c}")
def test_piped_batch_gives_one_line_per_program(columns):
    programs = [f"x*{i} + sin(x*y)/7 + " + " + ".join(f"y**{k}" for k in range(1, 30))
                for i in range(5)]
    done = run(["eval", "-", "--x", "1.1", "--y", "0.3"], columns, "\n".join(programs) + "\n")
    lines = done.stdout.rstrip("\n").split("\n")
    assert len(lines) == len(programs)
    records = [json.loads(line) for line in run(
        ["eval", "-", "--x", "1.1", "--y", "0.3", "--json"], columns,
        "\n".join(programs) + "\n").stdout.splitlines()]
    for line, record in zip(lines, records, strict=True):
        assert line.startswith(f"line {record['line']}: value ")
        fields = dict(re.findall(r"(value|d/dx|d/dy) (\S+)", line))
        assert float(fields["value"]) == record["value"]
        assert float(fields["d/dx"]) == record["gradients"]["x"]
        assert float(fields["d/dy"]) == record["gradients"]["y"]


@pytest.mark.parametrize("columns", COLUMNS, ids=lambda c: f"COLUMNS={c}")
def test_piped_errors_keep_their_three_lines(columns):
    done = run(["eval", "sin(x) + (x*", "--x", "1"], columns)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.split("\n")[:3] == [
        "error: parse error at line 1, column 13: unexpected end of input; expected a number, "
        "a name, a function call or '('",
        "  sin(x) + (x*",
        "              ^"]


@pytest.mark.parametrize("columns", COLUMNS, ids=lambda c: f"COLUMNS={c}")
def test_piped_tables_print_every_number_whole(columns):
    point = ["--x", "0.1", "--y", str(2 / 3), "--z", "-7.25e-300"]
    source = "exp(-x)*z + y/3 + sin(x*y)"
    table = run(["eval", source, *point], columns).stdout
    record = json.loads(run(["eval", source, *point, "--json"], columns).stdout)
    words = set(table.split())
    numbers = [record["value"], *record["gradients"].values(), *record["point"].values()]
    numbers += [number for node in record["nodes"] for number in (node["value"], node["grad"])
                if number is not None]
    from gradcli.engine.notation import format_number

    for number in numbers:
        assert format_number(number) in words, f"{number!r} is not printed whole"
    assert not re.search(r"\d…|…\d", table)


def test_a_piped_tree_prints_each_node_on_one_whole_line():
    args = ["graph", "sin(x*W) + b/3", "--x", "2", "--W", "3", "--b", "1", "--format", "tree"]
    wide = run(args, None).stdout
    assert run(args, "30").stdout == run(args, "1000").stdout == wide
    assert len(wide.splitlines()) == 9  # a line per node, then the check's verdict
    assert "│       └── #1 W  var  value 3  grad 1.920340573300732\n" in wide


def test_a_sane_columns_sets_the_table_layout():
    wide = run(["eval", "x*y + sin(x)", "--x", "1", "--y", "2"], "1000").stdout
    narrow = run(["eval", "x*y + sin(x)", "--x", "1", "--y", "2"], "60").stdout
    assert "─" in wide.split("\n")[3]  # a table
    assert "#0 x  op var  value 1  gradient 2.5403023058681398" in narrow  # records at 60
    assert all(len(line) <= 60 for line in narrow.split("\n")
               if not line.startswith("✓"))  # the verdict, one line in a pipe


# --- make_console, in process ----------------------------------------------------------------


@pytest.mark.parametrize(("columns", "width"), [
    (None, PIPE_WIDTH), ("0", PIPE_WIDTH), ("1", PIPE_WIDTH), (str(MIN_WIDTH - 1), PIPE_WIDTH),
    (str(MIN_WIDTH), MIN_WIDTH), ("80", 80), ("1000", 1000), ("10" * 20, MAX_WIDTH),
    ("-5", PIPE_WIDTH), ("wide", PIPE_WIDTH), (" 90 ", 90)])
def test_console_width_in_a_pipe(monkeypatch, columns, width):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert console_width(io.StringIO()) == width


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
@pytest.mark.parametrize(("columns", "terminal", "width"), [
    (None, 50, 50), ("1", 50, 50), ("0", 120, 120), ("40", 120, 40), (None, 10, MIN_WIDTH),
    ("0", 0, 80)])
def test_console_width_on_a_terminal(monkeypatch, columns, terminal, width):
    import fcntl
    import struct
    import termios

    leader, follower = os.openpty()
    try:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, terminal, 0, 0))
        with open(follower, "w", closefd=False) as stream:
            if columns is None:
                monkeypatch.delenv("COLUMNS", raising=False)
            else:
                monkeypatch.setenv("COLUMNS", columns)
            assert console_width(stream) == width
    finally:
        os.close(leader)
        os.close(follower)


def test_trimmed_lines_drop_trailing_spaces_only():
    out = io.StringIO()
    trimmed = _TrimmedLines(out)
    trimmed.write("a  b   \nc ")
    assert out.getvalue() == "a  b\n"
    trimmed.write(" \n\n  d\n")
    assert out.getvalue() == "a  b\nc\n\n  d\n"
    trimmed.write("e ")
    trimmed.flush()  # a line not ended is written as it is
    assert out.getvalue().endswith("  d\ne ")
    assert not trimmed.isatty() and trimmed.getvalue() == out.getvalue()


def test_make_console_in_a_pipe_never_wraps_a_record(monkeypatch, capsys):
    from rich.text import Text

    monkeypatch.setenv("COLUMNS", "30")
    console = make_console()
    assert console.width == 30 and not console.is_terminal
    line = "line 1: value 1  " + "  ".join(f"d/dx{i} 0.333333333333333{i}" for i in range(9))
    console.print(Text(line))
    assert capsys.readouterr().out == line + "\n"
