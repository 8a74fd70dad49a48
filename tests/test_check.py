"""The finite-difference check: it passes on right gradients and catches wrong ones."""

from __future__ import annotations

import pytest

import gradcli
from gradcli.engine.replay import Replayer
from gradcli.gradcheck.check import check_gradients


def test_seed_check_agrees_to_about_1e_10():
    result = gradcli.evaluate("(x*W+b-t)**2", {"x": 2, "W": 3, "b": 1, "t": 8})
    assert result.check.ok
    assert set(result.check.gradients) == {"x", "W", "b", "t"}
    for check in result.check.gradients.values():
        assert check.method == "central"
        assert check.abs_error < 1e-9
        assert check.numeric == pytest.approx(check.analytic, rel=1e-9)


def test_every_intermediate_node_is_checked_on_small_graphs():
    result = gradcli.evaluate("u = x*W; z = u + b; err = z - t; err*err",
                              {"x": 2, "W": 3, "b": 1, "t": 8})
    checked = result.check.nodes
    needs_grad = [row.id for row in result.node_rows() if row.grad is not None]
    assert sorted(checked) == needs_grad
    assert all(check.ok for check in checked.values())


def test_a_wrong_gradient_is_caught():
    result = gradcli.evaluate("sin(x)*y", {"x": 0.7, "y": 2.0})
    result.program.variables["x"].grad += 1e-3  # corrupt the reverse-mode answer
    report = check_gradients(result.program)
    assert not report.ok
    assert not report.gradients["x"].ok and report.gradients["y"].ok


def test_a_kink_fails_the_check_and_sets_status_1():
    result = gradcli.evaluate("relu(x)", {"x": 0.0})
    assert result.gradients["x"] == 0.0  # the documented convention
    assert result.check.gradients["x"].numeric == pytest.approx(0.5)
    assert not result.check.ok
    assert result.status == gradcli.ExitStatus.CHECK_FAILED


def test_rounding_noise_of_large_values_is_not_a_failure():
    # The difference quotient of numbers near 1e8 cannot resolve 1e-8; that is not a bad gradient.
    assert gradcli.evaluate("(x + 1e8) - 1e8", {"x": 0.3}).check.ok
    assert gradcli.evaluate("exp(x)", {"x": 30.0}).check.ok


def test_near_a_singularity_the_smaller_step_is_used():
    result = gradcli.evaluate("1/x", {"x": 0.001})
    assert result.check.ok
    assert result.check.gradients["x"].numeric == pytest.approx(-1e6, rel=1e-6)


def test_one_sided_difference_at_the_edge_of_the_domain():
    # x - h leaves sqrt's domain, so the check steps forward only.
    result = gradcli.evaluate("x + 0*sqrt(x)", {"x": 1e-7})
    check = result.check.gradients["x"]
    assert (check.method, check.ok) == ("forward", True)
    assert check.numeric == pytest.approx(1.0, rel=1e-9)


def test_a_function_changing_far_below_the_step_is_still_verified():
    result = gradcli.evaluate("sqrt(x)", {"x": 1e-7})
    check = result.check.gradients["x"]
    assert check.ok and check.step < 1e-7
    assert check.numeric == pytest.approx(0.5 / 1e-7**0.5, rel=1e-5)


def test_tolerances_are_applied():
    loose = gradcli.evaluate("x**3", {"x": 1.3}, rtol=1e-3, atol=1e-3)
    assert loose.check.rtol == 1e-3 and loose.check.ok
    assert gradcli.evaluate("x**3", {"x": 1.3}, check=False).check is None


def test_large_graphs_skip_the_per_node_check_but_check_inputs():
    result = gradcli.evaluate(" + ".join(f"x*{i}" for i in range(200)), {"x": 1.0})
    assert result.check.nodes_skipped and not result.check.nodes
    assert result.check.gradients["x"].ok
    small = gradcli.evaluate("x*2", {"x": 1.0}, node_check_limit=1)
    assert small.check.nodes_skipped


def test_the_noise_allowance_of_a_small_step_never_passes_a_wrong_gradient():
    # sin(1e8*x): central differences resolve its slope only to ~1e-4 relative (truncation at
    # larger steps, rounding of 1e8*x at smaller ones), so at rtol 1e-5 the honest verdict is a
    # failure, at 1e-3 a pass -- and a gradient 1e-2 too large (ten times rtol) fails there.
    assert not gradcli.evaluate("sin(1e8*x)", {"x": 1.0}).check.ok
    result = gradcli.evaluate("sin(1e8*x)", {"x": 1.0}, rtol=1e-3)
    assert result.check.ok
    result.program.variables["x"].grad *= 1 + 1e-2
    assert not check_gradients(result.program, rtol=1e-3).ok
    assert gradcli.evaluate("sin(1e8*x)", {"x": 1.0}, check_method="complex").check.ok


def test_a_replayer_belongs_to_its_graph_and_leaves_node_values_alone():
    """Replays of two graphs never mix (each check owns its Replayer), and the nodes keep the
    values of the evaluation."""
    first = gradcli.evaluate("u = x*x; u + x", {"x": 3.0}, check=False).program
    second = gradcli.evaluate("u = x*x; u*x", {"x": 3.0}, check=False).program
    one, two = Replayer(first.nodes), Replayer(second.nodes)
    x1, x2 = first.variables["x"].index, second.variables["x"].index
    assert one.replay(x1, 2.0)[0] == 6.0 and two.replay(x2, 2.0)[0] == 8.0
    assert one.replay(x1, 4.0)[0] == 20.0 and two.replay(x2, 4.0)[0] == 64.0
    assert [n.value for n in first.nodes] == [3.0, 9.0, 12.0]
    assert first.nodes[-1].value == 12.0 and second.nodes[-1].value == 27.0


