"""Silence is a bug: a value that is not used, a value given twice, no program at all and a dropped
Hessian are usage errors (status 2) that say what happened, never a quiet exit 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gradcli
from gradcli import limits
from gradcli.cli import cli
from gradcli.engine.ops import CONSTANTS, FUNCTIONS
from gradcli.runs import batch

SEED = "(x*W+b-t)**2"


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


def usage_error(result, *texts: str) -> str:
    """The stderr of a status-2 run that printed nothing on stdout, checked for ``texts``."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert result.stdout == ""
    assert "Traceback" not in result.output
    for text in texts:
        assert text in result.stderr, (text, result.stderr)
    return result.stderr


# --- a value for a name the program does not use ----------------------------------------------

@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        # a lower-case w for the program's W: W stays free, w is dropped -- no longer silent
        (["--x", "2", "--w", "3", "--b", "1", "--t", "8"], "the program has no variable w (--w 3)",
         "did you mean --W? its variables: x, W, b, t"),
        (["--X", "1", "--W", "3", "--b", "1", "--t", "8"], "the program has no variable X (--X 1)",
         "did you mean --x?"),
        (["--x", "2", "--W", "3", "--b", "1", "--t", "8", "--y", "5"],
         "the program has no variable y (--y 5)",
         "its variables: x, W, b, t"),
        (["--x", "2", "--W", "3", "--rtl", "1"], "the program has no variable rtl (--rtl 1)",
         "did you mean the option --rtol?"),
        (["--x", "2", "--W", "3", "--atoll=1"], "the program has no variable atoll (--atoll=1)",
         "did you mean the option --atol?"),
        (["--x", "2", "--set", "Wb=3"], "the program has no variable Wb (--set Wb=3)",
         "did you mean --W?"),
        # three letters that happen to be in an option are no slip for it (a bug hunt)
        (["--x", "2", "--W", "3", "--sin", "2"], "the program has no variable sin (--sin 2)",
         "its variables: x, W, b, t"),
        (["--x", "2", "--W", "3", "--hes", "2"], "the program has no variable hes (--hes 2)",
         "did you mean the option --hessian?"),
    ],
)
def test_a_value_the_program_does_not_use_is_a_usage_error_that_suggests(args, message, hint):
    usage_error(invoke("eval", SEED, *args), f"error: usage error: {message}", f"hint: {hint}")


def test_with_json_the_error_is_a_json_record_and_one_line_on_stderr():
    result = invoke("eval", SEED, "--x", "2", "--w", "3", "--json")
    assert result.exit_code == 2
    record = json.loads(result.stdout)
    assert record["value"] is None
    assert record["error"]["kind"] == "usage"
    assert record["error"]["message"] == "the program has no variable w (--w 3)"
    assert record["error"]["hint"].startswith("did you mean --W?")
    assert result.stderr.strip().splitlines() == [
        "gradcli: usage error: the program has no variable w (--w 3) (hint: did you mean --W? "
        "its variables: x, W, b, t)"]


def test_several_unused_values_are_named_together():
    stderr = usage_error(invoke("eval", "x*y", "--x", "1", "--Y", "2", "--rtl", "3", "--q", "4"),
                         "the program does not use Y, rtl, q (--Y 2, --rtl 3, --q 4)")
    assert "did you mean --y for --Y, the option --rtol for --rtl?" in stderr


def test_a_variable_that_already_has_a_value_is_not_suggested():
    stderr = usage_error(invoke("eval", "x*W", "--x", "1", "--W", "2", "--w", "3"),
                         "no variable w (--w 3)", "hint: its variables: x, W")
    assert "did you mean" not in stderr


def test_names_the_program_computes_or_does_not_depend_on():
    usage_error(invoke("eval", "u = x*W; u + b", "--x", "1", "--W", "2", "--b", "0", "--u", "3"),
                "u is computed by the program, not an input, so --u 3 would be ignored")
    # x = 2 declares an input: the result does not use it, and its gradient is 0 (issue 15)
    declared = invoke("eval", "x = 2; y**2", "--y", "1", "--x", "3", "--json")
    assert declared.exit_code == 0
    assert json.loads(declared.stdout)["gradients"] == {"x": 0.0, "y": 2.0}
    usage_error(invoke("eval", "u = x*W; y**2", "--y", "1", "--x", "3"),
                "u is assigned but the output never uses it")  # the slip itself, first
    usage_error(invoke("eval", "x**2 + 0*sin(y)", "--y", "1", "--x", "3", "--z", "2"),
                "no variable z")
    usage_error(invoke("eval", "sin(y)", "--y", "1", "--sin", "3"), "no variable sin (--sin 3)")


