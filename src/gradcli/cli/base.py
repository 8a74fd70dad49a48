"""The command group, how commands read values and stdin, and the entry point's exit statuses."""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import re
import stat
import sys
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

import click

from gradcli import __version__
from gradcli.cli import streams
from gradcli.cli.given import Given, closest_option
from gradcli.cli.streams import (
    OutputFailedError,
    _WholeWrites,  # noqa: F401 (tests reach it here)
)
from gradcli.cli.usage import shown
from gradcli.cli.values_file import (
    ALLOW_UNUSED_KEY,
    VALUES_FILE_KEY,
    complete_files,
    values_file_options,
    with_file_values,
)
from gradcli.engine import stale_core_modules
from gradcli.errors import ExitStatus, GradcliError, UsageError, out_of_memory, visible
from gradcli.language.values import NAME
from gradcli.limits import CHARS_PER_NODE, MAX_NODES, max_chars

BINDINGS_KEY = "gradcli.bindings"
# What an option looks like; anything else after `--` (`---x`, `--(x)`) is an expression.
_OPTION_LIKE = re.compile(r"--[A-Za-z][-A-Za-z0-9_]*")

class GradcliCommand(click.Command):
    """Every gradcli command: an option that takes a value, given twice, is a usage error.

    click keeps the last one, so ``--wrt x --wrt y`` would differentiate by y alone and
    ``--values a.json --values b.json`` would read only b.json; gradcli never drops what a
    person typed. Flags (``--json --json``) and repeatable options (``--set``) are fine."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            _, _, order = self.make_parser(ctx).parse_args(args=list(args))
            _refuse_repeats(order)
        return super().parse_args(ctx, args)


def _refuse_repeats(order: Iterable[click.Parameter]) -> None:
    """A UsageError for the first single-valued option that ``order`` (click's record of the
    options seen, one entry per time) holds more than once."""
    seen: set[str] = set()
    for param in order:
        if not isinstance(param, click.Option) or param.multiple or param.is_flag or (
                param.count or param.name is None):
            continue
        if param.name in seen:
            written = "/".join(param.opts)
            form = f": {max(param.opts, key=len)} {param.metavar}" if param.metavar else ""
            raise UsageError(f"{written} is given twice, and only one can count",
                             hint=f"give it once{form}")
        seen.add(param.name)


class BindingCommand(GradcliCommand):
    """Lets any ``--NAME VALUE`` bind a variable and lets EXPR start with ``-`` (eval, graph, plot).

    Before click parses, arguments that are not the command's own options are taken out:
    ``--NAME VALUE`` and ``--NAME=VALUE`` become bindings; anything else is the expression, passed
    after ``--`` so that ``-x**2`` is never read as a cluster of short options.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value = {
            flag: not param.is_flag
            for param in self.get_params(ctx)
            if isinstance(param, click.Option)
            for flag in (*param.opts, *param.secondary_opts)
        }
        foreign = _flags_of_other_commands(ctx, takes_value)
        try:
            options, bindings, positional = _split_arguments(args, takes_value, foreign)
        except UsageError:
            if not ctx.resilient_parsing or not args:
                raise
            # Shell completion of `... --W <Tab>`: what comes before the unfinished binding.
            options, bindings, positional = _split_arguments(args[:-1], takes_value, foreign)
        ctx.meta[BINDINGS_KEY] = bindings
        return super().parse_args(ctx, options + (["--", *positional] if positional else []))

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        """The program's own variables (``--x --W``) before the options (``cli.completion``)."""
        from gradcli.cli.completion import variable_options

        return [*variable_options(ctx, incomplete), *super().shell_complete(ctx, incomplete)]

    def long_options(self, ctx: click.Context) -> tuple[str, ...]:
        """``--rtol``, ``--json``, ...: what a mistyped ``--rtl 1`` may have meant."""
        return tuple(flag for param in self.get_params(ctx) if isinstance(param, click.Option)
                     for flag in param.opts if flag.startswith("--") and flag != "--help")


