"""A demanding user's audit: command lines that exited 0 on a mistake, or said too little.

Each test runs the command a person would type and checks the status and the words that tell
them what happened (the status alone would let a wrong message pass).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gradcli.cli import cli


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


def usage_error(result, *words: str) -> None:
    """Status 2, nothing on stdout, and every one of ``words`` on stderr."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert result.stdout == ""
    for word in words:
        assert word in result.stderr, (word, result.stderr)


# --- a range of one point cannot keep both of its ends ----------------------------------------

@pytest.mark.parametrize("command", [("eval", "x**2"), ("eval", "x**2", "--csv"),
                                     ("plot", "x**2")])
def test_a_one_point_range_between_two_ends_is_refused(command):
    result = invoke(*command, "--x", "1:2:1")
    usage_error(result, "the range '1:2:1' for x has a count of 1, so its end 2 would be dropped",
                "hint: write 1:2:2 for both ends, or 1 alone for one point")


def test_a_one_point_range_with_equal_ends_is_that_point():
    result = invoke("eval", "x**2", "--x", "3:3:1", "--csv")
    assert result.exit_code == 0
    assert result.stdout == "x,value,d/dx,ok,error\n3,9,6,true,\n"


def test_a_check_file_sweep_of_one_point_between_two_ends_is_refused(tmp_path):
    path = tmp_path / "one.toml"
    path.write_text('[[check]]\nname = "a"\nexpr = "x**2"\nsweep = {x = "1:2:1"}\n'
                    'value = "x**2"\n')
    result = invoke("check", str(path))
    usage_error(result, "one.toml:4: check.sweep.x: the range '1:2:1' for x has a count of 1")


def test_a_number_past_the_largest_float_is_named_as_written():
    result = invoke("eval", "x", "--x", "1e400")
    usage_error(result, "the value of x is '1e400': too large for a float")


# --- an option given twice: click would keep the last one in silence --------------------------

@pytest.mark.parametrize(("args", "words"), [
    (("diff", "x*y", "--wrt", "x", "--wrt", "y"),
     ("--wrt is given twice, and only one can count", "hint: give it once: --wrt X,Y")),
    (("eval", "x*y", "--x", "1", "--y", "2", "--rtol", "1e-3", "--rtol=1e-9"),
     ("--rtol is given twice",)),
    (("graph", "x", "-o", "a.dot", "--output", "b.dot"),
     ("-o/--output is given twice", "give it once: --output FILE")),
    (("check", "examples/checks.toml", "-k", "seed", "-k", "tanh"),
     ("-k is given twice", "give it once: -k PATTERN")),
    (("plot", "x", "--x", "0:1:5", "--height", "10", "--height", "12"),
     ("--height is given twice",)),
])
def test_an_option_given_twice_is_a_usage_error(args, words):
    usage_error(invoke(*args), *words)


def test_two_values_files_are_refused_not_one_dropped(tmp_path):
    first, second = tmp_path / "x.json", tmp_path / "y.json"
    first.write_text('{"x": 2}')
    second.write_text('{"y": 3}')
    result = invoke("eval", "x*y", "--values", str(first), "--values", str(second))
    usage_error(result, "--values is given twice", "give it once: --values FILE")


def test_a_flag_given_twice_and_repeated_set_are_still_fine():
    result = invoke("eval", "x*y", "--set", "x=1", "--set", "y=2", "--json", "--json")
    assert result.exit_code == 0
    assert '"value":2.0' in result.stdout


# --- a batch line shows the H·v that --hvp asked for -------------------------------------------

def test_a_batch_line_shows_the_hessian_vector_product():
    # x**2*y: H = [[2y, 2x], [2x, 0]]; along v = (1, 0) at (1, 2): H·v = (2y, 2x) = (4, 2).
    result = invoke("eval", "-", "--x", "1", "--y", "2", "--hvp", "x=1",
                    stdin="x**2*y\nsum([x, y]**2)\n")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "line 1: value 2  d/dx 4  d/dy 1  H·v x 4  H·v y 2  ✓"
    assert lines[1] == "line 2: value 5  d/dx 2  d/dy 4  H·v x 2  H·v y 0  ✓"  # H = 2I


# --- an option that the other options make meaningless -----------------------------------------

@pytest.mark.parametrize(("option", "value"), [("--rtol", "1e-3"), ("--atol", "0"),
                                               ("--check-method", "complex"),
                                               ("--check-nodes", None)])
def test_an_option_of_the_check_with_no_check_is_refused(option, value):
    args = ["eval", "x*y", "--x", "1", "--y", "2", "--no-check", option]
    result = invoke(*args, *([value] if value is not None else []))
    usage_error(result, f"{option} tunes the finite-difference check, and --no-check skips it",
                f"hint: drop {option}, or --no-check")


