"""Where tools/mlf-cluster finds the repository and its programs (MLF_BUILD, MLF_MPIRUN), and an
experiment loaded with them; the one-line exit of every tools/mlf-cluster command."""
import os
import sys

from .experiment import Experiment, ExperimentError

PROG = "mlf-cluster"


def die(msg):
    """Print "mlf-cluster: MSG" on stderr and exit with status 2."""
    print("%s: %s" % (PROG, msg), file=sys.stderr)
    sys.exit(2)


def paths():
    """(repository root, build folder, mpirun) from the package's place and the environment."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    build = os.environ.get("MLF_BUILD") or os.path.join(root, "build")
    mpirun = os.environ.get("MLF_MPIRUN") or os.path.join(root, "tools", "mlf-mpirun")
    return root, build, mpirun


def load(path, systems=None, check_programs=True, worker_command=None):
    """The Experiment of PATH (SYSTEMS: a comma list to run instead of its own, CHECK_PROGRAMS:
    the built programs must exist, WORKER_COMMAND: an argv replacing its worker program); dies
    with its one-line error."""
    root, build, mpirun = paths()
    try:
        return Experiment(path, root, build, mpirun, systems=systems, check_programs=check_programs,
                          worker_command=worker_command)
    except ExperimentError as e:
        die(str(e))