def _options_of_other_commands(ctx: click.Context, own: Iterable[str]) -> dict[str, str]:
    """Each long option of gradcli's other commands that this one lacks, with its commands
    (``--wrt`` -> ``gradcli diff``): the words of the error for ``gradcli eval ... --wrt y``."""
    group = ctx.parent.command if ctx.parent is not None else None
    owners: dict[str, list[str]] = {}
    for name, command in every_command(group).items():
        for param in command.params:
            if isinstance(param, click.Option):
                for flag in param.opts:
                    if flag.startswith("--") and flag not in own and flag != "--help":
                        owners.setdefault(flag, []).append(f"gradcli {name}")
    return {flag: " and ".join(names) for flag, names in owners.items()}


def _flags_of_other_commands(ctx: click.Context, own: dict[str, bool]) -> set[str]:
    """``--json`` and the like of gradcli's other commands: given to a command that lacks them,
    they are a mistaken option (click says so), not a variable waiting for a value. Read from
    ``COMMANDS``, so that ``gradcli eval`` need not load the other commands to know them."""
    return {flag for _, flags in COMMANDS.values() for flag in flags if flag not in own}


def _split_arguments(
    args: list[str], takes_value: dict[str, bool], foreign_flags: Collection[str] = frozenset()
) -> tuple[list[str], list[str], list[str]]:
    options: list[str] = []
    bindings: list[tuple[str, str]] = []  # (NAME=VALUE, as written), in the order given
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        flag, has_value, value = arg.partition("=")
        if arg == "--":
            positional += args[i + 1 :]
            break
        if flag in takes_value:
            options.append(arg)
            if takes_value[flag] and not has_value:
                if i + 1 >= len(args) or _is_option(args[i + 1], takes_value, foreign_flags):
                    raise UsageError(f"{flag} needs a value", hint=f"write {flag} VALUE")
                options.append(args[i + 1])
                i += 1
        elif flag in foreign_flags and not has_value:
            options.append(arg)  # click reports it as an option this command does not have
        elif arg.startswith("--") and NAME.fullmatch(flag[2:]):
            written = arg
            if not has_value:
                following = args[i + 1] if i + 1 < len(args) else None
                if following is None or _is_option(following, takes_value, foreign_flags):
                    raise _needs_a_value(flag, takes_value)
                value = following
                written = f"{flag} {value.strip()}"
                i += 1
            bindings.append((f"{flag[2:]}={value}", written))
        elif arg.startswith("--") and _OPTION_LIKE.fullmatch(flag):
            options.append(arg)  # click reports it as an unknown option
        else:
            positional.append(arg)
        i += 1
    return options, bindings, positional


def _is_option(arg: str, takes_value: Collection[str], foreign_flags: Collection[str]) -> bool:
    """``--b``, ``--json``, ``-f``: an option, not the value of the ``--W`` before it."""
    flag = arg.partition("=")[0]
    return flag in takes_value or flag in foreign_flags or bool(_OPTION_LIKE.fullmatch(flag))


def _needs_a_value(flag: str, options: Collection[str]) -> UsageError:
    """``--W`` with nothing after it (or an option): a variable without its value -- or, when
    it is close to an option (``--hesian``), that option misspelt."""
    meant = closest_option(flag[2:], [o for o in options if o.startswith("--") and o != "--help"])
    if meant is not None:
        return UsageError(f"no such option {visible(flag)}", hint=f"did you mean {meant[0]}?")
    return UsageError(f"{visible(flag)} needs a value",
                      hint=f"write {visible(flag)} VALUE, e.g. {visible(flag)} 2")


class ReaderGoneError(Exception):
    """The reader of stdout went away (``| head -1``): main() ends quietly with status 141."""


class UserInterruptError(Exception):
    """Ctrl-C inside a command: main() prints one line and ends with status 130."""


ARGS_KEY = "gradcli.args"

