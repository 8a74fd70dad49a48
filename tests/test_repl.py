"""``gradcli repl`` (issue 19) as a person uses it: the real program on a pseudo-terminal
(pexpect), keys typed, and the screen read back through a terminal emulator (pyte) -- plus the
piped mode, where a session is a script."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

import gradcli

pexpect = pytest.importorskip("pexpect")
pyte = pytest.importorskip("pyte")

ROWS, COLUMNS = 50, 110


class Terminal:
    """gradcli on a pseudo-terminal, its output kept on an emulated screen."""

    def __init__(self, tmp_path, *args: str, **env: str) -> None:
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.Stream(self.screen)
        environment = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm",
                       "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": str(COLUMNS), **env}
        environment.pop("NO_COLOR", None) if "NO_COLOR" not in env else None
        self.child = pexpect.spawn(sys.executable, ["-m", "gradcli", *args], env=environment,
                                   encoding="utf-8", dimensions=(ROWS, COLUMNS), timeout=30)
        self.raw = ""

    def read(self) -> None:
        while True:
            try:
                chunk = self.child.read_nonblocking(100_000, timeout=0.05)
            except (pexpect.TIMEOUT, pexpect.EOF):
                return
            self.raw += chunk
            self.stream.feed(chunk)

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def wait_for(self, text: str, timeout: float = 30) -> str:
        """Read until ``text`` is on the screen; the screen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.read()
            if text in self.text():
                return self.text()
            if not self.child.isalive():
                self.read()
                break
        raise AssertionError(f"{text!r} not on the screen:\n{self.text()}")

    def type(self, keys: str) -> None:
        self.child.send(keys)

    def at_prompt(self) -> bool:
        """The cursor is on an empty prompt line: the program waits for the next entry."""
        return self.screen.display[self.screen.cursor.y].rstrip() == "gradcli>"

    def enter(self, line: str) -> str:
        """Type a line and Enter; the screen once the next empty prompt is up."""
        seen = len(self.raw)
        self.type(line + "\r")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self.read()
            if len(self.raw) > seen and self.at_prompt():
                return self.text()
        raise AssertionError(f"no prompt after {line!r}:\n{self.text()}")

    def close(self) -> int:
        self.type("\x04")  # Ctrl-D
        self.child.expect(pexpect.EOF)
        self.child.close()
        return self.child.exitstatus


def table_rows(screen: str, title: str) -> list[list[str]]:
    """The cells of the table under ``title`` (its header row first), as drawn with boxes."""
    rows = []
    for line in screen[screen.index(title):].splitlines()[1:]:
        if "│" not in line:
            if rows and not line.strip("─┼├┤└┘┴ "):
                continue
            if rows:
                break
            continue
        rows.append([cell.strip() for cell in line.split("│") if cell.strip()])
    return rows


@pytest.fixture
def terminal(tmp_path):
    opened = []

    def open_terminal(*args: str, **env: str) -> Terminal:
        opened.append(Terminal(tmp_path, *args, **env))
        opened[-1].wait_for("gradcli>")
        return opened[-1]

    yield open_terminal
    for each in opened:
        if each.child.isalive():
            each.child.terminate(force=True)


def test_definitions_persist_and_an_expression_prints_what_eval_prints(terminal):
    term = terminal("repl", NO_COLOR="1")
    term.enter("W = 3; b = 1; t = 8")
    term.enter("u = x*W")
    screen = term.enter("x = 2")
    assert "error:" not in screen
    screen = term.enter("(u + b - t)**2")
    # the seed example's numbers, by hand: (2*3 + 1 - 8)**2 = 1, d/dx = 2*(-1)*3 = -6
    assert "value 1" in screen and "✓ check passed" in screen
    gradients = {row[0]: row[1:3] for row in table_rows(screen, "gradients of the output")[1:]}
    assert gradients == {"W": ["3", "-4"], "b": ["1", "-2"], "t": ["8", "2"], "x": ["2", "-6"]}
    assert not colours(term.raw)  # NO_COLOR: neither the prompt nor the tables have colours
    assert term.close() == 0


