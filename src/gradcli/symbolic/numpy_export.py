"""``gradcli diff --format python`` of array programs: a NumPy function, one line per node.

Every row of both op tables has a form here. An element-wise row is written with NumPy where
NumPy has the same function (``_NUMPY_FORMS``, ``_NUMPY_NAMES``, checked against the row's own
forward in tests/test_numpy_export.py); every other row (erf, lgamma, gelu, ...) runs gradcli's
own scalar function element by element: the export carries a copy of it (as the scalar export
does, ``printing.PythonNotation``) wrapped in ``np.vectorize`` under a ``_gc_`` name, which no
variable can shadow (variables do not start with ``_``), and a comment says which rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gradcli.engine.graph import Node, Program, nodes_of
from gradcli.engine.ops import CONST, VAR
from gradcli.symbolic.arrays import shape_of
from gradcli.symbolic.derivatives import wrt_names
from gradcli.symbolic.jacobians import hessian_nodes, jacobian_nodes, sampled_gradients
from gradcli.symbolic.nodes import SymNode

_NUMPY_NAMES = {"acos": "np.arccos", "asin": "np.arcsin", "atan": "np.arctan",
                "atan2": "np.arctan2", "max": "np.maximum", "min": "np.minimum",
                "asinh": "np.arcsinh", "acosh": "np.arccosh", "atanh": "np.arctanh",
                "sum": "np.sum", "mean": "np.mean", "prod": "np.prod", "tr": "np.trace",
                "det": "np.linalg.det", "inv": "np.linalg.inv", "norm": "np.linalg.norm",
                "outer": "np.outer", "transpose": "np.transpose"}
# element-wise rows NumPy computes as the row does (the others run the row's own function)
_SAME_IN_NUMPY = frozenset({
    "exp", "log", "log2", "log10", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "asin",
    "acos", "atan", "atan2", "hypot", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sign",
    "exp2", "cbrt", "square", "floor", "ceil", "trunc", "deg2rad", "rad2deg", "logaddexp",
    "logaddexp2", "max", "min"})
_NUMPY_FORMS = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
    "neg": "-{0}", "pow": "{0} ** {1}", "matmul": "{0} @ {1}", "dot": "np.sum({0} * {1})",
    "abs": "np.abs({0})", "reciprocal": "1.0 / {0}",
    "sigmoid": "1 / (1 + np.exp(-{0}))", "relu": "np.maximum({0}, 0.0)",
    "sech": "2 * np.exp(-np.abs({0})) / (1 + np.exp(-2 * np.abs({0})))",  # cosh overflows
    "heaviside": "({0} > 0) * 1.0", "softplus": "np.logaddexp(0.0, {0})",
    "lt": "({0} < {1}) * 1.0", "le": "({0} <= {1}) * 1.0", "gt": "({0} > {1}) * 1.0",
    "ge": "({0} >= {1}) * 1.0", "eq": "({0} == {1}) * 1.0", "ne": "({0} != {1}) * 1.0",
    "logical_and": "np.logical_and({0} != 0, {1} != 0) * 1.0",
    "logical_or": "np.logical_or({0} != 0, {1} != 0) * 1.0",
    "logical_not": "({0} == 0) * 1.0", "where": "np.where({0} != 0, {1}, {2})",
    "norm1": "np.sum(np.abs({0}))",
    "logdet": "np.linalg.slogdet({0})[1]", "max1": "np.max({0})", "min1": "np.min({0})",
    "logsumexp": "np.max({0}) + np.log(np.sum(np.exp({0} - np.max({0}))))",
    "softmax": "np.exp({0} - np.max({0}, axis=-1, keepdims=True)) / np.sum(np.exp({0} - "
               "np.max({0}, axis=-1, keepdims=True)), axis=-1, keepdims=True)",
    "log_softmax": "{0} - np.max({0}, axis=-1, keepdims=True) - np.log(np.sum(np.exp({0} - "
                   "np.max({0}, axis=-1, keepdims=True)), axis=-1, keepdims=True))",
    "zeros": "np.zeros(int({0}))", "ones": "np.ones(int({0}))", "eye": "np.eye(int({0}))",
}


class NumpyWriter:
    """The lines of one exported function: a node's text, or the name of the line that
    computes it; the helpers the rows without a NumPy form need."""

    def __init__(self, variables: Sequence[str]) -> None:
        from gradcli.symbolic.printing import PythonNotation, python_name

        # np, math, f, keywords and the lines' own names (t0, t1, ...) get a trailing _
        self.renames: dict[str, str] = {}
        for name in variables:
            taken = {"np", "math", "f", *self.renames.values()}
            if name[:1] == "t" and name[1:].isdigit():
                taken.add(name)
            self.renames[name] = python_name(name, taken)
        self.texts: dict[int, str] = {}
        self.lines: list[str] = []
        self.scalar = PythonNotation({})  # copies the rows' own scalar functions
        self.vectorized: dict[str, str] = {}  # row name -> its helper's line

    def add(self, outputs: Sequence[Node]) -> None:
        for node in nodes_of(outputs):
            if id(node) not in self.texts:
                self.texts[id(node)] = self.text(node)

    def __getitem__(self, node: Node) -> str:
        return self.texts[id(node)]

    def text(self, node: Node) -> str:
        op = node.op
        if op is VAR:
            return self.renames.get(str(node.name), str(node.name))
        if op is CONST:
            value = node.value
            if getattr(value, "ndim", 0):
                return f"np.array({value.tolist()!r})"
            return f"({value!r})" if value < 0 else repr(value)  # -2.0 ** 2 would be -4
        args = [self.texts[id(source)] for source in node.inputs]
        name = op.name
        if name in ("max", "min") and op.arity == 1:
            name += "1"
        if op.is_array and op.postfix and name == "index":
            text = args[0] + op.postfix
        elif name == "array":
            text = f"np.stack([{', '.join(args)}])"
        elif name in _NUMPY_FORMS:
            text = _NUMPY_FORMS[name].format(*args)
        elif op.is_array or name in _SAME_IN_NUMPY:
            function = _NUMPY_NAMES.get(name, f"np.{name}")
            text = f"{function}({', '.join(args)})"
        else:
            text = f"{self.helper(op)}({', '.join(args)})"
        self.lines.append(f"t{len(self.lines)} = {text}")
        return f"t{len(self.lines) - 1}"

    def helper(self, op: Any) -> str:
        """``_gc_erf``: the row's scalar function applied element by element."""
        name = f"_gc_{op.name}"
        if op.name not in self.vectorized:
            self.vectorized[op.name] = (f"{name} = np.vectorize({self.scalar.function(op)}, "
                                        "otypes=[float])")
        return name

    def source(self, doc: str, returned: str) -> str:
        """The module: imports, the helpers (said so), then ``def f(parameters)``."""
        head = ["import numpy as np"]
        if self.vectorized:
            head = ["import math", "", "import numpy as np", ""]
            for text in self.scalar.helpers.values():
                head += ["", text.rstrip(), ""]
            head += ["", f"# {', '.join(self.vectorized)}: NumPy has no such function; gradcli's "
                     "own, element by element"]
            head += list(self.vectorized.values())
        body = "".join(f"    {line}\n" for line in self.lines)
        return ("\n".join(head) + f"\n\n\ndef f({', '.join(self.renames.values())}):\n"
                f'    """{doc}"""\n{body}    return {returned}\n')


