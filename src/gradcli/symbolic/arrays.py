"""Array programs' nodes as expressions: a builder whose nodes carry values, and the VJP rules'
namespace on them (``GraphArrays``: ``xp.matmul`` makes an ``@`` node), which
symbolic/jacobians.py runs backward.

Every node carries its value at one point of the given shapes: that gives its shape (which VJP
form applies) and lets a test compare the printed gradient with ``eval``'s. Beside the scalar
builder's rewrites it writes ``(x')' -> x``, ``eye(n)@A -> A``, ``exp(log_softmax(x)) ->
softmax(x)`` and zeros of a shape through products and sums. A builder for printing writes
prod's gradient as ``prod(x)/x``, as a person does; one for second derivatives (``exact``) the
longer form exact at zero elements too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from functools import partial
from typing import Any

from gradcli.engine import arrays, failures, masks
from gradcli.engine.graph import Node, nodes_of
from gradcli.engine.ops import CONST, OPS, Op, ShapeError, index_op
from gradcli.engine.ops.row import LINEAR_EACH, LINEAR_FIRST
from gradcli.errors import NumericError, UsageError
from gradcli.symbolic.builder import Builder
from gradcli.symbolic.nodes import SymNode

MUL, ADD, SUB, EXP = (OPS[name] for name in ("mul", "add", "sub", "exp"))


# Whether printed derivatives use the forms exact at every point (prod's gradient at a zero
# element): set by ``diff`` around a second attempt, when its check found the short form
# undefined where the program is defined.
EXACT_FORMS: ContextVar[bool] = ContextVar("EXACT_FORMS", default=False)


class ArrayBuilder(Builder):
    """The scalar builder, with a value (at the sample point) on every node it makes."""

    def __init__(self, point: Mapping[str, Any], max_nodes: int, exact: bool = False) -> None:
        super().__init__(max_nodes)
        self.point = point
        # nodes without a value at the point (where, operands, value, error): an error only
        # where the outputs read them (``raise_live``), not in a branch not taken
        self.failed: list[tuple[Node, list[Any], Any, NumericError]] = []
        # the VJP rules' namespace on these nodes
        self.arrays = GraphArrays(self, exact or EXACT_FORMS.get())

    def variable(self, name: str) -> SymNode:
        node = super().variable(name)
        node.value = self.point[name]
        return node

    def lift(self, value: Any) -> SymNode:
        if getattr(value, "ndim", 0):  # an array coefficient a rewrite made: -([1, 2]*x)
            return self.constant(value)
        return super().lift(value)

    def constant(self, value: Any, name: str | None = None) -> SymNode:
        if getattr(value, "ndim", 0):  # an array literal: one node per distinct array
            key = ("array", value.shape, value.tobytes())
            return self._intern(key, CONST, (), value, name)
        return super().constant(value, name)

    def _computed(self, node: SymNode) -> Any:
        """The node's value (NaN where it has none: kept in ``failed``); shapes that do not fit
        here are a derivative form gone wrong, not the user's program (checked before), so the
        message names no internal expression."""
        args = [source.value for source in node.inputs]
        try:
            return arrays.compute(node, args)
        except NumericError as error:
            value = arrays.masked_value(node, args)
            self.failed.append((node, args, value, error))
            return value
        except UsageError as error:
            raise UsageError("gradcli diff built a derivative form whose shapes do not fit",
                             hint="gradcli eval gives the numeric derivatives; please report "
                                  "this program") from error

    def raise_live(self, outputs: Sequence[SymNode]) -> None:
        """The error of the first node without a value that ``outputs`` read where it has none
        (``masks.live_nodes``: log(x) in where(x > 0, log(x), 0) at x = -1 is not read)."""
        if not self.failed:
            return
        nodes = nodes_of(outputs)
        for index, node in enumerate(nodes):  # liveness works by position
            node.index = index
        among = set(nodes)
        failures.raise_live_failure([failure for failure in self.failed if failure[0] in among],
                                 masks.live_nodes(nodes, list(outputs)))

    def contribution(self, node: Node, position: int, grad: SymNode) -> SymNode:
        """The op's own VJP rule on graph nodes (``GraphArrays``), broadcasting included."""
        return node.op.vjp(self.arrays, position, grad, node, *node.inputs)

    def make(self, op: Any, args: Sequence[Any]) -> SymNode:
        inputs = tuple(self.lift(arg) for arg in args)
        zero = _through_zeros(self, op, inputs) or _times_ones(op, inputs)
        if zero is not None:
            return zero
        if op.is_array:
            simpler = _array_rewrite(self, op, inputs)
            node = simpler if simpler is not None else self._intern(
                (op.name, op.key, *(node.seq for node in inputs)), op, inputs)
        elif any(node.op is CONST and getattr(node.value, "ndim", 0) for node in inputs):
            # an array literal: the scalar rewrites compare constants with numbers
            node = _times_one(op, inputs) or self.raw(op, inputs)
        elif op is EXP and _softmax_of(inputs[0]) is not None:
            node = op_node(self, "softmax", _softmax_of(inputs[0]))
        else:  # the scalar builder's folding and rewrites (element-wise, so they hold here)
            node = super().make(op, inputs)
        if node.inputs:
            node.value = self._computed(node)
        if not op.is_array:
            shape = op.out_shape(*(source.value for source in inputs))
            if shape_of(node) != shape:  # a fold (x - x -> 0, x/x -> 1) keeps the shape
                return zeros(self, shape) if is_zero(node) else spread(self, node, shape)
        return node


