"""gradcli graph: DOT parsed back, Mermaid, the tree of a DAG, Graphviz and its absence."""

from __future__ import annotations

import html
import math
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from collections import defaultdict

import pydot
import pytest
from click.testing import CliRunner
from rich.console import Console

import gradcli
from gradcli.cli import cli
from gradcli.engine.graph import Node, Program
from gradcli.engine.ops import OPS
from gradcli.output.pictures import (
    dot_string,
    mermaid_string,
    nearest_nodes,
    prepare,
    to_dot,
    to_mermaid,
    tree_outline,
)
from gradcli.output.trees import graph_tree

SEED = "u = x*W; z = u + b; err = z - t; err*err"
SEED_VALUES = ["--x", "2", "--W", "3", "--b", "1", "--t", "8"]
SEED_POINT = {"x": 2.0, "W": 3.0, "b": 1.0, "t": 8.0}
HOSTILE = 'a"b\\c\nd<e>[f]{g}|h#i`j&k\\l\x07'
# pydot 4 still calls pyparsing's camelCase names, which recent pyparsing deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:'\\w+' deprecated:DeprecationWarning")
needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz `dot` is not installed (apt-get install graphviz)")


def parse_dot(text: str) -> tuple[dict[str, list[str]], list[tuple[str, str, dict]]]:
    """Nodes (id -> label lines) and edges (source, target, attributes) of DOT via pydot."""
    (graph,) = pydot.graph_from_dot_data(text)
    nodes = {}
    for node in graph.get_nodes():
        label = node.get_label()
        if label is not None:
            nodes[node.get_name()] = unescape_dot(label)
    edges = [(e.get_source(), e.get_destination(), e.get_attributes()) for e in graph.get_edges()]
    return nodes, edges


def unescape_dot(quoted: str) -> list[str]:
    """A DOT quoted string back to its lines (independent of the code under test)."""
    assert re.fullmatch(r'"(?:[^"\\\n]|\\.)*"', quoted), quoted
    text = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), quoted[1:-1])
    return text.split("\n")


def run(*args: str):
    return CliRunner().invoke(cli, ["graph", *args])


def test_seed_dot_has_the_nodes_values_and_gradients():
    source = to_dot(prepare(SEED, SEED_POINT))
    nodes, edges = parse_dot(source)
    by_label = {lines[0]: (name, lines) for name, lines in nodes.items() if name != "graph"}
    # the gradients drawn are checked, as eval's are, and the caption says so
    assert '  graph [label="✓ check passed: 8 gradients agree with finite differences' in source
    # Hand-computed: u = 6, z = 7, err = -1, loss = 1; dL/derr = 2*err = -2, dL/dx = -2*W.
    expected = {"x": ("var", 2, -6), "W": ("var", 3, -4), "b": ("var", 1, -2),
                "t": ("var", 8, 2), "u": ("mul", 6, -2), "z": ("add", 7, -2),
                "err": ("sub", -1, -2), "err*err": ("mul", 1, 1)}
    assert set(by_label) == set(expected)
    for label, (op, value, grad) in expected.items():
        _, lines = by_label[label]
        assert lines[1] == op
        assert lines[2] == f"value {value} · grad {grad}"
    name = {label: node_id for label, (node_id, _) in by_label.items()}
    forward = sorted((s, d) for s, d, attrs in edges if "style" not in attrs)
    wanted = [("x", "u"), ("W", "u"), ("u", "z"), ("b", "z"), ("z", "err"), ("t", "err"),
              ("err", "err*err"), ("err", "err*err")]
    assert forward == sorted((name[a], name[b]) for a, b in wanted)


