/* xfertab_bench.c - mlf-bench-xfertab: transfer lookups per second, the linear scans the dataplane
 * used (find_rx/find_tx over an array of pointers to records, find_past newest-first over a ring
 * of records) against the rte_hash tables that replaced them (dataplane/xfertab.c, xferring.c),
 * at 1024 entries (the receive and send tables) and 16,384 (the finished-transfer ring). Each
 * repetition measures scan and hash alternately in the same process, hits (keys present, in
 * random order) and misses; prints lookups/s by wall time and per CPU-second (from /proc/self/stat),
 * median (min-max) over the repetitions, as a Markdown table (docs/results/dataplane.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_memory.h>

#include "xfertab.h"

#define NKEYS 65536   /* lookup sequence length (indices into the table, random) */
#define MEASURE_S 0.25 /* each measurement runs at least this long */

/* As struct xfer_rx: id and peer first, the rest of a record that fills several cache lines. */
struct rec {
	uint64_t id;
	int peer;
	char rest[240];
};

/* As struct rx_past: 48 bytes, contiguous in the ring. */
struct past {
	uint64_t id, bytes, nseg;
	int peer, failed;
	uint64_t until_ns, last_sack_ns;
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime + stime of this process from /proc/self/stat, seconds. */
static double cpu_s(void)
{
	char buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
		return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	return 0;
}

static struct rec **recs;     /* the scan's table: pointers to records (find_rx, find_tx) */
static int nrecs;
static struct past *ring;     /* the scan's ring (find_past) */
static unsigned ring_n, ring_head;
static struct xfertab *tab;
static struct xferring xr;
static uint64_t *qid;         /* lookup keys */
static int *qpeer;
static volatile uintptr_t sink;

static struct rec *scan_rx(int peer, uint64_t id)
{
	for (int i = 0; i < nrecs; i++)
		if (recs[i]->id == id && recs[i]->peer == peer)
			return recs[i];
	return NULL;
}

static struct past *scan_past(int peer, uint64_t id)
{
	for (unsigned k = 1; k <= ring_n; k++) {
		struct past *p = &ring[(ring_head - k + ring_n) % ring_n];
		if (p->id == id && p->peer == peer)
			return p;
	}
	return NULL;
}

enum kind { SCAN_RX, HASH_RX, SCAN_PAST, HASH_PAST };

/* Lookups per second (wall) and per CPU-second of @k over the key sequence. */
static void measure(enum kind k, double *per_s, double *per_cpu_s)
{
	double t0 = now_s(), c0 = cpu_s(), t;
	uint64_t n = 0;

	do {
		for (int i = 0; i < 1024; i++, n++) {
			unsigned q = (unsigned)(n % NKEYS);
			uintptr_t r;
			switch (k) {
			case SCAN_RX: r = (uintptr_t)scan_rx(qpeer[q], qid[q]); break;
			case HASH_RX: r = (uintptr_t)xfertab_get(tab, qpeer[q], qid[q]); break;
			case SCAN_PAST: r = (uintptr_t)scan_past(qpeer[q], qid[q]); break;
			default: r = (uintptr_t)xferring_find(&xr, qpeer[q], qid[q]); break;
			}
			sink += r;
		}
	} while ((t = now_s() - t0) < MEASURE_S);
	*per_s = (double)n / t;
	t = cpu_s() - c0;
	*per_cpu_s = t > 0 ? (double)n / t : 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void fmt(char *out, size_t len, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	snprintf(out, len, "%.3g (%.3g-%.3g)", v[n / 2], v[0], v[n - 1]);
}

int main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "-m", "128", "--no-pci", "--no-shconf", "--no-telemetry",
			"-l", "0", "--log-level=*:error", NULL };
	int reps = argc > 1 ? atoi(argv[1]) : 3;
	static const unsigned sizes[] = { 1024, 16384 };

	if (reps < 1 || reps > 50 || rte_eal_init(10, eal) < 0) {
		fprintf(stderr, "usage: mlf-bench-xfertab [REPS (1-50, default 3)] (needs DPDK's EAL)\n");
		return 1;
	}
	qid = malloc(NKEYS * sizeof(*qid));
	qpeer = malloc(NKEYS * sizeof(*qpeer));
	printf("| entries | lookups | scan lookups/s | hash lookups/s | scan per CPU-s | hash per CPU-s | hash / scan (median) |\n");
	printf("|---|---|---|---|---|---|---|\n");
	for (unsigned s = 0; s < 2; s++) {
		unsigned n = sizes[s];
		int past = n > 1024; /* 1024: the rx/tx tables; 16384: the finished ring */
		for (int miss = 0; miss < 2; miss++) {
			double sw[50], hw[50], sc[50], hc[50];
			char a[64], b[64], c[64], d[64];
			double med_s, med_h;

			recs = calloc(n, sizeof(*recs));
			ring = calloc(n, sizeof(*ring));
			tab = xfertab_new("bench", n, SOCKET_ID_ANY);
			if (!recs || !ring || !tab || xferring_init(&xr, "bench_ring", n, SOCKET_ID_ANY)) {
				fprintf(stderr, "mlf-bench-xfertab: out of memory\n");
				return 1;
			}
			nrecs = 0;
			ring_n = n;
			ring_head = 0;
			for (unsigned i = 0; i < n; i++) {
				uint64_t id = next() >> 16;
				int peer = (int)(next() % 16);
				if (past) {
					ring[xferring_push(&xr, peer, id)] = (struct past){ .id = id, .peer = peer };
					ring_head = (ring_head + 1) % n;
				} else {
					recs[nrecs] = calloc(1, sizeof(struct rec));
					recs[nrecs]->id = id;
					recs[nrecs]->peer = peer;
					xfertab_put(tab, peer, id, recs[nrecs++]);
				}
			}
			for (int q = 0; q < NKEYS; q++) {
				unsigned i = (unsigned)(next() % n);
				qid[q] = miss ? next() | 1ULL << 63 : past ? ring[i].id : recs[i]->id;
				qpeer[q] = miss ? 0 : past ? ring[i].peer : recs[i]->peer;
			}
			for (int r = 0; r < reps; r++) { /* alternate: scan, hash */
				measure(past ? SCAN_PAST : SCAN_RX, &sw[r], &sc[r]);
				measure(past ? HASH_PAST : HASH_RX, &hw[r], &hc[r]);
			}
			fmt(a, sizeof(a), sw, reps);
			fmt(b, sizeof(b), hw, reps);
			fmt(c, sizeof(c), sc, reps);
			fmt(d, sizeof(d), hc, reps);
			med_s = sw[reps / 2];
			med_h = hw[reps / 2];
			printf("| %u (%s) | %s | %s | %s | %s | %s | %.0fx |\n", n, past ? "find_past ring" : "find_rx/find_tx",
			       miss ? "misses" : "hits", a, b, c, d, med_h / med_s);
			fflush(stdout);
			for (int i = 0; i < nrecs; i++)
				free(recs[i]);
			free(recs);
			free(ring);
			xfertab_free(tab);
			xferring_free(&xr);
		}
	}
	return 0;
}
