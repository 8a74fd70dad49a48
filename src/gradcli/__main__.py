"""``python -m gradcli``."""

from gradcli.cli import main

main()
