"""The emulated cluster through build/mlf-testbed (docs/testbed.md): up, down, exec, shape,
dataplane, and the telemetry tool mlf-tel."""
import os
import subprocess

SOCK_DIR = "/run/mlfabric"


class Testbed:
    def __init__(self, exp):
        self.tb, self.cluster, self.cname = exp.tb, exp.cluster, exp.cname
        self.tel_prog = os.path.join(exp.build, "mlf-tel")

    def _run(self, args, **kw):
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        return subprocess.run(args, stdin=subprocess.DEVNULL, **kw).returncode == 0

    def up(self, log_path):
        with open(log_path, "w") as log:
            return self._run([self.tb, "up", self.cluster], stdout=log, stderr=subprocess.STDOUT)

    def down(self, quiet=True):
        if quiet:
            return self._run([self.tb, "down", self.cluster])
        return subprocess.run([self.tb, "down", self.cluster]).returncode

    def exec_argv(self, host, argv):
        """The command line that runs ARGV in HOST's namespace."""
        return [self.tb, "exec", self.cluster, host] + list(argv)

    def shape(self, host, direction, gbps):
        return self._run([self.tb, "shape", self.cluster, host, direction, gbps])

    def tel(self, host, cmd):
        return self._run([self.tel_prog, "%s-%s" % (self.cname, host), cmd])

    def dataplane(self, host, log, pid_file, start_file, args):
        """mlf-testbed dataplane (it waits for the dataplane's socket); the pid or None."""
        with open(pid_file, "w") as out, open(start_file, "w") as err:
            ok = self._run([self.tb, "dataplane", self.cluster, host, "--log", log, "--"] + list(args),
                           stdout=out, stderr=err)
        if not ok:
            return None
        try:
            return int(open(pid_file).read().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def socket(self, host):
        return os.path.join(SOCK_DIR, "%s-%s.sock" % (self.cname, host))

    def namespaces(self):
        """This cluster's network namespaces that exist."""
        try:
            out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        except OSError:
            return []
        names = [line.split()[0] for line in out.splitlines() if line.split()]
        return [n for n in names if n.startswith(self.cname + "-")]

    def host_rx(self, host):
        """Bytes received by HOST's eth0, measured outside the processes (None when unknown)."""
        r = subprocess.run(self.exec_argv(host, ["cat", "/sys/class/net/eth0/statistics/rx_bytes"]),
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
        try:
            return int(r.stdout.strip()) if r.returncode == 0 else None
        except ValueError:
            return None