def test_without_no_color_the_tables_have_colours(terminal):
    term = terminal("repl")
    screen = term.enter("x = 2; x**2")
    assert "value 4" in screen and colours(term.raw)


def colours(raw: str) -> set[str]:
    """The colour codes among the SGR sequences (ESC [ ... m) a program wrote: 30-38, 40-48,
    90-97, 100-107 (bold, underline and resets are not colours)."""
    found = set()
    for params in re.findall(r"\x1b\[([0-9;]*)m", raw):
        for code in params.split(";"):
            if code.isdigit() and (30 <= int(code) <= 38 or 40 <= int(code) <= 48
                                   or 90 <= int(code) <= 107):
                found.add(code)
                if code in ("38", "48"):
                    break  # the numbers after it are the colour's own
    return found


def test_commands_about_the_last_expression(terminal):
    term = terminal("repl")
    term.enter("y = 2")
    term.enter("x**3*y")
    screen = term.enter(":diff x")
    assert "d/dx = 3*x**2*y" in screen  # d/dx x**3*y, by hand
    screen = term.enter("x = 1")
    term.type("\x0c")  # Ctrl-L: a clean screen for the next output
    screen = term.enter(":hessian")
    assert "Hessian of the output" in screen  # d2/dx2 = 6*x*y = 12 at x = 1, y = 2
    header, *rows = table_rows(screen, "Hessian of the output")
    hessian = {(row[0], name): cell
               for row in rows for name, cell in zip(header, row[1:], strict=True)}
    # by hand: d2/dx2 = 6*x*y = 12, d2/dx dy = 3*x**2 = 3, d2/dy2 = 0
    assert hessian[("x", "x")] == "12 ✓" and hessian[("x", "y")] == "3 ✓"
    assert hessian[("y", "y")] == "0"
    term.type("\x0c")
    assert "#2 x" in term.enter(":graph") or "x**3" in term.text()
    screen = term.enter(":vars")
    assert "y = 2" in screen and "x = 1" in screen
    screen = term.enter(":nope")
    assert "no such command :nope" in screen and ":help lists the commands" in screen
    screen = term.enter(":help")
    assert all(command in screen for command in (":diff", ":hessian", ":graph", ":json",
                                                 ":vars", ":reset", ":quit"))
    term.enter(":reset")
    screen = term.enter(":vars")
    assert "no definitions yet" in screen
    term.type(":quit\r")
    term.child.expect(pexpect.EOF)


def test_errors_print_and_the_session_goes_on(terminal):
    term = terminal("repl")
    term.type("sqrt(x\r")
    screen = term.wait_for("\n........")  # an open parenthesis continues the entry
    assert "error:" not in screen
    screen = term.enter(" - 1)*2 + log(x)")
    assert "free variables: x" in screen  # one entry of two lines: sqrt(x - 1)*2 + log(x)
    screen = term.enter("x = 0.5")
    assert "error:" not in screen
    screen = term.enter("sqrt(x - 1)")
    assert "numeric error: square root of a negative number" in screen
    screen = term.enter("2 +* 3")
    assert "parse error" in screen and "^" in screen
    screen = term.enter("1 + 1")
    assert "value 2" in screen
    assert term.close() == 0


def test_ctrl_c_cancels_the_line_and_tab_completes(terminal, tmp_path):
    term = terminal()  # `gradcli` alone on a terminal opens the session
    term.enter("weight = 3")
    term.type("sqr")
    term.type("\t")
    term.wait_for("sqrt")
    term.type("(wei\t")
    term.wait_for("sqrt(weight")
    term.type(")\r")
    screen = term.wait_for("value 1.73205")
    term.type("1 + 2 + 3")
    term.type("\x03")  # Ctrl-C: the line is dropped
    screen = term.enter("")
    assert "value 6" not in screen
    term.type(":he\t")
    term.wait_for(":help")
    term.type("\x03")
    assert term.close() == 0
    history = (tmp_path / "state" / "gradcli" / "history").read_text()
    assert "weight = 3" in history and "sqrt(weight)" in history


