"""The command line: reads argv and stdin, prints, picks exit statuses. The work is done by the
library below it (engine, language, gradcheck, formulas, output), callable from Python as well.

One module per command; importing them registers them with the ``cli`` group.
"""

from gradcli.cli.startup import quiet_interrupts

with quiet_interrupts():  # the imports of click, the parser and the core: see startup.py
    from gradcli.cli import (  # noqa: F401
        check_command,
        completion,
        diff_command,
        eval_command,
        functions_command,
        manpage,
        picture_commands,
        repl,
    )
    from gradcli.cli.base import cli, main

__all__ = ["cli", "main"]
