"""Every way out of a command mapped to its exit status, for click's reading (``cli.base``)
and the plain eval's alike. Nothing here loads click."""

from __future__ import annotations

import atexit
import gc
import os
import sys
from collections.abc import Callable
from contextlib import suppress

from gradcli.cli import streams
from gradcli.cli.streams import OutputFailedError, echo
from gradcli.engine import stale_core_modules
from gradcli.errors import ExitStatus, no_room_to_load, out_of_memory

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import NoReturn


class ReaderGoneError(Exception):
    """The reader of stdout went away (``| head -1``): main() ends quietly with status 141."""


class UserInterruptError(Exception):
    """Ctrl-C inside a command: main() prints one line and ends with status 130."""


_own_process = False  # run_to_exit runs the console script's own process (argv None)


def kept_for_good() -> None:
    """In the console script's own process, what exists now stays until the process ends: the
    cycle collector need never scan it again (``gc.freeze``; W3's 10^5 nodes and operand tuples,
    0.1 s). Elsewhere (click's CliRunner, an application that runs the CLI in its process)
    nothing, as frozen objects are never collected."""
    if _own_process:
        gc.freeze()


def run_to_exit(command: Callable[[], int], argv: list[str] | None,
                at_once: bool = False) -> NoReturn:
    """Runs ``command`` on settled streams (``cli.streams``) and ends the process with the
    documented status of how it went; ``argv`` None: the console script's own process.
    ``at_once``: a command that starts no thread or worker (the plain eval) ends without the
    interpreter's teardown, which frees every module's objects one by one (some 2 ms of an
    array eval) for the OS to reclaim anyway."""
    global _own_process
    _own_process = argv is None
    streams.settle()
    _warn_if_the_core_is_stale()
    status = _status_of(command)
    # stdout flushed here, not at interpreter exit, where a broken pipe can't be caught
    status = _status_of(sys.stdout.flush) or status
    if argv is None:
        # Exit's full collections cost more than 10 ms and free nothing the OS does not reclaim;
        # atexit handlers (batch workers) and the flushes of stdout and stderr still run.
        gc.freeze()
        if at_once or _stdin_read_elsewhere():
            atexit._run_exitfuncs()
            for stream in (sys.stdout, sys.stderr):
                with suppress(OSError, ValueError):  # a reader gone: its status is said
                    stream.flush()
            os._exit(int(status or 0))
    sys.exit(int(status or 0))


def _stdin_read_elsewhere() -> bool:
    """Whether a thread may still be blocked reading stdin: a batch's feed (``reads_stdin``,
    runs/batch.py) when a signal stopped the batch while its input stayed open (``tail -f |``).
    It holds the lock of stdin's buffer, on which the interpreter's teardown, closing stdin,
    would abort the process ("Fatal Python error: _enter_buffered_busy", status 134)."""
    threading = sys.modules.get("threading")
    return threading is not None and any(
        getattr(thread, "reads_stdin", False) and thread.is_alive()
        for thread in threading.enumerate())


def _status_of(command: Callable[[], int | None]) -> int | None:
    """``command``'s status, or the status of how it failed, said in one line on stderr."""
    try:
        return command()
    except (KeyboardInterrupt, UserInterruptError):
        return _interrupted()
    except (BrokenPipeError, ReaderGoneError):  # quiet, as Unix tools are
        streams.silence_stdout()  # later writes and the exit-time flush go nowhere
        return ExitStatus.READER_GONE
    except OutputFailedError as error:  # a full disk, a closed descriptor
        streams.silence_stdout()
        echo(f"gradcli: cannot write to stdout: {error.reason}", err=True)
        return ExitStatus.OUTPUT_FAILED
    except (MemoryError, ImportError) as error:  # a command that does not say it itself
        if isinstance(error, ImportError) and not no_room_to_load(error):  # (eval and batches
            raise  # do); an import that found no room to load (prlimit --as) is one too
        memory = out_of_memory()  # what the attempt took is free again here
        echo(f"gradcli: {memory.one_line()}", err=True)
        return memory.status


def _warn_if_the_core_is_stale() -> None:
    stale = stale_core_modules()
    if stale:
        more = f" and {len(stale) - 1} more" if len(stale) > 1 else ""
        print(f"note: {stale[0]}{more} changed after gradcli's core was compiled, and the "
              "old code runs; install again: pip install -e .", file=sys.stderr)


def _interrupted() -> int:
    """Ctrl-C: one line on stderr, the shell's status for SIGINT, no traceback."""
    echo("gradcli: interrupted", err=True)
    streams.quiet_after_stop()
    return ExitStatus.INTERRUPTED