def is_zero(node: SymNode) -> bool:
    return node.op is CONST and not getattr(node.value, "ndim", 0) and node.value == 0.0


def _is_zeros(node: SymNode) -> bool:
    """0, zeros(n), or outer(zeros(m), zeros(n)): what folds keep as zeros of a shape."""
    return is_zero(node) or node.op is OPS["zeros"] or (
        node.op is OPS["outer"] and all(_is_zeros(part) for part in node.inputs))


def _through_zeros(b: ArrayBuilder, op: Any, inputs: tuple[SymNode, ...]) -> SymNode | None:
    """Zeros of an array shape through a product, a sum or a reduction: ``A@zeros`` is zeros,
    ``A + zeros`` is ``A`` (the scalar builder folds the number 0 alone)."""
    zeros_at = [i for i, node in enumerate(inputs) if _is_zeros(node)]
    if not zeros_at or all(is_zero(inputs[i]) for i in zeros_at):
        return None
    if op is OPS["outer"] and len(zeros_at) == 2:
        return None  # outer(zeros(m), zeros(n)) is how zeros of a matrix are written
    try:
        shape = op.out_shape(*(node.value for node in inputs))
    except (ShapeError, IndexError):
        return None  # the node's evaluation says what does not fit
    name = op.name
    # A row linear in its operands (the op table's ``linear``) is zeros where they are: a
    # product where any one is, a quotient where its first is; a one-operand row, an index too.
    if op.linear == LINEAR_EACH or (0 in zeros_at and (op.linear == LINEAR_FIRST or (
            op.arity == 1 and (op.linear or name == "index")))):
        return zeros(b, shape)
    if name in ("add", "sub") and len(zeros_at) == 1:
        other = spread(b, inputs[1 - zeros_at[0]], shape)
        return other if name == "add" or zeros_at == [1] else b.make(OPS["neg"], (other,))
    return None


def zeros(b: ArrayBuilder, shape: tuple[int, ...]) -> SymNode:
    """Zeros of ``shape`` as a node that keeps its shape (``0*ones(n)`` would fold to 0)."""
    if not shape:
        return b.constant(0.0)
    vectors = [op_node(b, "zeros", b.constant(float(n))) for n in shape]
    if len(vectors) > 2:
        raise UsageError("gradcli diff handles numbers, vectors and matrices")
    return vectors[0] if len(vectors) == 1 else op_node(b, "outer", *vectors)


