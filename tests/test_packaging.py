"""The grammar ships inside the package, the core stays free of CLI libraries, nothing is eval'd."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "gradcli"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """An sdist and the wheel built from it (the route pip takes from an sdist)."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return out


def test_wheel_built_from_the_sdist_contains_the_grammar(built):
    (wheel,) = built.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "gradcli/grammar/expr.lark" in names
    assert "gradcli/cli/__init__.py" in names
    assert "gradcli/_lalr_tables.py" in names  # the parse tables: no Lark needed at start-up


def test_sdist_contains_the_top_level_grammar(built):
    (sdist,) = built.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert any(name.endswith("/grammar/expr.lark") for name in names)


def test_installed_package_reads_the_grammar():
    from importlib import resources

    text = resources.files("gradcli.grammar").joinpath("expr.lark").read_text("utf-8")
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
    unused = {"subprocess", "csv", "lark", "gradcli.pictures", "gradcli.printers", "rich.tree",
              "rich._emoji_codes"}
    assert ("gradcli.render" in modules) == (not flags)  # the table was rendered with Rich
    assert not unused & modules


def test_numpy_is_imported_only_for_sweeps_and_checks():
    modules = _imports_after(
        "from gradcli.cli import cli\n"
        "cli.main(['eval', 'x*2', '--x', '1', '--json'], standalone_mode=False)"
    )
    assert "numpy" not in modules and "tomllib" not in modules


def test_imports_flow_one_way():
    """cli -> library -> core: the core imports no outer layer, nothing imports the CLI, only the
    parser's table generator imports lark, and only the CLI and render modules import rich/click."""
    core = {"ops", "graph", "notation", "errors", "vector", "column_replay", "points",
            "limits"}
    for path in SOURCE.rglob("*.py"):
        text = path.read_text("utf-8")
        in_cli = path.parent.name == "cli"
        imported = set(re.findall(r"^from \.+(\w+) import", text, re.MULTILINE))
        if path.stem in core and not in_cli:
            assert imported <= core, (path.name, imported - core)
        if not in_cli and path.stem != "__main__":
            assert "cli" not in imported, path.name
        if path.stem not in {"parser", "lalr"}:  # lalr imports lark only to regenerate tables
            assert not re.search(r"^\s*(from|import) lark", text, re.MULTILINE), path.name
        if not in_cli and path.stem not in {"render", "render_sweep"}:
            assert not re.search(r"^\s*(from|import) (rich|click)", text, re.MULTILINE), path.name


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
    assert not {"gradcli.api", "gradcli.graph", "gradcli.parser", "gradcli.ops"} & modules
    import gradcli

    for name in gradcli.__all__:
        assert getattr(gradcli, name) is not None, name
    assert gradcli.parse is gradcli.parser.parse and gradcli.Program is gradcli.graph.Program
    with pytest.raises(AttributeError):
        gradcli.no_such_name  # noqa: B018


@pytest.mark.parametrize("before", ["signal.default_int_handler", "signal.SIG_IGN"])
def test_importing_the_cli_leaves_the_ctrl_c_handler_as_it_was(before):
    """Also when Ctrl-C is ignored (a command started in the background): it stays ignored."""
    modules = _imports_after(f"import signal\nsignal.signal(signal.SIGINT, {before})\n"
                             "import gradcli.cli\n"
                             f"assert signal.getsignal(signal.SIGINT) is {before}")
    assert "gradcli.cli.startup" in modules
