"""How the runner reaches the cluster's hosts (docs/deploy.md "Launch"): one launcher per run,
chosen by the cluster config's "launch" object. Every launcher offers the runner the same calls
(up, down, start, dataplane, socket_ready, shape, tel, host_rx, namespaces, leftovers, gather):

- local (default): the emulated testbed on this machine, processes in its namespaces with
  `mlf-testbed exec` (tools/mlfcluster/testbed.py);
- ssh: OpenSSH to each host's control address (control_ip, else ip); one ssh per process, whose
  remote wrapper forwards signals written to its stdin and ends the process when the connection
  drops; fan-out commands (teardown, preflight) through ClusterShell's clush;
- slurm: srun inside an allocation (SLURM_JOB_NODELIST), one step per process (srun_argv), the
  same wrapper as over ssh; with "emulate": true a local Slurm (one slurmd per namespace) and an
  allocation of it are made for the run (tools/mlfcluster/slurm.py);
- ssh with "emulate": true: the hosts are the testbed's namespaces, each given a management
  interface on a bridge of this machine (its control_ip) and its own sshd (a host key and an
  authorized key made for the run); the runner then reaches hosts only through ssh.
"""
import json
import os
import shlex
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from .procs import Proc, alive
from .slurm import LocalSlurm
from .testbed import SOCK_DIR, Testbed

SSH_READY_S = 20        # an emulated host's sshd accepts a connection within this
REMOTE_GRACE_S = 5      # a remote process left after the runner stopped it: TERM, then KILL after this
SSHD = "/usr/sbin/sshd"
FANOUT_DONE = "mlf-fanout-done"   # the last line of every fan-out command's output

# The remote wrapper of every process started over ssh: runs the program with stdin /dev/null,
# records its pid in PIDDIR, sends it each signal name read from stdin (the runner's Proc.signal)
# and TERM when stdin ends (the runner or the connection died); exits with the program's status.
WRAPPER = r'''
piddir=$1; name=$2; shift 2
mkdir -p "$piddir"
exec 3<&0
"$@" </dev/null &
c=$!
echo "$c" >"$piddir/$name.pid"
( while read -r s; do kill -"$s" "$c" 2>/dev/null; done; kill -TERM "$c" 2>/dev/null ) <&3 &
r=$!
exec 3<&-
wait "$c"; st=$?
kill "$r" 2>/dev/null
rm -f "$piddir/$name.pid"
exit "$st"
'''

# Run on each host at teardown: every process the run started that still runs gets TERM, then
# KILL; prints "left NAME PID" for one that survives both.
CLEANUP = r'''
d=$1; [ -d "$d" ] || exit 0
for f in "$d"/*.pid; do [ -f "$f" ] || continue; p=$(cat "$f"); kill -TERM "$p" 2>/dev/null; done
i=0; while [ $i -lt %d ]; do
  n=0; for f in "$d"/*.pid; do [ -f "$f" ] || continue; kill -0 "$(cat "$f")" 2>/dev/null && n=1; done
  [ $n = 0 ] && break; sleep 0.1; i=$((i+1)); done
for f in "$d"/*.pid; do [ -f "$f" ] || continue; p=$(cat "$f"); kill -KILL "$p" 2>/dev/null; sleep 0.1
  kill -0 "$p" 2>/dev/null && echo "left $(basename "$f" .pid) $p"; rm -f "$f"; done
rmdir "$d" 2>/dev/null
exit 0
''' % (REMOTE_GRACE_S * 10)


class LaunchError(Exception):
    """The cluster's "launch" cannot be used (one line saying why and what to change)."""


def read_cluster(path):
    """The cluster config at PATH as a dict (the C parser has already checked it)."""
    with open(path) as f:
        return json.load(f)


def control_ip(host):
    """A host dict's control address: control_ip, else ip (docs/cluster-config.md)."""
    return host.get("control_ip") or host["ip"]