def test_ctrl_c_stops_an_evaluation_and_the_session_goes_on(terminal):
    """A Hessian of 250 variables takes seconds: Ctrl-C stops it, the definitions stay."""
    term = terminal("repl")
    term.enter("; ".join(f"x{i} = {i % 7 + 1}" for i in range(250)))
    term.type("\x0c")
    time.sleep(0.5)
    term.read()  # the redrawn screen, with its own bracketed-paste codes
    seen = len(term.raw)
    term.type(":hessian " + " + ".join(f"sin(x{i}*x{i + 1})" for i in range(249)) + "\r")
    # Ctrl-C once the line is accepted: prompt_toolkit has left raw mode (bracketed paste off),
    # so the key is a SIGINT, not a character of the next line
    while "\x1b[?2004l" not in term.raw[seen:]:
        term.read()
    time.sleep(0.3)
    term.type("\x03")
    screen = term.wait_for("interrupted")
    assert "Hessian of the output" not in screen
    term.type("\x0c")
    screen = term.enter("x3 + 1")
    assert "value 5" in screen  # x3 = 3 % 7 + 1 = 4
    assert term.close() == 0


def test_history_is_kept_between_sessions(terminal):
    first = terminal("repl")
    first.enter("q = 41")
    assert first.close() == 0
    second = terminal("repl")
    # The up arrow: the last entry of the earlier session. prompt_toolkit reads the history
    # file in a thread as the prompt comes up; a key pressed before that finds none yet, so
    # press it again, as a person would (with one entry, more presses stay on it).
    for _ in range(20):
        second.type("\x1b[A")
        try:
            second.wait_for("q = 41", timeout=1.5)
            break
        except AssertionError:
            continue
    second.wait_for("q = 41")
    second.enter("")  # runs the recalled line; the next prompt comes up empty
    assert second.close() == 0


def test_a_piped_session_is_a_script():
    script = "W = 3\nu = x*W\nx = 2\n(u +\n 1)**2\n:diff x\nlog(-x)\n"
    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input=script,
                          capture_output=True, text=True, check=False)
    assert "value 49" in done.stdout  # (2*3 + 1)**2
    assert "d/dx = 2*W*(W*x + 1)" in done.stdout
    assert "logarithm of a non-positive number" in done.stderr
    assert done.returncode == 3 and "Traceback" not in done.stderr


def test_a_definition_may_call_the_session_s_own_function():
    """u = h(x) was "unknown function h": the definition was parsed alone first (a bug hunt)."""
    for script in ("h(a) = a*a + 1\nu = h(x)\nx = 2\nu*3\n",
                   "h(a) = a*a + 1; u = h(x); x = 2; u*3\n"):
        done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input=script,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0 and "value 15" in done.stdout, done.stderr
    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"],
                          input="h(a) = a*a + 1\nu = k(x)\n", capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2 and "unknown function k" in done.stderr


def test_a_call_with_the_wrong_count_names_the_definition_not_a_line_of_the_session():
    """The hint said "defined as f(a) on line 1": a line of the program the session puts
    together, not an entry the user typed (a bug hunt)."""
    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"],
                          input="W = 3\nb = 1\nf(a) = a*2\nf(x, y)\n", capture_output=True,
                          text=True, check=False)
    assert done.returncode == 2 and "f takes 1 argument, not 2" in done.stderr
    assert "hint: it is defined as f(a) (:vars lists them)" in done.stderr
    assert "on line" not in done.stderr


def test_a_failed_check_of_a_graph_is_the_session_s_status():
    """:graph printed "✗ check failed" and the session ended 0 (a bug hunt); gradcli graph
    exits 1 there, and so does the session now."""
    for script, status in (("x = 0\n:graph relu(x)\n", 1), ("x = 1\n:graph relu(x)\n", 0)):
        done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input=script,
                              capture_output=True, text=True, check=False)
        assert done.returncode == status, done.stdout + done.stderr


