"""Printed forms of expression graphs: gradcli's language, LaTeX and a Python function.

All three use ``notation.texts_by_node`` with a ``Notation``. A node used more than once is
printed once, as a statement (``t1 = ...; t1*t1``), so printed sizes grow linearly with the
graph. The text parses back into the same numbers; the Python form imports only ``math``.
"""

from __future__ import annotations

import builtins
import keyword
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gradcli.engine import ops, special, special_slopes
from gradcli.engine.core_ops import CONST, MUL, VAR, WHERE
from gradcli.engine.graph import Node, nodes_and_uses, nodes_of
from gradcli.engine.notation import TEXT, Notation, format_number, texts_by_node
from gradcli.engine.ops import CONSTANTS, FUNCTIONS, OPS
from gradcli.errors import UsageError

FORMATS = ("text", "latex", "python")
LATEX_LINE_BREAK = " \\\\\n"
LONG = 400  # an expression longer than this (roughly, in characters) becomes a statement


@dataclass
class Printed:
    """Shared subexpressions as (name, text) statements, then one text per output."""

    statements: list[tuple[str, str]]
    outputs: list[str]

    def program(self) -> str:
        """Statements and the first output as one program in gradcli's language."""
        return "; ".join([*(f"{name} = {text}" for name, text in self.statements),
                          self.outputs[0]])


def print_shared(
    outputs: Sequence[Node], notation: Notation = TEXT,
    reserved: set[str] | frozenset = frozenset(), lazy: bool = False,
) -> Printed:
    """Print ``outputs`` together, naming every non-leaf node used more than once; ``lazy``
    (Python, whose statements run whatever branch is taken) names none inside a branch."""
    outputs, nodes, uses = _presented(outputs)
    shared = _statements(nodes, uses, set(outputs))
    if shared and lazy:
        inline = _in_branches_only(nodes, outputs)
        shared = [node for node in shared if node not in inline]
    if not shared:
        return _printed(outputs, nodes, shared, notation)
    taken = {str(n.name) for n in nodes if n.name is not None}
    counter = 0
    for node in shared:  # named while printed (the graph may be printed again, differently)
        counter += 1
        while (name := f"t{counter}") in taken or name in reserved or (
                name in CONSTANTS or name in FUNCTIONS):  # a statement may not take those
            counter += 1
        node.name = name
    try:
        return _printed(outputs, nodes, shared, notation)
    finally:
        for node in shared:
            node.name = None


def _printed(outputs: Sequence[Node], nodes: list[Node], shared: list[Node],
             notation: Notation) -> Printed:
    texts = texts_by_node(nodes, limit=None, notation=notation, minus=True)
    statements = [(notation.name(str(n.name)), texts[n]) for n in shared]
    # An output that is also used by another output prints as its statement's name.
    named = set(shared)
    printed = [notation.name(str(n.name)) if n in named else texts[n] for n in outputs]
    return Printed(statements, printed)


def _in_branches_only(nodes: list[Node], outputs: Sequence[Node]) -> set[Node]:
    """The nodes that every output reaches only through a branch of a conditional (an explicit
    stack: no recursion)."""
    if not any(node.op is WHERE for node in nodes):
        return set()
    always: set[Node] = set()
    stack = list(outputs)
    while stack:
        node = stack.pop()
        if node in always:
            continue
        always.add(node)
        stack.extend(node.inputs[:1] if node.op is WHERE else node.inputs)
    return set(nodes) - always


def _nodes_and_uses(outputs: Sequence[Node]) -> tuple[list[Node], dict[Node, int]]:
    """The nodes of ``outputs`` in topological order and how often each is an operand or an
    output (a statement pays off from two)."""
    nodes, uses = nodes_and_uses(outputs)
    for node in outputs:
        uses[node] += 1
    return nodes, uses


def _presented(outputs: Sequence[Node]) -> tuple[list[Node], list[Node], dict[Node, int]]:
    """The graph as printed (and parsed back): ``c*(p*q)``, the builder's number in front, as
    ``c*p*q`` where ``p*q`` is used only there; with its nodes in topological order and their
    uses."""
    nodes, uses = _nodes_and_uses(outputs)
    for node in nodes:  # (a loop, not any(): printing runs once per derivative)
        if node.op is MUL and node.inputs[0].op is CONST and _regrouped(node, uses):
            break
    else:
        return list(outputs), nodes, uses  # nothing to regroup (canonical forms never need it)
    made: dict[Node, Node] = {}
    for node in nodes:
        if not node.inputs:
            made[node] = node
            continue
        inputs = tuple(made[source] for source in node.inputs)
        if _regrouped(node, uses):
            inner = made[node.inputs[1]]
            made[node] = Node(MUL, (Node(MUL, (inputs[0], inner.inputs[0])), inner.inputs[1]))
        else:
            made[node] = Node(node.op, inputs, node.value, node.name)
    shown = [made[node] for node in outputs]
    nodes, uses = _nodes_and_uses(shown)
    return shown, nodes, uses


