"""The op table: every operation gradcli knows, each described once, in one table.

The parser, the forward and backward passes (floats, arrays, graph nodes), the printers,
``gradcli functions`` and docs/functions.md all read its rows (``Op``: ops/row.py says what one
holds), so adding a function is one row plus its test points (``python tests/test_op_table.py``
rewrites docs/functions.md). The rows are grouped by section, one module
each, as HIPS autograd's numpy_vjps.py groups its rules: ``elementary``, ``special_functions``,
``logic`` and ``linear_algebra`` (the array rows).

Every row states its ``complex`` form (the analytic continuation, for ``--check-method
complex``; a non-analytic op follows the real part) and its ``vector`` form (``vector(np,
*arrays)``, for many points at once), either of them ``SAME`` (``forward`` takes them already)
or ``NONE``. Without a vector form ``apply_vector`` runs ``forward`` point by point
(``elementwise``: the scalar path's values bit for bit, about ten times slower than NumPy); without
a complex form ``--check-method complex`` refuses a program where the op depends on a variable
(a usage error that suggests ``central`` or ``richardson``). Multi-expression float functions live
in engine/special.py (``math`` alone: ``diff --format python`` copies them), their complex and
vector forms in engine/forms.py. ``aliases`` are other names people type (``ln``); everything
prints the row's own name. Kinks, jumps and zero bases follow the conventions of
docs/language.md (abs'(0) = 0, a tie splits the gradient 1/2 each, 0**0 = 1). Building the rows
imports no NumPy.
"""

from __future__ import annotations

import math

from gradcli.engine.ops import elementary, linear_algebra, logic, special_functions
from gradcli.engine.ops.linear_algebra import MADE_PER_USE, index_op, stack_op
from gradcli.engine.ops.row import (
    NONE,
    OPS,
    PREC_ATOM,
    PREC_COMPARE,
    PREC_NONE,
    PREC_SUM,
    PREC_UNARY,
    SAME,
    F,
    Op,
    ShapeError,
    numpy,
    shape_text,
)
from gradcli.engine.ops.special_functions import GELU_TANH_SCALE
from gradcli.engine.ops.xp import NUMPY

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CALLS", "CONDITIONAL", "CONST", "CONSTANTS", "FUNCTIONS", "FUNCTION_NAMES", "GELU_TANH_SCALE",
    "LOGICAL", "NONE", "NUMPY", "OPS", "PREC_ATOM", "PREC_COMPARE", "PREC_NONE", "PREC_SUM",
    "PREC_UNARY", "ROWS", "SAME", "VAR", "F", "Op", "ShapeError", "index_op", "numpy",
    "shape_text", "spellings", "stack_op", "table_rows",
]

# The table: every row once, by section; the element-wise rows first.
ROWS: tuple[Op, ...] = (*elementary.ROWS, *special_functions.ROWS, *logic.ROWS,
                        *linear_algebra.ROWS)

# The registry: every row by its name and its aliases. Two names have two rows each, told apart
# by their operands: max(x, y) and min(x, y) are element-wise (``OPS`` holds those), max(x) and
# min(x) reduce an array (``CALLS`` holds both).
def _fill_registry() -> None:
    for op in ROWS:
        OPS.setdefault(op.name, op)  # max, min: the first row, the element-wise one
    for op in ROWS:
        for alias in op.aliases:
            OPS.setdefault(alias, op)


_fill_registry()


def _calls() -> dict[str, tuple[Op, ...]]:
    calls: dict[str, tuple[Op, ...]] = {}
    for op in ROWS:
        for name in (op.name, *op.aliases) if op.is_function else ():
            calls[name] = (*calls.get(name, ()), op)
    calls["pow"] = (OPS["pow"],)  # pow(x, y) is the function spelling of x ** y
    return calls


CALLS = _calls()  # what the language calls by name, aliases included: name -> rows (max: two)
FUNCTION_NAMES = frozenset(CALLS)  # the parser's one set of function names

# The element-wise functions by name, aliases included: what the scalar parser calls.
FUNCTIONS: dict[str, Op] = {op.name: op for op in ROWS if op.is_function and not op.is_array}
FUNCTIONS["pow"] = OPS["pow"]
FUNCTIONS.update({alias: op for op in ROWS for alias in op.aliases})

CONDITIONAL: Op = OPS["where"]
# Ops whose value is a truth value (1 or 0): their derivative is 0 by convention, and a finite
# difference that perturbs them flips a condition, so the check leaves them out.
LOGICAL: frozenset[Op] = frozenset(  # rows: by identity
    op for op in logic.ROWS if op is not CONDITIONAL)

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}


SYMBOL_ALIASES = {"**": ("^",)}  # the grammar's other spellings of an operator (expr.lark)


def spellings(op: Op) -> list[str]:
    """How ``op`` is written in the language: ``x ** y``, ``x ^ y``, ``pow(x, y)``, ``x'``."""
    names = op.operands
    written = []
    if op.symbol:
        for symbol in (op.symbol, *SYMBOL_ALIASES.get(op.symbol, ())):
            written.append(f"{symbol}{names[0]}" if op.arity == 1
                           else f" {symbol} ".join(names))
    if op.postfix:
        written.append(f"{names[0]}{op.postfix}")
    if op.is_array:
        return written if written else [f"{op.name}({', '.join(names)})"]
    written += [f"{name}({', '.join(names)})" for name, row in FUNCTIONS.items() if row is op]
    return written


def table_rows() -> list[dict[str, Any]]:
    """Every operator and function in table order, then the rows made per use (subscripts,
    array literals): what ``gradcli functions`` lists and docs/functions.md shows."""
    return [
        {
            "name": op.name,
            "kind": ("array " if op.is_array else "") + (
                "function" if op.is_function else "operator"),
            "written": spellings(op),
            "aliases": list(op.aliases),
            "arity": op.arity,
            "summary": op.summary,
            "complex_step": op.complex is not NONE,
            "vector": op.vector is not NONE,
        }
        for op in ROWS
    ] + [dict(row) for row in MADE_PER_USE]

# The graph's leaves compute nothing: an input variable gets its value from the caller, a
# constant from the program text.
VAR: Op = Op("var", 0, float, (), symbol="", complex=NONE, vector=NONE,
         summary="an input variable")
CONST: Op = Op("const", 0, float, (), symbol="", complex=NONE, vector=NONE,
           summary="a number written in the program")
