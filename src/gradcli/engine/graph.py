"""The autograd core: topological order, forward values and reverse-mode gradients on floats.

Sorting the nodes an output depends on by creation number (``Node.seq``) is a topological order
-- DeZero's generation idea without a heap -- found with an explicit stack, never recursion.
Backward walks it in reverse with ``+=``, so a node used twice (``err*err``) gets both parts.
"""

from __future__ import annotations

import cmath
import math
import operator
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from gradcli.engine.core_ops import CONST
from gradcli.engine.core_ops import WHERE as CONDITIONAL
from gradcli.engine.node import Node
from gradcli.engine.notation import expression_texts, format_number
from gradcli.engine.ops.row import KERNELS, floats, kernel_slope, kernel_value
from gradcli.errors import Note, NumericError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any, Final


def nodes_of(outputs: Iterable[Node], made: list[Node] | None = None) -> list[Node]:
    """Every node the outputs depend on, once each, inputs before users (by creation number).
    ``made``: the nodes a parse made, in creation order, each one's ``index`` its place there
    (``GraphBuilder.made_node``); the walk is then one sweep back over them, with no set, and
    marks the indices it finds (``_nodes_among``): one walk per parse."""
    if made is not None:
        return _nodes_among(list(outputs), made)
    stack = list(dict.fromkeys(outputs))
    seen = set(stack)  # nodes hash by identity
    # Methods called, not kept in locals as bound methods: compiled (setup.py), a list's pop
    # and append and a set's add are direct calls, and a bound method is a generic call (the
    # walk took 1.2 times as long; a batch line runs it once, a printed derivative several times).
    while stack:
        for source in stack.pop().inputs:
            if source not in seen:
                seen.add(source)
                stack.append(source)
    return in_creation_order(list(seen))


def _nodes_among(outputs: list[Node], made: list[Node]) -> list[Node]:
    """``nodes_of`` over a parse's ``made`` nodes: a node made later reads only nodes made
    before it, so one sweep from the last back marks all the outputs read and leaves them in
    creation order, with no set and no sort. The mark is in the node: the index ``k`` of its
    place becomes ``-2 - k`` (the program numbers its nodes next). The parser lists every node
    a program reads; any other node (a caller's own) is walked by the set and merged in by
    creation number."""
    count = len(made)
    others: list[Node] = []
    for node in outputs:
        _mark(node, made, others)
    for k in range(count - 1, -1, -1):
        node = made[k]
        if node.index < -1:  # read by the outputs
            for source in node.inputs:
                j = source.index
                if 0 <= j < count and made[j] is source:
                    source.index = -2 - j
                elif not (-2 - count < j < -1 and made[-2 - j] is source):  # not marked
                    others.append(source)
    found = [node for node in made if node.index < -1]
    if others:
        return in_creation_order(list(dict.fromkeys(nodes_of(others) + found)))
    return found


def _mark(node: Node, made: list[Node], others: list[Node]) -> None:
    k = node.index
    if 0 <= k < len(made) and made[k] is node:
        node.index = -2 - k
    elif not (-2 - len(made) < k < -1 and made[-2 - k] is node):
        others.append(node)


_by_creation = operator.attrgetter("seq")
# From this many slots the nodes are ordered in place (W3: 0.8 MB less); below, by a
# comprehension, which is quicker in Python.
_IN_PLACE_FROM = 1 << 14


def in_creation_order(nodes: list[Node]) -> list[Node]:
    """``nodes`` sorted by creation number. A parsed program's numbers are dense, so each node
    is put at its own number's slot: a sort would make a key object per node (W3: 4 MB)."""
    if not nodes:
        return nodes
    low = high = nodes[0].seq
    for node in nodes:
        seq = node.seq
        if seq < low:
            low = seq
        elif seq > high:
            high = seq
    if high - low >= 4 * len(nodes):  # sparse: nodes built over an older graph's
        nodes.sort(key=_by_creation)
        return nodes
    slots: list[Any] = [None] * (high - low + 1)  # Node or None
    for node in nodes:
        slots[node.seq - low] = node
    if len(slots) < _IN_PLACE_FROM:
        return [node for node in slots if node is not None]
    count = 0  # the nodes moved to the front in place: no third list (W3: 0.8 MB)
    for slot in slots:
        if slot is not None:
            slots[count] = slot
            count += 1
    del slots[count:]
    return slots


