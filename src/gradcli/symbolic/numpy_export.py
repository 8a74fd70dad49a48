"""``gradcli diff --format python`` of array programs: a NumPy function, one line per node.

A row is written in its NumPy form (``Op.numpy``); a row without one (erf, gelu) runs gradcli's
own scalar function, copied as the scalar export copies it, in ``np.vectorize`` under a ``_gc_``
name (variables never start with ``_``), and a comment says which rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gradcli.engine.graph import Node, Program, nodes_of
from gradcli.engine.ops import CONDITIONAL, CONST, VAR
from gradcli.symbolic.arrays import shape_of
from gradcli.symbolic.jacobians import Blocks
from gradcli.symbolic.nodes import SymNode
from gradcli.symbolic.printing import PythonNotation, finite_helper, python_names


class NumpyWriter:
    """The lines of one exported function: a node's text, or the name of the line that
    computes it; the helpers the rows without a NumPy form need."""

    def __init__(self, variables: Sequence[str]) -> None:
        # np, math, f, keywords and the lines' own names (t0, t1, ...) get a trailing _
        lines = {name for name in variables if name[:1] == "t" and name[1:].isdigit()}
        self.renames = python_names(variables, {"np", "math", "f", *lines})
        self.texts: dict[int, str] = {}
        self.lines: list[str] = []
        self.scalar = PythonNotation({})  # copies the rows' own scalar functions
        self.vectorized: dict[str, str] = {}  # row name -> its scalar function's name
        self.pieces = False  # a where is written: NumPy computes both of its branches

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
        self.pieces = self.pieces or op is CONDITIONAL
        form = op.numpy
        text = form.format(*args) if form else f"{self.helper(op)}({', '.join(args)})"
        self.lines.append(f"t{len(self.lines)} = {text}")
        return f"t{len(self.lines) - 1}"

    def helper(self, op: Any) -> str:
        """``_gc_erf``: the row's scalar function applied element by element."""
        name = f"_gc_{op.name}"
        if op.name not in self.vectorized:
            self.vectorized[op.name] = self.scalar.function(op)
        return name

    def source(self, doc: str, returned: str) -> str:
        """The module: imports, the helpers (said so), ``_finite``, then ``def f(parameters)``,
        whose results that are not finite raise, as ``eval`` refuses them (NumPy's log of a
        negative number is a NaN and a warning, not an error)."""
        head = ["import numpy as np"]
        if self.vectorized:
            head = ["import math", "", "import numpy as np", ""]
            for text in self.scalar.helpers.values():
                head += ["", text.rstrip(), ""]
            if self.pieces:  # a branch not taken may have no value: NaN there, as np.log's
                head += ["", _NAN_OUTSIDE, ""]
            head += ["", f"# {', '.join(self.vectorized)}: NumPy has no such function; gradcli's "
                     "own, element by element"]
            head += [f"_gc_{name} = np.vectorize("
                     f"{f'_nan_outside({function})' if self.pieces else function}, otypes=[float])"
                     for name, function in self.vectorized.items()]
        head += ["", "", _FINITE.rstrip()]
        # A branch not taken may have no value (log of a negative element): it must not warn;
        # a result's is still refused by _finite
        indent = " " * (8 if self.pieces else 4)
        body = "".join(f"{indent}{line}\n" for line in self.lines)
        opening = '    with np.errstate(all="ignore"):  # a branch not taken\n' if (
            self.pieces) else ""
        return ("\n".join(head) + f"\n\n\ndef f({', '.join(self.renames.values())}):\n"
                f'    """{doc}"""\n{opening}{body}{indent}return _finite({returned})\n')


_NAN_OUTSIDE = '''
def _nan_outside(function):
    """function, or NaN where it has no value (a where's branch not taken: _finite refuses
    a result that is not finite)."""
    def guarded(*args):
        try:
            return function(*args)
        except (ValueError, ZeroDivisionError, OverflowError):
            return math.nan
    return guarded
'''.strip()

# a where's branch not taken may be NaN inside, but never reaches a result
_FINITE = finite_helper("np.all(np.isfinite(result))", "FloatingPointError")


# --- the export: gradients, or blocks of a Jacobian or a Hessian --------------------------------

def numpy_source(program: Program, shapes: Mapping[str, tuple[int, ...]], kind: str,
                 found: Blocks) -> str:
    """Source of ``def f(variables)``, NumPy only, one line per node of ``found`` (shared nodes
    computed once), returning the value and ``{name: gradient}`` (``kind`` "gradient"), the
    outputs' values and Jacobian ("jacobian") or the value, bare, and Hessian ("hessian")."""
    writer = NumpyWriter(list(program.variables))
    writer.add([*found.values.values(),
                *(node for row in found.blocks.values() for node in row.values())])
    if kind == "gradient":
        gradients = ", ".join(f"{name!r}: {writer[node]}"
                              for name, node in found.blocks["value"].items())
        return writer.source(f"Value and gradients of {program.source!r} (gradcli diff).",
                             f"{writer[found.values['value']]}, {{{gradients}}}")
    order = 1 if kind == "jacobian" else 2
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
