"""Coverage-guided fuzz target: bytes -> parse -> graph -> forward -> backward -> check -> render,
and the same text as a check file -> load -> run -> JUnit XML and GitHub annotations.

Run with atheris (``pip install atheris``)::

    python fuzz/fuzz_gradcli.py -max_total_time=3600 -max_len=2048 fuzz/corpus

or, where atheris cannot be installed, as a plain loop over random and mutated inputs::

    python fuzz/fuzz_gradcli.py --plain --seconds 600

A crash is any exception other than a documented ``GradcliError``, a JSON record that is not
strict JSON, a non-finite number in a result, a raw ESC from the input reaching the Rich
output, DOT or Mermaid with an unescaped special character in a label, JUnit XML that the stdlib
parser rejects, or an annotation that could start a second workflow command. Keep each crasher
in ``REGRESSIONS`` in ``tests/test_grammar_fuzz.py``.
"""

from __future__ import annotations

import io
import json
import math
import random
import re
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import gradcli
from gradcli.output.records import dumps, error_record, result_record

# Values the variables get: ordinary, tiny, huge, zero, negative -- where domains and overflow bite.
VALUES = (0.5, -1.25, 2.0, 0.0, 3e-3, -7.0, 1e300, -1e-300, 1.0, math.pi)
MAX_SOURCE = 4096  # longer inputs only slow the fuzzer down; limits are tested in tests/
MAX_CHECK_POINTS = 64  # a check file's sweep larger than this is not run here (only loaded)
PICTURE_NODES = 40


def exercise(data: bytes) -> None:
    """Everything gradcli does with one input; raises AssertionError or a crash on a bug."""
    seed, text = (data[0] if data else 0), data[1:MAX_SOURCE].decode("utf-8", errors="replace")
    if seed >= 0xF0:  # the rest is the text of a check file
        exercise_check_file(text)
        return
    if seed >= 0xE0:  # the program is the expr of a check file, named by the program itself
        exercise_check_file(_check_file_around(text, seed))
    try:
        program = gradcli.parse(text)
        values = {name: VALUES[(seed + i) % len(VALUES)]
                  for i, name in enumerate(program.variables)}
        _check_pictures(program, {})  # structure only
        result = gradcli.evaluate(program, values, node_check_limit=60)
    except gradcli.GradcliError as error:
        _check_error(error, text)
        return
    _check_pictures(program, values)
    assert math.isfinite(result.value)
    assert all(math.isfinite(g) for g in result.gradients.values())
    record = json.loads(dumps(result_record(result, text, line=1)))
    assert record["value"] == result.value
    _check_rich(result, error=None)


def _check_error(error: gradcli.GradcliError, text: str) -> None:
    assert error.status in (gradcli.ExitStatus.USAGE, gradcli.ExitStatus.NUMERIC), error
    assert "\n" not in error.one_line(), repr(error.one_line())
    json.loads(dumps(error_record(error, text, line=1)))
    _check_rich(None, error=error)


def _check_rich(result: gradcli.Result | None, error: gradcli.GradcliError | None) -> None:
    """Render to a terminal-like console without colours: any ESC left came from the input."""
    from rich.console import Console

    from gradcli.gradcheck.evaluation import LineOutcome
    from gradcli.output.batch_lines import batch_line
    from gradcli.output.errors import error_view
    from gradcli.output.views import result_view

    console = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=100)
    if error is not None:
        console.print(error_view(error))
        console.print(batch_line(LineOutcome(1, "", error=error)))
    else:
        assert result is not None
        console.print(result_view(result))
        console.print(batch_line(LineOutcome(1, "", result=result)))
    output = console.file.getvalue()
    assert "\x1b" not in output and "\x07" not in output, repr(output[:300])


def _check_pictures(program: gradcli.Program, values: dict[str, float]) -> None:
    """DOT and Mermaid of the program: every label quoted and escaped for its format."""
    from gradcli.output.pictures import prepare, to_dot, to_mermaid

    try:
        picture = prepare(program, values)
    except gradcli.GradcliError:
        return
    dot = to_dot(picture, PICTURE_NODES)
    for line in dot.splitlines()[4:-1]:
        label = re.search(r'label=("(?:[^"\\\x00-\x1f]|\\[\\"n])*")', line)
        assert label is not None or ("->" in line and "label" not in line), repr(line)
    assert "\x1b" not in dot and "\r" not in dot, repr(dot[:300])
    mermaid = to_mermaid(picture, PICTURE_NODES)
    for label in re.findall(r'"([^"\n]*)"', mermaid):
        assert not re.search(r'[<>`\[\]{}|\\\x00-\x1f]', label.replace("<br>", "")), label
    assert mermaid.count('"') % 2 == 0