def test_a_piped_session_reads_bytes_that_are_not_utf8_as_a_batch_does():
    """\xff became a lone surrogate, "unexpected character '\\udcff'" with the hint to delete
    an invisible U+DCFF (a bug hunt); a batch reads U+FFFD, and so does the session now."""
    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input=b"x = 2\n\xff*x\nx*3\n",
                          capture_output=True, check=False)
    err = done.stderr.decode()
    assert "unexpected character '\ufffd'" in err and "udcff" not in err.lower(), err
    assert "value 6" in done.stdout.decode() and done.returncode == 2


def _diff_lines(*args: str) -> list[str]:
    """What ``gradcli diff`` prints for the same program (the session's :diff takes its path)."""
    from click.testing import CliRunner

    from gradcli.cli import cli

    done = CliRunner().invoke(cli, ["diff", *args])
    assert done.exit_code == 0, done.output
    return done.stdout.splitlines()


def test_diff_in_the_session_handles_array_programs(terminal):
    """Issue 29: :diff of an array program prints what gradcli diff prints for it, the
    session's arrays giving the shapes (tests/test_diff_given_arrays.py checks the
    derivatives against closed forms)."""
    term = terminal("repl", NO_COLOR="1")
    term.enter("W = [[1, 2], [3, 4]]; x = [1, -1]")
    term.enter("sum((W@x)**2)")
    term.type("\x0c")
    screen = term.enter(":diff")
    assert "scalar programs" not in screen
    for line in _diff_lines("sum((W@x)**2)", "--shape", "W=2x2", "--shape", "x=2"):
        assert line in screen
    assert "note: checked at" in screen
    assert term.close() == 0


def test_a_piped_session_differentiates_an_array_output():
    script = "W = [[1, 2], [3, 4]]\nx = [1, -1]\nsoftmax(W@x)\n:diff x\n"
    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input=script,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    for line in _diff_lines("softmax(W@x)", "--wrt", "x", "--shape", "W=2x2", "--shape", "x=2"):
        assert line in done.stdout
    assert "note: checked at 3 points" in done.stdout


def test_bare_gradcli_in_a_pipe_still_prints_the_help():
    done = subprocess.run([sys.executable, "-m", "gradcli"], input="", capture_output=True,
                          text=True, check=False)
    assert done.returncode == 2 and "Usage: gradcli" in done.stderr + done.stdout


def test_the_session_s_definitions_are_ordered_by_use():
    """Definitions may come in any order; one defined again replaces the old; a circle is
    refused and the session keeps what it had."""
    from gradcli.cli.session import Session
    from gradcli.errors import UsageError

    session = Session()
    session.define("u", "x*W")
    session.define("W", "3")
    session.define("x", "2")
    assert session.source("u + 1") == "W = 3\nx = 2\nu = x*W\nu + 1"
    session.define("W", "4")
    assert session.source("u") == "W = 4\nx = 2\nu = x*W\nu"
    with pytest.raises(UsageError, match="in terms of each other"):
        session.define("x", "u*2")
    assert session.definitions == {"u": "x*W", "W": "4", "x": "2"}
    # a chain 3000 deep, defined last-first: an explicit stack, no recursion limit
    chain = Session({f"v{n}": f"v{n - 1} + 1" for n in range(3000, 1, -1)} | {"v1": "1"})
    assert chain.source("v3000").splitlines()[:2] == ["v1 = 1", "v2 = v1 + 1"]