def _array_rewrite(b: ArrayBuilder, op: Op, inputs: tuple[SymNode, ...]) -> SymNode | None:
    """(x')' -> x; x' -> x for a vector or a number; (a@b)' -> b'@a'; inv(a'@a)' -> inv(a'@a);
    (-a)' -> -(a'); sum(-x) -> -sum(x); eye(n)@A -> A; A@eye(n) -> A; ones(n)[k] -> 1."""
    if op.name == "transpose":
        (x,) = inputs
        if x.op is OPS["transpose"]:
            return x.inputs[0]
        if arrays.numpy().ndim(x.value) < 2:
            return x
        if x.op is OPS["outer"]:  # outer(a, b)' -> outer(b, a)
            return op_node(b, "outer", x.inputs[1], x.inputs[0])
        if x.op is OPS["matmul"]:  # (a@b)' -> b'@a': like terms meet (tr(X@X@X))
            left, right = x.inputs
            return op_node(b, "matmul", op_node(b, "transpose", right),
                           op_node(b, "transpose", left))
        if x.op is OPS["inv"] and _symmetric(x.inputs[0]):  # inv(X'@X)' -> inv(X'@X)
            return x
        if x.op is OPS["neg"]:  # (-a)' -> -(a')
            return b.make(OPS["neg"], (op_node(b, "transpose", x.inputs[0]),))
    if op.name in ("sum", "mean") and inputs[0].op is OPS["neg"]:
        return b.make(OPS["neg"], (op_node(b, op.name, inputs[0].inputs[0]),))  # sum(-t) -> -sum(t)
    if op.name == "index" and inputs[0].op is OPS["ones"] and all(
            isinstance(part, int) for part in op.key):
        return b.constant(1.0)  # ones(n)[k]: a stacked operand's share of a spread gradient
    if op.name == "matmul":
        left, right = inputs
        if left.op is OPS["eye"]:
            return right
        if right.op is OPS["eye"]:
            return left
        if arrays.numpy().ndim(left.value) == 1 and arrays.numpy().ndim(right.value) == 2:
            return op_node(b, "matmul", op_node(b, "transpose", right), left)  # x@A is written A'@x
    return None


def _symmetric(node: SymNode) -> bool:
    """``a'@a`` or ``a@a'``: symmetric by its form."""
    if node.op is not OPS["matmul"]:
        return False
    left, right = node.inputs
    transpose = OPS["transpose"]
    return (left.op is transpose and left.inputs[0] is right) or (
        right.op is transpose and right.inputs[0] is left)


def _times_one(op: Any, inputs: tuple[SymNode, ...]) -> SymNode | None:
    """1*a and a*1 -> a, for an array literal a (an index's gradient of 1)."""
    if op is MUL:
        for one, other in (inputs, inputs[::-1]):
            if one.op is CONST and not getattr(one.value, "ndim", 0) and one.value == 1.0:
                return other
    return None


def _times_ones(op: Any, inputs: tuple[SymNode, ...]) -> SymNode | None:
    """a*ones(n) -> a where a already has the product's shape (eye(n)*ones(n))."""
    if op is MUL:
        for one, other in (inputs, inputs[::-1]):
            if one.op is OPS["ones"] and shape_of(other)[-1:] == shape_of(one):
                return other
    return None


def _softmax_of(node: SymNode) -> SymNode | None:
    """``x`` when exp(node) is softmax(x): log_softmax(x), or x - logsumexp(x) of a vector."""
    if node.op is OPS["log_softmax"]:
        return node.inputs[0]
    if node.op is SUB and node.inputs[1].op is OPS["logsumexp"]:
        x = node.inputs[0]
        if node.inputs[1].inputs[0] is x and len(shape_of(x)) == 1:
            return x
    return None


def shape_of(node: SymNode) -> tuple[int, ...]:
    return tuple(arrays.numpy().shape(node.value))


def op_node(b: ArrayBuilder, name: str, *args: Any) -> SymNode:
    return b.make(OPS[name], args)


def ones_vector(b: ArrayBuilder, n: int) -> SymNode:
    return op_node(b, "ones", b.constant(float(n)))


def spread(b: ArrayBuilder, g: SymNode, shape: tuple[int, ...]) -> SymNode:
    """``g`` with ``shape``: a number times ones (a vector), or outer(ones, ones) (a matrix)."""
    if shape_of(g) == shape:
        return g
    if len(shape) == 1:
        return b.make(MUL, (g, ones_vector(b, shape[0])))
    if len(shape) == 2:
        rows, columns = ones_vector(b, shape[0]), ones_vector(b, shape[1])
        return b.make(MUL, (g, op_node(b, "outer", rows, columns)))
    raise UsageError("gradcli diff handles numbers, vectors and matrices")


