"""The parser's builder: one callback per grammar alias, each returning the graph node for that
piece of text (function definitions: language/functions.py), keeping what the program declares:
variables, named values, defaults, notes, the node count."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

from gradcli.engine.core_ops import ADD, DIV, MUL, NEG, POW, SUB
from gradcli.engine.graph import Node
from gradcli.engine.ops import (
    CALLS,
    CONDITIONAL,
    CONST,
    CONSTANTS,
    FUNCTION_NAMES,
    FUNCTIONS,
    OPS,
    Op,
    index_op,
    shape_text,
    stack_op,
)
from gradcli.errors import GradcliNameError, Note, ParseError, UsageError
from gradcli.language.functions import Definitions, Function, Head, defined_later, name_error
from gradcli.language.lalr import Token, token_at
from gradcli.language.syntax_errors import (
    LOOKALIKES,
    function_hint,
    language_signature,
    number_output_error,
)
from gradcli.limits import MAX_ARRAY_ELEMENTS, MAX_NODES, check_dims

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_COMPARISON_OPS = {"<": OPS["lt"], "<=": OPS["le"], ">": OPS["gt"], ">=": OPS["ge"],
                   "==": OPS["eq"], "!=": OPS["ne"]}


class GraphBuilder(Definitions):
    """Parser callbacks: one per grammar alias, each returning the node for that piece of text."""

    def __init__(self) -> None:
        self.reset()

    def reset(self, max_nodes: Any = MAX_NODES) -> None:
        self.max_nodes = _node_limit(max_nodes)
        self.made = 0  # nodes built so far, against ``max_nodes``
        self.nodes: list[Node] = []  # the nodes made, in order, for ``graph.nodes_of``
        self.variables: dict[str, Node] = {}  # input variables, in order of first appearance
        self.named: dict[str, Node] = {}  # names given by statements: intermediates and inputs
        # intermediates' names and where each is assigned (its position: a Token each would
        # be 170 B, W3 has 11,000), made a Token again for an error (``token_at``)
        self.assigned: dict[str, int] = {}
        self.read: set[str] = set()  # the names some expression reads
        self.defaults: dict[str, float] = {}  # values that statements give input variables
        # each number literal's float (Any: compiled, a float is unboxed, and each node would
        # get a new one)
        self.numbers: dict[str, Any] = {}
        self.notes: list[Note] = []  # variables named like a constant or function: PI, beta
        self.shadowing: frozenset[str] = frozenset()  # constants given values: variables here
        self.constants_read: set[str] = set()  # the constants some expression reads
        self.language_calls: dict[str, Token] = {}  # the language's functions called, first
        self.first_use: dict[str, int] = {}  # where each name is first read or assigned
        # a name may be called and read (a printed derivative, read back); object: any truth
        # value, tested only where a name is both (as ever: compiled, a bool would be checked)
        self.both_ways: object = False
        self.arrays = False  # an array literal or array op was built (docs/arrays.md)
        self.functions: dict[str, Function] = {}  # the program's own, in order of definition
        self.called: set[str] = set()  # the functions some statement calls
        self.parameters: dict[str, str] = {}  # every parameter name -> its function's name
        self.defining: Head | None = None  # the definition whose body is being read
        self.statement_start = 0  # len(variables) when the current statement began
        self.masked = False  # a where(...) was built: the program needs masking (graph.py)
        self.source = ""

    def made_node(self, node: Node, token: Token | int | None = None) -> Node:
        """Count and list a new node (its ``index`` its place in the list, until the program
        numbers it); past the limit, stop parsing at once with a usage error (at ``token``, or
        at a word's start: ``name``, ``number``)."""
        self.made += 1
        node.index = len(self.nodes)  # ``listed`` inlined: a Python call per node is 0.7% of
        self.nodes.append(node)  # a batch line in the Python build
        if self.made > self.max_nodes:
            if isinstance(token, int):
                token = token_at(self.source, "", token)
            raise UsageError(f"the program has more than {self.max_nodes:,} nodes",
                             hint="raise the limit with --max-nodes N",
                             line=None if token is None else token.line,
                             column=None if token is None else token.column)
        return node

    def listed(self, node: Node) -> Node:
        """List a node made in place of one just counted (a signed number for the number, an
        input given a value for the value), not counted again: every node a program reads is
        listed, so ``nodes_of`` finds them all in one sweep, with no set."""
        node.index = len(self.nodes)
        self.nodes.append(node)
        return node

    # --- leaves ---------------------------------------------------------------------------

    def number(self, word: str, start: int) -> Node:
        value: Any = self.numbers.get(word)  # Any: one float object, made once
        if value is None:  # one float per literal written, not per node (W3: 44,000, 1 MB)
            value = float(word)
            self.numbers[word] = value
        node = self.made_node(Node(CONST, (), value), start)
        size: float = value  # (compiled: a C double against a C constant, no float made)
        if size == math.inf:
            raise ParseError.at(token_at(self.source, word, start, "NUMBER"),
                                f"the number {word} is too large for a float")
        return node

    def name(self, name: str, start: int) -> Node:
        """A name not followed by ``(``: a statement's name, a constant, or a variable -- also
        when a function has that name (``beta*x``): only a call calls (docs/language.md)."""
        variable = self.variables.get(name)
        if variable is not None and name not in self.named:  # most names: a variable again
            return variable
        if name in self.named:
            self.read.add(name)
            return self.named[name]
        if name in CONSTANTS and name not in self.shadowing:
            self.constants_read.add(name)
            return self.made_node(Node(CONST, (), CONSTANTS[name], name), start)
        if name not in self.variables:
            if name in self.functions:
                signature = self.functions[name].signature
                raise name_error(token_at(self.source, name, start),
                                 f"{name} is a function: call it as {signature}",
                                 hint=f"{name} is the program's function; a name is a function "
                                      f"or a variable, not both: for a variable pick another "
                                      f"name, e.g. {name}_")
            if name in self.language_calls and not self.both_ways:
                raise self.both_ways_error(name, self.language_calls[name],
                                           token_at(self.source, name, start))
            self.variables[name] = self.made_node(Node.variable(name), start)
            self.first_use[name] = start
            note = self._note(name, start)
            if note is not None:
                self.notes.append(note)
        return self.variables[name]

    def _note(self, name: str, token: Token | int) -> Note | None:
        """The note for a variable that may stand for something else (``errors.Note``), at
        its token or where its first use begins."""
        lower = name.lower()
        if name in CONSTANTS:
            meant, what, reading = name, "constant", "shadow"
        elif name in FUNCTION_NAMES:
            meant, what, reading = language_signature(name), "function", "function"
        elif lower in ("nan", "inf", "infinity"):  # would print as if it were that float
            meant, what, reading = name, "number", "number"
        elif lower in LOOKALIKES:
            (meant, what), reading = LOOKALIKES[lower], "case"
        else:
            return None  # most names: no note, and their place is not worked out
        if isinstance(token, int):
            token = token_at(self.source, name, token)
        return Note(name, meant, what, token.line, token.column, reading=reading)

    def both_ways_error(self, name: str, call: Token, use: Token) -> GradcliNameError:
        """``beta(a, b) + beta``: one name both called and used as a variable, the one error
        this rule leaves (which one was meant is a guess); both places are marked."""
        first, second = sorted((call, use), key=lambda token: token.pos_in_stream)
        error = name_error(second,
                           f"{name} is both called as a function (line {call.line}, column "
                           f"{call.column}) and used as a variable (line {use.line}, column "
                           f"{use.column})",
                           hint=f"a name is a function or a variable, not both: rename the "
                                f"variable, e.g. {name}_")
        if first.line == second.line:
            error.marks = (first.column,)
        return error

    # --- operators and functions ----------------------------------------------------------

    def neg(self, children: Sequence[Node]) -> Node:
        (operand,) = children
        if operand.op is CONST and operand.name is None:  # a signed number stays one number
            return self.listed(Node.constant(-operand.value))
        return self.made_node(Node(NEG, (operand,)))

    def pos(self, children: Sequence[Node]) -> Node:
        return children[0]

    def call(self, children: Sequence[Any]) -> Node:
        token, args = children[0], list(children[1:])
        name = str(token)
        if name in FUNCTION_NAMES and name not in self.functions and not self.both_ways:
            variable = self.first_use.get(name)
            if variable is not None or name in self.named:
                use = token if variable is None else token_at(self.source, name, variable)
                raise self.both_ways_error(name, token, use)
            known = self.language_calls.get(name)  # an inner call is reduced first
            if known is None or token.pos_in_stream < known.pos_in_stream:
                self.language_calls[name] = token
        op = FUNCTIONS.get(name)
        if (op is None or len(args) != op.arity) and (row := _array_row(name)) is not None:
            return self.made_node(self.array_call(token, row, args), token)  # sum(x), max(x)
        if op is None:
            if name in self.functions:
                return self.call_defined(self.functions[name], token, args)
            if self.defining is not None and name == str(self.defining.token):
                raise name_error(token, f"{name} calls itself",
                                 hint="a function cannot be recursive: each call is written out "
                                      "in place, so it would never end")
            later = defined_later(self.source, name, token.pos_in_stream)
            if later is not None:
                where = (f"{self.defining.token} calls {name}" if self.defining is not None
                         else f"{name} is called")
                raise name_error(token, f"{where} before its definition (line {later})",
                                 hint="define a function before its first use (so no function "
                                      "can call itself, even through others)")
            if name in self.variables or name in self.named:
                hint = f"{name} is a variable: did you mean {name}*(...)?"
            elif name in CONSTANTS:
                hint = f"{name} is a constant: did you mean {name}*(...)?"
            else:
                hint = function_hint(name)
            raise name_error(token, f"unknown function {name}", hint=hint)
        if len(args) != op.arity:
            plural = "s" if op.arity > 1 else ""
            hint = f"write it as {language_signature(op.name)}"
            if op.name == "log" and len(args) == 2:
                hint += ", the natural logarithm; in base b: log(x)/log(b), log2(x), log10(x)"
            raise name_error(token, f"{op.name} takes {op.arity} argument{plural}, not "
                             f"{len(args)}", hint=hint)
        if op is CONDITIONAL:
            self.masked = True
        return self.made_node(Node(op, tuple(args)), token)

    def conditional(self, children: Sequence[Node]) -> Node:
        """``a if c else b``, the same node as ``where(c, a, b)``."""
        a, c, b = children
        self.masked = True
        return self.made_node(Node(CONDITIONAL, (c, a, b)))

    def compare(self, children: Sequence[Any]) -> Node:
        """``a < b`` and the other comparisons: one grammar rule, the op by the operator."""
        left, operator, right = children
        return self.made_node(Node(_COMPARISON_OPS[str(operator)], (left, right)))

    # --- statements -----------------------------------------------------------------------

    def assign(self, children: Sequence[Any]) -> None:
        token, value = children
        name = str(token)
        if name in self.functions:
            raise name_error(token, f"{name} is a function of the program "
                             "and cannot be assigned", hint="pick another name")
        if name in self.language_calls and not self.both_ways:
            raise self.both_ways_error(name, self.language_calls[name], token)
        if name in self.constants_read:
            raise name_error(token, f"{name} is used as the constant {name} before this "
                             "statement assigns it",
                             hint=f"rename the variable (e.g. {name}_): a name means one thing "
                                  "in a program")
        self.first_use.setdefault(name, token.pos_in_stream)
        if name in self.named:
            raise name_error(token, f"{name} is assigned twice",
                             hint="each name can be assigned once")
        if name in self.variables:
            raise name_error(token, f"{name} is used before it is assigned",
                             hint=f"move the statement '{name} = ...' before the first use")
        note = self._note(name, token) if name in CONSTANTS else None
        if note is not None:  # e = 2 hides e: said on stderr
            self.notes.append(note)
        if value.op is CONST and value.name is None:
            # `x = 2` declares an input variable with a default; the command line may move it.
            self.variables[name] = self.named[name] = self.listed(Node.variable(name, value.value))
            self.defaults[name] = value.value
        else:
            if value.name is None or "(" in value.name:  # not a call's label: u = h(x) is u
                value.name = name
            self.named[name] = value
            self.assigned[name] = token.pos_in_stream
        self.statement_start = len(self.variables)

    def start(self, children: Sequence[Any]) -> Node | list[Node]:
        """The output; a list of the outputs when the program ends with ``f, g``."""
        if len(children) > 1 and children[-2] is not None:  # statements give None
            outputs = [child for child in children if child is not None]
            for number, output in enumerate(outputs):
                if output.op is CONST and output.name is None and type(output.value) is float:
                    raise number_output_error(self.source, number)  # `1,5` is a slip
            self.arrays = True  # several outputs are a Jacobian: the array path
            return outputs
        return children[-1]

    # --- arrays (docs/arrays.md): subscripts and sizes are constant whole numbers -----------

    def array(self, children: Sequence[Node]) -> Node:
        """``[1, 2]`` and ``[[1, 2], [3, 4]]`` as one constant (``x = [1, 2]`` is an input with a
        default, as ``x = 2``); ``[x, y]`` as a stack node."""
        import numpy as np

        self.arrays = True
        if all(_is_number(child) for child in children):
            values = np.array([child.value for child in children], dtype=float)
            return self.made_node(Node(CONST, (), values))
        if all(child.op is CONST and type(child.value) is not float for child in children):
            shapes = {child.value.shape for child in children}
            if len(shapes) > 1:
                lengths = ", ".join(sorted(map(shape_text, shapes)))
                raise UsageError(f"the rows of an array literal have different shapes "
                                 f"({lengths})",
                                 hint="every row needs the same length, e.g. [[1, 2], [3, 4]]")
            check_dims("an array literal", children[0].value.ndim + 1)
            stacked = np.stack([child.value for child in children])
            if stacked.size > MAX_ARRAY_ELEMENTS:
                raise UsageError(f"an array literal has more than {MAX_ARRAY_ELEMENTS:,} "
                                 "elements", hint="pass large arrays as values (--x), not in "
                                                  "the text")
            return self.made_node(Node(CONST, (), stacked))
        return self.made_node(Node(stack_op(len(children)), tuple(children)))

    def array_call(self, token: Token, op: Op, args: list[Node]) -> Node:
        """``sum(x)``, ``max(x)`` (one argument), ``eye(3)``: a node of the array function
        ``op``, the language's array row of that name."""
        name = str(token)
        if len(args) != op.arity:
            counts = sorted({row.arity for row in CALLS[name]})  # max: max(x) and max(x, y)
            taken = " or ".join(map(str, counts))
            raise name_error(token, f"{name} takes {taken} argument"
                             f"{'s' if counts[-1] > 1 else ''}, not {len(args)}",
                             hint=f"write it as {language_signature(name)}")
        self.arrays = True
        if op.constant_args:
            _check_size(token, args[0], square=name == "eye")
        return Node(op, tuple(args))

    def subscript(self, children: Sequence[Any]) -> Node:
        """``x[0]``, ``W[1, 0]``, ``x[1:3]``, ``W[:, 0]``: constant whole numbers and slices."""
        self.arrays = True
        key: list[Any] = []
        written: list[str] = []
        for item in children[1:]:
            if isinstance(item, tuple):  # ("slice", start, stop), either may be None
                start, stop = (None if end is None else _whole(end) for end in item[1:])
                key.append((start, stop))
                written.append(f"{'' if start is None else start}:{'' if stop is None else stop}")
            else:
                key.append(_whole(item))
                written.append(str(key[-1]))
        op = index_op(tuple(key), "[" + ", ".join(written) + "]")
        return self.made_node(Node(op, (children[0],)))

    # --- operators whose grammar alias is their op's name (arithmetic's rows: core_ops' C
    # constants, not looked up in OPS for every node) ----------------------------------------

    def _operator(self, op: Op, children: Sequence[Node]) -> Node:
        return self.made_node(Node(op, tuple(children)))

    def add(self, children: Sequence[Node]) -> Node:
        return self._operator(ADD, children)

    def sub(self, children: Sequence[Node]) -> Node:
        return self._operator(SUB, children)

    def mul(self, children: Sequence[Node]) -> Node:
        return self._operator(MUL, children)

    def div(self, children: Sequence[Node]) -> Node:
        return self._operator(DIV, children)

    def mod(self, children: Sequence[Node]) -> Node:
        return self._operator(OPS["mod"], children)

    def pow(self, children: Sequence[Node]) -> Node:
        return self._operator(POW, children)

    def logical_and(self, children: Sequence[Node]) -> Node:
        return self._operator(OPS["logical_and"], children)

    def logical_or(self, children: Sequence[Node]) -> Node:
        return self._operator(OPS["logical_or"], children)

    def logical_not(self, children: Sequence[Node]) -> Node:
        return self._operator(OPS["logical_not"], children)

    def matmul(self, children: Sequence[Node]) -> Node:
        self.arrays = True
        return self._operator(OPS["matmul"], children)

    def transpose(self, children: Sequence[Node]) -> Node:
        self.arrays = True
        return self._operator(OPS["transpose"], children)

    def slice_both(self, children: Sequence[Node]) -> tuple:
        return ("slice", children[0], children[1])

    def slice_from(self, children: Sequence[Node]) -> tuple:
        return ("slice", children[0], None)

    def slice_to(self, children: Sequence[Node]) -> tuple:
        return ("slice", None, children[0])

    def slice_all(self, children: Sequence[Node]) -> tuple:
        return ("slice", None, None)


def _node_limit(max_nodes: Any) -> int:
    """``max_nodes`` as the int the compiled builder keeps: NumPy's ints and 1e5 are fine, and
    infinity (or NaN) is no limit, as it always was."""
    try:
        return int(max_nodes)
    except (OverflowError, ValueError):  # inf, nan
        return sys.maxsize


def _is_number(node: Node) -> bool:
    return node.op is CONST and type(node.value) is float


def _array_row(name: str) -> Op | None:
    """The array row the language calls ``name`` (``max``: the reduction), if any."""
    return next((op for op in CALLS.get(name, ()) if op.is_array), None)


def _check_size(token: Token, node: Node, square: bool) -> None:
    """Refuse the ``n`` of ``zeros(n)`` unless a constant whole number, not too large."""
    value = node.value if _is_number(node) else None
    count = int(value) if value is not None and value == int(value) else 0
    elements = count * count if square else count
    if count < 1 or elements > MAX_ARRAY_ELEMENTS:
        raise UsageError.at(token, f"{token}(n) needs n to be a whole number from 1 up, with at "
                            f"most {MAX_ARRAY_ELEMENTS:,} elements", hint=f"write e.g. {token}(3)")


def _whole(node: Node) -> int:
    if _is_number(node) and node.value == int(node.value):
        return int(node.value)
    raise UsageError("an index or a slice's end must be a constant whole number",
                     hint="write e.g. x[0], W[1, 0], x[1:3] or x[-1]")
