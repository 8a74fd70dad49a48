"""``Replayer.replay_pair`` (both central replays in one walk) against two replays one at a
time, and the check's verdicts against ``check_node``'s: the same numbers to the bit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcli
from gradcli.engine.replay import Replayer
from gradcli.gradcheck.check import _checked, check_node

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import workloads

POINT = workloads.batch_point()


def _evaluated(text: str, point: dict[str, float]) -> gradcli.Program:
    program = gradcli.parse(text)
    gradcli.evaluate(program, point, check=False)
    return program


def _one_at_a_time(replayer: Replayer, index: int, up: float, down: float) -> tuple | None:
    """Both replays, or None where one of them raises its error."""
    try:
        high, reach_up = replayer.replay(index, up)
        low, reach_down = replayer.replay(index, down)
    except gradcli.GradcliError:
        return None
    return high, low, max(reach_up, reach_down)


@pytest.mark.parametrize("text", workloads.batch_programs(40))
def test_pair_is_two_replays(text: str) -> None:
    program = _evaluated(text, POINT)
    replayer = Replayer(program.nodes)
    walked = 0
    for node in program.nodes[:-1]:
        h = 1e-3 * max(1.0, abs(node.value))
        up, down = node.value + h, node.value - h
        pair = replayer.replay_pair(node.index, up, down)
        assert pair == _one_at_a_time(replayer, node.index, up, down)
        walked += pair is not None
    assert walked > len(program.nodes) // 2  # None (a pole met, as in v - v) is rare


@pytest.mark.parametrize("text", workloads.batch_programs(40, seed=7))
def test_verdicts_are_check_nodes(text: str) -> None:
    program = _evaluated(text, POINT)
    replayer = Replayer(program.nodes)
    for node in program.nodes:
        if node.needs_grad:
            assert _checked(replayer, node, 1e-5, 1e-8, "central") == check_node(
                replayer, node, 1e-5, 1e-8, "central")


@settings(max_examples=60, deadline=None)
@given(st.floats(-3.0, 3.0), st.floats(-3.0, 3.0), st.sampled_from([
    "log(x) + x/y", "sqrt(x*y) - x", "x/(y - 1)", "(x - y)**0.5 * y", "relu(x) * y**3",
    "exp(x*y)**40", "where(x > 0, log(x), y)", "1/(x*x - y*y)"]))
def test_unusual_points_agree(x: float, y: float, text: str) -> None:
    """Domains, poles, overflow and conditionals: the pair refuses (None) or agrees."""
    try:
        program = _evaluated(text, {"x": x, "y": y})
    except gradcli.GradcliError:
        return
    replayer = Replayer(program.nodes)
    for node in program.variables.values():
        h = 0.5 * max(1.0, abs(node.value))
        pair = replayer.replay_pair(node.index, node.value + h, node.value - h)
        expected = _one_at_a_time(replayer, node.index, node.value + h, node.value - h)
        assert pair == expected or (pair is None and replayer.masked)
        assert _checked(replayer, node, 1e-5, 1e-8, "central") == check_node(
            replayer, node, 1e-5, 1e-8, "central")


def test_affected_is_every_dependent_in_order() -> None:
    """The sweep against a plain definition: j depends on i if an operand of j is i or does."""
    program = _evaluated(workloads.batch_programs(5)[3], POINT)
    nodes = program.nodes
    replayer = Replayer(nodes)
    for node in nodes:
        below = {node.index}
        for other in nodes:
            if any(source.index in below for source in other.inputs):
                below.add(other.index)
        below.discard(node.index)
        assert [n.index for n in replayer.affected(node.index)] == sorted(below)
