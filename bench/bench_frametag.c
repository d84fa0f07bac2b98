/*
 * bench_frametag.c - `make bench-frametag`: CPU time of one frame tag (docs/security.md "Cost"),
 * in nanoseconds per frame, for the MAC constructions considered for issue 37: the HMAC-SHA256 of
 * frame tags before (OpenSSL, pads pre-absorbed), ChaCha20-Poly1305 as a MAC (libsodium: the
 * Poly1305 key from ChaCha20 and the nonce, Poly1305 streamed over the frame's pieces; what
 * auth_frame_tag() computes now), libsodium's one-shot ChaCha20-Poly1305 IETF AEAD and AES-256-GCM
 * (precomputed key state; when the CPU has AES-NI and PCLMUL) with an empty message and the frame
 * as additional data (these two need the frame in one piece: the copy is counted), and the
 * shipped auth_frame_tag() itself.
 *
 * A frame is what the dataplane tags at MTU 1500: 8 bytes of addresses, the 40-byte header and
 * 8-byte stamp, a body of --body bytes (default 1396: MTU 1500 - 20 - 8 - 40 - WIRE_TAG_LEN), as
 * three separate pieces (the body of a DATA frame is often an external buffer). Rounds alternate
 * the candidates (each round starts at the next one); each round tags --frames frames per
 * candidate and takes the thread's CPU time (CLOCK_THREAD_CPUTIME_ID: preemption by other jobs
 * is not counted) and the wall time. Prints per candidate the median (min-max) over --rounds.
 * Usage: build/bench-frametag [--frames N] [--rounds R] [--body BYTES]
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/hmac.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <sodium.h>

#include "auth.h"
#include "wire.h"

#define MAXR 64

static uint8_t key[32], ips[8], hdr[WIRE_MLF_LEN + WIRE_STAMP_LEN], body[9000], flat[9100];
static size_t body_len = 1500 - WIRE_IP_LEN - WIRE_UDP_LEN - WIRE_MLF_LEN - WIRE_TAG_LEN; /* 1396 */
static uint8_t nonce[12];
static SHA256_CTX h_in, h_out;
static crypto_aead_aes256gcm_state gcm;
static struct auth_frame *shipped, *shipped_cc;
static volatile uint8_t sink;
static uint8_t none[1]; /* the empty message's ciphertext */

/* the frame tag before issue 37: HMAC-SHA256 with its pads absorbed once, truncated to 128 bits */
static void hmac_setup(void)
{
	uint8_t pad[2][SHA256_CBLOCK];

	memset(pad, 0, sizeof(pad));
	memcpy(pad[0], key, 32);
	memcpy(pad[1], key, 32);
	for (int i = 0; i < SHA256_CBLOCK; i++) {
		pad[0][i] ^= 0x36;
		pad[1][i] ^= 0x5c;
	}
	SHA256_Init(&h_in);
	SHA256_Update(&h_in, pad[0], SHA256_CBLOCK);
	SHA256_Init(&h_out);
	SHA256_Update(&h_out, pad[1], SHA256_CBLOCK);
}

static void t_hmac(uint8_t tag[16])
{
	uint8_t ih[32], full[32];
	SHA256_CTX c = h_in;

	SHA256_Update(&c, ips, sizeof(ips));
	SHA256_Update(&c, hdr, sizeof(hdr));
	SHA256_Update(&c, body, body_len);
	SHA256_Final(ih, &c);
	c = h_out;
	SHA256_Update(&c, ih, sizeof(ih));
	SHA256_Final(full, &c);
	memcpy(tag, full, 16);
}

/* ChaCha20-Poly1305 (RFC 8439) with an empty message, streamed over the three pieces */
static void t_chapoly_stream(uint8_t tag[16])
{
	static const uint8_t zero[16];
	uint8_t pk[32], len[16];
	uint64_t ad = sizeof(ips) + sizeof(hdr) + body_len;
	crypto_onetimeauth_poly1305_state st;

	nonce[11]++;
	crypto_stream_chacha20_ietf(pk, sizeof(pk), nonce, key);
	crypto_onetimeauth_poly1305_init(&st, pk);
	crypto_onetimeauth_poly1305_update(&st, ips, sizeof(ips));
	crypto_onetimeauth_poly1305_update(&st, hdr, sizeof(hdr));
	crypto_onetimeauth_poly1305_update(&st, body, body_len);
	crypto_onetimeauth_poly1305_update(&st, zero, (16 - ad % 16) % 16);
	memset(len, 0, sizeof(len));
	for (int i = 0; i < 8; i++)
		len[i] = (uint8_t)(ad >> (8 * i));
	crypto_onetimeauth_poly1305_update(&st, len, sizeof(len));
	crypto_onetimeauth_poly1305_final(&st, tag);
}

static size_t flatten(void)
{
	memcpy(flat, ips, sizeof(ips));
	memcpy(flat + sizeof(ips), hdr, sizeof(hdr));
	memcpy(flat + sizeof(ips) + sizeof(hdr), body, body_len);
	return sizeof(ips) + sizeof(hdr) + body_len;
}

