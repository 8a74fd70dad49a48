"""Derivatives as expressions: ``gradcli diff``, Hessians at a point, and partial evaluation.

Everything here runs the op table's own rules on symbolic nodes (``symbolic.gradients``); the
printed forms come from ``printing``. Hessians at a point (``gradcheck.hessian``) are built from
the same symbolic first derivatives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradcli.engine.graph import Program
from gradcli.engine.printing import FORMATS, to_latex, to_python, to_text
from gradcli.engine.symbolic import Builder, SymNode, gradients, substitute
from gradcli.errors import UsageError, listed
from gradcli.limits import MAX_DERIVATIVES, MAX_NODES

MAX_ORDER = 6


@dataclass
class Derivatives:
    """d^order(output)/d(wrt)... as graphs; ``tree`` nests one dict level per order."""

    program: Program
    order: int
    wrt: list[str]
    value: SymNode
    tree: dict[str, Any]  # var -> node (order 1), var -> var -> node (order 2), ...
    first: dict[str, SymNode]  # the first derivatives, whatever the order
    values: dict[str, float]  # the variables substituted by numbers
    kept_defaults: dict[str, float]  # the program's own ``x = 2`` values left as symbols
    used_defaults: dict[str, float]  # the program's own values substituted (``defaults=True``)

    def texts(self, fmt: str = "text") -> dict[str, Any]:
        """The same nesting with every node printed in ``fmt`` (text or latex)."""
        if fmt not in ("text", "latex"):
            raise UsageError(f"unknown format {fmt!r}", hint=f"use one of {', '.join(FORMATS)}")
        printer = to_text if fmt == "text" else to_latex
        return _map_tree(self.tree, printer)

    def python(self) -> str:
        """A Python function of the variables returning the value and the derivatives."""
        if self.order > 2:
            raise UsageError("--format python supports --order 1 and 2",
                             hint="use --format text for higher orders")
        first = [self.first[name] for name in self.wrt]
        hessian = ([[self.tree[a][b] for b in self.wrt] for a in self.wrt]
                   if self.order == 2 else None)
        parameters = [n for n in self.program.variables if n not in self.values]
        return to_python(self.value, parameters, self.wrt, first, hessian)


def differentiate(
    program: Program,
    wrt: Sequence[str] | None = None,
    order: int = 1,
    values: Mapping[str, float] | None = None,
    defaults: bool = False,
    max_nodes: int = MAX_NODES,
) -> Derivatives:
    """Symbolic derivatives of ``program`` up to ``order`` with respect to ``wrt`` (default: every
    variable not given a value); ``values`` are substituted after differentiating.

    A derivative is a formula, so the program's own values (``x = 2; x**2``) stay symbols
    (``2*x``, listed in ``kept_defaults``) unless ``defaults`` asks to substitute them as well;
    ``values`` override them either way. (``evaluate`` always uses them: it wants numbers.)
    There are len(wrt)^order derivatives, at most ``MAX_DERIVATIVES``, and building them may
    make at most ``max_nodes`` graph nodes; past either, a UsageError says so.
    """
    own = {name: program.defaults[name] for name in program.variables
           if name in program.defaults}
    given = dict(values or {})
    values = {**(own if defaults else {}), **given}
    if not 1 <= order <= MAX_ORDER:
        raise UsageError(f"--order must be from 1 to {MAX_ORDER}, not {order}")
    unbound = [n for n in program.variables if n not in values]
    names = list(wrt) if wrt else (unbound or list(program.variables))
    if not names:
        raise UsageError("nothing to differentiate: the expression has no variables",
                         hint='try: gradcli diff "x**2"')
    unknown = [n for n in names if n not in program.variables]
    if unknown:
        known = ", ".join(program.variables) or "none"
        raise UsageError(f"{', '.join(unknown)} is not a variable of the expression",
                         hint=f"its variables: {known}")
    _refuse_repeats_and_size(names, order)
    _refuse_growth(len(program.nodes), order, max_nodes)
    builder = Builder(max_nodes)
    (output,) = builder.import_graph([program.output])
    variables = [builder.variable(name) for name in names]
    levels = [{(): output}]
    for _ in range(order):
        level = {}
        for path, node in levels[-1].items():
            for name, grad in zip(names, gradients(node, variables), strict=True):
                level[(*path, name)] = grad
        levels.append(level)
    keys = [*levels[-1]]
    nodes = [output, *levels[-1].values(), *levels[1].values()]
    substituted = substitute(nodes, values)
    return Derivatives(program, order, names, substituted[0],
                       _nest(dict(zip(keys, substituted[1:1 + len(keys)], strict=True))),
                       dict(zip(names, substituted[1 + len(keys):], strict=True)), values,
                       {name: value for name, value in own.items() if name not in values},
                       {name: value for name, value in own.items()
                        if defaults and name not in given})


def _refuse_repeats_and_size(names: list[str], order: int) -> None:
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UsageError(f"--wrt names {listed(repeated)} more than once",
                         hint="name each variable once; --order 2 gives the mixed derivatives")
    count = len(names) ** order
    if count > MAX_DERIVATIVES:
        raise UsageError(
            f"{len(names):,} variables at order {order} make {count:,} derivatives, over the "
            f"limit of {MAX_DERIVATIVES:,}",
            hint="differentiate with respect to fewer variables (--wrt) or at a lower --order")


# Each order of differentiation multiplies a graph's size by about 3 (reverse mode adds a product
# and a sum per operand; sharing keeps it from growing faster): 2.9-3.0x per order on nested sin,
# 1.9x at order 1 and 3.4x at order 2 on the W2 benchmark's programs (median).
GROWTH_PER_ORDER = 3


def _refuse_growth(nodes: int, order: int, max_nodes: int) -> None:
    """Refuse before building what would pass ``max_nodes`` (the builder stops there anyway)."""
    estimate = nodes * GROWTH_PER_ORDER**order
    if estimate > max_nodes:
        raise UsageError(
            f"the derivatives of a {nodes:,}-node program at order {order} would take about "
            f"{estimate:,} graph nodes, over the limit of {max_nodes:,}",
            hint="ask for a lower --order, or raise --max-nodes")


def _nest(flat: dict[tuple[str, ...], SymNode]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path, node in flat.items():
        level = tree
        for name in path[:-1]:
            level = level.setdefault(name, {})
        level[path[-1]] = node
    return tree


def _map_tree(tree: dict[str, Any], function: Any) -> dict[str, Any]:
    return {k: _map_tree(v, function) if isinstance(v, dict) else function(v)
            for k, v in tree.items()}


# --- partial evaluation: some variables unbound -------------------------------------------------

@dataclass
class SymbolicResult:
    """Value and gradients of a program with free variables, as texts in gradcli's language."""

    free: list[str]
    value: str
    gradients: dict[str, str]


def partial_evaluate(program: Program, values: Mapping[str, float]) -> SymbolicResult:
    """Substitute the bound variables (given or program defaults), keep the free ones symbolic."""
    point = {**program.defaults, **values}
    bound = {n: float(point[n]) for n in program.variables if n in point}
    names = list(program.variables)
    builder = Builder()
    (output,) = builder.import_graph([program.output])
    grads = gradients(output, [builder.variable(n) for n in names])
    value, *substituted = substitute([output, *grads], bound)
    return SymbolicResult(
        free=[n for n in names if n not in bound],
        value=to_text(value),
        gradients={n: to_text(g) for n, g in zip(names, substituted, strict=True)},
    )
