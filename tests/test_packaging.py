"""The grammar ships inside the package, the core stays free of CLI libraries, nothing is eval'd."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "gradcli"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """An sdist and the wheel built from it (the route pip takes from an sdist)."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, check=False,
                          env={**os.environ, "GRADCLI_COMPILE": "1"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return out


def test_wheel_built_from_the_sdist_contains_the_grammar(built):
    (wheel,) = built.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "gradcli/language/grammar/expr.lark" in names
    assert "gradcli/cli/__init__.py" in names
    assert "gradcli/language/_lalr_tables.py" in names  # parse tables: no Lark at start-up


def test_the_wheel_carries_the_compiled_core_where_the_install_has_it(built):
    from gradcli.engine import core_is_compiled

    if not core_is_compiled():
        pytest.skip("the core is installed as Python here (setup.py)")
    (wheel,) = built.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    for path in [*core, "src/gradcli/engine/core__mypyc.py"]:
        stem = path.removeprefix("src/").removesuffix(".py")
        assert any(name.startswith(stem + ".") and name.endswith((".so", ".pyd"))
                   for name in names), stem
    assert "gradcli/symbolic/builder.py" in names  # the sources ship too


def test_sdist_contains_the_top_level_grammar(built):
    (sdist,) = built.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert any(name.endswith("/grammar/expr.lark") for name in names)


def test_installed_package_reads_the_grammar():
    from importlib import resources

    text = resources.files("gradcli.language.grammar").joinpath("expr.lark").read_text("utf-8")
    assert text == (ROOT / "grammar" / "expr.lark").read_text("utf-8")


def _imports_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    return set(done.stdout.split())


def test_core_and_api_never_import_click_or_rich():
    modules = _imports_after("import gradcli; gradcli.evaluate('sin(x)', {'x': 1.0})")
    assert "click" not in modules and "rich" not in modules


def test_json_path_does_not_import_rich():
    modules = _imports_after(
        "from gradcli.cli import cli\n"
        "cli.main(['eval', 'x*2', '--x', '1', '--json'], standalone_mode=False)"
    )
    assert "rich" not in modules


@pytest.mark.parametrize("flags", [[], ["--json"]], ids=["table", "json"])
def test_eval_starts_without_what_it_does_not_use(flags):
    """Start-up time of one small `gradcli eval` (workload W1): graph pictures and Graphviz's
    subprocess, csv, Lark, the expression printers, Rich's tree and emoji table stay unloaded."""
    modules = _imports_after(
        "from gradcli.cli import cli\n"
        f"cli.main(['eval', 'sin(x)*2', '--x', '1', *{flags!r}], standalone_mode=False)"
    )
    unused = {"subprocess", "csv", "lark", "gradcli.output.pictures", "gradcli.symbolic.printing",
              "rich.tree",
              "rich._emoji_codes", "prompt_toolkit", "gradcli.cli.session",
              "gradcli.language.values_file"}
    assert ("gradcli.output.views" in modules) == (not flags)  # the table was rendered with Rich
    assert not unused & modules


def test_numpy_is_imported_only_for_sweeps_and_checks():
    modules = _imports_after(
        "from gradcli.cli import cli\n"
        "cli.main(['eval', 'x*2', '--x', '1', '--json'], standalone_mode=False)"
    )
    assert "numpy" not in modules and "tomllib" not in modules


# Each part of the package may import its own modules and the parts of a lower rank, never a
# higher one: cli -> api -> runs -> output -> formulas -> gradcheck -> symbolic -> language ->
# engine -> errors.
RANKS = {"errors": 0, "limits": 0, "engine": 1, "language": 2, "symbolic": 3, "gradcheck": 4,
         "formulas": 5, "output": 6, "runs": 7, "api": 8, "cli": 9, "__main__": 9}


def _part(module: str) -> str:
    """``gradcli.engine.graph`` -> ``engine``; ``gradcli`` itself -> ``errors`` (its rank)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "errors"


def _imports(path: Path) -> list[str]:
    """Every module an ``import``/``from`` statement anywhere in the file names (also inside
    functions: a lazy import is still a dependency)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import (use gradcli.… paths)"
            names.append(node.module or "")
    return names


def test_imports_flow_one_way():
    """A module imports only its own part of gradcli or lower ones; nothing inside gradcli uses
    the api facade; click only in cli/, rich only in cli/ and output/, lark only to regenerate
    the parse tables."""
    for path in SOURCE.rglob("*.py"):
        module = ".".join(path.relative_to(SOURCE.parent).with_suffix("").parts)
        if path.name == "__init__.py":
            module = module.rsplit(".", 1)[0]
        part = _part(module) if module != "gradcli" else "api"  # the package: its facade
        for imported in _imports(path):
            top = imported.split(".")[0]
            if top == "gradcli":
                target = _part(imported)
                assert target in RANKS and RANKS[target] <= RANKS[part], (module, imported)
            if top == "click":
                assert part == "cli", module
            if top == "rich":
                assert part in ("cli", "output"), module
            if top == "lark":
                assert module == "gradcli.language.lalr", module


def test_every_subpackage_is_ranked_and_shipped():
    packages = {".".join(p.parent.relative_to(SOURCE.parent).parts)
                for p in SOURCE.rglob("__init__.py")} - {"gradcli"}
    assert {_part(p) for p in packages} <= set(RANKS)
    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    listed = set(shipped["tool"]["setuptools"]["packages"])
    assert packages <= listed


def test_no_eval_exec_or_pickle_anywhere_in_the_package():
    forbidden = re.compile(
        r"(?<![.\w])(eval|exec|compile)\s*\(|\bpickle\b|\byaml\.load\b|__import__"
    )
    for path in SOURCE.rglob("*.py"):
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
            code = line.split("#", 1)[0]
            assert not forbidden.search(code), f"{path.name}:{number}: {line.strip()}"


def test_import_gradcli_loads_nothing_heavy_until_a_name_is_used():
    """The CLI's Ctrl-C guard starts after `import gradcli`: that import must stay cheap."""
    modules = _imports_after("import gradcli")
    heavy = {"gradcli.gradcheck.evaluation", "gradcli.engine.graph", "gradcli.language.parser",
             "gradcli.engine.ops"}
    assert not heavy & modules
    import gradcli

    for name in gradcli.__all__:
        assert getattr(gradcli, name) is not None, name
    assert gradcli.parse is gradcli.language.parser.parse
    assert gradcli.Program is gradcli.engine.graph.Program
    with pytest.raises(AttributeError):
        gradcli.no_such_name  # noqa: B018


@pytest.mark.parametrize("before", ["signal.default_int_handler", "signal.SIG_IGN"])
def test_importing_the_cli_leaves_the_ctrl_c_handler_as_it_was(before):
    """Also when Ctrl-C is ignored (a command started in the background): it stays ignored.
    main() imports the parser and the core (and click, for the command lines it reads) under
    the guard."""
    modules = _imports_after(f"import signal\nsignal.signal(signal.SIGINT, {before})\n"
                             "from gradcli.cli import main\n"
                             "try:\n    main(['eval', 'x', '--x', '1', '--json'])\n"
                             "except SystemExit:\n    pass\n"
                             f"assert signal.getsignal(signal.SIGINT) is {before}")
    assert "gradcli.cli.plain_eval" in modules  # imported under the guard


# --- the tree's own shape (issue 29) -------------------------------------------------------------

GENERATED = {"language/_lalr_tables.py"}  # the LALR tables, written by language/lalr.py
MAX_LINES = 500


def _sources() -> dict[str, Path]:
    """Every module of the package by its path under src/gradcli (``engine/graph.py``)."""
    return {path.relative_to(SOURCE).as_posix(): path for path in sorted(SOURCE.rglob("*.py"))}


def _module_name(relative: str) -> str:
    """``engine/graph.py`` -> ``gradcli.engine.graph``; ``cli/__init__.py`` -> ``gradcli.cli``."""
    parts = ["gradcli", *relative.removesuffix(".py").split("/")]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, list[str]]:
    """Module -> the gradcli modules it imports, from every import statement of its AST: at the
    top, inside functions and under ``TYPE_CHECKING`` alike. ``from gradcli.cli import base``
    names the module ``base``; ``from gradcli.cli.base import cli`` names ``gradcli.cli.base``."""
    modules = {_module_name(relative): path for relative, path in _sources().items()}
    graph: dict[str, list[str]] = {}
    for module, path in modules.items():
        targets: dict[str, None] = {}
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(dict.fromkeys(a.name for a in node.names if a.name in modules))
            elif isinstance(node, ast.ImportFrom) and node.module in modules:
                for alias in node.names:
                    inner = f"{node.module}.{alias.name}"
                    targets[inner if inner in modules else node.module] = None
        graph[module] = [target for target in targets if target != module]
    return graph


