"""The check of a large array's gradient along random directions, and where a failure lies.

A finite difference along a direction v, (f(x + h v) - f(x - h v)) / 2h, estimates v·∇f: one
pair of replays checks every element of the gradient at once, where the element-wise check
needs a pair per element (JAX's ``check_grads``, PyTorch's ``gradcheck(fast_mode=True)``). It is
``differences.check_node`` on a probe whose value is the distance t along v (0 at the point)
and whose gradient is v·g: the same steps, stencils, tolerance and methods as one element.

The directions are drawn per node, not for every input at once: each gradient gets its own
verdict and its own tolerance, relative to its own v·g (in a joint direction a bias's gradient
would be judged against a weight matrix's, a million times larger), and a replay recomputes only
what that node reaches. Each element of v is a random sign times a random magnitude in
[0.5, 1), times max(1, |x_i|), the element's own step scale (``steps.base_step``), so every
element moves about as far as its element-wise check moves it. The magnitudes differ so that
equal errors in two elements (``relu`` at two kinks) cannot cancel exactly, as they would half
the time with ±1 alone. A large matrix's direction (past ``COLUMN_MAX_ELEMENTS``; its last
axis the columns) is u v^T (``replay.Scaled``), u and v drawn alike: m + n draws, not m n; its
dot with the gradient is u^T (g v), and a matrix product moves by outer products of vectors
(``Op.scaled``: W@x by u (v@x), O(m + n)). Within ``UNSCALED_REACH`` each element moves at most
its own step scale and at least a sixteenth of it, far above its rounding. A matrix with a
larger element gets (u v^T) * s, s = max(1, |x|) per element: s and each direction's
u^T ((s * g) v) are made in one pass over x (``_scales``), and a matrix product moves by one
product with s per direction. Either still sees any wrong element: u^T (s * e) v is zero with
probability 0 for an error e that is not, and two wrong elements cancel only if their errors
do exactly times the draws; ``narrow`` forms the direction to halve it. The draws come from a
generator seeded with ``DIRECTION_SEED``, the node's index and the direction's number (a node
small enough for columns: all its directions from the first's), so the same program at the
same point is always checked along the same directions.

On a failed direction ``narrow`` bisects its support: each half of the moved elements is its own
directional difference, the halves that disagree are split again, and a single element left is
checked element-wise, so a failure names its elements (``max error at [i, j]``). A wrong
element's error stays whole in the half that holds it, while the tolerance shrinks with the
half; at most ``NARROWED_ELEMENTS`` elements are followed down, through at most
``NARROWING_HALVES`` halves.
"""

from __future__ import annotations

import random
from typing import Any

from gradcli.engine.graph import Node
from gradcli.engine.ops import numpy
from gradcli.engine.replay import Moved, Scaled
from gradcli.gradcheck.columns import COLUMN_MAX_ELEMENTS, ElementReplayer
from gradcli.gradcheck.differences import GradientCheck, check_node
from gradcli.limits import ARRAY_CHECK_DIRECTIONS

DIRECTION_SEED = 30
NARROWED_ELEMENTS = 8  # failing elements followed down to their index
NARROWING_HALVES = 256  # halves checked at most while narrowing one direction down
NUMPY_DRAWS = 1 << 16  # a direction of this many elements or more is drawn by NumPy's generator
BLOCK = 1 << 16  # elements of a block of ``_scales``: 512 KB, within a core's cache
UNSCALED_REACH = 16.0  # a large matrix with max |x| up to this moves along u v^T (docstring)


class Probe:
    """What the step policies perturb (``perturbing.Perturbed``): one element of an array node, or
    the distance along a direction (value 0, gradient v·g)."""

    __slots__ = ("grad", "index", "value")

    def __init__(self, value: float, grad: float, index: int) -> None:
        self.value, self.grad, self.index = value, grad, index


