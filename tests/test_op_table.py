"""The op table is complete by construction: every row states its complex and vector forms (or
says it has none), a row without them works or refuses clearly on every path, and the listing
(`gradcli functions`, docs/functions.md) comes from the table.

After changing the op table, rewrite docs/functions.md with ``python tests/test_op_table.py``.

The paths are exercised with rows added for the duration of a test (``added_rows``): ``erf``
(math.erf, d/dx = 2/sqrt(pi) exp(-x^2)) and ``ln`` (math.log with no domain check, so that the
float function itself raises), both with ``complex=NONE, vector=NONE``. They stand in for the
table's own erf (which has neither form either) and for the alias ln, so that these tests keep
exercising a row of their own making whatever the table holds.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import operator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcli
from gradcli.cli import cli
from gradcli.engine import ops, vector
from gradcli.engine.graph import Node, Program, backward, forward
from gradcli.engine.ops import FUNCTIONS, NONE, NUMPY, OPS, ROWS, SAME, F, Op
from gradcli.engine.ops import row as op_row
from gradcli.engine.replay import Replayer
from gradcli.engine.vector import evaluate_vector
from gradcli.errors import UsageError
from gradcli.gradcheck.check import check_gradients
from gradcli.symbolic.printing import to_latex

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS_DOC = ROOT / "docs" / "functions.md"
TWO_OVER_ROOT_PI = 2.0 / math.sqrt(math.pi)

ERF = Op("erf", 1, math.erf, (lambda x, out: TWO_OVER_ROOT_PI * F.exp(-x * x),),
         complex=NONE, vector=NONE, summary="error function (a test row)")
LN = Op("ln", 1, math.log, (lambda x, out: 1.0 / x,),
        complex=NONE, vector=NONE, summary="natural logarithm, no domain check (a test row)")


def d_erf(x: float) -> float:
    return TWO_OVER_ROOT_PI * math.exp(-x * x)


@pytest.fixture
def added_rows(monkeypatch):
    """erf and ln in the table (the parser, F and the printers read OPS and FUNCTIONS, the
    listing ROWS), and a fresh cache of which values the vector rules read."""
    for row in (ERF, LN):
        monkeypatch.setitem(OPS, row.name, row)
        monkeypatch.setitem(FUNCTIONS, row.name, row)
    monkeypatch.setattr(ops, "ROWS", (*(ERF if op.name == "erf" else op for op in ROWS), LN))
    monkeypatch.setattr(vector, "_READS", {})


def invoke(*args: str, stdin: str | None = None):
    result = CliRunner().invoke(cli, list(args), input=stdin)
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


# --- every row states its forms ---------------------------------------------------------------

def test_the_forms_and_the_summary_have_no_default():
    fields = {f.name: f for f in dataclasses.fields(Op)}
    for name in ("complex", "vector", "summary"):
        assert fields[name].default is dataclasses.MISSING, name
        assert fields[name].default_factory is dataclasses.MISSING, name
    with pytest.raises(TypeError, match="complex"):
        Op("erf", 1, math.erf, (lambda x, out: 0.0,), vector=NONE, summary="s")
    with pytest.raises(TypeError, match="vector"):
        Op("erf", 1, math.erf, (lambda x, out: 0.0,), complex=NONE, summary="s")
    with pytest.raises(TypeError, match="complex= must be a function, SAME or NONE"):
        Op("erf", 1, math.erf, (lambda x, out: 0.0,), complex=None, vector=NONE, summary="s")
    with pytest.raises(TypeError, match="summary"):
        Op("erf", 1, math.erf, (lambda x, out: 0.0,), complex=NONE, vector=NONE, summary=" ")
    with pytest.raises(TypeError, match="rules"):
        Op("erf", 1, math.erf, (), complex=NONE, vector=NONE, summary="s")


ROW_MAKERS = ("Op", "unary", "binary", "_row", "_reduction", "_constructor")


def _row_calls() -> list[ast.Call]:
    """The calls that build rows in engine/ops/: Op(...), unary(...), binary(...), and _row(...),
    _reduction(...) and _constructor(...) of the array rows (which state ``vector=SAME`` for
    them, and a reduction's or a constructor's shape rule)."""
    calls = []
    for path in sorted(Path(ops.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        calls += [node for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Name)
                  and node.func.id in ROW_MAKERS
                  and node.args and isinstance(node.args[0], ast.Constant)]
    return calls


def test_every_row_of_the_table_states_its_forms_in_its_own_text():
    calls = _row_calls()
    named = {call.args[0].value for call in calls}
    assert named == {op.name for op in ROWS} | {"var", "const", "index", "array"}
    for call in calls:
        keywords = {keyword.arg for keyword in call.keywords}
        if "ufunc" in keywords:  # one NumPy function, both the vector form and the export
            keywords |= {"vector", "numpy"}
        stated = {"complex", "summary"} | ({"vector"} if call.func.id in ROW_MAKERS[:3] else
                                           {"shape"} if call.func.id == "_row" else set())
        assert stated <= keywords, call.args[0].value


def test_one_table_one_registry():
    """Every row once in ROWS, each a row of one class; OPS finds every name and alias (max and
    min: the element-wise rows), CALLS every row the language calls by name (max: both)."""
    assert all(type(op) is Op for op in ROWS) and len(set(map(id, ROWS))) == len(ROWS)
    assert {(op.name, op.is_array) for op in ROWS} == {
        (name, op.is_array) for name, rows in ops.CALLS.items() for op in rows
        if name == op.name} | {(op.name, op.is_array) for op in ROWS if not op.is_function}
    for op in ROWS:
        for name in (op.name, *op.aliases):
            assert OPS[name] is op or (op.is_array and OPS[name].name == name)
    assert [op.arity for op in ops.CALLS["max"]] == [2, 1]
    assert OPS["max"].arity == 2 and OPS["ln"] is OPS["log"]
    assert ops.FUNCTION_NAMES == set(ops.CALLS) >= {"sum", "det", "ln", "pow", "max"}


def test_vjp_is_one_question_for_either_kind_of_row():
    """An element-wise row's VJP is g times its partial, summed over the broadcast axes (written
    out here with NumPy); an array row's is its rule (the gradient of sum(x@y) by hand)."""
    x, y = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), np.array([0.5, -1.0, 2.0])
    g = np.arange(6.0).reshape(2, 3)
    out = x * y
    np.testing.assert_array_equal(OPS["mul"].vjp(NUMPY, 0, g, out, x, y), g * y)
    np.testing.assert_array_equal(OPS["mul"].vjp(NUMPY, 1, g, out, x, y), (g * x).sum(axis=0))
    np.testing.assert_allclose(OPS["sin"].vjp(NUMPY, 0, g, np.sin(x), x), g * np.cos(x))
    matmul = OPS["matmul"]
    ones = np.ones(2)
    np.testing.assert_array_equal(matmul.vjp(NUMPY, 0, ones, x @ y, x, y), np.outer(ones, y))
    np.testing.assert_array_equal(matmul.vjp(NUMPY, 1, ones, x @ y, x, y), x.sum(axis=0))


