"""A message that quotes the input stays one readable line, however long the quoted word."""

from __future__ import annotations

import os
import sys

from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.errors import shortened


def test_a_long_word_is_cut_to_its_ends_and_its_length():
    text = shortened("the number " + "9" * 100_000 + " is too large")
    assert text.startswith("the number 9999") and text.endswith(" is too large")
    assert "(100,000 characters)" in text and len(text) < 150
    assert shortened("short words stay as they are") == "short words stay as they are"


def test_cli_errors_echo_a_window_of_a_huge_line_not_all_of_it():
    big = "9" * 100_000
    for args in (["eval", f"x*{big}x", "--x", "1"], ["eval", "x", "--x", f"{big}q"],
                 ["eval", f"{big}e9999"]):
        done = CliRunner().invoke(cli, args)
        assert done.exit_code == 2, done.output
        assert len(done.output) < 1_000 and "characters" in done.output, done.output[:300]


def test_the_caret_stays_under_the_column_in_a_window():
    done = CliRunner().invoke(cli, ["eval", "y + " * 200 + "2x", "--y", "1"])
    lines = done.output.splitlines()
    source, caret = lines[1], lines[2]
    assert source.startswith("  …") and caret.index("^") == source.index("x")


def test_on_a_narrow_terminal_the_window_fits_so_the_caret_stays_under_the_column():
    """A 120-character window wrapped on an 80-column terminal, and the caret line, printed
    after it, sat under the wrapped tail (a bug hunt)."""
    import re

    import pexpect

    program = ("alpha_one + beta_two + gamma_three + delta_four + epsilon_five + zeta_six + "
               "eta_seven + theta_eight +* iota_nine + kappa_ten")
    for width in (80, 60):
        environment = {key: value for key, value in os.environ.items()
                       if key not in ("COLUMNS", "LINES", "NO_COLOR")}  # the terminal's size
        child = pexpect.spawn(sys.executable, ["-m", "gradcli", "eval", program],
                              dimensions=(24, width), encoding="utf-8",
                              env={**environment, "TERM": "xterm"})
        child.expect(pexpect.EOF, timeout=30)
        lines = re.sub(r"\x1b\[[0-9;]*m", "", child.before).replace("\r", "").splitlines()
        source = next(line for line in lines if line.startswith("  …"))
        caret = lines[lines.index(source) + 1]
        assert len(source) <= width and caret.index("^") == source.index("+*") + 1, lines


def test_the_api_error_is_shortened_too():
    try:
        gradcli.parse("1" * 1_000 + "e999999")
    except gradcli.ParseError as error:
        assert len(error.message) < 200


def test_a_trailing_comment_past_the_length_limit_keeps_a_valid_line_valid():
    assert gradcli.evaluate("x*2  # " + "c" * 9_000_000, {"x": 3}).value == 6.0
    done = CliRunner().invoke(cli, ["eval", "-", "--x", "3", "--json"],
                              input="x*2 # " + "c" * 9_000_000 + "\nx+1\n")
    assert done.exit_code == 0 and done.output.count('"error":null') == 2


def test_program_text_past_the_limit_is_still_refused():
    try:
        gradcli.parse("x+" * 4_000_001 + "x")
    except gradcli.UsageError as error:
        assert "longer than 8,000,000 characters" in error.message
    else:
        raise AssertionError("not refused")
