"""Forward and backward passes of array programs: NumPy values, broadcasting, VJPs.

A program comes here only when it has an array in it (a literal, an array op, an array value);
scalar programs never import this module. The nodes and their order are graph.py's; only the
values are NumPy arrays (0-d for scalars), and every operand's gradient is its row's ``Op.vjp``.
"""

from __future__ import annotations

import math
import numbers
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from gradcli.engine.failures import (
    derivative_error,
    index_text,
    not_finite,
    raise_live_failure,
    shape_error,
)
from gradcli.engine.graph import (
    Node,
    Program,
    describe,
    is_masked,
    node_text,
)
from gradcli.engine.masks import live_nodes
from gradcli.engine.notation import shape_text
from gradcli.engine.ops import NONE, NUMPY, SAME, Op, ShapeError
from gradcli.engine.ops import numpy as numpy  # hessian, derivative_truth: arrays.numpy()
from gradcli.errors import GradcliError, NumericError, UsageError, shortened
from gradcli.limits import MAX_ARRAY_DIMS, MAX_ARRAY_ELEMENTS, check_dims


def as_array(name: str, value: Any) -> Any:
    """A variable's value as a float array; a UsageError says what is wrong with it."""
    return checked_array(value, f"the value of {name}")


def checked_array(value: Any, subject: str, *, finite: bool = True,
                  describe_element: Callable[[Any], str] = repr) -> Any:
    """``value`` (nested lists of numbers, or an array) as a float array, whoever read it: an
    option's text (``--W "[[1, 2], [3, 4]]"``), a values file, a check file, an array file or
    the Python API. A UsageError says what is wrong with ``subject`` (``the value of W``) and
    where: more dimensions than an array may have, rows of different shapes, an element that
    is not a number (``describe_element`` says what it is) or, with ``finite``, not finite; no
    elements, or too many. Binding leaves the elements' finiteness to ``require_finite``, or
    to the check of the product that alone reads a large matrix (``bind``)."""
    if isinstance(value, list):
        _require_rectangular(value, subject, describe_element)
        try:
            array = np.array(value, dtype=float)
        except OverflowError:  # a JSON integer of 400 digits
            raise UsageError(f"{subject} has a number too large for a float (the largest is "
                             "about 1.8e308)", hint="replace it, or leave that element out"
                             ) from None
    else:
        check_dims(subject, getattr(value, "ndim", 0))
        try:
            array = np.asarray(value)
        except (ValueError, TypeError):  # a tuple of ragged rows
            raise UsageError(f"{subject} is not a rectangular array of numbers",
                             hint="every row needs the same length, e.g. [[1, 2], [3, 4]]"
                             ) from None
        if array.dtype.kind not in "iuf":  # bools, strings, objects
            raise UsageError(f"{subject} holds {array.dtype} values, not numbers",
                             hint="use an array of floats or integers")
        array = array.astype(float, copy=False)
    if not array.size:
        raise UsageError(f"{subject} has no elements",
                         hint="arrays have at least one element, e.g. [1, 2, 3]")
    if array.size > MAX_ARRAY_ELEMENTS:
        raise UsageError(f"{subject} has {array.size:,} elements, more than "
                         f"{MAX_ARRAY_ELEMENTS:,}", hint="use a smaller array")
    if finite:
        require_finite(subject, array)
    return array


def _require_rectangular(items: list, subject: str,
                         describe_element: Callable[[Any], str]) -> None:
    """Nested lists, every level of one shape, of real numbers only (NumPy would read True as
    1 and a ragged row as an object), no deeper than an array may be. Breadth-first and without
    recursion: the first problem named is the shallowest, however deep the lists nest."""
    pending = deque([(items, ())])
    while pending:
        current, index = pending.popleft()
        first = _shape(current[0]) if current else ()
        # the depth read down the first elements: too deep is refused before any row is
        # queued (rows shared, or a list that holds itself, would multiply the queue)
        check_dims(subject, len(index) + 1 + len(first))
        for i, item in enumerate(current):
            if not first and (type(item) is float or type(item) is int):
                continue  # the common elements, told without a call
            shape = _shape(item)
            if shape != first:
                this = f"has shape {shape_text(shape)}" if shape else "is a number"
                that = f"has {shape_text(first)}" if first else "is a number"
                raise UsageError(f"{subject} is not rectangular: element "
                                 f"{index_text((*index, i))} {this}, element "
                                 f"{index_text((*index, 0))} {that}",
                                 hint="every row needs the same length, e.g. [[1, 2], [3, 4]]")
            if isinstance(item, list):
                pending.append((item, (*index, i)))
            elif isinstance(item, bool) or not isinstance(item, numbers.Real):
                raise UsageError(f"{subject} has {shortened(describe_element(item))} at "
                                 f"{index_text((*index, i))}, not a number",
                                 hint="give numbers (not strings or bools), e.g. [[1, 2], [3, 4]]")