@pytest.mark.parametrize("name", sorted(op.name for op in ROWS if not op.is_array))
def test_every_row_has_a_usable_form_or_says_none(name):
    op = OPS[name]
    for form in (op.complex, op.vector):
        assert form is SAME or form is NONE or callable(form)
    point = [0.7, 1.3][:op.arity]
    if op.complex is SAME:  # forward must really take complex numbers
        out = op.forward(*(complex(v, 1e-30) for v in point))
        assert isinstance(out, complex) and out.real == pytest.approx(op.forward(*point))
    if op.vector is SAME:  # ... and arrays
        out = op.forward(*(np.array([v, v]) for v in point))
        assert isinstance(out, np.ndarray)
        assert out.tolist() == pytest.approx([op.forward(*point)] * 2)


@pytest.mark.parametrize("name", sorted(op.name for op in ROWS if op.constants))
def test_a_partial_written_as_a_number_is_that_number_on_every_path(name):
    """A row may write a partial as a number (add's 1, 1): the float backward pass reads it,
    and every other caller gets a rule that gives it, on floats, complex numbers, arrays and
    in a formula; each such number is the row's slope, by central differences."""
    op = OPS[name]
    assert len(op.constants) == op.arity
    point = [0.7] if op.arity == 1 else [2.0, 1.3]  # 2: polygamma's order n is whole
    for position, slope in enumerate(op.constants):
        if slope is None:
            continue
        rule = op.rules[position]
        assert rule(*point, op.forward(*point)) == slope
        assert rule(*(np.array([v, v]) for v in point), None) == slope
        h = 1e-6
        moved = [[v + (k == position) * step for k, v in enumerate(point)] for step in (h, -h)]
        try:
            slope_seen = (op.forward(*moved[0]) - op.forward(*moved[1])) / (2 * h)
        except ValueError:  # an order n takes whole numbers only: it has no slope but 0
            assert slope == 0.0
        else:
            assert slope_seen == pytest.approx(slope, abs=1e-6)
        # the engine's backward on floats: the number, where the rule would have been called
        nodes = [Node.variable(n) for n in "xy"[:op.arity]]
        for node, value in zip(nodes, point, strict=True):
            node.value = value
        out = Node(op, tuple(nodes))
        program = Program.build("", out, nodes, {})
        forward(program.nodes)
        right = op.rules
        unread = list(right)
        unread[position] = lambda *args: pytest.fail("the rule of a number was called")
        object.__setattr__(op, "rules", tuple(unread))
        try:
            backward(program.nodes)
        finally:
            object.__setattr__(op, "rules", right)
        assert nodes[position].grad == slope
    names = list("xy"[:op.arity])
    written = (f"{name}({', '.join(names)})" if op.is_function
               else {"add": "x + y", "sub": "x - y", "neg": "-x"}[name])
    texts = gradcli.differentiate(written, names).texts()  # the derivatives as formulas
    for variable, slope in zip(names, op.constants, strict=True):
        assert slope is None or float(texts[variable]) == slope


