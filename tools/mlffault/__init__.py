"""mlf-fault in Python (tools/mlf-fault is the entry point): cli (list, run, check), checks (the
checks of a run folder), records (reading JSON and JSON-lines records, jq-style formatting)."""
