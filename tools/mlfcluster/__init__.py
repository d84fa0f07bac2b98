"""mlfcluster - the experiment runner behind tools/mlf-cluster (docs/experiments.md).

Modules: experiment (the experiment file), testbed (mlf-testbed), procs (processes of one
system), network (the seeded rate schedule and its driver), faults (the fault driver),
results (results.json and the summary table), plots (gnuplot), runner (one run), cli.
"""
