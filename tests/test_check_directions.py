"""The check of large array gradients along random directions (gradcheck/directions.py).

The directional difference is compared with HIPS autograd's gradient projected on the same
direction (an oracle independent of gradcli's rules); a wrong VJP rule, swapped into the op
table, fails the check and the failure is narrowed down to the element it broke; a budget too
small for the plan shrinks the check and says so.
"""

from __future__ import annotations

import json

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

import gradcli
from gradcli.cli import cli
from gradcli.engine.ops import OPS
from gradcli.gradcheck.check import check_gradients
from gradcli.gradcheck.directions import DirectionReplayer, check_direction
from gradcli.limits import ARRAY_ALL_ELEMENTS, ARRAY_CHECK_DIRECTIONS, ARRAY_CHECK_MIN
from gradcli.output.verdicts import gradient_verdict

RNG = np.random.default_rng(30)
POINT = {"W": RNG.standard_normal((30, 30)) / 5, "x": RNG.standard_normal(30),
         "b": RNG.standard_normal(30), "t": RNG.standard_normal(30),
         "y": RNG.uniform(0.5, 2.0, 400)}
# program -> the same function written for autograd (m is W)
ORACLES = {
    "mean((W@x + b - t)**2)": lambda m, x, b, t, y: anp.mean((m @ x + b - t) ** 2),
    "sum(sin(W)*W) + sum(log(y)*y)": lambda m, x, b, t, y: (anp.sum(anp.sin(m) * m)
                                                            + anp.sum(anp.log(y) * y)),
    "logsumexp(W@x) + norm(y)": lambda m, x, b, t, y: (
        anp.log(anp.sum(anp.exp(m @ x))) + anp.sqrt(anp.sum(y * y))),
    "sum(tanh(W@W)*W)/3 + mean(sqrt(y))": lambda m, x, b, t, y: (
        anp.sum(anp.tanh(m @ m) * m) / 3 + anp.mean(anp.sqrt(y))),
}
NAMES = ("W", "x", "b", "t", "y")


def _large(program: gradcli.Program) -> list[str]:
    return [name for name, node in program.variables.items()
            if np.size(node.value) > ARRAY_ALL_ELEMENTS]


@pytest.mark.parametrize("text", ORACLES)
@pytest.mark.parametrize("method", ["central", "richardson", "complex"])
def test_every_direction_agrees_with_autograd(text, method):
    result = gradcli.evaluate(text, POINT, check_method=method)
    assert result.check.ok, result.check
    program = result.program
    large = _large(program)
    assert large  # the programs have gradients checked along directions
    replayer = DirectionReplayer(program.nodes)
    point = [POINT[name] for name in NAMES]
    for name in large:
        node = program.variables[name]
        check = result.check.gradients[name]
        assert check.directions == ARRAY_CHECK_DIRECTIONS
        assert 2 <= check.checked <= ARRAY_CHECK_MIN  # no more than the directions cost
        expected = autograd.grad(ORACLES[text], NAMES.index(name))(*point)
        replayer.aim(node)
        for k in range(ARRAY_CHECK_DIRECTIONS):
            v = replayer.draw(k)
            ratio = np.abs(v) / np.maximum(1.0, np.abs(node.value))  # a magnitude in [0.5, 1)
            assert ratio.min() >= 0.5 and ratio.max() < 1.0 and np.unique(ratio).size > 1
            along = check_direction(replayer, node, v.copy(), 1e-5, 1e-8, method)
            projected = float(np.vdot(v, expected))
            assert along.ok
            assert along.analytic == pytest.approx(projected, rel=1e-10, abs=1e-12)
            assert along.numeric == pytest.approx(projected, rel=1e-6, abs=1e-8)


@settings(max_examples=12, deadline=None)
@given(size=st.integers(ARRAY_ALL_ELEMENTS + 1, 3000), seed=st.integers(0, 2**32 - 1),
       scale=st.sampled_from([1e-3, 1.0, 1e3]))
