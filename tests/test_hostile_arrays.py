"""Arrays under hostile input (issue 27): one whole record per line whatever a line holds, and
brackets nested deeper than an array may be refused with one line on every path.

Real subprocesses: a traceback, a missing record or a half-written one only shows for real. The
expected records are independent of gradcli: line numbers in order, JSON that parses, and the
values of ``sum(x*k)`` written here in closed form.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcli
from gradcli.errors import UsageError
from gradcli.limits import MAX_ARRAY_DIMS

GRADCLI = [sys.executable, "-m", "gradcli"]
ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "GRADCLI_CLUSTER": ""}


def run(args: list[str], stdin: str = "", env: dict | None = None,
        timeout: float = 120) -> tuple[int, str, str]:
    done = subprocess.run([*GRADCLI, *args], input=stdin.encode(), capture_output=True,
                          env=env or ENV, timeout=timeout)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def one_error_line(status: int, err: str, words: str) -> None:
    """A usage error of one line (and its hint), never a traceback."""
    assert status == 2, err
    assert "Traceback" not in err and words in err, err
    assert len(err.strip().splitlines()) <= 2, err


# --- one record per line --------------------------------------------------------------------

HOSTILE = {500: f"y = {nested(70)}; sum(y)*x", 301: "sum(sqrt(x))", 302: "2*sum(sqrt(x))",
           303: f"y = {nested(64)}; sum(y)*x", 304: f"sum({nested(70, 'x')})"}


def hostile_batch(count: int) -> str:
    return "".join(HOSTILE.get(i, f"sum(x*{i})") + "\n" for i in range(1, count + 1))


def assert_whole_records(out: str, count: int) -> list[dict]:
    """One JSON record per line, numbered 1..count in order; the plain lines' values."""
    records = [json.loads(line) for line in out.splitlines()]
    assert [record["line"] for record in records] == list(range(1, count + 1))
    for record in records:
        if record["line"] not in HOSTILE:
            assert record["error"] is None
            assert record["value"] == pytest.approx(record["line"] * (1e-300 + 1))
    return records


@pytest.mark.parametrize("where", [[], ["--cluster", "local:2"]], ids=["local", "cluster"])
def test_hostile_array_lines_each_get_one_record_in_order(where):
    if where:
        pytest.importorskip("distributed", reason="the cluster extra is not installed")
    count = 1001
    status, out, err = run(["eval", "-", "--x", "[1e-300, 1]", "--json", *where],
                           hostile_batch(count), env={**ENV, "GRADCLI_JOBS": "2"})
    assert status == 2 and "Traceback" not in err, err
    records = assert_whole_records(out, count)
    for line in (500, 303, 304):
        assert records[line - 1]["error"]["kind"] == "usage"
        assert "dimensions" in records[line - 1]["error"]["message"]
    for line in (301, 302):  # the check fails near the domain's edge: a record says so
        assert records[line - 1]["check"]["ok"] is False


@pytest.mark.parametrize("program, point", [("sum(sqrt(x))", "[1e-20, 1]"),
                                            ("sum(sqrt(x))", "[1e-300, 1]")])
def test_a_failed_array_check_near_an_edge_is_a_json_record(program, point):
    status, out, err = run(["eval", program, "--x", point, "--json"])
    assert status == 1, err
    record = json.loads(out)
    assert record["check"]["ok"] is False
    assert isinstance(record["check"]["gradients"]["x"]["numeric"], float)


def test_a_failed_array_check_in_a_check_file_is_a_json_report(tmp_path):
    checks = tmp_path / "edge.toml"
    checks.write_text('[[check]]\nname = "edge"\nexpr = "sum(sqrt(x))"\n'
                      'at = {x = [1e-20, 1]}\nfinite = true\n')
    status, out, err = run(["check", str(checks), "--json"])
    assert status == 1, err
    report = json.loads(out)
    assert report["ok"] is False and report["checks"][0]["name"] == "edge"


# --- brackets nested too deep ----------------------------------------------------------------

@pytest.mark.parametrize("depth", [MAX_ARRAY_DIMS + 1, 64, 70, 100_000])
@pytest.mark.parametrize("where", ["literal", "expression", "option", "json", "toml",
                                   "check at", "check expr"])
def test_brackets_nested_too_deep_are_one_usage_error(where, depth, tmp_path):
    program = tmp_path / "p.grad"
    args = ["eval", "-f", str(program), "--x", "1"]
    if where in ("literal", "expression"):
        program.write_text(f"y = {nested(depth, '1' if where == 'literal' else 'x')}\nsum(y)*x\n")
    elif where == "option":
        program.write_text("sum(y)\n")
        args = ["eval", "-f", str(program), "--y", nested(min(depth, 20_000))]
    elif where in ("json", "toml"):
        program.write_text("sum(y)*x\n")
        values = tmp_path / f"v.{where}"
        values.write_text(f'{{"y": {nested(depth)}}}' if where == "json" else
                          f"y = {nested(depth)}\n")
        args += ["--values", str(values)]
    else:
        checks = tmp_path / "c.toml"
        at, expr = (nested(depth), "sum(y)") if where == "check at" else (
            "1", f"z = {nested(depth)}; sum(z)*y")
        checks.write_text(f'[[check]]\nname = "deep"\nexpr = "{expr}"\nat = {{y = {at}}}\n'
                          "finite = true\n")
        args = ["check", str(checks)]
    status, _, err = run(args)
    one_error_line(status, err, "nested too deep" if depth == 100_000 and where in (
        "json", "toml", "check at") else f"more than {MAX_ARRAY_DIMS} dimensions")


