"""mlf-fault in Python (tools/mlf-fault is the entry point): cli (list, run, check, soak), checks
(the checks of a run folder), soak (the soak's fault schedule and checks); records are read
through mlfcluster.records."""