# Found by hypothesis: a direction whose central differences carry truncation error at every
# step (x/s changes on the scale 1e-3, the steps are relative to 1) until the noise allowance
# stops the shrinking; Richardson's step from the last two differences cancels it.
@example(size=808, seed=1284, scale=1e-3)
def test_directions_pass_right_gradients_at_any_size_and_scale(size, seed, scale):
    """d/dx sum(x*sin(x/s)) = sin(x/s) + x cos(x/s)/s, written here; the verdict agrees."""
    x = np.random.default_rng(seed).uniform(-2.0, 2.0, size) * scale
    result = gradcli.evaluate("sum(x*sin(x/s))", {"x": x, "s": scale})
    expected = np.sin(x / scale) + x * np.cos(x / scale) / scale
    np.testing.assert_allclose(result.gradients["x"], expected, rtol=1e-12, atol=1e-12)
    check = result.check.gradients["x"]
    assert result.check.ok and check.directions == ARRAY_CHECK_DIRECTIONS


def test_the_extrapolation_does_not_pass_a_gradient_wrong_everywhere_by_a_little(monkeypatch):
    """Where central differences carry truncation error at every step (the @example above),
    Richardson's step from the last two passes the right gradient; scaled by 1 + 1e-4 the
    gradient's errors fall 16-fold too (truncation dominates them). Since the rounding
    allowance weighs each value by its effect on the output, every element fails on its own
    (the allowance no longer reaches 1e-4), and an extrapolation asked passes nothing."""
    from gradcli.gradcheck import differences

    asked, answers = [], []
    extrapolated = differences._extrapolated

    def spy(analytic, central, rtol, atol):
        answer = extrapolated(analytic, central, rtol, atol)
        if len(central) >= 2:
            (_, d1, _), (_, d2, _) = central[-2:]
            asked.append(abs(analytic - d2) * 16 <= abs(analytic - d1))
            answers.append(answer)
        return answer

    monkeypatch.setattr(differences, "_extrapolated", spy)
    x = np.random.default_rng(1284).uniform(-2.0, 2.0, 808) * 1e-3
    row = OPS["sum"]
    right = row.rules
    object.__setattr__(row, "rules", (lambda xp, g, out, x: g * np.ones_like(x) * (1 + 1e-4),))
    try:
        result = gradcli.evaluate("sum(x*sin(x/s))", {"x": x, "s": 1e-3})
    finally:
        object.__setattr__(row, "rules", right)
    check = result.check.gradients["x"]
    assert not result.check.ok and not check.ok and check.method == "central"
    assert check.failed == check.checked
    assert all(a is None for a, opened in zip(answers, asked, strict=True) if opened)
    # (compiled, check_node calls _extrapolated directly, past the spy: the verdicts above
    # are what is left to see)
    assert answers or not differences.__file__.endswith(".py")


def test_the_extrapolation_cancels_the_h2_term_and_still_fails_a_wrong_gradient():
    """``_extrapolated`` on its own (compiled, the spy above sees no call): two central
    differences of f' = 1 with truncation 100 h^2, at h = 1e-2 and 1e-2/16, extrapolate to 1
    within rounding, which passes a right gradient and fails one wrong by 1e-4."""
    from gradcli.gradcheck import differences

    h1, h2 = 1e-2, 1e-2 / 16
    central = [(h1, 1.0 + 100 * h1**2, 1.0), (h2, 1.0 + 100 * h2**2, 1.0)]
    right = differences._extrapolated(1.0, central, 1e-5, 1e-8)
    assert right is not None and right.ok and right.method == "richardson"
    assert right.numeric == pytest.approx(1.0, abs=1e-12) and right.step == h2
    assert differences._extrapolated(1.0 - 1e-4, central, 1e-5, 1e-8) is None
    assert differences._extrapolated(1.0, central[:1], 1e-5, 1e-8) is None  # one difference


def _with_wrong_sum_rule(at: tuple[int, int], text: str, values: dict) -> gradcli.Result:
    """``text`` evaluated with sum's VJP rule off by 0.5 at element ``at`` of its operand (the
    row swapped in place, and back)."""
    row = OPS["sum"]
    right = row.rules

    def wrong(xp, g, out, x):
        part = g * np.ones_like(x)
        part[at] += 0.5
        return part

    object.__setattr__(row, "rules", (wrong,))
    try:
        return gradcli.evaluate(text, values)
    finally:
        object.__setattr__(row, "rules", right)


