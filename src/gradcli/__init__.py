"""gradcli: differentiate formulas -- values, reverse-mode gradients, finite-difference checks.

The CLI is a thin layer over this API::

    import gradcli
    program = gradcli.parse("u = x*W; z = u + b; err = z - t; err*err")
    result = gradcli.evaluate(program, {"x": 2, "W": 3, "b": 1, "t": 8})
    result.value            # 1.0
    result.gradients        # {'x': -6.0, 'W': -4.0, 'b': -2.0, 't': 2.0}
    result.check.ok         # True: every gradient agrees with finite differences
    result.node_rows()      # every node: id, op, label, value, grad, inputs
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
    "evaluate",
    "evaluate_lines",
    "parse",
]
