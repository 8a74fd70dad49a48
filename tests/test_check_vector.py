"""The vectorised first pass of the check equals the scalar check, node by node."""

from __future__ import annotations

import math
import random

import pytest

import gradcli
from gradcli.engine.node import last_uses
from gradcli.engine.replay import Replayer
from gradcli.gradcheck import check
from gradcli.gradcheck.float_columns import replay_columns

np = pytest.importorskip("numpy")

ARITHMETIC = [
    "(x*W+b-t)**2",
    "u = x*W; z = u + b; err = z - t; err*err",
    "a = x*y; b = a/(1 + x*x); (b - a)*(b + y) - relu(x - y)",
    "(x + 1e8) - 1e8",
]
TRANSCENDENTAL = [
    "sin(x)*exp(-y**2) + log(1 + x**2*y**2)",
    "sigmoid(x*y) + softplus(y - x) + atan2(y, x + 3) + hypot(x, y) + tanh(x)",
    "sqrt(x)*log(x) + max(x, y) + abs(y)**3",
]
POINT = {"x": 0.7, "y": -1.3, "z": 0.45, "W": 3.0, "b": 1.0, "t": 8.0}


def _random_program(rng: random.Random, size: int) -> str:
    """A random program of ``size`` operations over x, y and z (no recursion)."""
    terms = [rng.choice("xyz") for _ in range(size + 1)]
    while len(terms) > 1:
        a, b = terms.pop(), terms.pop(rng.randrange(len(terms)))
        template = rng.choice(["({} + {})", "({} - {})", "({} * {})", "{}/(1 + {}**2)",
                               "relu({} - {})", "max({}, {})"])
        terms.append(template.format(a, b))
    return terms[0]


def _scalar_and_vector(text: str, monkeypatch) -> tuple:
    """The same program checked with the vector pass disabled and with it always on."""
    reports = []
    for always in (10**18, 0):
        monkeypatch.setattr(check, "_COLUMNS_FROM", always)
        reports.append(gradcli.evaluate(text, POINT).check)
    return reports[0], reports[1]


@pytest.mark.parametrize("text", ARITHMETIC + [_random_program(random.Random(k), 30)
                                               for k in range(6)])
def test_vector_check_equals_scalar_check_exactly_on_arithmetic(text, monkeypatch):
    scalar, vector = _scalar_and_vector(text, monkeypatch)
    assert set(scalar.nodes) == set(vector.nodes) and scalar.nodes
    for index, expected in scalar.nodes.items():
        assert vector.nodes[index] == expected, index  # IEEE + - * / max: bitwise the same
    assert vector.gradients == scalar.gradients


@pytest.mark.parametrize("text", TRANSCENDENTAL)
def test_vector_check_equals_scalar_check_on_functions(text, monkeypatch):
    point = dict(POINT, x=1.7, y=0.4)
    monkeypatch.setattr(check, "_COLUMNS_FROM", 10**18)
    scalar = gradcli.evaluate(text, point).check
    monkeypatch.setattr(check, "_COLUMNS_FROM", 0)
    vector = gradcli.evaluate(text, point).check
    for index, expected in scalar.nodes.items():
        got = vector.nodes[index]
        assert (got.ok, got.method, got.step) == (expected.ok, expected.method, expected.step)
        # NumPy's and libm's sin/exp/log may differ in the last bit; the difference quotient
        # divides that by h ~ 6e-6.
        assert got.numeric == pytest.approx(expected.numeric, rel=1e-8, abs=1e-9)
        assert got.tolerance == pytest.approx(expected.tolerance, rel=1e-6)


def test_replay_columns_equals_replay_and_its_largest_value():
    program = gradcli.parse("a = x*y; b = a/(1 + x*x); c = b - a; c*(b + y) + a")
    gradcli.evaluate(program, POINT, check=False)
    nodes = program.nodes
    pinned = [n.index for n in nodes if n.needs_grad]
    shifted = [nodes[i].value + 0.25 * (k + 1) for k, i in enumerate(pinned)]
    columns = replay_columns(program, pinned, shifted)
    for k, (index, value) in enumerate(zip(pinned, shifted, strict=True)):
        assert (columns.output[k], columns.largest[k]) == Replayer(nodes).replay(index, value)
    assert all(math.isfinite(v) for v in columns.largest.tolist())


def _arithmetic_program(rng: random.Random, operations: int) -> str:
    """A random program of + - * / and negation over x, y, z, with a function now and then
    (whose NumPy form may round differently from libm's: ``where`` keeps those columns)."""
    terms = [rng.choice("xyz") for _ in range(operations + 1)]
    while len(terms) > 1:
        a, b = terms.pop(rng.randrange(len(terms))), terms.pop(rng.randrange(len(terms)))
        kind = rng.random()
        terms.append(f"({a})/(1 + ({b})*({b}))" if kind < 0.2 else
                     f"sin({a}) - {b}" if kind < 0.3 else
                     f"-({a}) {rng.choice('+-*')} {b}" if kind < 0.4 else
                     f"({a} {rng.choice('+-*')} {b})")
    return terms[0]


