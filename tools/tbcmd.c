/* tbcmd.c - pure (no I/O) builders of the ip/tc/EAL argument lists the emulated testbed runs. */
#include "tbcmd.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void tbcmd_init(struct tbcmd_argv *a)
{
	a->n = 0;
	a->err = 0;
	a->used = 0;
	a->v[0] = NULL;
}

static int tbcmd_vadd(struct tbcmd_argv *a, const char *fmt, va_list ap)
{
	size_t room = sizeof(a->buf) - a->used;
	int len;

	if (a->err || a->n + 1 >= TBCMD_MAX_ARGS) {
		a->err = 1;
		return -ENOSPC;
	}
	len = vsnprintf(a->buf + a->used, room, fmt, ap);
	if (len < 0 || (size_t)len >= room) {
		a->err = 1;
		return -ENOSPC;
	}
	a->v[a->n++] = a->buf + a->used;
	a->v[a->n] = NULL;
	a->used += (size_t)len + 1;
	return 0;
}

int tbcmd_add(struct tbcmd_argv *a, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = tbcmd_vadd(a, fmt, ap);
	va_end(ap);
	return rc;
}

int tbcmd_addv(struct tbcmd_argv *a, const char *const *words)
{
	for (; *words; words++)
		if (tbcmd_add(a, "%s", *words))
			return -ENOSPC;
	return 0;
}

char *tbcmd_join(const struct tbcmd_argv *a, char *out, size_t len)
{
	size_t pos = 0;

	if (!len)
		return out;
	out[0] = '\0';
	for (int i = 0; i < a->n; i++) {
		int w = snprintf(out + pos, len - pos, "%s%s", i ? " " : "", a->v[i]);
		if (w < 0 || (size_t)w >= len - pos) {
			if (len >= 4)
				strcpy(out + len - 4, "...");
			return out;
		}
		pos += (size_t)w;
	}
	return out;
}

int tbcmd_ns_name(const char *cluster, const char *host, char *out, size_t len)
{
	int w = snprintf(out, len, "%s-%s", cluster, host);

	return (w < 0 || (size_t)w >= len) ? -ENAMETOOLONG : 0;
}

int tbcmd_check_cluster(const struct cluster *c, char *err, size_t errlen)
{
	static const char *const reserved[] = { TBCMD_SW, "br0", "eth0", "lo", NULL };

	size_t cn = strlen(c->name);

	if (!c->name[0]) {
		snprintf(err, errlen, "cluster name is empty");
		return -EINVAL;
	}
	/* '-' joins the cluster to the host in every testbed name (namespace, DPDK file prefix,
	 * socket, log): without it in cluster names, "<cluster>-<host>" splits at its first '-', so
	 * "rtc" + host "x-b" and "rtc-x" + host "b" can never share a name */
	if (strspn(c->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") != cn) {
		snprintf(err, errlen, "cluster name '%s': may only hold letters, digits, '_', '.' (no '-': it "
			 "separates the cluster from the host in the testbed's names; write e.g. '%s' "
			 "with '_')", c->name, "rtc_x");
		return -EINVAL;
	}
	for (int i = 0; i < c->n_hosts; i++) {
		const char *h = c->hosts[i].name;
		size_t n = strlen(h);

		if (n == 0 || n > TBCMD_IFNAME_MAX) {
			snprintf(err, errlen, "host '%s': name must be 1..%d characters (it names the switch-side veth)",
				 h, TBCMD_IFNAME_MAX);
			return -EINVAL;
		}
		if (strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != n) {
			snprintf(err, errlen, "host '%s': name may only hold letters, digits, '_', '.', '-'", h);
			return -EINVAL;
		}
		for (const char *const *r = reserved; *r; r++) {
			if (strcmp(h, *r) == 0) {
				snprintf(err, errlen, "host '%s': name is reserved by the testbed", h);
				return -EINVAL;
			}
		}
	}
	return 0;
}

unsigned long tbcmd_tbf_burst(double gbps, int mtu)
{
	double two_ms = gbps * 1e9 / 8.0 * 2e-3;
	unsigned long frames = 4UL * (unsigned long)(mtu + 14);

	/* no fixed floor: a 256 KiB floor let an idle 10 Mbit/s link pass 256 KiB at veth speed,
	 * which favoured bursty kernel TCP over transfers paced at the rate (docs/testbed.md) */
	return two_ms > (double)frames ? (unsigned long)two_ms : frames;
}

int tbcmd_tbf(struct tbcmd_argv *a, const char *ns, const char *dev, double gbps, int mtu)
{
	static const char *const head[] = { "tc", "-n", NULL };

	if (!(gbps >= 0 && gbps <= 1000))
		return -EINVAL;
	tbcmd_init(a);
	tbcmd_addv(a, head);
	tbcmd_add(a, "%s", ns);
	if (gbps == 0) {
		tbcmd_add(a, "qdisc");
		tbcmd_add(a, "del");
		tbcmd_add(a, "dev");
		tbcmd_add(a, "%s", dev);
		tbcmd_add(a, "root");
		return a->err ? -ENOSPC : 0;
	}
	tbcmd_add(a, "qdisc");
	tbcmd_add(a, "replace");
	tbcmd_add(a, "dev");
	tbcmd_add(a, "%s", dev);
	tbcmd_add(a, "root");
	tbcmd_add(a, "tbf");
	tbcmd_add(a, "rate");
	tbcmd_add(a, "%.0fbit", gbps * 1e9);
	tbcmd_add(a, "burst");
	tbcmd_add(a, "%lu", tbcmd_tbf_burst(gbps, mtu));
	tbcmd_add(a, "latency");
	tbcmd_add(a, "50ms");
	return a->err ? -ENOSPC : 0;
}

unsigned tbcmd_af_packet_framesz(int mtu)
{
	/* Ethernet + VLAN header, RTE_PKTMBUF_HEADROOM (128) and the tpacket2 header with padding. */
	unsigned need = (unsigned)mtu + 18 + 128 + 64;
	unsigned f = 2048;

	while (f < need)
		f <<= 1;
	return f;
}

int tbcmd_eal_args(struct tbcmd_argv *a, const char *cluster, const char *host, int mtu, int core)
{
	static const char *const fixed[] = { "--no-huge", "-m", "512", "--no-pci", NULL };
	unsigned framesz = tbcmd_af_packet_framesz(mtu);
	unsigned blocksz = framesz < 4096 ? 4096 : framesz;

	tbcmd_addv(a, fixed);
	tbcmd_add(a, "--file-prefix=%s-%s", cluster, host);
	tbcmd_add(a, "-l");
	tbcmd_add(a, "%d", core);
	tbcmd_add(a, "--vdev=net_af_packet0,iface=eth0,qdisc_bypass=0,framecnt=4096,blocksz=%u,framesz=%u",
		  blocksz, framesz);
	return a->err ? -ENOSPC : 0;
}

int tbcmd_sock_path(const char *cluster, const char *host, char *out, size_t len)
{
	int w = snprintf(out, len, "/run/mlfabric/%s-%s.sock", cluster, host);

	return (w < 0 || (size_t)w >= len) ? -ENAMETOOLONG : 0;
}