def test_a_session_keeps_its_functions_and_piecewise_definitions():
    """Issue 15: ``f(a) = ...`` persists like a definition; calls pull it (and what it calls)
    into the program; its parameters are not the session's names."""
    script = ("f(a) = a*2\nsq(b) = f(b)*b\nx = 3\nsq(x) + f(x) if x > 0 else 0\n:vars\n"
              ":diff\n:del f\nf(a) = a*3\nsq(x)\n")
    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input=script,
                          capture_output=True, text=True, timeout=60, check=False)
    assert "Traceback" not in done.stderr
    assert "value 24" in done.stdout and "value 27" in done.stdout  # 2*3*3 + 6, then 3*3*3
    assert "f(a) = a*2\nsq(b) = f(b)*b\nx = 3\n" in done.stdout
    assert "d/dx = where(x > 0, 4*x + 2, 0)" in done.stdout
    assert "sq uses f" in done.stderr


def test_free_variables_are_explained_in_the_session_s_own_terms():
    """A session has no --strict and no --y: its note says how to bind a name there (as the
    notebook's says how in Python), never a command-line option it cannot take."""
    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input="x*y\n",
                          capture_output=True, text=True, check=False)
    assert "free variables: x, y (define them, as x = 2, for numbers)" in done.stdout
    assert "--strict" not in done.stdout
    from gradcli.output.notebook import result_text

    shown = result_text(gradcli.evaluate("x*y", {"x": 2}, strict=False))
    assert "free variables: y (give them values for numbers; strict=True makes this an error)" \
        in shown


# --- hostile input (issue 27) -----------------------------------------------------------------

def test_a_matrix_split_over_lines_continues_the_entry(terminal):
    term = terminal("repl", NO_COLOR="1")
    term.type("y = [[1, 2],\r")
    term.wait_for("\n........")  # an open bracket continues the entry, as in a file
    term.enter(" [3, 4]]")
    screen = term.enter("sum(y*y)")
    assert "value 30" in screen and "error:" not in screen  # 1 + 4 + 9 + 16
    piped = subprocess.run([sys.executable, "-m", "gradcli", "repl"], text=True,
                           input="y = [1,\n2]\nsum(y)*3\n", capture_output=True)
    assert piped.returncode == 0 and "value 9" in piped.stdout, piped.stderr


def test_a_90_kb_paste_is_read_at_once(terminal):
    """A terminal pastes as one bracketed sequence: 30,000 lines of a matrix, then its sum."""
    count = 30_000
    text = "y = [" + ",\n".join(str(i % 10) for i in range(count)) + "]"
    assert len(text) > 90_000
    term = terminal("repl", NO_COLOR="1")
    started = time.monotonic()
    term.type("\x1b[200~" + text + "\x1b[201~\r")
    term.wait_for("gradcli>", timeout=60)
    screen = term.enter("sum(y)")
    assert f"value {sum(i % 10 for i in range(count))}" in screen, screen
    assert time.monotonic() - started < 30