def nodes_and_uses(outputs: Iterable[Node]) -> tuple[list[Node], dict[Node, int]]:
    """``nodes_of`` and, in the same walk, how often each node is an operand (0: an output)."""
    stack = list(dict.fromkeys(outputs))
    uses = dict.fromkeys(stack, 0)
    found: list[Node] = []
    while stack:  # (methods called: see nodes_of)
        node = stack.pop()
        found.append(node)
        for source in node.inputs:
            count = uses.get(source)
            if count is None:
                uses[source] = 1
                stack.append(source)
            else:
                uses[source] = count + 1
    return in_creation_order(found), uses


@dataclass
class Program:
    """A parsed program: its output node, everything the output depends on, and its inputs.

    ``nodes`` is in topological order, ``node.index`` its position, the output last;
    ``variables`` are the inputs in order of first appearance, those the program declares
    (``y = 2``) included even if unused (a leaf at the front, gradient 0); ``defaults`` the values
    it assigns; ``notes`` names that differ from a constant or function only by case (``PI``);
    ``arrays``: it runs on engine/arrays.py; ``parameters`` maps its own functions' parameter
    names to the function; ``masked``: it depends on a ``where`` (``forward_masked``).
    """

    source: str
    output: Node
    nodes: list[Node] = field(default_factory=list)
    variables: dict[str, Node] = field(default_factory=dict)
    defaults: dict[str, float] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    arrays: bool = False
    parameters: dict[str, str] = field(default_factory=dict)
    masked: bool = False
    # Several outputs (``f, g``, docs/matrix-calculus.md), run as a Jacobian; empty: one output.
    outputs: list[Node] = field(default_factory=list)
    # The name each output is written as (None: an expression), which labels it (``f, g``
    # with g = y is g, not y); empty: labelled by the nodes alone.
    output_names: list[str | None] = field(default_factory=list)

    def __init__(self, source: str, output: Node, nodes: list[Node] | None = None,
                 variables: dict[str, Node] | None = None, defaults: dict[str, float] | None = None,
                 notes: list[Note] | None = None, arrays: bool = False,
                 parameters: dict[str, str] | None = None, masked: bool = False,
                 outputs: list[Node] | None = None, output_names: list[str | None] | None = None,
                 ) -> None:
        """The fields' own (None: empty), written out: compiled, a native call (not interpreted)."""
        self.source, self.output, self.arrays, self.masked = source, output, arrays, masked
        self.nodes = [] if nodes is None else nodes
        self.variables = {} if variables is None else variables
        self.defaults = {} if defaults is None else defaults
        self.notes = [] if notes is None else notes
        self.parameters = {} if parameters is None else parameters
        self.outputs = [] if outputs is None else outputs
        self.output_names = [] if output_names is None else output_names

    @classmethod
    def build(
        cls, source: str, output: Node, variables: Iterable[Node], defaults: Mapping[str, float],
        conditional: bool = False, made: list[Node] | None = None,
    ) -> Program:
        """The program of ``output``; ``conditional``: a where(...) may be among its nodes;
        ``made``: see ``nodes_of``."""
        program = cls.build_outputs(source, [output], variables, defaults, conditional, made)
        program.outputs = []  # the usual program: one output, no Jacobian
        return program

    @classmethod
    def build_outputs(cls, source: str, outputs: list[Node], variables: Iterable[Node],
                      defaults: Mapping[str, float], conditional: bool = False,
                      made: list[Node] | None = None) -> Program:
        """A program with several outputs: every node any of them depends on."""
        nodes = nodes_of(outputs, made)
        _number(nodes)
        # An input declared (``y = 2``) but unused stays an input, gradient 0 (as in JAX).
        inputs = [v for v in variables if _among(v, nodes) or v.name in defaults]
        unused = [v for v in inputs if not _among(v, nodes)]
        if unused:
            nodes = unused + nodes
            _number(nodes)
        by_name = {v.name: v for v in inputs if v.name is not None}  # a variable always has one
        return cls(source, outputs[-1], nodes, by_name, dict(defaults),
                   masked=conditional and is_masked(nodes), outputs=list(outputs))

    def unbound(self, values: Mapping[str, float]) -> list[str]:
        """Variables the output needs that neither ``values`` nor the program's defaults give."""
        return [n for n in self.variables if n not in values and n not in self.defaults]

    def bind(self, values: Mapping[str, float]) -> None:
        """Set every variable from ``values``, falling back to the program's own defaults."""
        for name, node in self.variables.items():
            node.value = float(values[name] if name in values else self.defaults[name])


