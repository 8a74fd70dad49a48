"""gradcli: differentiate formulas -- values, reverse-mode gradients, finite-difference checks.

The CLI is a thin layer over this API (docs/python-api.md)::

    result = gradcli.evaluate("(x*W+b-t)**2", {"x": 2, "W": 3, "b": 1, "t": 8})
    result.value, result.gradients, result.check.ok, result.node_rows()
    gradcli.differentiate("(x*W+b-t)**2", ["x"]).texts()   # {'x': '2*W*(W*x + b - t)'}
"""

from __future__ import annotations

import sys
from types import ModuleType

from gradcli.errors import (
    ExitStatus,
    GradcliError,
    GradcliNameError,
    NumericError,
    ParseError,
    UsageError,
)


class _LoadedOnUse(ModuleType):
    """Stands for a module that ``dataclasses`` imports at the top and, before Python 3.12, uses
    only now and then: ``inspect`` (with ``ast``, ``dis`` and ``tokenize``, a fifth of a scalar
    eval's start-up) to write the ``__doc__`` of a class that has none, ``copy`` in ``asdict``.
    The first attribute asked for imports the real module, which then replaces the stand-in in
    ``dataclasses``. (A thread that imports ``inspect`` or ``copy`` during those milliseconds
    keeps the stand-in: its attributes and ``dir()`` are the real module's.)"""

    def __getattr__(self, name: str) -> object:
        return getattr(self._real(), name)

    def __dir__(self) -> list[str]:
        return dir(self._real())

    def _real(self) -> ModuleType:
        from importlib import import_module

        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        real = import_module(self.__name__)
        names = vars(sys.modules.get("dataclasses", real))
        if names.get(self.__name__) is self:
            names[self.__name__] = real
        return real


_ON_USE = ("inspect", "copy")


def _load_dataclasses() -> None:
    """``dataclasses`` with stand-ins (``_LoadedOnUse``), where none of these modules is loaded
    yet and the version uses them no further (3.12's reads every class's annotations with
    inspect). The stand-ins are in ``sys.modules`` only during this import: whoever imports
    ``inspect`` or ``copy`` later gets the real module."""
    if sys.version_info >= (3, 12) or {"dataclasses", *_ON_USE} & sys.modules.keys():
        return
    sys.modules.update({name: _LoadedOnUse(name) for name in _ON_USE})
    try:
        import dataclasses  # noqa: F401 (loaded here, with the stand-ins, for everyone)
    finally:
        for name in _ON_USE:
            if isinstance(sys.modules.get(name), _LoadedOnUse):
                del sys.modules[name]


_load_dataclasses()

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
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
        diff,
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
    "diff",
    "differentiate",
    "evaluate",
    "evaluate_lines",
    "parse",
]

# PEP 562: everything else loads on first use, so ``import gradcli`` is almost free (the CLI's
# Ctrl-C guard is set up only once it is imported). The policy of the whole package, stated here
# once: a heavy or rarely used module (NumPy, Rich, Lark, the symbolic engine...) is imported
# inside the function that needs it, so that a plain scalar ``gradcli eval`` loads none of them
# (tests/test_packaging.py checks what a small eval loads).
_API_NAMES = frozenset(__all__) - set(globals())  # those not imported above: the API's


def __getattr__(name: str) -> object:
    """An API name from its module, or a submodule (``gradcli.api``), imported on first use."""
    from importlib import import_module
    from importlib.util import find_spec

    if name in _API_NAMES:
        value = getattr(import_module(".api", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_") and find_spec(f"{__name__}.{name}") is not None:
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module 'gradcli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
