"""Shell completion (issue 19), driven the way the shell drives it: ``_GRADCLI_COMPLETE`` with
``COMP_WORDS``/``COMP_CWORD`` in the environment of the real program, and once through the bash
function that ``gradcli completion bash`` prints."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

import pytest

SEED = '"(x*W+b-t)**2"'  # as typed on the command line: the shell's word keeps its quotes


def offers(words: str, shell: str = "bash", cwd: str | None = None) -> list[tuple[str, str]]:
    """(type, value) of each offer for the last word of ``words`` (after its space: a new one)."""
    cword = len(shlex.split(words)) - (0 if words.endswith(" ") else 1)
    env = {**os.environ, "_GRADCLI_COMPLETE": f"{shell}_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(cword)}
    done = subprocess.run([sys.executable, "-m", "gradcli"], env=env, capture_output=True,
                          text=True, check=False, cwd=cwd)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return [tuple(line.split(",", 1)) for line in done.stdout.splitlines() if line]


def values(words: str) -> list[str]:
    return [value for _, value in offers(words)]


def test_the_formula_s_variables_come_first_then_the_options():
    offered = values(f"gradcli eval {SEED} --")
    assert offered[:4] == ["--x", "--W", "--b", "--t"]
    assert {"--json", "--hessian", "--values", "--rtol"} <= set(offered[4:])
    assert "--x" not in offered[4:]


def test_a_variable_already_given_is_not_offered_again():
    offered = values(f"gradcli eval {SEED} --x 2 --W=3 --")
    assert offered[:2] == ["--b", "--t"] and "--x" not in offered and "--W" not in offered
    assert values(f"gradcli eval {SEED} --x 2 --W") == ["--W"]


def test_a_program_from_a_file_and_one_that_does_not_parse_yet(tmp_path):
    (tmp_path / "unit.grad").write_text("u = x*W\nz = u + b\nsigmoid(z)\n")
    assert [v for _, v in offers("gradcli eval -f unit.grad --", cwd=str(tmp_path))][:3] == [
        "--x", "--W", "--b"]
    assert values(f"gradcli graph -f {tmp_path / 'unit.grad'} --")[:3] == ["--x", "--W", "--b"]
    # half-typed: the names written so far, without functions, constants and assigned names
    assert values('gradcli eval "u = x*y; sin(u*pi + z" --')[:3] == ["--x", "--y", "--z"]
    # a name right after a number (2x, a slip for 2*x) is one too; an exponent (1e5) is not
    assert values('gradcli eval "2x + 3y" --')[:2] == ["--x", "--y"]
    offered = values('gradcli eval "1e5*x + 2.5E-3*y +" --')
    assert offered[:2] == ["--x", "--y"] and "--e5" not in offered and "--E" not in offered


def test_wrt_offers_the_variables_also_after_a_comma():
    assert values(f"gradcli diff {SEED} --wrt ") == ["x", "W", "b", "t"]
    assert values(f"gradcli diff {SEED} --wrt x,") == ["x,W", "x,b", "x,t"]
    assert values(f"gradcli diff {SEED} --wrt x,b") == ["x,b"]


def test_files_choices_commands_and_an_unfinished_value():
    assert offers("gradcli eval -f ") == [("file", "")]
    assert offers("gradcli eval x --values ") == [("file", "")]
    assert values('gradcli diff "x*y" --format ') == ["text", "latex", "python"]
    assert values("gradcli graph x --format m") == ["mermaid"]
    assert values("gradcli completion ") == ["bash", "zsh", "fish"]
    assert {"eval", "diff", "check", "completion", "repl", "man"} <= set(values("gradcli "))
    assert values(f"gradcli eval {SEED} --W ") == []  # a number is typed, not guessed


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_script_for_each_shell(shell):
    done = subprocess.run([sys.executable, "-m", "gradcli", "completion", shell],
                          capture_output=True, text=True, check=True)
    assert "_GRADCLI_COMPLETE" in done.stdout and f"{shell}_complete" in done.stdout
    env = {**os.environ, "_GRADCLI_COMPLETE": f"{shell}_complete",
           "COMP_WORDS": f"gradcli eval {SEED} --", "COMP_CWORD": "3"}
    if shell == "fish":  # fish gives the word under the cursor itself
        env["COMP_CWORD"] = "--"
    answer = subprocess.run([sys.executable, "-m", "gradcli"], env=env, capture_output=True,
                            text=True, check=True).stdout
    assert -1 < answer.find("--x") < answer.find("--t") < answer.find("--json")


def test_the_bash_function_offers_what_the_program_says(tmp_path):
    """The printed bash script, sourced into a real bash, fills COMPREPLY."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gradcli").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gradcli "$@"\n')
    (bin_dir / "gradcli").chmod(0o755)
    script = ('source <(gradcli completion bash); '
              f"COMP_WORDS=(gradcli eval '{SEED}' --); COMP_CWORD=3; "
              '_gradcli_completion gradcli; printf "%s\\n" "${COMPREPLY[@]}"')
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([shutil.which("bash") or "bash", "-c", script], env=env,
                          capture_output=True, text=True, check=True)
    assert done.stdout.split()[:5] == ["--x", "--W", "--b", "--t", "--set"]


def test_the_help_gives_the_start_up_line():
    done = subprocess.run([sys.executable, "-m", "gradcli", "completion", "--help"],
                          capture_output=True, text=True, check=True)
    assert 'eval "$(gradcli completion bash)"' in done.stdout
    assert "gradcli completion fish | source" in done.stdout


def test_a_function_s_parameters_and_the_keywords_are_not_offered():
    """Issue 15: ``f(a, b) = ...`` defines parameters, not inputs, parsed or half-typed."""
    program = '"f(a, b) = a*b + 1; f(x, y) if x > 0 and not y else z"'
    assert values(f"gradcli eval {program} --")[:3] == ["--x", "--y", "--z"]
    assert "--a" not in values(f"gradcli eval {program} --")
    half = '"f(a, b) = a*b + 1; f(x, y) if x > 0 and not y else (z"'
    offered = values(f"gradcli eval {half} --")
    assert offered[:3] == ["--x", "--y", "--z"]
    assert not {"--a", "--b", "--f", "--and", "--not", "--if", "--else"} & set(offered)


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_a_program_file_that_is_not_a_file_is_not_waited_for(kind, tmp_path):
    """A FIFO with no writer would block an open() and a read() forever; Tab must not wait."""
    path = {"fifo": tmp_path / "fifo", "directory": tmp_path, "device": "/dev/zero"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    cword = 4
    env = {**os.environ, "_GRADCLI_COMPLETE": "bash_complete",
           "COMP_WORDS": f"gradcli eval -f {path} --", "COMP_CWORD": str(cword)}
    done = subprocess.run([sys.executable, "-m", "gradcli"], env=env, capture_output=True,
                          text=True, timeout=20)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "plain,--json" in done.stdout.splitlines()


def test_brackets_nested_too_deep_still_offer_the_names(tmp_path):
    program = tmp_path / "deep.grad"
    program.write_text("y = " + "[" * 70 + "1" + "]" * 70 + "\nsum(y)*x*W\n")
    offered = values(f"gradcli eval -f {program} --")
    assert offered[:2] == ["--x", "--W"]