class DirectionReplayer(ElementReplayer):
    """``ElementReplayer`` that, once ``along`` has set a direction, replays f(x + t v) for the
    value t instead of one element moved (``perturbing.Replays``), through ``replay.Moved``: the
    nodes linear in x move by their value at v, computed once per direction. The direction
    and x + t v live in buffers made once per aimed node: a fresh array of 10^6 elements costs
    more in page faults than the arithmetic that fills it."""

    def __init__(self, nodes: list[Node]) -> None:
        super().__init__(nodes)
        self.direction: Moved | None = None  # the replays along a direction; None: one element
        self.drawn: Any = None  # a small node's directions, or the buffer ``draw`` fills
        self.buffer: Any = None  # x + t v
        # max(1, |x_i|) / 2^15, flat: each element's step scale per bit (a dense direction's;
        # a large matrix's s: max(1, |x_i|) in x's shape, or None within ``UNSCALED_REACH``)
        self.scale: Any = None
        self.reach = 0.0  # |x + t v| <= reach + |t| * max(1, reach): max|v_i| <= max(1, |x|)
        self.scaled = False  # directions (u v^T) * s (a large matrix): ``replay.Scaled``
        # a large matrix's first directions, drawn by ``aim``, and their dot products with the
        # gradient (with s: made in the same pass as s)
        self.draws: list[Scaled] = []
        self.dots: list[float] = []

    def aim(self, node: Node) -> None:
        np = numpy()
        self.direction, self.drawn, self.buffer = None, None, None
        super().aim(node)
        shape = np.shape(node.value)
        self.scaled = len(shape) >= 2 and int(np.size(node.value)) > COLUMN_MAX_ELEMENTS
        self.scale, self.draws, self.dots = None, [], []
        if not self.scaled:
            self.scale = np.empty(int(np.size(node.value)))
            self.reach = _scales(node.value, 1.0 / 32768, self.scale, None, [])[0]
            return
        self.reach = float(np.maximum(np.max(node.value), -np.min(node.value)))  # NaN kept
        if not self.reach <= UNSCALED_REACH:  # NaN too: each element's own scale, s
            self.scale = np.empty(shape)
        self.draws = [self._scaled(k) for k in range(ARRAY_CHECK_DIRECTIONS)]
        if self.scale is not None:  # s and the dots in one pass
            self.dots = _scales(node.value, 1.0, self.scale, node.grad, self.draws)[1]
        elif node.grad is not None:
            grad = np.broadcast_to(node.grad, shape).reshape(-1, shape[-1])
            self.dots = [float(np.ravel(d.u) @ (grad @ d.v)) for d in self.draws]

    def along(self, direction: Any) -> None:
        """Move the aimed node along ``direction`` (its shape) from now on; None: one element."""
        if direction is None:
            self.direction = None
            return
        self.direction = self.moving(direction)
        # x + t v only where a replay reads it (not W's in W@x): a buffer of x's size, even
        # untouched, grows the heap, and freeing it shrinks the heap, which later faults again
        if self.direction.reads_target:
            if self.buffer is None:
                self.buffer = numpy().empty(numpy().shape(self.target.value))
            self.direction.buffer = self.buffer

    def draw(self, k: int) -> Any:
        """The ``k``-th random direction of the aimed node: a random sign and magnitude in
        [0.5, 1) times max(1, |x_i|) per element, or a large matrix's (u v^T) * s (module
        docstring), from 16 random bits each
        (a sign and 13 bits of magnitude). A small node's directions are drawn together, the
        first ``ARRAY_CHECK_DIRECTIONS`` (or ``k`` + 1) from Python's generator seeded by the
        node (seeding costs more than drawing a thousand elements); a large one's, each from its
        own generator seeded by the node and ``k``, into one buffer: its bits are made in place
        on 16-bit integers (a pass costs a fifth of one over floats) and one pass makes
        floats."""
        np = numpy()
        if self.scaled:
            return self.draws[k] if k < len(self.draws) else self._scaled(k)
        if self.scale.size <= COLUMN_MAX_ELEMENTS:  # the columns' nodes: distinct arrays
            if self.drawn is None or k >= len(self.drawn):
                count = max(k + 1, ARRAY_CHECK_DIRECTIONS)
                bits = _signed(_bits(self.scale.size * count, self._seed(0), python=True))
                drawn = np.multiply(bits.reshape(count, -1), self.scale)
                self.drawn = drawn.reshape((count, *np.shape(self.target.value)))
            return self.drawn[k]
        if self.drawn is None:
            self.drawn = np.empty(np.shape(self.target.value))
        flat = self.drawn.reshape(-1)
        np.copyto(flat, _signed(_bits(self.scale.size, self._seed(k))))  # to floats, then a product
        np.multiply(flat, self.scale, out=flat)  # of floats: faster than one mixed
        return self.drawn

    def dot(self, v: Any, grad: Any) -> float:
        """v·grad, summed pairwise in the replays' buffer (a reduction's gradient is often a
        broadcast view, which a dot product would first copy whole)."""
        np = numpy()
        if isinstance(v, Scaled):  # u^T ((s * grad) v), made by ``aim`` for its draws
            made = [dot for drawn, dot in zip(self.draws, self.dots, strict=False) if drawn is v]
            return made[0] if made else float(np.vdot(v.dense(), np.broadcast_to(
                grad, np.shape(self.target.value))))
        grad = np.asarray(grad, dtype=float)
        if grad.flags.c_contiguous and np.shape(grad) == np.shape(v):
            return float(np.vdot(v, grad))  # one pass, no buffer
        if self.buffer is None:
            self.buffer = np.empty(np.shape(v))
        return float(np.multiply(v, grad, out=self.buffer).sum())

    def replay(self, index: int, value: Any, complex_step: bool = False) -> tuple[Any, float]:
        if self.direction is None:
            return super().replay(index, value, complex_step)
        largest = self.reach + abs(value) * max(1.0, self.reach)
        return self.direction.replay(value, largest, complex_step)

    def _seed(self, k: int) -> int:
        return (DIRECTION_SEED << 40) | (self.target.index << 8) | k

    def _scaled(self, k: int) -> Scaled:
        """The aimed matrix's ``k``-th direction (u v^T) * s, u and v drawn alike, s None
        within ``UNSCALED_REACH``: m + n draws (module docstring)."""
        shape = numpy().shape(self.target.value)
        rows = int(numpy().size(self.target.value)) // shape[-1]
        drawn = _signed(_bits(rows + shape[-1], self._seed(k))) * (1.0 / 32768)
        return Scaled(drawn[:rows].reshape(shape[:-1]), drawn[rows:], self.scale)