# Each command: the module that defines it (and registers it with ``cli``), imported only when
# the command runs, so that ``gradcli eval`` does not load ``gradcli diff``; and its long flags
# (options without a value), with which a binding command tells another command's flag
# (``gradcli eval ... --defaults``) from a variable without loading the others.
# tests/test_startup.py checks both against the commands themselves.
COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "check": ("gradcli.cli.check_command", ("--fail-fast", "--json")),
    "completion": ("gradcli.cli.completion", ()),
    "diff": ("gradcli.cli.diff_command", ("--allow-unused", "--defaults", "--json",
                                          "--no-check")),
    "eval": ("gradcli.cli.eval_command", ("--allow-unused", "--check-nodes", "--csv", "--full",
                                          "--hessian", "--json", "--no-check", "--no-nodes",
                                          "--strict")),
    "functions": ("gradcli.cli.functions_command", ("--json",)),
    "graph": ("gradcli.cli.picture_commands", ("--allow-unused",)),
    "man": ("gradcli.cli.manpage", ()),
    "plot": ("gradcli.cli.picture_commands", ("--allow-unused",)),
    "repl": ("gradcli.cli.repl", ()),
}


def every_command(group: object) -> dict[str, click.Command]:
    """All of ``group``'s commands, loaded (gradcli's group loads a command when it runs; the
    messages about another command's options need them all)."""
    if isinstance(group, _Group):
        for name in COMMANDS:
            group.get_command(None, name)
    return getattr(group, "commands", {})


class _Group(click.Group):
    command_class = GradcliCommand

    def get_command(self, ctx: click.Context | None, cmd_name: str) -> click.Command | None:
        """The command, its module imported the first time (importing registers it)."""
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(COMMANDS[cmd_name][0])
        return self.commands.get(cmd_name)

    def list_commands(self, ctx: click.Context | None) -> list[str]:
        return sorted(COMMANDS)

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        """Parsing gradcli's own options (``--help`` and ``--version`` print here): a usage
        error in gradcli's style, and a reader that went away is 141, not click's 1."""
        given = list(args)
        if not args and sys.stdin.isatty() and sys.stdout.isatty():
            args = ["repl"]  # `gradcli` alone on a terminal: a session (in a pipe: the help)
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError:
            raise ReaderGoneError from None
        except _NO_ARGS:
            raise  # `gradcli` alone: the help, on stderr, status 2
        except click.ClickException as error:
            raise shown(error, given, self) from None
        ctx.meta[ARGS_KEY] = given
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        """Every command's BrokenPipeError goes past click (which would exit with 1, "check
        failed") to main(), which ends with 141; its KeyboardInterrupt goes past click too
        (which would print a blank line on stderr first) to main(), which ends with 130.
        click's usage errors (and a UsageError from splitting the command line) are shown in
        gradcli's style (``cli.usage``)."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise ReaderGoneError from None
        except KeyboardInterrupt:
            raise UserInterruptError from None
        except (click.ClickException, GradcliError) as error:
            raise shown(error, ctx.meta.get(ARGS_KEY, []), self) from None


def _print_version(context: click.Context, _: click.Parameter, asked: bool) -> None:
    """gradcli's version, and whether its symbolic core is compiled (setup.py): a machine with
    no C compiler installs it as Python, and ``pip install`` shows no build messages."""
    if not asked or context.resilient_parsing:
        return
    from gradcli.engine import core_is_compiled

    core = ("compiled" if core_is_compiled()
            else "Python; GRADCLI_COMPILE=1 pip install compiles it, with a C compiler, and "
                 "gradcli diff runs 1.7x faster")
    if stale_core_modules():
        core += ", older than its source: pip install -e . again"
    click.echo(f"gradcli, version {__version__} (symbolic core: {core})")
    context.exit()


_NO_ARGS = getattr(click.exceptions, "NoArgsIsHelpError", ())


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-V", "--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and exit.")
def cli() -> None:
    """Differentiate formulas: every node's value and gradient, checked by finite differences.

    \b
    Start with:   gradcli eval "(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8
    More:         gradcli eval --help
    Functions:    gradcli functions   (every operator and function of the language)
    Interactive:  gradcli repl        (or gradcli alone, on a terminal)
    In CI:        gradcli check examples/checks.toml   (gradcli check --help)
    Manual:       gradcli man | man -l -
    """


# The largest --max-nodes (8 GB of program text): a larger number is a usage error, never an
# OverflowError where a size must fit a machine word.
MAX_NODES_OPTION = 10**9


def program_arguments(set_help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """EXPR, --set NAME=VALUE and -f FILE: how graph and plot are given a program."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        command = values_file_options(command)
        command = file_option("Read the program from FILE (- for stdin).")(command)
        command = click.option("--set", "assignments", multiple=True, metavar="NAME=VALUE",
                               help=set_help)(command)
        return click.argument("expr", required=False)(command)

    return decorate