def test_a_program_without_variables_has_nothing_to_check_and_says_so():
    """2*3 printed an empty gradient table and "check passed: 0 gradients agree" (found by a
    helper, in the REPL: a function of the session called at a number)."""
    from click.testing import CliRunner

    from gradcli.cli import cli

    done = CliRunner().invoke(cli, ["eval", "2*3"])
    assert done.exit_code == 0
    assert "✓ nothing to check: no gradients (the program has no variables)" in done.output
    assert "0 gradients" not in done.output and "gradients of the output" not in done.output


def test_a_reports_verdicts_read_gradients_and_nodes_alike():
    """``ok``, ``checks``, ``failures`` and ``max_abs_error`` as the set of unique checks gave
    them (a variable's node shares its check with ``gradients``), with and without node checks:
    a batch line checks none, and they are not built from that set there (session 29)."""
    from gradcli.gradcheck.check import CheckReport
    from gradcli.gradcheck.differences import GradientCheck

    def check(error: float | None, ok: bool = True) -> GradientCheck:
        return GradientCheck(1.0, None if error is None else 1.0 + error, error, 1e-6, ok,
                             "central", 1e-6)

    x, y, inner = check(2e-9), check(None), check(5.0, ok=False)
    lean = CheckReport(1e-5, 1e-8, gradients={"x": x, "y": y})
    assert lean.ok and lean.failures == [] and lean.checks == [x, y]
    assert lean.max_abs_error == 2e-9
    full = CheckReport(1e-5, 1e-8, gradients={"x": x, "y": y}, nodes={0: x, 1: y, 4: inner})
    assert not full.ok and full.failures == [inner] and full.checks == [x, y, inner]
    assert full.max_abs_error == 5.0
    assert CheckReport(1e-5, 1e-8).max_abs_error == 0.0 and CheckReport(1e-5, 1e-8).ok
    record = full.record()
    assert record["ok"] is False and record["max_abs_error"] == 5.0
    assert record["gradients"]["x"] == {
        "analytic": 1.0, "numeric": 1.0 + 2e-9, "abs_error": 2e-9, "tolerance": 1e-6,
        "ok": True, "method": "central", "error_estimate": None, "checked": 1, "size": 1,
        "failed": 0, "where": (), "directions": 0}
    assert set(record) == {"ok", "max_abs_error", "rtol", "atol", "gradients", "nodes_checked",
                           "method", "unchecked", "shrunk", "unresolved", "ill_conditioned"}


# --- classes whose __init__ is written out (compiled: a native call, not an interpreted one) ---

def _made_by_hand():
    """Each class with a value per field, in the fields' order: the required ones, then one
    that differs from the field's default for every other (so that two parameters swapped,
    or a field missing, show), but Program's second bool, which differs from its first."""
    from gradcli.engine.graph import Program
    from gradcli.engine.node import Node
    from gradcli.gradcheck.check import CheckReport
    from gradcli.gradcheck.differences import GradientCheck

    x = Node.variable("x", 2.0)
    return [
        (GradientCheck, 7, [1.5, 2.5, 3.5, 4.5, False, "m", 5.5, 6.5, 7, 8, 9, (10,), 11.5, 12]),
        (CheckReport, 2, [0.1, 0.2, {"g": None}, {1: None}, True, "m", ["u"], ["b"], None, ["s"]]),
        (Program, 2, ["s", x, [x], {"x": x}, {"x": 1.0}, ["n"], True, {"p": "f"}, False, [x],
                      ["o"]]),
    ]


@pytest.mark.parametrize("index", range(3))
def test_a_written_out_init_is_the_one_dataclass_would_write(index):
    """Each field is a parameter, in the fields' order, positional or keyword, with the field's
    default (a new list or dict each time): a field added to the class and not to ``__init__``,
    or two parameters swapped, fail here; ``dataclasses.replace`` goes on working."""
    import dataclasses

    cls, required, values = _made_by_hand()[index]
    names = [field.name for field in dataclasses.fields(cls)]
    assert len(names) == len(values)
    by_position = cls(*values)
    by_keyword = cls(**dict(zip(names, values, strict=True)))
    for name, value in zip(names, values, strict=True):
        assert getattr(by_position, name) == value, name
        assert getattr(by_keyword, name) == value, name
    made, again = cls(*values[:required]), cls(*values[:required])
    for field in dataclasses.fields(cls)[required:]:
        fresh = field.default_factory is not dataclasses.MISSING
        expected = field.default_factory() if fresh else field.default
        if field.name == "failed":  # GradientCheck's: 1 if not ok, else 0, unless given
            expected = 1
        assert getattr(made, field.name) == expected, field.name
        if fresh:  # not shared between objects
            assert getattr(again, field.name) is not getattr(made, field.name)
    assert dataclasses.replace(by_position) == by_position


def test_a_gradient_checks_failed_count_follows_its_verdict_unless_given():
    from gradcli.gradcheck.differences import GradientCheck

    assert GradientCheck(1.0, 2.0, 1.0, 1e-5, False, "central", 1e-3).failed == 1
    assert GradientCheck(1.0, 1.0, 0.0, 1e-5, True, "central", 1e-3).failed == 0
    assert GradientCheck(1.0, 2.0, 1.0, 1e-5, False, "central", 1e-3, failed=7).failed == 7
