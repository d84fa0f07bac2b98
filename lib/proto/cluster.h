/* cluster.h - the cluster config (hosts, addresses, link capacities) shared by every process. */
#ifndef MLF_CLUSTER_H
#define MLF_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define CLUSTER_NAME_MAX 32 /* longest host / cluster name, including the NUL */
#define CLUSTER_FILE_MAX (4 << 20) /* largest cluster config file read by cluster_load, bytes */
#define CLUSTER_HOSTS_MAX 1024 /* most hosts of one cluster (docs/cluster-config.md) */
#define CLUSTER_SERVERS_MAX 32 /* most hosts with role server: the shard servers (SCHED_MAX_SHARDS) */
/* Smallest IP MTU: the IPv4, UDP and MLfabric headers, a frame tag, and one 1024-byte body (the
 * largest SACK bitmap; a DATA segment of at least as many bytes): 20 + 8 + 40 + 8 + 12 + 16 + 1024 = 1128. */
#define CLUSTER_MTU_MIN (WIRE_IP_LEN + WIRE_UDP_LEN + WIRE_MLF_LEN + WIRE_STAMP_LEN + WIRE_NONCE_LEN + WIRE_MAC_LEN + WIRE_SACK_MAX_BYTES)
#define CLUSTER_MTU_MAX 9000

/** Roles a host may have (bit mask). */
enum cluster_role {
	CLUSTER_ROLE_WORKER = 1 << 0,
	CLUSTER_ROLE_SERVER = 1 << 1,
	CLUSTER_ROLE_REPLICA = 1 << 2,
	CLUSTER_ROLE_AGGREGATOR = 1 << 3,
	CLUSTER_ROLE_SCHEDULER = 1 << 4,
};

/** How a host's dataplane reaches its NIC (the host's "dpdk" object, docs/cluster-config.md):
 * the EAL settings a launcher passes it (docs/deploy.md). */
struct cluster_dpdk {
	char pci[32];       /* PCI address of a port bound to a DPDK driver ("0000:03:00.0"); "" = none */
	char vdev[128];     /* a virtual device instead ("net_af_packet0,iface=eth0"); "" = none */
	char lcores[64];    /* EAL --lcores list ("2-3"); "" = the launcher's default */
	int hugepages;      /* 1: hugepages (default with pci), 0: --no-huge (default otherwise) */
	char socket_mem[64]; /* EAL --socket-mem, MB per NUMA node ("1024,0"); "" = EAL default */
};

/** How the hosts are reached to start processes (the "launch" object, docs/deploy.md). */
enum cluster_launch_via {
	CLUSTER_LAUNCH_LOCAL = 0,  /* the emulated testbed on this machine (default) */
	CLUSTER_LAUNCH_SSH,        /* OpenSSH to each host's control address */
	CLUSTER_LAUNCH_SLURM,      /* srun inside a Slurm allocation */
};

/** One host of the cluster. */
struct cluster_host {
	char name[CLUSTER_NAME_MAX];
	uint32_t ip;        /* IPv4 address of the data-plane port, network byte order */
	uint32_t control_ip; /* address of the kernel (management) interface that carries the
			      * scheduler connection, ssh and mlf-top; network order; 0 = ip */
	struct cluster_dpdk dpdk; /* the dataplane's EAL settings (all empty: none given) */
	uint8_t mac[6];     /* Ethernet address of its NIC (default 02:00:<ip bytes>) */
	int mac_given;      /* 1: "mac" was in the config (a static neighbour entry, never replaced
			     * by ARP); 0: the default above, which the dataplane resolves by ARP
			     * instead (docs/dataplane.md "Neighbours") */
	double up_gbps;     /* uplink capacity host -> switch, Gbit/s */
	double down_gbps;   /* downlink capacity switch -> host, Gbit/s */
	unsigned roles;     /* enum cluster_role bits */
};