static void t_chapoly_aead(uint8_t tag[16])
{
	size_t n = flatten();

	nonce[11]++;
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, tag, NULL, NULL, 0, flat, n, NULL, nonce, key);
}

static void t_gcm(uint8_t tag[16])
{
	size_t n = flatten();

	nonce[11]++;
	crypto_aead_aes256gcm_encrypt_detached_afternm(none, tag, NULL, NULL, 0, flat, n, NULL, nonce, &gcm);
}

static void t_shipped_cc(uint8_t tag[16])
{
	uint8_t n[AUTH_FRAME_NONCE_BYTES];

	auth_frame_tag(shipped_cc, 1, 2, hdr, sizeof(hdr), body, body_len, n, tag);
}

static void t_shipped(uint8_t tag[16])
{
	uint8_t t[AUTH_TAG_BYTES], n[AUTH_FRAME_NONCE_BYTES];

	auth_frame_tag(shipped, 1, 2, hdr, sizeof(hdr), body, body_len, n, t);
	memcpy(tag, t, 16);
}

struct cand {
	const char *name;
	void (*fn)(uint8_t tag[16]);
	double cpu[MAXR], wall[MAXR];
};

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void stats(const double *v, int n, double *med, double *lo, double *hi)
{
	double s[MAXR];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp);
	*med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	*lo = s[0];
	*hi = s[n - 1];
}

int main(int argc, char **argv)
{
	long frames = 200000;
	int rounds = 3, nc = 0;
	char err[256];
	struct cand c[6];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--frames") && i + 1 < argc)
			frames = atol(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--body") && i + 1 < argc)
			body_len = (size_t)atol(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--frames N] [--rounds R (1-%d)] [--body BYTES (<= 9000)]\n",
				argv[0], MAXR);
			return 2;
		}
	}
	if (frames < 1 || rounds < 1 || rounds > MAXR || body_len > sizeof(body)) {
		fprintf(stderr, "bench-frametag: --frames >= 1, --rounds in [1, %d], --body <= %zu bytes\n", MAXR,
			sizeof(body));
		return 2;
	}
	if (sodium_init() < 0) {
		fprintf(stderr, "bench-frametag: sodium_init failed\n");
		return 1;
	}
	randombytes_buf(key, sizeof(key));
	randombytes_buf(ips, sizeof(ips));
	randombytes_buf(hdr, sizeof(hdr));
	randombytes_buf(body, sizeof(body));
	hmac_setup();
	shipped_cc = auth_frame_new(key, AUTH_FRAME_CHACHA20POLY1305, err, sizeof(err));
	if (!shipped_cc) {
		fprintf(stderr, "bench-frametag: %s\n", err);
		return 1;
	}
	c[nc++] = (struct cand){ .name = "hmac-sha256 (before)", .fn = t_hmac };
	c[nc++] = (struct cand){ .name = "chacha20-poly1305 streamed", .fn = t_chapoly_stream };
	c[nc++] = (struct cand){ .name = "chacha20-poly1305 aead+copy", .fn = t_chapoly_aead };
	if (crypto_aead_aes256gcm_is_available()) {
		crypto_aead_aes256gcm_beforenm(&gcm, key);
		c[nc++] = (struct cand){ .name = "aes256-gcm aead+copy", .fn = t_gcm };
	} else {
		printf("# aes256-gcm: not available on this CPU (libsodium needs AES-NI and PCLMUL)\n");
	}
	c[nc++] = (struct cand){ .name = "auth_frame_tag chacha20-poly1305", .fn = t_shipped_cc };
	shipped = auth_frame_new(key, AUTH_FRAME_AES256GCM, err, sizeof(err));
	if (shipped)
		c[nc++] = (struct cand){ .name = "auth_frame_tag aes256-gcm", .fn = t_shipped };
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < nc; k++) {
			struct cand *x = &c[(r + k) % nc];
			uint8_t tag[16] = { 0 };
			double t0 = now(CLOCK_THREAD_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);

			for (long f = 0; f < frames; f++) {
				x->fn(tag);
				body[f % body_len] ^= tag[0]; /* each frame differs; no work is hoisted */
			}
			x->cpu[r] = (now(CLOCK_THREAD_CPUTIME_ID) - t0) / frames;
			x->wall[r] = (now(CLOCK_MONOTONIC) - w0) / frames;
			sink ^= tag[1];
		}
	printf("# frame tag cost: %zu-byte body (%zu bytes covered), %ld frames x %d alternating rounds\n",
	       body_len, body_len + sizeof(ips) + sizeof(hdr), frames, rounds);
	printf("%-34s %28s %28s\n", "construction", "CPU ns/frame median (min-max)", "wall ns/frame median (min-max)");
	for (int k = 0; k < nc; k++) {
		double m, lo, hi, wm, wlo, whi;

		stats(c[k].cpu, rounds, &m, &lo, &hi);
		stats(c[k].wall, rounds, &wm, &wlo, &whi);
		printf("%-34s %10.0f (%6.0f-%6.0f) %13.0f (%6.0f-%6.0f)\n", c[k].name, m, lo, hi, wm, wlo, whi);
	}
	auth_frame_free(shipped);
	auth_frame_free(shipped_cc);
	return 0;
}
