"""What one ``gradcli check`` run may cost (issue 13): loading a check file takes time linear in
the file, a run whose estimated size is past ``MAX_RUN_CELLS`` is refused before anything runs,
a check's memory does not grow with its points (it runs a block of points at a time, with the
same findings as all at once), and the shapes of ``check`` TOML cannot get wrong are told apart.
"""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest
from click.testing import CliRunner

from gradcli.cli import cli
from gradcli.formulas import run as run_module
from gradcli.formulas.files import CheckFileError, load_check_file, parse_check_file
from gradcli.formulas.outcomes import Range, outcome_record
from gradcli.formulas.run import (
    block_points,
    check_blocks,
    check_cells,
    run_budget_error,
    run_check,
)
from gradcli.language.values import parse_value
from gradcli.limits import CHECK_BLOCK_CELLS, CHECK_BLOCK_POINTS, MAX_RUN_CELLS

np = pytest.importorskip("numpy")


def check(*args: str):
    return CliRunner().invoke(cli, ["check", *args], env={"GITHUB_ACTIONS": ""})


# --- loading is linear ---------------------------------------------------------------------------

def small_checks(count: int) -> str:
    return "".join(f'[[check]]\nname = "c{i}"\nexpr = "x"\nat.x = {i}\nvalue = {i}\n'
                   for i in range(count))


def inline_checks(count: int) -> str:
    """The same checks as one array of inline tables: no [[check]] header to find lines by."""
    rows = "".join(f'  {{name = "c{i}", expr = "x", at = {{x = {i}}}, value = {i}}},\n'
                   for i in range(count))
    return f"check = [\n{rows}]\n"