def test_a_number_for_a_partial_keeps_the_operands_names():
    """``operands`` reads the names from the first partial written as a rule (polygamma's n, x)."""
    assert OPS["polygamma"].constants == (0.0, None) and OPS["polygamma"].operands == ("n", "x")
    assert OPS["add"].operands == ("x", "y") and OPS["neg"].operands == ("x",)
    assert all(op.constants == () or len(op.constants) == op.arity for op in ROWS)


# --- float kernels: the row's arithmetic, inlined in the compiled passes --------------------------

KERNEL_ROWS = sorted(op.name for op in ROWS if op.kernel)
# Operands where arithmetic has its corners: signed zeros, subnormals, the largest floats (sums
# and products overflow), integers and halves (pow's exponents), negatives (pow's domain).
_CORNERS = [0.0, -0.0, 5e-324, -5e-324, 2.2e-308, 1e-160, 0.5, 1.0, -1.0, 2.0, -2.0, 3.0, 0.3,
            -0.7, 1e160, -1e160, 1.7976931348623157e308, -1.7976931348623157e308, 1e-5, 7.25]
_FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(_CORNERS)


def _bits(value: float) -> tuple[str, str]:
    """A float to compare to the bit (-0.0 is not 0.0)."""
    return type(value).__name__, value.hex()


def _row_value(op: Op, args: tuple[float, ...]) -> float | None:
    """The row's value as the passes would take it: None where its domain refuses, its forward
    raises or the value is not finite."""
    if op.domain is not None and op.domain(*args) is not None:
        return None
    try:
        value = op.forward(*args)
    except (ArithmeticError, ValueError):
        return None
    return value if isinstance(value, float) and math.isfinite(value) else None


def test_the_kernels_are_a_few_rows_of_arithmetic():
    """Each kernel belongs to one row, and only element-wise rows of one or two floats have one
    (``op_row.kernel_value`` reads two operands at most)."""
    kernels = [OPS[name].kernel for name in KERNEL_ROWS]
    assert len(set(kernels)) == len(kernels)
    assert {"add", "sub", "mul", "div", "neg", "pow", "relu"} <= set(KERNEL_ROWS)
    assert all(not OPS[name].is_array and OPS[name].arity <= 2 for name in KERNEL_ROWS)
    with pytest.raises(TypeError, match="float kernel"):
        Op("sum3", 3, lambda x, y, z: x + y + z, (lambda x, y, z, out: 1.0,) * 3,
           complex=SAME, vector=SAME, summary="a test row", kernel=op_row.KERNEL_ADD)