@pytest.mark.parametrize("seed", range(12))
def test_replay_columns_equals_replay_on_random_arithmetic(seed):
    """Columns skip ``where`` for the IEEE rows (a column whose operands kept their values
    computes the node's own value to the bit): each column still equals the scalar replay of
    its pinned node, bit for bit, and so does the largest value it saw."""
    rng = random.Random(seed)
    program = gradcli.parse(_arithmetic_program(rng, rng.randint(5, 30)))
    gradcli.evaluate(program, POINT, check=False)
    nodes = program.nodes
    pinned = [n.index for n in nodes if n.needs_grad]
    shifted = [nodes[i].value * (1 + 1e-3 * (k + 1)) + 1e-7 for k, i in enumerate(pinned)]
    columns = replay_columns(program, pinned, shifted)
    for k, (index, value) in enumerate(zip(pinned, shifted, strict=True)):
        replayer = Replayer(nodes)
        if any(node.op.name == "sin" for node in replayer.affected(index)):
            continue  # a recomputed sin: NumPy's may differ from libm's in the last bit
        assert (columns.output[k], columns.largest[k]) == replayer.replay(index, value)


def test_a_domain_error_in_one_column_marks_only_that_column():
    program = gradcli.parse("log(x) + y*y")
    gradcli.evaluate(program, {"x": 1.0, "y": 2.0}, check=False)
    x, y = program.variables["x"].index, program.variables["y"].index
    columns = replay_columns(program, [x, x, y], [-1.0, 2.0, 3.0])
    assert [not math.isfinite(v) for v in columns.largest.tolist()] == [True, False, False]
    assert columns.output[2] == 9.0


def test_a_wrong_gradient_still_fails_with_the_vector_pass(monkeypatch):
    monkeypatch.setattr(check, "_COLUMNS_FROM", 0)
    program = gradcli.parse("x*x*y")
    result = gradcli.evaluate(program, {"x": 3.0, "y": 2.0}, check=False)
    program.variables["x"].grad += 1e-3  # a wrong analytic gradient
    report = check.check_gradients(program)
    assert not report.gradients["x"].ok and report.gradients["y"].ok
    assert result.value == 18.0


def test_an_overflowing_central_difference_is_not_a_pass_in_the_vector_pass(monkeypatch):
    # f(v + h) and f(v - h) are +-1.2e308: their difference overflows at the base step, and
    # inf <= inf must not count as agreement; both paths take the next step, 16 times smaller.
    text, point = "2e13 * (x - 1e300) + y", {"x": 1e300, "y": 3.0}
    reports = []
    for always in (10**18, 0):
        monkeypatch.setattr(check, "_COLUMNS_FROM", always)
        reports.append(gradcli.evaluate(text, point).check)
    scalar, vector = reports
    assert vector.gradients == scalar.gradients
    checked = vector.gradients["x"]
    assert checked.ok and math.isfinite(checked.numeric)
    assert checked.step == pytest.approx(6.0554544523933e294 / 16, rel=1e-12)
    assert checked.numeric == pytest.approx(2e13, rel=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_replay_columns_equals_replay_when_values_wait_packed(seed, monkeypatch):
    """Statements read again only by a final sum far below (W3's shape) wait packed (their
    recomputed columns only), and the largest values go through many small blocks: each column
    is still its scalar replay, bit for bit (relu's NumPy form is exact, but not in ``_EXACT``:
    ``where`` keeps its other columns)."""
    from gradcli.gradcheck import float_columns as module

    monkeypatch.setattr(module, "_BLOCK_CELLS", 7)
    monkeypatch.setattr(module, "_FAR", 8)
    rng = random.Random(seed)
    names = ["x", "y", "z"]
    statements = []
    for k in range(40):
        a, b, c = (rng.choice(names[-6:]) for _ in range(3))
        statements.append(f"t{k} = {a}*{b}/(1 + {c}*{c}) - relu({a} - 0.3)*0.25")
        names.append(f"t{k}")
    program = gradcli.parse("; ".join(statements) + "; " + " + ".join(names[3:]))
    gradcli.evaluate(program, POINT, check=False)
    nodes = program.nodes
    last, before = last_uses(nodes)
    assert sum(last[k] - before[k] > 8 for k in range(len(nodes)) if nodes[k].needs_grad) > 20
    pinned = [n.index for n in nodes if n.needs_grad][::7]
    shifted = [nodes[i].value * (1 + 1e-3 * (k + 1)) + 1e-7 for k, i in enumerate(pinned)]
    columns = replay_columns(program, pinned, shifted)
    for k, (index, value) in enumerate(zip(pinned, shifted, strict=True)):
        assert (columns.output[k], columns.largest[k]) == Replayer(nodes).replay(index, value)


def test_a_line_s_record_does_not_depend_on_whether_numpy_is_loaded():
    """Found by a helper: a --cluster batch differed from the local one in the last bits of
    the check's numbers, because a Dask worker has NumPy loaded and the check then took the
    vectorised replay. A fresh process without NumPy and one with it give the same bytes."""
    import subprocess
    import sys

    line = " + ".join(f"sin(x*{k})*exp(y/({k}+1))" for k in range(1, 120))
    probe = ("import sys\n{}\nfrom gradcli.runs.batch import line_record\n"
             "from gradcli.gradcheck.evaluation import EvalSettings\n"
             "print(line_record(1, sys.argv[1], {{'x': 1.0, 'y': 2.0}},"
             " EvalSettings(node_check_limit=0, nodes=False)))")
    records = [subprocess.run([sys.executable, "-c", probe.format(first), line],
                              capture_output=True, text=True, check=True).stdout
               for first in ("", "import numpy")]
    assert records[0] == records[1] and '"numeric"' in records[0]
