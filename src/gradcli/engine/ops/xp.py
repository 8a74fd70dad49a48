"""``xp``, the namespace that VJP rules are written against, and ``NUMPY``, its NumPy form; the
very same rule runs on graph nodes with symbolic/arrays.py's ``GraphArrays`` (``gradcli diff``,
``--hessian``, ``--hvp``).
"""

from __future__ import annotations

import math

from gradcli.engine.ops.row import numpy as _np

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:  # Arrays is for the type checker only
    from typing import Any, Protocol

    class Arrays(Protocol):
        """What a VJP rule may call besides ``+ - * /`` and unary ``-``."""

        def shape(self, x: Any) -> tuple[int, ...]: ...
        def matmul(self, a: Any, b: Any) -> Any: ...
        def outer(self, a: Any, b: Any) -> Any: ...
        def transpose(self, x: Any) -> Any: ...
        def inv(self, x: Any) -> Any: ...
        def eye(self, n: int) -> Any: ...
        def exp(self, x: Any) -> Any: ...
        def shares(self, x: Any, out: Any) -> Any: ...  # exp(x - logsumexp(x)): its gradient
        def sign(self, x: Any) -> Any: ...
        def eq(self, x: Any, y: Any) -> Any: ...  # 1 where x == y, else 0 (its derivative is 0)
        def sum(self, x: Any) -> Any: ...  # of every element: a number
        def sum_last(self, x: Any) -> Any: ...  # along the last axis, kept as an axis of 1
        def spread(self, g: Any, x: Any) -> Any: ...  # a reduction's gradient at each element
        def vector(self, x: Any) -> Any: ...  # the elements as a vector (ravel)
        def reshape_as(self, v: Any, x: Any) -> Any: ...
        def others_product(self, x: Any, out: Any) -> Any: ...  # prod's gradient, exact at 0
        def scatter(self, g: Any, key: tuple[Any, ...], x: Any) -> Any: ...  # g at x[key]; 0
        def take(self, g: Any, position: int) -> Any: ...  # g[position] along the first axis
        def whole(self, g: Any, out: Any) -> Any: ...  # g as the gradient of all of out
        def unbroadcast(self, part: Any, out: Any, x: Any) -> Any: ...  # summed to x's shape


def _flagged(value: Any) -> Any:
    """``value``, a BLAS or LAPACK result, which sets no floating-point flag: under
    ``errstate(over="raise")`` (arrays.backward_from) one that is not finite raises
    FloatingPointError as a ufunc would, so the engine need not sum every rule's result."""
    if _np().geterr()["over"] == "raise" and not math.isfinite(value.sum()):
        raise FloatingPointError(f"{type(value).__name__} that is not finite")
    return value