def test_seed_backward_edges_carry_each_use_and_sum_to_the_gradient():
    _, edges = parse_dot(to_dot(prepare(SEED, SEED_POINT)))
    backward = [(s, d, float(attrs["label"].strip('"'))) for s, d, attrs in edges
                if attrs.get("style") == "dashed"]
    into = defaultdict(list)
    for _, target, flow in backward:
        into[target].append(flow)
    result = gradcli.evaluate(SEED, SEED_POINT)
    err = next(node for node in result.program.nodes if node.name == "err")
    assert into[f"n{err.index}"] == [-1.0, -1.0]  # err*err: err times 1, twice
    assert sum(into[f"n{err.index}"]) == -2.0 == 2 * err.value
    for node in result.program.nodes[:-1]:  # every gradient is the sum of what flows in
        assert sum(into[f"n{node.index}"]) == pytest.approx(node.grad)


@pytest.mark.parametrize("text", [
    "x*y + sin(x)*x", "a = x**2; a**2 + a**2", "exp(x)/(1 + exp(x))", "hypot(x, y*x) - min(x, y)",
])
def test_flows_into_a_node_sum_to_its_gradient(text):
    picture = prepare(text, {"x": 0.7, "y": -1.3})
    into = defaultdict(float)
    for node in picture.nodes:
        for position, source in enumerate(node.inputs):
            flow = picture.flow(node, position)
            if flow is not None:
                into[source.index] += flow
    for node in picture.nodes[:-1]:
        if node.needs_grad:
            assert into[node.index] == pytest.approx(node.grad, rel=1e-12)


def test_seed_mermaid_text():
    text = to_mermaid(prepare(SEED, SEED_POINT))
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    assert '  n7["err*err<br>mul<br>value 1 · grad 1"]:::output' in lines
    assert '  n0["x<br>var<br>value 2 · grad -6"]:::input' in lines
    assert lines.count("  n6 --> n7") == 2
    assert lines.count('  n7 -.->|"-1"| n6') == 2
    assert '  n6 -.->|"2"| n5' in lines
    assert sum(line.startswith("  classDef ") for line in lines) == 4


def test_structure_only_without_values():
    picture = prepare(SEED, {})
    assert not picture.evaluated and picture.missing == ["x", "W", "b", "t"]
    nodes, edges = parse_dot(to_dot(picture))
    assert nodes.pop("graph") == [picture.note]  # the caption
    assert all(len(lines) == 2 for lines in nodes.values())  # label and op, no values
    assert all("style" not in attrs for _, _, attrs in edges)  # no gradients flow
    assert "value" not in to_mermaid(picture).replace("no values", "")
    assert picture.note == "structure only: no values for x, W, b, t"


def test_some_values_given_show_what_they_decide_and_name_the_missing():
    # x = 2, W = 3 given: u = x*W = 6 is known; z = u + b, err and the output need b and t.
    picture = prepare(SEED, {"x": 2.0, "W": 3.0})
    assert not picture.evaluated and picture.missing == ["b", "t"]
    nodes, edges = parse_dot(to_dot(picture))
    assert nodes["n0"] == ["x", "var", "value 2"] and nodes["n1"] == ["W", "var", "value 3"]
    assert nodes["n2"] == ["u", "mul", "value 6"]
    assert nodes["n3"] == ["b", "var"] and nodes["n7"] == ["err*err", "mul"]
    assert all("style" not in attrs for _, _, attrs in edges)  # no gradients without b and t
    note = "no values for b, t: values where the given ones decide them, no gradients"
    assert picture.note == note and f'  graph [label="{note}", labelloc=b];' in to_dot(picture)
    assert '  n2["u<br>mul<br>value 6"]:::intermediate' in to_mermaid(picture).splitlines()
    assert to_mermaid(picture).endswith(f'  %% "{note}"\n')
    out = render_tree(picture)
    assert "#2 u  mul  value 6" in out and "grad " not in out and note in out


def test_the_programs_own_values_count_when_others_are_missing():
    out = render_tree(prepare("x = 2; a = exp(x); a*y", {}))
    assert f"#1 a  exp  value {math.exp(2)!r}" in out  # the default x = 2 decides a
    assert "#3 a*y  mul\n" in out and "no values for y" in out


