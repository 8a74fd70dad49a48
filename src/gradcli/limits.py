"""Every size limit gradcli enforces, in one place, so hostile input ends fast with a clear error.

gradcli has no recursion and no quadratic loops over nodes, so the only resources left to bound
are the size of a program and the finite-difference check, whose cost is (number of variables) x
(number of nodes downstream of each): a sum of 10^5 distinct variables would take hours.

- ``MAX_NODES``: a program that builds more graph nodes is a usage error (``--max-nodes``).
- ``CHARS_PER_NODE``: a program text longer than ``CHARS_PER_NODE * max_nodes`` characters is
  refused before parsing (parsing costs ~10 us per token, so a 10 MB line would otherwise take a
  minute to reach the node limit); in a batch, the reader keeps at most that many bytes of a line.
- ``CHECK_BUDGET``: node recomputations the finite-difference check may spend; the first variable
  is always checked, variables past the budget are reported as unchecked (never as failed).
  The vectorised first pass gets ``VECTOR_CHECK_FACTOR`` times that budget: it recomputes array
  elements some 50 times faster than the scalar replay recomputes nodes.
- ``MAX_RANGE_COUNT`` / ``MAX_SWEEP_POINTS``: values in one ``START:STOP:COUNT`` range, and
  points in a whole sweep grid (its output: 10^7 CSV rows are about a GB).
- ``MAX_SWEEP_CELLS``: points x nodes of one ``eval`` sweep (its time: a cell is one node at
  one point, and the sweep evaluates each some ten times with its check). A sweep streams, a
  block of at most ``SWEEP_BLOCK_POINTS`` points and ``SWEEP_BLOCK_CELLS`` points x nodes at a
  time (the check keeps every node's value of a block: 16 MB), on up to ``SWEEP_THREADS``
  threads, so its memory does not grow with its points. ``SWEEP_RECHECK_BUDGET``: node
  computations a sweep may spend re-evaluating, on the scalar path, points where NumPy's
  rounding could make it disagree with one point (``gradcheck/sweep.py``), about a second.
- ``MAX_CLUSTER_SWEEP_POINTS`` / ``MAX_CLUSTER_SWEEP_CELLS``: the same for a sweep on a Dask
  cluster (``--cluster``), whose time is spread over its workers; its memory is a few blocks
  per process whatever the size (``runs/cluster.py``).
- Check files (``gradcli check``): ``MAX_CHECK_FILE_BYTES`` per file, ``MAX_CHECK_NODES`` per
  ``expr`` (a check runs every node at every point, and a formula check is small: a bigger one is
  a mistake or an attack), ``MAX_CHECK_POINTS`` points per check, and ``MAX_CHECK_CELLS`` for
  points x nodes (~4 s). A check runs ``CHECK_BLOCK_POINTS`` points at a time, fewer when
  points x nodes (its expr's and its expected expressions') would pass ``CHECK_BLOCK_CELLS``, so
  its memory does not grow with its points; a ``START:STOP:COUNT`` sweep is kept as text until
  its check runs, so loading takes memory and time in proportion to the file.
- ``MAX_RUN_CELLS``: the estimated size of all the checks of one ``gradcli check`` run (every
  file, after ``-k``), refused before anything runs. A check's size in cells (one node at one
  point) is nodes x points x passes -- two passes for the value and gradients, two per variable
  for finite differences, one per expected expression --, where each block of points counts
  ``CHECK_BLOCK_OVERHEAD`` points more (a node costs as much at one point as at that many) and
  each check ``CHECK_FIXED_CELLS`` more. A cell takes ~20-40 ns, so a run ends in about 30 s.
- ``MAX_DERIVATIVES``: how many derivatives ``gradcli diff`` prints ((variables)^order); the
  graphs it builds for them stop at ``MAX_NODES`` nodes (``--max-nodes``).
- ``MAX_DIFF_SHAPE_ELEMENTS``: elements of all ``gradcli diff --shape`` inputs together, checked
  before anything is built: diff's Jacobians are dense (output elements x input elements, an
  ``eye(n)`` for an element-wise op), so 100,000 elements took 6 GB.
- ``MAX_HESSIAN_ENTRIES``: (variables)^2 of ``eval --hessian``; its check shares ``CHECK_BUDGET``
  among the rows (the entries past it are listed as unchecked).
- ``MAX_ARRAY_HESSIAN_INPUTS``: input elements of an array program's ``eval --hessian`` (one
  Hessian-vector product per element, and as many perturbed gradients for its check); above it
  ``--hvp`` gives H·v for one direction at the cost of a few gradients.
- ``MAX_JACOBIAN_ROWS``: output elements of a Jacobian that ``gradcli diff`` prints row by row
  (one gradient expression per output element, where no vectorized form is known); past it a
  usage error (one line of text per element is no longer readable).
- ``MAX_CONTRIBUTION_CELLS``: the per-node table of a Jacobian (each output's gradient with
  respect to every node) holds (output elements) x (elements of all nodes) numbers; past it
  the table and ``"nodes"`` leave the contributions out and say so (8 MB of floats).
- ``MAX_DRAWN_NODES``: nodes ``gradcli graph`` draws by default, nearest the output (a larger
  picture is unreadable; ``--max-nodes 0`` draws all).
- Arrays (docs/arrays.md): ``MAX_ARRAY_ELEMENTS`` elements in one value (a literal, ``eye(n)``,
  any node: 2^25 doubles are 256 MB). The check of an array program (gradcheck/elements.py)
  checks every element of a gradient of up to ``ARRAY_ALL_ELEMENTS`` elements, and a larger one
  along ``ARRAY_CHECK_DIRECTIONS`` random directions (each checks every element at once) plus
  ``ARRAY_CHECK_MIN`` elements of an evenly spread, deterministic sample (at most
  ``ARRAY_CHECK_ELEMENTS``). ``ARRAY_CHECK_BUDGET`` bounds its work (about a second), counted as
  replays x what each recomputes (elements read and written, a product's multiplications, a
  factorisation's n^3), shared fairly among the nodes: past it a node gets fewer elements, then
  fewer directions (at least one), and the verdict names it. Elements that replay together as
  columns (no per-element Python work) cost ``ARRAY_COLUMN_FACTOR`` times less.
  ``MAX_ARRAY_DIMS``: dimensions of one value, that is how deep
  brackets nest in a literal, an array value or a values file, checked by ``check_dims`` before
  NumPy sees the value (NumPy allows 64 dimensions, 32 before 2.0, and a Jacobian has its
  output's dimensions and its input's, and a check one axis of points more).
- ``MAX_VALUES_FILE_BYTES``: a JSON or TOML values file (``--values``), the text of a full-precision
  array of 2^24 elements (its parse holds the text and Python's floats, a few GB at most); larger
  arrays come as ``.npy``/``.npz`` files, which have no text to parse and are bounded by
  ``MAX_ARRAY_ELEMENTS`` from their headers (language/data_files.py).
- ``default_jobs()``: the processes of a batch and the threads of a large vector evaluation
  (``$GRADCLI_JOBS``, else the CPUs this process may run on).
"""

