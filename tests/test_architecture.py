"""The drawing of the tree in docs/architecture.md is the tree's own: which part of gradcli imports
which, read from the sources (imports inside functions count: a lazy import is still a
dependency). After moving a module between parts, redraw it with
``python tests/test_architecture.py``.

It is a picture of what tests/test_packaging.py enforces (the ranks, no circles): a reader sees at
a glance that ``engine/`` imports nothing above it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "gradcli"
DOC = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- imports: begin -->", "<!-- imports: end -->"
TOP_LEVEL = {"errors", "limits", "api", "__init__", "__main__"}  # modules, not subpackages


def _part(dotted: str) -> str | None:
    """``gradcli.engine.graph`` -> ``engine``; ``gradcli.errors`` -> ``errors``."""
    parts = dotted.split(".")
    if parts[0] != "gradcli" or len(parts) < 2:
        return None
    return parts[1]


def part_imports() -> dict[str, set[str]]:
    """Each part of the package and the other parts it imports."""
    graph: dict[str, set[str]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        relative = path.relative_to(SOURCE).with_suffix("").parts
        part = relative[0]
        if part in ("__init__", "__main__"):
            continue
        graph.setdefault(part, set())
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                target = _part(name)
                if target is not None and target != part and target != "__init__":
                    graph[part].add(target)
    return graph


def _direct(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The imports that are not implied by others (the transitive reduction): the drawing shows
    the layers, not every edge."""
    def reachable(start: str, skip: str) -> set[str]:
        seen, stack = set(), [t for t in graph[start] if t != skip]
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(graph.get(node, ()))
        return seen

    return {part: {t for t in targets if t not in reachable(part, t)}
            for part, targets in graph.items()}


def mermaid() -> str:
    graph = _direct(part_imports())
    lines = ["```mermaid", "flowchart TD"]
    for part in sorted(graph, key=lambda p: (-_depth(p, graph), p)):
        for target in sorted(graph[part]):
            lines.append(f"  {part} --> {target}")
    lines.append("```")
    return "\n".join(lines)


def _depth(part: str, graph: dict[str, set[str]]) -> int:
    """The longest chain of imports below a part (iteratively, the graph has no circles)."""
    depths: dict[str, int] = {}
    order, stack = [], [part]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(t for t in graph.get(node, ()) if t not in depths)
    for node in reversed(order):
        depths[node] = 1 + max((depths.get(t, 0) for t in graph.get(node, ())), default=-1)
    return depths[part]


def _drawn() -> str:
    text = DOC.read_text("utf-8")
    found = re.search(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), text, re.S)
    assert found, f"docs/architecture.md has no {BEGIN} ... {END} block"
    return found.group(1)


def test_the_drawing_in_the_docs_is_the_trees_own():
    assert _drawn() == mermaid(), "redraw it: python tests/test_architecture.py"


def test_the_engine_imports_nothing_above_it():
    assert part_imports()["engine"] <= {"errors", "limits"}


if __name__ == "__main__":  # python tests/test_architecture.py: redraw docs/architecture.md
    text = DOC.read_text("utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + "\n" + mermaid() + "\n" + text[end:], "utf-8")
    print(f"redrew {DOC.relative_to(ROOT)}")
