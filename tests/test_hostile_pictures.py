"""Graph pictures under hostile labels, huge programs and paths that cannot be written."""

from __future__ import annotations

import io
import re
import time

import pydot
import pytest
from click.testing import CliRunner
from rich.console import Console

from gradcli.cli import cli
from gradcli.engine.graph import Node, Program
from gradcli.engine.ops import OPS
from gradcli.output.pictures import nearest_nodes, prepare, to_dot, to_mermaid, tree_outline
from gradcli.output.trees import graph_tree

pytestmark = pytest.mark.filterwarnings("ignore:'\\w+' deprecated:DeprecationWarning")
# Every character class DOT and Mermaid care about, and every C0 control but NUL.
HOSTILE = ('q"b\\s{}|<>[]#`&;:,\n\r\t\x1b[31m\x1b]0;pwn\x07\x01\x7f'
           + "".join(map(chr, range(1, 32))))


def hostile_program(name: str = HOSTILE) -> Program:
    """Names the parser never accepts reach the pictures only through the API: build one so."""
    x = Node.variable(name)
    y = x.apply(OPS["mul"], x, 2.0)
    return Program.build("hostile", y.apply(OPS["add"], y, x), [x], {})


@pytest.mark.parametrize("values", [{HOSTILE: 1.5}, {}], ids=["evaluated", "structure"])
def test_dot_of_hostile_labels_parses_and_keeps_one_statement_per_line(values):
    dot = to_dot(prepare(hostile_program(), values))
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", dot)  # no control character but \n
    (graph,) = pydot.graph_from_dot_data(dot)
    assert len(graph.get_nodes()) >= 4  # the three nodes (and the defaults), none swallowed
    for line in dot.splitlines()[4:-1]:  # every statement on its own line
        assert re.fullmatch(r'  (n\d+|elided|graph)( -> n\d+)? ?(\[.*\])?;', line), line
    labels = [node.get_label() for node in graph.get_nodes() if node.get_label()]
    assert any(label.startswith('"q\\"b\\\\s{}|<>[]#`&;:,\\n') for label in labels), labels


@pytest.mark.parametrize("values", [{HOSTILE: 1.5}, {}], ids=["evaluated", "structure"])
def test_mermaid_of_hostile_labels_has_no_unescaped_special(values):
    mermaid = to_mermaid(prepare(hostile_program(), values))
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", mermaid)
    for line in mermaid.splitlines()[1:]:
        labels = re.findall(r'"([^"]*)"', line)
        assert line.count('"') == 2 * len(labels), line  # quotes come in pairs, none inside
        for label in labels:
            assert not re.search(r'[<>\[\]{}|`\\]', label.replace("<br>", "")), label
            assert not re.search(r"#(?![0-9]+;|quot;|lt;|gt;)", label), label


def test_the_tree_on_a_forced_terminal_lets_no_escape_from_a_label_through():
    console = Console(file=io.StringIO(), force_terminal=True, color_system=None, record=True,
                      width=120)
    console.print(graph_tree(prepare(hostile_program(), {HOSTILE: 1.5})))
    output = console.file.getvalue()
    assert "\x1b" not in output and "\x07" not in output and "\r" not in output
    assert "\\x1b[31m" in output  # shown, escaped, not dropped silently
    coloured = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor",
                       width=120)
    coloured.print(graph_tree(prepare(hostile_program(), {HOSTILE: 1.5})))
    assert "\x1b]0;" not in coloured.file.getvalue()  # Rich's own styles are never OSC


def test_drawing_a_huge_program_touches_only_the_nodes_it_draws():
    count = 200_000
    x = Node.variable("x")
    node = x
    for _ in range(count):
        node = node.apply(OPS["add"], node, x)
    picture = prepare(Program.build("big", node, [x], {}), {"x": 1.0})
    started = time.perf_counter()
    dot, mermaid = to_dot(picture, 50), to_mermaid(picture, 50)
    entries, elided = tree_outline(picture, 50)
    seconds = time.perf_counter() - started
    assert seconds < 1.0, seconds  # measured 0.001 s
    assert f"… {count + 1 - 50:,} more nodes" in dot and "more nodes" in mermaid
    drawn = {e.node.index for e in entries}
    assert len(drawn) == 50 and elided == count + 1 - len(drawn)
    assert len(nearest_nodes(picture.program, 0)[0]) == count + 1


@pytest.mark.parametrize("fmt", ["dot", "mermaid", "tree"])
@pytest.mark.parametrize("path", ["/dev/full", "/nonexistent-dir/a\nb\x1b[31m.txt"])
def test_unwritable_output_paths_are_one_clear_status_2_error(fmt, path):
    result = CliRunner().invoke(cli, ["graph", "x*2", "--x", "1", "--format", fmt, "-o", path])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "\x1b" not in result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("error: usage error: cannot write ")
    assert "\\n" in first or "/dev/full" in first


def test_a_directory_as_output_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(cli, ["graph", "x*2", "-o", str(tmp_path)])
    assert result.exit_code == 2 and "is a directory" in result.stderr


def test_the_node_limit_hint_does_not_point_at_graphs_drawing_option():
    result = CliRunner().invoke(cli, ["graph", "x" + "+x" * 10, "--max-nodes", "3"])
    assert result.exit_code == 0  # --max-nodes draws fewer: the program itself is fine
    from gradcli.limits import MAX_NODES

    source = "+".join(["x"] * (MAX_NODES // 8))  # over the text limit, refused before parsing
    result = CliRunner().invoke(cli, ["graph", source + "+x" * (MAX_NODES * 4)])
    assert result.exit_code == 2
    assert "only limits how many are drawn" in result.stderr, result.stderr[-300:]