def _number(nodes: list[Node]) -> None:
    for index, node in enumerate(nodes):
        node.index = index


def _among(node: Node, nodes: list[Node]) -> bool:
    """Whether ``node`` is in ``nodes``, just numbered (no set of 10^5 nodes for a few inputs)."""
    return 0 <= node.index < len(nodes) and nodes[node.index] is node


def output_labels(program: Program) -> list[str]:
    """Each output's name (``f``) or its expression (``W@x``); a repeated one gets ``#id``."""
    outputs = program.outputs or [program.nodes[-1]]
    texts = expression_texts(program.nodes)
    written = program.output_names or [None] * len(outputs)
    labels: list[str] = []
    for node, name in zip(outputs, written, strict=True):
        label = name or node.name or texts[node.index]
        labels.append(label if label not in labels else f"{label} #{node.index}")
    return labels


# --- forward -------------------------------------------------------------------------------------

def compute(node: Node, args: list[Any], complex_step: bool = False) -> Any:
    """``node``'s op on ``args``, or a NumericError naming the node if the result is not finite.
    With ``complex_step`` the domain check looks at the real parts: log of a negative real part
    is the floats' error, not a silent complex logarithm."""
    op = node.op
    reals = [arg.real for arg in args] if complex_step else args
    if op.domain is not None:
        problem = op.domain(*reals)
        if problem is not None:
            raise numeric_error(node, reals, problem)
    try:
        value = op.apply_complex(*args) if complex_step else op.forward(*args)
    except OverflowError:
        raise numeric_error(node, reals, "overflow: the result is too large for a float") from None
    except (ValueError, ZeroDivisionError):
        raise numeric_error(node, reals, "outside the domain of " + op.name) from None
    if not (cmath.isfinite(value) if complex_step else math.isfinite(value)):
        raise numeric_error(node, reals, "overflow: the result is not a finite float")
    return value


def quick_compute(node: Node, args: list[Any]) -> Any:
    """``compute`` on floats, its error handling only where needed: the forward pass and every
    replay call this per node, so the common case is a domain test, the op and ``isfinite``."""
    op = node.op
    domain = op.domain
    two = len(args) == 2  # most nodes: compiled, f(*args) would make a tuple of the list
    if domain is None or (domain(args[0], args[1]) if two else domain(*args)) is None:
        try:
            value = op.forward(args[0], args[1]) if two else op.forward(*args)
        except (ArithmeticError, ValueError):
            return compute(node, args)  # raises the NumericError that names the node
        size: float = value  # finite as x - x == 0, unboxed: no lookup of math.isfinite
        if size - size == 0.0:
            return value
    return compute(node, args)  # raises, as above


def forward(nodes: list[Node]) -> Any:
    """Compute every node's value in topological order; return the output's (the last node)."""
    kernels = KERNELS
    for node in nodes:
        inputs = node.inputs
        if kernels and node.op.kernel and 0 < len(inputs) <= 2:  # the row's arithmetic inlined
            a, b = inputs[0].value, inputs[-1].value  # (quick_compute's list and call: 330
            if floats(a, b):  # instructions a node more, a W2 line 2% more)
                value = kernel_value(node.op.kernel, a, b)
                if value is not None:  # else the row says (and names any error)
                    node.value = value
                    continue
        if len(inputs) == 2:  # as in replay: no comprehension for the common case
            node.value = quick_compute(node, [inputs[0].value, inputs[1].value])
        elif inputs:
            node.value = quick_compute(node, [source.value for source in inputs])
    return nodes[-1].value