@pytest.mark.parametrize("name", KERNEL_ROWS)
@settings(max_examples=300, deadline=None)
@given(x=_FLOATS, y=_FLOATS)
def test_a_kernel_is_its_rows_value_and_slopes_to_the_bit(name, x, y):
    """Where a kernel gives a number, it is the row's value (forward, after its domain), and a
    finite kernel slope is the row's rule's, to the bit; elsewhere the kernel leaves the case to
    the row (None, or a slope not finite), which then names any error as before."""
    op = OPS[name]
    args = (x, y)[:op.arity]
    value = op_row.kernel_value(op.kernel, x, args[-1])
    expected = _row_value(op, args)
    if value is not None:
        assert expected is not None and _bits(value) == _bits(expected)
    elif op.kernel != op_row.KERNEL_POW:  # pow leaves a base of 0 or below to its row
        assert expected is None
    if expected is None:
        return
    for position in range(op.arity):
        slope = op_row.kernel_slope(op.kernel, position, x, args[-1], expected)
        if not math.isfinite(slope):  # NaN: the row's constants or rule say; inf: its rule
            continue  # says, or names the error
        assert _bits(slope) == _bits(op.rules[position](*args, expected))


@pytest.mark.parametrize("x", [*_CORNERS, math.inf, -math.inf, math.nan])
def test_the_slope_of_a_squares_base_is_pows_rule_to_the_bit(x):
    """pow's kernel has one slope of its own, d/dx x**2 = 2x (every ``x**2`` of a batch line),
    and it is the rule's y x**(y - 1) at y = 2 to the bit, overflow and NaN included; any other
    exponent, and the exponent's slope, are left to the rule (NaN)."""
    rule = OPS["pow"].rules[0]
    assert _bits(op_row.kernel_slope(op_row.KERNEL_POW, 0, x, 2.0, 0.0)) == _bits(
        rule(x, 2.0, 0.0))
    assert _bits(op_row.kernel_slope(op_row.KERNEL_POW, 0, x, 2.0, 0.0)) == _bits(2.0 * x)
    assert math.isnan(op_row.kernel_slope(op_row.KERNEL_POW, 0, x, 3.0, 0.0))
    assert math.isnan(op_row.kernel_slope(op_row.KERNEL_POW, 1, x, 2.0, 0.0))


@pytest.mark.parametrize("text", ["x*y - x/y + (x - y)**2 + relu(-x) + relu(y) - -x",
                                  "(x/-y)**0.5 * x**-1.5", "(x/y)**0.5",
                                  "x*x*x*x / (y - y + 1e-300)"])
def test_the_passes_with_kernels_give_what_the_rows_give(text):
    """A program's value, gradients and check are the same bits with the kernels as with the
    rows alone (each row's kernel set to 0), errors included."""
    point = {"x": 0.75, "y": -1.25}

    def run() -> str:
        try:
            result = gradcli.evaluate(text, point)
        except gradcli.GradcliError as error:
            return error.one_line()
        return repr((result.value.hex(), {name: grad.hex() for name, grad in
                                          result.gradients.items()}, result.check.record()))

    with_kernels = run()
    kernels = {name: OPS[name].kernel for name in KERNEL_ROWS}
    for name in KERNEL_ROWS:
        object.__setattr__(OPS[name], "kernel", 0)
    try:
        without = run()
    finally:
        for name, kernel in kernels.items():
            object.__setattr__(OPS[name], "kernel", kernel)
    assert with_kernels == without


def test_arithmetic_operators_are_the_same_rows_as_before():
    for name, function in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                           ("div", operator.truediv), ("neg", operator.neg)]:
        assert OPS[name].forward is function
        assert OPS[name].complex is SAME and OPS[name].vector is SAME


# --- the listing: gradcli functions and docs/functions.md --------------------------------------