def eal_args(cluster, host, index, build, ncpu):
    """The EAL arguments of HOST's dataplane (a host dict of CLUSTER) from its "dpdk" object: a
    PCI port (-a) with hugepages (and --socket-mem) or a vdev with --no-huge, -l LCORES (default
    1); without "dpdk": the testbed's own (mlf-testbed eal-args: an af_packet port on eth0, core
    INDEX mod NCPU)."""
    d = host.get("dpdk")
    prefix = "--file-prefix=%s-%s" % (cluster["name"], host["name"])
    if not d:
        r = subprocess.run([os.path.join(build, "mlf-testbed"), "eal-args", cluster["_path"], host["name"],
                            "--core", str(index % ncpu)], capture_output=True, text=True)
        if r.returncode != 0:
            raise LaunchError("mlf-testbed eal-args %s: %s" % (host["name"], r.stderr.strip()))
        return r.stdout.split()
    out = [prefix, "-l", d.get("lcores") or "1"]   # core 0 left to the system
    if d.get("pci"):
        out += ["-a", d["pci"]]
    else:
        out += ["--no-pci", "--vdev=" + d["vdev"]]
    if d.get("hugepages", bool(d.get("pci"))):
        if d.get("socket_mem"):
            out += ["--socket-mem", d["socket_mem"]]
    else:
        out += ["--no-huge", "-m", "512"]
    return out


def srun_argv(host, argv, env=None, job_env=None):
    """The srun command line that runs ARGV (ENV added) as one step on HOST inside the Slurm
    allocation of JOB_ENV (default os.environ: SLURM_JOB_ID); LaunchError outside an allocation
    or for a host not in SLURM_JOB_NODELIST (docs/deploy.md "Slurm")."""
    je = os.environ if job_env is None else job_env
    if not je.get("SLURM_JOB_ID"):
        raise LaunchError('launch via slurm: no Slurm allocation (SLURM_JOB_ID unset): run inside salloc or sbatch')
    nodes = expand_nodelist(je.get("SLURM_JOB_NODELIST", ""))
    if host not in nodes:
        raise LaunchError("launch via slurm: host %s is not in the allocation (SLURM_JOB_NODELIST %s)"
                          % (host, je.get("SLURM_JOB_NODELIST", "")))
    return (["srun", "--jobid", je["SLURM_JOB_ID"], "--nodes", "1", "--ntasks", "1", "--nodelist", host,
             "--overlap", "--kill-on-bad-exit=1", "--export", "ALL"]
            + (["env"] + ["%s=%s" % kv for kv in sorted(env.items())] if env else []) + list(argv))


def expand_nodelist(s):
    """A Slurm node list ("n[01-03,07],gpu1") as host names."""
    out, parts, depth, cur = [], [], 0, ""
    for ch in s:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        cur += ch
    if cur:
        parts.append(cur)
    for p in parts:
        if "[" not in p:
            out.append(p)
            continue
        base, rng = p.split("[", 1)
        rng, tail = rng.split("]", 1)
        for r in rng.split(","):
            a, _, b = r.partition("-")
            if not b:
                out.append(base + a + tail)
                continue
            for k in range(int(a), int(b) + 1):
                out.append(base + str(k).zfill(len(a)) + tail)
    return out


class LocalLauncher(Testbed):
    """The emulated testbed on this machine (`mlf-testbed exec`): the runner's original path."""
    via = "local"

    def start(self, procs, name, log, host, argv, env=None):
        return procs.start(name, log, self.exec_argv(host, argv), env)

    def socket_ready(self, host):
        sock = self.socket(host)
        return lambda: os.path.exists(sock)

    def adopt(self, procs, name, pid, log):
        return procs.adopt(name, pid, log)

    def leftovers(self):
        return []

    def gather(self, sysdir, log):
        return True

    def netdev_argv(self, python, script, out, interval):
        return ["ip", "netns", "exec", self.cname + "-sw", python, script, out, interval]


