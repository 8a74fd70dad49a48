"""The autograd core: the op table, graphs of nodes, forward values and reverse-mode gradients at
one point or many, derivatives as graphs, and the printed forms of graphs. No I/O, no parsing.

The backward pass exists in three forms, on purpose: on floats (``graph.backward``, the hot path of
every ``gradcli eval``: plain loops, no NumPy), on arrays of many points (``vector``, NumPy, frees
intermediates as it goes) and on graph nodes (``symbolic.builder.backward``: derivatives as
graphs, of numbers or of arrays, for ``gradcli diff`` and Hessians). What they share is what
matters: the op table's derivative rules, written once with ``F.name(...)`` so that the same rule
runs on floats, complex numbers, arrays and nodes, and the same reverse topological order with
``+=`` accumulation. Replays (the check's perturbations, ``replay.Replayer`` on floats and
``gradcheck.columns`` on arrays) follow the same split. Each form is tested against the others
point by point.
"""


# The subpackages whose modules setup.py compiles (pyproject.toml's [tool.mypy] files).
COMPILED_PARTS = ("engine", "symbolic")


def core_is_compiled() -> bool:
    """Whether the compiled core (mypyc, setup.py: the graph and the symbolic modules) is loaded."""
    from gradcli.engine import graph

    return not graph.__file__.endswith(".py")


def stale_core_modules() -> list[str]:
    """The core's modules whose source changed after they were compiled, in a source checkout
    (an editable install): Python loads the compiled module, so the edit would go unseen.
    An installed package is never stale (its files are written together): not looked at.
    (os.path, not pathlib: this runs as every command starts, and pathlib is 9 ms of imports.)"""
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