from __future__ import annotations

import os

from gradcli.errors import UsageError

MAX_NODES = 1_000_000
CHARS_PER_NODE = 8
CHECK_BUDGET = 1_000_000  # about a second
VECTOR_CHECK_FACTOR = 50
MAX_RANGE_COUNT = 10_000_000
MAX_SWEEP_POINTS = 10_000_000
MAX_SWEEP_CELLS = 3_000_000_000  # points x nodes: 10^7 points of a 300-node program
MAX_CLUSTER_SWEEP_POINTS = 10**12
MAX_CLUSTER_SWEEP_CELLS = 10**14
SWEEP_BLOCK_POINTS = 2**16
SWEEP_BLOCK_CELLS = 2**21
SWEEP_THREADS = 8  # at most (fewer with fewer CPUs or $GRADCLI_JOBS): blocks in memory at once
SWEEP_RECHECK_BUDGET = 500_000
MAX_CHECK_FILE_BYTES = 4 * 2**20  # tomllib reads ~0.3 MB/s of number arrays
MAX_CHECK_NODES = 100_000  # ~5 s for a check at one point
MAX_CHECK_POINTS = 1_000_000
MAX_CHECK_CELLS = 30_000_000  # points x nodes: ~4 s
CHECK_BLOCK_POINTS = 2**16  # points of a check evaluated at a time
CHECK_BLOCK_CELLS = 2**23  # points x nodes evaluated at a time: ~70 MB
CHECK_BLOCK_OVERHEAD = 512  # a node at one point costs as much as at 512 (a NumPy call)
CHECK_FIXED_CELLS = 2**16  # what a check costs beyond its nodes (~2 ms), in cells
MAX_RUN_CELLS = 10**9  # nodes x points x passes in one gradcli check run: ~30 s
MAX_DRAWN_NODES = 300
MAX_ARRAY_ELEMENTS = 2**25
MAX_VALUES_FILE_BYTES = 2**24 * 25  # 2^24 numbers written with 17 digits and their commas
MAX_ARRAY_DIMS = 12
ARRAY_CHECK_ELEMENTS = 10_000
ARRAY_CHECK_BUDGET = 1_000_000_000  # work units of about a nanosecond: about a second
ARRAY_CHECK_MIN = 20
ARRAY_ALL_ELEMENTS = 256
ARRAY_CHECK_DIRECTIONS = 3
ARRAY_COLUMN_FACTOR = 20
MAX_HESSIAN_ENTRIES = 1_000_000  # a Hessian of up to 1,000 variables
MAX_ARRAY_HESSIAN_INPUTS = 500  # input elements of an array program's --hessian
MAX_JACOBIAN_ROWS = 16  # output elements of a Jacobian gradcli diff prints row by row
MAX_CONTRIBUTION_CELLS = 1_000_000  # output elements x node elements of the per-node table
MAX_DERIVATIVES = 100_000  # gradcli diff: (variables)^order derivatives
MAX_DIFF_SHAPE_ELEMENTS = 2048  # a dense 2048x2048 Jacobian is 32 MB
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