def _shape(item: Any) -> tuple[int, ...]:
    """The shape of nested lists, read down their first elements; one level past the deepest an
    array may be is enough to tell (and ends a list that holds itself)."""
    dims: list[int] = []
    while isinstance(item, list) and len(dims) <= MAX_ARRAY_DIMS:
        dims.append(len(item))
        if not item:
            break
        item = item[0]
    return tuple(dims)


def plain(value: Any, copy: bool = False) -> Any:
    """A result's number or array, for the caller to keep: a 0-d array (or a NumPy number) as a
    float, an array as a float array the caller may write to (a reduction's gradient is a
    read-only broadcast view); with ``copy``, one of its own even where it is writeable."""
    if not np.ndim(value):
        return float(value)
    array = np.asarray(value, dtype=float)
    return array.copy() if copy or not array.flags.writeable else array


def all_finite(array: Any) -> bool:
    """Whether every element is finite: a finite sum has no inf or nan in it (one reduction, no
    array of flags); a sum that overflows looks at each element. A small array's flags cost less
    than the ``errstate`` of the sum (x, b and t of ``W@x + b - t``)."""
    if array.size < 4096:
        return bool(np.isfinite(array).all())
    return math.isfinite(_total(array)) or bool(np.all(np.isfinite(array)))


def require_finite(subject: str, array: Any) -> None:
    """A UsageError naming the first element of ``array`` that is not finite, and where (one
    pass when all are; every element's flag only to find the first)."""
    if not all_finite(array):
        index = np.unravel_index(np.flatnonzero(~np.isfinite(array))[0], array.shape)
        at = f" at {index_text(tuple(map(int, index)))}" if index else ""
        raise UsageError(f"{subject} has {array[index]}{at}, not a finite number",
                         hint="replace it, or leave that element out")


def _total(array: Any) -> float:
    """The sum of the elements; a C-ordered matrix's as BLAS's product with ones, twice as fast
    as NumPy's pairwise sum (every evaluation checks its values' finiteness)."""
    with np.errstate(over="ignore", invalid="ignore"):  # large finite elements may overflow
        if array.ndim < 2 or not array.flags.c_contiguous:
            return float(array.sum())
        columns = array.shape[-1]
        return float(np.sum(array.reshape(-1, columns) @ np.ones(columns)))


_IN_PRODUCTS_SIZE = 1 << 16


def bind(program: Program, values: dict[str, Any]) -> None:
    """Every variable from ``values`` or the program's defaults, every leaf as a float array,
    checked finite -- but for one of ``_IN_PRODUCTS_SIZE`` elements or more that only matrix
    products use (W of ``W@x``): a product's result, which ``compute`` checks, holds every
    element of it, so summing W would read it again for nothing. ``forward`` then says its
    error, and an earlier variable's first, as binding would have."""
    unchecked: list[Node] = []
    try:
        for node in program.nodes:
            if node.inputs:
                continue
            if node.name in program.variables and node is program.variables[node.name]:
                given = values[node.name] if node.name in values else program.defaults[node.name]
                node.value = checked_array(given, f"the value of {node.name}",
                                           finite=False)
                if node.value.size >= _IN_PRODUCTS_SIZE:
                    unchecked.append(node)
                else:
                    require_finite(f"the value of {node.name}", node.value)
            else:
                node.value = np.asarray(node.value, dtype=float)
    except UsageError:
        _require_finite_leaves(unchecked)
        raise
    products = _used_in_products_only(program, unchecked) if unchecked else set()
    _require_finite_leaves([node for node in unchecked if node.index not in products])


