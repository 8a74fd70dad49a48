"""The op table: every operation gradcli knows, each described once, in one table.

A row (``Op``, ops/row.py) holds an op's arity, forward function, one derivative rule per operand,
domain check, complex and vector forms, printed and NumPy forms, shape rule and a summary.
Everything else -- the parser's function names, the graph's forward and backward passes (floats,
arrays, graph nodes), the printers, ``gradcli functions`` and docs/functions.md, the tests --
reads this table, so adding a function is one row plus its test points (and ``python
tests/test_op_table.py`` to rewrite docs/functions.md). The rows are grouped by section, one
module each, as HIPS autograd's numpy_vjps.py groups its rules: ``elementary`` (arithmetic,
exponentials and logarithms, trigonometry), ``special_functions`` (special functions,
activations, steps), ``logic`` (comparisons, the conditional) and ``linear_algebra`` (the array
rows: products, reductions, linear algebra, indexing, constructors).

An element-wise row's derivative rule receives the operand values and the op's output,
``rule(*operands, out)``, and returns the local partial derivative d(out)/d(operand). Receiving
``out`` lets exp, tanh, sqrt and sigmoid reuse their result. Rules are written only with
arithmetic operators and table functions called through ``F`` (``F.cos(x)``), so the same rule
works on floats, on complex numbers, on NumPy arrays and on anything that implements ``apply``
(graph nodes, for symbolic derivatives). The operands are named by the first rule's parameters
(``atan2(y, x)``) wherever a row is listed. An array row's rules are vector-Jacobian products
(ops/row.py); ``Op.vjp`` asks either kind for an operand's gradient.

Besides the float ``forward``, every row states two more forms, by keyword and with no default
(a row that leaves one out fails when the table is built):

- ``complex``: the analytic continuation, for complex-step differentiation (``--check-method
  complex``); for ops that are not analytic it follows the real part, so that abs/relu/min/max
  keep the conventions below.
- ``vector``: ``vector(np, *arrays)``, NumPy, for evaluating many points at once (sweeps, check
  files, plots, the check's vectorised first pass); NumPy is imported only when an array arrives.

Either may be ``SAME`` -- ``forward`` itself already takes complex numbers and arrays (the
arithmetic operators, every array row) -- or ``NONE``, the row has no such form:

- no ``vector`` form: ``apply_vector`` falls back to ``forward`` point by point
  (``elementwise``): NaN where the domain check refuses a point, ``forward`` raises or its result
  is not finite, and NumPy's "invalid" flag raised for those points, as ``np.log(-1)`` would, so
  that the vector passes mark them failed and callers re-run them on the scalar path for the
  exact message. The values are the scalar path's, bit for bit (the same float function), and
  gradients stay vectorised (the rules run on whole arrays through ``F``); only the speed differs
  (a Python call a point: some ten times slower than a NumPy form), so a row adds a NumPy form
  when its sweeps get large.
- no ``complex`` form: ``--check-method complex`` refuses a program where such an op depends on
  a variable, with a usage error (exit status 2) that names the function and suggests
  ``--check-method central`` or ``richardson`` (see gradcheck/check.py); ``apply_complex`` raises
  the same error for any other caller. Nothing else needs complex numbers.

The float functions of rows that need more than one expression live in engine/special.py
(written against ``math`` alone: ``diff --format python`` copies them), their complex and vector
forms and domain checks in engine/forms.py. A row's ``aliases`` are other names people type
(``ln`` for log): the parser accepts them, and everything prints the row's own name.

Conventions where mathematicians shrug and peers disagree (JAX says abs'(0)=1, PyTorch 0):

- kinks: abs'(0) = 0; relu, leaky_relu and selu take the slope of their left side at 0
  (relu'(0) = 0, leaky_relu'(0) = a), as PyTorch and JAX; min/max at a tie split the gradient
  equally (1/2 each), and so do clip and hardtanh at a bound (they are min and max).
- jumps: sign, floor, ceil, round and trunc have slope 0 everywhere, at a jump too; mod's slopes
  are 1 and -floor(x / y) everywhere. The finite-difference check flags a jump.
- pow at a zero base (HIPS autograd, PyTorch, JAX): 0**0 = 1, d/dx x**0 = 0 at x = 0, and
  d/dy 0**y = 0 for y > 0 (xlogy); d/dy at 0**0 is an error (0**y jumps there).
- polygamma(n, x): the order n takes whole values only; d/dn is 0, as JAX has it.

Building the rows costs no NumPy import: an array row's functions import it when they run.
"""

from __future__ import annotations

import math
from typing import Any

from gradcli.engine.ops import elementary, linear_algebra, logic, special_functions
from gradcli.engine.ops.linear_algebra import MADE_PER_USE, index_op, stack_op
from gradcli.engine.ops.row import (
    ARRAY,
    ELEMENTWISE,
    NONE,
    OPS,
    PREC_AND,
    PREC_ATOM,
    PREC_COMPARE,
    PREC_NONE,
    PREC_NOT,
    PREC_OR,
    PREC_POWER,
    PREC_PRODUCT,
    PREC_SUM,
    PREC_UNARY,
    SAME,
    F,
    Form,
    Op,
    Rule,
    ShapeError,
    elementwise,
    numpy,
    shape_text,
)
from gradcli.engine.ops.special_functions import GELU_TANH_SCALE
from gradcli.engine.ops.xp import NUMPY, Arrays, NumPyArrays, subscript_of, unbroadcast

__all__ = [
    "ARRAY", "CALLS", "CONDITIONAL", "CONST", "CONSTANTS", "ELEMENTWISE", "FUNCTIONS",
    "FUNCTION_NAMES", "GELU_TANH_SCALE", "LOGICAL", "NONE", "NUMPY", "OPS", "PREC_AND",
    "PREC_ATOM", "PREC_COMPARE", "PREC_NONE", "PREC_NOT", "PREC_OR", "PREC_POWER", "PREC_PRODUCT",
    "PREC_SUM", "PREC_UNARY", "ROWS", "SAME", "SYMBOL_ALIASES", "VAR", "Arrays", "F", "Form",
    "NumPyArrays", "Op", "Rule", "ShapeError", "elementwise", "index_op", "is_function_name",
    "numpy", "shape_text", "spellings", "stack_op", "subscript_of", "table_rows", "unbroadcast",
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

CONDITIONAL = OPS["where"]
# Ops whose value is a truth value (1 or 0): their derivative is 0 by convention, and a finite
# difference that perturbs them flips a condition, so the check leaves them out.
LOGICAL = frozenset({"lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or",
                     "logical_not"})

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}


def is_function_name(name: str) -> bool:
    """Whether ``name`` is one of the language's functions (of numbers or arrays), or an alias."""
    return name in FUNCTION_NAMES


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
    """Every operator and function of the language, in table order: name, how it is written,
    summary and whether it has complex-step and vector forms (``SAME`` counts: it has them);
    then the array rows made per use (subscripts, array literals). What ``gradcli functions``
    lists and docs/functions.md shows."""
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
VAR = Op("var", 0, float, (), symbol="", complex=NONE, vector=NONE,
         summary="an input variable")
CONST = Op("const", 0, float, (), symbol="", complex=NONE, vector=NONE,
           summary="a number written in the program")
