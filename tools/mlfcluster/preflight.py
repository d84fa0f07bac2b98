"""tools/mlf-cluster preflight CLUSTER: every host checked over the launch path before a run
(docs/deploy.md "Preflight"): reachable, the programs present and the same build as here, the
cluster key present with mode 0600, hugepages free, the NIC bound to a DPDK driver (a PCI port)
or its kernel interface up with the config's MTU (a vdev or the testbed's eth0), the control and
dataplane ports free. One line per problem, "HOST: problem: fix"; exit status 1 when any."""
import hashlib
import os
import shlex

from .launcher import LaunchError, SlurmLauncher, SshLauncher, control_ip, read_cluster

PROGRAMS = ("mlf-dataplane", "mlf-scheduler", "mlf-ps", "mlf-worker", "mlf-aggregator", "mlf-tel")
DPDK_DRIVERS = ("vfio-pci", "uio_pci_generic", "igb_uio")

# Run on each host with: BUILD KEY PCI IFACE MTU HUGE SCHED_PORT SOCK. Prints "P problem|fix"
# lines and "S program sha256" lines.
CHECK = r'''
build=$1 key=$2 pci=$3 iface=$4 mtu=$5 huge=$6 sport=$7 sock=$8; shift 8
for p in "$@"; do
  if [ -x "$build/$p" ]; then echo "S $p $(sha256sum "$build/$p" | cut -d' ' -f1)"
  else echo "P $build/$p missing|build it (make) or copy the build folder to the same path"; fi
done
if [ -n "$key" ]; then
  if [ ! -f "$key" ]; then echo "P cluster key $key missing|copy it: scp KEY host:$key; chmod 600 $key (mlf-cluster run copies it)"
  else m=$(stat -c %a "$key"); [ "$m" = 600 ] || echo "P cluster key $key has mode $m|chmod 600 $key"; fi
fi
if [ "$huge" = 1 ]; then
  f=$(awk '/HugePages_Free/ { print $2 }' /proc/meminfo)
  [ "${f:-0}" -gt 0 ] || echo "P no free hugepages|dpdk-hugepages.py -p 1G --setup 4G (or -p 2M --setup 2G)"
fi
if [ -n "$pci" ]; then
  d=$(basename "$(readlink "/sys/bus/pci/devices/$pci/driver" 2>/dev/null)" 2>/dev/null)
  if [ ! -e "/sys/bus/pci/devices/$pci" ]; then echo "P no PCI device $pci|fix hosts[].dpdk.pci (dpdk-devbind.py --status)"
  else case "$d" in vfio-pci|uio_pci_generic|igb_uio) ;;
    *) echo "P NIC $pci bound to ${d:-no driver}, not a DPDK driver|modprobe vfio-pci; dpdk-devbind.py --bind=vfio-pci $pci" ;; esac; fi
fi
if [ -n "$iface" ]; then
  if [ ! -e "/sys/class/net/$iface" ]; then echo "P no interface $iface|fix hosts[].dpdk.vdev (iface=)"
  else
    case "$(cat "/sys/class/net/$iface/operstate")" in down|lowerlayerdown|notpresent|dormant)
      echo "P link $iface is down|ip link set $iface up; check the cable" ;; esac
    m=$(cat "/sys/class/net/$iface/mtu"); [ "$m" -ge "$mtu" ] || echo "P $iface MTU $m below the cluster's $mtu|ip link set $iface mtu $mtu"
  fi
fi
if [ -n "$sport" ] && ss -Hltn "sport = :$sport" 2>/dev/null | grep -q .; then
  echo "P TCP port $sport (control_port) in use|stop what listens there (ss -ltnp) or change control_port"
fi
if [ -S "$sock" ] && ss -Hlx 2>/dev/null | grep -qF "$sock"; then
  echo "P a dataplane already serves $sock|stop it (mlf-cluster down, or kill the old run)"
fi
exit 0
'''


def local_sums(build):
    out = {}
    for p in PROGRAMS:
        try:
            with open(os.path.join(build, p), "rb") as f:
                out[p] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            out[p] = None
    return out


