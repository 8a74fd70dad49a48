"""Writing the files gradcli is asked to write (``check --junit``, ``graph -o``, ``eval --save``)
whole or not at all: a temporary file beside the target, flushed, then ``os.replace``d over it.
A device or FIFO, ``/dev/stdout``, ``/dev/fd/N`` and ``/proc/`` paths are written in place
(renaming would replace the device, or miss the file stdout goes to); a symbolic link is
followed, so the link stays.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat


def write_file(path: str, data: bytes) -> None:
    """``write_atomically``, a failure being the usage error that names the file."""
    from gradcli.errors import UsageError, visible  # the module itself needs only the stdlib

    try:
        write_atomically(path, data)
    except OSError as error:
        raise UsageError(f"cannot write {visible(path)}: {error.strerror or error}",
                         hint="check that the directory exists and is writable, and the free "
                              "space") from None


def write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to the file ``path``, all of it or nothing; raises OSError."""
    if not path:
        raise FileNotFoundError(errno.ENOENT, "an empty path is not a file name", path)
    try:
        mode: int | None = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    special = mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)
    where = os.path.abspath(path)
    if special or where in ("/dev/stdout", "/dev/stderr") or where.startswith(_IN_PLACE):
        _write_in_place(path, data)
        return
    import tempfile  # here, not at start-up: it brings random and shutil (~4 ms)

    target = os.path.realpath(path) if os.path.islink(path) else path
    directory, name = os.path.split(target)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{name[:100]}.", suffix=".tmp",
                                             dir=directory or ".")
    try:
        try:
            _write_all(descriptor, data)
            os.fchmod(descriptor, stat.S_IMODE(mode) if mode is not None else _new_file_mode())
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


_IN_PLACE = ("/dev/fd/", "/proc/")


def _write_in_place(path: str, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOCTTY", 0),
                         0o666)
    try:
        _write_all(descriptor, data)
    finally:
        os.close(descriptor)


def _write_all(descriptor: int, data: bytes) -> None:
    """``os.write`` until every byte is written (a write may take only part of them)."""
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view):]


def _new_file_mode() -> int:
    """The mode ``open()`` gives a new file: 0o666 less the umask (mkstemp makes 0o600)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask
