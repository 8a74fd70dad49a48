"""Hessians at a point: the reverse-mode gradient of each symbolic first derivative, checked
against finite differences of that first derivative with the same check as the gradients
(``point.check_node``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gradcli.engine.graph import Program, is_masked, nodes_of, values_and_gradients
from gradcli.engine.ops import VAR
from gradcli.engine.replay import Replayer
from gradcli.errors import UsageError
from gradcli.gradcheck.check import DEFAULT_ATOL, DEFAULT_RTOL, CheckReport, check_node
from gradcli.limits import CHECK_BUDGET, MAX_HESSIAN_ENTRIES
from gradcli.symbolic.builder import Builder, gradients
from gradcli.symbolic.printing import to_text


@dataclass
class HessianResult:
    """Second derivatives at a point and their finite-difference check (keys ``"x,y"``)."""

    matrix: dict[str, dict[str, float]]
    check: CheckReport | None


def hessian_at(
    program: Program,
    point: Mapping[str, float],
    check: bool = True,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    budget: int = CHECK_BUDGET,
) -> HessianResult:
    """H[a][b] = d/db of the symbolic d/da, by reverse mode, checked by FD of d/da.

    The check of a dense Hessian costs (variables)^2 replays of a gradient graph: each row gets
    an equal share of ``budget`` node recomputations, spent on its diagonal entry first and then
    along the row, and the entries past a row's share are listed in ``check.unchecked`` (never
    as failed). Every entry is computed; only the verification is sampled.
    """
    names = list(program.variables)
    if len(names) ** 2 > MAX_HESSIAN_ENTRIES:
        raise UsageError(
            f"the Hessian of {len(names):,} variables has {len(names) ** 2:,} entries, over the "
            f"limit of {MAX_HESSIAN_ENTRIES:,}",
            hint="differentiate with respect to fewer variables: gradcli diff --order 2 --wrt …")
    share = budget // max(1, len(names))
    builder = Builder()
    (output,) = builder.import_graph([program.output])
    grads = gradients(output, [builder.variable(n) for n in names])
    matrix: dict[str, dict[str, float]] = {}
    report = CheckReport(rtol, atol, nodes_skipped=True) if check else None
    for name, grad in zip(names, grads, strict=True):
        variables = [node for node in nodes_of([grad]) if node.op is VAR]
        nodes = nodes_of([grad])
        gradient_program = Program.build(to_text(grad), grad, variables, {}, is_masked(nodes))
        gradient_program.bind(point)
        values_and_gradients(gradient_program)
        row = gradient_program.variables
        matrix[name] = {other: row[other].grad if other in row else 0.0 for other in names}
        if report is not None:
            _check_row(report, name, gradient_program, share)
    return HessianResult(matrix, report)


def _check_row(report: CheckReport, name: str, row: Program, budget: int) -> None:
    """Check the entries of one row, the diagonal first, as far as ``budget`` reaches."""
    nodes = row.nodes
    replayer = Replayer(nodes)
    entries = sorted(row.variables.items(), key=lambda item: item[0] != name)
    spent = 0
    for other, node in entries:
        cost = 2 * (len(nodes) - node.index)  # two replays of what depends on the node
        key = f"{name},{other}"
        if spent and spent + cost > budget:
            report.unchecked.append(key)
            continue
        spent += cost
        report.gradients[key] = check_node(replayer, node, report.rtol, report.atol)