@pytest.mark.parametrize("args, message, hint", [
    (["eval", "x*2", "--x", "1", "--wrt", "x"], "gradcli eval has no option --wrt",
     "--wrt is an option of gradcli diff"),  # the value is not a number
    (["diff", "x*y", "--x", "2", "--y", "3", "--rtol", "1e-3"],
     "gradcli diff has no option --rtol", "--rtol is an option of gradcli eval"),  # it is
    (["eval", "x*2", "--x", "1", "--format", "latex"], "gradcli eval has no option --format",
     "--format is an option of gradcli diff and gradcli graph"),
])
def test_another_commands_option_is_named_as_such_not_taken_for_a_variable(args, message, hint):
    usage_error(invoke(*args), f"error: usage error: {message}", f"hint: {hint}")


def test_a_variable_named_like_another_commands_option_is_still_a_variable():
    assert json.loads(invoke("eval", "x*wrt", "--x", "1", "--wrt", "2", "--json").stdout)[
        "gradients"] == {"x": 2.0, "wrt": 1.0}


def test_a_value_overrides_the_programs_own_and_free_variables_stay_free():
    result = invoke("eval", "x = 2; x**2", "--x", "3", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["value"] == 9.0
    # the documented example: b and t without values, the answer in them, status 0
    free = invoke("eval", SEED, "--x", "2", "--W", "3")
    assert free.exit_code == 0
    assert "value (b - t + 6)**2" in free.stdout and "free variables: b, t" in free.stdout


def test_an_option_typo_that_cannot_be_a_value_suggests_the_option():
    usage_error(invoke("eval", "x", "--x", "1", "--check_method", "complex"),
                "no such option --check_method", "hint: did you mean --check-method?")
    result = invoke("eval", "x", "--x", "1", "--jsno")
    assert result.exit_code == 2 and "hint: did you mean --json?" in result.output


def test_program_files_and_sweeps(tmp_path):
    path = tmp_path / "seed.grad"
    path.write_text("# the seed\nu = x*W\nerr = u + b - t\nerr*err\n")
    usage_error(invoke("eval", "-f", str(path), "--x", "2", "--W", "3", "--b", "1", "--T", "8"),
                f"error: {path}: usage error: the program has no variable T (--T 8)",
                "did you mean --t?")
    usage_error(invoke("eval", "x**2*y", "--x", "-1:1:3", "--y", "2", "--z", "1", "--csv"),
                "no variable z (--z 1)")
    usage_error(invoke("eval", "x**2", "--x", "-1:1:3", "--z", "1,2"), "no variable z (--z 1,2)")


def test_diff_graph_and_plot_check_their_values_too():
    usage_error(invoke("diff", SEED, "--wrt", "x", "--w", "3"),
                "no variable w (--w 3)", "did you mean --W?")
    assert invoke("diff", SEED, "--wrt", "x", "--W", "3").exit_code == 0
    usage_error(invoke("graph", SEED, "--x", "2", "--w", "3", "--format", "dot"),
                "no variable w (--w 3)", "did you mean --W?")
    assert invoke("graph", SEED, "--x", "2", "--format", "dot").exit_code == 0
    usage_error(invoke("plot", "tanh(x)", "--x", "-3:3:50", "--widht", "40"),
                "no variable widht (--widht 40)", "did you mean the option --width?")
    assert invoke("plot", "tanh(x)", "--x", "-3:3:50", "--width", "40").exit_code == 0


def test_the_python_api_still_ignores_names_a_program_does_not_use():
    """One set of values serves many programs in Python too; the CLI is where it is an error."""
    assert gradcli.evaluate("x*2", {"x": 1.0, "unused": 5.0}).value == 2.0
    outcomes = list(gradcli.evaluate_lines(["x*y", "log(x - 9)", "2x", "3"], {"x": 1, "y": 2}))
    assert [None if o.names is None else sorted(o.names) for o in outcomes] == [
        ["x", "y"], ["x"], None, []]  # a line that fails after parsing still used its names


# --- a batch: the names no line uses -------------------------------------------------------------

def test_a_batch_reports_a_name_no_line_uses_after_every_record():
    stdin = "x*y\n\n# comment\nx + 1\n2x\n"
    result = invoke("eval", "-", "--json", "--x", "2", "--y", "1", "--w", "3", stdin=stdin)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["line"] for r in records] == [1, 4, 5]  # every line its record, and no more
    assert result.exit_code == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last == ("gradcli: usage error: no line that was read uses w (--w 3); 1 line failed "
                    "before its variables were known (hint: the lines' variables: x, y)")
    table = invoke("eval", "-", "--x", "2", "--y", "1", "--W", "3", "--Z", "4", stdin=stdin)
    assert table.exit_code == 2 and len(table.stdout.splitlines()) == 3
    assert "error: usage error: no line that was read uses W, Z (--W 3, --Z 4)" in (
        table.stderr)


