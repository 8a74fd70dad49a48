"""What the seed example imports at start-up (issue 31): every module on the path is on a list.

``gradcli eval "(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8`` (and with ``--json``) runs in a fresh
process under ``-X importtime``; every module it imports must be imported by its dependencies
anyway (the baseline: ``python -c pass``) or be on the allow-list below. Neither click, Rich
nor orjson is: the plain eval (``cli/plain_eval.py``) reads this command line without click, a
piped table is written without Rich (``output/plain.py``), and the one JSON record without
orjson (``records.plain_json``). A new import
on the path fails here, so that adding one is a decision: lazy-import it where it is used, or
add it to the list and say why.

The plain eval makes the request click's reading makes: its option table, its results and its
errors are compared with click's here.
"""

from __future__ import annotations

import os
import subprocess
import sys

import click
import pytest

from gradcli.cli.command_table import COMMANDS, EVAL_OPTIONS
from gradcli.cli.plain_eval import LONG_OPTIONS, plain_form
from gradcli.cli.usage import every_command
from gradcli.gradcheck.evaluation import EvalSettings

SEED = ["eval", "(x*W+b-t)**2", "--x", "2", "--W", "3", "--b", "1", "--t", "8"]
# The finite-difference check: loaded only when it runs
CHECK = {"gradcli.gradcheck.check", "gradcli.gradcheck.differences", "gradcli.gradcheck.steps",
         "gradcli.engine.replay"}

# gradcli's own modules on the path of one scalar eval: the command, the parser and its
# tables, the graph and its ops, the evaluation and its finite-difference check.
GRADCLI = {
    "gradcli", "gradcli.errors", "gradcli.limits",
    # the plain eval: its reading, the exits, what eval does once read, and the printing
    "gradcli.cli", "gradcli.cli.plain_eval", "gradcli.cli.command_table",
    "gradcli.cli.bindings", "gradcli.cli.exits", "gradcli.cli.streams",
    "gradcli.cli.program_text", "gradcli.cli.given", "gradcli.cli.eval_run", "gradcli.cli.show",
    "gradcli.language", "gradcli.language.values", "gradcli.language.parser",
    "gradcli.language.lalr", "gradcli.language.driver", "gradcli.language._lalr_tables",
    "gradcli.language.grammar",  # the tables' digest is checked against the grammar's text
    "gradcli.language.functions",
    # the parser by concern: the builder's reductions, and the friendly errors they raise
    "gradcli.language.building", "gradcli.language.syntax_errors",
    "gradcli.engine", "gradcli.engine.ops", "gradcli.engine.core_ops", "gradcli.engine.forms",
    "gradcli.engine.special", "gradcli.engine.graph", "gradcli.engine.node",
    "gradcli.engine.special_slopes",  # the float functions of the dbeta, dlbeta and dgamma rows
    "gradcli.engine.notation",
    "gradcli.engine.replay",
    # the op table, one package: its row class and its sections, array rows too (one registry
    # for the parser's names); building them imports no NumPy
    "gradcli.engine.ops.row", "gradcli.engine.ops.xp", "gradcli.engine.ops.elementary",
    "gradcli.engine.ops.special_functions", "gradcli.engine.ops.logic",
    "gradcli.engine.ops.linear_algebra",
    "gradcli.engine.core__mypyc",  # the compiled core's one extension, where it is compiled
    "gradcli.gradcheck", "gradcli.gradcheck.evaluation", "gradcli.gradcheck.tolerances",
    "gradcli.output",
    *CHECK,
}
# Standard modules gradcli adds to what its dependencies import.
STANDARD = {
    "gc",  # the exit skips the last collection (cli/exits.py)
    "cmath",  # the ops' complex-step forms
    "zlib",  # the grammar's digest, checked against the shipped tables (language/lalr.py)
    # The op table's rows, the evaluation's settings and its results are dataclasses; from
    # 3.12 dataclasses reads every class's annotations with inspect, and gradcli/__init__.py
    # lets it load inspect and copy (which looks for Jython's org.python.core) as it does
    "dataclasses",
    *(("inspect", "ast", "_ast", "dis", "opcode", "_opcode", "token", "tokenize", "linecache",
       "copy", "org", "org.python", "org.python.core", "weakref", "_weakrefset")
      if sys.version_info >= (3, 12) else ()),
    "collections.abc",  # the ABCs the modules import for their annotations and checks
    "math",  # the graph's and the numbers' float functions (engine/graph.py)
}
ALLOWED = {
    # The table: the view of one result, in its pieces by concern (the same code views.py
    # held whole): the console, tables that fit, numbers as text, the per-node tables, verdicts.
    # written as plain lines in a pipe (output/plain.py), with no Rich
    "table": GRADCLI | STANDARD | {
        "gradcli.output.views", "gradcli.output.console", "gradcli.output.tables",
        "gradcli.output.values", "gradcli.output.nodes", "gradcli.output.verdicts",
        "gradcli.output.text", "gradcli.output.plain",
        # the table's modules use typing at run time (its NamedTuple, IO)
        "typing", "_typing", "typing.io", "typing.re"},
    "json": GRADCLI | STANDARD | {"gradcli.output.records"},
}
BASELINE = {"table": "pass", "json": "pass"}