def host_args(L, h, exp):
    """The CHECK script's arguments for host dict H."""
    d = h.get("dpdk") or {}
    iface = ""
    if d.get("vdev"):
        iface = next((kv[6:] for kv in d["vdev"].split(",") if kv.startswith("iface=")), "")
    elif not d:
        iface = "eth0"  # the testbed's data interface
    huge = "1" if d.get("hugepages", bool(d.get("pci"))) else "0"
    sched = "scheduler" in (h.get("roles") or [])
    return [exp.build, exp.key_file or "", d.get("pci", ""), iface, str(L.cl.get("mtu", 1500)), huge,
            str(L.cl.get("control_port", 7070)) if sched else "", L.socket(h["name"])] + list(PROGRAMS)


def check(L, exp):
    """Every host's problems as "HOST: problem: fix" lines (in host order)."""
    mine = local_sums(exp.build)
    problems = []
    for h in L.cl["hosts"]:
        name = h["name"]
        cmd = "sh -c %s mlf %s" % (shlex.quote(CHECK), " ".join(shlex.quote(a) for a in host_args(L, h, exp)))
        r = L.remote(name, cmd)
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or ["ssh exit %d" % r.returncode])[-1]
            problems.append("%s: not reachable at %s (%s): check launch.user, ssh_options and the host's "
                            "control_ip, then ssh to it by hand" % (name, control_ip(h), why))
            continue
        for line in r.stdout.splitlines():
            if line.startswith("P "):
                what, _, fix = line[2:].partition("|")
                problems.append("%s: %s: %s" % (name, what, fix))
            elif line.startswith("S "):
                _, prog, s = line.split()
                if mine.get(prog) and s != mine[prog]:
                    problems.append("%s: %s/%s differs from this machine's build: copy the same build "
                                    "to every host" % (name, exp.build, prog))
    return problems


class Target:
    """What the launcher needs of an experiment, for a cluster config alone."""

    def __init__(self, cluster, build):
        self.cluster, self.build = os.path.abspath(cluster), build
        self.tb = os.path.join(build, "mlf-testbed")
        cl = read_cluster(cluster)
        self.cname = cl["name"]
        kf = cl.get("key_file")
        self.key_file = (kf if kf.startswith("/") else os.path.join(os.path.dirname(self.cluster), kf)) if kf else None


def main(cluster, build, run, out):
    """Preflight of the cluster config CLUSTER (BUILD: this machine's programs, RUN: a folder for
    the emulation's keys); prints to OUT; exit status 0 (no problem), 1 (problems, one line
    each), 2 (cannot check)."""
    exp = Target(cluster, build)
    via = (read_cluster(cluster).get("launch") or {}).get("via", "local")
    if via not in ("ssh", "slurm"):
        out.write('%s: launch via %s: preflight checks hosts reached over ssh or Slurm ("launch": {"via": "ssh"}); '
                  'the local testbed is checked by mlf-testbed status\n' % (cluster, via))
        return 2
    try:
        L = (SlurmLauncher if via == "slurm" else SshLauncher)(exp, run)
    except LaunchError as e:
        out.write("%s\n" % e)
        return 2
    os.makedirs(L.ssh_dir, exist_ok=True)
    ok_up = True
    try:
        with open(os.path.join(run, "preflight-up.log"), "w") as log:
            if L.emulate:
                ok_up = L.tb.up(os.path.join(run, "preflight-testbed.log")) and L.emulate_up(log)
            ok_up = ok_up and L.attach(log)
        problems = ["emulated hosts did not come up: see %s" % run]
        if ok_up:
            for h in L.hosts:  # the first connection of each (shared by the checks)
                L.wait_ssh(h, 20 if L.emulate else 10)
            problems = check(L, exp)
    finally:
        L.down()
    for p in problems:
        out.write(p + "\n")
    out.write("preflight %s: %d hosts, %s\n" % (exp.cluster, len(L.hosts),
                                                "%d problems" % len(problems) if problems else "ready"))
    return 1 if problems else 0
