/* mlf_xfer.c - mlf-xfer: command-line transfers through the local dataplane (send / recv). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "dpclient.h"

#define MAX_COUNT 1024

static void usage(FILE *out)
{
	fprintf(out,
		"usage: mlf-xfer send --sock PATH --to HOST (--bytes N | --file F) [--rate GBPS]\n"
		"                     [--steps MS:GBPS,...] [--start-at NS_REALTIME | --start-in MS]\n"
		"                     [--timeout S] [--count K] [--chan C] [--id FIRST_HEX]\n"
		"       mlf-xfer recv --sock PATH [--count K] [--out FILE_OR_DIR] [--timeout S] [--chan C]\n"
		"                     [--order HEX_ID,HEX_ID,...] [--announced-only]\n"
		"send: K concurrent transfers of N bytes (or the file) to HOST, at GBPS (default unpaced)\n"
		"  or along --steps (offset in ms from the start : Gbit/s), starting at an absolute\n"
		"  CLOCK_REALTIME ns or MS from now; --timeout is the peer silence that fails a transfer.\n"
		"  Rates are payload (update) Gbit/s, as in plans; frames on the wire carry the headers\n"
		"  too (~5.7%% more bytes at MTU 1500).\n"
		"  --id gives the transfers ids FIRST, FIRST+1, ... (hex) instead of dataplane-chosen ones.\n"
		"  Prints per transfer: xfer id= to= bytes= status=ok|failed goodput_gbps= start_error_us=\n"
		"  retransmits= [reason=\"...\"]. Exit 0 iff all ok.\n"
		"recv: waits for K incoming transfers (--timeout S overall, default 0 = forever), writes\n"
		"  each payload to FILE (K=1) or DIR/<id>, prints: recv id= from= bytes= status=ok|failed.\n"
		"  --order: commit order; those transfers are handed over in this order (early ones held;\n"
		"           another transfer on the channel waits up to 0.5 s for an order naming it).\n"
		"  --announced-only: take only transfers the scheduler announced to this host (`expect`,\n"
		"  docs/security.md); others are held up to 1 s for their announcement, then refused.\n"
		"  Exit 0 iff all ok.\n");
}

static int parse_u64(const char *opt, const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-') {
		fprintf(stderr, "mlf-xfer: %s: '%s' is not a non-negative integer\n", opt, s);
		return -1;
	}
	*v = x;
	return 0;
}

static int parse_double(const char *opt, const char *s, double lo, double hi, double *v)
{
	char *end;
	double x = strtod(s, &end);

	if (end == s || *end || !(x >= lo && x <= hi)) {
		fprintf(stderr, "mlf-xfer: %s: '%s' must be a number in [%g, %g]\n", opt, s, lo, hi);
		return -1;
	}
	*v = x;
	return 0;
}

static int parse_hex_id(const char *opt, const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 16);
	if (errno || end == s || *end || *v == 0) {
		fprintf(stderr, "mlf-xfer: %s: '%s' is not a non-zero hexadecimal transfer id\n", opt, s);
		return -1;
	}
	return 0;
}

/* "MS:GBPS,MS:GBPS,..." into @steps; returns the count or -1. */
static int parse_steps(const char *s, struct appmsg_step *steps)
{
	int n = 0;
	const char *p = s;

	while (*p) {
		char *end;
		double ms = strtod(p, &end), g;
		if (end == p || *end != ':' || ms < 0 || n == APPMSG_MAX_STEPS)
			goto bad;
		p = end + 1;
		g = strtod(p, &end);
		if (end == p || !(g >= 0) || (*end && *end != ','))
			goto bad;
		steps[n].at_ns = (uint64_t)(ms * 1e6);
		steps[n++].gbps = g;
		p = *end ? end + 1 : end;
	}
	if (n > 0)
		return n;
bad:
	fprintf(stderr, "mlf-xfer: --steps: '%s' must be MS:GBPS[,MS:GBPS...] with increasing MS, "
		"at most %d steps\n", s, APPMSG_MAX_STEPS);
	return -1;
}