def _used_in_products_only(program: Program, leaves: list[Node]) -> set[int]:
    """The indices of ``leaves`` that are operands of matrix products only (not outputs)."""
    used = {node.index: True for node in leaves}
    for node in (program.output, *program.outputs):
        used[node.index] = False
    for node in program.nodes:
        for source in node.inputs:
            if source.index in used and node.op.name != "matmul":
                used[source.index] = False
    return {index for index, only in used.items() if only}


def _require_finite_leaves(nodes: list[Node]) -> None:
    for node in nodes:
        if not node.inputs and node.name:
            require_finite(f"the value of {node.name}", node.value)


# --- forward ------------------------------------------------------------------------------------

def forward(nodes: list[Node], outputs: list[Node] | None = None) -> Any:
    """Every node's value in topological order; the output's (the last node). A failure first
    says a variable whose value is not finite (one that ``bind`` left to the products).

    With a conditional, as the scalar path's ``graph.forward_masked``, element by element: a
    node's failure is kept (NaN where it has no value) and raised only where it is live
    (``live_nodes``) for ``outputs`` (default: the last node): log(x) in where(x > 0, log(x), 0)
    is no error at an element x[i] = -1."""
    masked = is_masked(nodes)
    failed: list[tuple[Node, list[Any], Any, NumericError]] = []
    try:
        with raising():
            for node in nodes:
                if node.inputs:
                    args = [source.value for source in node.inputs]
                    try:
                        node.value = _fast(node, args, True)
                    except NumericError as error:
                        if not masked:
                            raise
                        node.value = masked_value(node, args)
                        failed.append((node, args, node.value, error))
                        continue
                    if node.op.name == "matmul":
                        _zeros_hide_nothing(node, args)
        if failed:
            raise_live_failure(failed, live_nodes(nodes, outputs))
    except GradcliError:
        _require_finite_leaves([node for node in nodes if not node.inputs])
        raise
    return nodes[-1].value


def masked_value(node: Node, args: list[Any]) -> Any:
    """What a masked pass (``forward``, ``replay.Moved``) keeps of a node that failed: its
    value with NaN (or inf) where it has none (NumPy's own form, complex operands too: a
    complex-step replay's), or NaN whole where its op refused (a domain) or has no such form."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(_apply(node, args, False, False))
    except (NumericError, ArithmeticError, TypeError, ValueError, np.linalg.LinAlgError):
        return np.full(node.op.out_shape(*args), np.nan)


def _zeros_hide_nothing(node: Node, args: list[Any]) -> None:
    """A large variable's finiteness, left to this product, is checked here when the other operand
    has a zero: a BLAS that skips a zero's terms (reference BLAS does) drops ``inf * 0``."""
    for position, source in enumerate(node.inputs):
        if (not source.inputs and source.name and source.value.size >= _IN_PRODUCTS_SIZE
                and not args[1 - position].all()):
            require_finite(f"the value of {source.name}", source.value)


def compute(node: Node, args: list[Any]) -> Any:
    """``node``'s op on array ``args``; errors name the node (shapes, domains, singularity).

    The operands are finite, so a value that is not finite raises a NumPy floating-point flag on
    its way: the fast path runs with the flags raising (``_RAISE``) and checks nothing else; a
    flag sends it to the careful path, which recomputes with them off and names the first
    element that is not finite.
    """
    with raising():
        return _fast(node, args, True)


def raising() -> Any:
    """The floating-point flags of ``compute``'s fast path, set once around many ``recompute``."""
    return np.errstate(**_RAISE)


def recompute(node: Node, args: list[Any], complex_step: bool = False) -> Any:
    """``compute`` for a replay, inside ``raising()``: the operands have the shapes the
    evaluation computed with (a replay moves values, never shapes), so the shape rule it
    passed is not asked again; a domain, an op's error and a value that is not finite are.
    A complex step always takes the careful path."""
    return _careful_value(node, args, True, False) if complex_step else _fast(node, args, False)


def _fast(node: Node, args: list[Any], guard: bool) -> Any:  # under _RAISE already
    try:
        value = np.asarray(_apply(node, args, False, guard))
        if node.op.is_array and not math.isfinite(value.sum()):
            raise FloatingPointError  # LAPACK (inv, det) raises no NumPy flag
        return value
    except FloatingPointError:
        return _careful_value(node, args, False, guard)


