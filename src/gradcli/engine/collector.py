"""Python's cycle collector, paused while a large graph is built: its many small containers
(nodes, operand tuples, tokens) stay alive until the work is done, so the collector's passes
would scan them again and again to free nothing; and a graph has no cycles.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

Parameters = ParamSpec("Parameters")
Result = TypeVar("Result")


def collector_paused(work: Callable[Parameters, Result]) -> Callable[Parameters, Result]:
    """``work`` with the cycle collector paused, then one young-generation pass, so a loop of
    calls piles up no garbage. The collector is the process's: other threads run without cyclic
    collection meanwhile (reference counting still frees what they drop).
    """

    @functools.wraps(work)
    def paused(*args: Parameters.args, **kwargs: Parameters.kwargs) -> Result:
        if not gc.isenabled():  # already paused: by the caller, or by the user
            return work(*args, **kwargs)
        try:
            gc.disable()
            return work(*args, **kwargs)
        finally:
            gc.enable()
            gc.collect(0)

    return paused