/* Deterministic non-trivial content so a receiver's hash means something. */
static void fill_pattern(uint8_t *p, size_t n)
{
	uint64_t x = 0x243f6a8885a308d3ULL;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
	for (; i < n; i++)
		p[i] = (uint8_t)(i * 131);
}

static int load_file(const char *path, struct mlfabric_buf *b)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;
	size_t got = 0;

	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "mlf-xfer: --file %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (st.st_size == 0) {
		fprintf(stderr, "mlf-xfer: --file %s: empty file\n", path);
		close(fd);
		return -1;
	}
	if ((rc = mlfabric_buf_alloc((size_t)st.st_size, b)) < 0) {
		fprintf(stderr, "mlf-xfer: cannot allocate %lld bytes: %s\n", (long long)st.st_size, strerror(-rc));
		close(fd);
		return -1;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, (uint8_t *)b->data + got, (size_t)st.st_size - got);
		if (r <= 0) {
			fprintf(stderr, "mlf-xfer: --file %s: read failed\n", path);
			close(fd);
			return -1;
		}
		got += (size_t)r;
	}
	close(fd);
	return 0;
}

static int do_send(mlfabric_t *m, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "to", required_argument, NULL, 't' },      { "bytes", required_argument, NULL, 'b' },
		{ "file", required_argument, NULL, 'f' },    { "rate", required_argument, NULL, 'r' },
		{ "steps", required_argument, NULL, 'S' },   { "start-at", required_argument, NULL, 'a' },
		{ "start-in", required_argument, NULL, 'i' }, { "timeout", required_argument, NULL, 'T' },
		{ "count", required_argument, NULL, 'k' },   { "chan", required_argument, NULL, 'c' },
		{ "sock", required_argument, NULL, 's' },    { "id", required_argument, NULL, 'I' },
		{ NULL, 0, NULL, 0 },
	};
	struct appmsg_step steps[APPMSG_MAX_STEPS];
	struct mlfabric_buf buf;
	struct mlfabric_send req = { 0 };
	const char *to = NULL, *file = NULL;
	uint64_t bytes = 0, count = 1, start_at = 0, chan = 0, first_id = 0, ids[MAX_COUNT];
	double rate = 0, start_in = -1, timeout = 0;
	int c, n_steps = 0, failed = 0, done = 0;
	char err[256];

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 't': to = optarg; break;
		case 'f': file = optarg; break;
		case 's': break;
		case 'b': if (parse_u64("--bytes", optarg, &bytes)) return 2; break;
		case 'r': if (parse_double("--rate", optarg, 0, 1000, &rate)) return 2; break;
		case 'S': if ((n_steps = parse_steps(optarg, steps)) < 0) return 2; break;
		case 'a': if (parse_u64("--start-at", optarg, &start_at)) return 2; break;
		case 'i': if (parse_double("--start-in", optarg, 0, 3.6e6, &start_in)) return 2; break;
		case 'T': if (parse_double("--timeout", optarg, 0.001, 3600, &timeout)) return 2; break;
		case 'k': if (parse_u64("--count", optarg, &count)) return 2; break;
		case 'c': if (parse_u64("--chan", optarg, &chan)) return 2; break;
		case 'I': if (parse_hex_id("--id", optarg, &first_id)) return 2; break;
		default: usage(stderr); return 2;
		}
	}
	if (!to || (!bytes == !file) || count == 0 || count > MAX_COUNT || chan > 63) {
		fprintf(stderr, "mlf-xfer send: need --to and exactly one of --bytes N (> 0) / --file F; "
			"--count in [1, %d]; --chan in [0, 63]\n", MAX_COUNT);
		return 2;
	}
	if (file ? load_file(file, &buf) < 0 : mlfabric_buf_alloc(bytes, &buf) < 0) {
		if (!file)
			fprintf(stderr, "mlf-xfer: cannot allocate %" PRIu64 " bytes of shared memory\n", bytes);
		return 1;
	}
	if (!file)
		fill_pattern(buf.data, bytes);
	if (rate > 0 && n_steps == 0) {
		steps[0] = (struct appmsg_step){ 0, rate };
		n_steps = 1;
	}
	req.dst = to;
	req.buf = &buf;
	req.bytes = buf.size;
	req.chan = (uint16_t)chan;
	req.steps = n_steps ? steps : NULL;
	req.n_steps = n_steps;
	req.timeout_s = timeout;
	req.start_ns = start_at ? start_at : start_in >= 0 ? clock_real_ns() + (uint64_t)(start_in * 1e6) : 0;
	for (uint64_t k = 0; k < count; k++) {
		req.id = first_id ? first_id + k : 0;
		if (mlfabric_send(m, &req, &ids[k], err, sizeof(err)) < 0) {
			fprintf(stderr, "mlf-xfer: transfer %" PRIu64 " to %s refused: %s\n", k, to, err);
			mlfabric_buf_free(&buf);
			return 1;
		}
	}
	while ((uint64_t)done < count) {
		struct mlfabric_event ev;
		int rc = mlfabric_poll(m, &ev, -1);
		if (rc < 0) {
			fprintf(stderr, "mlf-xfer: dataplane connection lost: %s\n", strerror(-rc));
			for (; (uint64_t)done < count; done++)
				printf("xfer id=%" PRIx64 " to=%s bytes=%zu status=failed goodput_gbps=0 "
				       "start_error_us=0 retransmits=0 reason=\"dataplane went away\"\n",
				       ids[done], to, buf.size);
			failed = 1;
			break;
		}
		if (ev.kind != MLFABRIC_EV_SENT) {
			if (ev.kind == MLFABRIC_EV_ERROR)
				fprintf(stderr, "mlf-xfer: dataplane: %s\n", ev.reason);
			mlfabric_event_release(&ev);
			continue;
		}
		done++;
		if (ev.status == 0) {
			double s = (double)(ev.end_ns - ev.first_tx_ns) / 1e9;
			printf("xfer id=%" PRIx64 " to=%s bytes=%" PRIu64 " status=ok goodput_gbps=%.6f "
			       "start_error_us=%.1f retransmits=%" PRIu64 "\n", ev.id, ev.peer, ev.bytes,
			       s > 0 ? (double)ev.bytes * 8 / s / 1e9 : 0.0, (double)ev.start_error_ns / 1e3,
			       ev.retransmits);
		} else {
			failed = 1;
			printf("xfer id=%" PRIx64 " to=%s bytes=%" PRIu64 " status=failed goodput_gbps=0 "
			       "start_error_us=%.1f retransmits=%" PRIu64 " reason=\"%s\"\n", ev.id, ev.peer,
			       ev.bytes, (double)ev.start_error_ns / 1e3, ev.retransmits, ev.reason);
		}
		fflush(stdout);
	}
	mlfabric_buf_free(&buf);
	return failed;
}