def _careful_value(node: Node, args: list[Any], complex_step: bool, guard: bool) -> Any:
    with np.errstate(all="ignore"):
        value = np.asarray(_apply(node, args, complex_step, guard))
        if not np.all(np.isfinite(value)):
            raise not_finite(node, node.op, args, value)
    return value


_RAISE = {"over": "raise", "divide": "raise", "invalid": "raise", "under": "ignore"}


def _apply(node: Node, args: list[Any], complex_step: bool, guard: bool) -> Any:
    op = node.op
    if guard and not (op.shape is None and _one_shape(args)):
        _guard_shape(node, args)
    if op.is_array:
        return _array_op(node, op, args, complex_step)
    return _elementwise(node, op, args, complex_step)


def _one_shape(args: list[Any]) -> bool:
    """Operands of one shape, numbers (0-d) aside: broadcasting keeps it, and each operand passed
    the guard (or was read as a value), so an element-wise row's value needs no shape rule (most
    rows' case, ``x**2`` and ``2*x`` too)."""
    shapes = {getattr(arg, "shape", None) for arg in args}
    shapes.discard(())
    return None not in shapes and len(shapes) < 2


def value_shape(program: Program, shapes: Mapping[str, tuple[int, ...]]) -> tuple[int, ...]:
    """The program's value's shape when its variables have ``shapes``, from the shape rules alone:
    where shapes do not fit, the UsageError that evaluating says."""
    names = {node.index: name for name, node in program.variables.items()}
    stand_ins: list[Any] = []  # per node, a view of one zero with the node's shape
    for node in program.nodes:
        if node.inputs:
            args = [stand_ins[source.index] for source in node.inputs]
            stand_ins.append(np.broadcast_to(0.0, _guard_shape(node, args)))
        else:
            stand_ins.append(np.broadcast_to(0.0, shapes[names[node.index]])
                             if node.index in names else node.value)
    return tuple(np.shape(stand_ins[program.output.index]))


def _guard_shape(node: Node, args: list[Any]) -> tuple[int, ...]:
    """The row's shape rule, before computing: shapes it cannot take, an empty value and one over
    ``MAX_ARRAY_ELEMENTS`` (``outer(x, x)`` of a long x: not memory exhausted) are usage errors."""
    op = node.op
    try:
        shape = op.out_shape(*args)
    except ShapeError as error:
        problem = str(error)
        if problem.startswith("needs "):  # a shape the op cannot take
            raise UsageError(f"{op.name} {problem} in {describe(node)}",
                             hint=f"gradcli functions says what {op.name} takes") from None
        raise shape_error(node, args, problem) from None
    except IndexError:
        raise UsageError(f"index out of range in {describe(node)}: "
                         f"{node_text(node.inputs[0])} has shape {shape_text(args[0].shape)}",
                         hint="indices count from 0; -1 is the last element") from None
    if len(shape) > MAX_ARRAY_DIMS:  # [a, b, ...] adds an axis
        check_dims(describe(node), len(shape))
    elements = math.prod(shape)
    if not elements:  # an empty slice: every reduction of it would be a convention
        raise UsageError(f"{describe(node)} is empty (shape {shape_text(shape)})",
                         hint="arrays have at least one element: check the slice's ends")
    if elements > MAX_ARRAY_ELEMENTS:
        raise UsageError(f"{describe(node)} would have {elements:,} elements, more than "
                         f"{MAX_ARRAY_ELEMENTS:,}", hint="use smaller arrays")
    return shape


def _array_op(node: Node, op: Op, args: list[Any], complex_step: bool) -> Any:
    problem = op.domain(np, *args) if op.domain is not None else None
    if problem is not None:
        raise NumericError(f"{problem} in {describe(node)}")
    try:
        return op.apply_complex(np, *args) if complex_step else op.forward(np, *args)
    except ValueError as error:  # what a shape rule let through
        raise shape_error(node, args, str(error)) from None
    except np.linalg.LinAlgError:
        raise NumericError(f"the matrix is singular in {describe(node)}") from None