def file_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-f FILE``: a path, read by ``ProgramText.read`` (gradcli's errors, its size limit)."""
    return click.option("-f", "--file", "program_file", metavar="FILE", help=help_text,
                        shell_complete=complete_files)


def given_values(ctx: click.Context, assignments: tuple[str, ...]) -> Given:
    """``--NAME VALUE`` bindings and ``--set NAME=VALUE`` together (ranges allowed), with how
    each was written and the command's options, for the errors about them (``cli.given``)."""
    written = [*ctx.meta.get(BINDINGS_KEY, []),
               *((text, f"--set {text.strip()}") for text in assignments)]
    command = ctx.command
    options = command.long_options(ctx) if isinstance(command, BindingCommand) else ()
    given = Given.read(written, options, lambda: _options_of_other_commands(ctx, options),
                       f"gradcli {ctx.info_name}")
    path = ctx.meta.get(VALUES_FILE_KEY)
    if path is None and ctx.meta.get(ALLOW_UNUSED_KEY):
        raise UsageError("--allow-unused is about the names of --values FILE, and no --values "
                         "was given",
                         hint="drop --allow-unused (an unused --NAME VALUE is always an error), "
                              "or add --values FILE")
    if path is None:
        return given
    if path == "-" and _program_on_stdin(ctx):
        raise UsageError("--values - and the program both read stdin",
                         hint="give the values as a file (--values point.toml) or the program "
                              "as EXPR")
    return with_file_values(given, path, ctx.meta.get(ALLOW_UNUSED_KEY, False))


def _program_on_stdin(ctx: click.Context) -> bool:
    """``-f -``, EXPR ``-``, or (eval's batch) neither EXPR nor -f with stdin not a terminal."""
    expr, path = ctx.params.get("expr"), ctx.params.get("program_file")
    implicit = ctx.info_name == "eval" and expr is None and path is None
    return "-" in (expr, path) or (implicit and not sys.stdin.isatty())


_EXAMPLES = {"eval": '"(x*W+b-t)**2" --x 2 --W 3 --b 1 --t 8'}  # else: try COMMAND --help
# The commands whose --max-nodes limits the program (graph's limits the drawing).
_NODE_OPTION = {"eval", "diff"}


class ProgramText:
    """A program as given on the command line: EXPR, or the text of ``-f FILE`` and its name.

    A plain class, as the other values made on the eval path: a dataclass costs about 1 ms of
    start-up each (its methods are compiled from source when the module loads)."""

    __slots__ = ("file_name", "text")

    def __init__(self, text: str, file_name: str = "") -> None:
        self.text = text
        self.file_name = file_name  # the file it came from ("" for EXPR): errors name it

    def __repr__(self) -> str:
        return f"ProgramText(text={self.text!r}, file_name={self.file_name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProgramText) and (self.text, self.file_name) == (
            other.text, other.file_name)

    def __hash__(self) -> int:
        return hash((self.text, self.file_name))

    @classmethod
    def read(cls, command: str, expr: str | None, program_file: str | None,
             max_nodes: int = MAX_NODES) -> ProgramText:
        """EXPR or the file's text; a UsageError when both or neither are given, or when the
        file cannot be read, is larger than a program of ``max_nodes`` nodes or not UTF-8."""
        if program_file is not None and expr is not None:
            raise UsageError("give either EXPR or -f FILE, not both")
        example = _EXAMPLES.get(command)
        try_this = f"try: gradcli {command} {example}" if example else (
            f"try: gradcli {command} --help")
        if program_file is not None:
            name = "<stdin>" if program_file == "-" else program_file
            text = read_program_file(program_file, max_nodes, command in _NODE_OPTION)
            if is_blank(text):
                what = "is empty" if not text.strip() else "has only comments and blank lines"
                raise UsageError(f"{visible(name)} {what}: no program to read",
                                 hint="put the program in it: one statement per line, the "
                                      "expression last (u = x*W, then u + b on the next line)")
            return cls(text, name)
        if expr is None:
            raise UsageError("no expression given", hint=try_this)
        if is_blank(expr):
            raise UsageError("the expression is empty", hint=try_this)
        return cls(expr)