# At exit, the modules loaded: ``-X importtime`` does not list those that ``importlib``
# imports (the commands, loaded by name), only those of ``import`` statements.
_AT_EXIT = ("import atexit, sys; atexit.register(lambda: print('loaded:', *sorted(sys.modules), "
            "file=sys.stderr))\n")


def _imported(code: str, args: list[str]) -> list[str]:
    """The modules a fresh process imports, as ``-X importtime`` lists them (in order), then
    the others it has loaded at exit."""
    environment = {**os.environ, "COLUMNS": "120"}
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", _AT_EXIT + code, *args],
                          capture_output=True, text=True, env=environment, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stderr.splitlines()
    rows = [line.removeprefix("import time:").split("|") for line in lines
            if line.startswith("import time:") and line.count("|") == 2]
    timed = [name.strip() for own, _, name in rows if own.strip().isdigit()]
    loaded = next(line.split()[1:] for line in lines if line.startswith("loaded: "))
    return timed + sorted(set(loaded) - set(timed))


@pytest.mark.parametrize("output", ["table", "json"])
def test_the_seed_example_imports_only_what_it_uses(output):
    flags = ["--json"] if output == "json" else []
    run = "import sys; from gradcli.cli import main; sys.argv[0] = 'gradcli'; main()"
    modules = _imported(run, [*SEED, *flags])
    assert "gradcli.gradcheck.evaluation" in modules  # it ran
    baseline = set(_imported(BASELINE[output], []))
    unexpected = [name for name in modules if name not in baseline | ALLOWED[output]]
    assert not unexpected, (
        f"the seed example ({output}) now imports {unexpected}: import it where it is used, "
        "or add it to ALLOWED in tests/test_startup.py with the reason")


def _without_site(code: str) -> str:
    """What ``code`` prints in a fresh process without ``site`` (whose ``.pth`` files often load
    typing or inspect), this gradcli first on the path."""
    import gradcli

    path = os.path.dirname(os.path.dirname(gradcli.__file__))
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": path}, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_json_path_loads_neither_typing_nor_threading_nor_orjson():
    """The modules of ``eval --json`` with its check import none of them (typing alone is a
    tenth of the run's start-up), nor inspect (a fifth) and copy before Python 3.12."""
    unused = {"typing", "threading", "orjson", "json"} | (
        {"inspect", "ast", "dis", "tokenize", "copy"} if sys.version_info < (3, 12) else set())
    code = ("import sys; import gradcli.cli.plain_eval, gradcli.language.parser, "
            "gradcli.gradcheck.check, gradcli.output.records; "
            f"print(*sorted({unused!r} & set(sys.modules)))")
    assert _without_site(code).split() == []


# A dataclass without a docstring (dataclasses writes one with inspect.signature), asdict (which
# copies with copy.deepcopy), then inspect and copy imported by the program: the same with gradcli
# loaded first as with both loaded before dataclasses.
_UNDOCUMENTED = """
from dataclasses import asdict, dataclass, field, replace
@dataclass(frozen=True)
class Undocumented:
    a: int
    b: str = "x"
    c: list = field(default_factory=list)
print(Undocumented.__doc__, replace(Undocumented(1), b="y"), asdict(Undocumented(2, c=[3])))
import copy, dataclasses, inspect, sys, types
print(type(inspect) is types.ModuleType, dataclasses.inspect is inspect is sys.modules["inspect"],
      type(copy) is types.ModuleType, dataclasses.copy is copy is sys.modules["copy"])
print(inspect.signature(Undocumented), inspect.getsource(inspect.getmodule).splitlines()[0])
"""