def test_docs_functions_md_is_what_the_generator_writes():
    from gradcli.output.functions import markdown

    assert FUNCTIONS_DOC.read_text("utf-8") == markdown(), (
        "docs/functions.md is out of date with the op table: rewrite it with "
        "`python tests/test_op_table.py`, read the diff and commit it")


def test_every_spelling_in_the_listing_parses_to_its_op():
    rows = ops.table_rows()
    assert [row["name"] for row in rows] == [op.name for op in ROWS] + ["index", "array"]
    table = {(op.name, op.is_array): op for op in ROWS}
    for row in rows:
        assert row["summary"] and row["written"]
        op = table.get((row["name"], row["kind"].startswith("array")))
        for text in row["written"]:
            output = gradcli.parse(text.replace("(n)", "(3)")).output
            assert output.op is op if op is not None else output.op.name in (
                row["name"], "const"), text
    assert next(r for r in rows if r["name"] == "atan2")["written"] == [
        "atan2(y, x)", "arctan2(y, x)"]
    assert next(r for r in rows if r["name"] == "log")["aliases"] == ["ln"]
    assert next(r for r in rows if r["name"] == "pow")["written"] == [
        "x ** y", "x ^ y", "pow(x, y)"]


def test_functions_command_lists_the_table():
    listed = invoke("functions", "--json")
    assert listed.exit_code == 0
    rows = json.loads(listed.stdout)
    assert rows == ops.table_rows()
    assert set(rows[0]) == {"name", "kind", "written", "aliases", "arity", "summary",
                            "complex_step", "vector"}
    assert all(set(row) == set(rows[0]) for row in rows)
    human = invoke("functions")
    assert human.exit_code == 0
    for op in OPS.values():
        assert op.name in human.stdout
    assert "hyperbolic tangent" in human.stdout


def test_functions_command_shows_a_row_without_forms(added_rows):
    rows = json.loads(invoke("functions", "--json").stdout)
    erf = next(row for row in rows if row["name"] == "erf")
    assert erf == {"name": "erf", "kind": "function", "written": ["erf(x)"], "aliases": [],
                   "arity": 1,
                   "summary": "error function (a test row)", "complex_step": False,
                   "vector": False}
    from gradcli.output.functions import markdown

    line = next(line for line in markdown().splitlines() if line.startswith("| erf |"))
    assert "no: --check-method complex refuses it" in line and "point by point" in line
    assert "point by point" in invoke("functions").stdout


# --- a row without complex or vector forms, on every path ---------------------------------------

def test_eval_at_a_point_gives_the_value_and_the_closed_form_gradient(added_rows):
    result = invoke("eval", "erf(x)*y", "--x", "0.5", "--y", "2", "--json")
    assert result.exit_code == 0
    record = json.loads(result.stdout)
    assert record["value"] == pytest.approx(2 * math.erf(0.5), rel=1e-15)
    assert record["gradients"]["x"] == pytest.approx(2 * d_erf(0.5), rel=1e-15)
    assert record["gradients"]["y"] == pytest.approx(math.erf(0.5), rel=1e-15)
    assert record["check"]["ok"] is True
    human = invoke("eval", "erf(x)", "--x", "-1.5")
    assert human.exit_code == 0 and "check passed" in human.stdout


def test_check_method_complex_refuses_with_a_one_line_usage_error(added_rows):
    result = invoke("eval", "erf(x)*y", "--x", "0.5", "--y", "2", "--check-method", "complex")
    assert result.exit_code == 2
    message = result.stderr + result.stdout
    assert "erf has no complex-step form" in message
    assert "--check-method central or --check-method richardson" in message
    record = json.loads(invoke("eval", "erf(x)*y", "--x", "0.5", "--y", "2", "--json",
                               "--check-method", "complex").stdout)
    assert record["error"]["kind"] == "usage" and "erf" in record["error"]["message"]
    with pytest.raises(UsageError, match="erf has no complex-step form"):
        gradcli.evaluate("erf(x)", {"x": 0.5}, check_method="complex")
    with pytest.raises(UsageError, match="erf has no complex-step form"):
        ERF.apply_complex(0.5 + 1e-30j)


