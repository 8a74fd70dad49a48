"""Hessians at a point: the reverse-mode gradient of each symbolic first derivative, checked
against finite differences of that first derivative with the same check as the gradients
(``point.check_node``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gradcli.engine.graph import Program, backward, forward, nodes_of
from gradcli.engine.ops import VAR
from gradcli.engine.printing import to_text
from gradcli.engine.replay import Replayer
from gradcli.engine.symbolic import Builder, gradients
from gradcli.gradcheck.point import DEFAULT_ATOL, DEFAULT_RTOL, CheckReport, check_node


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
) -> HessianResult:
    """H[a][b] = d/db of the symbolic d/da, by reverse mode, checked by FD of d/da."""
    names = list(program.variables)
    builder = Builder()
    (output,) = builder.import_graph([program.output])
    grads = gradients(output, [builder.variable(n) for n in names])
    matrix: dict[str, dict[str, float]] = {}
    report = CheckReport(rtol, atol, nodes_skipped=True) if check else None
    for name, grad in zip(names, grads, strict=True):
        variables = [node for node in nodes_of([grad]) if node.op is VAR]
        gradient_program = Program.build(to_text(grad), grad, variables, {})
        gradient_program.bind(point)
        forward(gradient_program.nodes)
        backward(gradient_program.nodes)
        row = gradient_program.variables
        matrix[name] = {other: row[other].grad if other in row else 0.0 for other in names}
        if report is not None:
            replayer = Replayer(gradient_program.nodes)
            for other, node in row.items():
                report.gradients[f"{name},{other}"] = check_node(replayer, node, rtol, atol)
    return HessianResult(matrix, report)
