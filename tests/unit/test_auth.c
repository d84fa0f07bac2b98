/* test_auth.c - Check tests of the cluster secret and the control connection's HMAC challenge-response (lib/proto/auth.c, docs/security.md). */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "auth.h"
#include "ck_run.h"

static char kpath[64];

/* A key file of @n bytes with @mode; returns its path. */
static const char *key_file(size_t n, mode_t mode)
{
	uint8_t b[64];

	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 7 + 1);
	snprintf(kpath, sizeof(kpath), "/tmp/test_auth.%d.key", (int)getpid());
	unlink(kpath);
	int fd = open(kpath, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, n), (ssize_t)n);
	fchmod(fd, mode);
	close(fd);
	return kpath;
}

START_TEST(key_file_rules)
{
	uint8_t key[AUTH_KEY_BYTES];
	char err[256];

	ck_assert_int_eq(auth_key_load(key_file(32, 0600), key, err, sizeof(err)), 0);
	ck_assert_int_eq(key[1], 8);
	ck_assert_int_eq(auth_key_load(key_file(32, 0400), key, err, sizeof(err)), 0);
	ck_assert_int_eq(auth_key_load(key_file(32, 0644), key, err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "chmod 600"));
	ck_assert_ptr_nonnull(strstr(err, kpath));
	ck_assert_int_eq(auth_key_load(key_file(31, 0600), key, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "31 bytes"));
	ck_assert_int_eq(auth_key_load(key_file(33, 0600), key, err, sizeof(err)), -EINVAL);
	unlink(kpath);
	ck_assert_int_eq(auth_key_load(kpath, key, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "mlf-keygen"));
	ck_assert_int_eq(auth_key_load("/tmp", key, err, sizeof(err)), -EINVAL);
}
END_TEST

/* A key file of another user (mode 0600) is refused naming the file and the fix; the test
 * needs root to give the file away (skipped otherwise). */
START_TEST(key_file_of_another_user_refused)
{
	uint8_t key[AUTH_KEY_BYTES];
	char err[256];

	if (geteuid() != 0)
		return;
	const char *p = key_file(32, 0600);
	ck_assert_int_eq(chown(p, 65534, 65534), 0);
	ck_assert_int_eq(auth_key_load(p, key, err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, kpath));
	ck_assert_ptr_nonnull(strstr(err, "owned by uid 65534"));
	ck_assert_ptr_nonnull(strstr(err, "chown 0 "));
	ck_assert_int_eq(chown(p, 0, 0), 0);
	ck_assert_int_eq(auth_key_load(p, key, err, sizeof(err)), 0);
	unlink(kpath);
}
END_TEST

START_TEST(mac_binds_key_role_host_and_nonces)
{
	uint8_t k1[AUTH_KEY_BYTES], k2[AUTH_KEY_BYTES];
	char nc[AUTH_NONCE_HEX + 1], ns[AUTH_NONCE_HEX + 1], ns2[AUTH_NONCE_HEX + 1];
	char mac[AUTH_MAC_HEX + 1];

	memset(k1, 1, sizeof(k1));
	memset(k2, 1, sizeof(k2));
	k2[31] = 2; /* one bit of the key differs */
	ck_assert_int_eq(auth_nonce(nc), 0);
	ck_assert_int_eq(auth_nonce(ns), 0);
	ck_assert_int_eq(auth_nonce(ns2), 0);
	ck_assert(auth_nonce_ok(nc) && strcmp(nc, ns) && strcmp(ns, ns2));
	ck_assert_int_eq(auth_mac(k1, "host", "w0", nc, ns, mac), 0);
	ck_assert_int_eq((int)strlen(mac), AUTH_MAC_HEX);
	ck_assert_int_eq(auth_check(k1, "host", "w0", nc, ns, mac), 0);
	ck_assert_int_eq(auth_check(k2, "host", "w0", nc, ns, mac), -EACCES);        /* wrong key */
	ck_assert_int_eq(auth_check(k1, "host", "ps", nc, ns, mac), -EACCES);        /* another host */
	ck_assert_int_eq(auth_check(k1, "scheduler", "w0", nc, ns, mac), -EACCES);   /* reflected */
	ck_assert_int_eq(auth_check(k1, "host", "w0", nc, ns2, mac), -EACCES);       /* replayed */
	mac[5] = mac[5] == 'a' ? 'b' : 'a';
	ck_assert_int_eq(auth_check(k1, "host", "w0", nc, ns, mac), -EACCES);        /* altered */
	ck_assert_int_eq(auth_check(k1, "host", "w0", nc, ns, ""), -EACCES);         /* malformed */
	ck_assert_int_eq(auth_check(k1, "host", "w0", nc, ns, "XYZ"), -EACCES);
	ck_assert(!auth_nonce_ok("0123"));
	ck_assert(!auth_nonce_ok("0123456789ABCDEF0123456789abcdef")); /* upper case */
	ck_assert(!auth_nonce_ok(NULL));
}
END_TEST