static int write_payload(const char *path, const struct mlfabric_buf *b)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t off = 0;

	if (fd < 0) {
		fprintf(stderr, "mlf-xfer: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (off < b->size) {
		ssize_t w = write(fd, (const uint8_t *)b->data + off, b->size - off);
		if (w <= 0) {
			fprintf(stderr, "mlf-xfer: writing %s: %s\n", path, strerror(errno));
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	return close(fd);
}

static int do_recv(mlfabric_t *m, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "count", required_argument, NULL, 'k' }, { "out", required_argument, NULL, 'o' },
		{ "timeout", required_argument, NULL, 'T' }, { "chan", required_argument, NULL, 'c' },
		{ "sock", required_argument, NULL, 's' },  { "order", required_argument, NULL, 'O' },
		{ "announced-only", no_argument, NULL, 'A' }, { NULL, 0, NULL, 0 },
	};
	uint64_t order[MAX_COUNT];
	int n_order = 0;
	const char *out = NULL;
	uint64_t count = 1, chan = 0, got = 0;
	double timeout = 0;
	uint64_t deadline;
	int c, failed = 0, rc, announced_only = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 's': break;
		case 'k': if (parse_u64("--count", optarg, &count)) return 2; break;
		case 'c': if (parse_u64("--chan", optarg, &chan)) return 2; break;
		case 'T': if (parse_double("--timeout", optarg, 0, 1e6, &timeout)) return 2; break;
		case 'A': announced_only = 1; break;
		case 'O':
			for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				if (n_order == MAX_COUNT || parse_hex_id("--order", tok, &order[n_order]))
					return 2;
				n_order++;
			}
			break;
		default: usage(stderr); return 2;
		}
	}
	if (count == 0 || chan > 63) {
		fprintf(stderr, "mlf-xfer recv: --count must be >= 1 and --chan in [0, 63]\n");
		return 2;
	}
	if (out && count > 1 && mkdir(out, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "mlf-xfer: cannot create directory %s: %s\n", out, strerror(errno));
		return 1;
	}
	if (n_order && (rc = mlfabric_commit_order(m, (uint16_t)chan, order, n_order, 1)) < 0) {
		fprintf(stderr, "mlf-xfer: commit order: %s\n", strerror(-rc));
		return 1;
	}
	if ((rc = announced_only ? mlfabric_listen_announced(m, (uint16_t)chan)
				 : mlfabric_listen(m, (uint16_t)chan)) < 0) {
		fprintf(stderr, "mlf-xfer: listen: %s\n", strerror(-rc));
		return 1;
	}
	deadline = timeout > 0 ? clock_real_ns() + (uint64_t)(timeout * 1e9) : 0;
	while (got < count) {
		struct mlfabric_event ev;
		int wait_ms = -1;
		if (deadline) {
			uint64_t t = clock_real_ns();
			if (t >= deadline) {
				fprintf(stderr, "mlf-xfer: timeout: %" PRIu64 " of %" PRIu64 " transfers arrived "
					"within %.1f s\n", got, count, timeout);
				return 1;
			}
			wait_ms = (int)((deadline - t) / 1000000) + 1;
		}
		rc = mlfabric_poll(m, &ev, wait_ms);
		if (rc < 0) {
			fprintf(stderr, "mlf-xfer: dataplane connection lost: %s\n", strerror(-rc));
			return 1;
		}
		if (rc == 0 || ev.kind != MLFABRIC_EV_RECEIVED) {
			if (rc && ev.kind == MLFABRIC_EV_ERROR)
				fprintf(stderr, "mlf-xfer: dataplane: %s\n", ev.reason);
			continue;
		}
		got++;
		if (ev.status == 0 && out) {
			char path[4096];
			if (count > 1)
				snprintf(path, sizeof(path), "%s/%" PRIx64, out, ev.id);
			else
				snprintf(path, sizeof(path), "%s", out);
			if (write_payload(path, &ev.buf) < 0)
				ev.status = -EIO;
		}
		if (ev.status == 0)
			printf("recv id=%" PRIx64 " from=%s bytes=%" PRIu64 " status=ok\n", ev.id, ev.peer, ev.bytes);
		else {
			failed = 1;
			printf("recv id=%" PRIx64 " from=%s bytes=%" PRIu64 " status=failed reason=\"%s\"\n",
			       ev.id, ev.peer, ev.bytes, ev.reason[0] ? ev.reason : strerror(-ev.status));
		}
		fflush(stdout);
		mlfabric_event_release(&ev);
	}
	return failed;
}

int main(int argc, char **argv)
{
	const char *sock = NULL;
	char err[512];
	mlfabric_t *m;
	int rc;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "send") && strcmp(argv[1], "recv")) {
		fprintf(stderr, "mlf-xfer: unknown command '%s' (send or recv)\n", argv[1]);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--sock") && i + 1 < argc)
			sock = argv[i + 1];
		else if (!strncmp(argv[i], "--sock=", 7))
			sock = argv[i] + 7;
	}
	if (!sock) {
		fprintf(stderr, "mlf-xfer: --sock PATH is required (the dataplane's app socket, e.g. "
			MLFABRIC_SOCK_DIR "/pair-a.sock)\n");
		return 2;
	}
	if (!(m = mlfabric_connect(sock, err, sizeof(err)))) {
		fprintf(stderr, "mlf-xfer: %s\n", err);
		return 1;
	}
	rc = !strcmp(argv[1], "send") ? do_send(m, argc - 1, argv + 1) : do_recv(m, argc - 1, argv + 1);
	mlfabric_close(m);
	return rc;
}
