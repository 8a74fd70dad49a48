"""``symbolic.diff.diff``: the one entry ``gradcli diff`` calls for scalar programs, several
outputs and array programs. Each printed derivative is read back and compared with a closed
form written here; the ``verify`` it is given receives exactly a ``DiffCheck``'s fields."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import gradcli
from gradcli.errors import CheckError, UsageError
from gradcli.gradcheck.derivative_check import DiffCheck, check
from gradcli.symbolic.diff import DiffAsk, diff


def value_of(text: str, point: dict) -> object:
    """The printed expression evaluated by eval's engine at ``point``."""
    return gradcli.evaluate(gradcli.parse(text), point, check=False).value


def verify(**parts: object) -> object:
    return check(DiffCheck(**parts))


def test_a_scalar_program_gives_its_gradient():
    found = diff(gradcli.parse("x**2*y + sin(x)"), DiffAsk(), verify)
    point = {"x": 0.7, "y": -1.3}
    assert not found.labelled and found.python is None
    assert value_of(found.texts["x"], point) == pytest.approx(2 * 0.7 * -1.3 + math.cos(0.7))
    assert value_of(found.texts["y"], point) == pytest.approx(0.7**2)
    assert found.checked.entries > 0
    assert list(found.fields) == ["order", "derivatives", "values", "kept_defaults"]


def test_a_scalar_hessian_and_the_programs_own_values():
    found = diff(gradcli.parse("a = 3; a*x**3"), DiffAsk(order=2), verify)
    assert value_of(found.texts["x"]["x"], {"x": 2.0, "a": 3.0}) == pytest.approx(6 * 3 * 2.0)
    assert found.note is not None and "a = 3" in found.note  # stays a symbol


def test_several_scalar_outputs_give_one_view_per_output():
    found = diff(gradcli.parse("f = x*y; g = x + y; f, g"), DiffAsk(), verify)
    assert found.labelled
    views = dict(found.views())
    assert value_of(views["f"]["x"], {"x": 2.0, "y": 5.0}) == pytest.approx(5.0)
    assert value_of(views["g"]["y"], {"x": 2.0, "y": 5.0}) == pytest.approx(1.0)


def test_an_array_program_gives_its_vectorized_gradient():
    x = np.array([0.5, -1.0, 2.0])
    found = diff(gradcli.parse("sum(x**3)"), DiffAsk(shapes={"x": (3,)}), verify)
    assert "shapes" in found.fields and not found.labelled
    np.testing.assert_allclose(value_of(found.texts["x"], {"x": x}), 3 * x**2)


def test_an_array_variable_may_be_named_like_any_internal_key():
    """The output travels beside the gradients, not under a key of theirs: a variable named
    ``__value__`` keeps its derivative (review: it was overwritten by the output)."""
    x, v = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    found = diff(gradcli.parse("sum(x*__value__)"), DiffAsk(shapes={"x": (2,), "__value__": (2,)}),
                 verify)
    assert sorted(found.texts) == ["__value__", "x"]
    np.testing.assert_allclose(value_of(found.texts["x"], {"x": x, "__value__": v}), v)
    np.testing.assert_allclose(value_of(found.texts["__value__"], {"x": x, "__value__": v}), x)


def test_an_array_values_point_chooses_the_array_path_and_its_hessian():
    x = np.array([0.5, -1.0, 2.0])
    found = diff(gradcli.parse("sum(x**3)"), DiffAsk(order=2, values={"x": x}), verify)
    np.testing.assert_allclose(value_of(found.texts["x"]["x"], {"x": x}), np.diag(6 * x))


def test_an_array_output_gives_its_jacobian():
    x = np.array([0.2, -0.4, 1.0])
    found = diff(gradcli.parse("softmax(x)"), DiffAsk(shapes={"x": (3,)}), verify)
    assert found.labelled
    ((_, row),) = found.views()
    s = np.exp(x) / np.exp(x).sum()
    np.testing.assert_allclose(value_of(row["x"], {"x": x}), np.diag(s) - np.outer(s, s),
                               rtol=1e-12)


