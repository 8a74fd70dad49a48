"""Every size limit gradcli enforces, in one place, so hostile input ends fast with a clear error.

gradcli has no recursion and no quadratic loops over nodes, so what is left to bound is the size
of a program (nodes, characters, array elements and dimensions), of what is made from it (sweeps,
Hessians, Jacobians, ``diff``'s derivatives, pictures, check files and runs, measured in cells:
one node at one point) and the work of the finite-difference checks (node recomputations, past
which variables or elements are reported as unchecked, never as failed). The comments give each
limit's reason or cost.
"""

from __future__ import annotations

import os
import sys

from gradcli.errors import UsageError

MAX_NODES = 1_000_000  # graph nodes of one program (--max-nodes)
# Longer texts are refused before parsing (~10 us a token): a 10 MB line would take a minute.
CHARS_PER_NODE = 8
CHECK_BUDGET = 1_000_000  # node recomputations of the check: about a second
VECTOR_CHECK_FACTOR = 50  # the vectorised pass recomputes elements ~50 times faster
# The compiled float replays recompute ~5 times as many nodes in that second (counted as they
# go: only the nodes an input affects), so a graph of a few inputs needs no vectorised pass.
REPLAY_CHECK_FACTOR = 5
MAX_RANGE_COUNT = 10_000_000  # values of one START:STOP:COUNT range
MAX_SWEEP_POINTS = 10_000_000  # 10^7 CSV rows are about a GB
MAX_SWEEP_CELLS = 3_000_000_000  # points x nodes: 10^7 points of a 300-node program
# A sweep on a Dask cluster: its memory is a few blocks per process whatever its size
MAX_CLUSTER_SWEEP_POINTS = 10**12
MAX_CLUSTER_SWEEP_CELLS = 10**14
# A sweep streams in blocks: the check keeps every node's value of a block (16 MB)
SWEEP_BLOCK_POINTS = 2**16
SWEEP_BLOCK_CELLS = 2**21
SWEEP_THREADS = 8  # at most (fewer with fewer CPUs or $GRADCLI_JOBS): blocks in memory at once
SWEEP_RECHECK_BUDGET = 500_000  # scalar re-evaluations of unsure points (gradcheck/sweep.py)
MAX_CHECK_FILE_BYTES = 4 * 2**20  # tomllib reads ~0.3 MB/s of number arrays
MAX_CHECK_NODES = 100_000  # ~5 s for a check at one point
MAX_CHECK_POINTS = 1_000_000  # points of one check in a check file
MAX_CHECK_CELLS = 30_000_000  # points x nodes: ~4 s
CHECK_BLOCK_POINTS = 2**16  # points of a check evaluated at a time
CHECK_BLOCK_CELLS = 2**23  # points x nodes evaluated at a time: ~70 MB
CHECK_BLOCK_OVERHEAD = 512  # a node at one point costs as much as at 512 (a NumPy call)
CHECK_FIXED_CELLS = 2**16  # what a check costs beyond its nodes (~2 ms), in cells
MAX_RUN_CELLS = 10**9  # nodes x points x passes in one gradcli check run: ~30 s
MAX_DRAWN_NODES = 300  # gradcli graph, nearest the output: more is unreadable
MAX_ARRAY_ELEMENTS = 2**25  # in one value: 256 MB of doubles
MAX_VALUES_FILE_BYTES = 2**24 * 25  # 2^24 numbers written with 17 digits and their commas
MAX_ARRAY_DIMS = 12  # checked before NumPy (64) or Python's recursion refuses a value
# The array check (gradcheck/elements.py): every element of a gradient up to ARRAY_ALL_ELEMENTS,
# else random directions plus an evenly spread sample; columns cost ARRAY_COLUMN_FACTOR less.
ARRAY_CHECK_ELEMENTS = 10_000  # sampled elements of one gradient, at most
ARRAY_CHECK_BUDGET = 1_000_000_000  # work units of about a nanosecond: about a second
ARRAY_CHECK_MIN = 20  # sampled elements of a large gradient, at least
ARRAY_ALL_ELEMENTS = 256  # gradients up to this size are checked element by element
ARRAY_CHECK_DIRECTIONS = 3  # random directions of a large gradient (each checks all of it)
ARRAY_COLUMN_FACTOR = 20  # a column of a vectorised replay, against a replay of its own
MAX_HESSIAN_ENTRIES = 1_000_000  # a Hessian of up to 1,000 variables
MAX_ARRAY_HESSIAN_INPUTS = 500  # input elements of an array program's --hessian
MAX_JACOBIAN_ROWS = 16  # output elements of a Jacobian gradcli diff prints row by row
MAX_CONTRIBUTION_CELLS = 1_000_000  # output elements x node elements of the per-node table
MAX_DERIVATIVES = 100_000  # gradcli diff: (variables)^order derivatives
MAX_DIFF_SHAPE_ELEMENTS = 2048  # diff --shape inputs: a dense 2048x2048 Jacobian is 32 MB
JOBS_ENV = "GRADCLI_JOBS"


