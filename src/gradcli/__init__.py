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

from .api import LineOutcome, NodeRow, Result, evaluate, evaluate_lines
from .check import CheckReport, GradientCheck
from .errors import (
    ExitStatus,
    GradcliError,
    GradcliNameError,
    NumericError,
    ParseError,
    UsageError,
)
from .graph import Node, Program
from .parser import parse

__version__ = "0.1.0"

__all__ = [
    "CheckReport",
    "ExitStatus",
    "GradcliError",
    "GradcliNameError",
    "GradientCheck",
    "LineOutcome",
    "Node",
    "NodeRow",
    "NumericError",
    "ParseError",
    "Program",
    "Result",
    "UsageError",
    "__version__",
    "differentiate",
    "evaluate",
    "evaluate_lines",
    "parse",
]

_SYMBOLIC = {"differentiate", "Derivatives", "HessianResult", "SymbolicResult"}


def __getattr__(name: str) -> object:  # PEP 562: the symbolic side loads on first use
    if name in _SYMBOLIC:
        from . import derive

        return getattr(derive, name)
    raise AttributeError(f"module 'gradcli' has no attribute {name!r}")
