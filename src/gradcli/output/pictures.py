"""Pictures of the computational graph: Graphviz DOT, Mermaid, a tree outline, SVG/PNG via ``dot``.

Each node shows its label, op, value and gradient; solid edges run forward, dashed edges run
backward labelled with the gradient that flows along THAT use (``err*err`` draws two edges of -1
that sum to err's gradient of -2). Without every variable's value, the picture shows the values
the given ones determine and no gradients. Nothing here imports rich (``trees.graph_tree``).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gradcli.engine.graph import Node, Program, compute, liveness, local_derivative
from gradcli.engine.notation import expression_texts
from gradcli.engine.ops import CONDITIONAL, CONST, VAR
from gradcli.errors import ExitStatus, NumericError, UsageError, visible
from gradcli.gradcheck.differences import live_in
from gradcli.gradcheck.evaluation import Result, evaluate
from gradcli.language.parser import program_of
from gradcli.language.values import runs_on_arrays, validate_values
from gradcli.limits import MAX_DRAWN_NODES as DEFAULT_MAX_NODES  # 0 means no limit
from gradcli.output.values import value_text

GRAPHVIZ_HINT = ("install Graphviz (apt-get install graphviz, brew install graphviz, or "
                 "https://graphviz.org/download/), or use --format dot, which needs nothing")

# Fill colours (Tailwind 100/700 pairs) that tell inputs, intermediates and the output apart.
_STYLES = {
    "input": ('"rounded,filled"', "#dbeafe", "#1d4ed8"),
    "const": ('"rounded,filled,dashed"', "#f3f4f6", "#6b7280"),
    "intermediate": ('"filled"', "#ffffff", "#374151"),
    "output": ('"bold,filled"', "#dcfce7", "#15803d"),
}


GRAPH_SHOWN_ELEMENTS = 4  # a larger array is drawn as its range: a label stays a label
LABEL_OPERAND_CHARS = 20  # a longer operand is named by its number in a label: ``relu(#14)``
FACTS_LINE_CHARS = 40  # a box's facts longer than this together go one to a line
DEEP_RANKS = 6  # a graph of more ranks is drawn top to bottom, so that it fits a screen's width


@dataclass
class GraphPicture:
    """A program ready to draw: evaluated, or the values the given ones determine (``known``)."""

    program: Program
    evaluated: bool
    missing: list[str] = field(default_factory=list)  # variables with no value
    known: dict[int, float] = field(default_factory=dict)  # when not evaluated
    digits: int | None = None  # significant digits of the numbers drawn (None: every digit)
    check: Any = None  # the gradient check's CheckReport, when evaluated: the gradients drawn

    @property
    def nodes(self) -> list[Node]:
        return self.program.nodes

    @property
    def status(self) -> int:
        """1 where the gradients drawn failed their check, as eval's status says; else 0."""
        return ExitStatus.CHECK_FAILED if self.check and not self.check.ok else ExitStatus.OK

    def label(self, node: Node) -> str:
        """The name a statement gave the node, else its expression, else its number."""
        return node.name or self._texts[node.index]

    def kind(self, node: Node) -> str:
        """``input``, ``const``, ``intermediate`` or ``output``: how the node is drawn."""
        if node is self.program.output:
            return "output"
        return {VAR: "input", CONST: "const"}.get(node.op, "intermediate")

    def value_of(self, node: Node) -> float | None:
        """The node's value, or None when it depends on a variable without one."""
        return node.value if self.evaluated else self.known.get(node.index)

    def number(self, value: Any) -> str:
        """A number to the picture's ``digits``; an array of more than ``GRAPH_SHOWN_ELEMENTS``
        as its range, ``[-0.5 … 1.2]``: a label, not a wall of digits."""
        if getattr(value, "ndim", 0) and value.size > GRAPH_SHOWN_ELEMENTS:
            return f"[{self.number(float(value.min()))} … {self.number(float(value.max()))}]"
        return value_text(value, self.digits, full=True)

    def facts(self, node: Node) -> str:
        """``value 2 · grad -6`` (without every value, ``value 2`` or ``""``), one fact to a line
        past ``FACTS_LINE_CHARS``, so that a box is narrow."""
        if node.op is CONST and not self.evaluated:
            return self.number(node.value)
        value = self.value_of(node)
        if value is None:
            return ""
        if not self.taken(node):
            return "not taken"
        facts = [f"value {self.number(value)}"]
        if self.program.arrays:
            facts.insert(0, f"shape {self.shape(node)}")
        if self.evaluated and node.needs_grad:
            facts.append(f"grad {self.number(node.grad)}")
        text = " · ".join(facts)
        return text if len(text) <= FACTS_LINE_CHARS else "\n".join(facts)

    def direction(self, shown: list[Node]) -> str:
        """``LR`` (inputs left, output right), or ``TB`` when the ``shown`` nodes make more
        than ``DEEP_RANKS`` ranks, which side by side would not fit a screen."""
        ranks: dict[int, int] = {}
        for node in shown:  # an operand's rank is known before its user's; one not drawn is 0
            ranks[node.index] = 1 + max((ranks.get(s.index, 0) for s in node.inputs), default=0)
        return "TB" if max(ranks.values(), default=0) > DEEP_RANKS else "LR"

    @property
    def caption(self) -> str | None:
        """What the picture lacks, or, evaluated, the check of the gradients it draws (or that
        it was skipped: --no-check)."""
        if self.note is not None or not self.evaluated:
            return self.note
        from gradcli.output.verdicts import gradient_verdict

        # its first clause: what agrees or not (gradcli eval gives the tolerances and why)
        return gradient_verdict(self.check, self.program.arrays).plain.split(" (")[0]

    @property
    def note(self) -> str | None:
        """What the picture lacks, in one line (None when evaluated)."""
        if not self.missing:
            return None
        names = ", ".join(visible(name) for name in self.missing)
        given = any(self.program.nodes[i].op is not CONST for i in self.known)
        return (f"no values for {names}: values where the given ones decide them, no gradients"
                if given else f"structure only: no values for {names}")

    def shape(self, node: Node) -> str:
        """An array program's node's shape: ``2x3``, ``scalar``; "" when it has no value."""
        from gradcli.engine.arrays import numpy, shape_text

        value = self.value_of(node)
        return "" if value is None else shape_text(numpy().shape(value))

    def flow(self, user: Node, position: int) -> float | None:
        """The gradient flowing back from ``user`` into its operand at ``position`` (None: none)."""
        source = user.inputs[position]
        if not self.evaluated or not source.needs_grad or not self.taken(user):
            return None
        args = [operand.value for operand in user.inputs]
        if self.program.arrays:  # the operand's shape (the array path's VJP or rule)
            from gradcli.engine.arrays import contribution

            return contribution(user, args, position, user.grad,
                                True if self._live is None else self._live[user.index])
        return user.grad * local_derivative(user, args, position)

    def taken(self, node: Node) -> bool:
        """False for a node in a branch not taken (a where's), whose value means nothing."""
        return self._live is None or self._live[node.index] is not False or not node.inputs

    def __post_init__(self) -> None:
        self._texts = expression_texts(self.program.nodes, LABEL_OPERAND_CHARS)
        self._live = live_in(self.program) if self.evaluated else None


