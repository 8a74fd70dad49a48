"""The numeric core: the op table, graphs of nodes, forward values and reverse-mode gradients at
one point or many. No I/O, no parsing.

The backward pass has three forms, on purpose: on floats (``graph.backward``, the hot path of
``gradcli eval``, no NumPy), on arrays (``arrays``, ``vector``: NumPy) and on graph nodes
(``symbolic.builder``: derivatives as formulas). They share the op table's rules, written once
with ``F.name(...)``, and the reverse topological order with ``+=``; each is tested against the
others point by point.
"""


# The folders whose modules setup.py compiles (pyproject.toml's [tool.mypy] files).
COMPILED_PARTS = ("engine", "engine/ops", "gradcheck", "language", "symbolic")


def core_is_compiled() -> bool:
    """Whether the compiled core (mypyc, setup.py: the graph and the symbolic modules) is loaded."""
    from gradcli.engine import graph

    return not graph.__file__.endswith(".py")


def stale_core_modules() -> list[str]:
    """The core's modules whose source changed after they were compiled, in a source checkout
    (an installed package is never stale): Python would load the compiled one, unseen. os.path,
    not pathlib: this runs as every command starts, and pathlib is 9 ms of imports."""
    import os
    from importlib.machinery import EXTENSION_SUFFIXES

    package = os.path.dirname(os.path.dirname(__file__))  # src/gradcli
    checkout = os.path.dirname(os.path.dirname(package))
    if not os.path.exists(os.path.join(checkout, "pyproject.toml")):
        return []
    stale = []
    for part in COMPILED_PARTS:
        folder = os.path.join(package, part)
        times = {entry.name: entry.stat().st_mtime for entry in os.scandir(folder)}
        for name, built in times.items():
            for suffix in EXTENSION_SUFFIXES:
                source = name.removesuffix(suffix) + ".py"
                if name.endswith(suffix) and times.get(source, 0.0) > built:
                    stale.append(f"{part}/{source}")
    return sorted(stale)
