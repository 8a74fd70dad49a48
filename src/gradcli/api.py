"""The public Python API, the facade for users (``gradcli/__init__`` loads its names lazily
from here; nothing inside gradcli imports it).

    >>> import gradcli
    >>> result = gradcli.evaluate("(x*W+b-t)**2", {"x": 2, "W": 3, "b": 1, "t": 8})
    >>> result.value, result.gradients["x"], result.check.ok
    (1.0, -6.0, True)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from gradcli.engine.graph import Node, Program
from gradcli.gradcheck import evaluation as _evaluation
from gradcli.gradcheck.check import CheckReport, GradientCheck
from gradcli.gradcheck.evaluation import (
    EvalSettings,
    FreeResult,
    LineOutcome,
    NodeRow,
    Result,
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

show_in_notebooks(Result, FreeResult)  # the eval tables in Jupyter and IPython


@functools.wraps(_evaluation.evaluate)
def evaluate(*args: Any, **kwargs: Any) -> Any:
    result = _evaluation.evaluate(*args, **kwargs)
    if not hasattr(type(result), "_repr_html_"):  # a JacobianResult: its module loads NumPy,
        show_in_notebooks(type(result))  # so it gets its tables when the first one is made
    return result


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
