"""What ``gradcli diff`` asks to have checked (``DiffCheck``) and what the check reports
(``Checked``); the truth a printed derivative is held to (the numeric engine's numbers at a
point, or differences of them), and how a printed entry is read back to be compared with it
(gradcheck/agreement.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gradcli.engine import arrays, graph
from gradcli.engine.graph import Program, output_labels
from gradcli.engine.notation import derivative_label
from gradcli.errors import CheckError, GradcliError, NumericError, UsageError
from gradcli.gradcheck.agreement import (
    BUG_HINT,
    FD_ATOL,
    FD_RTOL,
    compare,
    point_text,
    rough,
    swamped,
)
from gradcli.gradcheck.quotients import (
    STEP,
    Quotients,
    Sides,
    differences,
    one_sided,
)
from gradcli.language.values import runs_on_arrays

POINTS = 3  # sample points checked when the values given leave variables free
LARGE = 10_000  # input elements past which one point is checked
DIRECTIONAL = 30  # a variable's elements past which its Hessian blocks are checked along a
# random direction (H@v against the difference of the gradient along v), not element by element


@dataclass
class DiffCheck:
    """What ``diff`` is about to print, to be checked.

    ``texts`` nests the derivatives one level per index as printed in gradcli's language:
    ``{x: text}`` (gradient), ``{output label: {x: text}}`` (Jacobian), ``{x: {y: text}}``
    (Hessian); ``levels`` holds orders 2..k for ``higher`` (order k >= 3 of a scalar
    program). ``python`` is the ``--format python`` source and ``python_kind`` its shape:
    ``scalar`` (``value, (gradient...), ((hessian...)...)``), ``array`` (``value, {x: g}``) or
    ``blocks`` (``values, {row: {x: block}}``)."""

    program: Program
    shapes: dict[str, tuple[int, ...]]
    given: dict[str, Any]
    kind: str
    texts: dict[str, Any]
    levels: dict[int, dict[str, Any]] = field(default_factory=dict)
    python: str | None = None
    python_kind: str = ""
    wrt: list[str] = field(default_factory=list)  # the order of a scalar export's entries

    def by_differences(self, name: str) -> bool:
        """Whether first derivatives by ``name`` are checked against differences of the value,
        as eval's are (a kink then says so): ``name`` has a value, in a program of numbers.
        Where every variable has one, diff prints the engine's own numbers, which compared
        with the engine would be compared with themselves; where others stay free, the
        expressions printed hold its value fixed, and only differences in it see a kink there
        (abs(x)*y at x = 0). Array programs print formulas: the engine checks them."""
        return self.kind in ("gradient", "jacobian") and name in self.given and not any(
            self.shapes.values())


@dataclass(frozen=True)
class Checked:
    """How many points and entries a check compared (what ``diff`` says it did)."""

    points: int
    entries: int
    against: str
    at_given: bool = False  # every variable had a value: the check was asked there only
    # entries that no difference can check where the order below has a kink or a jump (why)
    conventions: tuple[str, ...] = ()
    unseen: tuple[str, ...] = ()  # pieces of a piecewise program no checked point took

    @property
    def confirmed(self) -> bool:
        """Every entry compared at some point, none left to a convention (a ✓ may say so)."""
        return bool(self.points) and not self.conventions

    def note(self) -> str:
        if self.points and self.entries == len(self.conventions):  # none compared
            return "; ".join((*self.conventions, *self.unseen))
        return "; ".join((self._compared(), *self.conventions, *self.unseen))

    def _compared(self) -> str:
        if not self.points and self.at_given:
            return ("not checked: the differences that would check it cannot be taken near "
                    "the values given (a step leaves the domain, or a value overflows); check "
                    "it at other values")
        if not self.points:
            return ("not checked: no point found where the program and its derivatives are "
                    "defined (give values, --x 2, to check at them)")
        where = "point" if self.points == 1 else "points"
        entries = self.entries - len(self.conventions)
        agree = "derivatives agree" if entries != 1 else "derivative agrees"
        return f"checked at {self.points} {where}: {entries} {agree} with {self.against}"

    def record(self) -> dict[str, Any]:
        return {"points": self.points, "entries": self.entries, "against": self.against,
                "conventions": list(self.conventions), "unchecked_pieces": list(self.unseen)}


def paths(tree: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple, Any]]:
    """(path, leaf) of a nested dict, in order (depth at most the order, 6)."""
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from paths(value, (*path, key))
        else:
            yield (*path, key), value


# --- a printed entry read back and compared ----------------------------------------------------

def read_entry(label: str, text: str, variables: Collection[str]) -> Program:
    """The printed ``text`` parsed back, its ``variables`` the program's: a constant's name
    that the program made a variable (``e = 2``) is that variable here too."""
    from gradcli.language.parser import parse

    try:
        return parse(text, given=variables, both_ways=True)
    except GradcliError as error:
        raise CheckError(f"{label} = {text} does not read back: {error.message}",
                         hint=BUG_HINT) from None


def entry_label(kind: str, path: tuple[str, ...]) -> str:
    if kind == "jacobian":  # the output always in parentheses, unlike derivative_label's df/dx
        return f"d({path[0]})/d{path[1]}"
    return derivative_label(path)


# --- the truth ---------------------------------------------------------------------------------

class Truth:
    """The program's value and derivatives at one point, from the numeric engine."""

    def __init__(self, request: DiffCheck, point: dict[str, Any]) -> None:
        self.request = request
        self.point = point
        self.cache: dict[tuple, Any] = {}

    def prepare(self) -> None:
        """The value and first derivatives (a NumericError: not defined here), and, for a
        Hessian, its differences (a NumericError: a step left the domain)."""
        if self.request.kind == "jacobian":
            from gradcli.engine.jacobian import blocks

            self.value = self.values()  # binds and evaluates the program at the point
            self.jacobian = blocks(self.request.program, "reverse")
        else:
            self.gradient = _gradient(self.request.program, self.point)
            self.value = self.request.program.output.value
        if self.request.kind in ("hessian", "higher"):
            for name in self.request.shapes:
                self.second(name)

    def values(self, point: Mapping[str, Any] | None = None) -> Any:
        """The program's value at ``point`` (the truth's own by default); its outputs' by
        label for several outputs or an array output."""
        program, point = self.request.program, self.point if point is None else point
        if program.outputs:
            arrays.bind(program, dict(point))
            arrays.forward(program.nodes, program.outputs)
            return {label: node.value
                    for label, node in zip(output_labels(program), program.outputs, strict=True)}
        return value_at(program, point)

    def second(self, name: str) -> Quotients:
        """d(gradient)/d(name) for every variable, by central differences; along one random
        direction for a variable of more than ``DIRECTIONAL`` elements (``project``)."""
        key = ("second", name)
        if key not in self.cache:
            program, v = self.request.program, self.direction(name)
            if v is None:
                found = differences(lambda p: _gradient(program, p), self.point, name)
            else:
                base, zero = self.point[name], arrays.numpy().asarray(0.0)
                found = differences(lambda p: _gradient(program, {
                    **self.point, name: base + p["t"] * v}), {"t": zero}, "t")
            self.cache[key] = found
        return self.cache[key]

    def direction(self, name: str) -> Any:
        """A fixed random direction for a large variable's Hessian blocks (None: small)."""
        np = arrays.numpy()
        shape = np.shape(self.point[name])
        if math.prod(shape) <= DIRECTIONAL:
            return None
        return np.random.default_rng(math.prod(shape)).standard_normal(shape)

    def project(self, path: tuple[str, ...], printed: Any) -> Any:
        """A printed Hessian block times the direction of ``path[-1]`` (when it has one)."""
        np = arrays.numpy()
        v = self.direction(path[-1]) if len(path) == 2 else None
        if v is None:
            return printed
        out = np.shape(self.point[path[0]])
        block = np.broadcast_to(np.asarray(printed, dtype=float), out + np.shape(v))
        return np.tensordot(block, v, axes=v.ndim)

    def expected(self, path: tuple[str, ...]) -> Quotients | None:
        """The true value of the entry at ``path`` and its rounding noise: differences, or None
        where the engine gives it exactly (``exact``)."""
        if self.request.by_differences(path[-1]):
            try:
                return differences(self.below(path), self.point, path[-1])
            except NumericError:  # a step past an edge next to 0 (sqrt at 1e-12): its own scale
                return differences(self.below(path), self.point, path[-1], own=True)
        if self.request.kind == "jacobian" or len(path) == 1:
            return None
        if len(path) == 2:
            second = self.second(path[1])
            return Quotients(second.value[path[0]], second.noise[path[0]])
        return differences(self.below(path), self.point, path[-1])

    def exact(self, path: tuple[str, ...]) -> Any:
        """The engine's own number for the entry at ``path`` (``expected`` is None)."""
        if self.request.kind == "jacobian":
            return self.jacobian[path[0]][path[1]]
        return self.gradient[path[0]]

    def below(self, path: tuple[str, ...]) -> Callable[[dict[str, Any]], Any]:
        """The function whose derivative by ``path[-1]`` the entry at ``path`` is (order 2
        and up): the numeric gradient's entry, the engine's Hessian entry (order 3, where it
        is defined at the point), or the printed derivative of the order below; the value (an
        output's, in a Jacobian) for a first derivative. The engine's Hessian keeps digits
        that printed formulas lose (s (1 - s) of sigmoid(40) is 0, silu's at 40 steps by ulps
        of 1 - s): their differences would check a third derivative against their noise."""
        if self.request.kind == "jacobian":  # several outputs by label, or one array output
            return lambda p: _output(self.values(p), path[0])
        if len(path) == 1:
            return lambda p: self.values(p)
        if len(path) == 2:
            return lambda p: _gradient(self.request.program, p)[path[0]]
        if len(path) == 3 and self._hessian(self.point) is not None:
            return lambda p: self._hessian(p)[path[0]][path[1]]
        kind = self.request.kind
        text = dict(paths(self.request.levels.get(len(path) - 1) or {})).get(path[:-1])
        if text is None:
            raise CheckError(f"no printed derivative of order {len(path) - 1} to compare "
                             f"{entry_label(kind, path)} with")
        program = read_entry(entry_label(kind, path[:-1]), text, self.request.program.variables)
        return lambda p: value_at(program, p)

    def _hessian(self, point: Mapping[str, Any]) -> dict[str, dict[str, Any]] | None:
        """The engine's Hessian at ``point`` (once per point), or None where its formulas
        have no value though the program has (a NumericError)."""
        from gradcli.gradcheck.hessian import gradient_programs, hessian_row, once_each

        program = self.request.program
        if ("rows",) not in self.cache:  # the gradient's formulas, built once for every point
            self.cache[("rows",)] = gradient_programs(program)
        key = ("hessian", *(float(point[name]) for name in program.variables))
        if key not in self.cache:
            names = list(program.variables)
            try:
                self.cache[key] = once_each({name: hessian_row(name, row, point, names)
                                             for name, row in self.cache[("rows",)]}, names)
            except NumericError:
                self.cache[key] = None
        if self.cache[key] is None and point is not self.point:
            raise NumericError("the Hessian has no value a step away")
        return self.cache[key]

    def differenced(self, path: tuple[str, ...]) -> str:
        """What ``expected`` takes differences of, as a note names it."""
        if self.request.kind == "jacobian" or len(path) == 1:
            return "the program's values"
        return {2: "the gradient's values", 3: "the Hessian's values"}.get(
            len(path), f"the values of the order-{len(path) - 1} derivative")

    def closer(self, path: tuple[str, ...]) -> Quotients:
        """The differences of ``expected`` at a tenth of the step."""
        return differences(self.below(path), self.point, path[-1], STEP * 0.1)

    def with_smaller_steps(self, path: tuple[str, ...], printed: Any) -> Quotients | None:
        """The difference with a smaller step that agrees, if one does (a point near a
        domain's edge or a fast-changing function: sqrt(x) at 1e-4, tanh(1e5*x) at 0)."""
        for step, own in ((STEP * 1e-1, False), (STEP * 1e-2, False), (STEP * 1e-3, False),
                          (STEP, True), (STEP * 1e-5, False), (STEP * 1e-6, False)):
            try:
                found = differences(self.below(path), self.point, path[-1], step, own)
                if arrays.numpy().any(swamped(found)):  # its rounding would pass any entry
                    continue
                compare("", "", self.point, printed, found.value, False, strict=False,
                        noise=found.noise)
            except (CheckError, NumericError):
                continue
            return found
        return None

    def symmetric_kink(self, label: str, path: tuple[str, ...], printed: Any,
                       steep: bool = False) -> str | None:
        """Why ``printed``, which central differences passed, is a convention all the same:
        the order below has a kink at the point whose sides' slopes the central difference
        averages (x*abs(x) at 0: the gradient 2|x| has slopes -2 and 2, and their mean 0 is
        the rules' value), or None. One-sided differences tell (``one_sided_verdict``), for a
        variable checked element by element (no ``direction``: six evaluations each).
        ``steep``: they passed at a smaller step only, where a steep curve (tanh(1e5*x) at 0)
        has slopes apart at the first steps as a kink (elu(x)'s gradient at 0) does."""
        if self.direction(path[-1]) is not None:
            return None
        agrees, convention = self.one_sided_verdict(label, path, printed, steep)
        return convention if agrees else None

    def refuse_a_removable_convention(self, label: str, text: str, path: tuple[str, ...],
                                      printed: Any, expected: Any) -> None:
        """The CheckError for a second derivative of the rules that is the function's beside
        the point on both sides but not at it: a convention of a kink inside the program
        (abs'(0) = 0 in abs(x)**2, whose second derivative is 2 everywhere) that the function
        smooths over. Not a bug of diff's, so not ``BUG_HINT``; nothing is raised for any
        other disagreement, nor for a program of arrays or an order above 2."""
        from gradcli.gradcheck.hessian import hessian_at

        program, name = self.request.program, path[-1]
        if len(path) != 2 or program.arrays:
            return
        value = float(self.point[name])
        h = 1e-6 * max(1.0, abs(value))
        try:  # the rules give what was printed at the point, and the function's beside it
            at_point = hessian_at(program, dict(self.point)).matrix[path[0]][name]
            compare(label, text, self.point, printed, at_point, True, strict=False)
            for step in (-h, h):
                beside = hessian_at(program, {**self.point, name: value + step}).matrix
                compare(label, text, self.point, beside[path[0]][name], expected, False,
                        strict=False)
        except (CheckError, NumericError, UsageError):
            return
        at = point_text(self.point)
        raise CheckError(
            f"{label} at {at} is {text} by the rules' convention at a kink inside the program, "
            f"but this function's is {rough(expected)}, as the rules give it beside the point "
            "on both sides", hint="the program is smooth there, its rules are not: gradcli eval "
                                  "at a point beside it gives the numbers")

    def refuse_a_slow_convergence(self, label: str, text: str, path: tuple[str, ...],
                                  printed: Any) -> None:
        """The CheckError for ``printed``, which every difference fails, where each side's
        derivative closes in on it at least tenfold as the steps shrink 10^4-fold
        (``one_sided``'s ``small``) but is still too far to confirm it: |x|**2.5's second
        derivative at 0 is 0, and differences a step h away give 2.5 h**0.5. Too slow to tell
        it from a value near it, so it is refused, but not as a bug of diff's; nothing is
        raised where the differences do not close in on it."""
        np = arrays.numpy()
        function, name = self.below(path), path[-1]
        try:
            far = one_sided(function, self.point, name)
            near = one_sided(function, self.point, name, small=True)
        except NumericError:
            return
        with np.errstate(invalid="ignore"):
            left, right = np.abs(near.left - printed), np.abs(near.right - printed)
            closing = ((left <= 0.1 * np.abs(far.left - printed))
                       & (right <= 0.1 * np.abs(far.right - printed))
                       & ~(far.kinks | far.jumps | near.jumps))
        if not np.all(closing):
            return
        at = point_text(self.point)
        raise CheckError(
            f"{label} at {at} is {text}, which differences cannot confirm: each side's closes "
            f"in on it as the steps shrink, but slowly (still {rough(np.max(left + right))} "
            "away at the smallest step)", hint="gradcli diff --no-check prints it unchecked; "
                                               "at a point beside it the check can be made")

    def one_sided_verdict(self, label: str, path: tuple[str, ...], printed: Any,
                          steep: bool = True) -> tuple[bool, str | None]:
        """``printed``, which central differences fail, against each side's own derivative:
        (agrees, why it is a convention). Where both sides agree with it and the order below
        is continuous, the derivative exists and is checked (|x|**3 at 0). Where the order
        below has a kink or a jump, no derivative exists and central differences across it
        are no reference: a value between the two sides' derivatives is a convention (relu(x)*x
        at 0: 0, between 0 and 2), and any value is where the order below jumps (exp(-abs(x))
        at 0, whose first derivative goes from 1 to -1: the rules' sign(0) = 0 gives 0). A kink
        a step away, not at the point (an edge 1e-9 off), is not one: smaller steps tell
        (``one_sided``'s ``small``), and their sides are the reference there. ``steep``: sides
        whose gap more than halves there are a steep curve's, closing in, not a kink's; they
        check a value only where it agrees with both."""
        np = arrays.numpy()
        function, name = self.below(path), path[-1]
        try:
            sides = one_sided(function, self.point, name)
            odd = sides.kinks | sides.jumps
            closing = np.zeros(np.shape(odd), dtype=bool)
            if np.any(odd):
                near = one_sided(function, self.point, name, small=True)
                if steep:  # a kink's slopes keep their gap at smaller steps, a steep curve's
                    kept = np.abs(near.right - near.left) > 0.5 * np.abs(sides.right - sides.left)
                    closing = odd & near.kinks & ~kept & ~near.jumps  # no kink, no agreement
                    odd &= ~closing
                odd &= near.kinks | near.jumps | ~near.resolved  # 5000 + relu(x) at 0
                pairs = zip(sides.fields(), near.fields(), strict=True)
                sides = Sides(*(np.where(odd, mine, theirs) for mine, theirs in pairs))
        except NumericError:
            return False, None
        low, high = np.minimum(sides.left, sides.right), np.maximum(sides.left, sides.right)
        slack = FD_ATOL + FD_RTOL * np.maximum(np.abs(low), np.abs(high)) + sides.noise
        printed = np.broadcast_to(np.asarray(printed, dtype=float), np.shape(low))
        between = (printed >= low - slack) & (printed <= high + slack)
        # closing slopes check a value only where it agrees with both (abs(x)**1.1 at 0: its
        # sides, +-0.1 at the smaller steps, would pass anything between them)
        between &= ~closing | (printed >= high - slack) & (printed <= low + slack)
        if not (np.all(between | (odd & sides.jumps)) and np.all(np.isfinite(printed))):
            return False, None
        if not np.any(odd):
            return True, None  # both sides agree with it: one-sided differences check it
        below = {1: "the value", 2: "the gradient"}.get(
            1 if self.request.kind == "jacobian" else len(path),
            f"the order-{len(path) - 1} derivative")
        scalar = np.size(low) == 1
        if np.any(sides.jumps & odd):
            how = (f"jumps there (from {rough(sides.before)} to {rough(sides.after)})"
                   if scalar else "jumps there")
        else:
            how = (f"has a kink there (its sides' slopes {rough(low)} and {rough(high)})"
                   if scalar else "has a kink there")
        at = point_text(self.point)
        return True, (f"{label} at {at} is a convention, not checked: {below} {how}, so no "
                      "derivative exists, and the value printed is the rules'")


