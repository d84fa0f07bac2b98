#!/bin/sh
# run_tests.sh - the Python unit tests (tests/python/test_*.py) of tools/mlfcluster (rate
# schedule, results from a hand-made records folder, record reading, experiment validation),
# tools/mlffault (accounting, record errors), the import graphs of both packages (no circle within
# either, none between them: mlfcluster imports nothing of mlffault; imports at the top),
# tools/check-layers and the mlfabric package (python/mlfabric, imported from build/python). Run from the repository root (make does, as build/tests/test_python).
# Debian's /usr/bin/python3: it has torch and numpy (a `python3` on PATH may not).
PYTHONPATH="$(pwd)/build/python${PYTHONPATH:+:$PYTHONPATH}" exec /usr/bin/python3 -m unittest discover -s tests/python "$@"