def test_python_export_without_texts_unless_asked():
    program = gradcli.parse("sum(x**3)")
    bare = diff(program, DiffAsk(fmt="python", shapes={"x": (3,)}, texts=False))
    assert bare.texts is None and bare.python.startswith("import numpy")
    both = diff(program, DiffAsk(fmt="python", shapes={"x": (3,)}))
    assert both.texts is not None and both.fields["python"] == bare.python


def test_a_failed_verify_is_raised_and_nothing_is_returned():
    def refuse(**parts: object) -> object:
        raise CheckError("d/dx disagrees")

    with pytest.raises(CheckError):
        diff(gradcli.parse("x**2"), DiffAsk(), refuse)


def test_prods_gradient_at_a_zero_element_is_exact():
    x = np.array([0.0, 1.5, 2.0])
    found = diff(gradcli.parse("prod(x)"), DiffAsk(values={"x": x}), verify)
    np.testing.assert_allclose(value_of(found.texts["x"], {"x": x}), [3.0, 0.0, 0.0])


def test_a_jacobian_at_order_two_is_refused():
    with pytest.raises(UsageError, match="several outputs has a Jacobian"):
        diff(gradcli.parse("f = x*y; g = x + y; f, g"), DiffAsk(order=2))


def test_several_outputs_of_the_programs_own_arrays_take_the_array_path():
    """``x = [1, 2]; f = 3*x; g = 2*x; f, g``: the arrays are the program's own values (no
    --shape, no value given); the Jacobian's blocks are 3*eye(2) and 2*eye(2), by hand."""
    from click.testing import CliRunner

    from gradcli.cli import cli

    done = CliRunner().invoke(cli, ["diff", "x = [1, 2]; f = 3*x; g = 2*x; f, g"])
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == ["df/dx = 3*eye(2)", "dg/dx = 2*eye(2)"]


@pytest.mark.parametrize(("options", "note", "kept", "values"), [
    ([], "note: the program's own x = 2 stays a symbol; --defaults substitutes it", {"x": 2.0},
     {}),
    (["--defaults"], "note: substituted the program's own x = 2", {}, {"x": 2.0}),
])
def test_several_outputs_say_what_became_of_the_programs_own_values(options, note, kept, values):
    """As one output does: a note on stderr, and ``kept_defaults``/``values`` in the record."""
    from click.testing import CliRunner

    from gradcli.cli import cli

    program = "x = 2; f = x*y; g = x + y; f, g"
    done = CliRunner().invoke(cli, ["diff", program, *options])
    assert done.exit_code == 0 and note in done.stderr.splitlines()
    record = json.loads(CliRunner().invoke(cli, ["diff", program, *options, "--json"]).stdout)
    assert (record["kept_defaults"], record["values"]) == (kept, values)


@pytest.mark.parametrize(("options", "listed"), [
    ([], ["df/dx = y", "df/dy = x", "dg/dx = 1", "dg/dy = 1"]),
    (["--defaults"], ["df/dy = 2", "dg/dy = 1"]),
    (["--x", "2"], ["df/dy = 2", "dg/dy = 1"]),
])
def test_several_outputs_list_only_the_variables_left_free(options, listed):
    """A substituted value (``--defaults`` or ``--x``) is a number, not a variable: one output
    and several list the same variables."""
    from click.testing import CliRunner

    from gradcli.cli import cli

    done = CliRunner().invoke(cli, ["diff", "x = 2; f = x*y; g = x + y; f, g", *options])
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == listed
    one = CliRunner().invoke(cli, ["diff", "x = 2; f = x*y; f", *options])
    assert [line.split(" = ")[0] for line in one.stdout.splitlines()] == [
        "d/d" + line.split(" = ")[0].split("/d")[1] for line in listed if line.startswith("df")]