def test_in_a_batch_a_name_some_lines_use_is_fine():
    result = invoke("eval", "-", "--json", "--x", "2", "--y", "1", "--z", "3",
                    stdin="x*y\nx + 1\nz\n")
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 3
    assert result.stderr == ""
    # a line that uses a name and then fails (a numeric error) still used it
    failing = invoke("eval", "-", "--json", "--x", "2", "--z", "3", stdin="x\nlog(z - 9)\n")
    assert failing.exit_code == 3 and "no program line uses" not in failing.stderr


def test_lines_that_did_not_parse_are_counted_in_the_message():
    result = invoke("eval", "-", "--json", "--x", "1", "--w", "2", stdin="2x*w\n2y\nx + 1\n")
    assert result.exit_code == 2 and len(result.stdout.splitlines()) == 3
    assert result.stderr.strip().splitlines()[-1] == (
        "gradcli: usage error: no line that was read uses w (--w 2); 2 lines failed before "
        "their variables were known (hint: the lines' variables: x)")


def test_a_batch_suggests_from_the_variables_of_all_lines():
    result = invoke("eval", "-", "--x", "2", "--rat", "1", "--W", "2",
                    stdin="x*W\nx + rate\n")
    assert result.exit_code == 2
    assert "no program line uses rat (--rat 1)" in result.stderr
    assert "did you mean --rate? the lines' variables: rate, W, x" in result.stderr


def test_workers_send_each_lines_names_with_its_record(monkeypatch):
    monkeypatch.setattr(batch, "SERIAL_LINES", 5)
    monkeypatch.setattr(batch, "CHUNK", 7)
    lines = [f"x*{k} + y" if k % 3 else f"z{k % 4} - x" for k in range(60)] + ["2x", "log(-x)"]
    got = list(batch.json_lines(lines, {"x": 1.0, "y": 2.0}, jobs=2))
    assert [None if r.names is None else set(r.names) for r in got] == [
        {"x", "y"} if k % 3 else {f"z{k % 4}", "x"} for k in range(60)] + [None, {"x"}]


def _gradcli(args: list[str], stdin: str) -> subprocess.CompletedProcess:
    env = {**os.environ, limits.JOBS_ENV: "2"}
    return subprocess.run([sys.executable, "-m", "gradcli", *args], input=stdin,
                          capture_output=True, text=True, env=env, check=False, timeout=120)


BIG_BATCH = [f"x*{k} + y" if k % 7 else f"sin(x) - {k}" for k in range(400)]  # > SERIAL_LINES


def test_a_large_batch_through_the_workers_reports_the_unused_name_last():
    assert len(BIG_BATCH) > batch.SERIAL_LINES + batch.CHUNK  # chunks go to the workers
    done = _gradcli(["eval", "-", "--json", "--x", "2", "--y", "1", "--Y", "5"],
                    "\n".join(BIG_BATCH) + "\n")
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["line"] for r in records] == list(range(1, 401))
    assert all(r["error"] is None for r in records)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "gradcli: usage error: no program line uses Y (--Y 5) "
        "(hint: the lines' variables: x, y)"]


def test_a_name_only_a_worker_saw_counts_as_used():
    """The only line that uses w is past the lines evaluated in the parent: its names come back
    from a worker with its record."""
    lines = [*BIG_BATCH, "w*x"]
    done = _gradcli(["eval", "-", "--json", "--x", "2", "--y", "1", "--w", "3"],
                    "\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 401 and done.stderr == ""
    failing = _gradcli(["eval", "-", "--json", "--x", "2", "--y", "1", "--w", "3"],
                       "\n".join([*BIG_BATCH, "log(w - 9)"]) + "\n")
    assert failing.returncode == 3 and "no program line uses" not in failing.stderr
    table = _gradcli(["eval", "-", "--x", "2", "--y", "1", "--q", "3"], "\n".join(lines) + "\n")
    assert table.returncode == 2 and len(table.stdout.splitlines()) == 401
    assert "error: usage error: no program line uses q (--q 3)" in table.stderr


# --- a value given twice -------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--x", "1", "--x=5"], "x is given twice: --x 1 and --x=5"),
        (["--x", "1", "--set", "W=3", "--W", "4"], "W is given twice: --W 4 and --set W=3"),
        (["--x", "1", "--W", "4", "--set", "W=3"], "W is given twice: --W 4 and --set W=3"),
        (["--x", "1", "--set", "W=3", "--set", "W=3"], "W is given twice: --set W=3 and --set W=3"),
    ],
)
def test_a_value_given_twice_is_a_usage_error(args, message):
    usage_error(invoke("eval", "x*W", *args), message, "hint: give ")