def test_dataclasses_work_when_gradcli_loads_them_without_inspect():
    """``gradcli/__init__.py`` loads dataclasses with stand-ins for inspect and copy, which
    import the real modules when first used; afterwards nothing tells them apart."""
    loaded = "import gradcli, sys; print({'inspect', 'copy'} & set(sys.modules))\n"
    with_gradcli = _without_site(loaded + _UNDOCUMENTED).splitlines()
    alone = _without_site("import copy, inspect\n" + _UNDOCUMENTED).splitlines()
    assert with_gradcli[0] == "set()"
    assert with_gradcli[1:] == alone
    assert alone[0].startswith("Undocumented(a: int, b: str = 'x', c: list = <factory>)")
    assert alone[0].endswith("{'a': 2, 'b': 'x', 'c': [3]}")
    assert alone[1] == "True True True True"


@pytest.mark.parametrize("output", [[], ["--json"]], ids=["table", "json"])
def test_the_check_loads_only_when_it_runs(output):
    run = "import sys; from gradcli.cli import main; sys.argv[0] = 'gradcli'; main()"
    assert set(_imported(run, [*SEED, *output])) >= CHECK
    assert not CHECK & set(_imported(run, [*SEED, *output, "--no-check"]))


def test_other_commands_load_only_when_they_run():
    """The plain eval loads no command's module, nor click; an eval that click reads (here
    for --rtol) loads eval's module and no other."""
    run = "import sys; from gradcli.cli import main; sys.argv[0] = 'gradcli'; main()"
    plain = _imported(run, [*SEED, "--json"])
    assert "click" not in plain
    assert not {module for module, _ in COMMANDS.values()} & set(plain)
    read_by_click = _imported(run, [*SEED, "--json", "--rtol", "1e-6"])
    for name, (module, _) in COMMANDS.items():
        assert (module in read_by_click) == (name == "eval"), module


def test_the_command_list_matches_the_commands():
    """``COMMANDS`` names each command's module and its long flags: the other commands' flags
    are read from it, so that eval need not load them to tell a flag from a variable."""
    from gradcli.cli import cli

    commands = every_command(cli)
    assert set(commands) == set(COMMANDS)
    for name, command in commands.items():
        module, flags = COMMANDS[name]
        assert command.callback is not None and command.callback.__module__ == module, name
        assert set(flags) == {flag for param in command.params
                              if isinstance(param, click.Option) and param.is_flag
                              for flag in param.opts if flag.startswith("--")}, name


def _eval_command() -> tuple[click.Command, click.Context]:
    from gradcli.cli import cli

    command = every_command(cli)["eval"]
    group = click.Context(cli, info_name="gradcli", **cli.context_settings)
    return command, click.Context(command, parent=group, info_name="eval")


def test_the_plain_eval_knows_every_option_of_eval():
    """``EVAL_OPTIONS`` is what click's reading tells options from bindings with (every
    spelling, and whether it takes a value); the plain eval's suggestions (``--rtl`` meant
    ``--rtol``) come from the same long options."""
    command, ctx = _eval_command()
    assert {flag: not param.is_flag for param in command.get_params(ctx)
                            if isinstance(param, click.Option)
                            for flag in (*param.opts, *param.secondary_opts)} == EVAL_OPTIONS
    assert command.long_options(ctx) == LONG_OPTIONS


def test_the_plain_eval_makes_the_request_click_makes():
    from gradcli.cli.eval_command import eval_request

    command, ctx = _eval_command()
    args = [*SEED[1:], "--json"]
    expr, given, options = plain_form(["eval", *args])
    with ctx:
        command.parse_args(ctx, list(args))
        clicked = eval_request(ctx, **ctx.params)
    assert (expr, given.values, given.spelled, options) == (
        clicked.program.text, clicked.values, clicked.given.spelled, ["--json"])
    assert EvalSettings(strict=False) == clicked.settings
    unchecked = [*SEED[1:], "--no-check"]
    with ctx:
        command.parse_args(ctx, list(unchecked))
        clicked = eval_request(ctx, **ctx.params)
    assert plain_form(["eval", *unchecked])[2] == ["--no-check"]
    assert EvalSettings(strict=False, check=False) == clicked.settings


