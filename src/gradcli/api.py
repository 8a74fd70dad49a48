"""The public Python API, the facade for users (``gradcli/__init__`` loads its names lazily
from here; nothing inside gradcli imports it).

    >>> import gradcli
    >>> result = gradcli.evaluate("(x*W+b-t)**2", {"x": 2, "W": 3, "b": 1, "t": 8})
    >>> result.value, result.gradients["x"], result.check.ok
    (1.0, -6.0, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gradcli.engine.graph import Node, Program
from gradcli.gradcheck.check import CheckReport, GradientCheck
from gradcli.gradcheck.evaluation import (
    EvalSettings,
    FreeResult,
    LineOutcome,
    NodeRow,
    Result,
    evaluate,
    evaluate_lines,
)
from gradcli.gradcheck.hessian import HessianResult
from gradcli.language.parser import parse, program_of
from gradcli.output.notebook import show_in_notebooks
from gradcli.symbolic import derivatives as _derivatives
from gradcli.symbolic.derivatives import Derivatives, SymbolicResult

__all__ = [
    "CheckReport",
    "Derivatives",
    "EvalSettings",
    "FreeResult",
    "GradientCheck",
    "HessianResult",
    "LineOutcome",
    "Node",
    "NodeRow",
    "Program",
    "Result",
    "SymbolicResult",
    "differentiate",
    "evaluate",
    "evaluate_lines",
    "parse",
]

show_in_notebooks(Result, FreeResult)  # the eval table in Jupyter and IPython


def differentiate(
    program: str | Program,
    wrt: str | Sequence[str] | None = None,
    order: int = 1,
    values: Mapping[str, float] | None = None,
    defaults: bool = False,
) -> Derivatives:
    """Symbolic derivatives of ``program`` (text or parsed) up to ``order`` with respect to
    ``wrt`` (names, or one comma-separated string as ``--wrt`` takes them)."""
    program = program_of(program, given=values or ())
    if isinstance(wrt, str):  # "xy" is one name, never the letters x and y
        wrt = [name.strip() for name in wrt.split(",") if name.strip()]
    return _derivatives.differentiate(program, wrt, order, values, defaults)
