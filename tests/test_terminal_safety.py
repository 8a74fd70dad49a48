"""User text is shown, never obeyed: no terminal escape sequence and no Rich markup from the input
reaches a terminal, and every JSON line is plain printable ASCII."""

from __future__ import annotations

import io
import json
import re

import pytest
from click.testing import CliRunner
from rich.console import Console

import gradcli
from gradcli.cli import cli
from gradcli.gradcheck.evaluation import LineOutcome
from gradcli.output.batch_lines import batch_line
from gradcli.output.errors import error_view

PAYLOADS = [
    "\x1b[2J\x1b[H",  # CSI: clear the screen
    "\x1b]0;owned\x07",  # OSC: set the window title, ended by BEL
    "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x9b31m",  # the 8-bit CSI
    "ok\x08\x08\x08no",  # backspaces over earlier text
    "\rforged line",  # carriage return
    "\x7f\x00\x05",  # DEL, NUL, ENQ
    "\u202eevil",  # right-to-left override
    "[bold red]markup[/]",  # Rich markup
    "[link=http://evil.example]x[/link]",
]
RICH_STYLE = re.compile(r"\x1b\[[0-9;]*m")  # what Rich itself writes for colours
FORBIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]")  # \t and \n are fine


def _visible(output: str) -> str:
    """The output without Rich's own colour codes: anything control left came from the input."""
    return RICH_STYLE.sub("", output)


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("where", ["x + {}", "{}", "x*2\ny = {} + 1", "sin({})"])
def test_cli_on_a_colour_terminal_never_passes_input_control_codes(payload, where):
    program = where.format(payload)
    runner = CliRunner()
    env = {"FORCE_COLOR": "1", "TERM": "xterm-256color", "NO_COLOR": None, "COLUMNS": "100"}
    single = runner.invoke(cli, ["eval", program, "--x", "1"], env=env)
    batch = runner.invoke(cli, ["eval", "-", "--x", "1"], input=program + "\n", env=env)
    for result in (single, batch):
        assert result.exit_code == 2
        output = result.stdout + result.stderr
        assert RICH_STYLE.search(output), "the terminal should get colours (test is real)"
        assert not FORBIDDEN.search(_visible(output)), repr(output)
        assert "Traceback" not in output
    if payload.startswith("["):
        assert payload in single.stderr  # markup is printed as typed, not applied


@pytest.mark.parametrize("payload", PAYLOADS)
def test_renderables_on_a_forced_terminal_without_colours_contain_no_escape(payload):
    console = Console(file=io.StringIO(), force_terminal=True, record=True, color_system=None,
                      width=80)
    try:
        gradcli.parse(f"x + {payload}")
    except gradcli.GradcliError as error:
        console.print(error_view(error, "file.grad: "))
        console.print(batch_line(LineOutcome(3, payload, error=error)))
    else:
        pytest.fail("a control character or markup is not valid gradcli")
    output = console.file.getvalue()
    assert "\x1b" not in output and not FORBIDDEN.search(output), repr(output)
    assert console.export_text() == output


def test_the_caret_still_lines_up_under_a_control_character():
    console = Console(file=io.StringIO(), width=300, color_system=None)
    with pytest.raises(gradcli.ParseError) as caught:
        gradcli.parse("x +\x1b[31m y")
    console.print(error_view(caught.value))
    source, caret = console.file.getvalue().splitlines()[1:3]
    assert source[caret.index("^")] == "?"  # shown in place of ESC, one column wide


@pytest.mark.parametrize("payload", PAYLOADS)
def test_json_lines_are_printable_ascii(payload):
    data = f"x*2\nx + {payload}\n{payload}\n".encode()
    result = CliRunner().invoke(cli, ["eval", "-", "--json", "--x", "1"], input=data)
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    for line in lines:
        assert all(32 <= ord(char) < 127 for char in line), repr(line)
        json.loads(line)
    assert json.loads(lines[1])["expression"] == f"x + {payload}"  # escaped, not lost
    assert not FORBIDDEN.search(result.stderr), repr(result.stderr)
