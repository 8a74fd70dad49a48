"""``--values FILE`` (issue 19): a JSON or TOML point file gives what ``--NAME VALUE`` options
give -- the same numbers, the same errors for unused names -- and every problem in the file is a
usage error that names the file and the line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gradcli.cli import cli
from gradcli.errors import UsageError
from gradcli.language.values_file import parse_values_text
from gradcli.limits import MAX_ARRAY_DIMS

SEED = "(x*W+b-t)**2"
POINT = {"x": 2, "W": 3, "b": 1, "t": 8}


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


def usage_error(result, *texts: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert result.stdout == "" or '"error"' in result.stdout
    assert "Traceback" not in result.output
    for text in texts:
        assert text in result.stderr, (text, result.stderr)
    return result.stderr


def json_record(*args: str, stdin: str | None = None) -> dict:
    result = invoke(*args, "--json", stdin=stdin)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def options(point: dict) -> list[str]:
    return [text for name, value in point.items() for text in (f"--{name}", str(value))]


@pytest.fixture
def point_files(tmp_path):
    as_json = tmp_path / "point.json"
    as_json.write_text(json.dumps(POINT, indent=1))
    as_toml = tmp_path / "point.toml"
    as_toml.write_text("".join(f"{name} = {value}\n" for name, value in POINT.items()))
    return as_json, as_toml


@pytest.mark.parametrize("which", [0, 1], ids=["json", "toml"])
def test_a_values_file_gives_what_the_options_give(point_files, which):
    from_options = json_record("eval", SEED, *options(POINT))
    from_file = json_record("eval", SEED, "--values", str(point_files[which]))
    assert from_file == from_options
    # the closed form: (x*W+b-t)**2 at 2, 3, 1, 8 is 1; d/dx = 2*(x*W+b-t)*W = -6
    assert from_file["value"] == 1.0 and from_file["gradients"]["x"] == -6.0


def test_stdin_and_a_guessed_format(point_files):
    text = point_files[1].read_text()
    assert json_record("eval", SEED, "--values", "-", stdin=text)["value"] == 1.0
    assert json_record("eval", SEED, "--values", "-", stdin=json.dumps(POINT))["value"] == 1.0


def test_a_later_option_overrides_the_file(point_files):
    record = json_record("eval", SEED, "--values", str(point_files[0]), "--x", "3")
    expected = json_record("eval", SEED, *options({**POINT, "x": 3}))
    assert record == expected and record["value"] == (3 * 3 + 1 - 8) ** 2


def test_diff_graph_and_plot_take_a_values_file(point_files):
    path = str(point_files[0])
    assert invoke("diff", "x*W + b - t", "--values", path, "--wrt", "x").stdout.strip() == (
        "d/dx = 3")
    tree = invoke("graph", "x*W + b - t", "--values", path, "--format", "tree")
    assert tree.exit_code == 0 and "value 6" in tree.stdout  # x*W at 2, 3
    plot = invoke("plot", "x*W", "--values", path, "--x", "-1:1:5", "--allow-unused")
    assert plot.exit_code == 0, plot.output


def test_an_unused_name_in_the_file_is_the_unused_option_error(point_files):
    path = str(point_files[1])
    stderr = usage_error(invoke("eval", "x*W", "--values", path),
                         "the program does not use b, t")
    assert f"b = 1 in {path}:3" in stderr and f"t = 8 in {path}:4" in stderr
    record = json_record("eval", "x*W", "--values", path, "--allow-unused")
    assert record["value"] == 6.0 and record["gradients"] == {"x": 3.0, "W": 2.0}
    # --allow-unused is for the file only: an unused --NAME stays an error
    usage_error(invoke("eval", "x*W", "--values", path, "--allow-unused", "--q", "1"),
                "the program has no variable q (--q 1)")


def test_a_batch_reads_the_file_once_for_every_line(point_files):
    result = invoke("eval", "-", "--values", str(point_files[0]), "--allow-unused", "--json",
                    stdin="x*W\nb - t\n")
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [record["value"] for record in records] == [6.0, -7.0]
    assert result.exit_code == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"x": 1,\n "x": 2}', "<stdin>:2: x is given twice in the file"),
        ("x = 1\ny = 2\nx = 3\n", "<stdin>:3: x is given twice in the file"),
        ('{"x": 1,\n "y": 2,}', "<stdin>:2: not valid JSON"),
        ("x = = 1", "not valid TOML"),
        ('{"x": 1,\n "y": "two"}', "<stdin>:2: the value of y is a string, not a number"),
        ('{"x": true}', "the value of x is a boolean, not a number"),
        ('{"x": NaN}', "<stdin>:1: NaN is not a finite number"),
        ("x = inf", "<stdin>:1: the value of x is inf, not a finite number"),
        ('{"x": 1e999}', "the value of x is inf, not a finite number"),
        # integers too long for a float; past 4,300 digits Python's own reader refuses them
        ('{"x": 1' + "0" * 399 + "}", "<stdin>:1: the value of x is an integer of 400 digits, "
                                      "too large for a float"),
        ('{"y": 2,\n "x": -' + "1" * 5000 + "}", "<stdin>:2: the value of x is an integer of "
                                                "5,000 digits, too large for a float"),
        ("y = 2\nx = " + "1" * 5000, "<stdin>:2: the value of x is an integer of 5,000 digits"),
        ('{"x": [1, ' + "1" * 5000 + "]}", "<stdin>:1: the value of x is an integer of 5,000"),
        # the integer that failed, not a float's 400 digits before it (a review)
        ('{"a": 0.' + "0" * 400 + '1,\n "x": ' + "1" * 5000 + "}",
         "<stdin>:2: the value of x is an integer of 5,000 digits"),
        ('{"pi": 3}', "the program has no variable pi"),
        ('{"2x": 3}', "2x is not a variable name"),
        ("[1, 2]", "holds an array of JSON, not an object"),
        ('{"x": [[1, 2], [3]]}', "<stdin>:1: the value of x is not rectangular: "
                                 "element [1] has shape 1, element [0] has 2"),
        ("", "<stdin> has no values"),
        ("{}", "<stdin> has no values"),
    ],
)
def test_a_bad_file_is_a_usage_error_with_the_file_and_line(text, message):
    usage_error(invoke("eval", "x", "--values", "-", stdin=text), message)


def test_an_array_in_the_file_is_an_array_value():
    """x = [1, 2] from the file: the output x is an array, whose Jacobian is eye(2) (issue 17)."""
    result = invoke("eval", "x", "--values", "-", "--json", stdin='{"x": [1, 2]}')
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["jacobian"]["x"]["x"] == [[1.0, 0.0], [0.0, 1.0]]


@pytest.mark.parametrize("program", [["-"], ["-f", "-"], []], ids=["batch", "file", "implicit"])
def test_values_and_the_program_cannot_both_come_from_stdin(program):
    usage_error(invoke("eval", *program, "--values", "-", stdin="x*W\n"),
                "--values - and the program both read stdin")


def test_a_file_that_cannot_be_read_is_a_usage_error(tmp_path):
    usage_error(invoke("eval", "x", "--values", str(tmp_path / "missing.json")), "cannot read")


def test_arrays_from_a_values_file_are_array_values(tmp_path):
    point = tmp_path / "point.toml"
    point.write_text("W = [[1, 2],\n     [3, 4]]\nx = [1, 1]\n")
    result = invoke("eval", "sum(W@x)", "--values", str(point), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["gradients"] == {"W": [[1.0, 1.0], [1.0, 1.0]],
                                                      "x": [4.0, 6.0]}


def test_the_loader_keeps_arrays_for_when_the_language_has_them():
    """Nested lists come back as float arrays with the line they are on."""
    (entry, matrix) = parse_values_text('{"x": 2,\n "A": [[1, 2], [3, 4.5]]}', "m.json")
    assert (entry.name, entry.value, entry.line, entry.is_array) == ("x", 2.0, 1, False)
    assert matrix.value.dtype == float and matrix.value.tolist() == [[1.0, 2.0], [3.0, 4.5]]
    assert matrix.line == 2 and matrix.is_array
    depth = MAX_ARRAY_DIMS
    deep = parse_values_text("A = " + "[" * depth + "1" + "]" * depth, "deep.toml")[0].value
    for _ in range(depth):
        deep = deep[0]
    assert deep == 1.0
    with pytest.raises(UsageError, match=f"deep.toml:1: the value of A has more than {depth} "):
        parse_values_text("A = " + "[" * 200 + "1" + "]" * 200, "deep.toml")
    with pytest.raises(UsageError, match="the value of A has no elements"):
        parse_values_text('{"A": [[], []]}', "m.json")


def test_many_names_each_with_its_line():
    """A shared point file of 20,000 names: every name found on its own line (one pass over
    the text), in JSON and in TOML."""
    names = [f"v{i}" for i in range(20_000)]
    as_json = "{\n" + ",\n".join(f'  "{name}": {i}' for i, name in enumerate(names)) + "\n}"
    as_toml = "".join(f"{name} = {i}\n" for i, name in enumerate(names))
    for text, first_line in ((as_json, 2), (as_toml, 1)):
        entries = parse_values_text(text, "many")
        assert [e.line for e in entries] == list(range(first_line, first_line + len(names)))
        assert [e.value for e in entries] == [float(i) for i in range(len(names))]


def test_a_quoted_key_is_found_too():
    (entry,) = parse_values_text('"x" = 1\n', "q.toml", "toml")
    assert entry.line == 1
    with pytest.raises(UsageError, match=r"^q\.json:3: .* is not a variable name"):
        parse_values_text('{\n "x": 1,\n "a\\"b": 2}', "q.json")