# Command lines the plain eval takes: each prints and ends as click's reading of it does.
PLAIN = [
    SEED, [*SEED, "--json"], ["eval", "x*y", "--x=2", "--json", "--y", "-3"],
    ["eval", "-x**2", "--x", "3"], ["eval", "log(x)", "--x", "-1"],
    ["eval", "log(x)", "--x", "-1", "--json"], ["eval", "x*y", "--x", "2"],
    ["eval", "x*y", "--x", "2", "--z", "1"], ["eval", "x*y", "--x", "2", "--rtl", "1"],
    ["eval", "x+", "--x", "1", "--json"], ["eval", "x", "--x", "1", "--wrt", "2"],
    ["eval", "u = x*W; z = u + b; err = z - t; err*err", "--x", "2", "--W", "3", "--b", "1",
     "--t", "8"],
    [*SEED, "--no-check"], ["eval", "x", "--no-check", "--x", "1", "--json"],
    ["eval", "sum(x)", "--x", "[1, 2]"],
    ["eval", "mean((W@x - t)**2)", "--W", "[[1, 2], [3, 4]]", "--x", "[0.5, -1]", "--t", "[1, 2]",
     "--no-check"],
]
# ... and some it leaves to click: an option, a range, an array, a batch, a file, help,
# a name given twice, a binding without its value, another command's flag, two EXPRs.
TO_CLICK = [
    [*SEED, "--rtol", "1e-6"], ["eval", "x", "--x", "1,2"], ["eval", "x", "--x", "-2:2:5"],
    [*SEED, "--no-check", "--no-check"], ["eval", "x", "--x", "1", "--no-check=1"],
    ["eval", "sum(x*x)", "--x", "[1, true]", "--json"],  # a usage error: click words it
    ["eval", "-", "--x", "1"], ["eval", "-f", "a.grad"],
    ["eval", "--help"], ["eval", "x", "-h"], ["eval", "x", "--x", "1", "--x", "2"],
    ["eval", "x", "--x"], ["eval", "x", "--x", "1", "--defaults"], ["eval", "x", "y"],
    ["eval", "x", "--x", "1", "--json", "--json"], ["eval", "--x", "1"], ["diff", "x", "--x", "1"],
]


def _both_readings(args: list[str], before: str = "", **run: object) -> list[tuple]:
    """(status, stdout, stderr) of gradcli ``args`` in a fresh process, read without click
    where the plain eval takes them (``gradcli.cli.main``), then by click (``cli.base``)."""
    ran = []
    for entry in ("gradcli.cli import main", "gradcli.cli.base import main"):
        done = subprocess.run([sys.executable, "-c", f"{before}from {entry}; main()", *args],
                              capture_output=True, text=True, check=False, **run)
        ran.append((done.returncode, done.stdout, done.stderr))
    return ran


@pytest.mark.parametrize("args", PLAIN, ids=" ".join)
def test_the_plain_eval_prints_what_click_s_reading_prints(args):
    assert plain_form(args) is not None
    plain, clicked = _both_readings(args, env={**os.environ, "COLUMNS": "120"})
    assert plain == clicked
    assert plain[1] or plain[2]  # it said something


def test_arrays_from_files_are_printed_as_click_s_reading_prints_them(tmp_path):
    """``--W W.npy``: the plain eval reads the files and prints what click's reading prints."""
    import numpy as np

    rng = np.random.default_rng(30)
    for name, shape in (("W", (30, 20)), ("x", 20), ("t", 30)):
        np.save(tmp_path / f"{name}.npy", rng.normal(size=shape))
    args = ["eval", "mean((W@x - t)**2)", *(part for name in "Wxt"
                                           for part in (f"--{name}", f"{name}.npy"))]
    assert plain_form(args) is None  # the files are not in this directory
    plain, clicked = _both_readings(args, cwd=tmp_path, env={**os.environ, "COLUMNS": "120"})
    assert plain == clicked and plain[0] == 0
    assert "gradients of the output" in plain[1]


@pytest.mark.parametrize("args", TO_CLICK, ids=" ".join)
def test_every_other_command_line_goes_to_click(args):
    assert plain_form(args) is None