def test_check_method_complex_is_fine_where_the_row_depends_on_constants_only(added_rows):
    result = gradcli.evaluate("erf(2)*x + sin(x)", {"x": 0.5}, check_method="complex")
    assert result.check.ok
    assert {check.method for check in result.check.checks} == {"complex"}
    assert result.gradients["x"] == pytest.approx(math.erf(2) + math.cos(0.5), rel=1e-15)


def test_check_method_richardson(added_rows):
    result = invoke("eval", "erf(x)*y", "--x", "0.5", "--y", "2", "--json",
                    "--check-method", "richardson")
    assert result.exit_code == 0
    check = json.loads(result.stdout)["check"]
    assert check["ok"] is True
    assert {g["method"] for g in check["gradients"].values()} == {"richardson"}


def test_a_sweep_as_a_table_json_and_csv(added_rows):
    xs = [-1.0, 0.0, 1.0]
    table = invoke("eval", "erf(x)", "--x", "-1:1:3")
    assert table.exit_code == 0
    assert "check passed at 3 points" in table.stdout and "0.8427007929497149" in table.stdout
    lines = invoke("eval", "erf(x)", "--x", "-1:1:3", "--json")
    assert lines.exit_code == 0
    records = [json.loads(line) for line in lines.stdout.splitlines()]
    assert [r["value"] for r in records] == pytest.approx([math.erf(x) for x in xs], rel=1e-15)
    assert [r["gradients"]["x"] for r in records] == pytest.approx([d_erf(x) for x in xs],
                                                                   rel=1e-15)
    assert all(r["check"]["ok"] for r in records)
    csv = invoke("eval", "erf(x)", "--x", "-1:1:3", "--csv")
    assert csv.exit_code == 0
    header, *rows = [line.split(",") for line in csv.stdout.splitlines()]
    value = header.index("value")
    assert [float(row[value]) for row in rows] == pytest.approx([math.erf(x) for x in xs])


def test_a_sweep_where_the_float_function_raises_names_the_node(added_rows):
    """ln(x) raises at x <= 0: those points fail (status 3) with the scalar path's message."""
    result = invoke("eval", "ln(x)", "--x", "-1:1:3", "--json")
    assert result.exit_code == 3
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["error"] is None for r in records] == [False, False, True]
    assert "outside the domain of ln in #1 ln(x)" in records[0]["error"]["message"]
    assert records[2]["value"] == 0.0 and records[2]["gradients"]["x"] == 1.0


def test_a_batch_on_stdin(added_rows):
    result = invoke("eval", "-", "--json", "--x", "0.5", "--y", "2",
                    stdin="erf(x)\nerf(x)*y\nln(x - 1)\n")
    assert result.exit_code == 3  # the largest status among the records (ln of -0.5)
    first, second, third = [json.loads(line) for line in result.stdout.splitlines()]
    assert first["value"] == pytest.approx(math.erf(0.5), rel=1e-15)
    assert second["gradients"] == {"x": pytest.approx(2 * d_erf(0.5), rel=1e-15),
                                   "y": pytest.approx(math.erf(0.5), rel=1e-15)}
    assert first["check"]["ok"] and second["check"]["ok"]
    assert "outside the domain of ln" in third["error"]["message"]


def test_diff_as_text_latex_and_python(added_rows):
    text = invoke("diff", "erf(x)*y", "--wrt", "x")
    assert text.exit_code == 0
    derivative = text.stdout.strip().split(" = ", 1)[1]
    back = invoke("eval", derivative, "--x", "0.5", "--y", "2", "--json", "--no-check")
    assert json.loads(back.stdout)["value"] == pytest.approx(2 * d_erf(0.5), rel=1e-15)
    latex = invoke("diff", "erf(x)*y", "--wrt", "y", "--format", "latex")
    assert latex.exit_code == 0 and r"\operatorname{erf}\left(x\right)" in latex.stdout
    python = invoke("diff", "erf(x)*y", "--format", "python")
    assert python.exit_code == 0 and "math.erf(x)" in python.stdout
    namespace: dict = {}
    exec(python.stdout, namespace)  # the test runs it; gradcli never does
    value, (dx, dy) = namespace["f"](0.5, 2.0)
    assert value == pytest.approx(2 * math.erf(0.5), rel=1e-15)
    assert dx == pytest.approx(2 * d_erf(0.5), rel=1e-15)
    assert dy == pytest.approx(math.erf(0.5), rel=1e-15)