def read_program_file(path: str, max_nodes: int = MAX_NODES, node_option: bool = True,
                      limit: int | None = None, what: str = "a program") -> str:
    """The text of ``-f FILE`` (``-``: stdin), as UTF-8 (a BOM is dropped).

    The size is checked before the text is read: a file larger than the longest program of
    ``max_nodes`` nodes (``limits.max_chars``; ``limit`` bytes for ``what`` is not a program)
    is refused with both sizes, and of a stream no more than that (plus one byte) is read. Bytes
    that are not UTF-8 are a usage error that says where (a batch on stdin reads them as U+FFFD
    instead: there each line is its own record).
    """
    if path == "":
        raise UsageError("-f was given an empty path", hint="give -f the file to read, e.g. "
                                                            "examples/seed.grad")
    name = "<stdin>" if path == "-" else visible(path)
    raise_limit = (f"raise the limit with --max-nodes N (it allows {CHARS_PER_NODE} characters "
                   "per node)" if node_option else
                   f"a program may have up to {MAX_NODES:,} nodes here")
    too_large = f"{what} may have at most {max_chars(max_nodes):,} characters"
    if limit is not None:  # a values file
        raise_limit = "give large arrays as .npy or .npz files (--W W.npy, --values data.npz)"
        too_large = f"{what} may have at most {limit:,} bytes"
    else:
        limit = max_chars(max_nodes)
    try:
        with contextlib.ExitStack() as stack:
            stream = streams.binary_stdin() if path == "-" else stack.enter_context(
                open(path, "rb"))
            size = _file_size(stream)
            if size is not None and size > limit:
                raise UsageError(f"{name} has {size:,} bytes; {too_large}",
                                 hint=f"split it, or {raise_limit}")
            data = _read_at_most(stream, limit + 1)
    except OSError as error:
        raise UsageError(f"cannot read {name}: {error.strerror or error}",
                         hint="check the path and that the file is readable") from None
    if len(data) > limit:
        raise UsageError(f"{name} has more than {limit:,} bytes; {too_large}",
                         hint=f"split it, or {raise_limit}")
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as error:
        at = bom + error.start
        line = data.count(b"\n", 0, at) + 1
        utf16 = data[:2] in (b"\xff\xfe", b"\xfe\xff")
        hint = ("it starts like UTF-16 text: convert it, e.g. iconv -f UTF-16 -t UTF-8"
                if utf16 else "save it as UTF-8 (iconv -f ENCODING -t UTF-8 converts it)")
        raise UsageError(f"{name} is not UTF-8 at byte {at:,} (0x{data[at]:02x}, on line "
                         f"{line:,})", hint=hint) from None


def _file_size(stream: Any) -> int | None:
    """The size of a regular file (None for a pipe, a terminal, a device)."""
    try:
        info = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _read_at_most(stream: Any, size: int) -> bytes:
    """Up to ``size`` bytes: all of a smaller file or stream, in pieces (a pipe gives a little
    at a time)."""
    pieces, left = [], size
    while left > 0 and (piece := stream.read(min(left, 1 << 20))):
        pieces.append(piece)
        left -= len(piece)
    return b"".join(pieces)


_COMMENTS = re.compile(r"#[^\n]*")


