#!/bin/sh
# run_tests.sh - the Python unit tests (tests/python/test_*.py) of tools/mlfcluster (rate
# schedule, results from a hand-made records folder, experiment validation) and tools/mlffault
# (accounting, record errors). Run from the repository root (make does, as build/tests/test_python).
exec python3 -m unittest discover -s tests/python "$@"
