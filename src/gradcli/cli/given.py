"""Values given on the command line, and the usage errors about them that gradcli never keeps quiet.

A value is given once, for a name the program uses: ``--w 3`` for a program in ``W``, ``--rtl 1``
meant as ``--rtol``, ``--u 3`` for a computed name are usage errors that suggest what was meant.
In a batch, a name that no line uses is the error, after the last record. The Python API ignores
unused names; the check lives here, where it is known how each value was written.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from gradcli.errors import MAX_LISTED_NAMES, UsageError, listed, visible
from gradcli.language.values import Value, parse_assignments

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from gradcli.engine.graph import Program

# ctx.meta: the ``--NAME VALUE`` bindings, as (NAME=VALUE, as written), in the order given
BINDINGS_KEY = "gradcli.bindings"


class Given:
    """The values of ``--NAME VALUE`` and ``--set NAME=VALUE``, and how each was written. (A
    plain class: a dataclass costs about 1 ms of start-up.)"""

    def __init__(self, values: dict[str, Value] | None = None,
                 spelled: dict[str, str] | None = None, options: tuple[str, ...] = (),
                 optional: frozenset[str] = frozenset(),
                 elsewhere: Callable[[], dict[str, str]] = dict,
                 command: str = "this command") -> None:
        self.values: dict[str, Value] = {} if values is None else values
        self.spelled: dict[str, str] = {} if spelled is None else spelled  # name -> "--w 3"
        self.options = options  # the command's own long options: `--rtl 1` meant `--rtol`
        self.optional = optional  # may go unused (--values FILE --allow-unused)
        # Other commands' options, and whose (``--wrt`` -> "gradcli diff"), made only for the
        # error about ``gradcli eval ... --wrt y``.
        self.elsewhere = elsewhere
        self.command = command

    @classmethod
    def read(cls, written: Iterable[tuple[str, str]], options: Iterable[str] = (),
             elsewhere: Callable[[], dict[str, str]] = dict,
             command: str = "this command") -> Given:
        """``(NAME=VALUE, as written)`` pairs, in order; a value given twice is a UsageError."""
        spelled: dict[str, str] = {}
        values: dict[str, Value] = {}
        given = cls(values, spelled, tuple(options), elsewhere=elsewhere, command=command)
        for text, as_written in written:
            name = text.partition("=")[0].strip()
            if name in spelled:
                raise UsageError(
                    f"{name} is given twice: {visible(spelled[name])} and {visible(as_written)}",
                    hint=f"give {name} one value (several values for a sweep: --{name} 1,2,5 "
                         f"or --{name} -2:2:9)")
            spelled[name] = as_written
            try:
                values.update(parse_assignments([text]))
            except UsageError:  # `--check_method central`: an option, not a variable
                option = None if as_written.startswith("--set") else closest_option(
                    name, given.options)
                if option is not None:
                    raise UsageError(f"no such option --{visible(name)}",
                                     hint=f"did you mean {option[0]}?") from None
                foreign = given.foreign_option(name)
                if foreign is not None:
                    raise foreign from None
                raise
        return given

    def foreign_option(self, name: str) -> UsageError | None:
        """The error for ``--name``, an option of another command but not of this one, or None."""
        owners = self.elsewhere().get(f"--{name}")
        if owners is None or f"--{name}" in self.options:
            return None
        return UsageError(f"{self.command} has no option --{name}",
                          hint=f"--{name} is an option of {owners}")

    def check_used(self, program: Program) -> None:
        """A UsageError for a value given for a name that ``program`` does not take as input."""
        if not self.values:
            return
        inputs = program.variables
        unused = self.unused(inputs)
        if unused:
            raise self.unused_error(unused, inputs, program)

    def unused(self, used: Collection[str]) -> list[str]:
        """The given names that are not in ``used`` (nor allowed to be unused), in order."""
        return [name for name in self.values if name not in used and name not in self.optional]

    def unused_error(self, unused: list[str], inputs: Collection[str],
                     program: Program | None = None, unread: int = 0) -> UsageError:
        """The error for values given for ``unused`` names: ``program`` is the one program they
        were given to, or None for a batch: ``inputs`` are then its lines' variables (but
        ``unread`` lines', which failed before their variables were known)."""
        shown = ", ".join(visible(self.spelled.get(name, f"--{name}"))
                          for name in unused[:MAX_LISTED_NAMES])
        foreign = self.foreign_option(unused[0]) if len(unused) == 1 else None
        if foreign is not None and (program is None or unused[0] not in program.parameters):
            return foreign
        if program is not None:
            message = (_why_unused(unused[0], shown, program) if len(unused) == 1 else
                       f"the program does not use {listed(unused)} ({shown})")
            known = f"its variables: {listed(list(inputs))}" if inputs else "it has no variables"
        else:
            message = f"no program line uses {listed(unused)} ({shown})"
            if unread:
                message = (message.replace("program line uses", "line that was read uses") +
                           f"; {unread:,} {'line' if unread == 1 else 'lines'} failed before "
                           f"{'its' if unread == 1 else 'their'} variables were known")
            known = f"the lines' variables: {listed(list(inputs))}" if inputs else (
                "no line has variables")
        guesses = [(name, guess) for name in unused[:MAX_LISTED_NAMES]
                   if (guess := self._closest(name, inputs)) is not None]
        if not guesses:
            return UsageError(message, hint=known)
        if len(unused) == 1:
            return UsageError(message, hint=f"did you mean {guesses[0][1]}? {known}")
        meant = ", ".join(f"{guess} for --{name}" for name, guess in guesses)
        return UsageError(message, hint=f"did you mean {meant}? {known}")

    def _closest(self, name: str, inputs: Collection[str]) -> str | None:
        """``--W`` for ``w`` (case first), else the nearest free variable or option."""
        import difflib  # only for this message

        free = [n for n in inputs if n not in self.values]
        lower = name.lower()
        by_lower: dict[str, str] = {}
        for candidate in free:
            if candidate.lower() == lower:
                return f"--{candidate}"
            by_lower.setdefault(candidate.lower(), candidate)
        variable = difflib.get_close_matches(lower, by_lower, n=1)
        option = closest_option(name, self.options)
        if option is not None and (not variable or option[1] > difflib.SequenceMatcher(
                None, lower, variable[0]).ratio()):
            return f"the option {option[0]}"
        return f"--{by_lower[variable[0]]}" if variable else None