def load_seconds(text: str, runs: int = 1) -> tuple[float, list]:
    """The shortest time of ``runs`` loads of ``text``, and the checks."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        specs = parse_check_file(text, "many.toml")
        best = min(best, time.perf_counter() - started)
    return best, specs


@pytest.mark.parametrize(("make", "count"), [(small_checks, 5000), (inline_checks, 1000)])
def test_loading_takes_time_linear_in_the_number_of_checks(make, count):
    # Before: every check compared its name with every earlier one, and without [[check]]
    # headers every key's line was a scan of the whole file: 4x the checks took ~14x the time.
    small, _ = load_seconds(make(count), runs=2)
    large, specs = load_seconds(make(4 * count))
    assert large / small < 8, (small, large)
    assert large < 60  # 20,000 checks: ~3 s; quadratic was minutes
    assert len(specs) == 4 * count
    if make is small_checks:  # and every line is still found
        last, lines = specs[-1], 5 * (4 * count - 1)
        assert (last.name, last.line, last.line_of("at.x"), last.line_of("value")) == (
            f"c{4 * count - 1}", lines + 1, lines + 4, lines + 5)


def test_a_duplicate_name_among_many_checks_is_found_at_its_line():
    text = small_checks(3000) + '[[check]]\nname = "c5"\nexpr = "x"\nat.x = 1\nvalue = 1\n'
    with pytest.raises(CheckFileError) as caught:
        parse_check_file(text, "dup.toml")
    assert caught.value.line == 15_002 and "a second check named 'c5'" in caught.value.message


def test_a_check_with_twenty_thousand_variables_loads_fast():
    # Before: the line of each gradients.xN was a regex search of the whole line from its
    # start: 5,000 variables took 23 s, 20,000 would take minutes.
    names = [f"x{i}" for i in range(20_000)]
    pairs = ", ".join(f"{name} = 1" for name in names)
    text = (f'[[check]]\nname = "wide"\nexpr = "{" + ".join(names)}"\nat = {{{pairs}}}\n'
            f'gradients = {{{pairs}}}\n')
    started = time.perf_counter()
    (spec,) = parse_check_file(text)
    assert time.perf_counter() - started < 20  # ~1 s
    assert spec.line_of("gradients.x19999") == 5 and spec.line_of("at.x0") == 4


def test_a_range_is_kept_as_text_until_its_check_runs():
    # 100 checks of a million points each: 8 KB of TOML took 4 GB and 36 s just to load
    text = "".join(f'[[check]]\nname = "c{i}"\nexpr = "x*2"\nsweep = {{x = "0:1:1000000"}}\n'
                   f'value = "2*x"\n' for i in range(100))
    tracemalloc.start()
    try:
        started = time.perf_counter()
        specs = parse_check_file(text)
        seconds = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seconds < 10 and peak < 50 * 2**20, (seconds, peak)
    assert specs[0].values["x"] == Range("x", "0:1:1000000", 1_000_000)
    assert specs[0].points == 1_000_000


@pytest.mark.parametrize("text", ["-2:2:5", " 0 : 1 : 3 ", "1e-3:2.5:7", "3:3:1", "+1:-1:2"])
def test_a_range_expands_exactly_as_parse_value_does(text):
    (spec,) = parse_check_file(f'[[check]]\nname = "r"\nexpr = "x"\nsweep.x = "{text}"\n'
                               'finite = true\n')
    assert isinstance(spec.values["x"], Range)
    expected = parse_value("x", text)
    assert spec.values["x"].expand() == (expected if isinstance(expected, tuple) else (expected,))


@pytest.mark.parametrize("text", ["1:2", "a:2:5", "0:b:5", "0:1:0", "0:1:20000000", "0:inf:5",
                                  "0:1:x", "1:2:3:4", "0:1:-1"])
def test_a_bad_range_is_the_error_parse_value_gives(text):
    with pytest.raises(CheckFileError) as caught:
        parse_check_file(f'[[check]]\nname = "r"\nexpr = "x"\nsweep.x = "{text}"\nfinite = true\n')
    with pytest.raises(Exception) as direct:
        parse_value("x", text)
    assert (caught.value.message, caught.value.line) == (direct.value.message, 4)


# --- the shape of `check` -------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "line"), [
    ("rtol = 1\ncheck = 3\n", 2),
    ('# checks\n\n[check]\nname = "a"\nexpr = "x"\nat.x = 1\nvalue = 1\n', 3),
    ('check.name = "a"\n', 1),
    ("check = [1, 2]\n", 1),
    ('check = ["a"]\n', 1),
])
def test_check_that_is_not_an_array_of_tables_says_so(tmp_path, text, line):
    path = tmp_path / "shape.toml"
    path.write_text(text)
    result = check(str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"error: {path}:{line}: check: `check` must be an array of tables: write each check as "
        "[[check]]"), result.stderr


def test_no_checks_is_still_no_checks():
    for text in ("rtol = 1\n", "check = []\n"):
        with pytest.raises(CheckFileError, match="no checks in the file"):
            parse_check_file(text)


def test_an_array_of_inline_tables_is_still_fine():
    (spec,) = parse_check_file('check = [{name = "a", expr = "x", at = {x = 1}, value = 1}]\n')
    assert spec.name == "a" and run_check(spec).ok


def test_a_byte_order_mark_is_ignored(tmp_path):
    path = tmp_path / "bom.toml"
    path.write_bytes(b'\xef\xbb\xbf[[check]]\nname = "a"\nexpr = "x*2"\nat = {x = 1}\n'
                     b"value = 2\nvalue2 = 1\n")
    with pytest.raises(CheckFileError) as caught:  # lines still count from the first
        load_check_file(str(path))
    assert (caught.value.line, caught.value.key) == (6, "value2")
    path.write_bytes(b'\xef\xbb\xbf[[check]]\nname = "a"\nexpr = "x*2"\nat = {x = 1}\nvalue = 2\n')
    result = check(str(path))
    assert result.exit_code == 0, result.output


# --- a budget per run -------------------------------------------------------------------------

def many_sweeps(count: int, points: int = 1_000_000) -> str:
    return "".join(f'[[check]]\nname = "c{i}"\nexpr = "x*2"\nsweep = {{x = "0:1:{points}"}}\n'
                   f'value = "2*x"\n\n' for i in range(count))


def test_a_run_past_the_budget_is_refused_before_anything_runs(tmp_path, monkeypatch):
    # 100 checks of 10^6 points (8 KB of TOML) took 62 s and 4.1 GB
    path = tmp_path / "big.toml"
    path.write_text(many_sweeps(100))
    monkeypatch.setattr(run_module, "run_check", lambda spec: pytest.fail("a check ran"))
    started = time.perf_counter()
    result = check(str(path))
    assert time.perf_counter() - started < 10
    assert result.exit_code == 2 and result.stdout == ""
    specs = load_check_file(str(path))
    total = sum(check_cells(spec) for spec in specs)
    assert total > MAX_RUN_CELLS
    assert result.stderr.splitlines() == [
        f"error: usage error: the 100 checks of 1 file are too large for one run: an estimated "
        f"{total:,} cells (nodes x points x passes), and a run may have at most "
        f"{MAX_RUN_CELLS:,}",
        f"  hint: run fewer files at a time, or some of the checks with -k PATTERN (the "
        f"largest: 'c0', {check_cells(specs[0]):,})"]


def test_the_budget_counts_every_file_of_the_run(tmp_path, monkeypatch):
    files = []
    for number in range(2):
        files.append(tmp_path / f"part{number}.toml")
        files[-1].write_text(many_sweeps(2, points=1000))
    each = sum(check_cells(spec) for spec in load_check_file(str(files[0])))
    monkeypatch.setattr(run_module, "MAX_RUN_CELLS", each + 1)
    monkeypatch.setattr(run_module.run_budget_error, "__defaults__", (each + 1,))
    result = check(*map(str, files), "--json")
    document = json.loads(result.stdout)
    assert result.exit_code == 2 and document["checks"] == []
    (error,) = document["errors"]
    assert error["kind"] == "usage" and error["file"] is None
    assert error["message"].startswith("the 4 checks of 2 files are too large for one run")
    assert check(str(files[0])).exit_code == 0  # one file at a time fits
    assert check(*map(str, files), "-k", "c0").exit_code == 0  # as do some of the checks


def test_a_check_too_large_alone_is_named_with_its_line(tmp_path):
    # the finite-difference check costs two passes per variable: 2,000 variables at one point
    # took 145 s, though points x nodes is only 4,000
    names = [f"x{i}" for i in range(2000)]
    path = tmp_path / "wide.toml"
    path.write_text(f'[[check]]\nname = "wide"\nexpr = "{" + ".join(names)}"\n'
                    f'at = {{{", ".join(f"{n} = 1" for n in names)}}}\nvalue = 2000\n')
    result = check(str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: usage error: check 'wide' ({path}:1) is too large "
                                    "to run: an estimated ")
    assert "give it fewer points, or split its formula" in result.stderr


def test_the_estimate_of_the_shipped_examples_is_far_below_the_budget():
    specs = load_check_file("examples/checks.toml")
    assert run_budget_error(specs) is None
    assert sum(check_cells(spec) for spec in specs) < MAX_RUN_CELLS // 100


# --- a block of points at a time ----------------------------------------------------------------

BLOCKED = """
[[check]]
name = "wrong here and there"
expr = "sin(x)*y"
sweep = {x = "-3:3:301", y = [1, 2]}
derivative = {x = "cos(x)*y*(1 + 1e-3*x*x)"}
value = "sin(x)*y + 1e-5*x"