class GraphArrays:
    """The VJP rules' namespace (ops/xp.py's ``Arrays``) on graph nodes: a rule run here builds
    its gradient as an expression; what the language cannot write is a UsageError."""

    def __init__(self, b: ArrayBuilder, exact: bool) -> None:
        self.b = b
        self.exact = exact

    # What ``Arrays`` names as an op of the table: that op's node (a number operand lifted:
    # ``eye(3)``), as ``NumPyArrays`` takes NumPy's function of the name. Only these: another
    # name is no VJP rule's, and a rule asking for it must fail, not quietly build a node.
    TABLE_OPS = frozenset(("matmul", "outer", "transpose", "inv", "eye", "exp", "sign", "eq",
                           "sum"))

    def __getattr__(self, name: str) -> Callable[..., SymNode]:
        """The node-building function of one of ``TABLE_OPS``."""
        if name not in self.TABLE_OPS:
            raise AttributeError(name)
        made = partial(op_node, self.b, name)
        setattr(self, name, made)  # looked up once: the next call finds it without this call
        return made

    def shape(self, x: SymNode) -> tuple[int, ...]:
        return shape_of(x)

    def shares(self, x: SymNode, out: SymNode) -> SymNode:
        return self.exp(x - out)  # written as the formula: exp(x - logsumexp(x))

    def sum_last(self, x: SymNode) -> SymNode:
        """A vector's sum; a matrix's row sums spread back, ``outer(x@ones(m), ones(m))``."""
        shape = shape_of(x)
        if len(shape) < 2:
            return self.sum(x) if shape else x
        ones = ones_vector(self.b, shape[1])
        return self.outer(self.matmul(x, ones), ones)

    def spread(self, g: SymNode, x: SymNode) -> SymNode:
        return g  # broadcasting spreads it; ``spread()`` below where a shape needs it

    def vector(self, x: SymNode) -> SymNode:
        if len(shape_of(x)) != 1:
            raise _no_form("outer of operands that are not vectors")
        return x

    def reshape_as(self, v: SymNode, x: SymNode) -> SymNode:
        if shape_of(v) != shape_of(x):
            raise _no_form("outer of operands that are not vectors")
        return v

    def others_product(self, x: SymNode, out: SymNode) -> SymNode:
        """``prod(x)/x``, unless exact (or x has a zero at the point): with z = (x == 0) and
        safe = x with its zeros made 1, ``(1 - z)*prod(x)/safe`` off zeros, and at a zero
        ``prod(safe)`` times the other zero's value if there is one: exact to second order."""
        b = self.b
        if not self.exact and bool(arrays.numpy().all(x.value != 0)):
            return b.make(OPS["div"], (out, x))
        zero = self.eq(x, 0.0)
        nonzero = b.make(SUB, (1.0, zero))
        safe = b.make(ADD, (b.make(MUL, (x, nonzero)), zero))
        rest = op_node(self.b, "prod", safe)
        zeros = self.sum(zero)
        other_zero = b.make(SUB, (self.sum(b.make(MUL, (zero, x))), x))
        count = b.make(ADD, (self.eq(zeros, 1.0),
                             b.make(MUL, (self.eq(zeros, 2.0), other_zero))))
        at_zero = b.make(MUL, (b.make(MUL, (zero, rest)), count))
        elsewhere = b.make(OPS["div"], (b.make(MUL, (nonzero, out)), safe))
        return b.make(ADD, (elsewhere, at_zero))

    def scatter(self, g: SymNode, key: tuple[Any, ...], x: SymNode) -> SymNode:
        """``g`` at ``x[key]`` by constant 0/1 arrays: one-hot for an index, a selection
        matrix ``S`` for a slice (``S'@g`` puts it back)."""
        np, shape = arrays.numpy(), shape_of(x)
        if not 1 <= len(shape) <= 2:
            raise _no_form("an index of an array of more than 2 dimensions")
        parts = list(key) + [(None, None)] * (len(shape) - len(key))
        axes = []  # per axis: ("one", e) for an index, ("some", S') or ("all", None) for a slice
        for part, n in zip(parts, shape, strict=True):
            if isinstance(part, tuple):
                chosen = range(n)[slice(*part)]
                if len(chosen) == n:
                    axes.append(("all", None))
                else:
                    picks = np.zeros((n, len(chosen)))
                    picks[list(chosen), range(len(chosen))] = 1.0
                    axes.append(("some", self.b.constant(picks)))
            else:
                one = np.zeros(n)
                one[part] = 1.0
                axes.append(("one", self.b.constant(one)))

        def put(axis: tuple[str, Any], v: SymNode) -> SymNode:
            return v if axis[0] == "all" else self.matmul(axis[1], v)

        if len(shape) == 1:
            kind, array = axes[0]
            return self.b.make(MUL, (g, array)) if kind == "one" else put(axes[0], g)
        (row_kind, rows), (column_kind, columns) = axes
        if row_kind == "one" and column_kind == "one":
            return self.b.make(MUL, (g, self.outer(rows, columns)))
        if row_kind == "one":
            return self.outer(rows, put(axes[1], g))
        if column_kind == "one":
            return self.outer(put(axes[0], g), columns)
        spread_rows = put(axes[0], g)
        return spread_rows if column_kind == "all" else self.matmul(spread_rows,
                                                                   self.transpose(columns))

    def take(self, g: SymNode, position: int) -> SymNode:
        return self.b.make(index_op((position,), f"[{position}]"), (g,))

    def whole(self, g: SymNode, out: SymNode) -> SymNode:
        shape = shape_of(out)
        return spread(self.b, g, shape) if shape else g  # an array's gradient given whole

    def unbroadcast(self, part: SymNode, out: SymNode, x: SymNode) -> SymNode:
        return reduce_to(self.b, part, shape_of(out), shape_of(x))


