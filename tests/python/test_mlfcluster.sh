#!/bin/sh
# test_mlfcluster.sh - the Python unit tests of tools/mlfcluster (tests/python/test_*.py): rate
# schedule, results from a hand-made records folder, experiment validation. Run from the
# repository root (make does, from build/tests/test_mlfcluster).
exec python3 -m unittest discover -s tests/python "$@"