START_TEST(mac_known_value)
{
	/* RFC 4231-style check of the HMAC itself: key of 32 bytes 0x0b, message as auth_mac builds it,
	 * value computed with Python's hmac module (hmac.new(b"\x0b"*32, msg, "sha256")) */
	uint8_t k[AUTH_KEY_BYTES];
	char mac[AUTH_MAC_HEX + 1];

	memset(k, 0x0b, sizeof(k));
	ck_assert_int_eq(auth_mac(k, "host", "w0", "00000000000000000000000000000000",
				  "ffffffffffffffffffffffffffffffff", mac), 0);
	ck_assert_str_eq(mac, "587625ed19924a09ef164c06e880dffc610948bb836eecec95bd3ac8b2713531");
}
END_TEST

/* frame tags (docs/security.md "Frames"): known values computed apart from libsodium, with
 * Python's hmac and cryptography modules: frame key = HMAC-SHA256(k, "mlfabric-frame-v2 " + alg),
 * tag = AESGCM(frame key) or ChaCha20Poly1305(frame key) .encrypt(nonce a0..ab, b"", src ip |
 * dst ip | header | body); a tag that fails for any changed byte, address, nonce, key or
 * algorithm */
START_TEST(frame_tag_known_value_and_binding)
{
	static const uint8_t want[2][AUTH_TAG_BYTES] = {
		[AUTH_FRAME_AES256GCM] = { 0xc6, 0x65, 0x5a, 0x1b, 0xb4, 0x90, 0x65, 0x8d, 0x26, 0x0b, 0xc9, 0x42,
					   0xd3, 0x49, 0xa5, 0xc9 },
		[AUTH_FRAME_CHACHA20POLY1305] = { 0x80, 0xdf, 0x58, 0x62, 0x51, 0x36, 0x90, 0x66, 0x4a, 0x75, 0x68,
						  0x66, 0x52, 0xa6, 0x6b, 0x4a },
	};
	uint32_t a = htonl(0x0a4e0001), b = htonl(0x0a4e0002);
	char err[256];

	ck_assert_int_ge(sodium_init(), 0); /* before crypto_aead_aes256gcm_is_available */
	for (int alg = 0; alg < 2; alg++) {
		uint8_t k[AUTH_KEY_BYTES], hdr[40], body[5] = { 'h', 'e', 'l', 'l', 'o' }, tag[AUTH_TAG_BYTES],
			t2[AUTH_TAG_BYTES], nc[AUTH_FRAME_NONCE_BYTES], n1[AUTH_FRAME_NONCE_BYTES],
			n2[AUTH_FRAME_NONCE_BYTES];
		struct auth_frame *af, *other;

		memset(k, 0x0b, sizeof(k));
		if (alg == AUTH_FRAME_AES256GCM && !crypto_aead_aes256gcm_is_available()) {
			fprintf(stderr, "frame_tag: no AES-NI and PCLMUL here: aes256-gcm not tested\n");
			ck_assert_ptr_null(auth_frame_new(k, alg, err, sizeof(err)));
			ck_assert_ptr_nonnull(strstr(err, "\"frame_mac\": \"chacha20-poly1305\""));
			continue;
		}
		for (int i = 0; i < 40; i++)
			hdr[i] = (uint8_t)i;
		for (int i = 0; i < AUTH_FRAME_NONCE_BYTES; i++)
			nc[i] = (uint8_t)(0xa0 + i);
		ck_assert_ptr_nonnull(af = auth_frame_new(k, alg, err, sizeof(err)));
		ck_assert_int_eq(auth_frame_alg(af), alg);
		ck_assert_int_eq(auth_frame_check(af, a, b, hdr, 40, body, 5, nc, want[alg]), 0);
		memcpy(tag, want[alg], sizeof(tag));
		tag[15] ^= 0x80;
		ck_assert_int_eq(auth_frame_check(af, a, b, hdr, 40, body, 5, nc, tag), -EACCES); /* wrong tag */
		/* tagging takes a fresh nonce each time: the same frame gets another tag */
		ck_assert_int_eq(auth_frame_tag(af, a, b, hdr, 40, body, 5, n1, tag), 0);
		ck_assert_int_eq(auth_frame_check(af, a, b, hdr, 40, body, 5, n1, tag), 0);
		ck_assert_int_eq(auth_frame_tag(af, a, b, hdr, 40, body, 5, n2, t2), 0);
		ck_assert_int_eq(auth_frame_check(af, a, b, hdr, 40, body, 5, n2, t2), 0);
		ck_assert_mem_eq(n1, n2, 8);                       /* one prefix... */
		ck_assert_uint_eq(n1[11], 0);                      /* ...and the counter from 0 */
		ck_assert_uint_eq(n2[11], 1);
		ck_assert_mem_ne(tag, t2, AUTH_TAG_BYTES);
		ck_assert_int_eq(auth_frame_check(af, a, b, hdr, 40, body, 5, n2, tag), -EACCES); /* other nonce */
		ck_assert_int_eq(auth_frame_check(af, b, a, hdr, 40, body, 5, n1, tag), -EACCES); /* addresses swapped */
		hdr[20] ^= 1;
		ck_assert_int_eq(auth_frame_check(af, a, b, hdr, 40, body, 5, n1, tag), -EACCES); /* header changed */
		hdr[20] ^= 1;
		body[4] = 'O';
		ck_assert_int_eq(auth_frame_check(af, a, b, hdr, 40, body, 5, n1, tag), -EACCES); /* body changed */
		ck_assert_int_eq(auth_frame_check(af, a, b, hdr, 40, body, 4, n1, tag), -EACCES); /* body cut */
		body[4] = 'o';
		ck_assert_int_eq(auth_frame_check(af, a, b, hdr, 40, body, 5, n1, tag), 0);
		/* the counter wraps after 2^32 tags: a new prefix, never a nonce again */
		auth_frame_nonce_seek(af, 0xffffffffu);
		ck_assert_int_eq(auth_frame_tag(af, a, b, hdr, 40, body, 5, n1, tag), 0);
		ck_assert_mem_eq(n1, n2, 8);
		ck_assert_uint_eq(n1[8] & n1[9] & n1[10] & n1[11], 0xff);
		ck_assert_int_eq(auth_frame_tag(af, a, b, hdr, 40, body, 5, n2, t2), 0);
		ck_assert_mem_ne(n1, n2, 8); /* a fresh prefix (the same one: chance 2^-64) */
		ck_assert_uint_eq(n2[8] | n2[9] | n2[10] | n2[11], 0);
		ck_assert_int_eq(auth_frame_check(af, a, b, hdr, 40, body, 5, n2, t2), 0);
		ck_assert_int_eq(auth_frame_tag(af, a, b, hdr, 40, NULL, AUTH_FRAME_AD_MAX, n2, t2), -EMSGSIZE);
		k[0] ^= 1;
		ck_assert_ptr_nonnull(other = auth_frame_new(k, alg, err, sizeof(err)));
		ck_assert_int_eq(auth_frame_check(other, a, b, hdr, 40, body, 5, nc, want[alg]), -EACCES); /* another key */
		auth_frame_free(other);
		k[0] ^= 1;
		if (crypto_aead_aes256gcm_is_available()) { /* the same key, the other algorithm */
			ck_assert_ptr_nonnull(other = auth_frame_new(k, !alg, err, sizeof(err)));
			ck_assert_int_eq(auth_frame_check(other, a, b, hdr, 40, body, 5, nc, want[alg]), -EACCES);
			auth_frame_free(other);
		}
		auth_frame_free(af);
	}
	ck_assert_str_eq(auth_frame_alg_name(AUTH_FRAME_AES256GCM), "aes256-gcm");
	ck_assert_int_eq(auth_frame_alg_parse("chacha20-poly1305"), AUTH_FRAME_CHACHA20POLY1305);
	ck_assert_int_eq(auth_frame_alg_parse("hmac-sha256"), -1);
	ck_assert_ptr_null(auth_frame_new((const uint8_t *)"0123456789abcdef0123456789abcdef", 7, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "frame_mac"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("auth");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, key_file_rules);
	tcase_add_test(tc, key_file_of_another_user_refused);
	tcase_add_test(tc, mac_binds_key_role_host_and_nonces);
	tcase_add_test(tc, mac_known_value);
	tcase_add_test(tc, frame_tag_known_value_and_binding);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