def prepare(program: str | Program, values: Mapping[str, float] | None = None,
            digits: int | None = None, check: bool = True) -> GraphPicture:
    """Parse and, when every variable has a value, evaluate ``program`` for drawing (missing
    values are no error here; a numeric error at the given point is)."""
    values = values or {}
    program = program_of(program, given=values)
    missing = program.unbound(values)
    if missing:
        if runs_on_arrays(program, values):
            known = known_arrays(program, values)
        else:
            validate_values(values)
            known = known_values(program, values)
        return GraphPicture(program, evaluated=False, missing=missing, known=known, digits=digits)
    result = evaluate(program, values, check=check)  # the gradients drawn: checked as eval's
    if not isinstance(result, Result):
        raise UsageError("gradcli graph draws the gradient of one scalar output; this program "
                         "has several outputs or an array output",
                         hint="gradcli eval gives its Jacobian; reduce it to one number "
                              "(e.g. sum(...)) to draw its graph")
    return GraphPicture(program, evaluated=True, digits=digits, check=result.check)


def known_values(program: Program, values: Mapping[str, float]) -> dict[int, float]:
    """Node index -> value of every node whose variables all have a value (or a default)."""
    point = {**program.defaults, **values}
    known: dict[int, float] = {}
    failed: list[Node] = []
    for node in program.nodes:
        if node.op is CONST:
            known[node.index] = node.value
        elif node.op is VAR:
            if node.name in point:
                known[node.index] = float(point[node.name])
        elif node.op is CONDITIONAL and node.inputs[0].index in known:
            condition, taken, other = node.inputs
            chosen = taken if known[condition.index] else other
            if chosen.index in known:  # the branch not taken need not be known
                known[node.index] = known[chosen.index]
        elif all(source.index in known for source in node.inputs):
            try:
                known[node.index] = compute(node, [known[s.index] for s in node.inputs])
            except NumericError:
                if not program.masked:
                    raise
                failed.append(node)  # an error only if its branch is taken (or may be)
    if failed:
        live = liveness(program.nodes, lambda node: known.get(node.index))
        for node in failed:
            if live[node.index]:
                compute(node, [known[s.index] for s in node.inputs])  # raises its error
    return known


