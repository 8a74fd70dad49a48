"""The manual page (issue 19): ``gradcli man`` makes it from the click commands (so it always
matches the installed program; no copy to keep in step), and it is valid roff that man renders."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import click
import pytest


def page() -> str:
    return subprocess.run([sys.executable, "-m", "gradcli", "man"], capture_output=True,
                          text=True, check=True).stdout


def test_every_command_and_option_is_in_the_page():
    from gradcli.cli import cli
    from gradcli.cli.usage import every_command

    text = page()
    root = click.Context(cli, info_name="gradcli")
    for name, command in every_command(cli).items():
        assert f'.SS "gradcli {name} ' in text, name
        for param in command.get_params(click.Context(command, parent=root)):
            for flag in getattr(param, "opts", []) if isinstance(param, click.Option) else []:
                assert flag.replace("-", r"\-") in text, (name, flag)
    assert "gradcli functions" in text and ".SH EXIT STATUS" in text


@pytest.mark.skipif(shutil.which("groff") is None, reason="needs groff")
def test_the_page_is_valid_roff_and_reads_as_text(tmp_path):
    (tmp_path / "gradcli.1").write_text(page())
    done = subprocess.run(["groff", "-man", "-Tutf8", "-ww", str(tmp_path / "gradcli.1")],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "MANWIDTH": "100"})
    assert done.stderr == ""  # -ww: every warning on
    rendered = subprocess.run(["col", "-b"], input=done.stdout, capture_output=True, text=True,
                              check=False).stdout or done.stdout
    assert "gradcli eval [OPTIONS] [EXPR]" in rendered
    assert '(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8' in rendered  # \b blocks keep their lines
    assert "--check-method [central|complex|richardson]" in rendered


def test_gradcli_help_points_to_the_functions_and_the_manual():
    done = subprocess.run([sys.executable, "-m", "gradcli", "--help"], capture_output=True,
                          text=True, check=True)
    assert "gradcli functions" in done.stdout and "gradcli man" in done.stdout
    assert "gradcli repl" in done.stdout

