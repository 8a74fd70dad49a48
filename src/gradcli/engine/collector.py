"""Python's cycle collector, paused while a large graph is built.

Building a graph makes many small containers (nodes, their operand tuples, the parser's
tokens) that all stay alive until the work is done, and the collector would walk them again
and again to free nothing: each young-generation pass promotes them, and the full passes that
the growing older generations trigger scan every node made so far. A graph has no cycles
(a node only refers to nodes made before it), so nothing is lost by not looking.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

Parameters = ParamSpec("Parameters")
Result = TypeVar("Result")


def collector_paused(work: Callable[Parameters, Result]) -> Callable[Parameters, Result]:
    """``work`` with Python's cycle collector paused while it runs.

    What the work leaves is collected when it ends, in one pass over the young generation: a
    loop of many calls does not pile up garbage, and that pass's time is the call's own. The
    collector is the process's: another thread of a program that calls gradcli meanwhile runs
    without cyclic collection for that long (reference counting still frees what it drops).
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