def test_a_numeric_error_where_the_given_values_decide_is_raised():
    with pytest.raises(gradcli.NumericError, match="log"):
        prepare("log(x)*y", {"x": 0.0})


def test_graph_command_keeps_the_given_values():
    result = CliRunner().invoke(cli, ["graph", SEED, "--x", "2", "--W", "3", "--format", "dot"])
    assert result.exit_code == 0 and 'n2 [label="u\\nmul\\nvalue 6"' in result.stdout


def render_tree(picture, max_nodes: int = 300) -> str:
    console = Console(record=True, width=200, no_color=True, file=None)
    with console.capture() as capture:
        console.print(graph_tree(picture, max_nodes))
    return capture.get()


def test_tree_of_a_dag_draws_a_reused_node_once_then_refers_to_it():
    out = render_tree(prepare("x = 2; a = x**2; b = a*3; b*a + a", {}))
    assert out.count("#2 a  pow") == 1
    assert out.count("↺ a") == 2
    assert out.count("#0 x  var  value 2") == 1  # x is under the first a only
    # x = 2: a = 4, b = 3a = 12, output b*a + a = 52; d/da = b + 3a + 1 = 25 (closed form)
    assert out.splitlines()[0] == "#6 b*a + a  add  value 52  grad 1"
    assert "#2 a  pow  value 4  grad 25" in out


def test_tree_of_the_seed_shows_each_use_of_err():
    out = render_tree(prepare(SEED, SEED_POINT))
    lines = out.splitlines()
    assert lines[0] == "#7 err*err  mul  value 1  grad 1"
    assert "#6 err  sub  value -1  grad -2  ← -1 along this edge" in lines[1]
    assert lines[-2].endswith("↺ err  #6  ← -1 along this edge")
    assert lines[-1].startswith("└── ✓ check passed: 8 gradients agree with finite differences")
    failed = render_tree(prepare("relu(x)", {"x": 0.0}))  # no derivative there: drawn, and said
    assert "└── ✗ check failed: 1 of 2 gradients disagrees" in failed
    skipped = render_tree(prepare("relu(x)", {"x": 0.0}, check=False))  # --no-check
    assert skipped.splitlines()[-1] == "└── finite-difference check skipped"


def test_tree_without_values_says_so():
    out = render_tree(prepare(SEED, {}))
    assert "value " not in out and "grad" not in out
    assert "structure only: no values for x, W, b, t" in out


def deep_chain(depth: int) -> Program:
    node = Node.variable("x")
    for _ in range(depth):
        node = node.apply(OPS["sin"], node)
    return Program.build("chain", node, [], {})


def test_deep_graphs_need_no_recursion_and_elide_with_a_count():
    program = deep_chain(20_000)
    entries, elided = tree_outline(prepare(program, {"x": 0.5}), max_nodes=0)
    assert len(entries) == 20_001 and elided == 0
    entries, elided = tree_outline(prepare(program, {}), max_nodes=10)
    assert len(entries) == 10 and elided == 20_001 - 10
    shown, left_out = nearest_nodes(program, 10)
    assert [n.index for n in shown] == list(range(20_001 - 10, 20_001)) and left_out == 19_991
    nodes, _ = parse_dot(to_dot(prepare(program, {}), max_nodes=10))
    assert nodes["elided"] == ["… 19,991 more nodes"]
    assert "… 19,991 more nodes not shown" in render_tree(prepare(program, {}), 10)