def test_full_with_csv_is_refused_and_the_default_tolerances_are_not_given_options():
    result = invoke("eval", "x", "--x", "0:1:3", "--full", "--csv")
    usage_error(result, "--full prints every element of large arrays, and --csv writes")
    assert invoke("eval", "x", "--x", "1", "--no-check").exit_code == 0


# --- pictures: a file named for one format never holds another ---------------------------------

@pytest.mark.parametrize(("name", "picture_format", "renamed", "named"), [
    ("g.svg", "png", "g.png", "svg"), ("g.png", "dot", "g.dot", "png"),
    ("g.dot", "mermaid", "g.mmd", "dot"), ("g.txt", "svg", "g.svg", "tree"),
])
def test_graph_refuses_a_suffix_that_names_another_format(tmp_path, name, picture_format,
                                                          renamed, named):
    path = tmp_path / name
    result = invoke("graph", "x*y", "--x", "1", "--y", "2", "-o", str(path),
                    "--format", picture_format)
    suffix = path.suffix
    usage_error(result, f"is a {suffix} file, and --format {picture_format} would write",
                f"hint: write -o {tmp_path / renamed}, or drop --format to write {named}")
    assert not path.exists()


@pytest.mark.parametrize(("name", "picture_format", "start"), [
    ("g.txt", "dot", "digraph"), ("g.txt", "tree", "#2 x*y"), ("g.gv", "dot", "digraph"),
    ("g.mmd", "mermaid", "flowchart"),
])
def test_graph_writes_a_format_its_suffix_allows(tmp_path, name, picture_format, start):
    path = tmp_path / name
    result = invoke("graph", "x*y", "--x", "1", "--y", "2", "-o", str(path),
                    "--format", picture_format)
    assert result.exit_code == 0, result.output
    assert path.read_text().startswith(start)


@pytest.mark.parametrize("option", ["--width", "--height"])
def test_plot_refuses_a_terminal_size_for_an_image(tmp_path, option):
    path = tmp_path / "p.svg"
    result = invoke("plot", "x**2", "--x", "0:1:5", "-o", str(path), option, "30")
    usage_error(result, f"{option} sizes the plot in the terminal, and -o {path} saves an image",
                f"hint: drop {option}, or -o to plot in the terminal")
    assert not path.exists()


# --- the hint fits the command: completion takes a shell, not an EXPR -------------------------

def test_completion_with_two_shells_names_its_argument_not_an_expression():
    usage_error(invoke("completion", "bash", "bash"), "unexpected extra arguments: bash",
                "hint: gradcli completion takes one of bash, zsh or fish")
    assert "EXPR" not in invoke("completion", "bash", "bash").stderr


def test_completion_without_a_shell_lists_the_shells():
    usage_error(invoke("completion"), "missing argument SHELL",
                "hint: give one of bash, zsh or fish; see gradcli completion --help")


# --- diff --wrt: an empty name is not "every variable" -----------------------------------------

@pytest.mark.parametrize("wrt", ["", " , "])
def test_an_empty_wrt_is_refused_not_every_variable(wrt):
    usage_error(invoke("diff", "x*y", "--wrt", wrt), "--wrt names no variable",
                "hint: name them (--wrt x,y), or drop --wrt for every variable without a value")


@pytest.mark.parametrize("wrt", ["x,", "x,,y", ",y"])
def test_a_wrt_with_an_empty_name_is_refused(wrt):
    usage_error(invoke("diff", "x*y", "--wrt", wrt), f"--wrt {wrt!r} has an empty name",
                "hint: separate the names by single commas: --wrt x,y")


def test_wrt_names_may_have_spaces_after_commas():
    # d/dx (x*y) = y and d/dy (x*y) = x, by hand.
    result = invoke("diff", "x*y", "--wrt", "x, y")
    assert result.exit_code == 0 and result.stdout == "d/dx = y\nd/dy = x\n"


# --- --allow-unused without a --values file would allow nothing --------------------------------

@pytest.mark.parametrize("command", [("eval", "x*y"), ("diff", "x*y"), ("graph", "x*y")])
def test_allow_unused_without_a_values_file_is_refused(command):
    result = invoke(*command, "--x", "1", "--y", "2", "--allow-unused")
    usage_error(result, "--allow-unused is about the names of --values FILE, and no --values",
                "hint: drop --allow-unused (an unused --NAME VALUE is always an error)")


def test_allow_unused_with_a_values_file_still_ignores_the_files_extra_names(tmp_path):
    point = tmp_path / "point.toml"
    point.write_text("x = 2\ny = 3\nunused = 1\n")
    result = invoke("eval", "x*y", "--values", str(point), "--allow-unused", "--json")
    assert result.exit_code == 0
    assert '"value":6.0' in result.stdout  # 2*3


# --- the session: a command that takes nothing does not drop what follows it -------------------

def test_reset_with_a_name_is_refused_and_forgets_nothing():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"],
                          input="x = 2\nW = 3\n:reset x\n:vars\n", capture_output=True,
                          text=True, timeout=60, check=False)
    assert "error: usage error: :reset takes no argument (x would be ignored)" in done.stderr
    assert "hint: :reset forgets every definition; :del NAME forgets one" in done.stderr
    assert "x = 2\nW = 3\n" in done.stdout and "forgot" not in done.stdout
    assert done.returncode == 2


