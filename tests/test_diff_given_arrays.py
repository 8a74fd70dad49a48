"""Issue 29: the array half of ``diff`` catches up with the scalar half. The session's ``:diff``
runs ``gradcli diff``'s own path (cli/differentiate.py), so it handles array programs; a value
given to ``diff`` for an array (on the command line, in ``--values FILE``, as ``.npy``, or the
program's own with ``--defaults``) is the point the derivatives are built and checked at, and
its shape disagreeing with ``--shape`` is a usage error naming both.

Expected derivatives are closed forms written here (NumPy), not gradcli's own output."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import cli
from gradcli.cli.session import Session
from gradcli.errors import ExitStatus


def diff(*args: str):
    return CliRunner().invoke(cli, ["diff", *args])


def derivatives(stdout: str) -> dict[str, str]:
    """``d/dW = 2*W`` and ``d/dW: t1 = ...; expr`` lines as {"W": text}."""
    found = {}
    for line in stdout.splitlines():
        if line.startswith("d/d"):
            head, _, text = line.partition(" = ") if " = " in line.split(":")[0] else (
                line.partition(": "))
            found[head[3:]] = text
    return found


def value_of(text: str, point: dict) -> np.ndarray:
    program = gradcli.parse(text)
    return np.asarray(gradcli.evaluate(program, {n: point[n] for n in program.variables},
                                       check=False).value, dtype=float)


def literal(array: np.ndarray) -> str:
    return json.dumps(array.tolist())


# --- the session's :diff is gradcli diff's ------------------------------------------------------

SESSION_PROGRAMS = [  # definitions, expression, closed forms of the gradients at a point
    (["W = [[1, 2], [3, 4]]", "x = [1, -1]"], "sum((W@x)**2)",
     {"W": lambda p: 2 * np.outer(p["W"] @ p["x"], p["x"]),
      "x": lambda p: 2 * p["W"].T @ p["W"] @ p["x"]}),
    (["W = [[1, 2], [3, 4]]", "x = [0.5, 2]", "u = tanh(W@x)"], "sum(u*u)",
     {"x": lambda p: p["W"].T @ (2 * np.tanh(p["W"] @ p["x"])
                                 * (1 - np.tanh(p["W"] @ p["x"]) ** 2))}),
]


@pytest.mark.parametrize(("definitions", "expression", "closed"), SESSION_PROGRAMS)
def test_session_diff_of_an_array_program_equals_closed_forms(capsys, definitions, expression,
                                                              closed):
    session = Session()
    for definition in definitions:
        assert session.run(definition) == ExitStatus.OK
    assert session.run(expression) == ExitStatus.OK
    capsys.readouterr()
    assert session.run(f":diff {','.join(closed)}") == ExitStatus.OK
    out = capsys.readouterr().out
    texts = derivatives(out)
    assert sorted(texts) == sorted(closed), out
    assert "note: checked at" in out  # checked before printed, as gradcli diff does
    rng = np.random.default_rng(7)
    for _ in range(3):
        point = {"W": rng.normal(size=(2, 2)), "x": rng.normal(size=2)}
        for name, form in closed.items():
            np.testing.assert_allclose(value_of(texts[name], point), form(point),
                                       rtol=1e-10, atol=1e-12)


def test_session_diff_prints_what_gradcli_diff_prints_for_the_session_s_program(capsys):
    """One path: the session's program through gradcli diff gives the same lines (the
    session's arrays give the shapes that --shape gives the command)."""
    session = Session()
    for entry in ("W = [[1, 2], [3, 4]]", "x = [1, -1]", "softmax(W@x)", ":diff x"):
        assert session.run(entry) == ExitStatus.OK
    out = capsys.readouterr().out
    done = diff("softmax(W@x)", "--shape", "W=2x2", "--shape", "x=2", "--wrt", "x")
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() and done.stdout in out  # the Jacobian of an array output


def test_session_diff_of_scalars_is_unchanged_and_has_no_defaults_note(capsys):
    session = Session()
    for entry in ("W = 3", "u = x*W", "x = 2", "(u + 1)**2"):
        session.run(entry)
    capsys.readouterr()
    assert session.run(":diff x") == ExitStatus.OK
    captured = capsys.readouterr()
    assert "d/dx = 2*W*(W*x + 1)" in captured.out  # d/dx (x*W + 1)**2, by hand
    assert "--defaults" not in captured.out + captured.err  # a session has no such option


# --- values given to diff: the point, and the shape ---------------------------------------------

def test_defaults_make_an_array_program_s_own_values_the_point_as_for_scalars():
    """``--defaults`` takes the derivatives at the program's own values: outside the domain
    that is exit 3, for an array program as for a scalar one; without it they stay symbols."""
    for program in ("x = -1; log(x)", "W = [[1, 2], [3, -4]]; sum(log(W))"):
        done = diff(program, "--defaults")
        assert done.exit_code == ExitStatus.NUMERIC, (program, done.output)
        assert "logarithm of a non-positive number" in done.stderr
        kept = diff(program)
        assert kept.exit_code == 0, kept.output
        assert "--defaults" in kept.stderr  # the note says the program's value stays a symbol


