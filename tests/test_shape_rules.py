"""Every row's shape rule (``Op.out_shape``) against the shape of the value NumPy computes: the
rule says the value's shape before it is computed (the size guard, ``gradcli diff``'s zeros), so
where it accepts operands the computed value has that shape, and where it refuses them it says
so with a ``ShapeError``. The element-wise rows share one rule, checked against NumPy's own
``broadcast_shapes`` on random shapes (hypothesis)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcli.engine.ops import ROWS, ShapeError, index_op, stack_op
from gradcli.engine.ops.row import broadcast

SHAPES = [(), (1,), (3,), (2,), (3, 3), (2, 3), (3, 2), (1, 3), (3, 1)]


def _operand(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Values every row takes: positive, below 1 (acos, atanh), a square matrix invertible."""
    values = np.random.default_rng(seed).uniform(0.1, 0.4, shape)
    if len(shape) == 2 and shape[0] == shape[1]:
        values += np.eye(shape[0])
    return values


def _computed(op, operands):
    if op.is_array:
        return op.forward(np, *operands)
    return op.apply_vector(*operands)


@pytest.mark.parametrize("op", [op for op in ROWS if op.name not in ("var", "const")
                                and not op.constant_args], ids=lambda op: op.name)
def test_a_rows_shape_rule_is_the_shape_of_its_value(op):
    accepted = 0
    for shapes in itertools.product(SHAPES, repeat=op.arity):
        operands = [_operand(shape, seed) for seed, shape in enumerate(shapes)]
        try:
            shape = op.out_shape(*operands)
        except ShapeError:
            continue
        accepted += 1
        with np.errstate(all="ignore"):
            assert np.shape(_computed(op, operands)) == shape, shapes
    assert accepted, f"{op.name} takes none of {SHAPES}"


@pytest.mark.parametrize(("shapes", "needs"), [
    (("matmul", (2, 3), (2,)), ""), (("matmul", (), (3,)), ""),
    (("dot", (3,), (2,)), "needs two arrays of one shape, not 3 and 2"),
    (("tr", (2, 3)), "needs a square matrix, not 2x3"),
    (("inv", ()), "needs a square matrix, not a scalar"),
    (("softmax", ()), "needs a vector or a matrix (along its last axis), not a number"),
    (("add", (2,), (3,)), ""),
])
def test_a_shape_rule_refuses_what_its_row_cannot_take(shapes, needs):
    from gradcli.engine.ops import OPS

    name, *operands = shapes
    with pytest.raises(ShapeError) as refused:
        OPS[name].out_shape(*(np.zeros(shape) for shape in operands))
    assert str(refused.value) == needs


def test_constructors_index_and_stack_rows_say_their_shapes():
    from gradcli.engine.ops import OPS

    for name, make in (("zeros", np.zeros), ("ones", np.ones), ("eye", np.eye)):
        n = np.array(4.0)
        assert OPS[name].out_shape(n) == np.shape(OPS[name].forward(np, n)) == make(4).shape
    matrix = np.arange(12.0).reshape(3, 4)
    for key, text in (((1,), "[1]"), (((None, None), 0), "[:, 0]"), (((1, 3),), "[1:3]"),
                      ((-1, (0, 2)), "[-1, 0:2]")):
        op = index_op(key, text)
        assert op.out_shape(matrix) == np.shape(op.forward(np, matrix)), text
    with pytest.raises(IndexError):
        index_op((5,), "[5]").out_shape(matrix)
    assert stack_op(3).out_shape(*[matrix] * 3) == (3, 3, 4)
    with pytest.raises(ShapeError, match="different shapes: 3x4, 4"):
        stack_op(2).out_shape(matrix, np.zeros(4))


@given(st.lists(st.lists(st.integers(1, 3), max_size=3).map(tuple), min_size=1, max_size=3))
def test_broadcasting_is_numpys(shapes):
    try:
        expected = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ShapeError):
            broadcast(*shapes)
    else:
        assert broadcast(*shapes) == expected
