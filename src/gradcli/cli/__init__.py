"""The command line: reads argv and stdin, prints, picks exit statuses. The work is done by the
library below it (engine, language, gradcheck, formulas, output), callable from Python as well.

One module per command; the ``cli`` group imports a command's module when the command runs
(``commands.COMMANDS``), so that ``gradcli eval`` loads neither ``diff`` nor ``check``.
"""

from gradcli.cli.startup import quiet_interrupts

with quiet_interrupts():  # the imports of click, the parser and the core: see startup.py
    from gradcli.cli.base import cli, main

__all__ = ["cli", "main"]