def test_latex_of_an_unknown_function_is_an_operatorname(added_rows):
    x = Node.variable("x")
    assert to_latex(x.apply(ERF, x)) == r"\operatorname{erf}\left(x\right)"


def test_diff_python_refuses_a_forward_it_cannot_copy(added_rows, monkeypatch):
    wrapped = dataclasses.replace(ERF, forward=lambda x: math.erf(x))
    monkeypatch.setitem(OPS, "erf", wrapped)
    monkeypatch.setitem(FUNCTIONS, "erf", wrapped)
    result = invoke("diff", "erf(x)*y", "--format", "python")
    assert result.exit_code == 2
    message = result.stderr + result.stdout
    assert "erf has no Python form" in message and "--format text" in message
    assert invoke("diff", "erf(x)*y").exit_code == 0  # text still works


def test_graph(added_rows):
    for extra in ([], ["--format", "tree"], ["--format", "dot"], ["--format", "mermaid"]):
        result = invoke("graph", "erf(x)*y", "--x", "0.5", "--y", "2", *extra)
        assert result.exit_code == 0, result.stdout
        assert "erf" in result.stdout


def test_a_check_file(added_rows, tmp_path):
    path = tmp_path / "erf.toml"
    path.write_text(
        '[[check]]\nname = "erf value"\nexpr = "erf(x)"\nat = {x = 0.5}\n'
        f"value = {math.erf(0.5)!r}\n"
        '\n[[check]]\nname = "erf slope"\nexpr = "erf(x)*y"\n'
        'sweep = {x = "-2:2:9", y = [1, 3]}\n'
        'derivative = {x = "y*2/sqrt(pi)*exp(-x**2)", y = "erf(x)"}\nfinite = true\n',
        "utf-8")
    result = invoke("check", str(path))
    assert result.exit_code == 0, result.stdout
    failing = tmp_path / "ln.toml"
    failing.write_text('[[check]]\nname = "ln"\nexpr = "ln(x)"\nsweep = {x = "-1:1:5"}\n'
                       "finite = true\n", "utf-8")
    result = invoke("check", str(failing))
    assert result.exit_code == 3
    assert "outside the domain of ln" in result.stdout + result.stderr


def test_plot_in_the_terminal(added_rows):
    from gradcli.output.plot import sample

    result = invoke("plot", "erf(x)", "--x", "-2:2:41", "--width", "60", "--height", "12")
    assert result.exit_code == 0 and result.stdout.strip()
    xs = np.linspace(-2.0, 2.0, 41)
    curve = sample("erf(x)", {"x": tuple(xs.tolist())})
    assert curve.gaps == 0
    np.testing.assert_allclose(curve.values, [math.erf(x) for x in xs], rtol=1e-15)
    np.testing.assert_allclose(curve.derivative, [d_erf(x) for x in xs], rtol=1e-15)
    gaps = sample("ln(x)", {"x": (-1.0, 0.0, 0.5, 2.0)})
    assert gaps.gaps == 2 and np.isnan(gaps.values[:2]).all()
    np.testing.assert_allclose(gaps.values[2:], [math.log(0.5), math.log(2.0)])


# --- the vector fallback itself ----------------------------------------------------------------

def test_elementwise_is_the_float_function_with_nan_and_a_flag_where_it_fails(added_rows):
    raised: list[str] = []
    with np.errstate(all="call", under="ignore", call=lambda kind, flag: raised.append(kind)):
        out = LN.apply_vector(np.array([-1.0, 0.0, 0.5, 2.0]))
        assert raised  # as np.log(-1) would raise it: the vector passes collect flags
        assert np.isnan(out[:2]).all()
        assert out[2:].tolist() == [math.log(0.5), math.log(2.0)]
        raised.clear()
        uniform = ERF.apply_vector(np.float64(0.5))
        assert type(uniform) is np.float64 and uniform == math.erf(0.5)
        assert ERF.apply_vector(np.array([0.5]), ).tolist() == [math.erf(0.5)]
        assert not raised
    # a domain check refuses points too, as on the scalar path
    checked = dataclasses.replace(LN, domain=lambda x: None if x > 1.0 else "below 1")
    with np.errstate(invalid="ignore"):
        assert np.isnan(checked.apply_vector(np.array([0.5, 1.0]))).all()
    # F hands arrays to apply_vector, so rules may call a row without a vector form
    assert F.erf(np.array([0.5])).tolist() == [math.erf(0.5)]