def test_the_continuation_test_is_linear_in_the_entry():
    """Asked at every key of a 60 KB paste that arrives as keys: a key costs a comparison and
    its own line, not a count over the whole entry (that took minutes)."""
    from gradcli.cli.session import GrowingEntry, open_brackets

    text = "(x + [1,  # a comment (\n" * 2500
    entry = GrowingEntry()
    started = time.perf_counter()
    depths = [entry.open_brackets(text[:end]) for end in range(len(text) + 1)]
    assert time.perf_counter() - started < 5
    assert depths[-1] == open_brackets(text) == 5000
    assert depths[len(text) // 2 + 7] == open_brackets(text[:len(text) // 2 + 7])
    assert entry.open_brackets("x = (") == 1  # a new entry starts again


@pytest.mark.parametrize("kind", ["device", "directory"])
def test_a_history_that_cannot_be_kept_is_one_note_and_the_session_goes_on(
        terminal, tmp_path, kind):
    place = tmp_path / "state" / "gradcli" / "history"
    place.parent.mkdir(parents=True)
    if kind == "device":
        place.symlink_to("/dev/full")  # endless zeros to read, no space to write
    else:
        place.mkdir()
    term = terminal("repl", NO_COLOR="1")
    screen = term.enter("x = 2; x*3")
    assert "value 6" in screen  # the first entry is not swallowed
    screen = term.enter("x*4")
    assert "value 8" in screen
    assert term.raw.count("note: history is not kept") == 1
    assert "Traceback" not in term.raw and "Press ENTER" not in term.raw
    assert term.close() == 0


def test_a_history_file_that_fails_to_write_is_dropped_quietly(tmp_path):
    """The first failed write (a full disk) stops the keeping; the entry itself goes on."""
    from gradcli.cli.terminal import _FileHistory

    history = _FileHistory(str(tmp_path))  # a directory: every write fails
    history.append_string("x = 1")
    history.append_string("x = 2")
    assert isinstance(history.lost, OSError)
    assert list(history.get_strings()) == ["x = 1", "x = 2"]


def test_escape_sequences_typed_in_and_deep_brackets_are_no_traceback(terminal):
    term = terminal("repl", NO_COLOR="1")
    term.type("\x1b[31m")  # read as a mouse event by prompt_toolkit
    screen = term.enter("1 + 1")
    assert "value 2" in screen
    screen = term.enter("y = " + "[" * 70 + "1" + "]" * 70)
    assert "has more than 12 dimensions" in screen
    screen = term.enter("2 + 2")
    assert "value 4" in screen
    assert "Traceback" not in term.raw and "Unhandled exception" not in term.raw
    assert term.close() == 0


def test_diff_with_an_empty_name_is_an_error_as_with_wrt():
    """``:diff y,`` would drop a name in silence; the session says so, as ``--wrt y,`` does."""
    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input="x*y\n:diff y,\n",
                          capture_output=True, text=True, timeout=60, check=False)
    assert ":diff 'y,' has an empty name" in done.stdout + done.stderr
    assert "d/dy" not in done.stdout


def test_an_entry_is_all_or_nothing_and_its_refusals_say_what_was_typed():
    """Found by a helper: half of a refused entry stayed defined; an open ( was reported at a
    line 2 the user never typed; u = u*2 said u was used before it was assigned; :del alone
    looked for a name 'NAME'."""
    from gradcli.cli.session import Session
    from gradcli.errors import ParseError, UsageError

    session = Session()
    session.define("x", "2")
    with pytest.raises(UsageError, match="in terms of each other"):
        session.program("a = b2; b2 = a")
    assert session.definitions == {"x": "2"}  # a = b2 went too
    with pytest.raises(ParseError) as opened:
        session.program("u = (2")
    assert (opened.value.line, opened.value.column) == (1, 7)
    assert opened.value.hint == "a '(' is not closed"
    session.define("u", "1")
    with pytest.raises(UsageError, match=r"u = u\*2 defines u by itself") as itself:
        session.program("u = u*2")
    assert itself.value.hint == "give the new value a name of its own, e.g. u2 = u*2"
    session.program("beta = 0.9")  # a function's name is a variable's too (docs/language.md)
    with pytest.raises(UsageError, match=":del needs the NAME"):
        session.command(":del")
    assert session.definitions == {"x": "2", "u": "1", "beta": "0.9"}


def test_a_variable_named_like_a_function_does_not_take_its_calls():
    """Found by a helper: after sin = 3, every sin(x) failed ("sin is both called as a
    function and used as a variable", at lines of the session's own program): a call pulled
    the definition in as a use. Only the session's own functions are pulled in by a call."""
    from gradcli.cli.session import Session

    session = Session()
    for entry in ("x = 2", "sin = 3", "f(a) = a*sin"):
        session.program(entry)
    assert session.source("sin(x)") == "x = 2\nsin(x)"
    assert session.source("sin*x") == "x = 2\nsin = 3\nsin*x"
    assert session.source("f(x)").endswith("f(a) = a*sin\nf(x)")
    assert "sin = 3" in session.source("f(x)")
    script = "x = 2\nsin = 3\nsin(x)\nsin*x\n"
    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input=script,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "value 0.9092974268256817" in done.stdout and "value 6" in done.stdout


