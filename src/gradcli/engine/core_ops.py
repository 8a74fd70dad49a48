"""The op table's rows and precedences that the symbolic core names, as constants.

``Final``: in the compiled core (setup.py) they are C variables rather than names looked up in a
module's dictionary at every use, and ``node.op is CONST`` runs millions of times a second.
"""

from __future__ import annotations

from gradcli.engine import ops

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Final

CONST: Final = ops.CONST
VAR: Final = ops.VAR
ADD: Final = ops.OPS["add"]
SUB: Final = ops.OPS["sub"]
MUL: Final = ops.OPS["mul"]
DIV: Final = ops.OPS["div"]
NEG: Final = ops.OPS["neg"]
POW: Final = ops.OPS["pow"]
LOG: Final = ops.OPS["log"]
WHERE: Final = ops.CONDITIONAL
LOGICAL: Final = ops.LOGICAL  # and, or, not, ==, <...

PREC_NONE: Final = ops.PREC_NONE
PREC_COMPARE: Final = ops.PREC_COMPARE
PREC_SUM: Final = ops.PREC_SUM
PREC_UNARY: Final = ops.PREC_UNARY
PREC_ATOM: Final = ops.PREC_ATOM
