"""Shell completion that knows the formula: after ``gradcli eval "(x*W+b-t)**2" --``, Tab offers
``--x --W --b --t`` (those without a value) before the options; ``--wrt`` offers the variables.
A program that does not parse yet offers the names written in it."""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING

import click

from gradcli.cli.given import BINDINGS_KEY

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

# A name in a formula that does not parse yet (functions are left out where it is used).
_NAME = r"(?<![\w.])[A-Za-z_]\w*"


_KEYWORDS = frozenset({"if", "else", "and", "or", "not"})


def program_variables(ctx: click.Context) -> list[str]:
    """The variables of the program on the command line (EXPR or ``-f FILE``), in order."""
    text = _program_text(ctx)
    if not text:
        return []
    from gradcli.errors import GradcliError
    from gradcli.language.parser import parse

    try:
        return list(parse(text).variables)
    except GradcliError:  # half-typed: the names written in it, but calls and constants
        from gradcli.engine.ops import CONSTANTS

        names = dict.fromkeys(re.findall(_NAME, re.sub(r"#[^\n]*", "", text)))
        assigned = set(re.findall(r"([A-Za-z_]\w*)\s*=(?!=)", text))
        # a definition's parameters (f(a, b) = ...) and the keywords are not variables either
        for head in re.findall(r"[A-Za-z_]\w*\s*\(([^()]*)\)\s*=(?!=)", text):
            assigned.update(part.strip() for part in head.split(","))
        assigned.update(re.findall(r"([A-Za-z_]\w*)\s*\(", text))  # called: a function
        return [name for name in names if name not in CONSTANTS and name not in assigned
                and name not in _KEYWORDS]


def _program_text(ctx: click.Context) -> str:
    path = ctx.params.get("program_file")
    if path and path != "-":
        return _file_start(path)
    expr = ctx.params.get("expr")
    return expr if isinstance(expr, str) and expr != "-" else ""


def _file_start(path: str) -> str:
    """The first MB of a regular program file, or nothing: Tab never waits on a FIFO or a
    device."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return ""
        return os.read(descriptor, 1 << 20).decode("utf-8", errors="replace")
    except OSError:
        return ""
    finally:
        os.close(descriptor)


def variable_options(ctx: click.Context, incomplete: str) -> list[CompletionItem]:
    """``--x``, ``--W``...: the program's variables without a value, matching ``incomplete``."""
    from click.shell_completion import CompletionItem

    if not incomplete.startswith("-") or incomplete.startswith("---"):
        return []
    given = {text.partition("=")[0] for text, _ in ctx.meta.get(BINDINGS_KEY, [])}
    return [CompletionItem(f"--{name}", help="a variable of the program")
            for name in program_variables(ctx)
            if name not in given and f"--{name}".startswith(incomplete)]


def complete_wrt(ctx: click.Context, param: click.Parameter,
                 incomplete: str) -> list[CompletionItem]:
    """``--wrt``'s values: the program's variables, also after a comma (``x,`` -> ``x,W``)."""
    from click.shell_completion import CompletionItem

    done, _, start = incomplete.rpartition(",")
    listed = set(done.split(",")) if done else set()
    prefix = f"{done}," if done else ""
    return [CompletionItem(prefix + name) for name in program_variables(ctx)
            if name.startswith(start) and name not in listed]
