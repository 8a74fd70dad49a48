"""Arrays from the files NumPy users keep them in (``--W W.npy``, ``W.csv``, ``data.npz``,
``--values data.npz``), and ``eval --save out.npz``. A file is told by its first bytes, never by
decoding it; pickles are never loaded (``allow_pickle=False``), and an array's size is checked
from its header before its data is read.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping
from typing import Any

from gradcli.engine.arrays import all_finite
from gradcli.errors import UsageError, visible
from gradcli.limits import MAX_ARRAY_ELEMENTS, check_dims

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"


def kind_of(path: str) -> str:
    """"npy", "npz" or "csv", from the file's first bytes; a UsageError if it cannot be read."""
    try:
        with open(path, "rb") as file:
            head = file.read(len(NPY_MAGIC))
    except OSError as error:
        raise UsageError(f"cannot read {visible(path)}: {error.strerror or error}",
                         hint="check the path and that the file is readable") from None
    if head.startswith(NPY_MAGIC):
        return "npy"
    return "npz" if head.startswith(ZIP_MAGIC) else "csv"


def read_array(name: str, path: str) -> Any:
    """The array ``--NAME PATH`` gives: an ``.npy`` file, the array ``name`` of an ``.npz``
    archive (or its only one), or a CSV table (one row or one column is a vector)."""
    kind = kind_of(path)
    if kind == "npy":
        return _checked(name, path, _load_npy(path))
    if kind == "npz":
        arrays = read_arrays(path)
        if name not in arrays and len(arrays) != 1:
            raise UsageError(f"{visible(path)} has no array named {name}",
                             hint=f"its arrays: {', '.join(sorted(arrays)) or 'none'}")
        return arrays[name] if name in arrays else next(iter(arrays.values()))
    return _checked(name, path, _load_csv(path))


def read_arrays(path: str) -> dict[str, Any]:
    """Every array of an ``.npz`` archive, by name (``--values data.npz``)."""
    import numpy as np

    kind = kind_of(path)
    if kind != "npz":
        what = "one array (.npy)" if kind == "npy" else "not a NumPy archive"
        raise UsageError(f"{visible(path)} is {what}",
                         hint="--values reads a JSON, TOML or .npz file; give one array to "
                              "its variable as --NAME FILE.npy")
    try:
        with np.load(path, allow_pickle=False) as archive:
            for key in archive.files:
                _refuse_large(key, path, archive.zip.getinfo(f"{key}.npy").file_size / 8)
            return {key: _checked(key, path, archive[key]) for key in archive.files}
    except (OSError, ValueError, KeyError, EOFError) as error:
        raise _unreadable(path, error) from None


def _load_npy(path: str) -> Any:
    import numpy as np

    form = np.lib.format
    try:  # the header's size before the data is read, then the data read whole (copying it
        # from a mapped file, fault by fault, took ten times as long: 15 ms for 8 MB)
        with open(path, "rb") as file:
            # 3.0's header differs from 2.0's in its field names' encoding only; another
            # version is left to read_array, which says which versions there are
            header = {(1, 0): form.read_array_header_1_0, (2, 0): form.read_array_header_2_0,
                      (3, 0): form.read_array_header_2_0}.get(form.read_magic(file))
            if header is not None:
                _refuse_large("the array", path, math.prod(header(file)[0]))
            file.seek(0)
            return form.read_array(file, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise _unreadable(path, error) from None


def _load_csv(path: str) -> Any:
    import numpy as np

    _refuse_large("the table", path, os.path.getsize(path) / 2)  # a number and a comma
    try:
        with warnings.catch_warnings():  # "input contained no data": said below, once
            warnings.simplefilter("ignore")
            table = np.loadtxt(path, delimiter=",", ndmin=2, encoding="utf-8", comments="#")
    except UnicodeDecodeError:
        raise UsageError(f"{visible(path)} is neither CSV text nor a NumPy file",
                         hint="save the array with numpy.save (.npy) or as numbers separated "
                              "by commas") from None
    except (OSError, ValueError) as error:
        raise UsageError(f"{visible(path)} is not a CSV table of numbers: "
                         f"{str(error).splitlines()[0]}",
                         hint="one row per line, numbers separated by commas, no header "
                              "(or start it with #)") from None
    if table.size == 0:
        raise UsageError(f"{visible(path)} has no numbers", hint="write one row per line")
    rows, columns = table.shape
    return table.ravel() if 1 in (rows, columns) else table


def _refuse_large(name: str, path: str, elements: float) -> None:
    if elements > MAX_ARRAY_ELEMENTS:
        raise UsageError(f"{name} in {visible(path)} has {math.ceil(elements):,} elements, over "
                         f"the limit of {MAX_ARRAY_ELEMENTS:,}",
                         hint="gradcli holds every node's value in memory: use a smaller array")


def _checked(name: str, path: str, array: Any) -> Any:
    """A float array of finite numbers (an integer array is converted); a UsageError names the
    file and the first element that is not a finite number."""
    import numpy as np

    where = f"{name} in {visible(path)}"
    check_dims(where, array.ndim)
    if array.dtype.kind not in "iuf":
        raise UsageError(f"{where} holds {array.dtype} values, not numbers",
                         hint="save an array of floats or integers")
    array = np.asarray(array, dtype=float)
    if array.size == 0:
        raise UsageError(f"{where} is empty", hint="an array needs at least one element")
    if not all_finite(array):  # one pass; the flags of every element only to find the first
        index = np.unravel_index(np.flatnonzero(~np.isfinite(array))[0], array.shape)
        raise UsageError(f"{where} has {array[index]} at {list(map(int, index))}, not a finite "
                         "number", hint="replace it, or leave that element out")
    return float(array) if array.ndim == 0 else array


def _unreadable(path: str, error: Exception) -> UsageError:
    return UsageError(f"cannot read {visible(path)} as a NumPy file: {str(error).splitlines()[0]}",
                      hint="write it with numpy.save or numpy.savez (no pickled objects)")


def npz_bytes(arrays: Mapping[str, Any]) -> bytes:
    """``arrays`` as the bytes of an ``.npz`` archive (``eval --save``; the CLI writes them)."""
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, **{key: np.asarray(value) for key, value in arrays.items()})
    return buffer.getvalue()