# --- piecewise: a node is *live* if the output depends on it through taken branches only; a dead
# node's errors are not errors (log(x) in where(x > 0, log(x), 0) at x = -1) and it passes no
# gradient on. Programs without a conditional never come here (``Program.masked``).

def is_masked(nodes: Iterable[Node]) -> bool:
    """Whether a conditional is among ``nodes`` (then evaluation goes through liveness)."""
    return any(node.op is CONDITIONAL for node in nodes)


def liveness(nodes: list[Node], value_of: Any = None,
             outputs: list[Node] | None = None) -> list[bool]:
    """Per node: whether it is live, read by ``outputs`` (default: the last node) where every
    condition takes its branch. ``value_of(node)`` gives a condition's value (default:
    ``node.value``); a NaN condition (it failed) takes neither branch, None (unknown) both."""
    live = [False] * len(nodes)
    for output in outputs or nodes[-1:]:
        live[output.index] = True
    for node in reversed(nodes):
        if not live[node.index]:
            continue
        if node.op is CONDITIONAL:
            condition, taken, other = node.inputs
            live[condition.index] = True
            value = condition.value if value_of is None else value_of(condition)
            value = value.real if isinstance(value, complex) else value
            if value is None:
                live[taken.index] = live[other.index] = True
            elif value == value:  # not NaN
                live[(taken if value else other).index] = True
        else:
            for source in node.inputs:
                live[source.index] = True
    return live


def forward_masked(nodes: list[Node]) -> tuple[Any, list[bool]]:
    """``forward`` with conditionals: a node's failure is remembered (its value NaN), then the
    first live one raises its error. Returns the output value and the liveness for ``backward``."""
    failed = []
    nan = math.nan
    for node in nodes:
        inputs = node.inputs
        if inputs:
            try:
                node.value = quick_compute(node, [source.value for source in inputs])
            except NumericError:
                node.value = nan
                failed.append(node)
    live = liveness(nodes)
    for node in failed:
        if live[node.index]:
            quick_compute(node, [source.value for source in node.inputs])  # raises its error
    return nodes[-1].value, live


def values_and_grads_of(nodes: list[Node]) -> tuple[list[Any], list[Any]]:
    """Every node's value and gradient, in two lists (what a Result keeps). Here, compiled, a
    node's fields are read as struct members; a comprehension in Python looks each one up."""
    values, grads = [], []
    for node in nodes:
        values.append(node.value)
        grads.append(node.grad)
    return values, grads


_NODE_RECORD: Final[dict[str, Any]] = dict.fromkeys(
    ("id", "op", "label", "value", "grad", "inputs", "numeric_grad", "ok"))


def node_records(nodes: list[Node], order: Iterable[int], texts: Iterable[str],
                 values: list[Any], grads: list[Any], checks: Mapping[int, Any],
                 arrays: bool) -> Iterator[dict[str, Any]]:
    """``Result.node_records``: a record per node of ``order``, labelled by ``texts``, with
    the value and gradient a Result keeps and the node's check, if any. Here, compiled, a
    node's fields are struct members and each record a dict built in C, which takes 11% off
    the instructions of a default batch line, 50 to 60 records (docs/performance.md)."""
    for i, text in zip(order, texts, strict=True):
        node, value = nodes[i], values[i]
        not_taken = type(value) is float and value != value  # NaN (``_node_lists``)
        check = checks.get(i) if checks else None
        inputs = node.inputs
        record = _NODE_RECORD.copy()  # the keys in place, in order: quicker than a dict
        record["id"] = i  # built from nothing, which grows as it fills (1% of a batch line)
        record["op"] = node.op.name
        record["label"] = node.name or text
        record["value"] = None if not_taken else value  # shown as null
        record["grad"] = grads[i] if node.needs_grad else None
        record["inputs"] = [inputs[0].index, inputs[1].index] if len(inputs) == 2 else [
            source.index for source in inputs]
        if check is not None:
            record["numeric_grad"], record["ok"] = check.numeric, check.ok
        if arrays:  # the shape of value and gradient ([] for a scalar); the check's worst
            shaped = node.value if not_taken else value  # (its value: NaN of its shape)
            record["shape"] = list(getattr(shaped, "shape", ()))  # element, and where
            record["where"] = None if check is None else list(getattr(check, "where", ()))
        yield record