class NumPyArrays:
    """The ``Arrays`` namespace on NumPy arrays: the numeric gradients. Where NumPy has the
    name that ``Arrays`` gives (shape, outer, transpose, eye, exp, sign, sum), NumPy's own."""

    def __getattr__(self, name: str) -> Any:
        found = getattr(_np(), name)
        setattr(self, name, found)  # looked up once: the next call finds it without this call
        return found

    def matmul(self, a: Any, b: Any) -> Any:
        return _flagged(_np().matmul(a, b))

    def inv(self, x: Any) -> Any:
        return _flagged(_np().linalg.inv(x))

    def shares(self, x: Any, out: Any) -> Any:
        """Normalised by the sum itself: the rounding of ``out`` does not reach the shares."""
        np = _np()
        scaled = np.exp(x - x.real.max())  # the largest is exactly 1: no overflow, no loss
        return scaled / np.sum(scaled)

    def eq(self, x: Any, y: Any) -> Any:
        return (x == y).astype(float)

    def sum_last(self, x: Any) -> Any:
        # a vector's sum as a number: NumPy reuses temporaries faster than with a length-1 array
        return _np().sum(x, axis=-1, keepdims=True) if x.ndim > 1 else x.sum()

    def spread(self, g: Any, x: Any) -> Any:
        """The number ``g`` at every element: a read-only view of it (no new array), strides 0,
        as ``broadcast_to`` makes it, but without its general rule's Python, which costs as much
        as a small program's step (mean's gradient, every evaluation)."""
        number = _np().asarray(g)
        view = _np().ndarray(x.shape, number.dtype, number, 0, (0,) * x.ndim)
        view.flags.writeable = False  # one element under every index
        return view

    def vector(self, x: Any) -> Any:
        return _np().ravel(x)

    def reshape_as(self, v: Any, x: Any) -> Any:
        np = _np()
        return np.reshape(v, np.shape(x))

    def others_product(self, x: Any, out: Any) -> Any:
        """The whole product over each element, in mantissas and exponents (``scaled_product``);
        one zero element gets the product of the rest, two or more make all 0. A complex
        perturbation takes exclusive cumulative products from both sides (a zero element needs
        no division)."""
        np = _np()
        flat = x.ravel()
        if np.iscomplexobj(x):
            left = np.concatenate(([1.0], np.cumprod(flat[:-1])))
            right = np.concatenate((np.cumprod(flat[::-1][:-1])[::-1], [1.0]))
            return (left * right).reshape(x.shape)
        flat = flat.astype(float)
        zeros = np.flatnonzero(flat == 0)
        others = np.zeros(flat.shape)
        if zeros.size == 0:
            whole, exponent = scaled_product(np, flat)
            mantissas, exponents = np.frexp(flat)
            others = _ldexp(np, whole / mantissas, exponent - exponents.astype(np.int64))
        elif zeros.size == 1:
            rest = np.delete(flat, zeros[0])
            others[zeros[0]] = _ldexp(np, *scaled_product(np, rest))
        return others.reshape(x.shape)

    def scatter(self, g: Any, key: tuple[Any, ...], x: Any) -> Any:
        np = _np()
        grad = np.zeros(x.shape, dtype=np.result_type(g, float))
        grad[subscript_of(key)] = g
        return grad

    def take(self, g: Any, position: int) -> Any:
        return g[position]

    def whole(self, g: Any, out: Any) -> Any:
        return g  # the engine's gradients have their node's shape already

    def unbroadcast(self, part: Any, out: Any, x: Any) -> Any:
        """``part`` summed over the axes that broadcasting added or stretched: x's shape."""
        np = _np()
        grad, shape = np.asarray(part, dtype=float), np.shape(x)
        if grad.shape == shape:
            return grad
        extra = grad.ndim - len(shape)
        if extra > 0:
            grad = grad.sum(axis=tuple(range(extra)))
        stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
        if stretched:
            grad = grad.sum(axis=stretched, keepdims=True)
        return grad.reshape(shape)


NUMPY = NumPyArrays()

# |exponent| past this is inf or 0 whatever the mantissa (and stays within NumPy's ldexp int).
_EXPONENT_CLAMP = 4096


def scaled_product(np: Any, flat: Any) -> tuple[Any, int]:
    """The product of the real vector ``flat`` as (mantissa, exponent): mantissas multiplied
    pairwise and renormalised (``frexp``), exponents added as integers, so no partial product
    overflows or underflows (1e-200 * 1e-200 * 1e200 is 1e-200, not 0)."""
    mantissas, exponents = np.frexp(flat)
    exponent = int(exponents.sum(dtype=np.int64))
    while mantissas.size > 1:
        if mantissas.size % 2:
            mantissas = np.append(mantissas, 1.0)
        mantissas, exponents = np.frexp(mantissas[0::2] * mantissas[1::2])
        exponent += int(exponents.sum(dtype=np.int64))
    return (mantissas[0] if mantissas.size else np.float64(1.0)), exponent


def _ldexp(np: Any, mantissa: Any, exponent: Any) -> Any:
    """mantissa * 2**exponent, rounded once; inf or 0 past the floats."""
    with np.errstate(over="ignore", under="ignore"):
        return np.ldexp(mantissa, np.clip(exponent, -_EXPONENT_CLAMP, _EXPONENT_CLAMP))


def scaled_prod(np: Any, x: Any) -> Any:
    """prod's forward: ``scaled_product`` (NumPy's product for a complex perturbation)."""
    values = np.asarray(x)
    if np.iscomplexobj(values):
        return np.prod(values)
    return _ldexp(np, *scaled_product(np, values.ravel().astype(float)))


def subscript_of(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """An index row's key as a NumPy subscript: ``(start, stop)`` pairs are slices."""
    return tuple(slice(*part) if isinstance(part, tuple) else part for part in key)
