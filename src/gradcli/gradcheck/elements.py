"""The check of an array program's gradients: element by element, and along random directions.

Every node's gradient (every input's, and every other node's when the graph is small) is checked
by finite differences with ``differences.check_node``. A small one, up to ``ARRAY_ALL_ELEMENTS``
elements, element by element, every element (the sampled elements replay together as NumPy
columns where they can, gradcheck/columns.py). A larger one along ``ARRAY_CHECK_DIRECTIONS``
random directions, each of which checks every element at once (gradcheck/directions.py), plus
up to ``ARRAY_CHECK_MIN`` elements of an evenly spread, deterministic sample (costing at most
half what the directions cost, so at least 2 of a matrix feeding a product; a node small enough
for columns replays its directions in its sample's columns); a failed direction is
narrowed down to the elements that disagree. The verdict says which ran: ``directions``,
``checked`` of ``size`` elements.

The budget counts work, not elements: a replay costs what it recomputes (``node_work``: the
elements each downstream node reads and writes, a matrix product's multiplications, a
determinant's or an inverse's n^3, NumPy's cost per call), a direction two replays and the
moved copy, an element two replays (in columns a twentieth of that, but for the
multiplications of a matrix product or a factorisation, which each column repeats): upper
bounds where the replays move the linear ops once per direction or element (replay.Moved,
W@x's product once per direction instead of per replay). Each node gets a fair share of
``ARRAY_CHECK_BUDGET`` (about a second); a plan past its share checks fewer elements, then
fewer directions (never fewer than one), and the report names the node (``shrunk``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import Any

from gradcli.engine.graph import Node, Program, node_text
from gradcli.engine.masks import live_nodes
from gradcli.engine.ops import numpy
from gradcli.gradcheck.columns import COLUMN_MAX_ELEMENTS, central_columns, replayable
from gradcli.gradcheck.differences import GradientCheck, meaningful, settled_check
from gradcli.gradcheck.directions import (
    DirectionReplayer,
    check_direction,
    check_element,
    narrow,
)
from gradcli.limits import (
    ARRAY_ALL_ELEMENTS,
    ARRAY_CHECK_BUDGET,
    ARRAY_CHECK_DIRECTIONS,
    ARRAY_CHECK_ELEMENTS,
    ARRAY_CHECK_MIN,
    ARRAY_COLUMN_FACTOR,
)

NODE_OVERHEAD = 2_000  # a node costs as much to recompute as this many elements (a NumPy call)
_CUBIC = frozenset({"det", "logdet", "inv"})  # LU factorisations: n^3 multiplications
SAMPLE_SHARE = 0.5  # a large gradient's element sample costs at most this much of its directions
WORK_PER_CELL = 32  # a check file's cell (one node at one point, 20-40 ns) in units of work
# BLAS and LAPACK multiply this many pairs in the time NumPy reads and writes one element
MULTIPLICATIONS_PER_UNIT = 8


def node_work(node: Node) -> int:
    """What computing ``node`` costs, in elements read and written (and multiplications)."""
    np = numpy()
    work = int(np.size(node.value)) + sum(int(np.size(s.value)) for s in node.inputs)
    return work + multiplications(node) + NODE_OVERHEAD


def multiplications(node: Node) -> int:
    """The work of a matrix product's or a factorisation's multiplications: what columns do
    not divide (each column multiplies as much as one replay does)."""
    np = numpy()
    name = node.op.name if node.inputs else ""
    if name == "matmul":
        a, b = (np.shape(s.value) for s in node.inputs)
        return math.prod(a) * math.prod(b[1:]) // MULTIPLICATIONS_PER_UNIT
    if name in _CUBIC:
        return int(np.shape(node.inputs[0].value)[-1]) ** 3 // MULTIPLICATIONS_PER_UNIT
    return 0


def estimated_work(nodes: int, elements: int, targets: int) -> int:
    """The same measure before any value is computed (a check file's up-front estimate): one
    evaluation of ``nodes`` nodes of ``elements`` elements each, forward and backward, and the
    check of ``targets`` gradients, each its directions and its sample (two replays each, an
    evaluation at most; the sample's replayed together as columns), within
    ``ARRAY_CHECK_BUDGET``."""
    evaluation = nodes * (elements + NODE_OVERHEAD)
    replays = 2 * (ARRAY_CHECK_DIRECTIONS + ARRAY_CHECK_MIN // ARRAY_COLUMN_FACTOR) * targets
    return 2 * evaluation + min(ARRAY_CHECK_BUDGET, replays * evaluation)


def check_arrays(program: Program, rtol: float, atol: float, method: str, per_node: bool,
                 budget: float) -> tuple[dict[int, GradientCheck], list[str], set[int]]:
    """Every input's gradient, then every node's when ``per_node``; each node gets a fair share
    of the budget that is left. Returns the verdicts by node index, the nodes whose check the
    budget shrank, and the conditions a replay turned over."""
    nodes = program.nodes
    replayer = DirectionReplayer(nodes)
    variables = list(program.variables.values())
    others = [n for n in nodes if n.needs_grad and not n.is_leaf] if per_node else []
    if program.masked:
        taken = live_nodes(nodes, program.outputs)
        others = others if taken is None else meaningful(
            others, [mask is not False for mask in taken], nodes, program.outputs)
    targets = variables + others
    checks: dict[int, GradientCheck] = {}
    shrunk: list[str] = []
    work = [(node_work(n), multiplications(n)) for n in nodes]  # once, not per target
    for done, node in enumerate(targets):
        share = budget / (len(targets) - done)
        checks[node.index], spent, short = check_node_elements(
            replayer, node, rtol, atol, method, share, work)
        budget -= spent
        if short:
            shrunk.append(node.name or node_text(node))
    return checks, shrunk, replayer.switched


def sample(size: int, count: int) -> list[int]:
    """``count`` flat indices spread evenly over ``size`` elements, first and last included."""
    if count >= size:
        return list(range(size))
    if count <= 0:
        return []
    return list(_spread(size, count))


@functools.lru_cache(maxsize=64)
def _spread(size: int, count: int) -> tuple[int, ...]:
    """``sample``'s indices, made once per size and count (every node of a layer asks)."""
    return tuple(sorted(set(numpy().linspace(0, size - 1, count).round().astype(int).tolist())))


def plan(size: int, direction_cost: float, element_cost: float,
         budget: float) -> tuple[int, int, bool]:
    """(directions, elements, shrunk) for a gradient of ``size`` elements (module docstring):
    the sample of elements costs at most ``SAMPLE_SHARE`` of what the directions cost (an
    element of a matrix that feeds a product costs a whole product, and each direction checks
    every element), and never fewer than 2 elements are wanted."""
    if size <= ARRAY_ALL_ELEMENTS and size * element_cost <= budget:
        return 0, size, False
    directions = ARRAY_CHECK_DIRECTIONS
    affordable = int(directions * direction_cost * SAMPLE_SHARE // max(element_cost, 1.0))
    wanted = min(size, ARRAY_CHECK_MIN, max(2, affordable))
    spare = budget - directions * direction_cost
    count = min(wanted, max(0, int(spare // max(element_cost, 1.0))))
    if spare < 0:
        directions = max(1, min(directions, int(budget // max(direction_cost, 1.0))))
    return directions, count, directions < ARRAY_CHECK_DIRECTIONS or count < wanted


def check_node_elements(replayer: DirectionReplayer, node: Node, rtol: float, atol: float,
                        method: str, budget: float, work: list[tuple[int, int]]
                        ) -> tuple[GradientCheck, float, bool]:
    """The check of ``node``'s gradient (module docstring); returns it, the budget spent, and
    whether the budget shrank it. ``work``: each node's ``node_work`` and ``multiplications``."""
    np = numpy()
    replayer.aim(node)
    size = int(np.size(node.value))
    downstream = replayer.downstream
    # Columns copy the whole node once each: for a large one, perturbing one element of one
    # copy in place (the loop) costs less.
    columns = method == "central" and size <= COLUMN_MAX_ELEMENTS and replayable(downstream)
    cost = sum(work[n.index][0] for n in downstream)
    multiplied = sum(work[n.index][1] for n in downstream)
    element_cost = (2 * (multiplied + (cost - multiplied - NODE_OVERHEAD * len(downstream))
                         / ARRAY_COLUMN_FACTOR) if columns else 2 * cost)
    direction_cost = 2 * (cost + 2 * size)
    directions, count, shrunk = plan(size, direction_cost, element_cost, budget)
    count = min(count, ARRAY_CHECK_ELEMENTS)
    flats = sample(size, count)
    finite = np.isfinite(node.value)
    if not finite.all():  # NaN where a branch not taken has no value (a live one raised):
        taken = np.flatnonzero(finite)  # its other elements are checked, one by one (a dead
        # one that has a value too: its gradient is 0, and a difference confirms it)
        flats = [int(taken[k]) for k in sample(len(taken), min(count, len(taken)))]
        directions = 0
    multiplying = multiplied and any(work[i][1] for i in replayer.linear)
    # A small node's directions join its elements' column replay; so do a large matrix's
    # (``Scaled``) where they move only products (W in W@x: the columns are W@x's, W is never
    # formed; a large vector's directions would be formed whole, one per column)
    replayed = columns or (method == "central" and replayer.scaled and multiplying
                           and replayable(downstream)
                           and _moved_by_products(node, downstream, replayer.linear))
    drawn = [replayer.draw(k) for k in range(directions)] if replayed else None
    elements, settled = _elements(replayer, node, flats, rtol, atol, method, drawn,
                                  replayer.linear if multiplying else None)
    along: list[GradientCheck] = []
    narrowed: dict[int, GradientCheck] = {}
    for k in range(directions):
        v = replayer.draw(k) if drawn is None else drawn[k]
        verdict = settled.get(k) or check_direction(replayer, node, v, rtol, atol, method)
        along.append(verdict)
        if not verdict.ok and not narrowed:  # the next failed directions lead to the same
            narrowed = narrow(replayer, node, v, rtol, atol, method)
            elements.update(narrowed)
    spent = directions * direction_cost + len(flats) * element_cost
    return _combined(node, elements, along), spent, shrunk


def _moved_by_products(node: Node, downstream: list[Node], linear: set[int]) -> bool:
    """Whether every node that reads ``node`` is linear in it with a unit and a scaled form (W
    in W@x): its columns then move those nodes alone, and no array of its size is formed per
    element or direction (a unit array, a direction formed whole)."""
    readers = [n for n in downstream if any(source is node for source in n.inputs)]
    return bool(readers) and all(n.index in linear and n.op.unit is not None
                                 and n.op.scaled is not None for n in readers)


def _elements(replayer: DirectionReplayer, node: Node, flats: list[int], rtol: float,
              atol: float, method: str, drawn: list[Any] | None, linear: set[int] | None
              ) -> tuple[dict[int, GradientCheck], dict[int, GradientCheck]]:
    """The element-wise verdicts of the elements ``flats`` of ``node``, by flat index, and
    those of the directions ``drawn`` that agree, by number: central differences at the first
    step settled as columns where they can be (``drawn`` not None), the rest one by one. The
    columns move the ``linear`` nodes once per element or direction when one of them
    multiplies (x in W@x, ``columns.central_columns``); elsewhere a column replay of cheap
    element-wise ops costs less than a move per column."""
    np = numpy()
    along = tuple((v, replayer.dot(v, node.grad)) for v in drawn or ())
    passed, lines = central_columns(node, replayer.downstream, replayer.nodes[-1],
                                    replayer.walk.weights(), flats, rtol, atol, along, linear,
                                    replayer.reach) if drawn is not None else ({}, {})
    grads = np.asarray(node.grad).flat[flats].tolist()  # .flat: no copy of a broadcast one
    found = {}
    for flat, grad in zip(flats, grads, strict=True):
        settled = passed.get(flat)
        found[flat] = (check_element(replayer, node, flat, rtol, atol, method)
                       if settled is None else settled_check(grad, settled))
    return found, {k: settled_check(along[k][1], line) for k, line in lines.items()}


def _combined(node: Node, elements: dict[int, GradientCheck],
              along: list[GradientCheck]) -> GradientCheck:
    """One verdict for the node: its worst element's numbers (a failed direction's, when no
    element disagrees), how many elements were checked and failed, and the directions."""
    np = numpy()
    failures = [check for check in (*elements.values(), *along) if not check.ok]
    failed = sum(not check.ok for check in elements.values())
    candidates: list[tuple[int | None, GradientCheck]] = list(elements.items())
    if not elements or (failures and not failed):
        candidates += [(None, verdict) for verdict in along]
    flat, worst = max(candidates, key=lambda c: (not c[1].ok, c[1].abs_error or 0.0))
    where = () if flat is None else tuple(
        int(i) for i in np.unravel_index(flat, np.shape(node.value)))
    measured = [check.ill_conditioned for check in failures]
    # its size: the elements that have a value (those of a branch not taken may have none)
    return replace(worst, checked=len(elements),
                   size=int(np.count_nonzero(np.isfinite(node.value))),
                   failed=failed or (1 if failures else 0), where=where, ok=not failures,
                   directions=len(along),
                   ill_conditioned=None if None in measured else max(measured, default=None))
