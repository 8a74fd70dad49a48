"""Sample points for ``gradcli diff``: where a program's derivatives are built and checked.

A printed derivative holds on the program's domain, so it is built (the array builder needs
every node's value for its shape) and checked at points of it: the values given, the other
variables drawn, seeded, from ranges tried in turn, first around 1, -1 and 0 (well scaled, so
that rounding is not taken for a wrong formula), then further out (``log(x - 2)``). A square
matrix gets ``n*eye(n)`` added: invertible, with a positive determinant.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gradcli.errors import NumericError, UsageError

# (low, high) of the uniform draws, tried in this order (then again with other seeds)
RANGES = ((0.5, 1.5), (-1.5, -0.5), (0.05, 0.45), (-3.0, 3.0), (1.5, 3.0), (2.5, 6.0),
          (-6.0, -2.5), (6.0, 20.0), (-20.0, -6.0), (20.0, 100.0))
ATTEMPTS = 3 * len(RANGES)  # candidates drawn before a program is called undefined everywhere
FIRST_SEED = 17


@functools.lru_cache(maxsize=64)
def _drawn(shapes: tuple[tuple[str, tuple[int, ...]], ...], attempt: int) -> dict[str, Any]:
    """Every variable drawn (diff builds at a point, then checks at the same points)."""
    import numpy as np

    rng = np.random.default_rng(FIRST_SEED + attempt)
    low, high = RANGES[attempt % len(RANGES)]
    point = {}
    for name, shape in shapes:
        value = rng.uniform(low, high, size=shape) if shape else np.asarray(rng.uniform(low, high))
        if value.ndim == 2 and value.shape[0] == value.shape[1]:
            value[np.diag_indices(len(value))] += len(value)
        value.flags.writeable = False
        point[name] = value
    return point


def candidates(shapes: Mapping[str, tuple[int, ...]],
               given: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """The candidate points: ``given`` values as float arrays, the others drawn from
    ``RANGES[attempt % len(RANGES)]`` (arrays shared between calls: read only) at each attempt;
    only one when every variable has a given value."""
    import numpy as np

    given = given or {}
    for attempt in range(ATTEMPTS if any(name not in given for name in shapes) else 1):
        drawn = _drawn(tuple(shapes.items()), attempt)
        yield {name: np.asarray(given[name], dtype=float) if name in given else drawn[name]
               for name in shapes}


def defined_point(shapes: Mapping[str, tuple[int, ...]], given: Mapping[str, Any] | None,
                  build: Callable[[dict[str, Any]], Any]) -> Any:
    """``build(point)`` at the first candidate point where it raises no NumericError (at a
    point given in full, its error); a UsageError where none works."""
    failure: NumericError | None = None
    for point in candidates(shapes, given):
        try:
            return build(point)
        except NumericError as error:
            if given is not None and all(name in given for name in shapes):
                raise
            failure = error
    why = f" ({failure.message})" if failure is not None else ""
    raise UsageError(f"no sample point found where the program is defined{why}",
                     hint="gradcli diff evaluates the program at random points of the given "
                          "shapes (from around 1 to +-100) to learn each node's shape; give "
                          "values where it is defined, e.g. --x \"[3, 4]\"")