def _strongly_connected(graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module, with an explicit stack."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(graph[start]))]
        while work:
            module, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(graph[target])))
                    break
                if target in on_stack:
                    low[module] = min(low[module], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _package(module: str) -> str:
    return module.rsplit(".", 1)[0]


def _cycle(graph: dict[str, list[str]], members: list[str]) -> str:
    """One circle through the component's first module, as ``a -> b -> a`` (a breadth-first
    search back to it, inside the component)."""
    inside = set(members)
    start = members[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for target in graph[module]:
                if target == start:
                    path = [module]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return " -> ".join([*reversed(path), start])
                if target in inside and target not in came_from:
                    came_from[target] = module
                    following.append(target)
        frontier = following
    return " <-> ".join(members)


def test_import_graph_finds_a_circle_through_a_function_level_import():
    graph = {"p.a": ["p.b"], "p.b": ["p.c"], "p.c": ["p.a", "p.d"], "p.d": []}
    assert _strongly_connected(graph) == [["p.a", "p.b", "p.c"]]
    assert _cycle(graph, ["p.a", "p.b", "p.c"]) == "p.a -> p.b -> p.c -> p.a"
    assert _strongly_connected({"p.a": ["p.b"], "p.b": []}) == []


def test_no_import_circle_inside_a_package():
    """Not through an import inside a function, nor one under TYPE_CHECKING: each is a
    dependency a reader has to follow, and a circle means neither module is understood alone."""
    graph = _import_graph()
    inside = {module: [t for t in targets if _package(t) == _package(module)]
              for module, targets in graph.items()}
    circles = {tuple(m.removeprefix("gradcli.") for m in members): _cycle(inside, members)
               for members in _strongly_connected(inside)}
    assert not circles, "import circles: " + "; ".join(circles.values())


def test_no_type_ignore_in_the_package():
    """A silenced type error is a type error: say the type (a cast, a narrower annotation)."""
    offenders = {relative for relative, path in _sources().items()
                 if re.search(r"#\s*type:\s*ignore", path.read_text("utf-8"))}
    assert not offenders, sorted(offenders)


def test_no_hand_written_module_over_500_lines():
    lengths = {relative: len(path.read_text("utf-8").splitlines())
               for relative, path in _sources().items() if relative not in GENERATED}
    offenders = {relative for relative, lines in lengths.items() if lines > MAX_LINES}
    assert not offenders, {relative: lengths[relative] for relative in offenders}
    assert all(path.exists() for path in (SOURCE / name for name in GENERATED))


def test_no_module_or_subpackage_named_array_something():
    """One engine for scalars and arrays: a module is not an ``array_`` twin of another."""
    named = {relative for relative in _sources()
             if any(part.startswith("array_") for part in relative.split("/"))}
    assert not named, sorted(named)