[[check]]
name = "log, skipped where x <= 0"
expr = "log(x)*y"
sweep = {x = "-1:1:200", y = [1, 2, 3]}
finite = false
derivative = {x = "y/x"}

[[check]]
name = "log, a numeric error"
expr = "log(x)"
sweep = {x = "-1:1:201"}
value = "log(x)"

[[check]]
name = "every point fails"
expr = "log(x)"
sweep = {x = "-2:-1:70"}
finite = false
value = 1

[[check]]
name = "fixed and swept, defaults"
expr = "a = 2; a*x + y*z"
at = {y = 3}
sweep = {z = [1, 2, 3], x = "0:1:11"}
gradients = {y = 2}
"""


def records(specs):
    out = []
    for spec in specs:
        record = outcome_record(run_check(spec))
        record.pop("seconds")
        out.append(record)
    return out


def test_blocks_of_points_find_what_one_block_finds(monkeypatch):
    specs = parse_check_file(BLOCKED, "blocks.toml")
    whole = records(specs)
    assert [r["status"] for r in whole] == [1, 0, 3, 3, 1]
    for size in (2, 7, 64):
        monkeypatch.setattr(run_module, "CHECK_BLOCK_POINTS", size)
        assert records(specs) == whole, size


def test_the_blocks_are_the_grid_in_order():
    (spec,) = parse_check_file('[[check]]\nname = "g"\nexpr = "x + y + z"\nat = {y = 5}\n'
                               'sweep = {x = [1, 2, 3], z = "0:1:3"}\nfinite = true\n')
    columns = list(check_blocks(spec))
    assert len(columns) == 1
    assert columns[0]["x"].tolist() == [1, 1, 1, 2, 2, 2, 3, 3, 3]  # the first varies slowest
    assert columns[0]["z"].tolist() == [0, 0.5, 1] * 3
    assert columns[0]["y"].tolist() == [5] * 9


def test_a_block_holds_a_bounded_number_of_cells():
    (spec,) = parse_check_file(
        f'[[check]]\nname = "big"\nexpr = "{" + ".join(f"sin({k}*x)" for k in range(1, 200))}"\n'
        'sweep = {x = "0:1:30000"}\nfinite = true\n')
    nodes = len(spec.program.nodes)
    assert block_points(spec) * nodes <= CHECK_BLOCK_CELLS
    sizes = [columns["x"].size for columns in check_blocks(spec)]
    assert sum(sizes) == 30_000 and max(sizes) == block_points(spec) < 30_000


def test_the_memory_of_a_check_does_not_grow_with_its_points():
    # before: one sweep over all points, 378 MB for 10^6 points of an 11-node expr
    def peak(points: int) -> int:
        (spec,) = parse_check_file(f'[[check]]\nname = "m"\nexpr = "sin(x)*exp(-x*x/2) + x"\n'
                                   f'sweep = {{x = "-3:3:{points}"}}\nfinite = true\n')
        tracemalloc.start()
        try:
            assert run_check(spec).ok
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    points = 8 * CHECK_BLOCK_POINTS
    small, large = peak(2 * CHECK_BLOCK_POINTS), peak(points)
    # what grows is the range's values (8 bytes a point as an array, 32 as Python floats while
    # they are made); the evaluation stays at a block's size
    assert large < small + 40 * points, (small, large)
    assert large < 100 * 2**20, large
