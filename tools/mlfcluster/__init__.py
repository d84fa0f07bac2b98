"""mlfcluster - the experiment runner behind tools/mlf-cluster (docs/experiments.md).

Modules, each importing only those listed before it (tests/python/test_imports.py checks it):
records (reading JSON-lines records and JSON documents), experiment (the experiment file), cpu
(CPU samples), procs (processes of one system), testbed (mlf-testbed), env (paths, loading an
experiment), network (the seeded rate schedule and its driver), faults (the fault driver), links
(per-link utilisation), results (results.json and the summary table), plots (gnuplot), runner
(one run), table2 (the Table 2 grid), cli. netdev.py is a script run in the switch namespace.
"""