def _regrouped(node: Node, uses: dict[Node, int]) -> bool:
    """Whether ``node`` is ``c*(p*q)`` with ``p*q`` used only there (``_presented``)."""
    if node.op is not MUL:
        return False
    left, right = node.inputs
    return (left.op is CONST and right.op is MUL and uses.get(right) == 1
            and right.name is None)


def _statements(nodes: list[Node], uses: dict[Node, int], outputs: set[Node]) -> list[Node]:
    """The nodes to print as statements: those used twice, and those whose text would grow past
    ``LONG`` characters (so that no text is long and printing stays linear on deep graphs)."""
    named: list[Node] = []
    size: dict[Node, int] = {}
    for node in nodes:
        inputs = node.inputs
        if not inputs:
            size[node] = len(node.name or format_number(node.value))
            continue
        total = len(node.op.name) + 4
        for source in inputs:
            total += size[source]
        size[node] = total
        if node.name is not None:
            continue
        if uses[node] > 1 or (total > LONG and node not in outputs):
            named.append(node)
            size[node] = 4
    return named


def to_text(output: Node) -> str:
    """One expression as a gradcli program that parses back to the same value."""
    return print_shared([output]).program()


# --- LaTeX -----------------------------------------------------------------------------------

_LATEX_FUNCTIONS = {"asin": r"\arcsin", "acos": r"\arccos", "atan": r"\arctan",
                    "log2": r"\log_{2}", "log10": r"\log_{10}", "gamma": r"\Gamma",
                    "digamma": r"\psi", "det": r"\det", "logdet": r"\log\det"} | {
    name: "\\" + name for name in ("sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "log")}
# Calls and operators LaTeX writes its own way: templates of the operands' texts
_LATEX_FORMS = {
    "sqrt": r"\sqrt{{{0}}}", "abs": r"\left|{0}\right|", "logical_not": r"\lnot {0}",
    "div": r"\frac{{{0}}}{{{1}}}", "pow": "{{{0}}}^{{{1}}}", "mul": r"{0} \cdot {1}",
    "le": r"{0} \le {1}", "ge": r"{0} \ge {1}", "eq": "{0} = {1}", "ne": r"{0} \ne {1}",
    "logical_and": r"{0} \land {1}", "logical_or": r"{0} \lor {1}",
    "where": r"\begin{{cases}} {1} & \text{{if }} {0} \\ {2} & \text{{otherwise}} \end{{cases}}"}


# Greek letters that LaTeX writes as a command: \alpha, \Gamma (omicron and the capitals that
# look Latin have none).
_GREEK = frozenset({
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi",
    "omega", "varepsilon", "vartheta", "varphi", "Gamma", "Delta", "Theta", "Lambda", "Xi",
    "Pi", "Sigma", "Upsilon", "Phi", "Psi", "Omega"})


class LatexNotation(Notation):
    def number(self, value: Any) -> str:
        mantissa, _, exponent = format_number(value).partition("e")
        return mantissa if not exponent else rf"{mantissa} \cdot 10^{{{int(exponent)}}}"

    def name(self, name: str) -> str:
        if name in _GREEK:
            return "\\" + name  # alpha, beta1 and Gamma as a reader of the formula writes them
        head, digits = name.rstrip("0123456789"), name[len(name.rstrip("0123456789")):]
        if digits and head:  # x1 and x_1 as x_{1}
            return f"{self.name(head[:-1] if head.endswith('_') and len(head) > 1 else head)}" \
                   f"_{{{digits}}}"
        escaped = name.replace("_", "\\_")
        return name if len(name) == 1 else rf"\mathrm{{{escaped}}}"

    def call(self, op: Any, args: list[str]) -> str:
        if op.name in _LATEX_FORMS:
            return _LATEX_FORMS[op.name].format(*args)
        escaped = op.name.replace("_", "\\_")
        head = _LATEX_FUNCTIONS.get(op.name, rf"\operatorname{{{escaped}}}")
        return rf"{head}\left({', '.join(args)}\right)"

    def prefix(self, op: Any, operand: str) -> str:
        form = _LATEX_FORMS.get(op.name)
        return super().prefix(op, operand) if form is None else form.format(operand)

    def infix(self, op: Any, left: str, right: str) -> str:
        form = _LATEX_FORMS.get(op.name)
        return super().infix(op, left, right) if form is None else form.format(left, right)

    def parenthesized(self, text: str) -> str:
        return rf"\left({text}\right)"

    def free_operands(self, op: Any) -> tuple[int, ...]:
        return {"div": (0, 1), "pow": (1,)}.get(op.name, ())


LATEX = LatexNotation()


def to_latex(output: Node) -> str:
    """One expression in LaTeX; shared subexpressions as ``t_{1} = ...`` lines before it."""
    printed = print_shared([output], LATEX)
    lines = [f"{name} = {text}" for name, text in printed.statements]
    return LATEX_LINE_BREAK.join([*lines, printed.outputs[0]])


# --- LaTeX of array programs: matrix notation -------------------------------------------

# op -> (template of its operands' texts, how tightly each must bind, how tightly it binds: 0 a
# sum, 1 a product, 2 a power, 3 an atom)
_MATRIX_LATEX: dict[str, tuple[str, tuple[int, ...], int]] = {
    "add": ("{0} + {1}", (0, 1), 0), "sub": ("{0} - {1}", (0, 1), 0), "neg": ("-{0}", (1,), 0),
    "div": (r"\frac{{{0}}}{{{1}}}", (0, 0), 2), "matmul": ("{0} {1}", (1, 2), 1),
    "transpose": (r"{0}^\top", (3,), 2), "outer": (r"{0} \otimes {1}", (2, 2), 1),
    "inv": ("{0}^{{-1}}", (3,), 2), "eq": (r"\left[{0} = {1}\right]", (1, 1), 3),  # Iverson's
    "norm": (r"\left\lVert {0} \right\rVert_{{2}}", (0,), 3),
    "norm1": (r"\left\lVert {0} \right\rVert_{{1}}", (0,), 3),
    "dot": (r"\left\langle {0}, {1} \right\rangle", (0, 0), 3),
}  # any other op: as ``LatexNotation.call`` writes it (\operatorname{tr}, \det)


def matrix_latex(output: Node) -> str:
    """Matrix notation (``A^\\top``, ``\\odot``, ``\\otimes``, ``X^{-1}``, ``I_{n}``), each
    node's text written out at each use."""
    texts: dict[int, tuple[str, int]] = {}  # id -> (text, how tightly it binds)

    def arg(node: Node, at_least: int) -> str:
        text, precedence = texts[id(node)]
        return text if precedence >= at_least else rf"\left({text}\right)"

    for node in nodes_of([output]):
        op = node.op
        if op is VAR:  # W_in as \mathrm{W\_in}, x_0 as x_{0}: as the scalar LaTeX writes them
            texts[id(node)] = (LATEX.name(str(node.name)), 3)
        elif op is CONST:
            text = LATEX.number(node.value) if not getattr(node.value, "ndim", 0) else (
                _latex_matrix(node.value))
            texts[id(node)] = (text, 3 if not text.startswith("-") else 0)
        else:
            texts[id(node)] = _matrix_latex_node(node, arg)
    return texts[id(output)][0]


def _latex_matrix(value: Any) -> str:
    """A constant array as a bracketed matrix (a vector: one row), not Python's list."""
    rows = value.tolist() if value.ndim == 2 else [value.tolist()] if value.ndim == 1 else None
    if rows is None:  # three or more axes: no matrix notation
        return str(value.tolist())
    body = r" \\ ".join(" & ".join(LATEX.number(float(v)) for v in row) for row in rows)
    return rf"\begin{{bmatrix}} {body} \end{{bmatrix}}"


def _matrix_latex_node(node: Node, arg: Callable[[Node, int], str]) -> tuple[str, int]:
    op, inputs = node.op, node.inputs
    name = op.name
    array = [bool(getattr(source.value, "ndim", 0)) for source in inputs]
    if name in _MATRIX_LATEX:
        template, binding, precedence = _MATRIX_LATEX[name]
        return template.format(*map(arg, inputs, binding)), precedence
    if name == "mul":
        joint = r" \odot " if all(array) else r" \cdot "
        return arg(inputs[0], 1) + joint + arg(inputs[1], 2 if all(array) else 1), 1
    if name == "pow":
        hadamard = r"\circ " if array[0] else ""
        return f"{arg(inputs[0], 3)}^{{{hadamard}{arg(inputs[1], 0)}}}", 2
    if name == "index":  # x_{0} indexed: {x_{0}}_{1:3}, not a double subscript
        base = arg(inputs[0], 3)
        return f"{{{base}}}_{{{op.postfix[1:-1]}}}" if "_" in base else \
            f"{base}_{{{op.postfix[1:-1]}}}", 3
    if name in ("ones", "eye"):
        size = LATEX.number(inputs[0].value)
        return (rf"\mathbf{{1}}_{{{size}}}" if name == "ones" else f"I_{{{size}}}"), 3
    if getattr(op, "symbol", None) and len(inputs) == 2:  # comparisons, and, or
        return LATEX.infix(op, arg(inputs[0], 1), arg(inputs[1], 1)), 0
    if name == "logical_not":
        return LATEX.prefix(op, arg(inputs[0], 3)), 0
    texts = [arg(source, 0) for source in inputs]
    return LATEX.call(op, texts), 3


# --- Python ----------------------------------------------------------------------------------

class PythonNotation(Notation):
    """Python's operators have gradcli's precedences; functions come from ``math`` or, where
    math has none (sigmoid, relu...), from the op's own forward function, copied verbatim."""

    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames
        self.helpers: dict[str, str] = {}

    def name(self, name: str) -> str:
        if name in self.renames:  # a variable, even one named like a constant (e = 2)
            return self.renames[name]
        return f"math.{name}" if name in CONSTANTS else name

    def infix(self, op: Any, left: str, right: str) -> str:
        """Python's ``and``/``or`` return an operand and skip the second when the first
        decides; gradcli's return 1 or 0 and compute both (``x and log(x)`` at 0 is log's
        error in ``eval``), so both go into a tuple first. A power whose exponent is not a
        whole number is ``math.pow``, which refuses a negative base as ``eval`` does:
        ``(-1.0)**0.5`` is a complex number in Python, not an error."""
        if op.name in ("logical_and", "logical_or"):
            test = "all" if op.name == "logical_and" else "any"
            return f"(1.0 if {test}(({_unwrapped(left)}, {_unwrapped(right)})) else 0.0)"
        if op.name == "pow" and not _WHOLE.fullmatch(right):
            return f"math.pow({_unwrapped(left)}, {_unwrapped(right)})"
        return super().infix(op, left, right)

    def call(self, op: Any, args: list[str]) -> str:
        if op is WHERE:  # Python's conditional evaluates the branch taken only
            condition, taken, other = args
            return f"({taken} if {condition} else {other})"
        return f"{self.function(op)}({', '.join(args)})"

    def function(self, op: Any) -> str:
        """``math.erf``, ``max``, or a helper copied from engine/ops/, special.py or
        special_slopes.py (written against ``math`` alone); anything else is a UsageError."""
        forward = op.forward
        module = getattr(forward, "__module__", None)
        name = getattr(forward, "__name__", "")
        if module == "math" or (module is None and getattr(math, name, None) is forward):
            return f"math.{name}"
        if getattr(builtins, name, None) is forward:
            return name
        if (module in (ops.__name__, special.__name__, special_slopes.__name__)
                and name.isidentifier()):
            self._copy(forward)
            return name
        raise UsageError(f"{op.name} has no Python form: its forward function is neither in "
                         "math nor a named function of the op table",
                         hint="use --format text or --format latex")

    def _copy(self, forward: Callable[..., float]) -> None:
        """Copy the op's own function, and the functions of gradcli that it calls (``_i0e``
        calls ``_scaled_bessel``; ``_lbeta`` its domain check, ``positive_pair``), each once."""
        import inspect  # the Python printer copies the op's own function

        waiting = [forward]
        while waiting:
            function = waiting.pop()
            if function.__name__ in self.helpers:
                continue
            source = self.helpers[function.__name__] = inspect.getsource(function)
            module = sys.modules[function.__module__]
            for called in dict.fromkeys(re.findall(r"(?<![.\w])([a-z_]\w*)\(", source)):
                helper = getattr(module, called, None)
                if (inspect.isfunction(helper) and called != function.__name__
                        and helper.__module__.startswith("gradcli.")):
                    waiting.append(helper)
            # the module's constants it reads (a series' coefficients), as literals
            for name in dict.fromkeys(re.findall(r"\b([A-Z][A-Z0-9_]+)\b", source)):
                value = getattr(module, name, None)
                if isinstance(value, (int, float, tuple)) and name not in self.helpers:
                    self.helpers[name] = f"{name} = {value!r}"


_WHOLE = re.compile(r"\(?-?\d+\)?")  # a whole-number exponent: x**2, x**(-1)


def _unwrapped(text: str) -> str:
    """An operand without the parentheses its place in ``**`` gave it (``(x + 1)``), which
    an argument of a call does not need: only where they enclose the whole text."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for position, character in enumerate(text):
        depth += {"(": 1, ")": -1}.get(character, 0)
        if depth == 0 and position < len(text) - 1:
            return text  # (a)*(b): the first one closes before the end
    return text[1:-1]


def _python_names_used() -> set[str]:
    """The builtins and the op table's float functions the generated code may call: a
    variable named like one (``sum``) is renamed rather than hide it."""
    names = set(dir(builtins))
    for op in OPS.values():
        names.add(getattr(op.forward, "__name__", ""))
    return names


def python_names(variables: Sequence[str], reserved: set[str]) -> dict[str, str]:
    """A Python identifier for each gradcli variable: keywords, the ``reserved`` names and
    those given to the variables before get a trailing _."""
    renames: dict[str, str] = {}
    taken = set(reserved)
    for name in variables:
        result = name
        while keyword.iskeyword(result) or result in taken or result.startswith("_"):
            result = result.lstrip("_") + "_" if result.startswith("_") else result + "_"
        renames[name] = result
        taken.add(result)
    return renames


def to_python(value: Node, variables: Sequence[str], wrt: Sequence[str],
              derivatives: Sequence[Node], hessian: bool = False) -> str:
    """Source of ``def f(variables): return value, gradient[, hessian]`` (derivatives by
    ``wrt``, in that order: the gradient's, then the Hessian's rows), importing only ``math``."""
    reserved = {"math", "f", *_python_names_used()}
    renames = python_names(variables, reserved)
    notation = PythonNotation(renames)
    printed = print_shared([value, *derivatives], notation, reserved | set(renames.values()),
                           lazy=True)
    texts = printed.outputs
    n = len(wrt)
    returned = [texts[0], _tuple(texts[1:1 + n])]
    if hessian:
        returned.append(_tuple([_tuple(texts[1 + n * (i + 1):1 + n * (i + 2)])
                                for i in range(n)]))
    body = [f"    {name} = {text}" for name, text in printed.statements]
    body.append(f"    return _finite({', '.join(returned)})")
    parameters = ", ".join(renames[name] for name in variables)
    what = "value, gradient and Hessian" if hessian else "value and gradient"
    what += f" by {', '.join(wrt)}" if wrt else ""
    renamed = [f"{name} as {renames[name]}" for name in variables if renames[name] != name]
    if renamed:  # beta as beta_: the function beta of the generated code keeps its name
        what += f" ({', '.join(renamed)})"
    lines = ["import math", ""]
    for source in (*notation.helpers.values(), _FINITE):
        lines += ["", source.rstrip(), ""]
    lines += ["", f"def f({parameters}):",
              f'    """The {what}."""',
              *body]
    return "\n".join(lines) + "\n"


def finite_helper(test: str, error: str) -> str:
    """The exports' ``_finite``: their results, refused where one is not finite, as eval
    refuses them (lgamma's gradient at 1e-320, floor(x)*x at 1e300, NumPy's log of a negative
    element): never inf or NaN. ``test`` says whether ``result`` is finite (``math.isfinite``
    of a float, ``np.all(np.isfinite(...))`` of an array), ``error`` is the exception raised.
    Tuples and dicts (a gradient, a Jacobian's rows) are walked. A name with a leading _ is
    never a variable's in an export (``python_names``)."""
    return f'''def _finite(*results):
    """The results, or {error} where a value or derivative is not finite."""
    for result in results:
        if isinstance(result, (tuple, dict)):
            _finite(*(result.values() if isinstance(result, dict) else result))
        elif not {test}:
            raise {error}("a value or derivative is not finite")
    return results
'''


_FINITE = finite_helper("math.isfinite(result)", "OverflowError")


def _tuple(items: Sequence[str]) -> str:
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