# The plain batch: programs on stdin in JSON Lines, read without click. Each input is run by
# both readings, which must print and end alike: good lines, a bad one among them, unused
# values, no program line, a constant given, an array line.
BATCH_FORMS = [["--json"], ["--json", "--no-nodes"], ["--json", "--no-check"],
               ["--no-nodes", "--json", "--no-check"]]
BATCH_INPUTS = [
    "x*y\n(x+\nlog(x - 5)\n# a comment\n\nsum(W)\nx**2\n",
    "x*y\n",
    "# only a comment\n",
    "e*x\n",
    "x*y\n" * 150 + "(x+\n" + "x**2 + y\n" * 60,  # past the serial lines: forked workers
]


@pytest.mark.parametrize("text", BATCH_INPUTS, ids=["mixed", "one", "none", "constant", "long"])
@pytest.mark.parametrize("form", BATCH_FORMS, ids=" ".join)
def test_the_plain_batch_prints_what_click_s_reading_prints(form, text):
    args = ["eval", "-", *form, "--x", "2", "--y=-3", "--e", "1", "--W", "[1, 2]"]
    assert plain_form(args) is not None
    plain, clicked = _both_readings(args, input=text)
    assert plain == clicked
    assert plain[1] or plain[2]


def test_the_plain_batch_of_a_closed_stdin_says_so_as_click_does():
    plain, clicked = _both_readings(["eval", "-", "--json", "--x", "1"],
                                    before="import os; os.close(0); ")
    assert plain == clicked
    assert plain[0] == 2 and "stdin is closed" in plain[2]


@pytest.mark.parametrize("form", BATCH_FORMS, ids=" ".join)
def test_the_plain_batch_makes_the_request_click_makes(form, monkeypatch):
    from gradcli.cli import eval_run
    from gradcli.cli.eval_command import eval_request
    from gradcli.cli.plain_eval import run_plain

    args = ["-", *form, "--x", "2", "--W", "[1, 2]"]
    expr, given, options = plain_form(["eval", *args])
    made = []
    monkeypatch.setattr(eval_run, "run_eval", made.append)
    monkeypatch.setattr("gradcli.cli.plain_eval.run_eval", made.append)
    run_plain(expr, given, options)
    command, ctx = _eval_command()
    with ctx:
        command.parse_args(ctx, list(args))
        clicked = eval_request(ctx, **ctx.params)
    (plain,) = made
    assert plain.program is clicked.program is None
    listed = {name: getattr(value, "tolist", lambda v=value: v)()  # arrays as lists
              for name, value in plain.values.items()}
    assert listed == {name: getattr(value, "tolist", lambda v=value: v)()
                      for name, value in clicked.values.items()} == {"x": 2.0, "W": [1.0, 2.0]}
    assert (plain.given.spelled, plain.output) == (clicked.given.spelled, "json")
    assert plain.settings == clicked.settings
    assert (plain.cluster, plain.skip, plain.save) == (clicked.cluster, clicked.skip, None)


def test_the_plain_batch_loads_no_click():
    run = ("import sys, io; sys.stdin = io.StringIO('x*y\\n'); from gradcli.cli import main; "
           "sys.argv[0] = 'gradcli'; main()")
    assert "click" not in _imported(run, ["eval", "-", "--json", "--no-nodes", "--x", "1",
                                          "--y", "2"])


@pytest.mark.parametrize("args", [
    ["eval", "-", "--x", "1"],  # a table batch
    ["eval", "-", "--no-nodes", "--x", "1"],  # --no-nodes without --json: click's error
    ["eval", "-", "--json", "--skip", "1", "--x", "1"],
    ["eval", "-", "--json", "--jobs", "1", "--x", "1"] if "--jobs" in EVAL_OPTIONS else
    ["eval", "-", "--json", "--rtol", "1e-3", "--x", "1"],
    ["eval", "-", "--json", "--x", "0:1:3"],  # a sweep's values
    ["eval", "-", "--json", "--json", "--x", "1"],
])
def test_other_batches_go_to_click(args):
    assert plain_form(args) is None


def test_a_cluster_in_the_environment_sends_the_batch_to_click(monkeypatch):
    args = ["eval", "-", "--json", "--x", "1"]
    assert plain_form(args) is not None
    monkeypatch.setenv("GRADCLI_CLUSTER", "local:2")
    assert plain_form(args) is None
