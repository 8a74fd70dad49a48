"""The README's console examples are real: each `$ gradcli ...` block runs and prints what the
README shows (commands with pipes, redirections or files the checkout lacks are skipped).

After changing output on purpose, rewrite the README's blocks with ``python tests/test_readme.py``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"```console\n(.*?)```", re.S)
SHELL_SYNTAX = ("|", "<", ">", ";", "$(", "&&", "for ", "echo ")
WRITES_FILES = (" -o ", "--output", "--junit")  # examples that would write into the checkout


def examples(text: str) -> list[tuple[str, str]]:
    """(command, expected output) for every runnable `$ gradcli` line of the console blocks."""
    found = []
    for block in BLOCK.findall(text):
        for part in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, output = part.partition("\n")
            if runnable(command):
                found.append((command, tidy(output)))
    return found


def runnable(command: str) -> bool:
    if not command.startswith("gradcli ") or any(s in command for s in SHELL_SYNTAX):
        return False
    if any(s in command for s in WRITES_FILES):
        return False
    paths = [word for word in shlex.split(command) if word.endswith((".toml", ".grad", ".txt"))]
    return all((ROOT / path).exists() for path in paths)


def tidy(output: str) -> str:
    return "\n".join(line.rstrip() for line in output.strip("\n").split("\n"))


def run(command: str) -> str:
    dropped = ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES")  # a pipe's own plain width
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["GITHUB_ACTIONS"] = "false"
    argv = [sys.executable, "-m", "gradcli", *shlex.split(command)[1:]]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    return tidy(done.stdout + done.stderr)


EXAMPLES = examples(README.read_text("utf-8"))


@pytest.mark.parametrize(("command", "expected"), EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_readme_example(command, expected):
    assert run(command) == expected


def rewrite() -> None:
    """Replace each runnable example's output in the README with what it prints now."""
    text = README.read_text("utf-8")

    def block(match: re.Match) -> str:
        parts = re.split(r"^\$ ", match.group(1), flags=re.M)
        out = [parts[0]]
        for part in parts[1:]:
            command, _, output = part.partition("\n")
            if runnable(command):
                output = run(command) + "\n"
            out.append(f"{command}\n{output}")
        return "```console\n" + "$ ".join(out) + "```"

    README.write_text(BLOCK.sub(block, text), "utf-8")


if __name__ == "__main__":
    rewrite()