def test_defaults_of_an_array_program_are_the_point_checked():
    program = "W = [[1, 2], [3, 4]]; t = [1, 0]; sum((W@t)**2)"
    at_defaults = json.loads(diff(program, "--defaults", "--json").stdout)
    sampled = json.loads(diff(program, "--json").stdout)
    assert at_defaults["checked"]["points"] == 1  # the program's own values, nothing else
    assert sampled["checked"]["points"] > 1
    done = diff(program, "--defaults", "--wrt", "W")
    assert "took the derivatives at the program's own W, t" in done.stderr
    rng = np.random.default_rng(3)
    point = {"W": rng.normal(size=(2, 2)), "t": rng.normal(size=2)}
    np.testing.assert_allclose(value_of(derivatives(done.stdout)["W"], point),
                               2 * np.outer(point["W"] @ point["t"], point["t"]), rtol=1e-12)


@pytest.fixture
def given_forms(tmp_path):
    """One 2x2 value of W written the three ways diff reads: literal, --values, .npy."""
    value = np.array([[0.5, 2.0], [3.0, 1.5]])
    np.save(tmp_path / "W.npy", value)
    (tmp_path / "values.json").write_text(json.dumps({"W": value.tolist()}))
    return {"literal": ["--W", literal(value)],
            "values": ["--values", str(tmp_path / "values.json")],
            "npy": ["--W", str(tmp_path / "W.npy")]}


@pytest.mark.parametrize("form", ["literal", "values", "npy"])
def test_a_given_array_is_the_point_and_the_shape(given_forms, form):
    record = json.loads(diff("sum(log(W)*W)", *given_forms[form], "--json").stdout)
    assert record["shapes"] == {"W": [2, 2]}
    assert record["checked"]["points"] == 1
    point = {"W": np.random.default_rng(5).uniform(0.5, 2, size=(2, 2))}
    np.testing.assert_allclose(value_of(record["derivatives"]["W"], point),
                               np.log(point["W"]) + 1, rtol=1e-12)  # d/dW sum(W log W)


@pytest.mark.parametrize("form", ["literal", "values", "npy"])
def test_shape_disagreeing_with_a_given_value_is_a_usage_error_naming_both(given_forms, form):
    done = diff("sum(W*W)", *given_forms[form], "--shape", "W=3")
    assert done.exit_code == ExitStatus.USAGE, done.output
    message = done.stderr.splitlines()[0]
    assert message.startswith("error: usage error: --shape W=3 and ")
    assert "shape 2x2" in message and "disagree" in message
    assert "W.npy" in message if form == "npy" else True
    assert "Traceback" not in done.output


def test_shape_disagreeing_with_the_program_s_own_value_under_defaults():
    done = diff("W = [[1, 2], [3, 4]]; sum(W*W)", "--defaults", "--shape", "W=3")
    assert done.exit_code == ExitStatus.USAGE
    assert "--shape W=3 and the program's own W (shape 2x2) disagree" in done.stderr
    # without --defaults the program's value stays a symbol: --shape gives its shape
    assert diff("W = [[1, 2], [3, 4]]; sum(W*W)", "--shape", "W=3").exit_code == 0


def test_a_number_given_for_a_variable_shaped_as_an_array_is_refused():
    done = diff("sum(x*W)", "--x", "2", "--shape", "x=3", "--shape", "W=3")
    assert done.exit_code == ExitStatus.USAGE
    assert "--shape x=3 and --x 2 (shape scalar) disagree" in done.stderr


@pytest.mark.parametrize(("args", "listed", "note"), [
    (["sum(W*x)", "--shape", "W=2", "--x", "[1, 2]"], ["W"],
     "note: the derivatives keep x a symbol and were checked with the x given"),
    (["x = [1, 2]; sum(W*x)", "--shape", "W=2", "--defaults"], ["W"],
     "note: took the derivatives at the program's own x, which stays a symbol in them"),
    (["x = [1, 2]; sum(W*x)", "--shape", "W=2"], ["x", "W"],
     "note: the program's own x stays a symbol; --defaults takes the derivatives at its value"),
    (["sum(W*x)", "--x", "[1, 2]", "--W", "[3, 4]"], ["W", "x"],
     "note: the derivatives keep x, W symbols and were checked with the x, W given"),
])
def test_array_derivatives_are_of_the_variables_without_a_value_as_for_scalars(args, listed,
                                                                                 note):
    """As ``diff "x*y" --x 2`` lists only d/dy: a variable given a value (or, with
    ``--defaults``, the program's own) is not differentiated unless every variable has one or
    ``--wrt`` names it; a note says each value stays a symbol and was the point checked."""
    done = diff(*args)
    assert done.exit_code == 0, done.output
    assert sorted(derivatives(done.stdout)) == sorted(listed)
    assert note in done.stderr.splitlines()
    assert "x" in derivatives(diff(*args, "--wrt", "x,W").stdout)
