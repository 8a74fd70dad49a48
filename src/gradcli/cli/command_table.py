"""gradcli's commands and their options, known without loading click or the commands (the
lazy group in ``cli.base`` and the plain eval read it); tests/test_startup.py checks it."""

from __future__ import annotations

# Every option of ``gradcli eval`` as written (``-f`` and ``--file``), and whether it takes a
# value: what the plain eval must leave to click, and how ``--NAME VALUE`` is told from them.
EVAL_OPTIONS: dict[str, bool] = {
    "--set": True, "-f": True, "--file": True, "--values": True, "--allow-unused": False,
    "--json": False, "--no-nodes": False, "--no-check": False, "--rtol": True, "--atol": True,
    "--check-method": True, "--csv": False, "--order": True, "--hessian": False, "--hvp": True,
    "--strict": False, "--max-nodes": True, "--check-nodes": False, "--digits": True,
    "--mode": True, "--full": False, "--save": True, "--cluster": True, "--skip": True,
    "-h": False, "--help": False,
}

# Each command: the module that defines it, imported when the command runs; and its long flags
# (options without a value), so that ``gradcli eval ... --defaults`` is told from a variable.
COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "check": ("gradcli.cli.check_command", ("--fail-fast", "--json")),
    "completion": ("gradcli.cli.reference_commands", ()),
    "diff": ("gradcli.cli.diff_command", ("--allow-unused", "--defaults", "--json",
                                          "--no-check")),
    "eval": ("gradcli.cli.eval_command", tuple(
        flag for flag, takes_value in EVAL_OPTIONS.items()
        if not takes_value and flag.startswith("--") and flag != "--help")),
    "functions": ("gradcli.cli.reference_commands", ("--json",)),
    "graph": ("gradcli.cli.picture_commands", ("--allow-unused", "--no-check")),
    "man": ("gradcli.cli.reference_commands", ()),
    "plot": ("gradcli.cli.picture_commands", ("--allow-unused", "--no-check")),
    "repl": ("gradcli.cli.repl", ("--full",)),
}