@pytest.mark.parametrize("rows", [1, 6])
def test_lists_that_hold_themselves_are_refused_at_once(rows):
    """From Python, a list that holds itself (``rows`` times) is too deep, said before any row
    is read twice: a breadth-first read of 6 shared rows would visit 6**11 lists."""
    loop: list = []
    loop.extend([loop] * rows)
    with pytest.raises(UsageError, match=f"more than {MAX_ARRAY_DIMS} dimensions"):
        gradcli.evaluate("sum(x)", {"x": loop})
    shared = [[[1.0, 2.0]] * 3] * 4  # rows shared but not too deep: read as the array it is
    assert gradcli.evaluate("sum(x)", {"x": shared}).value == 36.0


@pytest.mark.parametrize(("value", "words"), [
    ([[1, 2], 3], "element [1] is a number, element [0] has 2"),
    ([1, [2, 3]], "element [1] has shape 2, element [0] is a number"),
    ([[1, 2], [3]], "element [1] has shape 1, element [0] has 2"),
    ([[[1], [2]], [[3], 4]], "element [1, 1] is a number, element [1, 0] has 1"),
])
def test_a_ragged_array_names_the_two_elements_that_differ(value, words):
    with pytest.raises(UsageError, match=re.escape(f"the value of x is not rectangular: {words}")):
        gradcli.evaluate("sum(x)", {"x": value})


def test_the_deepest_array_allowed_runs_everywhere(tmp_path):
    """At the limit every path works: eval with its check, a Hessian and a check file."""
    deep = nested(MAX_ARRAY_DIMS - 1, "[1, 2]")
    status, out, err = run(["eval", "sum(y*x)", "--y", deep, "--x", "3", "--json"])
    assert status == 0, err
    assert json.loads(out)["value"] == 9.0 and json.loads(out)["gradients"]["x"] == 3.0
    status, out, err = run(["eval", "sum(y*y)", "--y", deep, "--hessian", "--json"])
    assert status == 0, err
    status, out, err = run(["eval", f"y = {deep}; sum(y*x)", "--x", "3", "--json"])
    assert status == 0, err
    checks = tmp_path / "c.toml"
    checks.write_text(f'[[check]]\nname = "deep"\nexpr = "sum(y*x)"\nat = {{y = {deep}, '
                      "x = 3}\nvalue = 9\n")
    status, out, err = run(["check", str(checks)])
    assert status == 0, err


@pytest.mark.parametrize("text, words", [
    ('{"x": {"a": 1}}', "the value of x is an object, not a number"),
    ('{"x": [{"a": 1}]}', "the value of x has an object at [0], not a number"),
    ("[x]\na = 1\n", "the value of x is a table, not a number")])
def test_a_value_that_is_a_table_says_so(text, words, tmp_path):
    values = tmp_path / "v.txt"
    values.write_text(text)
    status, _, err = run(["eval", "x*2", "--values", str(values)])
    one_error_line(status, err, words)


# --- a NaN is never a value ------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    (["sum(inv(eye(3)*1e-310))"], "inv(eye(3)*1e-310)"),  # 1/1e-310 overflows: LAPACK says nothing
    (["logdet(A)", "--A", "[[1e-310, 0], [0, 1e-310]]", "--no-check", "--json"],
     "the derivative of logdet is not finite"),  # its gradient inv(A)' overflows
])
def test_linear_algebra_past_the_floats_is_a_numeric_error(args, words):
    status, out, err = run(["eval", *args])
    assert status == 3 and "Traceback" not in err and words in err, err
    assert "nan" not in out.lower()
    if "--json" in args:
        assert json.loads(out)["error"]["kind"] == "domain"


@pytest.mark.parametrize("args", [["clip(x, 3, 1)", "--x", "2"],
                                  ["sum(clip(x, 3, 1))", "--x", "[2, 5]"],
                                  ["sum(clip(x, lo, 1))", "--x", "[2, 5]", "--lo", "[0, 3]"]])
def test_clip_with_its_bounds_out_of_order_is_one_error_for_scalars_and_arrays(args):
    status, _, err = run(["eval", *args])
    assert status == 3 and "Traceback" not in err, err
    assert "clip's lower bound is above its upper bound" in err


