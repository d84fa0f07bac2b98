"""Unit tests of tools/mlfcluster/launcher.py, slurm.py and preflight.py without remote hosts: the
srun command lines (of a step, of every command the Slurm launcher runs on a host) and Slurm node
lists, the local Slurm's slurm.conf, a host's EAL arguments from its "dpdk" object, the remote
wrapper's signal forwarding (run locally with sh), the preflight host script's problem lines.
Run: python3 -m unittest discover -s tests/python"""
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from mlfcluster import launcher, preflight, slurm  # noqa: E402

ALLOC = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "node[01-03],gpu7"}


class Slurm(unittest.TestCase):
    def test_nodelist(self):
        self.assertEqual(launcher.expand_nodelist("node[01-03,07],gpu7,a[9-10]x"),
                         ["node01", "node02", "node03", "node07", "gpu7", "a9x", "a10x"])
        self.assertEqual(launcher.expand_nodelist("n1"), ["n1"])

    def test_srun_argv(self):
        argv = launcher.srun_argv("node02", ["/opt/mlf/build/mlf-ps", "--host", "node02"], {"A": "1"}, ALLOC)
        self.assertEqual(argv, ["srun", "--jobid", "4242", "--nodes", "1", "--ntasks", "1", "--nodelist", "node02",
                                "--overlap", "--kill-on-bad-exit=1", "--export", "ALL", "env", "A=1",
                                "/opt/mlf/build/mlf-ps", "--host", "node02"])

    def test_srun_refusals(self):
        with self.assertRaisesRegex(launcher.LaunchError, "no Slurm allocation"):
            launcher.srun_argv("node01", ["true"], job_env={})
        with self.assertRaisesRegex(launcher.LaunchError, "host node09 is not in the allocation"):
            launcher.srun_argv("node09", ["true"], job_env=ALLOC)

    def cluster(self, d, launch):
        cl = os.path.join(d, "c.json")
        with open(cl, "w") as f:
            f.write('{"name": "sl", "launch": %s, "hosts": [{"name": "node01", "ip": "10.0.0.1", "dpdk": {"pci": '
                    '"0000:03:00.0"}}, {"name": "gpu7", "ip": "10.0.0.2", "control_ip": "10.1.0.2"}]}' % launch)
        return preflight.Target(cl, "/b")

    def test_launcher_steps(self):
        """Inside an allocation every command on a host is a step of it through sh -c, the
        process wrapper's command line included; a PCI host needs no control_ip (Slurm reaches
        it by node name)."""
        with tempfile.TemporaryDirectory() as d:
            old = dict(os.environ)
            os.environ.update(ALLOC)
            try:
                L = launcher.SlurmLauncher(self.cluster(d, '{"via": "slurm"}'), d)
            finally:
                os.environ.clear()
                os.environ.update(old)
            self.assertEqual(L.host_argv("gpu7", "test -S /x"),
                             ["srun", "--jobid", "4242", "--nodes", "1", "--ntasks", "1", "--nodelist", "gpu7",
                              "--overlap", "--kill-on-bad-exit=1", "--export", "ALL", "sh", "-c", "test -S /x"])
            w = L.host_argv("node01", L.wrap("ps@node01", ["/b/mlf-ps", "--host", "node01"], {"A": "1"}))
            self.assertEqual(w[:9], ["srun", "--jobid", "4242", "--nodes", "1", "--ntasks", "1", "--nodelist",
                                     "node01"])
            self.assertEqual(w[-3:-1], ["sh", "-c"])
            self.assertIn("env A=1 /b/mlf-ps --host node01", w[-1])
            self.assertIn("not reachable as a step of allocation 4242 (srun --nodelist gpu7)", L.unreachable("gpu7"))

    def test_launcher_outside_allocation(self):
        with tempfile.TemporaryDirectory() as d:
            old = dict(os.environ)
            for k in ("SLURM_JOB_ID", "SLURM_JOB_NODELIST"):
                os.environ.pop(k, None)
            try:
                with self.assertRaisesRegex(launcher.LaunchError, "no Slurm allocation.*salloc"):
                    launcher.SlurmLauncher(self.cluster(d, '{"via": "slurm"}'), d)
            finally:
                os.environ.clear()
                os.environ.update(old)

    def test_local_slurm_conf(self):
        """One slurmd per node on its own address, per-node spool, pid and log files (%n),
        auth/none, every file under the run's folder."""
        t = slurm.conf_text("/r/slurm", "vm", "10.1.0.254", 6999, [("ps", "10.1.0.2"), ("w0", "10.1.0.10")], 64)
        lines = t.splitlines()
        for want in ("SlurmctldHost=vm(10.1.0.254)", "SlurmctldPort=6999", "AuthType=auth/none", "CredType=cred/none",
                     "SlurmdSpoolDir=/r/slurm/spool-%n", "SlurmdPidFile=/r/slurm/slurmd-%n.pid",
                     "StateSaveLocation=/r/slurm/state", "ProctrackType=proctrack/pgid", "TaskPlugin=task/none",
                     "NodeName=ps NodeHostname=10.1.0.2 NodeAddr=10.1.0.2 CPUs=64 State=UNKNOWN",
                     "NodeName=w0 NodeHostname=10.1.0.10 NodeAddr=10.1.0.10 CPUs=64 State=UNKNOWN",
                     "PartitionName=mlf Nodes=ALL Default=YES MaxTime=INFINITE State=UP"):
            self.assertIn(want, lines)
        paths = [x for x in lines if x.split("=")[0].endswith(("Dir", "File", "Location"))]
        self.assertEqual(len(paths), 6)
        self.assertFalse([x for x in paths if not x.split("=", 1)[1].startswith("/r/slurm/")], paths)