def test_given_twice_in_every_command_and_in_a_batch():
    usage_error(invoke("diff", "x*W", "--W", "1", "--W", "2"), "W is given twice")
    usage_error(invoke("graph", "x*W", "--W", "1", "--W=2"), "W is given twice")
    usage_error(invoke("plot", "x*W", "--x", "-1:1:5", "--x", "0:1:5"), "x is given twice")
    result = invoke("eval", "-", "--x", "1", "--x", "2", stdin="x\n")
    assert result.exit_code == 2 and "x is given twice" in result.stderr


# --- no program at all ---------------------------------------------------------------------------

@pytest.mark.parametrize("stdin", ["", "\n\n", "# only a comment\n   \n#x\n"])
def test_a_batch_without_program_lines_is_a_usage_error(stdin):
    result = invoke("eval", "--x", "2", "--json", stdin=stdin)
    assert result.exit_code == 2
    assert result.stdout == ""  # one record per program line: there are none
    assert "gradcli: usage error: no programs on stdin" in result.stderr
    table = invoke("eval", "-", "--x", "2", stdin=stdin)
    usage_error(table, "error: usage error: no programs on stdin", "hint: give one program per")


def test_empty_stdin_through_a_real_pipe():
    done = subprocess.run(f"true | {sys.executable} -m gradcli eval --x 2 --json", shell=True,
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert "no programs on stdin" in done.stderr


@pytest.mark.parametrize(("text", "what"), [
    ("", "is empty"), ("\n  \n", "is empty"),
    ("# nothing yet\n\n", "has only comments and blank lines")])
def test_an_empty_program_file_is_a_usage_error(tmp_path, text, what):
    path = tmp_path / "p.grad"
    path.write_text(text)
    for command in ("eval", "diff", "graph"):
        usage_error(invoke(command, "-f", str(path)), f"{path} {what}: no program to read",
                    "hint: put the program in it")
    result = invoke("eval", "-f", str(path), "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["message"].endswith("no program to read")


@pytest.mark.parametrize("expr", ["", "   ", "# a comment", ";"])
def test_an_empty_expression_is_a_usage_error(expr):
    usage_error(invoke("eval", expr, "--x", "1"), "error: usage error: the expression is empty",
                'hint: try: gradcli eval "(x*W+b-t)**2"')
    usage_error(invoke("diff", expr), "the expression is empty", "try: gradcli diff --help")


# --- a Hessian with free variables ---------------------------------------------------------------

def test_a_hessian_with_free_variables_is_a_usage_error():
    """A Hessian is numbers: asked for one (a CI gate checking second derivatives), an answer
    in expressions with exit 0 would pass while checking nothing."""
    usage_error(invoke("eval", "x*y", "--x", "1", "--hessian"),
                "the Hessian needs a value for every variable: no value for y",
                "hint: pass --y VALUE; gradcli diff --order 2 gives the Hessian as expressions")
    result = invoke("eval", "x*y", "--x", "1", "--order", "2", "--json")
    assert result.exit_code == 2 and json.loads(result.stdout)["error"]["kind"] == "usage"
    assert invoke("eval", "x*y", "--x", "1", "--y", "2", "--hessian").exit_code == 0
    assert invoke("eval", "x*y", "--x", "1").exit_code == 0  # no Hessian asked: expressions
    with pytest.raises(gradcli.UsageError, match="the Hessian needs"):
        gradcli.evaluate("x*y", {"x": 1}, strict=False, order=2)


# --- the property: never exit 0 without using every given value ---------------------------------

EVAL_OPTIONS = {"set", "file", "json", "no_check", "no-check", "rtol", "atol", "check-method",
                "check_method", "csv", "order", "hessian", "strict", "max-nodes", "max_nodes",
                "check-nodes", "check_nodes", "help", "f", "h"}
KEYWORDS = {"if", "else", "and", "or", "not"}  # the grammar's words: never names
names = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,4}", fullmatch=True).filter(
    lambda n: n not in CONSTANTS and n not in FUNCTIONS and n not in EVAL_OPTIONS
    and n not in KEYWORDS)


