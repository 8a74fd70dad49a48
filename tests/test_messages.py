"""Counts in messages agree with their nouns and verbs: 1 point, 1 gradient agrees, 1 of 2
gradients disagrees, 1 check passed, 1 more node."""

from __future__ import annotations

import dataclasses

import pytest

from gradcli.errors import plural
from gradcli.formulas.files import load_check_file
from gradcli.formulas.run import run_checks
from gradcli.gradcheck.evaluation import evaluate
from gradcli.gradcheck.sweep import evaluate_sweep
from gradcli.gradcheck.sweep_stream import sweep_columns
from gradcli.language.parser import parse
from gradcli.output.pictures import prepare, to_dot
from gradcli.output.plot import sample
from gradcli.output.sweep_views import check_totals, sweep_summary, sweep_view
from gradcli.output.trees import graph_tree
from gradcli.output.verdicts import verdict


def test_plural():
    assert plural(1, "point") == "1 point" and plural(0, "point") == "0 points"
    assert plural(1234, "more node") == "1,234 more nodes"
    assert plural(2, "second derivative") == "2 second derivatives"


def test_verdicts_count_their_gradients():
    one = evaluate("x", {"x": 1.0})
    assert "check passed: 1 gradient agrees with finite differences" in verdict(one.check).plain
    kink = evaluate("relu(x)", {"x": 0.0})
    assert "check failed: 1 of 2 gradients disagrees with" in verdict(kink.check).plain
    two = evaluate("abs(x)", {"x": 0.5})
    assert "2 gradients agree with" in verdict(two.check).plain
    unchecked = dataclasses.replace(one.check, unchecked=["y"])
    assert "\n1 variable unchecked (not verified)" in verdict(unchecked).plain
    hessian = evaluate("x**3", {"x": 1.0}, order=2).hessian.check
    assert "1 second derivative agrees with finite differences of the gradient" in verdict(
        hessian, ("second derivative", "second derivatives"),
        "finite differences of the gradient").plain


def test_a_sweep_of_one_point():
    program = parse("x**2")
    sweep = evaluate_sweep(program, sweep_columns(program, {"x": (3.0,)}))
    assert sweep_summary(sweep).plain == "✓ check passed at 1 point (rtol 1e-05, atol 1e-08)"
    program = parse("log(x)")
    failing = evaluate_sweep(program, sweep_columns(program, {"x": (-1.0, 1.0)}))
    assert sweep_summary(failing).plain.startswith("✗ numeric error at 1 of 2 points\n")
    assert "at 1 point without numeric errors" in sweep_summary(failing).plain
    from rich.console import Console

    console = Console(record=True, width=80, no_color=True)
    with console.capture() as capture:
        console.print(sweep_view(sweep))
    assert capture.get().split("\n")[0] == "1 point"


def test_check_totals_of_one_check(tmp_path):
    path = tmp_path / "one.toml"
    path.write_text('[[check]]\nname = "square"\nexpr = "x**2"\nat = {x = 3}\n'
                    'gradients = {x = 6}\n')
    outcomes = list(run_checks(load_check_file(str(path))))
    assert check_totals(outcomes).plain == "✓ 1 check passed (1 point)"


def test_pictures_count_what_they_leave_out():
    picture = prepare("a = x + 1; b = a*x; b*a", {"x": 2.0})
    count = len(picture.program.nodes)
    from rich.console import Console

    console = Console(record=True, width=200, no_color=True)
    with console.capture() as capture:
        console.print(graph_tree(picture, max_nodes=count - 1))
    assert "… 1 more node not shown" in capture.get()
    assert "… 1 more node\"" in to_dot(picture, max_nodes=count - 1)


@pytest.mark.parametrize(("values", "message"), [
    ({"x": 1.0}, "no variable was given several values"),
    ({"x": (1.0, 2.0), "y": (1.0, 2.0)}, "2 variables (x, y) were given several values"),
])
def test_plot_names_what_was_swept(values, message):
    from gradcli.errors import UsageError

    with pytest.raises(UsageError) as raised:
        sample("x*y", values)
    assert message in raised.value.message
