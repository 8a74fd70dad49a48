"""The symbolic core compiled (setup.py, mypyc) and as Python print the same, to the byte.

The compiled modules are these same files; what could differ is what mypyc enforces (a value of
another type than its annotation is a TypeError there, not in Python). So the corpus of issue 14
is printed by both, in every format, and compared; and a compiled module older than its source
(an edit after the install) is reported rather than silently used.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gradcli
from gradcli.engine import core_is_compiled, stale_core_modules

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CORE = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]

needs_compiled = pytest.mark.skipif(not core_is_compiled() and not os.environ.get("CI"),
                                    reason="the core is installed as Python here (setup.py)")


def test_ci_runs_the_compiled_core():
    """Not compiled, this file's comparisons would skip, quietly: in CI that is a failure."""
    if not os.environ.get("CI"):
        pytest.skip("not in CI")
    assert core_is_compiled(), "CI installed the core as Python: pip install -v says why"


def test_numbers_from_numpy_or_floats_pass_where_the_core_takes_an_int():
    """Found in review: the compiled core took only an int for max_nodes (mypyc checks)."""
    np = pytest.importorskip("numpy")
    result = gradcli.evaluate("sum(x**3)", {"x": [1.0, 2.0]}, order=2, max_nodes=np.int64(10**5))
    assert result.value == 9.0
    hessian = gradcli.evaluate("x**2*y", {"x": 1.0, "y": 2.0}, order=2, max_nodes=1e5).hessian
    assert hessian.matrix["x"]["y"] == 2.0
    # the parser's builder, compiled too (a review): infinity is no limit, as it always was,
    # and both_ways takes any truth value
    assert len(gradcli.parse("x*y", max_nodes=float("inf")).nodes) == 3
    assert len(gradcli.parse("x*y", max_nodes=np.int64(3)).nodes) == 3
    assert "cos" in gradcli.parse("cos*x + sin(x)", both_ways=1).variables
    # the check, compiled too (a review): node_check_limit takes any number, as it did
    for limit in (np.int64(300), 300.0, float("inf")):
        result = gradcli.evaluate("sin(x)*y", {"x": 0.3, "y": 2.0}, node_check_limit=limit)
        assert result.check.ok and not result.check.nodes_skipped
    outcomes = list(gradcli.evaluate_lines("sin(x)\nx*2\n", {"x": 1.0}, node_check_limit=3.0))
    assert [outcome.error for outcome in outcomes] == [None, None]


def test_the_step_policys_tuples_pickle():
    """Compiled, namedtuple took importlib's module for its own (a review): pickle failed."""
    from gradcli.gradcheck import steps

    assert pickle.loads(pickle.dumps(steps.CENTRAL)) == steps.CENTRAL
    assert steps.Stencil.__module__ == steps.Estimates.__module__ == "gradcli.gradcheck.steps"

PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from simplify_corpus import TABLE, examples
from workloads import batch_programs
from gradcli.api import differentiate, evaluate
from gradcli.engine import core_is_compiled
from gradcli.engine.ops.row import KERNELS
from gradcli.errors import GradcliError
from gradcli.language.parser import parse

out = {"compiled": core_is_compiled(), "kernels": KERNELS}
for text in [*TABLE, *examples(), *batch_programs(40)]:
    try:
        program = parse(text)
    except GradcliError as error:
        out[text] = str(error)
        continue
    for order in (1, 2):
        try:
            result = differentiate(program, order=order)
            out[f"{text} {order}"] = [result.texts(), result.texts("latex"), result.python()]
        except GradcliError as error:
            out[f"{text} {order}"] = str(error)
    point = {name: 0.5 + i for i, name in enumerate(program.variables)}
    try:
        out[f"{text} at"] = differentiate(program, values=point, order=2).texts()
    except GradcliError as error:
        out[f"{text} at"] = str(error)
# the check's replays (engine/replay.py): every node's difference quotients, floats and arrays
W, x = [[0.3, -1.2, 0.7], [2.0, 0.1, -0.4]], [0.5, -1.5, 2.0]
for text, point in [*[(text, {n: 0.3 + 0.1 * i for i, n in enumerate("xyzwv")})
                      for text in batch_programs(40)],
                    ("sum(tanh(W@x))", {"W": W, "x": x}), ("sum((W@x)**2) + x[0]*W[1,2]",
                    {"W": W, "x": x}), ("sum(where(x > 0, x**3, -x))", {"x": x})]:
    check = evaluate(text, point).check
    out[f"{text} check"] = [repr(sorted(check.gradients.items())),
                            repr(sorted(check.nodes.items()))]
print(json.dumps(out))
"""


def _printed(python_path: Path | None) -> dict:
    env = None
    if python_path is not None:
        env = {"PYTHONPATH": str(python_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", PROBE, str(ROOT / "benchmarks")],
                          capture_output=True, text=True, env=env, check=True, timeout=300)
    return json.loads(done.stdout)


def _pure_copy(folder: Path) -> Path:
    """The package as Python only: its sources (no compiled modules) and its grammar."""
    package = folder / "gradcli"
    shutil.copytree(ROOT / "src" / "gradcli", package,
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    shutil.copytree(ROOT / "grammar", package / "language" / "grammar",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@needs_compiled
def test_the_python_core_prints_what_the_compiled_core_prints(tmp_path):
    compiled, pure = _printed(None), _printed(_pure_copy(tmp_path))
    assert compiled.pop("compiled") is True and pure.pop("compiled") is False
    # the passes' float kernels (engine/ops/row.py) run compiled only: so this also holds them
    # to the rows' own forward and rules, in every check below
    assert compiled.pop("kernels") is True and pure.pop("kernels") is False
    assert len(compiled) > 140
    assert compiled == pure


@needs_compiled
def test_every_module_of_the_core_is_compiled_from_its_current_source():
    from importlib import import_module

    for path in CORE:
        module = import_module(path.removeprefix("src/").removesuffix(".py").replace("/", "."))
        assert not module.__file__.endswith(".py"), f"{path} is not compiled"
    assert stale_core_modules() == [], "changed after the install: pip install -e . again"


def test_the_staleness_check_looks_where_the_core_lives():
    """``stale_core_modules`` looks in ``COMPILED_PARTS``: every folder of a compiled module
    (the check's joined the list in session 27, and a folder left out would never be stale)."""
    from gradcli.engine import COMPILED_PARTS

    assert set(COMPILED_PARTS) == {Path(path).parent.relative_to("src/gradcli").as_posix()
                                   for path in CORE}


@needs_compiled
def test_an_edit_after_the_install_is_said_not_silently_ignored(tmp_path):
    """A copy of the checkout whose notation.py is newer than its compiled module: the CLI
    says so on stderr and in --version (and still runs)."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "src", checkout / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", checkout)
    shutil.copytree(ROOT / "grammar", checkout / "src" / "gradcli" / "language" / "grammar")
    engine = checkout / "src" / "gradcli" / "engine"
    source = engine / "notation.py"
    later = max(path.stat().st_mtime for path in engine.iterdir()) + 10
    os.utime(source, (later, later))
    env = {"PYTHONPATH": str(checkout / "src"), "PATH": "/usr/bin:/bin"}
    for args, out in ((["eval", "x**2", "--x", "3", "--json"], '"value":9'),
                      (["--version"], "older than its source: pip install -e . again")):
        done = subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True,
                              text=True, env=env, check=False, timeout=60)
        assert done.returncode == 0 and out in done.stdout, done
        assert done.stderr == ("note: engine/notation.py changed after gradcli's core was "
                               "compiled, and the old code runs; install again: pip install -e .\n")