def known_arrays(program: Program, values: Mapping[str, Any]) -> dict[int, Any]:
    """``known_values`` of an array program, by the array passes; a node whose value fails in
    a program with a conditional is left unknown (its branch may not be taken)."""
    from gradcli.engine import arrays

    point = {**program.defaults, **values}
    known: dict[int, Any] = {}
    for node in program.nodes:
        if node.op is CONST:
            known[node.index] = arrays.numpy().asarray(node.value, dtype=float)
        elif node.op is VAR:
            if node.name in point:
                known[node.index] = arrays.as_array(str(node.name), point[str(node.name)])
        elif all(source.index in known for source in node.inputs):
            try:
                known[node.index] = arrays.compute(node, [known[s.index] for s in node.inputs])
            except NumericError:
                if not program.masked:
                    raise
    return known


def nearest_nodes(program: Program, max_nodes: int) -> tuple[list[Node], int]:
    """The ``max_nodes`` (0: all) nodes nearest the output, in order, and how many were left."""
    nodes = program.nodes
    if max_nodes <= 0 or len(nodes) <= max_nodes:
        return nodes, 0
    kept = {program.output.index}
    queue = deque([program.output])
    while queue and len(kept) < max_nodes:
        for source in queue.popleft().inputs:
            if source.index not in kept and len(kept) < max_nodes:
                kept.add(source.index)
                queue.append(source)
    return [nodes[i] for i in sorted(kept)], len(nodes) - len(kept)


# --- tree outline --------------------------------------------------------------------------------

@dataclass
class TreeEntry:
    """One line of the tree: a node under ``parent`` (an earlier entry's position); ``repeat``:
    drawn earlier, only referenced here; ``cut``: its operands lie deeper than the tree goes;
    ``hidden``: how many of its operands are not among the nodes drawn."""

    node: Node
    parent: int | None
    flow: float | None  # gradient flowing back along this use, when evaluated
    repeat: bool
    cut: bool = False
    hidden: int = 0


