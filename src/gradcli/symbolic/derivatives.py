"""Derivatives as expressions: ``gradcli diff`` of scalar programs, Hessians at a point and
partial evaluation, all by the op table's own rules run on symbolic nodes (``builder``).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradcli.engine.collector import collector_paused
from gradcli.engine.graph import Program, nodes_of
from gradcli.engine.notation import derivative_label, format_number, format_point
from gradcli.errors import NumericError, UsageError, gradient_formula_error, listed
from gradcli.language.values import runs_on_arrays
from gradcli.limits import MAX_DERIVATIVES, MAX_NODES
from gradcli.symbolic.builder import (
    Builder,
    SymNode,
    bound_values,
    check_folded,
    check_local_derivatives,
    gradients,
    gradients_at,
    substitute,
)
from gradcli.symbolic.canonical import canonical
from gradcli.symbolic.printing import FORMATS, latex_notation, to_latex, to_python, to_text

MAX_ORDER = 6


@dataclass
class Derivatives:
    """d^order(output)/d(wrt)... as the builder's graphs, by path (``("x", "y")`` is d2/dx dy);
    their canonical form is made when printed, for just what is printed."""

    program: Program
    order: int
    wrt: list[str]
    value: SymNode
    flat: dict[tuple[str, ...], SymNode]  # (var,) -> node (order 1), (var, var) -> node, ...
    first: dict[str, SymNode]  # the first derivatives, whatever the order
    values: dict[str, float]  # the variables substituted by numbers
    kept_defaults: dict[str, float]  # the program's own ``x = 2`` values left as symbols
    used_defaults: dict[str, float]  # the program's own values substituted (``defaults=True``)
    named: bool = False  # write log(2) for the rules' numbers (a formula, not a point)

    @property
    def tree(self) -> dict[str, Any]:
        """var -> node (order 1), var -> var -> node (order 2), ..."""
        return _nest(self.flat)

    @collector_paused
    def canonical(self) -> dict[tuple[str, ...], SymNode]:
        """``flat`` in canonical form: one written form for equal sums and products."""
        made = canonical(list(self.flat.values()), self.named)
        check_folded(made)  # x/x cancelled can leave numbers alone: (-2)**0.5
        return dict(zip(self.flat, made, strict=True))

    @collector_paused
    def texts(self, fmt: str = "text", names: Sequence[str] | None = None) -> dict[str, Any]:
        """Every derivative printed in ``fmt`` (text or latex), one dict level per order; LaTeX
        writes the ``names`` (default: the program's variables) so that no two read alike, and
        its statements (t_{1} = ...) unlike any of them."""
        if fmt not in ("text", "latex"):
            raise UsageError(f"unknown format {fmt!r}", hint=f"use one of {', '.join(FORMATS)}")
        if fmt == "latex":
            shown = list(self.program.variables) if names is None else list(names)
            notation = latex_notation(shown)
            written = frozenset(notation.name(name) for name in shown)
            printer = functools.cache(lambda node: to_latex(node, notation, written))
        else:  # a Hessian's symmetric entries are one node, printed once
            printer = functools.cache(to_text)
        return _nest({path: printer(node) for path, node in self.canonical().items()})

    @collector_paused
    def python(self) -> str:
        """A Python function of the variables returning the value and the derivatives."""
        if self.order > 2:
            raise UsageError("--format python supports --order 1 and 2",
                             hint="use --format text for higher orders")
        first = [self.first[name] for name in self.wrt]
        hessian = ([self.flat[a, b] for a in self.wrt for b in self.wrt]
                   if self.order == 2 else [])
        value, *made = canonical([self.value, *first, *hessian], self.named)
        parameters = [n for n in self.program.variables if n not in self.values]
        return to_python(value, parameters, self.wrt, made, self.order == 2)


@collector_paused
def differentiate(
    program: Program,
    wrt: Sequence[str] | None = None,
    order: int = 1,
    values: Mapping[str, float] | None = None,
    defaults: bool = False,
    max_nodes: int = MAX_NODES,
) -> Derivatives:
    """Symbolic derivatives of ``program`` up to ``order`` by ``wrt`` (default: every variable
    without a value). Given ``values``, they are taken at that point as ``eval`` takes them
    (``_at_point``), errors included. A derivative is a formula, so the program's own values
    (``x = 2``) stay symbols unless ``defaults`` substitutes them; past ``MAX_DERIVATIVES``
    derivatives or ``max_nodes`` graph nodes, a UsageError."""
    refuse_arrays(program, values, "differentiate", hint="gradcli.diff(program, values=..., "
                  "shapes=...), the path of the command gradcli diff, takes array programs")
    own = {name: program.defaults[name] for name in program.variables
           if name in program.defaults}
    given = dict(values or {})
    values = {**(own if defaults else {}), **given}
    if not 1 <= order <= MAX_ORDER:
        raise UsageError(f"--order must be from 1 to {MAX_ORDER}, not {order}")
    names = wrt_names(program, wrt, [n for n in program.variables if n not in values])
    if not names:
        raise nothing_to_differentiate()
    _refuse_repeats_and_size(names, order)
    _refuse_growth(len(program.nodes), order, max_nodes)
    if any(name in values for name in program.variables):
        output, first, flat = _at_point(program, names, order, values, max_nodes)
    else:  # a formula: the symbolic derivatives, simplified (docs/derivatives.md lists how)
        levels = _levels(program, names, order, Builder(max_nodes, exact_constants=True))
        flat = _symmetric(levels[-1], names)
        first = {path[0]: node for path, node in levels[1].items()}
        output = levels[0][()]
        check_folded([output, *flat.values(), *first.values()])
    return Derivatives(program, order, names, output, flat, first, values,
                       {name: value for name, value in own.items() if name not in values},
                       {name: value for name, value in own.items()
                        if defaults and name not in given}, named=not values)


def wrt_names(program: Program, wrt: Sequence[str] | None,
              default: Sequence[str] = ()) -> list[str]:
    """``wrt``, else ``default``, else every variable; a name that is not a variable of the
    program is a UsageError listing them."""
    names = list(wrt) if wrt else (list(default) or list(program.variables))
    unknown = [name for name in names if name not in program.variables]
    if unknown:
        raise UsageError(f"{', '.join(unknown)} is not a variable of the expression",
                         hint=f"its variables: {', '.join(program.variables) or 'none'}")
    return names


def _levels(program: Program, names: list[str], order: int,
            builder: Builder) -> list[dict[tuple[str, ...], SymNode]]:
    """The symbolic derivatives of each order up to ``order``: ``levels[k][(a, b, ...)]`` is
    d^k/da db ... (``levels[0][()]`` the program itself), built in ``builder``."""
    (output,) = builder.import_graph([program.output])
    variables = [builder.variable(name) for name in names]
    levels: list[dict[tuple[str, ...], SymNode]] = [{(): output}]
    for _ in range(order):
        level = {}
        for path, node in levels[-1].items():
            for name, grad in zip(names, gradients(node, variables), strict=True):
                level[(*path, name)] = grad
        levels.append(level)
    return levels


def _symmetric(flat: dict[tuple[str, ...], SymNode],
               names: list[str]) -> dict[tuple[str, ...], SymNode]:
    """Each mixed derivative as the one taken in the order of ``names`` (equal by Schwarz): a
    Hessian prints symmetric and each entry is printed once; in the order of the program's
    variables, it is the entry ``eval --hessian`` keeps (``once_each``), to the last bit."""
    rank = {name: i for i, name in enumerate(names)}
    return {path: flat[tuple(sorted(path, key=rank.__getitem__))] for path in flat}


def _at_point(
    program: Program, names: list[str], order: int, values: Mapping[str, float], max_nodes: int
) -> tuple[SymNode, dict[str, SymNode], dict[tuple[str, ...], SymNode]]:
    """The value, first and order-``order`` derivatives at a point that binds some or all
    variables, as ``eval`` computes them: order 1 is its passes over the program
    (``gradients_at``), order 2 the same over each first derivative as ``eval --hessian`` builds
    it; higher orders check every order's bound nodes the same way, then substitute."""
    point = {name: float(values[name]) for name in program.variables if name in values}
    result = Builder(max_nodes, exact_constants=True)
    value, grads = gradients_at(program.nodes, point, result, names)
    first = dict(zip(names, grads, strict=True))
    if order == 1:
        check_folded([value, *grads])
        return value, first, {(name,): grad for name, grad in first.items()}
    # eval --hessian's formulas at a full point (ops/row.py's ``printed``); printed ones where
    # they stay formulas in free variables or take numbers at order 3 and above
    full = order == 2 and len(point) == len(program.variables)
    levels = _levels(program, names, order if order > 2 else 1,
                     Builder(max_nodes, exact_constants=not full))
    if order == 2:
        tree = {}
        for (name,), grad in levels[1].items():
            nodes = nodes_of([grad])
            for index, node in enumerate(nodes):  # numbered as Program.build numbers a row,
                node.index = index  # so that an error names the node as eval --hessian does
            try:
                _, row = gradients_at(nodes, point, result, names)
            except NumericError as error:
                raise gradient_formula_error(name, to_text(grad), error) from None
            tree.update({(name, other): entry for other, entry in zip(names, row, strict=True)})
        check_folded([value, *grads, *tree.values()])
        return value, first, _symmetric(tree, [*program.variables]) if full else tree
    check_folded([value, *grads])
    try:
        for level in levels[1:-1]:
            nodes = nodes_of(level.values())
            check_local_derivatives(nodes, bound_values(nodes, point))
        numbers = substitute([*levels[-1].values()], point)
    except NumericError as error:
        raise _formula_error(program, levels, point, error) from None
    return value, first, dict(zip([*levels[-1]], numbers, strict=True))


def _formula_error(program: Program, levels: list[dict[tuple[str, ...], SymNode]],
                   point: Mapping[str, float], error: NumericError) -> NumericError:
    """``error`` of a derivative of order 3 and above, which takes the numbers into the formula
    ``diff`` prints, told in what the user typed: that formula's pieces (``2*dsinc(x)/x``) are
    no text of theirs, and its quotient may have a finite limit (sinc''' at 0 is 0). The hint
    is the command that takes the last two orders as ``eval --hessian`` does, whose formulas
    keep such points (series, not quotients): ``diff`` at order 2 of the derivative two
    orders below, written out."""
    path = next((key for key, node in levels[-1].items() if _fails(node, point)), None)
    if path is None:  # only their walk together failed: no piece of one formula to name
        return error
    at = format_point(point)
    problem = error.message.split(" in ", 1)[0]
    label = derivative_label(path)  # of order 3 and above: d3/dx dx dy
    below = to_text(levels[-3][path[:-2]])
    values = " ".join(f"--{name} {format_number(value)}" for name, value in point.items())
    return NumericError(
        f"{label} of {program.source.strip()} has no value at {at} by its formula (what "
        f"gradcli diff prints without values): {problem}",
        hint=f'its limit there may be finite: try gradcli diff "{below}" --order 2 '
             f"--wrt {','.join(dict.fromkeys(path[-2:]))} {values}, or a point nearby")


def _fails(node: SymNode, point: Mapping[str, float]) -> bool:
    """Whether ``node`` raises a NumericError at ``point``, as ``_at_point`` checks it."""
    try:
        nodes = nodes_of([node])
        check_local_derivatives(nodes, bound_values(nodes, point))
        substitute([node], point)
    except NumericError:
        return True
    return False


def _refuse_repeats_and_size(names: list[str], order: int) -> None:
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
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


def _nest(flat: dict[tuple[str, ...], Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path, node in flat.items():
        level = tree
        for name in path[:-1]:
            level = level.setdefault(name, {})
        level[path[-1]] = node
    return tree


# --- partial evaluation: some variables unbound -------------------------------------------------

@dataclass
class SymbolicResult:
    """Value and gradients of a program with free variables, as texts in gradcli's language."""

    free: list[str]
    value: str
    gradients: dict[str, str]


def nothing_to_differentiate() -> UsageError:
    return UsageError("nothing to differentiate: the expression has no variables",
                      hint='try: gradcli diff "x**2"')


def refuse_arrays(program: Program, values: Mapping[str, Any] | None, what: str,
                  hint: str = "gradcli eval gives an array program's value and gradients") -> None:
    """An array program is a UsageError here (symbolic derivatives of scalar programs)."""
    if runs_on_arrays(program, values or {}):
        raise UsageError(f"{what} works on scalar programs; this one has arrays"
                         + (" in an output" if program.outputs else ""), hint=hint)


def partial_evaluate(program: Program, values: Mapping[str, float]) -> SymbolicResult:
    """The value and gradients with the bound variables (given or the program's) as numbers
    and the free ones symbolic, the bound nodes computed (and failing) as ``eval`` does."""
    refuse_arrays(program, values, "free variables")
    point = {**program.defaults, **values}
    bound = {n: float(point[n]) for n in program.variables if n in point}
    names = list(program.variables)
    value, substituted = gradients_at(program.nodes, bound, Builder(exact_constants=True), names)
    check_folded([value, *substituted])
    value, *substituted = canonical([value, *substituted])
    check_folded([value, *substituted])  # x/x cancelled can leave numbers alone: (-2)**0.5
    return SymbolicResult(
        free=[n for n in names if n not in bound],
        value=to_text(value),
        gradients={n: to_text(g) for n, g in zip(names, substituted, strict=True)},
    )