def _elementwise(node: Node, op: Op, args: list[Any], complex_step: bool) -> Any:
    if not complex_step:
        return op.apply_vector(*args)
    if op.domain is not None:  # the real parts decide the domain, as on the scalar path
        reals = [arg.real for arg in args]
        real = np.asarray(op.apply_vector(*reals))
        if not np.all(np.isfinite(real)):
            raise not_finite(node, op, reals, real)
    form = op.complex
    if form is SAME:
        return op.forward(*args)
    if form is NONE:
        raise op.no_complex_form()
    try:
        # np.asarray: on 0-d operands (a scalar variable) frompyfunc gives a plain number
        return np.asarray(np.frompyfunc(form, op.arity, 1)(*args), dtype=complex)
    except (ArithmeticError, ValueError):  # cmath's overflow: no finite complex value
        return np.full(op.out_shape(*args), complex(np.nan))


# --- backward -----------------------------------------------------------------------------------

def backward(nodes: list[Node]) -> None:
    """Reverse-mode gradients of the scalar output into every node (each of the node's shape)."""
    grads = backward_from(nodes, nodes[-1], np.ones(np.shape(nodes[-1].value)))
    for node in nodes:
        found = grads.get(node.index)
        node.grad = found if found is not None else np.zeros(np.shape(node.value))


def backward_from(nodes: list[Node], output: Node, seed: Any) -> dict[int, Any]:
    """The gradient of ``sum(seed * output)`` for every node upstream of ``output`` that needs one,
    by node index. As in ``compute``, only a floating-point flag leads to the careful path that
    names the element (``xp`` raises one for BLAS and LAPACK results, which set none)."""
    grads: dict[int, Any] = {output.index: seed}
    taken = live_nodes(nodes, [output])  # what is in a branch not taken passes nothing on
    with raising():
        for node in reversed(nodes[:output.index + 1]):
            g = grads.get(node.index)
            if g is None or not node.inputs or not node.needs_grad:
                continue
            mine = True if taken is None else taken[node.index]
            args = [source.value for source in node.inputs]
            for position, source in enumerate(node.inputs):
                if source.needs_grad and (taken is None or taken[source.index] is not False):
                    known = grads.get(source.index)
                    try:
                        part = contribution(node, args, position, g, mine)
                        grads[source.index] = part if known is None else known + part
                    except FloatingPointError:
                        grads[source.index] = _careful(node, args, position, g, known, mine)
    return grads


def _careful(node: Node, args: list[Any], position: int, g: Any, known: Any,
             live: Any = True) -> Any:
    """One contribution with the flags off, checked element by element."""
    with np.errstate(all="ignore"):
        part = contribution(node, args, position, g, live)
        if not np.all(np.isfinite(part)):
            raise derivative_error(node, position, part)
        total = part if known is None else known + part
        if not np.all(np.isfinite(total)):
            raise NumericError(f"the gradient overflows in {describe(node.inputs[position])}")
    return total


def contribution(node: Node, args: list[Any], position: int, g: Any, live: Any = True) -> Any:
    """The gradient that ``node`` passes to its operand ``position`` (the operand's shape);
    with ``live`` (a ``live_nodes`` array), from the node's live elements only (``live_slope``)."""
    op = node.op
    if live is not True and not op.is_array:
        with np.errstate(all="ignore"):
            part = NUMPY.unbroadcast(g * live_slope(node, args, position, live), node.value,
                                     args[position])
        if not np.all(np.isfinite(part)):
            raise derivative_error(node, position, part)
        return part
    try:  # FloatingPointError is not caught: backward's careful path handles it
        part = op.vjp(NUMPY, position, g, node.value, *args)
    except (ValueError, ZeroDivisionError, OverflowError):
        if op.is_array:
            raise
        part = np.full(np.shape(args[position]), np.inf)  # a partial a float function refused
    return np.asarray(part, dtype=float)


def live_slope(node: Node, args: list[Any], position: int, live: Any) -> Any:
    """The derivative of the element-wise ``node`` by its operand ``position`` at each of its
    elements, computed at the live ones only (``live``, a ``live_nodes`` array) and 0 at the
    others: a branch not taken may lie where the rule has no value (dgamma's pole, sqrt'(-1)),
    and passes nothing on. Not finite where the rule has no value at a live element."""
    shape = np.shape(node.value)
    slope = np.zeros(shape)
    taken = [np.broadcast_to(arg, shape)[live] for arg in args]
    try:
        with np.errstate(all="ignore"):
            slope[live] = node.op.rules[position](*taken, node.value[live])
    except (ValueError, ZeroDivisionError, OverflowError):  # a float function refused
        slope[live] = np.inf
    return slope