@st.composite
def programs(draw):
    """A valid program over 1-4 variables: an expression, sometimes after statements that name
    an intermediate or give a variable its own value."""
    variables = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    leaves = st.one_of(st.sampled_from(variables),
                       st.integers(1, 5).map(str))
    expression = draw(st.recursive(
        leaves,
        lambda child: st.one_of(
            st.tuples(child, st.sampled_from(["+", "-", "*"]), child).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(st.sampled_from(["sin", "tanh", "exp"]), child).map(
                lambda t: f"{t[0]}({t[1]})")),
        max_leaves=8))
    statements = []
    if draw(st.booleans()):
        statements.append(f"{variables[0]} = {draw(st.integers(1, 3))}")
    if draw(st.booleans()):
        intermediate = draw(names.filter(lambda n: n not in variables))
        statements.append(f"{intermediate} = {expression}")
        expression = f"{intermediate} * 2"
    return "; ".join([*statements, expression])


@st.composite
def typos(draw, name):
    """``name`` with one character replaced, inserted, deleted or its case flipped."""
    alphabet = "abcxyzABCWXYZ019_"
    at = draw(st.integers(0, len(name) - 1))
    kind = draw(st.sampled_from(["replace", "insert", "delete", "case"]))
    if kind == "replace":
        return name[:at] + draw(st.sampled_from(alphabet)) + name[at + 1:]
    if kind == "insert":
        return name[:at] + draw(st.sampled_from(alphabet)) + name[at:]
    if kind == "delete":
        return name[:at] + name[at + 1:]
    return name[:at] + name[at].swapcase() + name[at + 1:]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), programs(), st.sampled_from([[], ["--json"]]))
def test_a_typo_in_a_variable_name_never_exits_0(data, program, flags):
    variables = list(gradcli.parse(program).variables)
    assume(variables)
    wrong = data.draw(st.sampled_from(variables))
    typo = data.draw(typos(wrong))
    assume(typo != wrong and typo not in EVAL_OPTIONS)
    point = {name: data.draw(st.sampled_from(["0.5", "1", "-0.25"])) for name in variables}
    given_names = [typo if name == wrong else name for name in variables]
    args = [arg for name in given_names for arg in (f"--{name}", point.get(name, "1"))]
    result = invoke("eval", program, *args, *flags)
    assert result.exit_code != 0 or set(given_names) <= set(variables)
    assert result.exit_code == 2, (program, args, result.output)
    assert "Traceback" not in result.output


# --- an array given for a name a program does not use (found by a helper) ---------------------
# One set of values serves a batch: a line that does not read v is a scalar program whatever v
# is. Before, any array among the values sent every program down the array path, where a
# where's branch not taken is computed (log(-1) at x = 1: exit 3) and free variables are refused.

def test_an_unused_array_value_leaves_a_scalar_program_scalar_in_a_batch():
    lines = "where(x>0, x, log(-x))\nsum(v)\nx*y\nsqrt(x)*v[0]\n"
    result = invoke("eval", "-", "--x", "1", "--v", "[1,2]", "--json", stdin=lines)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3, 4]
    assert [r["error"] for r in records] == [None] * 4
    assert (records[0]["value"], records[0]["gradients"]) == (1.0, {"x": 1.0})
    assert (records[1]["value"], records[1]["gradients"]) == (3.0, {"v": [1.0, 1.0]})
    assert records[2]["symbolic"]["gradients"] == {"x": "y", "y": "1"}  # y free: a scalar program
    assert records[3]["gradients"] == {"x": 0.5, "v": [1.0, 0.0]}  # d/dx sqrt(x) = 1/(2 sqrt(x))


def test_an_unused_array_value_leaves_a_scalar_program_scalar_everywhere(tmp_path):
    values = tmp_path / "values.json"
    values.write_text('{"x": 1, "v": [1, 2]}')
    result = gradcli.evaluate("where(x>0, x, log(-x))", {"x": 1, "v": [1, 2]})
    assert (result.value, result.gradients, result.check.ok) == (1.0, {"x": 1.0}, True)
    given = ("--values", str(values), "--allow-unused")
    evaluated = invoke("eval", "where(x>0, x, log(-x))", *given, "--json")
    assert evaluated.exit_code == 0 and json.loads(evaluated.stdout)["value"] == 1.0
    derived = invoke("diff", "x*y", *given)
    assert (derived.exit_code, derived.stdout) == (0, "d/dy = 1\n")  # d(x*y)/dy at x = 1
    plotted = invoke("plot", "x*y", "--y", "-1:1:3", *given)
    assert plotted.exit_code == 0, plotted.output
    drawn = invoke("graph", "where(x>0, x, log(-x))", *given)
    assert drawn.exit_code == 0, drawn.output
