"""``gradcli diff`` checks what it prints: every derivative, before it is shown.

Each printed derivative is read back with gradcli's own parser, as a user would paste it, and
evaluated at the values given (else at several points where the program is defined,
symbolic/sampling.py); a ``--format python`` export is imported from a temporary module and
called at the same points. Both are compared with what ``eval``'s numeric engine computes from
the program itself, which shares no code with the symbolic derivatives:

- a gradient or a Jacobian with the reverse-mode pass (engine/arrays.py, engine/jacobian.py);
- a Hessian with fourth-order central differences of that reverse-mode gradient;
- order k >= 3 with central differences of the printed order k - 1, itself checked so.

A disagreement is a ``CheckError`` (exit status 1) naming the entry, the point and both numbers:
a wrong formula is never printed as an answer.

Here: the check's walk over points. What is checked and the tolerances: ``derivative_request``;
the truth: ``derivative_truth``; entries read back and compared: ``derivative_readback``,
``derivative_compare``.
"""

from __future__ import annotations

import math

from gradcli.errors import NumericError
from gradcli.gradcheck.derivative_readback import Reader
from gradcli.gradcheck.derivative_request import LARGE, POINTS, Checked, DiffCheck
from gradcli.gradcheck.derivative_truth import Truth
from gradcli.symbolic.sampling import candidates


def check(request: DiffCheck, points: int = POINTS) -> Checked:
    """Compare every printed entry (and the Python export) with the numeric engine at up to
    ``points`` points; a CheckError at the first disagreement. Order k >= 3 checks the orders
    below too (each is the reference of the next)."""
    readers = [Reader(DiffCheck(request.program, request.shapes, request.given,
                                "hessian" if order == 2 else "higher", request.levels[order],
                                request.levels))
               for order in sorted(request.levels) if request.kind == "higher"]
    reader = Reader(request)
    if sum(math.prod(shape) for shape in request.shapes.values()) > LARGE:
        points = 1  # a large program: its cost, not its sample, bounds the check
    for index, node in enumerate(request.program.nodes):  # a printer may have renumbered them
        node.index = index
    checked = 0
    for point in candidates(request.shapes, request.given):
        try:
            truth = Truth(request, point)
            truth.prepare()
        except NumericError:
            if not _free(request):
                break  # the user's point, where diff computed: a reference fails, not diff
            continue  # the program is not defined here (or not differentiable): elsewhere
        for each in (*readers, reader):
            each.compare(truth)
        checked += 1
        if checked == points:
            break
    against = {"gradient": "the reverse-mode gradient", "jacobian": "the reverse-mode Jacobian",
               "hessian": "central differences of the reverse-mode gradient",
               "higher": "central differences of the order below"}[request.kind]
    return Checked(checked, sum(each.entries for each in (*readers, reader)), against)


def _free(request: DiffCheck) -> list[str]:
    return [name for name in request.shapes if name not in request.given]