def test_an_error_is_placed_in_the_entry_as_typed():
    """Found by a bug hunt: errors found in the program the session puts together (its
    definitions, one a line, then the expression) were placed there: "line 4, column 1" for
    an entry of one line, and the hint offered a command-line flag (--exp VALUE). Each part of
    an entry is now placed where it was typed, comments and line breaks included."""
    script = ("x = 2\n"
              "z = 1; w = 2; exp*z*w*x\n"
              "q = 1; y=zz(2)  # a comment\n"
              "q3 = 2; (x +\n  foo2(1))\n")
    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input=script,
                          capture_output=True, text=True, check=False)
    errors = done.stderr.split("error: ")[1:]
    assert len(errors) == 3, done.stderr
    assert errors[0].startswith("name error at line 1, column 15: exp is a function")
    assert "  z = 1; w = 2; exp*z*w*x\n" + " " * 16 + "^\n" in errors[0]
    assert "hint: to use exp as a variable, define it first (exp = ...)" in errors[0]
    assert "--exp" not in errors[0]
    assert errors[1].startswith("name error at line 1, column 10: unknown function zz")
    assert "  q = 1; y=zz(2)  # a comment\n" + " " * 11 + "^\n" in errors[1]
    assert errors[2].startswith("name error at line 2, column 3: unknown function foo2")
    assert "    foo2(1))\n    ^\n" in errors[2]


def test_a_hessian_of_an_array_program_without_variables_is_nothing_to_check():
    """An IndexError traceback at status 1, and in a session the end of it (a bug hunt)."""
    for text in ("sum(ones(3))", "sum([1, 2])", "x = ones(3); sum(x*x)"):
        done = subprocess.run([sys.executable, "-m", "gradcli", "eval", text, "--hessian"],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0 and "Traceback" not in done.stderr
        assert "✓ nothing to check: no gradient depends on a variable" in done.stdout
    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"],
                          input="x = ones(3)\n:hessian sum(outer(x, x)**2)\nx[0] + 2\n",
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr and "value 3" in done.stdout


def test_a_bug_of_gradcli_s_does_not_end_the_session(monkeypatch, capsys):
    from gradcli.cli.session import Session

    session = Session()
    assert session.run("w = 2") == 0

    def broken(self, text):
        raise IndexError("list index out of range")

    monkeypatch.setattr(Session, "program", broken)
    assert session.run("w*3") == 1
    assert "gradcli: internal error (a bug in gradcli, please report it with the entry): " \
           "IndexError: list index out of range; the session goes on" in capsys.readouterr().err
    monkeypatch.undo()
    assert session.run("w*3") == 0 and "value 6" in capsys.readouterr().out


def test_a_function_defined_by_itself_is_said_so():
    """It said "g and g are defined in terms of each other" (a bug hunt)."""
    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input="g(x) = g(x)\n",
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "usage error: g is defined by itself" in done.stderr


def test_an_error_on_the_second_line_of_an_expression_says_line_2():
    """The session took every error on the last line of the program it puts together for line
    1 of the expression: a two-line expression's line 2 was called line 1 (a bug hunt)."""
    for script in ("sin(x) + (y\n+ foo(z))\n", "a = 1\nb = 2\nsin(x) + (y\n+ foo(z))\n"):
        done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input=script,
                              capture_output=True, text=True, check=False)
        assert "name error at line 2, column 3: unknown function foo" in done.stderr, (
            done.stderr)


def test_json_of_an_error_is_eval_s_error_record():
    """:json log(-1) printed the caret display, not the record `gradcli eval --json` writes (a
    bug hunt)."""
    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input=":json log(-1)\n",
                          capture_output=True, text=True, check=False)
    record = json.loads(done.stdout)
    assert record["expression"] == "log(-1)" and record["value"] is None
    assert record["error"]["kind"] == "domain" and done.returncode == 3
    assert done.stderr.startswith("gradcli: numeric error: logarithm of a non-positive number")
