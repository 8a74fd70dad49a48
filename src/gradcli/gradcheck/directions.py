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
axis the columns) is (u v^T) * max(1, |x|), u and v drawn alike (``replay.Scaled``): m + n
draws, not m n, its dot with the gradient u^T ((s * g) v) with s * g made once, and a matrix
product moved by one product with s (``Op.scaled``), where a dense one is formed, drawn and
multiplied whole. It still sees any wrong element: u^T (s * e) v is zero with probability 0
for an error e that is not, and two wrong elements cancel only if their errors do exactly
times the draws; ``narrow`` forms the direction to halve it. The draws come from a generator
seeded with ``DIRECTION_SEED``, the node's index and the direction's number, so the same
program at the same point is always checked along the same directions.

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

DIRECTION_SEED = 30
NARROWED_ELEMENTS = 8  # failing elements followed down to their index
NARROWING_HALVES = 256  # halves checked at most while narrowing one direction down
NUMPY_DRAWS = 1 << 16  # a direction of this many elements or more is drawn by NumPy's generator


class Probe:
    """What the step policies perturb (``steps.Perturbed``): one element of an array node, or
    the distance along a direction (value 0, gradient v·g)."""

    __slots__ = ("grad", "index", "value")

    def __init__(self, value: float, grad: float, index: int) -> None:
        self.value, self.grad, self.index = value, grad, index


class DirectionReplayer(ElementReplayer):
    """``ElementReplayer`` that, once ``along`` has set a direction, replays f(x + t v) for the
    value t instead of one element moved (``steps.Replays``), through ``replay.Moved``: the
    nodes linear in x move by their value at v, computed once per direction. The direction
    and x + t v live in buffers made once per aimed node: a fresh array of 10^6 elements costs
    more in page faults than the arithmetic that fills it."""

    def __init__(self, nodes: list[Node]) -> None:
        super().__init__(nodes)
        self.direction: Moved | None = None  # the replays along a direction; None: one element
        self.drawn: Any = None  # the buffer ``draw`` fills
        self.buffer: Any = None  # x + t v
        # max(1, |x_i|) / 2^15, flat: each element's step scale per bit (a scaled direction's:
        # max(1, |x_i|) in x's shape, u and v carry the 2^-15)
        self.scale: Any = None
        self.reach = 0.0  # |x + t v| <= reach + |t| * max(1, reach): max|v_i| <= max(1, |x|)
        self.scaled = False  # directions (u v^T) * scale (a large matrix): ``replay.Scaled``
        self.weighted: Any = None  # scale * grad, rows by columns: <(u v^T) * scale, grad>

    def aim(self, node: Node) -> int:
        np = numpy()
        self.direction, self.drawn, self.buffer, self.weighted = None, None, None, None
        elements = super().aim(node)
        self.scale = np.abs(np.ravel(node.value))  # flat, so that a 0-d value is an array too
        self.reach = float(np.max(self.scale))
        np.maximum(self.scale, 1.0, out=self.scale)
        shape = np.shape(node.value)
        self.scaled = len(shape) >= 2 and self.scale.size > COLUMN_MAX_ELEMENTS
        if self.scaled:  # u and v carry the draws' unit: no pass over the matrix
            self.scale = self.scale.reshape(shape)
        else:
            self.scale *= 1.0 / 32768  # a 16-bit draw's unit: once here, not on every draw
        return elements

    def along(self, direction: Any) -> None:
        """Move the aimed node along ``direction`` (its shape) from now on; None: one element."""
        if direction is None:
            self.direction = None
            return
        if self.buffer is None:
            self.buffer = numpy().empty(numpy().shape(self.target.value))
        self.direction = self.moving(direction, self.buffer)

    def draw(self, k: int) -> Any:
        """The ``k``-th random direction of the aimed node: a random sign and magnitude in
        [0.5, 1) times max(1, |x_i|) per element (module docstring), from 16 random bits each
        (a sign and 13 bits of magnitude) of a generator seeded by the node and ``k``. The
        direction is drawn for every check of a large array, so its bits are made in place on
        16-bit integers (a pass costs a fifth of one over floats) and one pass makes floats."""
        np = numpy()
        seed = (DIRECTION_SEED << 40) | (self.target.index << 8) | k
        if self.scaled:  # (u v^T) * scale, u and v drawn alike: m + n draws (module docstring)
            shape = np.shape(self.scale)
            rows = self.scale.size // shape[-1]
            drawn = _signed(_bits(rows + shape[-1], seed)) * (1.0 / 32768)
            return Scaled(drawn[:rows].reshape(shape[:-1]), drawn[rows:], self.scale)
        if self.drawn is None:
            self.drawn = np.empty(np.shape(self.target.value))
        flat = self.drawn.reshape(-1)
        np.copyto(flat, _signed(_bits(self.scale.size, seed)))  # to floats, then a product
        np.multiply(flat, self.scale, out=flat)  # of floats: faster than one mixed
        return self.drawn

    def dot(self, v: Any, grad: Any) -> float:
        """v·grad, summed pairwise in the replays' buffer (a reduction's gradient is often a
        broadcast view, which a dot product would first copy whole)."""
        np = numpy()
        if isinstance(v, Scaled):  # u^T ((scale * grad) v), scale * grad made once per node
            if self.weighted is None:
                self.weighted = np.multiply(self.scale, grad).reshape(-1, np.size(v.v))
            return float(np.ravel(v.u) @ (self.weighted @ v.v))
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


def _signed(bits: Any) -> Any:
    """16-bit random ``bits`` made, in place, a random sign times an even m in [2^14, 2^15)."""
    np = numpy()
    sign = bits >> 15  # 0 or -1 (all bits set)
    np.bitwise_and(bits, 0x3FFE, out=bits)
    np.bitwise_or(bits, 0x4000, out=bits)  # an even m in [2^14, 2^15)
    np.bitwise_xor(bits, sign, out=bits)  # m, or -(m + 1) where the sign is -1
    return bits


def _bits(size: int, seed: int) -> Any:
    """``size`` random 16-bit integers, writable, from a generator seeded with ``seed``:
    Python's for a small array (NumPy's costs its import, 10-15 ms, for a few random bytes),
    NumPy's SFC64's raw 64-bit draws cut in four for a large one (0.5 ms for 10^6, where PCG64's
    take 1.0, Python's 8 and NumPy's ``integers`` 1.3)."""
    np = numpy()
    if size < NUMPY_DRAWS:  # a bytearray: the bits are changed in place
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
        return check_node(replayer, Probe(0.0, analytic, node.index), rtol, atol, method)
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
