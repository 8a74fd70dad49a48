"""Executing many programs: the JSON Lines batch feed, its forked workers (a lost one replaced,
its lines redone) and the Dask cluster (``--cluster``), which runs batch chunks, sweep blocks and
check files as tasks and gives results back in input order."""
