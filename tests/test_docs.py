"""The console examples of README.md and docs/*.md are real: every ```console block runs, and
each `$ command` prints exactly the output shown under it (stdout, then stderr).

How a block runs: each `$ ` line is given to `bash -c`, one after the other, in a fresh temporary
directory that holds a copy of `examples/` -- so relative paths read as they do from the root of
the repository, and whatever a command writes (`-o tanh.png`, `--junit`) lands there and not in
the checkout. `gradcli` and `python` on the PATH are this interpreter (`python -m gradcli`).
`$ echo $?` shows the exit status of the command before it. Pipes, redirections, loops and
command substitution work as in a terminal.

A block that cannot run here is marked on the line right before its fence with
`<!-- not run: REASON -->`; there are no other exceptions, and a test fails when a console
block is neither run nor marked, or when a `$ gradcli` line hides in a block of another kind.

After changing output on purpose, rewrite the shown outputs with ``python tests/test_docs.py``
(all files) or ``python tests/test_docs.py docs/checking.md`` (some), then read the diff.

The ```pycon blocks of the same files run as doctests (a file's blocks in order, in one
namespace, in such a scratch directory), and their relative links `](path)` and
`](path#anchor)` must point at files (and headings) that exist.
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README_LIMIT = 12 * 1024  # bytes: the README is an overview; the manual is docs/
NOT_RUN = re.compile(r"^<!-- not run: (\S.*?) -->$")
TIMEOUT = 60  # seconds per command


def documents() -> list[Path]:
    """The files whose console examples run: README.md and every docs/*.md."""
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


@dataclass
class Block:
    """One fenced code block: where it is, its language, its lines, and a not-run reason."""

    path: Path
    start: int  # index of the opening fence line
    end: int  # index of the closing fence line
    lang: str
    lines: list[str]
    not_run: str | None = None
    commands: list[tuple[str, str]] = field(default_factory=list)  # (command, expected output)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.start + 1}"

    @property
    def runs(self) -> bool:
        return self.lang == "console" and self.not_run is None


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file (``` fences at the start of a line)."""
    lines = path.read_text("utf-8").split("\n")
    found, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang = lines[i][3:].strip()
            end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```"), None)
            assert end is not None, f"{path.relative_to(ROOT)}:{i + 1}: unclosed code fence"
            block = Block(path, i, end, lang, lines[i + 1:end])
            marker = NOT_RUN.match(lines[i - 1].strip()) if i > 0 else None
            block.not_run = marker.group(1) if marker else None
            if lang == "console":
                block.commands = commands(block)
            found.append(block)
            i = end
        i += 1
    return found


def commands(block: Block) -> list[tuple[str, str]]:
    """(command, expected output) for each `$ ` line of a console block."""
    text = "\n".join(block.lines)
    parts = re.split(r"^\$ ", text, flags=re.M)
    if parts[0].strip():
        return [("", parts[0])]  # text before the first `$ `: reported by the structure test
    found = []
    for part in parts[1:]:
        command, _, output = part.partition("\n")
        found.append((command, tidy(output)))
    return found


def tidy(output: str) -> str:
    return "\n".join(line.rstrip() for line in output.strip("\n").split("\n"))


def render(pairs: list[tuple[str, str]]) -> str:
    return "".join(f"$ {command}\n" + (f"{output}\n" if output else "")
                   for command, output in pairs)


ALL_BLOCKS = [block for path in documents() for block in blocks(path)]
CONSOLE = [block for block in ALL_BLOCKS if block.lang == "console"]
RUN = [block for block in CONSOLE if block.runs]
MARKED = [block for block in CONSOLE if not block.runs]


class Shell:
    """Runs a block's commands in a scratch copy of examples/, as a reader's terminal would."""

    def __init__(self, scratch: Path) -> None:
        self.cwd = scratch / "work"
        shutil.copytree(ROOT / "examples", self.cwd / "examples")
        bin_dir = scratch / "bin"
        bin_dir.mkdir()
        for name, line in (("gradcli", f'exec "{sys.executable}" -m gradcli "$@"'),
                           ("python", f'exec "{sys.executable}" "$@"')):
            shim = bin_dir / name
            shim.write_text(f"#!/bin/sh\n{line}\n")
            shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
        dropped = ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "GRADCLI_JOBS")
        self.env = {k: v for k, v in os.environ.items() if k not in dropped}
        self.env["GITHUB_ACTIONS"] = "false"  # the CI this runs in must not change the output
        self.env["PATH"] = f"{bin_dir}{os.pathsep}{self.env.get('PATH', '')}"
        self.status = 0

    def run(self, command: str) -> str:
        if command == "echo $?":
            return str(self.status)
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                              env=self.env, cwd=self.cwd, timeout=TIMEOUT, check=False)
        self.status = done.returncode
        return tidy(done.stdout + done.stderr)


def run_block(block: Block) -> list[tuple[str, str]]:
    with tempfile.TemporaryDirectory(prefix="gradcli-docs-") as scratch:
        shell = Shell(Path(scratch))
        return [(command, shell.run(command)) for command, _ in block.commands]


@pytest.mark.parametrize("block", RUN, ids=[block.where for block in RUN])
def test_console_block_prints_what_it_shows(block):
    assert render(run_block(block)) == render(block.commands)


PYCON = sorted({block.path for block in ALL_BLOCKS if block.lang == "pycon"})


@pytest.mark.parametrize("path", PYCON, ids=[str(path.relative_to(ROOT)) for path in PYCON])
def test_python_blocks_run_as_doctests(path, tmp_path, monkeypatch):
    """A file's ```pycon blocks run in order in one namespace, as one doctest session."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    for block in (b for b in blocks(path) if b.lang == "pycon"):
        text = "\n".join(block.lines) + "\n"
        test = doctest.DocTestParser().get_doctest(text, namespace, block.where, str(path),
                                                   block.start + 1)
        test.globs = namespace  # get_doctest copies it; the blocks share one
        runner.run(test, out=report.append, clear_globs=False)
    assert runner.summarize(verbose=False).failed == 0, "".join(report)


def test_every_console_block_is_run_or_marked():
    """No silent skips: each console block runs in full, or says why not; nothing else hides
    a `$ gradcli` line, and every not-run marker sits right before a console block."""
    assert RUN, "no console examples found"
    for block in CONSOLE:
        assert block.commands, f"{block.where}: a console block without a `$ ` command"
        assert block.commands[0][0], f"{block.where}: text before the first `$ ` line"
    for block in MARKED:
        assert block.not_run, f"{block.where}: not run, and no reason given"
    for block in ALL_BLOCKS:
        if block.lang != "console":
            hidden = [line for line in block.lines if line.startswith("$ gradcli")]
            assert not hidden, f"{block.where}: `$ gradcli` in a ```{block.lang} block: {hidden[0]}"
    for path in documents():
        lines = path.read_text("utf-8").split("\n")
        fences = {block.start for block in CONSOLE if block.path == path}
        for i, line in enumerate(lines):
            if NOT_RUN.match(line.strip()):
                assert i + 1 in fences, f"{path.relative_to(ROOT)}:{i + 1}: a not-run marker " \
                                        "that is not right before a ```console fence"
    # Count what runs, independently of the parser above: every `$ ` line of a console block.
    shown = 0
    for path in documents():
        text = path.read_text("utf-8")
        for fenced in re.findall(r"^```console\n(.*?)^```$", text, flags=re.S | re.M):
            shown += len(re.findall(r"^\$ ", fenced, flags=re.M))
    run = sum(len(block.commands) for block in RUN)
    marked = sum(len(block.commands) for block in MARKED)
    assert run + marked == shown
    assert len(RUN) + len(MARKED) == len(CONSOLE)


def test_readme_is_an_overview():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes; move detail to docs/"


def test_dated_measurements_live_in_docs_performance():
    """Single-run numbers with a date belong in docs/performance.md, nowhere else."""
    for path in [*documents(), ROOT / "benchmarks" / "README.md"]:
        if path != DOCS / "performance.md":
            dates = re.findall(r"\b20\d\d-\d\d-\d\d\b", path.read_text("utf-8"))
            assert not dates, f"{path.relative_to(ROOT)} has dated numbers: {dates}"


LINK = re.compile(r"\]\(([^)\s]+)\)")


def slugs(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    fenced = False
    for line in path.read_text("utf-8").split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def linked() -> list[tuple[Path, str]]:
    files = [*documents(), ROOT / "benchmarks" / "README.md", ROOT / "fuzz" / "README.md"]
    return [(path, target) for path in files
            for target in LINK.findall(path.read_text("utf-8"))
            if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize(("path", "target"), linked(),
                         ids=[f"{p.relative_to(ROOT)}->{t}" for p, t in linked()])
def test_relative_link_points_at_a_file(path, target):
    file, _, anchor = target.partition("#")
    goal = (path.parent / file).resolve() if file else path
    assert goal.exists(), f"{path.relative_to(ROOT)}: {target} does not exist"
    if anchor and goal.suffix == ".md":
        assert anchor in slugs(goal), f"{path.relative_to(ROOT)}: no heading #{anchor} in {file}"


def rewrite(paths: list[Path]) -> None:
    """Replace the output of every command of the runnable blocks with what it prints now."""
    for path in paths:
        lines = path.read_text("utf-8").split("\n")
        for block in reversed([b for b in blocks(path) if b.runs]):
            assert all(command for command, _ in block.commands), f"{block.where}: not `$ ` first"
            body = render(run_block(block)).rstrip("\n").split("\n")
            lines[block.start + 1:block.end] = body
        text = "\n".join(lines)
        if text != path.read_text("utf-8"):
            path.write_text(text, "utf-8")
            print(f"rewrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    chosen = [Path(arg).resolve() for arg in sys.argv[1:]] or documents()
    rewrite(chosen)