def _scales(value: Any, unit: float, out: Any, grad: Any, draws: list[Scaled]
            ) -> tuple[float, list[float]]:
    """Fills ``out`` (flat, or a matrix's shape when ``draws``) with max(1, |x_i|) * ``unit``;
    returns max |x_i| and, for each direction (u v^T) * s of ``draws``, u^T ((s * grad) v)
    (none without a gradient). One pass over x and the gradient in blocks of whole rows that
    stay in a core's cache: s * grad lives one block at a time, and every direction reads each
    block then, where a whole s * grad would be one more array of x's size, read once per
    direction."""
    np = numpy()
    draws = draws if grad is not None else []
    if draws:
        columns = np.shape(out)[-1]
        matrix, scale = np.reshape(value, (-1, columns)), out.reshape(-1, columns)
        step = max(1, BLOCK // columns)
        weights = np.reshape(np.broadcast_to(grad, np.shape(out)), (-1, columns))
        block = np.empty((min(step, len(matrix)), columns))
        products = np.empty((len(draws), len(matrix)))
    else:
        matrix, scale, step = np.ravel(value), out, BLOCK
    peaks = []  # each block's max |x_i|
    for start in range(0, len(matrix), step):
        part = np.abs(matrix[start:start + step], out=scale[start:start + step])
        peaks.append(part.max())
        np.maximum(part, 1.0, out=part)
        if unit != 1.0:
            part *= unit
        if draws:
            weighted = np.multiply(part, weights[start:start + step], out=block[:len(part)])
            for k, direction in enumerate(draws):
                np.matmul(weighted, direction.v, out=products[k, start:start + step])
    # NumPy's max keeps a NaN, where Python's would drop it after the first block
    reach = float(peaks[0] if len(peaks) == 1 else np.max(peaks, initial=0.0))
    return reach, [float(np.ravel(d.u) @ products[k]) for k, d in enumerate(draws)]


def _signed(bits: Any) -> Any:
    """16-bit random ``bits`` made, in place, a random sign times an even m in [2^14, 2^15)."""
    np = numpy()
    sign = bits >> 15  # 0 or -1 (all bits set)
    np.bitwise_and(bits, 0x3FFE, out=bits)
    np.bitwise_or(bits, 0x4000, out=bits)  # an even m in [2^14, 2^15)
    np.bitwise_xor(bits, sign, out=bits)  # m, or -(m + 1) where the sign is -1
    return bits


def _bits(size: int, seed: int, python: bool = False) -> Any:
    """``size`` random 16-bit integers, writable, from a generator seeded with ``seed``:
    Python's for a small array (NumPy's costs its import, 10-15 ms, for a few random bytes)
    or with ``python``, NumPy's SFC64's raw 64-bit draws cut in four for a large one (0.5 ms
    for 10^6, where PCG64's take 1.0, Python's 8 and NumPy's ``integers`` 1.3)."""
    np = numpy()
    if python or size < NUMPY_DRAWS:  # a bytearray: the bits are changed in place
        bits = bytearray(random.Random(seed).randbytes(2 * size))
        return np.frombuffer(bits, dtype=np.int16)
    raw = np.random.SFC64(seed).random_raw(-(-size // 4))
    return raw.view(np.int16)[:size]


def check_direction(replayer: DirectionReplayer, node: Node, v: Any, rtol: float, atol: float,
                    method: str) -> GradientCheck:
    """v·g against the finite difference of the output along ``v`` (``replayer`` aimed at
    ``node``)."""
    replayer.along(v)
    try:
        analytic = replayer.dot(v, node.grad)
        return check_node(replayer, Probe(0.0, analytic, node.index), rtol, atol, method,
                          extrapolate=True)
    finally:
        replayer.along(None)


def check_element(replayer: DirectionReplayer, node: Node, flat: int, rtol: float,
                  atol: float, method: str) -> GradientCheck:
    """The element-wise check of one element (flat index) of ``node``'s gradient."""
    np = numpy()
    value = float(np.asarray(node.value).flat[flat])  # .flat: no copy of a broadcast gradient
    grad = float(np.asarray(node.grad).flat[flat])
    return check_node(replayer, Probe(value, grad, flat), rtol, atol, method)


def narrow(replayer: DirectionReplayer, node: Node, v: Any, rtol: float, atol: float,
           method: str) -> dict[int, GradientCheck]:
    """The elements (flat index -> their element-wise verdict) that a failed direction ``v``
    leads to: halves of its support that disagree are split until one element is left (module
    docstring). Empty when no half disagrees (the error is spread thinly over many elements)."""
    np = numpy()
    flat = np.ravel(v.dense() if isinstance(v, Scaled) else v)
    pending = [(0, flat.size)]
    found: dict[int, GradientCheck] = {}
    part = np.zeros_like(flat)
    halves = 0
    while pending and len(found) < NARROWED_ELEMENTS and halves < NARROWING_HALVES:
        start, stop = pending.pop()
        if stop - start == 1:
            verdict = check_element(replayer, node, start, rtol, atol, method)
            if not verdict.ok:
                found[start] = verdict
            continue
        middle = (start + stop) // 2
        for low, high in ((start, middle), (middle, stop)):
            halves += 1
            part[:] = 0.0
            part[low:high] = flat[low:high]
            half = check_direction(replayer, node, part.reshape(np.shape(node.value)), rtol,
                                   atol, method)
            if not half.ok:
                pending.append((low, high))
    return found
