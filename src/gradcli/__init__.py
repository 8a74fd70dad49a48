"""gradcli: differentiate formulas -- values, reverse-mode gradients, finite-difference checks.

The CLI is a thin layer over this API::

    import gradcli
    program = gradcli.parse("u = x*W; z = u + b; err = z - t; err*err")
    result = gradcli.evaluate(program, {"x": 2, "W": 3, "b": 1, "t": 8})
    result.value            # 1.0
    result.gradients        # {'x': -6.0, 'W': -4.0, 'b': -2.0, 't': 2.0}
    result.check.ok         # True: every gradient agrees with finite differences
    result.node_rows()      # every node: id, op, label, value, grad, inputs

Derivatives as expressions (loaded on first use, so plain evaluation starts as fast as before)::

    gradcli.differentiate("(x*W+b-t)**2", ["x"]).texts()   # {'x': '2*(x*W + b - t)*W'}
    gradcli.evaluate("x*y", {"x": 1, "y": 2}, order=2).hessian.matrix
    gradcli.evaluate("x*y", {"x": 3}, strict=False).symbolic.value   # '3*y'
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from typing import TYPE_CHECKING

from gradcli.errors import (
    ExitStatus,
    GradcliError,
    GradcliNameError,
    NumericError,
    ParseError,
    UsageError,
)

if TYPE_CHECKING:
    from gradcli.api import (
        CheckReport,
        Derivatives,
        EvalSettings,
        FreeResult,
        GradientCheck,
        HessianResult,
        LineOutcome,
        Node,
        NodeRow,
        Program,
        Result,
        SymbolicResult,
        differentiate,
        evaluate,
        evaluate_lines,
        parse,
    )

__version__ = "0.1.0"

__all__ = [
    "CheckReport",
    "Derivatives",
    "EvalSettings",
    "ExitStatus",
    "FreeResult",
    "GradcliError",
    "GradcliNameError",
    "GradientCheck",
    "HessianResult",
    "LineOutcome",
    "Node",
    "NodeRow",
    "NumericError",
    "ParseError",
    "Program",
    "Result",
    "SymbolicResult",
    "UsageError",
    "__version__",
    "differentiate",
    "evaluate",
    "evaluate_lines",
    "parse",
]

# PEP 562: everything else loads on first use, so ``import gradcli`` is almost free. The CLI
# needs that: its Ctrl-C guard (cli/__init__.py) can only be set up once this package is imported,
# and a Ctrl-C while the parser and the graph core load must not print a traceback.
#
# The same policy holds throughout the package, stated here once: a heavy or rarely used module
# (NumPy, Rich, orjson, Lark, the symbolic engine and printers, csv, subprocess, plotext,
# matplotlib) is imported inside the function that needs it, so that a plain scalar
# ``gradcli eval`` loads none of them; tests/test_packaging.py checks what a small eval loads.
_API_NAMES = frozenset({
    "CheckReport", "Derivatives", "EvalSettings", "FreeResult", "GradientCheck",
    "HessianResult", "LineOutcome", "Node", "NodeRow", "Program", "Result", "SymbolicResult",
    "differentiate", "evaluate", "evaluate_lines", "parse",
})


def __getattr__(name: str) -> object:
    """An API name from its module, or a submodule (``gradcli.api``), imported on first use."""
    if name in _API_NAMES:
        value = getattr(import_module(".api", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_") and find_spec(f"{__name__}.{name}") is not None:
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module 'gradcli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