def _no_form(what: str) -> UsageError:
    return UsageError(f"the gradient of {what} has no form made of array operations",
                      hint="gradcli eval without --hessian/--hvp gives its numeric gradient")


# --- gradients summed back over broadcast axes ----------------------------------------------------

def _spread_matrix(b: ArrayBuilder, part: SymNode, shape: tuple[int, ...]) -> SymNode:
    """An (m, 1) column or (1, n) row ``part`` as the (m, n) matrix it broadcasts to."""
    rows, columns = shape_of(part)
    if (rows, columns) == (1, 1):
        return spread(b, op_node(b, "sum", part), shape)
    if columns == 1:  # (m, 1): part@ones(1) is the column as a vector
        column = op_node(b, "matmul", part, ones_vector(b, 1))
        return op_node(b, "outer", column, ones_vector(b, shape[1]))
    rows = ones_vector(b, shape[0])
    return op_node(b, "outer", rows, op_node(b, "matmul", ones_vector(b, 1), part))


def reduce_to(b: ArrayBuilder, part: SymNode, out: tuple[int, ...],
              shape: tuple[int, ...]) -> SymNode:
    """The gradient an operand of ``shape`` receives from ``part`` (broadcast to the node's
    shape ``out``): summed along every stretched axis, a count where ``part`` too is constant
    along it (``sum(X@W + b)`` gives b ``4*ones(2)`` for 4 rows)."""
    rank = len(out)
    have = (1,) * (rank - len(shape_of(part))) + shape_of(part)
    want = (1,) * (rank - len(shape)) + shape
    count = math.prod(n for n, p, s in zip(out, have, want, strict=True) if p == 1 and s == 1)
    if count != 1:
        part = b.make(MUL, (b.constant(float(count)), part))
    summed = [i for i in range(rank) if have[i] > 1 and want[i] == 1]
    if not summed and rank == 2 and len(shape_of(part)) == 2 and have != want:
        return _spread_matrix(b, part, shape)  # a column or a row stretched to the operand
    if not summed:
        return part if len(shape_of(part)) <= len(shape) else unbroadcast(b, part, shape)
    kept = [i for i in range(rank) if have[i] > 1 and want[i] > 1]
    if not kept:
        return op_node(b, "sum", part)
    if rank == 2 and kept == [1]:
        return op_node(b, "matmul", ones_vector(b, have[0]), part)  # ones(m)@G: column sums
    if rank == 2 and kept == [0]:  # the row sums as a column, for an (m, 1) operand
        row_sums = op_node(b, "matmul", part, ones_vector(b, have[1]))
        return op_node(b, "outer", row_sums, ones_vector(b, 1))
    raise UsageError(f"gradcli diff cannot yet sum a gradient of shape {shape_of(part)} back "
                     f"to {shape}", hint="gradcli eval gives its numeric gradient")


def unbroadcast(b: ArrayBuilder, g: SymNode, shape: tuple[int, ...]) -> SymNode:
    """The gradient of an operand that broadcasting stretched, summed back to ``shape``."""
    have = shape_of(g)
    if have == shape:
        return g
    if not shape:
        return op_node(b, "sum", g)
    if len(shape) == 1 and len(have) == 2 and have[1] == shape[0]:
        return op_node(b, "matmul", ones_vector(b, have[0]), g)  # ones(m)@G sums the rows
    if len(have) < len(shape) or all(n == 1 for n in have):  # a number, a row: spread it
        return spread(b, g if len(have) < 2 or have == shape else op_node(b, "sum", g), shape)
    if len(have) == 1 and shape == (1, have[0]):  # a row as a 1 x n matrix
        return op_node(b, "outer", ones_vector(b, 1), g)
    if len(have) == 2 and len(shape) == 2 and have[0] == 1 and shape[1] == have[1]:
        return _spread_matrix(b, g, shape)  # a 1 x n row stretched to m rows
    raise UsageError(f"gradcli diff cannot yet sum a gradient of shape {have} back to {shape}",
                     hint="gradcli eval gives its numeric gradient")