@pytest.mark.parametrize("gradients", [True, False])
def test_vector_evaluation_matches_the_scalar_path_also_in_blocks(added_rows, monkeypatch,
                                                                  gradients):
    program = gradcli.parse("erf(x*y) + ln(x) * y")
    x = np.linspace(-0.5, 2.0, 301)
    y = np.linspace(1.0, -1.0, 301)
    whole = evaluate_vector(program, {"x": x, "y": y}, gradients)
    monkeypatch.setattr(vector, "BLOCK", 64)
    monkeypatch.setenv("GRADCLI_JOBS", "3")
    blocks = evaluate_vector(program, {"x": x, "y": y}, gradients)
    assert np.array_equal(whole.failed, x <= 0.0)
    assert np.array_equal(blocks.failed, whole.failed)
    assert np.array_equal(blocks.output, whole.output, equal_nan=True)
    for i in np.flatnonzero(~whole.failed)[::10]:
        scalar = gradcli.evaluate("erf(x*y) + ln(x) * y", {"x": x[i], "y": y[i]}, check=False)
        assert whole.output[i] == pytest.approx(scalar.value, rel=1e-15, abs=1e-300)
        if gradients:
            grads = {name: whole.grads[node.index][i]
                     for name, node in program.variables.items()}
            assert grads == pytest.approx(scalar.gradients, rel=1e-14, abs=1e-300)


def test_the_checks_vectorised_first_pass_replays_a_row_without_a_vector_form(added_rows,
                                                                             monkeypatch):
    """Above ``_COLUMNS_FROM`` node checks x nodes (lowered here: this program is smaller),
    check_gradients first replays every perturbation at once as NumPy columns
    (gradcheck/float_columns.py)."""
    from gradcli.gradcheck import check
    from gradcli.gradcheck import float_columns as columns

    monkeypatch.setattr(check, "_COLUMNS_FROM", 0)
    calls = []
    real = columns.replay_columns

    def spy(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(columns, "replay_columns", spy)
    text = " + ".join(f"erf(x*{k}/7 - y) * ln(y + {k})" for k in range(1, 13))
    program = gradcli.parse(text)
    program.bind({"x": 0.3, "y": 0.8})
    forward(program.nodes)
    backward(program.nodes)
    report = check_gradients(program)
    assert calls, "the vectorised first pass did not run"
    assert report.ok and not report.nodes_skipped
    assert len(report.nodes) > 50
    # the columns give what the scalar replays give
    replayer = Replayer(program.nodes)
    pinned = [node.index for node in program.nodes if node.needs_grad][:20]
    values = [program.nodes[i].value + 1e-3 for i in pinned]
    replayed = real(program, pinned, values)
    for j, (index, value) in enumerate(zip(pinned, values, strict=True)):
        assert replayed.output[j] == pytest.approx(replayer.replay(index, value)[0], rel=1e-15)


def test_a_row_with_a_forward_of_its_own_module_is_used_as_it_is():
    """The fixture's rows are built outside engine/ops/; nothing in the paths above needs a row
    to live there (the Python printer copies only math functions and the table's own helpers)."""
    x = Node.variable("x", 0.5)
    program = Program.build("erf(x)", x.apply(ERF, x), [x], {})
    assert forward(program.nodes) == math.erf(0.5)
    backward(program.nodes)
    assert x.grad == pytest.approx(d_erf(0.5), rel=1e-15)


if __name__ == "__main__":  # python tests/test_op_table.py: rewrite docs/functions.md
    from gradcli.output.functions import markdown

    FUNCTIONS_DOC.write_text(markdown(), "utf-8")
    print(f"wrote {FUNCTIONS_DOC.relative_to(ROOT)}")
