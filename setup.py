"""gradcli's build: the symbolic core compiled with mypyc where it can be, pure Python otherwise.

The modules listed under ``[tool.mypy] files`` in pyproject.toml (the graph, the builder, the
canonical form and the printers; the parser's driver and builder, the op table's row, the
check's replays and its verdicts) are where ``gradcli diff`` and a batch line spend their
time; compiled, derivatives come about 1.7 times faster, a checked batch line (`--no-nodes`)
about 2.7 times in instructions (docs/performance.md).
Everything else is the same Python either way, and so are the results, to the bit. Compiling
takes about 40 seconds more, so it is asked for: ``GRADCLI_COMPILE=1 pip install .``. The
core stays Python, and the build says so on stderr (``pip install -v`` shows it; ``gradcli
--version`` always does), when it is not asked for, when the machine has no C compiler or no
Python headers, and when compiling fails.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
PACKAGE = HERE / "src" / "gradcli"
# The steps that build modules; metadata and sdist steps compile nothing (mypyc's type check
# alone takes seconds, and pip runs this file once per step).
BUILDING = {"build", "build_ext", "bdist_wheel", "editable_wheel", "install", "develop"}


def _say(message: str) -> None:
    print(f"gradcli: {message}", file=sys.stderr)


def _core() -> list[str]:
    config = tomllib.loads((HERE / "pyproject.toml").read_text())
    return [str(HERE / path) for path in config["tool"]["mypy"]["files"]]


def _cannot_compile() -> str | None:
    """Why the core is not compiled here, or None."""
    if os.environ.get("GRADCLI_COMPILE", "").lower() in ("", "0", "false", "no"):
        return "GRADCLI_COMPILE=1 not set"
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        return "no Python headers (Python.h)"
    return None


def _remove_compiled_modules() -> None:
    """An editable install of Python over an earlier editable build: that build's modules would
    be loaded before the sources. (A wheel leaves them out: they stay for the editable install
    that may use them, e.g. a CI checkout that also builds the action's install from itself.)"""
    if "editable_wheel" not in sys.argv[1:]:
        return
    for folder in {Path(path).parent for path in _core()}:  # where the compiled modules live
        for suffix in EXTENSION_SUFFIXES:
            for path in folder.glob(f"*{suffix}"):
                path.unlink()


def _extensions() -> list:
    if not BUILDING.intersection(sys.argv[1:]):
        return []
    reason = _cannot_compile()
    if reason is None:
        try:
            from mypyc.build import mypycify

            # One group, its shared library inside the package (gradcli/engine/core__mypyc), so
            # that an editable install finds it as it finds the modules.
            return mypycify(_core(), opt_level="3", group_name="gradcli.engine.core")
        except (Exception, SystemExit) as error:  # no mypyc, a type error (mypyc exits)
            reason = f"mypyc failed ({error})"
    _remove_compiled_modules()
    _say(f"the symbolic core is installed as pure Python: {reason}")
    return []


class _BuildExt(build_ext):
    """A C compiler that fails leaves the core as Python, not the install broken: the modules
    built before the failure are removed (one without the others would not import)."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:
            for extension in self.extensions:
                Path(self.get_ext_fullpath(extension.name)).unlink(missing_ok=True)
            _remove_compiled_modules()
            _say(f"the symbolic core is installed as pure Python: compiling failed ({error})")


setup(ext_modules=_extensions(), cmdclass={"build_ext": _BuildExt})