def test_the_tree_draws_the_nodes_dot_draws_and_counts_the_operands_it_leaves_out():
    program = gradcli.parse("a = x*y; b = a + sin(x); c = b*b + a; d = c + exp(y) + a*b; d*x")
    picture = prepare(program, {"x": 1.0, "y": 2.0})
    entries, elided = tree_outline(picture, max_nodes=6)
    nodes, _ = parse_dot(to_dot(picture, max_nodes=6))
    in_dot = {int(name[1:]) for name in nodes if re.fullmatch(r"n\d+", name)}
    assert {e.node.index for e in entries} == in_dot == {11, 10, 9, 8, 6, 0}
    assert elided == 6 and nodes["elided"] == ["… 6 more nodes"]
    hidden = {e.node.index: e.hidden for e in entries if not e.repeat}
    # c + exp(y) without exp(y); c = b*b + a and a*b without their operands
    assert hidden == {11: 0, 10: 0, 8: 1, 6: 2, 9: 2, 0: 0}
    out = render_tree(picture, 6)
    assert "c + exp(y)  add" in out and "(1 operand not shown)" in out
    assert out.count("(2 operands not shown)") == 2
    # the depth is said where it cut, not for a tree 3 levels deep (a review)
    assert "… 6 more nodes not shown (raise --max-nodes, 0 for all)" in out
    deep = render_tree(prepare(deep_chain(100), {"x": 0.5}), 0)  # all nodes, cut by depth
    assert "levels deep" in deep and "--max-nodes" not in deep  # raising it would not help


def test_the_tree_stops_at_a_readable_depth():
    out = render_tree(prepare(deep_chain(100), {"x": 0.5}))  # graph_tree's default: 30 levels
    assert " ".join(out.replace("│", "").split()).count(
        "(operands deeper than this are not shown)") == 1
    assert "… 70 more nodes not shown" in out  # 101 nodes, levels 0..30 drawn


def test_dot_escapes_hostile_labels():
    quoted = dot_string(HOSTILE)
    assert unescape_dot(quoted) == ['a"b\\c', 'd<e>[f]{g}|h#i`j&k\\l']
    program = hostile_program()
    nodes, _ = parse_dot(to_dot(prepare(program, {HOSTILE: 1.0})))
    assert any(lines[:2] == ['a"b\\c', "d<e>[f]{g}|h#i`j&k\\l"] for lines in nodes.values())


def test_mermaid_escapes_hostile_labels():
    quoted = mermaid_string(HOSTILE)
    inner = quoted[1:-1]
    assert quoted[0] == quoted[-1] == '"'
    assert not re.search(r'["<>\[\]{}|`\\]', inner.replace("<br>", ""))
    decoded = html.unescape(re.sub(r"#(\w+);", lambda m: "&" + (
        "#" + m.group(1) if m.group(1).isdigit() else m.group(1)) + ";", inner))
    assert decoded == 'a"b\\c<br>d<e>[f]{g}|h#i`j&k\\l'


def hostile_program() -> Program:
    """A graph built through the API with a name the parser would never accept."""
    x = Node.variable(HOSTILE)
    return Program.build("hostile", x.apply(OPS["mul"], x, 2.0), [x], {})


def test_cli_formats_and_defaults(tmp_path):
    result = run(SEED, *SEED_VALUES)  # not a terminal: DOT
    assert result.exit_code == 0 and result.stdout.startswith("digraph gradcli {")
    result = run(SEED, *SEED_VALUES, "--format", "tree")
    assert result.exit_code == 0 and "↺ err" in result.stdout and "\x1b[" not in result.stdout
    text = tmp_path / "seed.txt"
    assert run(SEED, "--format", "dot", "-o", str(text), "--x", "2").exit_code == 0
    assert text.read_text().startswith("digraph")  # .txt takes any of the text formats
    target = tmp_path / "seed.mmd"
    assert run(SEED, "--format", "dot", "-o", str(target), "--x", "2").exit_code == 2
    assert not target.exists()  # a .mmd file never holds DOT
    assert run("-f", "examples/seed.grad", "-o", str(target)).exit_code == 0
    assert target.read_text().startswith("flowchart LR")


def test_cli_errors_are_one_clear_message():
    result = run("2x + 1")
    assert result.exit_code == 2 and "did you mean 2*x?" in result.stderr
    result = run("log(x)", "--x", "-1")
    assert result.exit_code == 3 and "logarithm of a non-positive number" in result.stderr
    result = run("x", "--x", "1:2:3")
    assert result.exit_code == 2 and "needs one point" in result.stderr
    result = run("x", "-o", "/nonexistent-dir/g.dot")
    assert result.exit_code == 2 and "cannot write /nonexistent-dir/g.dot" in result.stderr
    assert "Traceback" not in result.output


