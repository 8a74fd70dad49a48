"""--json's node labels written a chunk at a time (``notation.texts_in_order``) are the labels
written all at once (``texts_by_node``), whatever the chunk: texts kept across chunks only
until their last reader must still be there when a later node reads them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gradcli.engine.notation import texts_by_node, texts_in_order
from gradcli.language.parser import parse

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import workloads

PROGRAMS = [
    workloads.wide_program(2_000),  # named statements read again by the final sum
    workloads.deep_program(300),  # one chain of unnamed nodes: texts grow past the limit
    "a = x*y\nb = sin(x*y) + a\nc = (x - y)*(x - y)\nc/b + a*(x*y) + exp(-(x - y))",
    "y = 2\nx*3",  # a declared input that the output does not use: the first node
    *workloads.batch_programs(2),
]


@pytest.mark.parametrize("text", PROGRAMS)
@pytest.mark.parametrize("chunk", [1, 2, 7, 4096])
def test_chunked_labels_are_the_whole_ones(text: str, chunk: int) -> None:
    nodes = parse(text, 10**6).nodes
    assert list(texts_in_order(nodes, chunk)) == list(texts_by_node(nodes).values())


def test_nodes_not_numbered_by_position_are_written_whole() -> None:
    nodes = parse("u = x*y\nu + sin(u)", 100).nodes
    shuffled = [nodes[0], *nodes[2:], nodes[1]]  # each keeps its own index
    assert list(texts_in_order(shuffled, 2)) == list(texts_by_node(shuffled).values())


@pytest.mark.parametrize("gap", [0, 1, 50])
def test_creation_order_dense_or_sparse(gap: int) -> None:
    """Nodes put at their creation numbers' slots (dense) or sorted (sparse) come out in the
    order they were made; between any two, ``gap`` others were made."""
    import random

    from gradcli.engine.graph import in_creation_order
    from gradcli.engine.node import Node

    made = []
    for k in range(200):
        made.append(Node.constant(k))
        for _ in range(gap):
            Node.constant(0)
    shuffled = made[:]
    random.Random(gap).shuffle(shuffled)
    assert in_creation_order(shuffled) == made
    assert in_creation_order([]) == []
