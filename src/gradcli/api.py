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
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from gradcli.symbolic.diff import Diff  # its module loads NumPy: imported by diff()

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
    "diff",
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


def diff(
    program: str | Program,
    wrt: str | Sequence[str] | None = None,
    order: int = 1,
    values: Mapping[str, Any] | None = None,
    shapes: Mapping[str, tuple[int, ...] | str] | None = None,
    fmt: str = "text",
    defaults: bool = False,
    check: bool = True,
) -> Diff:
    """What ``gradcli diff`` prints, of a scalar or an array program: ``shapes`` gives array
    inputs' shapes (``(3, 2)`` or ``"3x2"``, as ``--shape``), ``values`` may hold arrays,
    ``fmt`` is "text", "latex" or "python". Unless ``check`` is False the derivatives are
    checked as the command checks them (``Diff.checked``; a ``CheckError`` where one
    disagrees). ``Diff.texts`` holds them, ``Diff.python`` the NumPy source."""
    from gradcli.engine import arrays
    from gradcli.gradcheck.derivative_check import DiffCheck
    from gradcli.gradcheck.derivative_check import check as checked
    from gradcli.symbolic.diff import DiffAsk, read_shape
    from gradcli.symbolic.diff import diff as derivatives

    given = {name: arrays.as_array(name, value) if isinstance(value, (list, tuple))
             else value for name, value in (values or {}).items()}
    program = program_of(program, given=given)
    if isinstance(wrt, str):
        wrt = [name.strip() for name in wrt.split(",") if name.strip()]
    sizes = {name: read_shape(name, str(shape) if isinstance(shape, (str, int)) else
                              "x".join(str(n) for n in shape) or "scalar")
             for name, shape in (shapes or {}).items()}  # read as --shape reads it
    ask = DiffAsk(wrt, order, given, fmt, defaults, shapes=sizes)
    return derivatives(program, ask, (lambda **parts: checked(DiffCheck(**parts))) if check
                       else None)