class RemoteProc(Proc):
    """A process started over ssh: its local handle is the ssh client, which lives as long as the
    remote process (the wrapper); a signal is written to the client's stdin by name."""

    def signal(self, sig):
        try:
            self.popen.stdin.write((signal.Signals(sig).name[3:] + "\n").encode())
            self.popen.stdin.flush()
        except (OSError, ValueError):
            pass


class SshLauncher:
    """Hosts reached over OpenSSH at their control address (docs/deploy.md)."""
    via = "ssh"

    def __init__(self, exp, run):
        self.exp, self.run = exp, run
        self.cl = read_cluster(exp.cluster)
        self.cl["_path"] = exp.cluster
        self.cname, self.cluster = self.cl["name"], exp.cluster
        self.launch = self.cl.get("launch") or {}
        self.emulate = bool(self.launch.get("emulate"))
        self.hosts = {h["name"]: h for h in self.cl["hosts"]}
        self.tb = Testbed(exp) if self.emulate else None
        self.ssh_dir = os.path.join(run, "ssh")
        self.piddir = "/tmp/mlf-launch-%s-%d" % (self.cname, os.getpid())
        self.popens = []
        self.sshds = {}
        self.shared = {}
        self.dp_bin = os.environ.get("MLF_DATAPLANE") or os.path.join(exp.build, "mlf-dataplane")
        for h in self.cl["hosts"]:
            d = h.get("dpdk") or {}
            if d.get("pci") and not h.get("control_ip") and self.via == "ssh":
                raise LaunchError('%s: hosts %s: its ip %s belongs to DPDK port %s: add "control_ip" (its '
                                  'management address) to reach it over ssh' % (exp.cluster, h["name"], h["ip"],
                                                                                d["pci"]))

    # ---- ssh command lines ----
    def ssh_base(self, host):
        """ssh ... USER@CONTROL_IP (no command) for HOST."""
        o = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5",
             "-o", "ControlMaster=auto", "-o", "ControlPath=%s/cm-%%C" % self.ssh_dir, "-o", "ControlPersist=60"]
        if self.launch.get("port"):
            o += ["-p", str(self.launch["port"])]
        o += self.emulate_options() + list(self.launch.get("ssh_options") or [])
        user = self.launch.get("user")
        return o + [("%s@" % user if user else "") + control_ip(self.hosts[host])]

    def emulate_options(self):
        if not self.emulate:
            return []
        return ["-i", os.path.join(self.ssh_dir, "id"), "-o", "UserKnownHostsFile=" +
                os.path.join(self.ssh_dir, "known_hosts"), "-o", "StrictHostKeyChecking=yes"]

    def host_argv(self, host, cmd):
        """The local command line that runs the shell command CMD on HOST (over ssh here; a step
        of the allocation under Slurm)."""
        return self.ssh_base(host) + [cmd]

    def unreachable(self, host):
        """Why HOST counts as not reachable, for the run's log."""
        return "not reachable over ssh (%s)" % " ".join(self.ssh_base(host)[-1:])

    def remote(self, host, cmd, **kw):
        """Run the shell command CMD on HOST; the CompletedProcess (text)."""
        kw.setdefault("capture_output", True)
        kw.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.run(self.host_argv(host, cmd), text=True, **kw)

    def fanout(self, cmd, hosts=None, timeout=60):
        """CMD on every host (HOSTS: names) at once through clush: {host: (rc, output)}; a host
        clush cannot reach has rc 255."""
        hosts = hosts or list(self.hosts)
        by_ip = {control_ip(self.hosts[h]): h for h in hosts}
        ssh = self.ssh_base(hosts[0])[1:-1]
        # clush reads its options through configparser: a literal % is written %%
        argv = ["clush", "-w", ",".join(by_ip), "-o", " ".join(shlex.quote(x) for x in ssh).replace("%", "%%"),
                "--nostdin", "-u", str(timeout), "-O", "fd_max=1024", "%s; echo %s" % (cmd, FANOUT_DONE)]
        if self.launch.get("user"):
            argv[1:1] = ["-l", self.launch["user"]]
        r = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        out = {h: [0, []] for h in hosts}
        for line in r.stdout.splitlines():
            ip, _, rest = line.partition(": ")
            if ip in by_ip:
                out[by_ip[ip]][1].append(rest)
        for line in r.stderr.splitlines():
            for ip, h in by_ip.items():
                if line.startswith("clush: %s: exited with exit code " % ip):
                    out[h][0] = int(line.rsplit(" ", 1)[1])
                elif line.startswith("clush: %s:" % ip) or line.startswith("%s: ssh:" % ip):
                    out[h][0] = out[h][0] or 255
                    out[h][1].append(line)
        for h, x in out.items():  # no end marker: the command did not run to its end there
            if FANOUT_DONE not in x[1]:
                x[0] = x[0] or 255
                x[1].append(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "no answer through clush")
        return {h: (rc, "\n".join(l for l in o if l != FANOUT_DONE)) for h, (rc, o) in out.items()}

    def wrap(self, name, argv, env=None):
        """The remote command line of ARGV under the wrapper (ENV added, in the run's folders)."""
        prog = (["env"] + ["%s=%s" % kv for kv in sorted(env.items())] if env else []) + list(argv)
        return "sh -c %s mlf %s %s %s" % (shlex.quote(WRAPPER), shlex.quote(self.piddir), shlex.quote(name),
                                         " ".join(shlex.quote(a) for a in prog))

    # ---- the runner's calls ----
    def up(self, log_path):
        """Emulate: the testbed, a management bridge, one sshd per host. Then every host answers
        over ssh and has the cluster key (copied with mode 0600 where missing)."""
        os.makedirs(self.ssh_dir, exist_ok=True)
        with open(log_path, "w") as log:
            if self.emulate and not (self.tb.up(log_path + ".testbed") and self.emulate_up(log)):
                return False
            if not self.attach(log):
                return False
            marker = os.path.join(self.run, ".mlf-shared-%d" % os.getpid())
            with open(marker, "w") as f:
                f.write(marker)
            with ThreadPoolExecutor(len(self.hosts)) as pool:
                res = dict(zip(self.hosts, pool.map(lambda h: self.host_up(h, marker), self.hosts)))
            os.unlink(marker)
            for h, why in res.items():
                if why:
                    log.write("%s: %s\n" % (h, why))
            log.write("shared run folder: %s\n" % " ".join(h for h in self.hosts if self.shared.get(h)))
            return not any(res.values())

    def host_up(self, h, marker):
        """HOST answers over ssh (its first connection, shared by every later ssh), whether it
        sees the run folder (MARKER), the cluster key installed: None, or what failed."""
        if not self.wait_ssh(h, SSH_READY_S if self.emulate else 10):
            return self.unreachable(h)
        r = self.remote(h, "cat %s 2>/dev/null" % shlex.quote(marker))
        self.shared[h] = r.stdout.strip() == marker
        return self.copy_key(h)

    def wait_ssh(self, host, timeout):
        end = time.monotonic() + timeout
        while True:
            if self.remote(host, "true").returncode == 0:
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.2)

    def copy_key(self, h):
        """The cluster key on host H with mode 0600, copied there when missing: None, or why not."""
        kf = self.exp.key_file
        if not kf:
            return None
        with open(kf, "rb") as f:
            key = f.read()
        q = shlex.quote(kf)
        r = subprocess.run(self.host_argv(h, "test -f %s || (umask 077; mkdir -p $(dirname %s); cat >%s.tmp && "
                                             "mv %s.tmp %s); chmod 600 %s" % (q, q, q, q, q, q)),
                           input=key, capture_output=True)
        return None if r.returncode == 0 else "cannot install the cluster key %s: %s" % (
            kf, r.stderr.decode("utf-8", "replace").strip())

    def mkdirs(self, host, argv):
        """The run's folders an ARGV names, made on HOST when it does not share the run folder."""
        if self.shared.get(host, True):
            return
        dirs = [a for a in argv if a.startswith(self.run)]
        if dirs:
            self.remote(host, "mkdir -p " + " ".join(shlex.quote(os.path.dirname(d) if "." in
                                                                  os.path.basename(d) else d) for d in dirs))

    def start(self, procs, name, log, host, argv, env=None):
        self.mkdirs(host, argv)
        with open(log, "w") as out:
            p = subprocess.Popen(self.host_argv(host, self.wrap(name, argv, env)), stdin=subprocess.PIPE,
                                 stdout=out, stderr=subprocess.STDOUT, process_group=0)
        proc = RemoteProc(name, p.pid, log, p)
        with procs.lock:
            procs.list.append(proc)
        return proc

    def dataplane(self, host, log, pid_file, start_file, args, procs=None):
        """HOST's dataplane with its EAL settings (eal_args) over ssh; waits for its socket; the
        local pid (the ssh client) or None with the reason in START_FILE."""
        h = self.hosts[host]
        idx = [x["name"] for x in self.cl["hosts"]].index(host)
        try:
            eal = eal_args(self.cl, h, idx, self.exp.build, os.cpu_count() or 1)
        except LaunchError as x:
            with open(start_file, "w") as f:
                f.write("%s\n" % x)
            return None
        argv = [self.dp_bin] + eal + ["--", "--cluster", os.path.abspath(self.cluster), "--host", host,
                                      "--shaper-gbps", "%g" % h.get("up_gbps", 10)]
        if (h.get("dpdk") or {}).get("pci"):
            argv.append("--busy-poll")   # a real NIC: a dedicated core (docs/dataplane.md "Real NIC")
        argv += list(args)
        with open(log, "w") as out:
            out.write("%s\n" % " ".join(argv))
            out.flush()
            p = subprocess.Popen(self.host_argv(host, self.wrap("dataplane@" + host, argv)),
                                 stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, process_group=0)
        self.popens.append(p)
        sock = shlex.quote(self.socket(host))
        end = time.monotonic() + 30
        while time.monotonic() < end:
            if p.poll() is not None:
                with open(start_file, "w") as f:
                    f.write("host %s: mlf-dataplane exited (status %d) before its socket appeared; log: %s\n"
                            % (host, p.returncode, log))
                return None
            if self.remote(host, "test -S %s" % sock).returncode == 0:
                with open(pid_file, "w") as f:
                    f.write("%d\n" % p.pid)
                return p.pid
            time.sleep(0.1)
        p.stdin.close()
        with open(start_file, "w") as f:
            f.write("host %s: mlf-dataplane did not create %s within 30 s; log: %s\n" % (host, sock, log))
        return None

    def adopt(self, procs, name, pid, log):
        """The Proc of a dataplane this launcher started (signals through its ssh client)."""
        p = next(x for x in self.popens if x.pid == pid)
        proc = RemoteProc(name, pid, log, p)
        with procs.lock:
            procs.list.append(proc)
        return proc

    def socket(self, host):
        return os.path.join(SOCK_DIR, "%s-%s.sock" % (self.cname, host))

    def socket_ready(self, host):
        sock = shlex.quote(self.socket(host))
        return lambda: self.remote(host, "test -S %s" % sock).returncode == 0

    def tel(self, host, cmd):
        tel = os.path.join(self.exp.build, "mlf-tel")
        return self.remote(host, "%s %s %s" % (shlex.quote(tel), shlex.quote("%s-%s" % (self.cname, host)),
                                               shlex.quote(cmd))).returncode == 0

    def shape(self, host, direction, gbps):
        """The emulated links' tbf (the emulated network, on this machine); on real hosts the
        dataplane's own shaper (tel /mlfabric/shaper) is what paces a host."""
        return self.tb.shape(host, direction, gbps) if self.emulate else True

    def host_rx(self, host):
        r = self.remote(host, "cat /sys/class/net/eth0/statistics/rx_bytes")
        try:
            return int(r.stdout.strip()) if r.returncode == 0 else None
        except ValueError:
            return None

    def namespaces(self):
        return self.tb.namespaces() if self.emulate else []

    def netdev_argv(self, python, script, out, interval):
        return self.tb and ["ip", "netns", "exec", self.cname + "-sw", python, script, out, interval]

    def gather(self, sysdir, log):
        """Every host's records and logs under SYSDIR copied into the run folder (hosts that
        share it have written there already); False naming a host it could not copy from."""
        ok = True
        for h in self.hosts:
            if self.shared.get(h, True):
                continue
            tar = subprocess.Popen(self.host_argv(h, "tar -C %s -cf - ." % shlex.quote(sysdir)),
                                   stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            x = subprocess.run(["tar", "-C", sysdir, "-xf", "-", "--keep-newer-files"], stdin=tar.stdout,
                               capture_output=True)
            if tar.wait() != 0 or x.returncode != 0:
                log("could not gather %s's records from %s" % (h, sysdir))
                ok = False
        return ok

    def leftovers(self):
        """Every host's processes of this run stopped (TERM, KILL); the hosts where some are left
        or that cannot be reached, as "host: why" strings."""
        bad = []
        for h, (rc, out) in sorted(self.fanout("sh -c %s mlf %s" % (shlex.quote(CLEANUP), shlex.quote(self.piddir))).items()):
            if rc != 0:
                bad.append("%s: unreachable (%s)" % (h, out.strip().splitlines()[-1] if out.strip() else "rc %d" % rc))
            elif "left " in out:
                bad.append("%s: %s" % (h, "; ".join(l for l in out.splitlines() if l.startswith("left "))))
        return bad

    def down(self, quiet=True):
        for p in self.popens:
            try:
                p.stdin.close()
            except OSError:
                pass
        for p in self.popens:
            try:
                p.wait(timeout=REMOTE_GRACE_S + 2)
            except subprocess.TimeoutExpired:
                p.kill()
        self.popens = []
        self.detach()
        ok = True
        if self.emulate:
            ok = self.emulate_down() and self.tb.down()
        return ok if quiet else (0 if ok else 1)

    def attach(self, log):
        """Ready to reach the hosts (ssh needs nothing more; Slurm an allocation): True, or False
        with the reason in LOG."""
        return True

    def detach(self):
        """The shared ssh connections (ControlMaster) end now, not ControlPersist later."""
        for h in self.hosts:
            subprocess.run(self.ssh_base(h)[:-1] + ["-O", "exit", self.ssh_base(h)[-1]], capture_output=True,
                           stdin=subprocess.DEVNULL)

    # ---- the emulated hosts: a management bridge and an sshd per namespace ----
    def bridge(self):
        return (self.cname + "-mg")[:15]

    def emulate_up(self, log):
        """Give every namespace a management interface mg0 with its control_ip on bridge
        <cluster>-mg (this machine's end: the first free address of the first host's /24), then
        start its sshd with keys made for the run (ssh/ of the run folder)."""
        return self.management_up(log) and self.sshds_up(log)

    def sshds_up(self, log):
        """Every emulated host's sshd (in its namespace, on its control_ip) with a host key and an
        authorized key made for the run; known_hosts for the runner's ssh."""
        d = self.ssh_dir
        for k in ("id", "host_key"):
            if not os.path.exists(os.path.join(d, k)):
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "mlf-" + k, "-f",
                                os.path.join(d, k)], check=True, stdin=subprocess.DEVNULL)
        os.chmod(os.path.join(d, "id"), 0o600)
        with open(os.path.join(d, "id.pub")) as f, open(os.path.join(d, "authorized_keys"), "w") as out:
            out.write(f.read())
        with open(os.path.join(d, "host_key.pub")) as f:
            hk = " ".join(f.read().split()[:2])
        port = self.launch.get("port")
        with open(os.path.join(d, "known_hosts"), "w") as out:
            for h in self.cl["hosts"]:
                ip = control_ip(h)
                out.write("%s %s\n" % ("[%s]:%d" % (ip, port) if port else ip, hk))
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        for h in self.cl["hosts"]:
            conf = os.path.join(d, "sshd-%s.conf" % h["name"])
            with open(conf, "w") as f:
                f.write("ListenAddress %s\nPort %d\nHostKey %s\nPidFile %s\nAuthorizedKeysFile %s\n"
                        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPrintMotd no\n"
                        "MaxSessions 100\nMaxStartups 100\n"
                        % (control_ip(h), self.launch.get("port") or 22, os.path.join(d, "host_key"),
                           os.path.join(d, "sshd-%s.pid" % h["name"]), os.path.join(d, "authorized_keys")))
            ns = "%s-%s" % (self.cname, h["name"])
            self.sshds[h["name"]] = subprocess.Popen(
                ["ip", "netns", "exec", ns, SSHD, "-D", "-f", conf, "-E", os.path.join(d, "sshd-%s.log" % h["name"])],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, process_group=0)
        log.write("sshd on %s\n" % " ".join(sorted(control_ip(h) for h in self.cl["hosts"])))
        return True

    def management_up(self, log):
        """Every namespace's management interface mg0 with its control_ip on bridge <cluster>-mg;
        this machine's end (self.mine) is the first free address of the first host's /24. False
        with the failing command in LOG."""
        ips = {control_ip(h) for h in self.cl["hosts"]}
        base = control_ip(self.cl["hosts"][0]).rsplit(".", 1)[0]
        self.mine = mine = next("%s.%d" % (base, i) for i in range(254, 0, -1) if "%s.%d" % (base, i) not in ips)
        br = self.bridge()
        for dev in [self.veth(i) for i in range(len(self.cl["hosts"]))] + [br]:  # left by a crash
            subprocess.run(["ip", "link", "del", dev], capture_output=True, stdin=subprocess.DEVNULL)
        cmds = [["ip", "link", "add", br, "type", "bridge"], ["ip", "addr", "add", mine + "/24", "dev", br],
                ["ip", "link", "set", br, "up"]]
        for i, h in enumerate(self.cl["hosts"]):
            ns, veth = "%s-%s" % (self.cname, h["name"]), self.veth(i)
            cmds += [["ip", "link", "add", veth, "type", "veth", "peer", "name", "mg0", "netns", ns],
                     ["ip", "link", "set", veth, "master", br, "up"],
                     ["ip", "-n", ns, "addr", "add", control_ip(h) + "/24", "dev", "mg0"],
                     ["ip", "-n", ns, "link", "set", "mg0", "up"], ["ip", "-n", ns, "link", "set", "lo", "up"]]
        for c in cmds:
            r = subprocess.run(c, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            if r.returncode != 0:
                log.write("%s: %s\n" % (" ".join(c), r.stderr.strip()))
                return False
        log.write("management bridge %s (%s)\n" % (br, mine))
        return True

    def emulate_down(self):
        """Stop every emulated host's sshd (by its pid) and remove the management bridge and the
        hosts' links to it."""
        ok = self.daemons_down()
        for dev in [self.veth(i) for i in range(len(self.cl["hosts"]))] + [self.bridge()]:
            subprocess.run(["ip", "link", "del", dev], capture_output=True, stdin=subprocess.DEVNULL)
        return ok

    def daemons_down(self):
        """Every emulated host's sshd stopped (by its pid): False when one needed a KILL."""
        ok = True
        for h, p in self.sshds.items():
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
            try:
                with open(os.path.join(self.ssh_dir, "sshd-%s.pid" % h)) as f:
                    pid = int(f.read().split()[0])
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
                    ok = False
            except (OSError, ValueError, IndexError):
                pass
        self.sshds = {}
        return ok

    def veth(self, i):
        """This machine's end of host I's management link."""
        return ("%s-m%d" % (self.cname, i))[:15]


class SlurmLauncher(SshLauncher):
    """Hosts reached as steps of a Slurm allocation (docs/deploy.md "Slurm"): each process, and
    each command the runner runs on a host, is an srun step (srun_argv) under the same remote
    wrapper as over ssh, its stdin forwarded by srun (signals by name, TERM when srun ends). The
    allocation is the caller's (salloc or sbatch: SLURM_JOB_ID, SLURM_JOB_NODELIST; host names
    are Slurm node names) or, with "emulate": true, made here on a local Slurm with one slurmd per
    testbed namespace (tools/mlfcluster/slurm.py) and taken down with the testbed."""
    via = "slurm"

    def __init__(self, exp, run):
        super().__init__(exp, run)
        self.slurm_dir = os.path.join(run, "slurm")
        self.job_env = None if self.emulate else dict(os.environ)
        self.local = None
        if not self.emulate:
            srun_argv(self.cl["hosts"][0]["name"], ["true"], job_env=self.job_env)   # refuses outside an allocation

    def host_argv(self, host, cmd):
        argv = srun_argv(host, ["sh", "-c", cmd], job_env=self.job_env)
        if self.local:
            argv[:0] = ["env", "SLURM_CONF=" + self.local.conf]
        return argv

    def unreachable(self, host):
        return "not reachable as a step of allocation %s (srun --nodelist %s)" % (
            (self.job_env or {}).get("SLURM_JOB_ID", "-"), host)

    def fanout(self, cmd, hosts=None, timeout=60):
        """CMD on every host at once, one step each: {host: (rc, output)} (255: no answer)."""
        hosts = hosts or list(self.hosts)

        def one(h):
            try:
                r = self.remote(h, cmd, timeout=timeout)
                return r.returncode, r.stdout + r.stderr
            except subprocess.TimeoutExpired:
                return 255, "no answer within %d s" % timeout
        with ThreadPoolExecutor(len(hosts)) as pool:
            return dict(zip(hosts, pool.map(one, hosts)))

    def emulate_up(self, log):
        """The management bridge, then a local Slurm: slurmctld on this machine's bridge address,
        a slurmd in every namespace on its control_ip."""
        if not self.management_up(log):
            return False
        os.makedirs(self.slurm_dir, exist_ok=True)
        self.local = LocalSlurm(self.slurm_dir, self.cname)
        return self.local.up([(h["name"], "%s-%s" % (self.cname, h["name"]), control_ip(h)) for h in self.cl["hosts"]],
                             self.mine, log)

    def attach(self, log):
        """Emulate: an allocation of every host of the local Slurm (salloc --no-shell)."""
        if not self.emulate:
            return True
        self.job_env = self.local.allocate(list(self.hosts), "mlf-" + self.cname, log)
        return self.job_env is not None

    def detach(self):
        pass

    def daemons_down(self):
        """The local Slurm's allocation cancelled and its daemons stopped: False when one needed
        a KILL."""
        if not self.local:
            return True
        bad = self.local.down()
        self.local = None
        return not bad


def make(exp, run):
    """The launcher the cluster config of EXP asks for (LaunchError when it cannot be used)."""
    cl = read_cluster(exp.cluster)
    via = (cl.get("launch") or {}).get("via", "local")
    if via == "local":
        return LocalLauncher(exp)
    if via == "ssh":
        return SshLauncher(exp, run)
    return SlurmLauncher(exp, run)