# --- the exports: gradients, and blocks of a Jacobian or a Hessian -------------------------------

def to_numpy(program: Program, shapes: Mapping[str, tuple[int, ...]],
             wrt: Sequence[str] | None, max_nodes: int,
             given: Mapping[str, Any] | None = None) -> str:
    """Source of ``def f(variables): return value, {name: gradient}``, NumPy only: one line
    per node of the value and the gradients (shared nodes computed once)."""
    found, _ = sampled_gradients(program, shapes, wrt_names(program, wrt), max_nodes,
                                 keep_value=True, given=given)
    output = found.pop("__value__")
    writer = NumpyWriter(list(program.variables))
    writer.add([output, *found.values()])
    gradients = ", ".join(f"{name!r}: {writer[node]}" for name, node in found.items())
    return writer.source(f"Value and gradients of {program.source!r} (gradcli diff).",
                         f"{writer[output]}, {{{gradients}}}")


def blocks_numpy(program: Program, shapes: Mapping[str, tuple[int, ...]],
                 wrt: Sequence[str] | None, max_nodes: int, order: int = 1,
                 given: Mapping[str, Any] | None = None) -> str:
    """Source of ``def f(variables): return values, blocks``, NumPy only: the outputs'
    values and the Jacobian (``order`` 1: ``{output: {input: block}}``) or the value and the
    Hessian (2: ``{a: {b: block}}``, the value bare as the gradient's export returns it), one
    line per node, shared nodes computed once."""
    found = (jacobian_nodes if order == 1 else hessian_nodes)(program, shapes, wrt, max_nodes,
                                                              given)
    writer = NumpyWriter(list(program.variables))
    writer.add([*found.values.values(),
                *(node for row in found.blocks.values() for node in row.values())])
    values = (", ".join(f"{label!r}: {writer[node]}" for label, node in found.values.items())
              if order == 1 else writer[found.values["value"]])
    rows = []
    for label, row in found.blocks.items():
        out = shapes[label] if order == 2 else shape_of(found.values[label])
        entries = ", ".join(f"{name!r}: {_numpy_block(node, writer, out + tuple(shapes[name]))}"
                            for name, node in row.items())
        rows.append(f"{label!r}: {{{entries}}}")
    what = "values and Jacobian" if order == 1 else "value and Hessian"
    return writer.source(f"The {what} of {program.source!r} (gradcli diff).",
                         f"{values if order == 2 else '{' + values + '}'}, {{{', '.join(rows)}}}")


def _numpy_block(node: SymNode, writer: Any, shape: tuple[int, ...]) -> str:
    """A block's text; a block of zeros (printed ``0``) as zeros of its shape."""
    if node.op is CONST and not shape_of(node) and node.value == 0.0:
        return f"np.zeros({shape!r})" if shape else "0.0"
    return writer[node]