def test_without_graphviz_svg_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no `dot` to be found
    result = run(SEED, *SEED_VALUES, "--format", "svg", "-o", str(tmp_path / "g.svg"))
    assert result.exit_code == 2
    first = result.stderr.splitlines()[0]
    assert first == ("error: usage error: --format svg needs the Graphviz program 'dot', "
                     "which is not installed")
    assert "apt-get install graphviz" in result.stderr and "brew install graphviz" in result.stderr
    assert "--format dot" in result.stderr
    assert not (tmp_path / "g.svg").exists()
    assert run(SEED, *SEED_VALUES, "--format", "dot").exit_code == 0


@needs_dot
def test_dot_renders_without_warnings():
    for picture in (prepare(SEED, SEED_POINT), prepare(SEED, {}),
                    prepare(hostile_program(), {HOSTILE: 1.0}),
                    prepare(deep_chain(500), {"x": 0.5})):
        done = subprocess.run(["dot", "-Tsvg"], input=to_dot(picture, max_nodes=50).encode(),
                              capture_output=True, check=False)
        assert done.returncode == 0 and done.stderr == b""
        ElementTree.fromstring(done.stdout)


@needs_dot
def test_svg_and_png_through_graphviz(tmp_path):
    assert run(SEED, *SEED_VALUES, "-o", str(tmp_path / "g.svg")).exit_code == 0
    root = ElementTree.parse(tmp_path / "g.svg").getroot()
    assert root.tag.endswith("svg")
    texts = {el.text for el in root.iter() if el.tag.endswith("text")}
    assert {"err*err", "value -1 · grad -2", "-1"} <= texts
    assert run(SEED, *SEED_VALUES, "-o", str(tmp_path / "g.png")).exit_code == 0
    assert (tmp_path / "g.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_graph_digits_and_arrays_drawn_as_their_range():
    """Issue 30: --digits rounds every number drawn; an array of more than 4 elements is its
    range [min … max] beside its shape, so a layer's weights make a label (the numbers here
    are the program's, worked out by hand)."""
    from click.testing import CliRunner

    from gradcli.cli import cli

    args = ["graph", "sum(W@x)", "--W", "[[0.123456, 2, 3], [4, 5, 6.5]]", "--x",
            "[1, 2, 3]", "--format", "tree"]
    out = CliRunner().invoke(cli, [*args, "--digits", "3"]).stdout
    assert "value 46.6" in out  # 0.123456 + 2*2 + 3*3 + 4 + 5*2 + 6.5*3 = 46.623456
    assert "#0 W  var  shape 2x3  value [0.123 … 6.5]  grad [1 … 3]" in out
    assert "#1 x  var  shape 3  value [1, 2, 3]  grad [4.12, 7, 9.5]" in out
    full = CliRunner().invoke(cli, args).stdout
    assert "value [0.123456 … 6.5]" in full and "grad [4.123456, 7, 9.5]" in full
    dot = CliRunner().invoke(cli, ["graph", "sin(x)", "--x", "1", "--digits", "3",
                                   "--format", "dot"]).stdout
    assert "value 0.841 · grad 1" in dot and 'label="0.54"' in dot


def test_graph_no_check_draws_without_the_check_and_says_so():
    """--no-check as eval's: the gradients drawn unchecked, the caption says so, status 0 even
    at a kink, where the check fails with status 1."""
    args = ["graph", "relu(x)", "--x", "0", "--format", "dot"]
    checked = CliRunner().invoke(cli, args)
    assert checked.exit_code == 1 and "✗ check failed: 1 of 2 gradients" in checked.stdout
    skipped = CliRunner().invoke(cli, [*args, "--no-check"])
    assert skipped.exit_code == 0
    assert '  graph [label="finite-difference check skipped", labelloc=b];' in skipped.stdout
