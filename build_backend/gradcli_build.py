"""setuptools' build backend, asking for mypy only when the core is to be compiled.

A plain ``pip install`` builds gradcli as Python and needs nothing more than setuptools;
``GRADCLI_COMPILE=1`` also asks for mypy, whose mypyc compiles the symbolic core (setup.py).
"""

from __future__ import annotations

import os

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 (the backend's other hooks, as they are)

MYPY = "mypy==2.4.1"


def compiling() -> bool:
    return os.environ.get("GRADCLI_COMPILE", "").lower() not in ("", "0", "false", "no")


def get_requires_for_build_wheel(config_settings=None):
    return [*build_meta.get_requires_for_build_wheel(config_settings),
            *([MYPY] if compiling() else [])]


def get_requires_for_build_editable(config_settings=None):
    return [*build_meta.get_requires_for_build_editable(config_settings),
            *([MYPY] if compiling() else [])]
