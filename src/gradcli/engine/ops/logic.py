"""The table's piecewise rows (issue 15): comparisons, logic and the conditional (element-wise;
see ops/row.py for what a row holds)."""

from __future__ import annotations

import operator
from collections.abc import Callable

from gradcli.engine.ops.row import (
    PREC_AND,
    PREC_COMPARE,
    PREC_NOT,
    PREC_OR,
    F,
    Op,
    binary,
    unary,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

# --- piecewise definitions (issue 15): comparisons, logic and the conditional ------------------
# Truth values are 1.0 and 0.0; any non-zero number counts as true. A comparison's or a logical
# op's derivative is 0 (a step, like sign). where(c, a, b) passes the gradient to the branch
# that c picks; the branch not taken is masked: its nodes are not evaluated at that point
# (graph.forward_masked), so log(x) in where(x > 0, log(x), 0) is no error at x = -1.


def _on_real_parts(test: Callable[..., Any]) -> Callable[..., complex]:
    """A truth-valued op on complex numbers: decided by the real parts, as the check needs."""
    return lambda *args: complex(test(*(arg.real for arg in args)))


def _flat(x: Any, y: Any, out: Any) -> float:
    return 0.0  # a truth value is a step: its derivative is 0 (as sign's)


def _where(c: float, a: float, b: float) -> float:
    return a if c else b


ROWS: list[Op] = [
    binary("lt", lambda x, y: 1.0 if x < y else 0.0, _flat, _flat, summary="1 if x < y else 0",
           complex=_on_real_parts(operator.lt), vector=lambda np, x, y: (x < y) * 1.0,
           numpy="({0} < {1}) * 1.0", symbol="<", precedence=PREC_COMPARE),
    binary("le", lambda x, y: 1.0 if x <= y else 0.0, _flat, _flat, summary="1 if x <= y else 0",
           complex=_on_real_parts(operator.le), vector=lambda np, x, y: (x <= y) * 1.0,
           numpy="({0} <= {1}) * 1.0", symbol="<=", precedence=PREC_COMPARE),
    binary("gt", lambda x, y: 1.0 if x > y else 0.0, _flat, _flat, summary="1 if x > y else 0",
           complex=_on_real_parts(operator.gt), vector=lambda np, x, y: (x > y) * 1.0,
           numpy="({0} > {1}) * 1.0", symbol=">", precedence=PREC_COMPARE),
    binary("ge", lambda x, y: 1.0 if x >= y else 0.0, _flat, _flat, summary="1 if x >= y else 0",
           complex=_on_real_parts(operator.ge), vector=lambda np, x, y: (x >= y) * 1.0,
           numpy="({0} >= {1}) * 1.0", symbol=">=", precedence=PREC_COMPARE),
    binary("eq", lambda x, y: 1.0 if x == y else 0.0, _flat, _flat, summary="1 if x == y else 0",
           complex=_on_real_parts(operator.eq), vector=lambda np, x, y: (x == y) * 1.0,
           numpy="({0} == {1}) * 1.0", symbol="==", precedence=PREC_COMPARE),
    binary("ne", lambda x, y: 1.0 if x != y else 0.0, _flat, _flat, summary="1 if x != y else 0",
           complex=_on_real_parts(operator.ne), vector=lambda np, x, y: (x != y) * 1.0,
           numpy="({0} != {1}) * 1.0", symbol="!=", precedence=PREC_COMPARE),
    binary("logical_and", lambda x, y: 1.0 if x and y else 0.0, _flat, _flat,
           complex=_on_real_parts(lambda x, y: 1.0 if x and y else 0.0),
           vector=lambda np, x, y: np.logical_and(x, y) * 1.0,
           numpy="np.logical_and({0} != 0, {1} != 0) * 1.0",
           symbol="and", precedence=PREC_AND, summary="1 if x and y are both non-zero else 0"),
    binary("logical_or", lambda x, y: 1.0 if x or y else 0.0, _flat, _flat,
           complex=_on_real_parts(lambda x, y: 1.0 if x or y else 0.0),
           vector=lambda np, x, y: np.logical_or(x, y) * 1.0,
           numpy="np.logical_or({0} != 0, {1} != 0) * 1.0",
           symbol="or", precedence=PREC_OR, summary="1 if x or y is non-zero else 0"),
    unary("logical_not", lambda x: 0.0 if x else 1.0, lambda x, out: 0.0,
          complex=_on_real_parts(lambda x: 0.0 if x else 1.0),
          vector=lambda np, x: np.logical_not(x) * 1.0, numpy="({0} == 0) * 1.0",
          symbol="not ", precedence=PREC_NOT, summary="1 if x is 0 else 0"),
    Op("where", 3, _where, (lambda c, a, b, out: 0.0, lambda c, a, b, out: F.where(c, 1.0, 0.0),
                            lambda c, a, b, out: F.where(c, 0.0, 1.0)),
       complex=lambda c, a, b: a if c.real else b,
       vector=lambda np, c, a, b: np.where(c != 0.0, a, b), numpy="np.where({0} != 0, {1}, {2})",
       summary="a if c is non-zero else b (also written a if c else b); the branch not taken "
               "is not evaluated"),
]
