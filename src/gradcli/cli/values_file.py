"""``--values FILE`` and ``--allow-unused``: many values at once, from a shared point file.

The file's values come first and ``--NAME VALUE`` options override them one by one. A name in
the file that the program does not use is the same usage error as an unused ``--NAME`` (a typo
in a point file is as silent as one on the command line), unless ``--allow-unused`` says the
file is shared by programs that use different names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from gradcli.cli.given import Given
from gradcli.errors import UsageError, visible
from gradcli.language.values import Value
from gradcli.limits import MAX_VALUES_FILE_BYTES

if TYPE_CHECKING:
    from gradcli.language.values_file import FileValue


VALUES_FILE_KEY = "gradcli.values_file"  # ctx.meta: the path given to --values, or absent
ALLOW_UNUSED_KEY = "gradcli.allow_unused"


def values_file_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Adds ``--values FILE`` and ``--allow-unused`` to a command that takes ``--NAME VALUE``.

    They are read by ``cli.arguments.given_values`` from ``ctx.meta``, so a command's own signature
    does not change."""
    command = click.option(
        "--allow-unused", is_flag=True, expose_value=False, callback=_remember(ALLOW_UNUSED_KEY),
        help="Names in --values FILE that the program does not use are ignored (a shared "
             "point file), not an error.")(command)
    return click.option(
        "--values", metavar="FILE", expose_value=False, callback=_remember(VALUES_FILE_KEY),
        shell_complete=complete_files,
        help="Read values from FILE: a JSON or TOML object of name -> number or array, or a "
             "NumPy .npz archive of arrays by name (- for stdin); --NAME VALUE overrides them.")(
        command)


def _remember(key: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is not None:
            ctx.meta[key] = value

    return callback


def complete_files(ctx: click.Context, param: click.Parameter,
                    incomplete: str) -> list[click.shell_completion.CompletionItem]:
    """A path: the shell completes it (Tab after -f, --values)."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="file")]


def with_file_values(given: Given, path: str, allow_unused: bool = False) -> Given:
    """``given`` (the command line's values) on top of the values of the file at ``path``."""
    from gradcli.cli.program_text import read_program_file  # the file's size limit and UTF-8 errors
    from gradcli.language.values_file import kind_of, parse_values_text

    file_name = "<stdin>" if path == "-" else path
    if path != "-" and _is_binary(path):
        return _with_archive(given, path, allow_unused)
    text = read_program_file(path, node_option=False, limit=MAX_VALUES_FILE_BYTES,
                             what="a values file")
    entries = parse_values_text(text, file_name, kind_of(path))
    if not entries:
        raise UsageError(f"{visible(file_name)} has no values",
                         hint='write name = number lines (TOML) or {"x": 2, ...} (JSON)')
    values: dict[str, Value] = {}
    spelled: dict[str, str] = {}
    for entry in entries:
        if entry.name in given.values:
            continue  # --NAME VALUE overrides the file
        values[entry.name] = _number(entry, file_name)
        spelled[entry.name] = f"{entry.name} = {_shown(entry.value)} in {entry.where(file_name)}"
    optional = frozenset(values) if allow_unused else frozenset()
    return Given({**values, **given.values}, {**spelled, **given.spelled}, given.options,
                 given.optional | optional)


def _is_binary(path: str) -> bool:
    """An ``.npz`` (or ``.npy``) file, told by its first bytes: never decoded as text. Only a
    regular file is sniffed: a pipe (``--values <(...)``) is read once, as text."""
    import os

    from gradcli.language.data_files import kind_of as binary_kind

    if path.lower().endswith((".npz", ".npy")):
        return True
    return os.path.isfile(path) and binary_kind(path) != "csv"


def _with_archive(given: Given, path: str, allow_unused: bool) -> Given:
    """``--values data.npz``: each array to the variable of its name (``--NAME`` overrides)."""
    from gradcli.language.data_files import read_arrays

    arrays = {name: value for name, value in read_arrays(path).items()
              if name not in given.values}
    if not arrays and not given.values:
        raise UsageError(f"{visible(path)} has no arrays", hint="write them with numpy.savez")
    spelled = {name: f"{name} in {visible(path)}" for name in arrays}
    optional = frozenset(arrays) if allow_unused else frozenset()
    return Given({**arrays, **given.values}, {**spelled, **given.spelled}, given.options,
                 given.optional | optional)


def _number(entry: FileValue, file_name: str) -> Value:
    """A number, or an array (docs/arrays.md) as a NumPy array: a tuple would be a sweep."""
    if entry.is_array:
        import numpy as np

        return np.array(entry.value, dtype=float)
    assert isinstance(entry.value, float)
    return entry.value


def _shown(value: Any) -> str:
    from gradcli.engine.notation import format_number

    return format_number(value) if isinstance(value, float) else "[...]"
