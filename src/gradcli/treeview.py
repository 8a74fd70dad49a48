"""The graph as a Rich tree, from the output down (the default picture on a terminal).

The walk itself is ``pictures.tree_outline`` (iterative, each node drawn once and then referenced
as ``↺ label``); this module only dresses its entries. User text always goes in as ``Text``.
"""

from __future__ import annotations

from rich.text import Text
from rich.tree import Tree

from .graph import format_number
from .ops import CONST
from .pictures import DEFAULT_MAX_NODES, GraphPicture, TreeEntry, tree_outline

_KIND_STYLES = {"input": "bold blue", "const": "dim", "intermediate": "", "output": "bold green"}


def graph_tree(picture: GraphPicture, max_nodes: int = DEFAULT_MAX_NODES) -> Tree:
    """A Rich tree of ``picture``: op, label, value and gradient per node, flows on the edges."""
    entries, elided = tree_outline(picture, max_nodes)
    trees: list[Tree] = []
    for entry in entries:
        line = _entry_text(picture, entry)
        if entry.parent is None:
            tree = Tree(line, guide_style="dim")
        else:
            tree = trees[entry.parent].add(line)
        trees.append(tree)
    root = trees[0]
    if picture.missing:
        root.add(Text(f"structure only: no values for {', '.join(picture.missing)}",
                      style="yellow"))
    if elided:
        root.add(Text(f"… {elided:,} more nodes not shown (raise --max-nodes, or 0 for all)",
                      style="dim"))
    return root


def _entry_text(picture: GraphPicture, entry: TreeEntry) -> Text:
    node = entry.node
    kind = picture.kind(node)
    text = Text()
    if entry.repeat:
        text.append("↺ ", style="dim")
        text.append(picture.label(node), style=_KIND_STYLES[kind])
        text.append(f"  #{node.index}", style="dim")
    else:
        text.append(f"#{node.index} ", style="dim")
        text.append(picture.label(node), style=_KIND_STYLES[kind])
        if node.op is not CONST:
            text.append(f"  {node.op.name}", style="dim")
        if picture.evaluated:
            text.append(f"  value {format_number(node.value)}", style="cyan")
            if node.needs_grad:
                text.append(f"  grad {format_number(node.grad)}", style="magenta")
    if entry.flow is not None:
        text.append(f"  ← {format_number(entry.flow)} along this edge", style="red")
    return text