def is_blank(text: str) -> bool:
    """Nothing but whitespace, ``;`` and ``# comments``: no program at all."""
    start = text.lstrip(" \t\r\n\f\v;")[:1]
    return not start or (start == "#" and not _COMMENTS.sub("", text).strip(" \t\r\n\f\v;"))


def stdin_lines(max_bytes: int) -> Iterator[str]:
    """Lines of stdin as text, read one at a time as they arrive (a batch is a stream).

    Bytes that are not UTF-8 become U+FFFD and then a parse error. Of a line longer than
    ``max_bytes`` only ``max_bytes + 1`` bytes are kept (the rest is read and dropped, so memory
    stays flat): if the cut falls in the program, that ASCII text is over the length limit and
    becomes an error record; if it falls in a trailing comment, nothing that matters was lost.
    """
    stream = getattr(sys.stdin, "buffer", sys.stdin)
    while True:
        raw = stream.readline(max_bytes + 1)
        if not raw:
            return
        if len(raw) > max_bytes and raw[-1:] not in (b"\n", "\n"):
            while (rest := stream.readline(1 << 20)) and rest[-1:] not in (b"\n", "\n"):
                pass
        yield raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the CLI and maps every way out to a documented exit status.

    The standard streams are settled first (``cli.streams``): closed descriptors, a stdout
    that fails, a stderr that fails, an encoding without gradcli's marks."""
    streams.settle()
    _warn_if_the_core_is_stale()
    status: int = ExitStatus.OK
    try:
        try:
            status = cli.main(args=argv, prog_name="gradcli", standalone_mode=False) or 0
        except click.ClickException as error:
            error.show()  # gradcli's style (cli.usage); `gradcli` alone: click's help
            status = error.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt, UserInterruptError):
        status = _interrupted()
    except (BrokenPipeError, ReaderGoneError):
        status = _reader_gone()
    except OutputFailedError as error:
        status = _output_failed(error)
    except MemoryError:  # a command that does not say it itself (eval and batches do)
        status = _out_of_memory()
    try:
        sys.stdout.flush()  # here, not at interpreter exit, where a broken pipe can't be caught
    except (BrokenPipeError, ReaderGoneError):
        status = _reader_gone()
    except OutputFailedError as error:
        status = _output_failed(error)
    except KeyboardInterrupt:
        status = _interrupted()
    if argv is None:  # the process ends here (console script, python -m gradcli)
        _skip_the_last_collection()
    sys.exit(int(status or 0))


def _warn_if_the_core_is_stale() -> None:
    stale = stale_core_modules()
    if stale:
        more = f" and {len(stale) - 1} more" if len(stale) > 1 else ""
        print(f"note: {stale[0]}{more} changed after gradcli's core was compiled, and the "
              "old code runs; install again: pip install -e .", file=sys.stderr)


def _skip_the_last_collection() -> None:
    """Leave every object alive now out of the cyclic collections at interpreter exit.

    Those full passes over all of Click's, Rich's and gradcli's module objects cost more than
    10 ms of a small ``gradcli eval`` and free nothing the OS does not reclaim anyway. Exit still
    runs atexit handlers (batch workers) and flushes stdout and stderr; files are closed by
    ``with`` blocks before this point.
    """
    gc.freeze()


def _interrupted() -> int:
    """Ctrl-C: one line on stderr, the shell's status for SIGINT, no traceback."""
    click.echo("gradcli: interrupted", err=True)
    return ExitStatus.INTERRUPTED


def _out_of_memory() -> int:
    """What the attempt took is free again here: one line on stderr, no traceback."""
    error = out_of_memory()
    click.echo(f"gradcli: {error.one_line()}", err=True)
    return error.status


def _reader_gone() -> int:
    """Stop quietly, as Unix tools do: later writes and the exit-time flush go nowhere."""
    streams.silence_stdout()
    return ExitStatus.READER_GONE


def _output_failed(error: OutputFailedError) -> int:
    """stdout failed (a full disk, a closed descriptor): one line on stderr, and its status."""
    streams.silence_stdout()
    click.echo(f"gradcli: cannot write to stdout: {error.reason}", err=True)
    return ExitStatus.OUTPUT_FAILED
