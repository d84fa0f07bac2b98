/* tbcmd.h - pure (no I/O) builders of the ip/tc/EAL argument lists the emulated testbed runs. */
#ifndef MLF_TBCMD_H
#define MLF_TBCMD_H

#include <stddef.h>

#include "cluster.h"

#define TBCMD_MAX_ARGS 64    /* most words in one argument list, including the NULL */
#define TBCMD_BUF 4096       /* bytes of text shared by the words of one list */
#define TBCMD_IFNAME_MAX 15  /* longest Linux interface name (IFNAMSIZ - 1) */
#define TBCMD_SW "sw"        /* suffix of the switch namespace: <cluster>-sw */

/**
 * struct tbcmd_argv - an argument vector for execvp/posix_spawnp, NULL-terminated.
 * @v:   the words; v[n] is NULL.
 * @n:   number of words.
 * @err: set when a word did not fit (too many words or too much text); the list is then unusable.
 * @buf: storage of the words' text.
 */
struct tbcmd_argv {
	char *v[TBCMD_MAX_ARGS];
	int n;
	int err;
	size_t used;
	char buf[TBCMD_BUF];
};

/** tbcmd_init - empty @a. */
void tbcmd_init(struct tbcmd_argv *a);

/**
 * tbcmd_add - append one printf-formatted word to @a.
 * Returns 0, or -ENOSPC (and sets a->err) when the list or its text buffer is full.
 */
int tbcmd_add(struct tbcmd_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** tbcmd_addv - append the NULL-terminated words @words; 0 or -ENOSPC as tbcmd_add(). */
int tbcmd_addv(struct tbcmd_argv *a, const char *const *words);

/**
 * tbcmd_join - render @a as one shell-like line (words separated by spaces) for error messages.
 * Always NUL-terminates @out; truncates with "..." when @len is too small. Returns @out.
 */
char *tbcmd_join(const struct tbcmd_argv *a, char *out, size_t len);

/**
 * tbcmd_ns_name - the network namespace of @host in cluster @cluster: "<cluster>-<host>"
 * (@host = TBCMD_SW gives the switch namespace). Returns 0, or -ENAMETOOLONG when it does not
 * fit in @len bytes.
 */
int tbcmd_ns_name(const char *cluster, const char *host, char *out, size_t len);

/**
 * tbcmd_check_cluster - check that the testbed can build @c: every host name is a valid
 * interface name (1..15 chars of [A-Za-z0-9_.-], not "sw", "br0" or "eth0", since it names the
 * switch-side veth) and the cluster name is non-empty and of [A-Za-z0-9_.] (no '-', so that
 * "<cluster>-<host>" names of two clusters never coincide: docs/testbed.md "Names"). Returns 0,
 * or -EINVAL with @err naming the cluster or host and the reason.
 */
int tbcmd_check_cluster(const struct cluster *c, char *err, size_t errlen);

/**
 * tbcmd_tbf_burst - token-bucket depth (bytes) of a tbf at @gbps Gbit/s for frames of @mtu bytes
 * of IP MTU: the larger of 2 ms of traffic at the rate and 4 maximal frames. 2 ms keeps tbf
 * accurate at high rates (TCP goodput at 1 Gbit/s: 956 Mbit/s with 2 ms, 896 with 6 KB); no
 * fixed floor, so a link that was idle passes at most ~2-5 ms of traffic above its rate (a
 * 256 KiB floor let 356 KB through a 10 Mbit/s tbf in 0.088 s instead of 0.29 s). Kernel TCP's
 * 64 KiB GSO segments larger than the depth are split by tbf itself (tbf_segment).
 */
unsigned long tbcmd_tbf_burst(double gbps, int mtu);

/**
 * tbcmd_tbf - the `tc` command that sets (replace) or removes (@gbps == 0) the root tbf on
 * device @dev in namespace @ns: rate in bit/s (1 Gbit/s = 1e9 bit/s, L2 frames incl. the 14-byte
 * Ethernet header as tbf counts them), burst from tbcmd_tbf_burst(), queue latency 50 ms.
 * Returns 0, -EINVAL for a negative or above-1000 Gbit/s rate, -ENOSPC from tbcmd_add().
 */
int tbcmd_tbf(struct tbcmd_argv *a, const char *ns, const char *dev, double gbps, int mtu);

/**
 * tbcmd_af_packet_framesz - af_packet frame size (bytes, a power of two) for IP MTU @mtu:
 * the smallest power of two >= MTU + Ethernet/VLAN header + DPDK mbuf headroom + tpacket
 * header (2048 at MTU 1500, 16384 at 9000; TESTBED.md: odd sizes make af_packet crawl).
 */
unsigned tbcmd_af_packet_framesz(int mtu);

/**
 * tbcmd_eal_args - append the EAL arguments of a dataplane of host @host of cluster @cluster with
 * IP MTU @mtu pinned on core @core, in the contract's layout (--no-huge -m 512 --no-pci
 * --file-prefix=<cluster>-<host> -l <core> --vdev=net_af_packet0,iface=eth0,qdisc_bypass=0,
 * framecnt=4096,blocksz=..,framesz=..). Returns 0 or -ENOSPC.
 */
int tbcmd_eal_args(struct tbcmd_argv *a, const char *cluster, const char *host, int mtu, int core);

/**
 * tbcmd_sock_path - the default application socket of the dataplane of @host:
 * /run/mlfabric/<cluster>-<host>.sock. Returns 0 or -ENAMETOOLONG.
 */
int tbcmd_sock_path(const char *cluster, const char *host, char *out, size_t len);

#endif