def default_jobs() -> int:
    """``$GRADCLI_JOBS`` if set, else the number of CPUs this process may run on."""
    text = os.environ.get(JOBS_ENV, "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else (os.cpu_count() or 1)


def max_chars(max_nodes: int = MAX_NODES) -> int:
    """The longest program text accepted at this node limit."""
    return CHARS_PER_NODE * max_nodes


def check_dims(what: str, dims: int) -> None:
    """Refuse ``what`` (``the value of x``, ``an array literal``) when it has more than
    ``MAX_ARRAY_DIMS`` dimensions: a UsageError, before NumPy raises on the 65th or Python's
    recursion ends in the thousandth."""
    if dims > MAX_ARRAY_DIMS:
        raise UsageError(f"{what} has more than {MAX_ARRAY_DIMS} dimensions",
                         hint=f"brackets may nest at most {MAX_ARRAY_DIMS} deep")


# NumPy's import with one OpenBLAS thread takes some 84 MB of address space (x86-64 Linux).
NUMPY_ADDRESS_SPACE = 96 << 20


def watch_numpy_imports() -> None:
    """Put ``_NumPyFitter`` on ``sys.meta_path``, before anything imports NumPy: the command
    line does at start-up (a run that never imports NumPy pays nothing for it)."""
    if "numpy" not in sys.modules and not any(isinstance(finder, _NumPyFitter)
                                              for finder in sys.meta_path):
        sys.meta_path.insert(0, _NumPyFitter())


def numpy_refused() -> str | None:
    """Why NumPy must not be imported here, or None. Under an address-space limit (``prlimit
    --as``), which counts the tens of MB each BLAS thread reserves, OpenBLAS ends the whole
    process, with no exception to catch, when it cannot get its buffers: there NumPy starts
    with one BLAS thread (unless told otherwise), and is refused where less than
    ``NUMPY_ADDRESS_SPACE`` is left (as /proc/self/statm counts it, on Linux)."""
    try:
        import resource
    except ImportError:  # no such limit here (Windows)
        return None
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            left = limit - int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return None
    if left >= NUMPY_ADDRESS_SPACE:
        return None
    return (f"NumPy could not be loaded: not enough memory ({max(left, 0) >> 20} MB of address "
            f"space left of the {limit >> 20} MB allowed; it needs about "
            f"{NUMPY_ADDRESS_SPACE >> 20})")


class _NumPyFitter:
    """A finder on ``sys.meta_path`` that finds nothing, but asks ``numpy_refused`` before
    NumPy is first imported: an ImportError (``errors.no_room_to_load``: a resource error, a
    batch line's own record) where NumPy would end the process."""

    def __init__(self) -> None:
        self.fitted = False

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if self.fitted or name != "numpy":
            return
        refused = numpy_refused()
        if refused is not None:
            raise ImportError(refused)
        self.fitted = True