class Eal(unittest.TestCase):
    CL = {"name": "m", "_path": "/x/c.json"}

    def test_pci_hugepages(self):
        h = {"name": "w0", "ip": "10.0.0.2", "dpdk": {"pci": "0000:03:00.0", "lcores": "2-3", "socket_mem": "1024,0"}}
        self.assertEqual(launcher.eal_args(self.CL, h, 1, "/b", 4),
                         ["--file-prefix=m-w0", "-l", "2-3", "-a", "0000:03:00.0", "--socket-mem", "1024,0"])

    def test_vdev_no_huge(self):
        h = {"name": "w1", "ip": "10.0.0.3", "dpdk": {"vdev": "net_af_packet0,iface=eth1"}}
        self.assertEqual(launcher.eal_args(self.CL, h, 3, "/b", 2),
                         ["--file-prefix=m-w1", "-l", "1", "--no-pci", "--vdev=net_af_packet0,iface=eth1",
                          "--no-huge", "-m", "512"])


class Wrapper(unittest.TestCase):
    """The remote wrapper, run here with sh: a signal name on stdin reaches the program, the
    end of stdin stops it, its pid file lives as long as it does."""

    def start(self, d):
        p = subprocess.Popen(["sh", "-c", launcher.WRAPPER, "mlf", d, "prog@h", "sleep", "30"],
                             stdin=subprocess.PIPE)
        pidf = os.path.join(d, "prog@h.pid")
        end = time.monotonic() + 10
        while not os.path.exists(pidf) and time.monotonic() < end:
            time.sleep(0.02)
        self.assertTrue(os.path.exists(pidf), "no pid file")
        return p, pidf

    def test_signal_and_eof(self):
        with tempfile.TemporaryDirectory() as d:
            p, pidf = self.start(d)
            launcher.RemoteProc("prog@h", p.pid, "/dev/null", p).signal(signal.SIGKILL)
            self.assertEqual(p.wait(timeout=10), 128 + signal.SIGKILL)
            p.stdin.close()
            self.assertFalse(os.path.exists(pidf))
            p, pidf = self.start(d)
            p.stdin.close()   # the runner or the connection died
            self.assertEqual(p.wait(timeout=10), 128 + signal.SIGTERM)
            self.assertFalse(os.path.exists(pidf))


class Construct(unittest.TestCase):
    """An ssh launcher for a cluster config alone (as preflight makes it), without connecting."""

    def test_target(self):
        with tempfile.TemporaryDirectory() as d:
            cl = os.path.join(d, "c.json")
            with open(cl, "w") as f:
                f.write('{"name": "pf", "key_file": "pf.key", "launch": {"via": "ssh", "emulate": true, "port": 2200},'
                        ' "hosts": [{"name": "a", "ip": "10.0.0.1", "control_ip": "10.1.0.1"}]}')
            t = preflight.Target(cl, "/b")
            self.assertEqual(t.key_file, os.path.join(d, "pf.key"))
            L = launcher.SshLauncher(t, d)
            base = L.ssh_base("a")
            self.assertEqual(base[-1], "10.1.0.1")
            self.assertIn("2200", base)
            self.assertEqual(L.socket("a"), "/run/mlfabric/pf-a.sock")

    def test_pci_without_control_ip(self):
        with tempfile.TemporaryDirectory() as d:
            cl = os.path.join(d, "c.json")
            with open(cl, "w") as f:
                f.write('{"name": "pf", "launch": {"via": "ssh"}, "hosts": [{"name": "a", "ip": "10.0.0.1",'
                        ' "dpdk": {"pci": "0000:03:00.0"}}]}')
            with self.assertRaisesRegex(launcher.LaunchError, 'add "control_ip"'):
                launcher.SshLauncher(preflight.Target(cl, "/b"), d)


class PreflightScript(unittest.TestCase):
    def test_problems(self):
        with tempfile.TemporaryDirectory() as d:
            key = os.path.join(d, "k.key")
            with open(key, "wb") as f:
                f.write(b"x" * 32)
            os.chmod(key, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
            prog = os.path.join(d, "mlf-ps")
            with open(prog, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(prog, 0o755)
            r = subprocess.run(["sh", "-c", preflight.CHECK, "mlf", d, key, "", "lo", "1500", "0", "", "/nonexistent",
                                "mlf-ps", "mlf-worker"], capture_output=True, text=True)
            lines = r.stdout.splitlines()
            self.assertIn("P cluster key %s has mode 644|chmod 600 %s" % (key, key), lines)
            self.assertIn("P %s/mlf-worker missing|build it (make) or copy the build folder to the same path" % d, lines)
            self.assertTrue(any(x.startswith("S mlf-ps ") for x in lines), lines)
            self.assertFalse(any("lo" in x and x.startswith("P ") for x in lines), lines)


if __name__ == "__main__":
    unittest.main()
