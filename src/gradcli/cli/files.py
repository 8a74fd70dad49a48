"""Writing the files gradcli is asked to write (``check --junit``; ``graph -o``, ``plot -o``,
``eval --save``).

``write_atomically`` writes the whole data or leaves the path as it was: the data goes into a
temporary file next to the target (same directory, so the same file system), is flushed to disk,
then renamed over the target with ``os.replace``, which is atomic. A reader never sees half a
file, two gradcli processes writing the same path leave one of the two complete files (never a
mix), and a full disk or any other failure leaves the old file (or none) and no temporary file.

A path that exists and is not a regular file -- ``/dev/null``, ``/dev/full``, a FIFO -- is
written in place: renaming over it would replace the device itself; so are ``/dev/stdout``,
``/dev/stderr``, ``/dev/fd/N`` and paths under ``/proc/``, which may lead to the very file the
shell redirected stdout to. Another symbolic link is followed, so the file it points to is
replaced and the link stays.
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
    """Write ``data`` to the file ``path``, all of it or nothing; raises OSError (its
    ``strerror`` says what went wrong: ``No space left on device``, ``Permission denied``...)."""
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