def _check_file_around(expr: str, seed: int) -> str:
    """A check file whose name and expr are the fuzzed text (JSON strings are TOML strings)."""
    sweep = 'sweep = {x = "-1:1:5"}' if seed & 1 else "at = {x = 0.5}"
    return (f"[[check]]\nname = {json.dumps(expr)}\nexpr = {json.dumps(expr)}\n{sweep}\n"
            f"finite = {'true' if seed & 2 else 'false'}\n")


def exercise_check_file(text: str) -> None:
    """TOML text -> checks -> outcomes (small sweeps only) -> JUnit XML and annotations."""
    from gradcli.formulas.files import CheckFileError, parse_check_file
    from gradcli.formulas.outcomes import outcome_record
    from gradcli.formulas.reports import github_annotations, junit_xml
    from gradcli.formulas.run import run_checks

    specs, errors = [], []
    try:
        specs = parse_check_file(text, "fuzz\x1b\n:,%.toml")
    except CheckFileError as error:
        assert "\n" not in error.one_line(), repr(error.one_line())
        errors.append(error)
    small = [s for s in specs if _points(s) <= MAX_CHECK_POINTS]
    outcomes = list(run_checks(small))
    for outcome in outcomes:
        assert outcome.status in (0, 1, 3), outcome
        json.loads(dumps(outcome_record(outcome)))
    ET.fromstring(junit_xml(outcomes, errors).encode("utf-8"))  # raises on invalid XML
    for line in github_annotations(outcomes, errors):
        assert line.startswith("::error ") and not re.search(r"[\r\n]", line), repr(line)
        properties = line[len("::error "):].split("::", 1)[0]
        assert all(re.fullmatch(r"(file|line|title)=[^:,]*", p)
                   for p in properties.split(",")), repr(line)


def _points(spec) -> int:
    return math.prod(len(v) if isinstance(v, tuple) else 1 for v in spec.values.values())


def _seeds() -> list[bytes]:
    root = Path(__file__).resolve().parents[1]
    seeds = [b"\x00(x*W+b-t)**2", b"\x01u = x*W; z = u + b; err = z - t; err*err",
             b"\x02pow(x, y) + atan2(y, x) - min(x, y)*max(x, 2)", b"\x03-x**2^3/sqrt(x)",
             b"\xe1x*x + log(x)", b"\xe2sin(x)/x",
             # issue 15: piecewise definitions and the program's own functions
             b"\x04where(x > 0, log(x), 0) + (x if x <= y and not y == 2 else -x)",
             b"\x05f(a, b) = a*b + 1; g(a) = f(a, a) if a != 0 else 1; g(x) + f(y, x)",
             b"\xe3leaky(v) = v if v > 0 else 0.01*v; leaky(x)"]
    for path in (root / "examples").glob("*"):
        if path.is_file():
            seeds.append(b"\x00" + path.read_bytes())
            if path.suffix == ".toml":
                seeds.append(b"\xf0" + path.read_bytes())
    return seeds


def _mutate(data: bytes, rng: random.Random) -> bytes:
    alphabet = b"xyW()+-*/^,;=.e0123456789 \n\t\r\x00\x1b[]#" + b"sin(exp(log(pow(" + b"\xff"
    chunk = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        where = rng.randint(0, len(chunk))
        action = rng.random()
        if action < 0.4:
            chunk[where:where] = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
        elif action < 0.6 and chunk:
            del chunk[where:where + rng.randint(1, 4)]
        elif action < 0.8:
            chunk[where:where] = data[rng.randint(0, len(data)):][: rng.randint(1, 16)]
        else:
            chunk[where:where] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
    return bytes(chunk[:MAX_SOURCE])


def plain_loop(seconds: float, seed: int = 0) -> int:
    """Random and mutated inputs for ``seconds``; returns how many were run. Stops at a crash."""
    rng = random.Random(seed)
    pool = _seeds()
    runs, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        data = _mutate(rng.choice(pool), rng)
        try:
            exercise(data)
        except BaseException:
            print(f"crasher: {data!r}", file=sys.stderr)
            raise
        runs += 1
        if rng.random() < 0.05 and len(pool) < 5000:
            pool.append(data)
    return runs


def main() -> None:
    if "--plain" in sys.argv:
        flag = "--seconds"
        seconds = float(sys.argv[sys.argv.index(flag) + 1]) if flag in sys.argv else 60.0
        print(f"{plain_loop(seconds)} inputs, no crash")
        return
    import atheris

    atheris.instrument_all()
    atheris.Setup(sys.argv, exercise)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