/** A parsed cluster config (docs/cluster-config.md). */
struct cluster {
	char name[CLUSTER_NAME_MAX];
	int mtu;            /* IP MTU of every link, bytes (CLUSTER_MTU_MIN..CLUSTER_MTU_MAX, default 1500) */
	int prefix_len;     /* subnet prefix length of the host addresses (default 24) */
	uint16_t udp_port;  /* UDP port of the dataplane wire protocol (default 47000) */
	uint16_t control_port; /* TCP port of the scheduler's control protocol (docs/control.md, default 7070) */
	char key_file[512]; /* the cluster secret (docs/security.md): "key_file" resolved against the
			     * config file's directory by cluster_load; "" = control connections
			     * are not authenticated */
	int frame_auth;     /* 1: every dataplane frame carries a tag keyed by the cluster secret and
			     * untagged or forged frames are dropped ("frame_auth", default true
			     * with key_file, docs/security.md "Frames"); needs key_file */
	int frame_mac;      /* the MAC of frame tags, enum auth_frame_alg ("frame_mac":
			     * "aes256-gcm", the default, or "chacha20-poly1305") */
	enum cluster_launch_via launch_via; /* "launch"."via" (default local) */
	int insecure;       /* 1: "insecure": true, no key_file on purpose (docs/security.md "Keys by
			     * default"): the runner runs it, every program warns; refused with
			     * key_file */
	int n_hosts;
	struct cluster_host *hosts;
	uint8_t *graph;     /* "graph" (optional; NULL: none): the decentralised workers' graph
			     * (Hop, hop-asplos2019 §3), an n_hosts x n_hosts adjacency
			     * matrix, graph[i * n_hosts + j] = 1 when hosts i and j are neighbours;
			     * undirected, no self edges, its hosts workers and connected */
};

/**
 * cluster_parse - parse a cluster config from JSON text.
 * @text:   the JSON document.
 * @origin: name used in error messages (usually the file name).
 * @out:    filled on success; free with cluster_free().
 * @err:    on error, one line naming the file and key, e.g. `c.json: hosts[2].ip: not an IPv4 address`.
 * Returns 0, or -EINVAL for a malformed/invalid document (unknown keys, duplicate names or
 * addresses, out-of-range values, more than CLUSTER_HOSTS_MAX hosts, a host outside the first
 * host's prefix_len subnet, two schedulers, more than CLUSTER_SERVERS_MAX servers; every rule in
 * docs/cluster-config.md), -ENOMEM.
 */
int cluster_parse(const char *text, const char *origin, struct cluster *out, char *err, size_t errlen);

/** cluster_load - cluster_parse() of a file; -ENOENT (with @err naming the file) if it cannot be
 * opened, -EINVAL if it is not a regular file of at most CLUSTER_FILE_MAX bytes (read no further). */
int cluster_load(const char *path, struct cluster *out, char *err, size_t errlen);

/** cluster_find - index of the host named @name, or -1 when there is none. */
int cluster_find(const struct cluster *c, const char *name);

/** cluster_find_ip - index of the host with address @ip (network order), or -1. */
int cluster_find_ip(const struct cluster *c, uint32_t ip);

/**
 * cluster_control_ip - the address programs use to reach host @h's kernel: its control_ip, or
 * its ip when it has none (network order). The scheduler listens on its host's, dataplanes and
 * mlf-top connect to it (docs/cluster-config.md "Management network").
 */
uint32_t cluster_control_ip(const struct cluster *c, int h);

/** cluster_find_role - index of the first host with role bit @role, or -1 when there is none. */
int cluster_find_role(const struct cluster *c, unsigned role);

/**
 * cluster_neighbours - host @h's neighbours in the cluster's "graph" (Hop's decentralised
 * training, hop-asplos2019 §3): writes up to @max host indices, in the order of hosts, to @out
 * (NULL with @max 0: only counts).
 * Returns the number of neighbours (may exceed @max: only @max are written), 0 when @h has none,
 * or -ENOENT when the cluster has no graph.
 */
int cluster_neighbours(const struct cluster *c, int h, int *out, int max);
/** cluster_free - release what cluster_parse() allocated; safe on a zeroed struct. */
void cluster_free(struct cluster *c);

#endif