def _output(values: Any, label: str) -> Any:
    return values[label] if isinstance(values, dict) else values


def _gradient(program: Program, point: Mapping[str, Any]) -> dict[str, Any]:
    """The reverse-mode gradient of every variable at ``point``."""
    np = arrays.numpy()
    if runs_on_arrays(program, point):
        arrays.bind(program, dict(point))
        arrays.forward(program.nodes, program.outputs)
        arrays.backward(program.nodes)
        return {n: np.array(node.grad, dtype=float) for n, node in program.variables.items()}
    program.bind({n: float(point[n]) for n in program.variables})
    graph.values_and_gradients(program)
    return {n: np.asarray(float(node.grad)) for n, node in program.variables.items()}


def value_at(program: Program, point: Mapping[str, Any]) -> Any:
    """The value of ``program`` at ``point`` (its variables only), as an array."""
    np = arrays.numpy()
    values = {n: point[n] for n in program.variables}
    if runs_on_arrays(program, point):
        arrays.bind(program, values)
        return np.asarray(arrays.forward(program.nodes, program.outputs), dtype=float)
    program.bind({n: float(v) for n, v in values.items()})
    if program.masked:
        return np.asarray(float(graph.forward_masked(program.nodes)[0]))
    return np.asarray(float(graph.forward(program.nodes)))
