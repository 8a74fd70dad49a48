"""Issue 30: ``gradcli graph`` of array programs stays readable: arrays labelled by shape and
range, ``--digits`` as ``eval`` has it, a 3-layer MLP's DOT, Mermaid and tree of sane width,
checked against NumPy's own numbers and (where Graphviz is installed) the rendered PNG's size."""

from __future__ import annotations

import json
import shutil
import struct

import numpy as np
import pytest
from click.testing import CliRunner
from test_pictures import parse_dot

from gradcli.cli import cli

MLP = "sum(relu(W3@relu(W2@relu(W1@x + b1) + b2) + b3))"


@pytest.fixture(scope="module")
def mlp_args():
    rng = np.random.default_rng(7)
    values = {"x": rng.normal(size=4), "W1": rng.normal(size=(3, 4)), "b1": rng.normal(size=3),
              "W2": rng.normal(size=(3, 3)), "b2": rng.normal(size=3),
              "W3": rng.normal(size=(3, 3)), "b3": rng.normal(size=3)}
    args = [item for name, value in values.items()
            for item in (f"--{name}", json.dumps(value.tolist()))]
    return values, args


def graph(*args: str) -> str:
    out = CliRunner().invoke(cli, ["graph", *args])
    assert out.exit_code == 0, out.output
    return out.stdout


@pytest.mark.parametrize("digits", [[], ["--digits", "3"]])
def test_mlp_dot_is_top_to_bottom_with_short_lines(mlp_args, digits):
    values, args = mlp_args
    dot = graph(MLP, *args, "--format", "dot", *digits)
    assert "rankdir=TB" in dot  # 11 ranks
    nodes, _ = parse_dot(dot)
    assert nodes.pop("graph")[0].startswith("✓ check passed: ")  # the caption: the check
    lines = [line for label in nodes.values() for line in label]
    assert max(map(len, lines)) <= (45 if digits else 100)
    by_name = {label[0]: label for label in nodes.values()}
    w1 = values["W1"]
    assert "shape 3x4" in by_name["W1"]
    low, high = (f"{v:.3g}" if digits else repr(float(v)) for v in (w1.min(), w1.max()))
    assert f"value [{low} … {high}]" in by_name["W1"]
    assert len(by_name) == 17 and all(len(label[0]) <= 45 for label in nodes.values())


def test_mlp_mermaid_follows_the_same_direction(mlp_args):
    _, args = mlp_args
    assert graph(MLP, *args, "--format", "mermaid").startswith("flowchart TB\n")
    assert graph("x*W + b", "--x", "1", "--W", "2", "--b", "3",
                 "--format", "mermaid").startswith("flowchart LR\n")


def test_mlp_tree_is_of_sane_width(mlp_args):
    values, args = mlp_args
    tree = graph(MLP, *args, "--format", "tree", "--digits", "2")
    lines = tree.splitlines()
    assert len(lines) == 18 and max(map(len, lines)) <= 140  # a node a line, then the check
    assert lines[-1].startswith("└── ✓ check passed: ")
    assert "along this edge" not in tree  # no node is used twice: the flow is the gradient
    h1 = np.maximum(values["W1"] @ values["x"] + values["b1"], 0)
    assert f"value [{', '.join(f'{v:.2g}' for v in h1)}]" in tree


def test_the_tree_names_the_flow_of_a_shared_node():
    tree = graph("e = x - 1; e*e", "--x", "3", "--format", "tree")
    assert tree.count("← 2 along this edge") == 2  # d(e*e)/de = e + e, one e per edge
    assert "#0 x  var  value 3  grad 4\n" in tree


def test_a_large_array_is_a_shape_and_a_range(tmp_path):
    w = np.linspace(-2, 3, 1_000_000).reshape(1000, 1000)
    np.save(tmp_path / "W.npy", w)
    dot = graph("sum(W*W)", "--W", str(tmp_path / "W.npy"), "--digits", "2", "--format", "dot")
    nodes, _ = parse_dot(dot)
    (label,) = [label for label in nodes.values() if label[0] == "W"]
    assert label == ["W", "var", "shape 1000x1000", "value [-2 … 3]", "grad [-4 … 6]"]


def test_digits_is_one_option(mlp_args):
    """The same option for eval, graph and repl (one definition: one opening, then what it
    means in the command), and it is honoured."""
    helps = [CliRunner().invoke(cli, [name, "--help"], terminal_width=200).stdout
             for name in ("eval", "graph", "repl")]
    texts = [next(line for line in text.splitlines() if "--digits" in line) for text in helps]
    openings = {text.split(";")[0].split("--digits N")[1].strip() for text in texts}
    assert openings == {"Print numbers with N significant digits (default: every digit, the "
                        "shortest form that reads back as the same float)"}
    assert "drawn as" in texts[1] and "--json" not in texts[1] + texts[2]
    assert "value 0.333" in graph("x/3", "--x", "1", "--digits", "3", "--format", "tree")


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz")
@pytest.mark.parametrize(("digits", "width"), [([], 2000), (["--digits", "2"], 1000)])
def test_mlp_png_fits_a_screen(mlp_args, tmp_path, digits, width):
    _, args = mlp_args
    graph(MLP, *args, *digits, "-o", str(tmp_path / "mlp.png"))
    header = (tmp_path / "mlp.png").read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    png_width, png_height = struct.unpack(">II", header[16:24])
    assert png_width <= width and png_height <= 2000


def test_given_arrays_decide_what_they_can_without_every_value():
    """As for numbers: the nodes the given arrays decide have values (NumPy's here), the
    others none, and the picture names the variable without one."""
    w, x = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, -2.0])
    tree = graph("sum(W@x + b)", "--W", literal(w), "--x", literal(x), "--format", "tree")
    product = ", ".join(f"{v:g}" for v in w @ x)
    assert f"#2 W@x  matmul  shape 2  value [{product}]" in tree
    assert "#3 b  var\n" in tree and "no values for b" in tree
    out = CliRunner().invoke(cli, ["graph", "sum(W@x + b)", "--W", literal(w), "--x",
                                   "[1, 2, 3]", "--format", "tree"])
    assert out.exit_code == 2 and "shape mismatch in #2 W@x" in out.output
    out = CliRunner().invoke(cli, ["graph", "sum(log(W@x)) + y", "--W", literal(w), "--x",
                                   literal(x), "--format", "tree"])
    assert out.exit_code == 3 and "logarithm of a non-positive number" in out.output


def literal(array: np.ndarray) -> str:
    return json.dumps(array.tolist())
