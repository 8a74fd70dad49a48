"""The graph as a Rich tree (``gradcli graph --format tree``): dresses the entries of
``pictures.tree_outline``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions
from rich.text import Text

from gradcli.engine.ops import CONST
from gradcli.errors import plural, visible
from gradcli.limits import MAX_DRAWN_NODES
from gradcli.output.console import MAX_WIDTH

if TYPE_CHECKING:
    from rich.tree import Tree

    from gradcli.output.pictures import GraphPicture, TreeEntry

_KIND_STYLES = {"input": "bold blue", "const": "dim", "intermediate": "", "output": "bold green"}


def graph_tree(picture: GraphPicture, max_nodes: int = MAX_DRAWN_NODES,
               max_depth: int = 30) -> Tree:
    """A Rich tree of ``picture``: op, label, value and gradient per node, flows on the edges
    that are not a node's whole gradient; below ``max_depth`` levels (whose guides would push
    the text off the screen) operands are left out."""
    from rich.tree import Tree

    from gradcli.output.pictures import tree_outline, unused_inputs

    class WholeLines(Tree):
        """Where lines do not wrap (a pipe), each line is printed whole, not cut."""

        def __rich_console__(self, console: Console, options: ConsoleOptions) -> Any:
            if options.no_wrap:
                wide = options.update_width(MAX_WIDTH)
                width = super().__rich_measure__(console, wide).maximum
                options = options.update_width(max(width, options.max_width))
            return super().__rich_console__(console, options)

    entries, elided = tree_outline(picture, max_nodes, max_depth)
    trees: list[Tree] = []
    for entry in entries:
        line = _entry_text(picture, entry)
        if entry.parent is None:
            tree = WholeLines(line, guide_style="dim")
        else:
            tree = trees[entry.parent].add(line)
        trees.append(tree)
    root = trees[0]
    caption = picture.caption
    if caption is not None:
        check = picture.check if picture.note is None else None
        style = ("green" if check.ok else "red") if check is not None else (
            "yellow" if picture.note is not None else "dim")
        root.add(Text(caption, style=style))
    unused = unused_inputs(picture)
    if unused:
        names = ", ".join(visible(picture.label(node)) for node in unused)
        root.add(Text(f"inputs the output does not use (gradient 0): {names}", style="dim"))
    if elided:  # each limit said only where it cut
        why = ["raise --max-nodes, 0 for all"] if 0 < max_nodes < len(picture.nodes) else []
        if any(entry.cut for entry in entries):
            why.append(f"the tree goes {max_depth} levels deep, --format dot draws every level")
        root.add(Text(f"… {plural(elided, 'more node')} not shown ({'; '.join(why)})",
                      style="dim"))
    return root


def _entry_text(picture: GraphPicture, entry: TreeEntry) -> Text:
    """The node's line, and the gradient along its edge when it is not the node's whole one."""
    node = entry.node
    kind = picture.kind(node)
    text = Text()
    if entry.repeat:
        text.append("↺ ", style="dim")
        text.append(visible(picture.label(node)), style=_KIND_STYLES[kind])
        text.append(f"  #{node.index}", style="dim")
    else:
        text.append(f"#{node.index} ", style="dim")
        text.append(visible(picture.label(node)), style=_KIND_STYLES[kind])
        if node.op is not CONST:
            text.append(f"  {node.op.name}", style="dim")
        if picture.program.arrays and picture.shape(node):
            text.append(f"  shape {picture.shape(node)}", style="dim")
        value = picture.value_of(node)
        if value is not None and node.op is not CONST and not picture.taken(node):
            text.append("  not taken", style="cyan")  # a branch not taken (a where's)
        elif value is not None and node.op is not CONST:
            text.append(f"  value {picture.number(value)}", style="cyan")
            if picture.evaluated and node.needs_grad:
                text.append(f"  grad {picture.number(node.grad)}", style="magenta")
    if entry.flow is not None and not _same(entry.flow, node.grad):
        text.append(f"  ← {picture.number(entry.flow)} along this edge", style="red")
    if entry.cut:
        text.append("  (operands deeper than this are not shown)", style="dim")
    elif entry.hidden:
        text.append(f"  ({plural(entry.hidden, 'operand')} not shown)", style="dim")
    return text


def _same(flow: Any, grad: Any) -> bool:
    """Whether ``flow`` is ``grad`` to the bit (a number, or an array of the same shape)."""
    if getattr(flow, "shape", None) != getattr(grad, "shape", None):
        return False
    same = flow == grad
    return bool(same.all()) if hasattr(same, "all") else bool(same)
