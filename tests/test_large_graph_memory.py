"""What keeps a large graph's check small (issue 31, W3 at 0.5 KB a node): the float replays
check a few inputs of a large graph without NumPy, their copies of the values are mended after
every replay, a parse's walk is one sweep over the nodes it made, and the builder keeps names'
places as numbers. Each is held to the plain way it replaced."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import gradcli
from gradcli.engine.graph import nodes_of
from gradcli.engine.node import Node
from gradcli.engine.ops import OPS
from gradcli.engine.replay import Replayer
from gradcli.gradcheck import check as check_module
from gradcli.gradcheck import float_columns
from gradcli.language.lalr import token_at
from gradcli.language.parser import _Parser

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import workloads


def test_a_few_inputs_of_a_large_graph_are_all_checked_without_numpy():
    """W3's shape (100 inputs, every one reaching a long sum) at 4,000 nodes: above the size
    where the vectorised pass runs first in Python, the compiled replays check every input,
    and NumPy is not loaded (14 MB of a W3 process)."""
    probe = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[1] / 'benchmarks')!r})\n"
        "import gradcli, workloads\n"
        "result = gradcli.evaluate(workloads.wide_program(4000), workloads.wide_point())\n"
        "print(json.dumps([len(result.program.nodes), len(result.program.variables),\n"
        "                  list(result.check.gradients), result.check.unchecked,\n"
        "                  result.check.ok, 'numpy' in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    nodes, inputs, checked, unchecked, ok, numpy_loaded = json.loads(done.stdout)
    assert nodes * inputs >= 200_000  # where the vectorised pass runs in Python
    assert len(checked) == inputs and not unchecked and ok
    assert numpy_loaded == (not check_module.REPLAYS_FIRST)


def test_many_inputs_still_reach_the_vectorised_pass(monkeypatch):
    """Past the replays' budget the vectorised pass takes the inputs left: a sum of 20,000
    inputs gets more checked than the replays did, in the inputs' order, and the rest are
    unchecked."""
    names = [f"v{i}" for i in range(20_000)]
    program = gradcli.parse("+".join(names))
    gradcli.evaluate(program, dict.fromkeys(names, 1.0), check=False)
    asked = []

    def spied(program, targets, *rest):
        asked.extend(node.name for node in targets)
        return vectorised(program, targets, *rest)

    # the module the check imports the pass from when it runs (a compiled module's own
    # functions call each other directly: no spy there)
    vectorised = float_columns.central_at_once
    monkeypatch.setattr(float_columns, "central_at_once", spied)
    report = check_module.check_gradients(program)
    assert asked
    assert (asked[0] == "v0") == (not check_module.REPLAYS_FIRST)  # compiled: replays first
    assert set(asked) <= set(report.gradients)  # all pass: 1 everywhere
    # in the inputs' order, and the rest unchecked (in Python a later input, cheaper to
    # replay, may still fit the budget after an earlier one did not: no prefix there)
    assert list(report.gradients) == [name for name in names if name in report.gradients]
    assert report.unchecked == [name for name in names if name not in report.gradients]
    if check_module.REPLAYS_FIRST:  # compiled: the replays' own budget gives a prefix
        assert list(report.gradients) == names[:len(report.gradients)]


@pytest.mark.parametrize("text", [
    "log(x - y) + x*y", "sqrt(x) * y + 1/(y - 2)", "exp(x*y)**40 + x", "acos(x/3) * y",
    *workloads.batch_programs(6, seed=11)])
def test_replays_in_sequence_equal_fresh_replays(text: str) -> None:
    """One replayer serves every node in turn, some of its pairs refused half-way (a domain,
    an overflow): each pair is the one a fresh replayer gives, so the kept copies of the values
    were mended after each, refused or not."""
    program = gradcli.parse(text)
    point = {**workloads.batch_point(), "x": 1.3, "y": 0.7}
    gradcli.evaluate(program, {name: point[name] for name in program.variables}, check=False)
    shared = Replayer(program.nodes)
    refused = 0
    for step in (2.5, 1e-3):
        for node in program.nodes[:-1]:
            up, down = node.value + step, node.value - step
            pair = shared.replay_pair(node.index, up, down)
            assert pair == Replayer(program.nodes).replay_pair(node.index, up, down)
            refused += pair is None
            assert [n.index for n in shared.affected(node.index)] == [
                n.index for n in Replayer(program.nodes).affected(node.index)]
    if text.startswith(("log", "sqrt", "acos")):
        assert refused  # the refusals this test is about happened


def test_a_sweep_over_the_made_nodes_finds_what_the_set_finds():
    """A parse lists the nodes it makes (``nodes_of``'s ``made``); nodes it did not list -- made
    before it (a function's body, an earlier graph) or during it (an input given a value,
    ``y = 2``) -- are walked by the set and merged in. Either way each node once, in creation
    order, and nothing the outputs do not read."""
    made: list[Node] = []

    def listed(node: Node) -> Node:
        made.append(node)
        return node

    def swept(outputs: list[Node]) -> list[Node]:
        for place, node in enumerate(made):  # as the parse leaves them: one sweep each
            node.index = place
        return nodes_of(outputs, made)

    def made_by(name: str, *inputs: Node) -> Node:
        return Node(OPS[name], inputs)

    x, y = Node.variable("x"), Node.variable("y")
    older = made_by("add", made_by("mul", x, y), Node.constant(1.0))
    shared = listed(made_by("sin", older))
    late = Node.variable("z")  # made during the parse, not listed
    total = listed(made_by("add", listed(made_by("mul", shared, shared)), older))
    output = listed(made_by("sub", total, late))
    unused = listed(made_by("exp", x))
    second = listed(made_by("exp", shared))
    expected = nodes_of([output, second])
    assert [n.seq for n in expected] == sorted(n.seq for n in expected)
    assert unused not in expected and late in expected and older in expected
    assert swept([output, second]) == expected
    assert swept([output, output]) == nodes_of([output])
    assert swept([second]) == nodes_of([second])  # nothing from outside
    assert swept([older]) == nodes_of([older])  # all of it from outside
    assert swept([late, total]) == nodes_of([late, total])


_PROGRAMS = [
    "f(a, b) = a*b + sin(a)\nu = f(x, y)\nv = (u +\n  x)\nv*f(y, u)",
    "y = 2\nc = -3\nu = x*y + c\nf(a) = a*u\nf(y) + sin(y) - f(-x)",
    "x*-1 + -2.5*y, -x, x*y",
    "W = [[1, -2], [3, 4]]\nv = [x, -1]\nsum(W @ v) + W[0, 1]*x + sum(v[0:1])",
    "where(x > -1, log(x + 2), -x) + y",
    *workloads.batch_programs(4, seed=3)]


@pytest.mark.parametrize("text", _PROGRAMS)
def test_a_parsed_program_holds_every_node_its_output_needs(text: str) -> None:
    program = gradcli.parse(text)
    outputs = program.outputs or [program.output]
    found = nodes_of(outputs)
    inputs = [v for v in program.variables.values() if v not in found]  # declared, unused
    assert program.nodes == inputs + found
    assert [node.index for node in program.nodes] == list(range(len(program.nodes)))


@pytest.mark.parametrize("text", _PROGRAMS)
def test_the_parser_lists_every_node_a_program_reads(text: str) -> None:
    """So that ``nodes_of`` finds them in one sweep: a node not listed (a signed number, an
    input given a value) would send the whole walk through a set and a sort again."""
    parser = _Parser()
    parser.builder.reset()
    parser.builder.source = text
    output = parser.lalr.parse(text)
    listed = {id(node) for node in parser.builder.nodes}
    assert all(id(node) in listed
               for node in nodes_of(output if isinstance(output, list) else [output]))


def test_a_name_kept_as_a_number_is_placed_as_the_lexer_placed_it():
    text = "a = (x +\n   y)\n\n  b = x*2  # c\nc = y\na + b"
    with pytest.raises(gradcli.UsageError) as caught:
        gradcli.parse(text)
    assert (caught.value.line, caught.value.column) == (5, 1)
    assert "c is assigned but the output never uses it" in caught.value.message
    position = text.index("b = x")
    token = token_at(text, "b", position)
    assert (token, token.line, token.column, token.pos_in_stream) == ("b", 4, 3, position)


def test_a_number_written_many_times_is_one_float_in_many_nodes():
    program = gradcli.parse("x*0.25 + y*0.25 + 2 + 2.0 - 1e308*x")
    constants = [node for node in program.nodes if not node.inputs and node.name is None]
    quarters = [node for node in constants if node.value == 0.25]
    assert len(quarters) == 2 and quarters[0] is not quarters[1]  # two nodes, as written
    assert quarters[0].value is quarters[1].value  # one float
    assert sorted(node.value for node in constants) == [0.25, 0.25, 2.0, 2.0, 1e308]


def test_a_large_graph_s_replays_put_back_only_what_they_wrote():
    """Above ``_MEND_FROM`` nodes the copies are put back where each replay wrote, refused
    half-way or not: a shared replayer's pairs are a fresh one's, across the graph."""
    lines = ["t0 = sqrt(x - 0.5)*y"]
    lines += [f"t{k} = t{k - 1}*0.999 + sqrt(x - 0.5)*y/(1 + y*y)" for k in range(1, 600)]
    program = gradcli.parse("\n".join(lines) + "\nt599 + x")
    assert len(program.nodes) > 4096  # replay._MEND_FROM
    gradcli.evaluate(program, {"x": 1.3, "y": 0.7}, check=False)
    shared, refused = Replayer(program.nodes), 0
    for node in [*program.variables.values(), *program.nodes[1:-1:97]]:
        for step in (1.0, 1e-4):  # x - 1.0: sqrt refuses half-way down
            up, down = node.value + step, node.value - step
            pair = shared.replay_pair(node.index, up, down)
            assert pair == Replayer(program.nodes).replay_pair(node.index, up, down)
            refused += pair is None
    assert refused


def _sum_then_chain(inputs: int, chain: int) -> tuple[gradcli.Program, list[str]]:
    names = [f"x{i}" for i in range(inputs)]
    lines = ["s = " + " + ".join(names)]
    lines += [f"t{k} = {'s' if k == 0 else f't{k - 1}'}*0.999" for k in range(chain)]
    program = gradcli.parse("\n".join([*lines, f"t{chain - 1}"]))
    gradcli.evaluate(program, dict.fromkeys(names, 1.0), check=False)
    return program, names


@pytest.mark.parametrize("replays_first", [True, False])
def test_a_disagreement_past_the_replays_budget_is_a_failure_not_unchecked(
        replays_first, monkeypatch):
    """An input the vectorised pass saw disagree is replayed for its verdict, whichever pass
    ran first: a wrong gradient past the replays' budget fails the check (the compiled order
    once listed it as unchecked and passed, a review found)."""
    program, _ = _sum_then_chain(60, 2500)
    program.variables["x10"].grad *= 2  # a wrong gradient
    monkeypatch.setattr(check_module, "REPLAYS_FIRST", replays_first)
    report = check_module.check_gradients(program, budget=12_000)
    assert not report.ok and "x10" not in report.unchecked
    assert [name for name, check in report.gradients.items() if not check.ok] == ["x10"]


def test_in_python_the_replays_budget_counts_as_it_always_did(monkeypatch):
    """Without the compiled replays an input costs every node after it, twice, against
    ``budget`` (the first always checked): which inputs are unchecked is as before."""
    program, names = _sum_then_chain(50, 300)
    monkeypatch.setattr(check_module, "REPLAYS_FIRST", False)
    monkeypatch.setattr(check_module, "_COLUMNS_FROM", 10**18)  # no vectorised pass
    budget, spent, expected = 20_000, 0, []
    for name in names:
        cost = 2 * (len(program.nodes) - program.variables[name].index)
        if not expected or spent + cost <= budget:
            spent += cost
            expected.append(name)
    report = check_module.check_gradients(program, budget=budget)
    assert list(report.gradients) == expected and 0 < len(expected) < len(names)
    assert report.unchecked == [name for name in names if name not in expected]
