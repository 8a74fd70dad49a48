"""The op table's rows and precedences that the symbolic core names, as constants.

``Final``: in the compiled core (setup.py) they are C variables rather than names looked up in a
module's dictionary at every use, and ``node.op is CONST`` runs millions of times a second.
"""

from __future__ import annotations

from gradcli.engine import ops
from gradcli.engine.ops.row import Op

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Final

CONST: Final[Op] = ops.CONST
VAR: Final[Op] = ops.VAR
ADD: Final[Op] = ops.OPS["add"]
SUB: Final[Op] = ops.OPS["sub"]
MUL: Final[Op] = ops.OPS["mul"]
DIV: Final[Op] = ops.OPS["div"]
NEG: Final[Op] = ops.OPS["neg"]
POW: Final[Op] = ops.OPS["pow"]
LOG: Final[Op] = ops.OPS["log"]
WHERE: Final[Op] = ops.CONDITIONAL
LOGICAL: Final[frozenset[Op]] = ops.LOGICAL  # and, or, not, ==, <...

PREC_NONE: Final[int] = ops.PREC_NONE
PREC_COMPARE: Final[int] = ops.PREC_COMPARE
PREC_SUM: Final[int] = ops.PREC_SUM
PREC_UNARY: Final[int] = ops.PREC_UNARY
PREC_ATOM: Final[int] = ops.PREC_ATOM