def values_and_gradients(program: Program) -> Any:
    """Forward and backward at the point bound in ``program``'s variables; the output value."""
    if program.masked:
        value, live = forward_masked(program.nodes)
        backward(program.nodes, live)
        return value
    value = forward(program.nodes)
    backward(program.nodes)
    return value


# --- backward ------------------------------------------------------------------------------------

def backward(nodes: list[Node], live: list[bool] | None = None) -> None:
    """Reverse-mode gradients of the output (the last node) into every node that needs one; with
    ``live`` (``forward_masked``) a dead node passes nothing on."""
    zero: Any = 0.0  # one float for every node (compiled, a literal is boxed per assignment)
    kernels = KERNELS
    for node in nodes:
        node.grad = zero
    nodes[-1].grad = 1.0
    for node in reversed(nodes):
        inputs = node.inputs
        if not inputs or not node.needs_grad:
            continue
        if live is not None and not live[node.index]:
            continue
        if len(inputs) == 2:  # as in forward: no comprehension for the common case
            args = [inputs[0].value, inputs[1].value]
        else:
            args = [source.value for source in inputs]
        op, out = node.op, node.value
        grad: float = node.grad  # floats unboxed (compiled): the sum below makes one float,
        rules, constants = op.rules, op.constants  # and finite is x - x == 0, no isfinite call
        # the row's slopes inlined, on floats (row.kernel_slope)
        kernel = op.kernel if kernels and floats(args[0], args[-1]) and isinstance(
            out, float) else 0
        position = -1
        for source in inputs:
            position += 1
            if source.needs_grad:
                slope = constants[position] if constants else None  # a number: no call
                if slope is not None:
                    partial: float = slope
                else:
                    if kernel:
                        partial = kernel_slope(kernel, position, args[0], args[-1], out)
                    if not kernel or partial - partial != 0.0:  # not finite: the rule says
                        try:  # local_derivative inlined in the common case (it raises the error)
                            partial = rules[position](*args, out)
                        except (ValueError, ZeroDivisionError, OverflowError):
                            partial = math.inf
                        if partial - partial != 0.0:  # inf or NaN
                            partial = local_derivative(node, args, position)
                total: float = source.grad
                total += grad * partial
                source.grad = total
                if total - total != 0.0:
                    raise numeric_error(node, args, "the gradient overflows")


def local_derivative(node: Node, args: list[Any], position: int) -> Any:
    """d(node)/d(operand ``position``) from the op table, or a NumericError if not finite."""
    op = node.op
    try:
        partial = op.rules[position](*args, node.value)
    except (ValueError, ZeroDivisionError, OverflowError):
        partial = math.inf
    if not math.isfinite(partial):
        raise numeric_error(node, args, f"the derivative of {op.name}"
                                        f"{with_respect_to(node, position)} is not finite here")
    return partial


def with_respect_to(node: Node, position: int) -> str:
    """`` with respect to its first operand x`` in a message about one of several operands."""
    if len(node.inputs) < 2:
        return ""
    ordinal = ("first", "second", "third")[position] if position < 3 else f"operand {position + 1}"
    return f" with respect to its {ordinal} operand {node_text(node.inputs[position])}"


def node_text(node: Node) -> str:
    """The node's name if it has one, else its expression (operands abbreviated when long)."""
    return node.name or expression_texts(nodes_of([node]))[-1]


def describe(node: Node) -> str:
    """``#3 log(x - 2)``: how messages name a node."""
    return f"#{node.index} {node_text(node)}" if node.index >= 0 else node_text(node)


def numeric_error(node: Node, args: list[Any], problem: str) -> NumericError:
    """A NumericError that names the node, its expression and its operand values."""
    operands = ", ".join(
        f"{node_text(source)} = {format_number(value)}"
        for source, value in zip(node.inputs, args, strict=False)
        if source.op is not CONST
    )
    where = f", where {operands}" if operands else ""
    return NumericError(f"{problem} in {describe(node)}{where}")