def tree_outline(picture: GraphPicture, max_nodes: int = DEFAULT_MAX_NODES,
                 max_depth: int = 0) -> tuple[list[TreeEntry], int]:
    """The graph as a tree from the output down, depth first (iterative); a node reached again
    is a ``repeat`` with no children, so a DAG stays as large as its edges. The nodes drawn are
    ``nearest_nodes``' (0: all), as in DOT and Mermaid, down to ``max_depth`` levels (0: no
    limit); returns the entries and how many nodes below the output were never drawn."""
    shown = {node.index for node in nearest_nodes(picture.program, max_nodes)[0]}
    entries: list[TreeEntry] = []
    drawn: set[int] = set()
    stack: list[tuple[Node, int | None, float | None, int]] = [
        (picture.program.output, None, None, 0)]
    while stack:
        node, parent, flow, depth = stack.pop()
        repeat = node.index in drawn and node.op is not CONST
        cut = not repeat and bool(node.inputs) and 0 < max_depth <= depth
        operands = [] if repeat or cut else [
            position for position, source in enumerate(node.inputs) if source.index in shown]
        hidden = 0 if repeat or cut else len(node.inputs) - len(operands)
        entries.append(TreeEntry(node, parent, flow, repeat, cut, hidden))
        if repeat:
            continue
        drawn.add(node.index)
        here = len(entries) - 1
        for position in reversed(operands):
            stack.append((node.inputs[position], here, picture.flow(node, position), depth + 1))
    return entries, len(picture.nodes) - len(unused_inputs(picture)) - len(drawn)


def unused_inputs(picture: GraphPicture) -> list[Node]:
    """The inputs a program declares (``y = 2``) that its output does not use."""
    used = {source.index for node in picture.nodes for source in node.inputs}
    output = picture.program.output
    return [node for node in picture.nodes
            if node.op is VAR and node.index not in used and node is not output]


# --- DOT -----------------------------------------------------------------------------------------

_DOT_UNSAFE = re.compile(r'[\\"\n\r\t\x00-\x1f\x7f]')


def dot_string(text: str) -> str:
    """``text`` as a DOT double-quoted string, control characters but line breaks dropped."""
    replacements = {"\\": "\\\\", '"': '\\"', "\n": "\\n"}
    return '"' + _DOT_UNSAFE.sub(lambda m: replacements.get(m.group(), ""), text) + '"'


@dataclass
class Drawing:
    """What DOT and Mermaid both draw: boxes (id, text, kind), forward edges (from, to), backward
    edges (from, to, flow); ``elided`` nodes stand behind one box."""

    boxes: list[tuple[str, str, str]]
    forward: list[tuple[str, str]]
    backward: list[tuple[str, str, float]]
    direction: str = "LR"  # GraphPicture.direction of the nodes drawn


def drawing(picture: GraphPicture, max_nodes: int = DEFAULT_MAX_NODES) -> Drawing:
    """The boxes and edges of ``picture``, the ``max_nodes`` nodes nearest the output."""
    shown, elided = nearest_nodes(picture.program, max_nodes)
    kept = {node.index for node in shown}
    boxes = []
    for node in shown:
        parts = (picture.label(node), "" if node.op is CONST else node.op.name,
                 picture.facts(node))
        boxes.append((f"n{node.index}", "\n".join(p for p in parts if p), picture.kind(node)))
    if elided:
        boxes.append(("elided", f"… {elided:,} more node{'' if elided == 1 else 's'}", "elided"))
    forward, backward = [], []
    for node in shown:
        for position, source in enumerate(node.inputs):
            start = f"n{source.index}" if source.index in kept else "elided"
            forward.append((start, f"n{node.index}"))
            flow = picture.flow(node, position)
            if flow is not None and source.index in kept:
                backward.append((f"n{node.index}", start, flow))
    return Drawing(boxes, forward, backward, picture.direction(shown))


