"""gradcli's build: the symbolic core compiled with mypyc where it can be, pure Python otherwise.

The modules listed under ``[tool.mypy] files`` in pyproject.toml (the graph, the builder, the
canonical form and the printers) are where ``gradcli diff`` spends its time; compiled, its
derivatives come about 1.7 times faster (docs/performance.md). Everything else is the same Python
either way, and so are the results, to the bit. The core stays Python, and the build says so,
when ``GRADCLI_PURE_PYTHON=1`` is set or the machine has no C compiler or no Python headers.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import setup

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

HERE = Path(__file__).resolve().parent


def _core() -> list[str]:
    config = tomllib.loads((HERE / "pyproject.toml").read_text())
    return list(config["tool"]["mypy"]["files"])


def _cannot_compile() -> str | None:
    """Why the core is not compiled here, or None."""
    if os.environ.get("GRADCLI_PURE_PYTHON", "") not in ("", "0"):
        return "GRADCLI_PURE_PYTHON is set"
    compiler = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    if shutil.which(compiler.split()[0]) is None:
        return f"no C compiler ({compiler.split()[0]})"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        return "no Python headers (Python.h)"
    return None


def _extensions() -> list:
    reason = _cannot_compile()
    if reason is not None:
        print(f"gradcli: the symbolic core is installed as pure Python: {reason}", file=sys.stderr)
        return []
    from mypyc.build import mypycify

    # One group, its shared library inside the package (gradcli/engine/core__mypyc), so that an
    # editable install finds it as it finds the modules.
    return mypycify(_core(), opt_level="3", group_name="gradcli.engine.core")


setup(ext_modules=_extensions())