def closest_option(name: str, options: Iterable[str]) -> tuple[str, float] | None:
    """The option nearest ``name`` and how near (difflib's ratio), if near enough: a slip
    (check_method, hesian), a beginning (hes) or swapped letters (wtr); not three letters
    that happen to be in it (sin is no hessian)."""
    import difflib  # only for this message

    key = name.lower().replace("_", "-")
    by_name = {option[2:].lower(): option for option in options}
    near = [(difflib.SequenceMatcher(None, key, option).ratio(), option) for option in by_name
            if sorted(option) == sorted(key) or (len(key) >= 3 and option.startswith(key))]
    ratio, close = max(near, default=(0.0, ""))
    if not close:
        found = difflib.get_close_matches(key, by_name, n=1, cutoff=0.75)
        if not found:
            return None
        close = found[0]
        ratio = difflib.SequenceMatcher(None, key, close).ratio()
    return by_name[close], ratio


def _why_unused(name: str, shown: str, program: Program) -> str:
    """Why ``program`` does not use ``name``: it computes it, a function of it has it as a
    parameter, or the name is not in it."""
    if name in program.parameters:
        return (f"{name} is a parameter of the program's function {program.parameters[name]}, "
                f"not an input, so {shown} would be ignored")
    if any(node.name == name for node in program.nodes):
        return f"{name} is computed by the program, not an input, so {shown} would be ignored"
    return f"the program has no variable {name} ({shown})"


def check_batch_names(given: Given, used: Collection[str], lines: int,
                      unread: int = 0, resumed: bool = False) -> UsageError | None:
    """After a batch: the error for no program lines (but where ``--skip`` passed them:
    ``resumed``), or for a given name that no line uses (``used``: the variables of every line
    that parsed), or None."""
    if lines == 0 and not resumed:
        return UsageError("no programs on stdin",
                          hint="give one program per line (blank lines and # comments are "
                               "skipped), or the program as EXPR: gradcli eval \"x**2\" --x 3")
    unused = given.unused(used)
    if not unused:
        return None
    return given.unused_error(unused, sorted(used, key=str.lower), unread=unread)
