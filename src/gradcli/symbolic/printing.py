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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gradcli.engine import ops, special, special_slopes
from gradcli.engine.core_ops import CONST, MUL, WHERE
from gradcli.engine.graph import Node, nodes_and_uses
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
    written: frozenset[str] = frozenset(),
) -> Printed:
    """Print ``outputs`` together, naming every non-leaf node used more than once; ``lazy``
    (Python, whose statements run whatever branch is taken) names none inside a branch. A
    statement's name is none of the ``reserved`` names, and ``notation`` writes it unlike the
    graph's names and the ``written`` texts (the program's other names as it writes them)."""
    outputs, nodes, uses = _presented(outputs)
    shared = _statements(nodes, uses, set(outputs))
    if shared and lazy:
        inline = _in_branches_only(nodes, outputs)
        shared = [node for node in shared if node not in inline]
    if not shared:
        return _printed(outputs, nodes, shared, notation)
    taken = {str(n.name) for n in nodes if n.name is not None}
    # as the notation writes them too: LaTeX writes a statement t1 and a variable t_1 as t_{1}
    forms = written | {notation.name(other) for other in taken}
    counter = 0
    for node in shared:  # named while printed (the graph may be printed again, differently)
        counter += 1
        while (name := f"t{counter}") in taken or name in reserved or (
                name in CONSTANTS or name in FUNCTIONS) or (  # a statement may not take those
                notation.name(name) in forms):
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
    """LaTeX's spellings; the names in ``literal`` (those that would read alike, x1 and x_1 as
    x_{1}) are written as typed, upright (``latex_notation``)."""

    literal: frozenset[str]

    def __init__(self, literal: frozenset[str] = frozenset()) -> None:
        self.literal = literal

    def number(self, value: Any) -> str:
        mantissa, _, exponent = format_number(value).partition("e")
        return mantissa if not exponent else rf"{mantissa} \cdot 10^{{{int(exponent)}}}"

    def name(self, name: str) -> str:
        if name in self.literal:  # x1 and x_1 in one formula: \mathrm{x1}, \mathrm{x\_1}
            return rf"\mathrm{{{_escaped(name)}}}"
        if name in _GREEK:
            return "\\" + name  # alpha, beta1 and Gamma as a reader of the formula writes them
        head, digits = name.rstrip("0123456789"), name[len(name.rstrip("0123456789")):]
        if digits and head:  # x1 and x_1 as x_{1}
            return f"{self.name(head[:-1] if head.endswith('_') and len(head) > 1 else head)}" \
                   f"_{{{digits}}}"
        return name if len(name) == 1 else rf"\mathrm{{{_escaped(name)}}}"

    def call(self, op: Any, args: list[str]) -> str:
        if op.name in _LATEX_FORMS:
            return _LATEX_FORMS[op.name].format(*args)
        head = _LATEX_FUNCTIONS.get(op.name, rf"\operatorname{{{_escaped(op.name)}}}")
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


def _escaped(name: str) -> str:
    return name.replace("_", "\\_")


LATEX = LatexNotation()


def latex_notation(names: Iterable[str]) -> LatexNotation:
    """How LaTeX writes the ``names`` of one program (its variables, its outputs' names) so that
    no two read alike: ``LATEX`` (x_1 as x_{1}), except that names LATEX writes alike (x1 and
    x_1) are written as typed (``\\mathrm{x1}``, ``\\mathrm{x\\_1}``). The formulas and the
    labels of a program use the same one."""
    unique = list(dict.fromkeys(names))
    literal: set[str] = set()
    notation = LATEX
    for _ in range(len(unique)):  # a name written as typed may make its head's form change
        by_form: dict[str, list[str]] = {}
        for name in unique:
            by_form.setdefault(notation.name(name), []).append(name)
        alike = {name for group in by_form.values() if len(group) > 1 for name in group}
        if alike <= literal:  # none (names written as typed never read alike)
            break
        literal |= alike
        notation = LatexNotation(frozenset(literal))
    return notation


def to_latex(output: Node, notation: LatexNotation = LATEX,
             written: frozenset[str] = frozenset()) -> str:
    """One expression in LaTeX; shared subexpressions as ``t_{1} = ...`` lines before it, named
    unlike the ``written`` texts (the program's other names as ``notation`` writes them)."""
    printed = print_shared([output], notation, written=written)
    lines = [f"{name} = {text}" for name, text in printed.statements]
    return LATEX_LINE_BREAK.join([*lines, printed.outputs[0]])


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