# Reductions at the ends of the float range, against closed forms written here: norm scales by
# the largest element (sqrt(sum(x*x)) overflowed at 1e200 and underflowed to 0 at 1e-200), and
# logsumexp's gradient is each element's share of the sum, normalised by the sum itself (exp(x -
# out) carried out's rounding, about |x| ulps).
@pytest.mark.parametrize(("program", "point", "value", "gradient"), [
    ("norm(x)", "[1e200, 1e200]", 2**0.5 * 1e200, [2**-0.5] * 2),
    ("norm(x)", "[3e-300, 4e-300]", 5e-300, [0.6, 0.8]),
    ("norm(W)", "[[3e200, 0], [0, 4e200]]", 5e200, [0.6, 0.0, 0.0, 0.8]),
    ("logsumexp(x)", "[1000, 1000]", 1000 + 0.6931471805599453, [0.5, 0.5]),
    # prod multiplies mantissas and adds exponents: 1e-200 * 1e-200 underflowed to 0 first
    ("prod(x)", "[1e-200, 1e-200, 1e200]", 1e-200, [1.0, 1.0, 0.0]),
    ("prod(x)", "[1e200, 1e200, 1e-200, 1e-200]", 1.0, [1e-200, 1e-200, 1e200, 1e200]),
    ("logsumexp(x)", "[100000, 100001]", 100001 + 0.31326168751822286,
     [0.2689414213699951, 0.7310585786300049]),
])
def test_reductions_are_right_at_the_ends_of_the_float_range(program, point, value, gradient):
    status, out, err = run(["eval", program, "--x" if "x" in program else "--W", point,
                            "--json", "--no-check"])
    assert status == 0, err
    record = json.loads(out)
    assert record["value"] == pytest.approx(value, rel=1e-15, abs=0)
    found = record["gradients"]["x" if "x" in program else "W"]
    flat = [number for row in found for number in row] if isinstance(found[0], list) else found
    assert flat == pytest.approx(gradient, rel=1e-15, abs=0)


def _exact_product(values: list[float]) -> Fraction:
    product = Fraction(1)
    for value in values:
        product *= Fraction(value)
    return product


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(0.5, 1.0), st.integers(-1074, 1023),
                          st.sampled_from([1.0, -1.0])), min_size=1, max_size=40))
def test_prod_and_its_gradient_round_the_exact_products(parts):
    """Against exact rational products (Fraction): the value, and each element's product of the
    others, within a few ulps wherever the exact result is a normal float; no partial product
    on the way overflows or underflows."""
    from gradcli.engine.arrays import numpy
    from gradcli.engine.ops.xp import NUMPY, scaled_prod

    values = [math.ldexp(mantissa, exponent) * sign for mantissa, exponent, sign in parts]
    x = numpy().array(values)
    out = scaled_prod(numpy(), x)
    others = NUMPY.others_product(x, out)
    exact = _exact_product(values)
    for got, want in [(out, exact)] + [
            (others[k], _exact_product(values[:k] + values[k + 1:])) for k in range(len(values))]:
        if abs(want) > Fraction(sys.float_info.min) * 2**53 and abs(want) < Fraction(2**1000):
            assert float(got) == pytest.approx(float(want), rel=64 * sys.float_info.epsilon)


# The check at tiny operands: norm at 1e-200 changes on the scale of its elements, far below the
# smallest absolute step (1.4e-15), so the check's last step is at the value's own scale; a
# function that needs an absolute step (x + 1) has agreed before that step, and a wrong
# gradient disagrees at every step.
@pytest.mark.parametrize(("program", "values"), [
    ("norm(x)", ["--x", "[1e-200, 1e-200]"]),
    ("norm(x)", ["--x", "[3e-300, -4e-300]"]),
    ("hypot(x, y)", ["--x", "1e-200", "--y", "1e-200"]),
    ("hypot(x, y)", ["--x", "1e-200:3e-200:3", "--y", "1e-200"]),  # a sweep: settle's path
    ("x + 1 + sqrt(y)", ["--x", "1e-200", "--y", "0.25"]),
    ("x + sqrt(y)", ["--x", "1e-200", "--y", "1e-250"]),
])
def test_the_check_reaches_the_scale_of_tiny_operands(program, values):
    status, out, err = run(["eval", program, *values])
    assert status == 0, out + err
    assert "check passed" in out


def test_a_wrong_gradient_at_tiny_operands_still_fails():
    from gradcli.engine.node import Node
    from gradcli.gradcheck.check import check_node
    from gradcli.gradcheck.steps import steps_for

    x = 1e-200
    assert list(steps_for(x))[-1] == pytest.approx(x * sys.float_info.epsilon ** (1 / 3))
    assert len(list(steps_for(1.0))) == len(list(steps_for(0.0))) == len(list(steps_for(x))) - 1

    class Replays:  # f(x) = 3x, whose true derivative is 3; the node claims 2
        def __init__(self):
            self.nodes, self.switched = [Node.constant(3 * x)], set()

        def replay(self, index, value, complex_step=False):
            return 3 * value, abs(3 * value)

    class Perturbed:
        value, grad, index = x, 2.0, 0

    found = check_node(Replays(), Perturbed(), 1e-5, 1e-8)
    assert not found.ok and found.numeric == pytest.approx(3.0)
