"""Vectorized derivatives of array programs as expressions (``gradcli diff`` of issue 17).

The backward pass runs on symbolic nodes, as the scalar ``diff`` does (symbolic/builder.py):
element-wise ops use the scalar table's own rules (written with ``F``) on ``SymNode``s, the
gradient of a broadcast operand is summed back (``sum(...)`` to a number, ``ones(m)@G`` to a
row), and array ops run their rows' own VJP rules (engine/array_ops.py) on ``GraphArrays``,
the graph form of the rules' namespace: ``xp.matmul`` makes an ``@`` node, ``xp.transpose`` a
``'``, ``xp.eq`` an ``==``. The rules that give numeric gradients give these, so there is no
second list of derivatives. The result is an expression in gradcli's language, with no
indices.

Every symbolic node also carries its numeric value at one point of the given shapes (random,
seeded): that gives every node's shape (which VJP form applies: vector or matrix), and it is
how a test compares the printed gradient with ``eval``'s. Simplifications: the scalar
builder's (x*1, x+0, like terms, ...), plus ``(x')' -> x``, ``x' -> x`` for a vector,
``eye(n)@A -> A``, ``exp(log_softmax(x)) -> softmax(x)``, ``exp(x - logsumexp(x)) ->
softmax(x)`` for a vector, and a gradient of ones spread only when a shape needs it.

A builder for printing (``gradcli diff``) writes prod's gradient as ``prod(x)/x``, as a person
does (undefined where an element is 0, like the scalar diff's ``y*x**(y - 1)``); one for second
derivatives (``exact=True``: ``--hessian``, ``--hvp``) builds the longer form that is exact at
zero elements too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from gradcli.engine import arrays
from gradcli.engine.array_ops import ARRAY_OPS, ArrayOp, index_op
from gradcli.engine.graph import Program, nodes_of
from gradcli.engine.ops import CONST, OPS, VAR
from gradcli.errors import UsageError
from gradcli.symbolic.builder import Builder
from gradcli.symbolic.nodes import SymNode

MUL, ADD, SUB, EXP, EQ = (OPS[name] for name in ("mul", "add", "sub", "exp", "eq"))


# Whether printed derivatives use the forms exact at every point (prod's gradient at a zero
# element): set by ``exact_forms()`` around a second attempt, when ``diff``'s check found the
# short form undefined where the program is defined.
EXACT_FORMS: ContextVar[bool] = ContextVar("EXACT_FORMS", default=False)


@contextmanager
def exact_forms() -> Iterator[None]:
    token = EXACT_FORMS.set(True)
    try:
        yield
    finally:
        EXACT_FORMS.reset(token)


class ArrayBuilder(Builder):
    """The scalar builder, with a value (at the sample point) on every node it makes."""

    def __init__(self, point: Mapping[str, Any], max_nodes: int, exact: bool = False) -> None:
        super().__init__(max_nodes)
        self.point = point
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

    def make(self, op: Any, args: Sequence[Any]) -> SymNode:
        inputs = tuple(self.lift(arg) for arg in args)
        zero = _through_zeros(self, op, inputs)
        if zero is not None:
            return zero
        if isinstance(op, ArrayOp):
            simpler = _array_rewrite(self, op, inputs)
            node = simpler if simpler is not None else self._intern(
                (op.name, op.key, *(node.seq for node in inputs)), op, inputs)
        elif any(node.op is CONST and getattr(node.value, "ndim", 0) for node in inputs):
            # an array literal: the scalar rewrites compare constants with numbers
            node = _times_one(op, inputs) or self._intern(
                (op.name, *(node.seq for node in inputs)), op, inputs)
        elif op is EXP and _softmax_of(inputs[0]) is not None:
            node = _a(self, "softmax", _softmax_of(inputs[0]))
        else:  # the scalar builder's folding and rewrites (element-wise, so they hold here)
            node = super().make(op, inputs)
        if node.inputs:
            node.value = arrays.compute(node, [source.value for source in node.inputs])
        if not isinstance(op, ArrayOp):
            shape = arrays.numpy().broadcast_shapes(*(_shape(source) for source in inputs))
            if _shape(node) != shape:  # a fold (x - x -> 0, x/x -> 1) keeps the shape
                return zeros(self, shape) if _is_zero(node) else spread(self, node, shape)
        return node


def _is_zero(node: SymNode) -> bool:
    return node.op is CONST and not getattr(node.value, "ndim", 0) and node.value == 0.0


def _is_zeros(node: SymNode) -> bool:
    """0, zeros(n), or outer(zeros(m), zeros(n)): what folds keep as zeros of a shape."""
    return _is_zero(node) or node.op is ARRAY_OPS["zeros"] or (
        node.op is ARRAY_OPS["outer"] and all(_is_zeros(part) for part in node.inputs))


# ops whose value is zeros when the operands at these positions are (None: any one of them)
_ABSORBING = {"mul": None, "matmul": None, "outer": None, "dot": None, "div": (0,),
              "neg": (0,), "transpose": (0,), "index": (0,), "sum": (0,), "mean": (0,),
              "tr": (0,)}


def _through_zeros(b: ArrayBuilder, op: Any, inputs: tuple[SymNode, ...]) -> SymNode | None:
    """Zeros of an array shape through a product, a sum or a reduction: ``A@zeros`` is zeros
    of ``A@zeros``'s shape, ``A + zeros`` is ``A`` when A has the sum's shape (the scalar
    builder folds the number 0 alone)."""
    zeros_at = [i for i, node in enumerate(inputs) if _is_zeros(node)]
    if not zeros_at or all(_is_zero(inputs[i]) for i in zeros_at):
        return None
    if op is ARRAY_OPS["outer"] and len(zeros_at) == 2:
        return None  # outer(zeros(m), zeros(n)) is how zeros of a matrix are written
    name = op.name
    if name in _ABSORBING:
        positions = _ABSORBING[name]
        if positions is None or all(i in zeros_at for i in positions):
            values = [node.value for node in inputs]
            return zeros(b, tuple(arrays.numpy().shape(arrays.compute(
                SymNode(op, inputs), values))))
    if name in ("add", "sub") and len(zeros_at) == 1:
        shape = arrays.numpy().broadcast_shapes(*(_shape(node) for node in inputs))
        other = inputs[1 - zeros_at[0]]
        if _shape(other) == shape:
            return other if name == "add" or zeros_at == [1] else b.make(OPS["neg"], (other,))
    return None


def zeros(b: ArrayBuilder, shape: tuple[int, ...]) -> SymNode:
    """Zeros of ``shape`` as a node that keeps its shape (``0*ones(n)`` would fold to 0)."""
    if not shape:
        return b.constant(0.0)
    vectors = [_a(b, "zeros", b.constant(float(n))) for n in shape]
    if len(vectors) > 2:
        raise UsageError("gradcli diff handles numbers, vectors and matrices")
    return vectors[0] if len(vectors) == 1 else _a(b, "outer", *vectors)


def _array_rewrite(b: ArrayBuilder, op: ArrayOp, inputs: tuple[SymNode, ...]) -> SymNode | None:
    """(x')' -> x; x' -> x for a vector or a number; (a@b)' -> b'@a'; inv(s)' -> inv(s) for
    s = a'@a; (-a)' -> -(a');
    sum(-x) -> -sum(x); eye(n)@A -> A; A@eye(n) -> A; ones(n)[k] -> 1."""
    if op.name == "transpose":
        (x,) = inputs
        if x.op is ARRAY_OPS["transpose"]:
            return x.inputs[0]
        if arrays.numpy().ndim(x.value) < 2:
            return x
        if x.op is ARRAY_OPS["outer"]:  # outer(a, b)' -> outer(b, a)
            return _a(b, "outer", x.inputs[1], x.inputs[0])
        if x.op is ARRAY_OPS["matmul"]:  # (a@b)' -> b'@a': like terms meet (tr(X@X@X))
            left, right = x.inputs
            return _a(b, "matmul", _a(b, "transpose", right), _a(b, "transpose", left))
        if x.op is ARRAY_OPS["inv"] and _symmetric(x.inputs[0]):  # inv(X'@X)' -> inv(X'@X)
            return x
        if x.op is OPS["neg"]:  # (-a)' -> -(a')
            return b.make(OPS["neg"], (_a(b, "transpose", x.inputs[0]),))
    if op.name in ("sum", "mean") and inputs[0].op is OPS["neg"]:
        return b.make(OPS["neg"], (_a(b, op.name, inputs[0].inputs[0]),))  # sum(-t) -> -sum(t)
    if op.name == "index" and inputs[0].op is ARRAY_OPS["ones"] and all(
            isinstance(part, int) for part in op.key):
        return b.constant(1.0)  # ones(n)[k]: a stacked operand's share of a spread gradient
    if op.name == "matmul":
        left, right = inputs
        if left.op is ARRAY_OPS["eye"]:
            return right
        if right.op is ARRAY_OPS["eye"]:
            return left
        if arrays.numpy().ndim(left.value) == 1 and arrays.numpy().ndim(right.value) == 2:
            return _a(b, "matmul", _a(b, "transpose", right), left)  # x@A is written A'@x
    return None


def _symmetric(node: SymNode) -> bool:
    """``a'@a`` or ``a@a'``: symmetric by its form."""
    if node.op is not ARRAY_OPS["matmul"]:
        return False
    left, right = node.inputs
    transpose = ARRAY_OPS["transpose"]
    return (left.op is transpose and left.inputs[0] is right) or (
        right.op is transpose and right.inputs[0] is left)


def _times_one(op: Any, inputs: tuple[SymNode, ...]) -> SymNode | None:
    """1*a and a*1 -> a, for an array literal a (an index's gradient of 1)."""
    if op is MUL:
        for one, other in (inputs, inputs[::-1]):
            if one.op is CONST and not getattr(one.value, "ndim", 0) and one.value == 1.0:
                return other
    return None


def _softmax_of(node: SymNode) -> SymNode | None:
    """``x`` when exp(node) is softmax(x): node is log_softmax(x), or x - logsumexp(x) with x
    a vector (a matrix's logsumexp is of every element, its softmax along rows)."""
    if node.op is ARRAY_OPS["log_softmax"]:
        return node.inputs[0]
    if node.op is SUB and node.inputs[1].op is ARRAY_OPS["logsumexp"]:
        x = node.inputs[0]
        if node.inputs[1].inputs[0] is x and len(_shape(x)) == 1:
            return x
    return None


def _shape(node: SymNode) -> tuple[int, ...]:
    return tuple(arrays.numpy().shape(node.value))


def _a(b: ArrayBuilder, name: str, *args: SymNode) -> SymNode:
    return b.make(ARRAY_OPS[name], args)


def _ones(b: ArrayBuilder, n: int) -> SymNode:
    return _a(b, "ones", b.constant(float(n)))


def spread(b: ArrayBuilder, g: SymNode, shape: tuple[int, ...]) -> SymNode:
    """``g`` with ``shape``: a number times ones (a vector), or outer(ones, ones) (a matrix)."""
    if _shape(g) == shape:
        return g
    if len(shape) == 1:
        return b.make(MUL, (g, _ones(b, shape[0])))
    if len(shape) == 2:
        return b.make(MUL, (g, _a(b, "outer", _ones(b, shape[0]), _ones(b, shape[1]))))
    raise UsageError("gradcli diff handles numbers, vectors and matrices")


def unbroadcast(b: ArrayBuilder, g: SymNode, shape: tuple[int, ...]) -> SymNode:
    """The gradient of an operand that broadcasting stretched, summed back to ``shape``."""
    have = _shape(g)
    if have == shape:
        return g
    if not shape:
        return _a(b, "sum", g)
    if len(shape) == 1 and len(have) == 2 and have[1] == shape[0]:
        return _a(b, "matmul", _ones(b, have[0]), g)  # ones(m)@G sums the rows
    if len(have) < len(shape) or all(n == 1 for n in have):  # a number, a row: spread it
        return spread(b, g if len(have) < 2 or have == shape else _a(b, "sum", g), shape)
    if len(have) == 1 and shape == (1, have[0]):  # a row as a 1 x n matrix
        return _a(b, "outer", _ones(b, 1), g)
    if len(have) == 2 and len(shape) == 2 and have[0] == 1 and shape[1] == have[1]:
        return _a(b, "outer", _ones(b, shape[0]), _a(b, "matmul", _ones(b, 1), g))
    raise UsageError(f"gradcli diff cannot yet sum a gradient of shape {have} back to {shape}",
                     hint="gradcli eval gives its numeric gradient")


class GraphArrays:
    """The VJP rules' namespace (engine/array_ops.py's ``Arrays``) on graph nodes: each name
    makes the array program's own nodes, so a rule run here builds its operand's gradient as an
    expression. What the language cannot write is a UsageError naming it."""

    def __init__(self, b: ArrayBuilder, exact: bool) -> None:
        self.b = b
        self.exact = exact

    def shape(self, x: SymNode) -> tuple[int, ...]:
        return _shape(x)

    def _op(self, name: str, *args: Any) -> SymNode:
        return self.b.make(ARRAY_OPS[name], args)

    def matmul(self, a: SymNode, b: SymNode) -> SymNode:
        return self._op("matmul", a, b)

    def outer(self, a: SymNode, b: SymNode) -> SymNode:
        return self._op("outer", a, b)

    def transpose(self, x: SymNode) -> SymNode:
        return self._op("transpose", x)

    def inv(self, x: SymNode) -> SymNode:
        return self._op("inv", x)

    def eye(self, n: int) -> SymNode:
        return self._op("eye", self.b.constant(float(n)))

    def exp(self, x: SymNode) -> SymNode:
        return self.b.make(EXP, (x,))

    def sign(self, x: SymNode) -> SymNode:
        return self.b.make(OPS["sign"], (x,))

    def eq(self, x: Any, y: Any) -> SymNode:
        return self.b.make(EQ, (x, y))

    def sum(self, x: SymNode) -> SymNode:
        return self._op("sum", x)

    def sum_last(self, x: SymNode) -> SymNode:
        """A vector's sum (a number broadcasts as a length-1 axis); a matrix's row sums
        ``x@ones(m)``, spread back over the columns as ``outer(x@ones(m), ones(m))``."""
        shape = _shape(x)
        if len(shape) < 2:
            return self.sum(x) if shape else x
        ones = _ones(self.b, shape[1])
        return self.outer(self.matmul(x, ones), ones)

    def spread(self, g: SymNode, x: SymNode) -> SymNode:
        return g  # broadcasting spreads it; ``spread()`` below where a shape needs it

    def vector(self, x: SymNode) -> SymNode:
        if len(_shape(x)) != 1:
            raise _no_form("outer of operands that are not vectors")
        return x

    def reshape_as(self, v: SymNode, x: SymNode) -> SymNode:
        if _shape(v) != _shape(x):
            raise _no_form("outer of operands that are not vectors")
        return v

    def others_product(self, x: SymNode, out: SymNode) -> SymNode:
        """``prod(x)/x`` to print, unless x has a zero element at the point (the values
        given); exact (``self.exact``, or that zero): with z = (x == 0) and safe = x with
        its zeros replaced by 1, ``(1 - z)*prod(x)/safe`` where x is not 0, and at a zero
        ``prod(safe)`` when it is the only zero, times the other zero's value when there are
        two (0 with derivative 1 along it): every first and second derivative is exact."""
        b = self.b
        if not self.exact and bool(arrays.numpy().all(x.value != 0)):
            return b.make(OPS["div"], (out, x))
        zero = self.eq(x, 0.0)
        nonzero = b.make(SUB, (1.0, zero))
        safe = b.make(ADD, (b.make(MUL, (x, nonzero)), zero))
        rest = self._op("prod", safe)
        zeros = self.sum(zero)
        other_zero = b.make(SUB, (self.sum(b.make(MUL, (zero, x))), x))
        count = b.make(ADD, (self.eq(zeros, 1.0),
                             b.make(MUL, (self.eq(zeros, 2.0), other_zero))))
        at_zero = b.make(MUL, (b.make(MUL, (zero, rest)), count))
        elsewhere = b.make(OPS["div"], (b.make(MUL, (nonzero, out)), safe))
        return b.make(ADD, (elsewhere, at_zero))

    def scatter(self, g: SymNode, key: tuple[Any, ...], x: SymNode) -> SymNode:
        """``g`` placed at ``x[key]`` with constant 0/1 arrays: a one-hot vector ``e`` for a
        whole-number index, a selection matrix ``S`` (``S'@g`` puts a slice back) for a slice."""
        return _scatter(self, g, key, _shape(x))

    def take(self, g: SymNode, position: int) -> SymNode:
        return self.b.make(index_op((position,), f"[{position}]"), (g,))


def _no_form(what: str) -> UsageError:
    return UsageError(f"the gradient of {what} has no form made of array operations",
                      hint="gradcli eval without --hessian/--hvp gives its numeric gradient")


def _scatter(xp: GraphArrays, g: SymNode, key: tuple[Any, ...],
             shape: tuple[int, ...]) -> SymNode:
    np = arrays.numpy()
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
                axes.append(("some", xp.b.constant(picks)))
        else:
            one = np.zeros(n)
            one[part] = 1.0
            axes.append(("one", xp.b.constant(one)))

    def put(axis: tuple[str, Any], v: SymNode) -> SymNode:
        return v if axis[0] == "all" else xp.matmul(axis[1], v)

    if len(shape) == 1:
        kind, array = axes[0]
        return xp.b.make(MUL, (g, array)) if kind == "one" else put(axes[0], g)
    (row_kind, rows), (column_kind, columns) = axes
    if row_kind == "one" and column_kind == "one":
        return xp.b.make(MUL, (g, xp.outer(rows, columns)))
    if row_kind == "one":
        return xp.outer(rows, put(axes[1], g))
    if column_kind == "one":
        return xp.outer(put(axes[0], g), columns)
    spread_rows = put(axes[0], g)
    return spread_rows if column_kind == "all" else xp.matmul(spread_rows,
                                                             xp.transpose(columns))


def gradients(program: Program, shapes: Mapping[str, tuple[int, ...]], wrt: Sequence[str],
              max_nodes: int, point: Mapping[str, Any] | None = None, keep_value: bool = False,
              *, exact: bool = False) -> tuple[dict[str, SymNode], dict[str, Any]]:
    """d(output)/d(each of ``wrt``) as expressions, and the point they carry values at.

    ``shapes`` gives every variable's shape (``()`` for a number); ``point`` the values (the
    first sample point of symbolic/sampling.py when None). The output must be a scalar.
    ``keep_value`` adds the output itself as ``"__value__"``; ``exact`` builds forms exact at
    every point, for second derivatives (``GraphArrays.others_product``).
    """
    np = arrays.numpy()
    if point is None:
        from gradcli.symbolic.sampling import candidate

        point = candidate({name: shapes[name] for name in program.variables}, 0)
    b = ArrayBuilder({n: np.asarray(v, dtype=float) for n, v in point.items()}, max_nodes,
                     exact)
    made: dict[int, SymNode] = {}
    for node in nodes_of([program.output]):
        if node.op is VAR:
            made[id(node)] = b.variable(str(node.name))
        elif node.op is CONST:
            made[id(node)] = b.constant(node.value)
        else:
            made[id(node)] = b.make(node.op, [made[id(s)] for s in node.inputs])
    output = made[id(program.output)]
    if _shape(output):
        raise UsageError(f"gradcli diff of an array program needs a scalar output, not shape "
                         f"{'x'.join(map(str, _shape(output)))}",
                         hint="gradcli eval gives the Jacobian of an array output")
    grads = _backward(b, output)
    found = {"__value__": output} if keep_value else {}
    for name in wrt:
        variable = b.variable(name)
        grad = grads.get(id(variable))
        grad = None if grad is None else unbroadcast(b, grad, shapes[name])
        found[name] = zeros(b, shapes[name]) if grad is None or _is_zero(grad) else grad
    return found, point


def _backward(b: ArrayBuilder, output: SymNode) -> dict[int, SymNode]:
    grads: dict[int, SymNode] = {id(output): b.constant(1.0)}
    for node in reversed(nodes_of([output])):
        g = grads.get(id(node))
        if g is None or not node.inputs or not node.needs_grad:
            continue
        for position, source in enumerate(node.inputs):
            if not source.needs_grad:
                continue
            part = _contribution(b, node, position, g)
            before = grads.get(id(source))
            grads[id(source)] = part if before is None else b.make(ADD, (before, part))
    return grads


def _contribution(b: ArrayBuilder, node: SymNode, position: int, g: SymNode) -> SymNode:
    op = node.op
    source = node.inputs[position]
    if isinstance(op, ArrayOp):  # the row's own rule; an array's gradient given whole
        shape = _shape(node)
        return op.rules[position](b.arrays, spread(b, g, shape) if shape else g, node,
                                  *node.inputs)
    part = b.make(MUL, (g, op.rules[position](*node.inputs, node)))
    return reduce_to(b, part, _shape(node), _shape(source))


def _spread_matrix(b: ArrayBuilder, part: SymNode, shape: tuple[int, ...]) -> SymNode:
    """An (m, 1) column or (1, n) row ``part`` as the (m, n) matrix it broadcasts to: its
    entries repeated along the stretched axis (outer with ones)."""
    rows, columns = _shape(part)
    if (rows, columns) == (1, 1):
        return spread(b, _a(b, "sum", part), shape)
    if columns == 1:  # (m, 1): part@ones(1) is the column as a vector
        return _a(b, "outer", _a(b, "matmul", part, _ones(b, 1)), _ones(b, shape[1]))
    return _a(b, "outer", _ones(b, shape[0]), _a(b, "matmul", _ones(b, 1), part))


def reduce_to(b: ArrayBuilder, part: SymNode, out: tuple[int, ...],
              shape: tuple[int, ...]) -> SymNode:
    """The gradient an operand of ``shape`` receives from ``part``, which stands for
    ``part`` broadcast to the node's shape ``out`` (a number or a row is left to broadcasting):
    every axis the operand was stretched along is summed. Where ``part`` too is constant along
    it, the sum is a count: ``sum(X@W + b)`` gives b the gradient ``4*ones(2)`` for 4 rows."""
    rank = len(out)
    have = (1,) * (rank - len(_shape(part))) + _shape(part)
    want = (1,) * (rank - len(shape)) + shape
    count = math.prod(n for n, p, s in zip(out, have, want, strict=True) if p == 1 and s == 1)
    if count != 1:
        part = b.make(MUL, (b.constant(float(count)), part))
    summed = [i for i in range(rank) if have[i] > 1 and want[i] == 1]
    if not summed and rank == 2 and len(_shape(part)) == 2 and _shape(part) != shape:
        return _spread_matrix(b, part, shape)  # a column or a row stretched to the operand
    if not summed:
        return part if len(_shape(part)) <= len(shape) else unbroadcast(b, part, shape)
    kept = [i for i in range(rank) if have[i] > 1 and want[i] > 1]
    if not kept:
        return _a(b, "sum", part)
    if rank == 2 and kept == [1]:
        return _a(b, "matmul", _ones(b, have[0]), part)  # ones(m)@G: the column sums
    if rank == 2 and kept == [0]:  # the row sums as a column, for an (m, 1) operand
        return _a(b, "outer", _a(b, "matmul", part, _ones(b, have[1])), _ones(b, 1))
    raise UsageError(f"gradcli diff cannot yet sum a gradient of shape {_shape(part)} back "
                     f"to {shape}", hint="gradcli eval gives its numeric gradient")


# --- shapes, and the derivatives printed --------------------------------------------------------

def read_shape(name: str, text: str) -> tuple[int, ...]:
    """``3x2`` -> (3, 2), ``4`` -> (4,), ``scalar`` -> (); anything else a UsageError."""
    text = text.strip().lower()
    if text in ("scalar", "()", ""):
        return ()
    parts = text.split("x")
    if len(parts) > 2 or not all(part.isdigit() and int(part) > 0 for part in parts):
        raise UsageError(f"cannot read the shape {text!r} of {name}",
                         hint=f"write e.g. --shape {name}=3 (a vector), {name}=3x2 (a matrix) "
                              f"or {name}=scalar")
    return tuple(int(part) for part in parts)


def program_shapes(program: Program, given: Mapping[str, tuple[int, ...]],
                   values: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """Every variable's shape: ``--shape``, else a given value's, else the program's default;
    a variable with none of them is a UsageError naming it."""
    np = arrays.numpy()
    shapes: dict[str, tuple[int, ...]] = {}
    for name in program.variables:
        if name in given:
            shapes[name] = given[name]
        elif name in values:
            shapes[name] = tuple(np.shape(np.asarray(values[name], dtype=float)))
        elif name in program.defaults:
            shapes[name] = tuple(np.shape(program.defaults[name]))
        else:
            raise UsageError(f"no shape for {name}",
                             hint=f"give it: --shape {name}=3x2 (or =3 for a vector, =scalar "
                                  f"for a number), or a value --{name} \"[1, 2, 3]\"")
    unknown = [name for name in given if name not in program.variables]
    if unknown:
        raise UsageError(f"--shape {unknown[0]}: the program has no variable {unknown[0]}",
                         hint=f"its variables: {', '.join(program.variables)}")
    return shapes


def array_derivatives(program: Program, shapes: Mapping[str, tuple[int, ...]],
                      wrt: Sequence[str] | None, max_nodes: int,
                      fmt: str = "text", given: Mapping[str, Any] | None = None
                      ) -> dict[str, str]:
    """d(output)/d(each of ``wrt``, default every variable) printed in ``fmt``."""
    from gradcli.symbolic.printing import to_text

    names = list(wrt) if wrt else list(program.variables)
    unknown = [name for name in names if name not in program.variables]
    if unknown:
        raise UsageError(f"{', '.join(unknown)} is not a variable of the expression",
                         hint=f"its variables: {', '.join(program.variables) or 'none'}")
    found, _ = _sampled(program, shapes, names, max_nodes, given=given)
    printer = to_text if fmt == "text" else to_latex
    return {name: printer(node) for name, node in found.items()}


def _sampled(program: Program, shapes: Mapping[str, tuple[int, ...]], names: list[str],
             max_nodes: int, keep_value: bool = False, given: Mapping[str, Any] | None = None
             ) -> tuple[dict[str, SymNode], dict[str, Any]]:
    """``gradients`` at the given values, else at a sample point where the program is defined
    (symbolic/sampling.py): the values give shapes, so a point outside a domain (``log(x - 2)``
    at x = 1) is retried elsewhere."""
    from gradcli.symbolic.sampling import defined_point

    return defined_point(
        {name: shapes[name] for name in program.variables}, given,
        lambda point: gradients(program, shapes, names, max_nodes, point, keep_value))[0]


_LATEX_CALLS = {"tr": r"\operatorname{tr}", "det": r"\det", "logdet": r"\log\det",
                "sum": r"\operatorname{sum}", "mean": r"\operatorname{mean}",
                "softmax": r"\operatorname{softmax}", "logsumexp": r"\operatorname{logsumexp}",
                "log_softmax": r"\operatorname{log\_softmax}", "sign": r"\operatorname{sign}"}


def to_latex(output: SymNode) -> str:
    """Matrix notation: ``A^\\top``, ``\\odot`` between arrays, ``\\otimes`` for outer, a
    product of matrices side by side, ``X^{-1}``, ``\\operatorname{tr}``, ``\\mathbf{1}_{n}``,
    ``I_{n}``; operands in full (each node's text once per use)."""
    from gradcli.symbolic.printing import LATEX

    # id -> (text, how tightly it binds: 0 a sum, 1 a product, 2 a power, 3 an atom)
    texts: dict[int, tuple[str, int]] = {}

    def arg(node: SymNode, at_least: int) -> str:
        text, precedence = texts[id(node)]
        return text if precedence >= at_least else rf"\left({text}\right)"

    for node in nodes_of([output]):
        op = node.op
        if op is VAR:
            texts[id(node)] = (str(node.name), 3)
        elif op is CONST:
            text = LATEX.number(node.value) if not getattr(node.value, "ndim", 0) else (
                str(node.value.tolist()))
            texts[id(node)] = (text, 3 if not text.startswith("-") else 0)
        else:
            texts[id(node)] = _latex_node(node, arg, LATEX)
    return texts[id(output)][0]


def _latex_node(node: SymNode, arg: Callable[[SymNode, int], str], latex: Any) -> tuple[str, int]:
    op, inputs = node.op, node.inputs
    name = op.name
    array = [bool(getattr(source.value, "ndim", 0)) for source in inputs]
    if name in ("add", "sub"):
        return f"{arg(inputs[0], 0)} {'+' if name == 'add' else '-'} {arg(inputs[1], 1)}", 0
    if name == "mul":
        joint = r" \odot " if all(array) else r" \cdot "
        return arg(inputs[0], 1) + joint + arg(inputs[1], 2 if all(array) else 1), 1
    if name == "div":
        return rf"\frac{{{arg(inputs[0], 0)}}}{{{arg(inputs[1], 0)}}}", 2
    if name == "neg":
        return f"-{arg(inputs[0], 1)}", 0
    if name == "pow":
        hadamard = r"\circ " if array[0] else ""
        return f"{arg(inputs[0], 3)}^{{{hadamard}{arg(inputs[1], 0)}}}", 2
    if name == "matmul":
        return f"{arg(inputs[0], 1)} {arg(inputs[1], 2)}", 1
    if name == "transpose":
        return arg(inputs[0], 3) + r"^\top", 2
    if name == "outer":
        return rf"{arg(inputs[0], 2)} \otimes {arg(inputs[1], 2)}", 1
    if name == "inv":
        return arg(inputs[0], 3) + "^{-1}", 2
    if name == "index":
        return f"{arg(inputs[0], 3)}_{{{op.postfix[1:-1]}}}", 3
    if name == "eq":  # Iverson's bracket: 1 where it holds
        return rf"\left[{arg(inputs[0], 1)} = {arg(inputs[1], 1)}\right]", 3
    if name in ("ones", "eye"):
        size = latex.number(inputs[0].value)
        return (rf"\mathbf{{1}}_{{{size}}}" if name == "ones" else f"I_{{{size}}}"), 3
    if name in ("norm", "norm1"):
        return rf"\left\lVert {arg(inputs[0], 0)} \right\rVert_{{{1 if name == 'norm1' else 2}}}", 3
    if name == "dot":
        return rf"\left\langle {arg(inputs[0], 0)}, {arg(inputs[1], 0)} \right\rangle", 3
    if name in _LATEX_CALLS:
        return rf"{_LATEX_CALLS[name]}\left({arg(inputs[0], 0)}\right)", 3
    if getattr(op, "symbol", None) and len(inputs) == 2:  # comparisons, and, or
        return latex.infix(op, arg(inputs[0], 1), arg(inputs[1], 1)), 0
    if name == "logical_not":
        return latex.prefix(op, arg(inputs[0], 3)), 0
    texts = [arg(source, 0) for source in inputs]
    return latex.call(op, texts), 3


# --- a NumPy function ---------------------------------------------------------------------------

def to_numpy(program: Program, shapes: Mapping[str, tuple[int, ...]],
             wrt: Sequence[str] | None, max_nodes: int,
             given: Mapping[str, Any] | None = None) -> str:
    """Source of ``def f(variables): return value, {name: gradient}``, NumPy only
    (symbolic/numpy_export.py): one line per node of the value and the gradients (shared nodes
    computed once)."""
    from gradcli.symbolic.numpy_export import NumpyWriter

    names = list(wrt) if wrt else list(program.variables)
    found, _ = _sampled(program, shapes, names, max_nodes, keep_value=True, given=given)
    output = found.pop("__value__")
    writer = NumpyWriter(list(program.variables))
    writer.add([output, *found.values()])
    gradients = ", ".join(f"{name!r}: {writer[node]}" for name, node in found.items())
    return writer.source(f"Value and gradients of {program.source!r} (gradcli diff).",
                         f"{writer[output]}, {{{gradients}}}")
