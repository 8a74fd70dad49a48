"""``python -m gradcli``. Guarded: a local Dask cluster's worker processes (``--cluster
local``) start by importing the main module, and must not run the command again."""

if __name__ == "__main__":
    from gradcli.cli import main

    main()