@pytest.mark.parametrize("command", [":vars all", ":help diff", ":quit now"])
def test_other_commands_without_arguments_refuse_one(command):
    from gradcli.cli.session import Session
    from gradcli.errors import UsageError

    session = Session()
    with pytest.raises(UsageError, match=f"{command.split()[0]} takes no argument"):
        session.command(command)
    assert not getattr(session, "quit", False)


# --- a Hessian with nothing to compare does not claim "0 second derivatives agree" -------------

def test_the_hessian_of_a_linear_function_says_nothing_was_compared():
    # 3x - 2y + 1 is linear: its Hessian is 0, by hand, and no gradient depends on x or y.
    result = invoke("eval", "3*x - 2*y + 1", "--x", "1", "--y", "2", "--hessian")
    assert result.exit_code == 0
    assert result.stdout.rstrip().endswith(
        "✓ nothing to check: no gradient depends on a variable, so every entry of the Hessian "
        "is exactly 0")
    assert "0 second derivatives" not in result.stdout


def test_a_hessian_with_entries_to_compare_keeps_its_count():
    # x*y: H = [[0, 1], [1, 0]]; d/dx = y and d/dy = x, each depending on one variable.
    result = invoke("eval", "x*y", "--x", "1", "--y", "2", "--hessian")
    assert result.exit_code == 0
    assert "✓ check passed: 2 second derivatives agree with finite differences of the gradient" \
        in result.stdout


def test_hessian_with_order_1_is_a_contradiction_not_order_2():
    result = invoke("eval", "x**2", "--x", "2", "--order", "1", "--hessian")
    usage_error(result, "--hessian is --order 2, and --order 1 was given too",
                "hint: give one of them")
    assert invoke("eval", "x**2", "--x", "2", "--order", "2", "--hessian").exit_code == 0


# --- check files: an empty assertion table asserts nothing -------------------------------------

@pytest.mark.parametrize(("key", "text", "example"), [
    ("gradients", "gradients = {}", "{x = 4}"),
    ("derivative", "derivative = {}\nfinite = true", "{x = 4}"),
    ("jacobian", "jacobian = {}", "{f = {x = 4}}"),
    ("jacobian.f", "jacobian = {f = {}}", "{x = 4}"),
])
def test_an_empty_assertion_table_is_refused(tmp_path, key, text, example):
    path = tmp_path / "empty.toml"
    path.write_text(f'[[check]]\nname = "a"\nexpr = "f = x*y; g = x + y; f, g"\n'
                    f'at = {{x = 1, y = 2}}\n{text}\n')
    if key in ("gradients", "derivative"):  # those are for one scalar output
        path.write_text(path.read_text().replace("f = x*y; g = x + y; f, g", "x*y"))
    result = invoke("check", str(path))
    usage_error(result, f"empty.toml:5: check.{key}: is empty, so it asserts nothing",
                f"hint: give what to compare, e.g. {example}, or delete the key")


# --- options in the wrong place: the hint says where they go -----------------------------------

def test_a_command_option_before_the_command_says_to_put_it_after():
    result = invoke("--rtol", "1e-3", "eval", "x", "--x", "1")
    usage_error(result, "no such option --rtol before the command",
                "hint: --rtol is an option of gradcli eval: put it after the command "
                "(gradcli eval ... --rtol)")


def test_gradcli_s_own_misspelt_option_still_gets_did_you_mean():
    usage_error(invoke("--versoin"), "no such option --versoin", "hint: did you mean --version?")


@pytest.mark.parametrize(("command", "shorts"), [(("eval", "x", "--x", "1"), "-f, -h"),
                                                 (("graph", "x"), "-f, -o, -h")])
def test_an_unknown_short_option_is_named_as_one_not_a_second_expression(command, shorts):
    result = invoke(*command, "-j")
    usage_error(result, "no such option -j",
                f"hint: the short options of gradcli {command[0]}: {shorts}")
    assert "EXPR" not in result.stderr


def test_an_expression_starting_with_a_minus_is_still_an_expression():
    result = invoke("eval", "-x", "--x", "2", "--json")
    assert result.exit_code == 0 and '"value":-2.0' in result.stdout


def test_the_session_s_hessian_hint_says_how_to_bind_a_name_there():
    """A session has no --y VALUE: its hint says to define the name, as its free-variable note
    does."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "gradcli", "repl"], input="x*y\n:hessian\n",
                          capture_output=True, text=True, timeout=60, check=False)
    assert "the Hessian needs a value for every variable: no values for x, y" in done.stderr
    assert "hint: define them first, as y = 2; :diff x,y gives derivatives" in done.stderr
    assert "--x VALUE" not in done.stderr and done.returncode == 2