def to_dot(picture: GraphPicture, max_nodes: int = DEFAULT_MAX_NODES) -> str:
    """Graphviz source: solid forward edges, dashed backward edges labelled with the flow."""
    sketch = drawing(picture, max_nodes)
    lines = [
        "digraph gradcli {",
        f'  graph [rankdir={sketch.direction}, fontname="Helvetica", nodesep=0.3, ranksep=0.5];',
        '  node [fontname="Helvetica", fontsize=11, margin="0.12,0.06"];',
        '  edge [fontname="Helvetica", fontsize=10, arrowsize=0.7];',
    ]
    for box, text, kind in sketch.boxes:
        if kind == "elided":
            lines.append(f"  {box} [label={dot_string(text)}, shape=plaintext];")
            continue
        style, fill, colour = _STYLES[kind]
        lines.append(f"  {box} [label={dot_string(text)}, shape=box, style={style}, "
                     f'fillcolor="{fill}", color="{colour}"];')
    lines += [f"  {start} -> {end};" for start, end in sketch.forward]
    # constraint=false: only forward edges decide the layout, so backward ones never loop it.
    lines += [f'  {start} -> {end} [style=dashed, color="#b91c1c", fontcolor="#b91c1c", '
              f"constraint=false, label={dot_string(picture.number(flow))}];"
              for start, end, flow in sketch.backward]
    caption = picture.caption
    if caption is not None:
        lines.append(f"  graph [label={dot_string(caption)}, labelloc=b];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --- Mermaid -------------------------------------------------------------------------------------

_MERMAID_ENTITIES = {'"': "#quot;", "#": "#35;", "<": "#lt;", ">": "#gt;", "`": "#96;",
                     "[": "#91;", "]": "#93;", "{": "#123;", "}": "#125;", "|": "#124;",
                     "\\": "#92;", "&": "#38;", "\n": "<br>"}
_MERMAID_UNSAFE = re.compile(r'["#<>`\[\]{}|\\&]|[\x00-\x1f\x7f]')


def mermaid_string(text: str) -> str:
    """``text`` as Mermaid quoted label text: ``#code;`` entities, ``<br>`` between lines."""
    return '"' + _MERMAID_UNSAFE.sub(lambda m: _MERMAID_ENTITIES.get(m.group(), ""), text) + '"'


def to_mermaid(picture: GraphPicture, max_nodes: int = DEFAULT_MAX_NODES) -> str:
    """A Mermaid flowchart of the same graph (renders in GitHub Markdown)."""
    sketch = drawing(picture, max_nodes)
    lines = [f"flowchart {sketch.direction}"]
    for box, text, kind in sketch.boxes:
        style = "" if kind == "elided" else f":::{kind}"
        lines.append(f"  {box}[{mermaid_string(text)}]{style}")
    lines += [f"  {start} --> {end}" for start, end in sketch.forward]
    lines += [f"  {start} -.->|{mermaid_string(picture.number(flow))}| {end}"
              for start, end, flow in sketch.backward]
    for kind, (_, fill, colour) in _STYLES.items():
        lines.append(f"  classDef {kind} fill:{fill},stroke:{colour}")
    caption = picture.caption
    if caption is not None:  # a comment: Mermaid has no caption for a flowchart
        lines.append(f"  %% {mermaid_string(caption)}")
    return "\n".join(lines) + "\n"


# --- SVG / PNG through the Graphviz program ------------------------------------------------------

def render_with_graphviz(dot_source: str, file_format: str) -> bytes:
    """``dot_source`` rendered by Graphviz ``dot`` as ``svg`` or ``png`` bytes."""
    import shutil
    import subprocess

    program = shutil.which("dot")
    if program is None:
        raise UsageError(f"--format {file_format} needs the Graphviz program 'dot', which is not "
                         "installed", hint=GRAPHVIZ_HINT)
    try:
        completed = subprocess.run([program, f"-T{file_format}"],
                                   input=dot_source.encode("utf-8"), capture_output=True,
                                   check=False, timeout=600)
    except (OSError, subprocess.SubprocessError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise UsageError(f"could not run Graphviz 'dot' ({visible(program)}): {reason}",
                         hint="try --format dot and render it yourself") from None
    if completed.returncode != 0:
        problem = completed.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"Graphviz 'dot' failed: {problem[0] if problem else 'no message'}",
                         hint="try --format dot and inspect the source")
    return completed.stdout