@pytest.mark.parametrize("at", [(37, 61), (0, 0), (99, 99), (50, 3)])
def test_a_wrong_element_fails_and_is_named(at):
    values = {"W": np.random.default_rng(5).standard_normal((100, 100))}
    result = _with_wrong_sum_rule(at, "sum(sin(W)*W)", values)
    check = result.check.gradients["W"]
    assert not result.check.ok and not check.ok
    assert check.where == at and check.failed >= 1 and check.directions >= 1
    assert check.abs_error == pytest.approx(0.5 * abs(np.cos(values["W"][at]) * values["W"][at]
                                                      + np.sin(values["W"][at])), rel=1e-4)
    assert "✗ check failed" in gradient_verdict(result.check, arrays=True).plain


def test_a_wrong_element_outside_the_sample_is_found_by_the_directions():
    """(37, 61) is none of the 20 evenly spread elements of 10,000: only a direction sees it."""
    values = {"W": np.random.default_rng(6).standard_normal((100, 100))}
    result = _with_wrong_sum_rule((37, 61), "sum(W*W)", values)
    check = result.check.gradients["W"]
    assert not check.ok and check.where == (37, 61)
    assert check.checked > ARRAY_CHECK_MIN  # the sample, and the element the narrowing found


def test_small_arrays_keep_every_element_and_no_directions():
    check = gradcli.evaluate("sum(W@x)", {"W": POINT["W"][:3, :3], "x": [1.0, 2.0, 3.0]}).check
    assert all((c.directions, c.checked) == (0, c.size) for c in check.checks)


def test_a_budget_too_small_shrinks_the_check_and_says_so():
    result = gradcli.evaluate("mean((W@x + b - t)**2)", POINT, check=False)
    full = check_gradients(result.program)
    assert not full.shrunk
    small = check_gradients(result.program, budget=10_000)
    assert small.ok and "W" in small.shrunk
    assert small.gradients["W"].directions >= 1  # never fewer than one direction
    assert small.gradients["W"].checked < full.gradients["W"].checked
    text = gradient_verdict(small, arrays=True).plain
    assert "the check's budget ran out" in text and "W" in text


def test_the_report_says_which_checks_ran():
    runner = CliRunner()
    args = ["eval", "sum(y*y)", "--y", json.dumps(POINT["y"].tolist())]
    record = json.loads(runner.invoke(cli, [*args, "--json"]).stdout)
    entry = record["check"]["gradients"]["y"]
    assert (entry["directions"], entry["checked"], entry["size"]) == (
        ARRAY_CHECK_DIRECTIONS, ARRAY_CHECK_MIN, 400)
    assert record["check"]["shrunk"] == []
    table = runner.invoke(cli, args).stdout
    assert f"{ARRAY_CHECK_DIRECTIONS} directions + {ARRAY_CHECK_MIN} of 400" in table
    assert "along 3 random directions" in table


def test_a_check_files_estimate_counts_the_array_checks_work(tmp_path):
    """The up-front estimate grows with the arrays' sizes (the work the check does), not only
    with nodes and points."""
    from gradcli.formulas.files import load_check_file
    from gradcli.formulas.run import check_cells
    from gradcli.limits import CHECK_FIXED_CELLS

    sizes = {"small": 3, "large": 300}
    for name, n in sizes.items():
        np.save(tmp_path / f"{name}.npy", np.ones((n, n)))
    path = tmp_path / "checks.toml"
    path.write_text("".join(f'[[check]]\nname = "{name}"\nexpr = "sum(W*W)"\n'
                            f'at = {{W = "{name}.npy"}}\nvalue = {n * n}\n'
                            for name, n in sizes.items()))
    small, large = (check_cells(spec) - CHECK_FIXED_CELLS for spec in load_check_file(str(path)))
    assert large > 20 * small  # 10^4 times the elements; NumPy's cost per call stays


@pytest.mark.parametrize("kinks", [1, 2, 3, 4, 6])
def test_kinks_at_several_elements_never_cancel_along_a_direction(kinks):
    """relu's gradient is 0 at 0 while the central difference along v sees v_i / 2 there: with
    ±1 elements two kinks of opposite signs cancelled; random magnitudes never do."""
    for seed in range(6):
        rng = np.random.default_rng(1000 * kinks + seed)
        x = rng.uniform(-1, 1, 1000)
        zeros = rng.choice(1000, kinks, replace=False)
        x[zeros] = 0.0
        report = gradcli.evaluate("sum(relu(x))", {"x": x}).check
        assert not report.ok, (kinks, seed)
