/* auth.c - cluster secret and HMAC-SHA256 challenge-response of control connections (docs/security.md). */
/* SHA256_Init/Update/Final (deprecated in OpenSSL 3.0, still exported): the frame MAC below uses
 * them to skip EVP's per-call work, 500 ns of a 1.7 us tag (docs/security.md "Cost") */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/sha.h>

int auth_key_load(const char *path, uint8_t key[AUTH_KEY_BYTES], char *err, size_t errlen)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "key file %s: cannot open: %s (create it with mlf-keygen %s)",
			 path, strerror(e), path);
		return e == EACCES ? -EACCES : -ENOENT;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "key file %s: not a regular file", path);
		return -EINVAL;
	}
	if (st.st_mode & 077) {
		close(fd);
		snprintf(err, errlen, "key file %s: mode %03o lets group or others read it (chmod 600 %s)",
			 path, (unsigned)(st.st_mode & 0777), path);
		return -EPERM;
	}
	if (st.st_uid != geteuid()) { /* another user could replace or read it */
		close(fd);
		snprintf(err, errlen, "key file %s: owned by uid %u, not by this process's user (uid %u): "
			 "chown %u %s, or run as its owner", path, (unsigned)st.st_uid,
			 (unsigned)geteuid(), (unsigned)geteuid(), path);
		return -EPERM;
	}
	if (st.st_size != AUTH_KEY_BYTES) {
		close(fd);
		snprintf(err, errlen, "key file %s: %lld bytes, expected %d (mlf-keygen makes one)", path,
			 (long long)st.st_size, AUTH_KEY_BYTES);
		return -EINVAL;
	}
	n = read(fd, key, AUTH_KEY_BYTES);
	close(fd);
	if (n != AUTH_KEY_BYTES) {
		snprintf(err, errlen, "key file %s: read failed", path);
		return -EIO;
	}
	return 0;
}

static void to_hex(const uint8_t *b, size_t n, char *hex)
{
	static const char d[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = d[b[i] >> 4];
		hex[2 * i + 1] = d[b[i] & 15];
	}
	hex[2 * n] = '\0';
}

int auth_nonce(char hex[AUTH_NONCE_HEX + 1])
{
	uint8_t b[AUTH_NONCE_HEX / 2];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -errno ? -errno : -EIO;
	to_hex(b, sizeof(b), hex);
	return 0;
}

static int hex_ok(const char *s, size_t len)
{
	if (!s || strlen(s) != len)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

int auth_nonce_ok(const char *s)
{
	return hex_ok(s, AUTH_NONCE_HEX);
}

int auth_mac(const uint8_t key[AUTH_KEY_BYTES], const char *role, const char *host, const char *nc,
	     const char *ns, char hex[AUTH_MAC_HEX + 1])
{
	char msg[512];
	uint8_t mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	int n = snprintf(msg, sizeof(msg), "mlfabric-auth-v1\n%s\n%s\n%s\n%s", role, host, nc, ns);

	if (n < 0 || (size_t)n >= sizeof(msg))
		return -EIO;
	if (!HMAC(EVP_sha256(), key, AUTH_KEY_BYTES, (const unsigned char *)msg, (size_t)n, mac, &len) ||
	    len != AUTH_MAC_HEX / 2)
		return -EIO;
	to_hex(mac, len, hex);
	return 0;
}

int auth_check(const uint8_t key[AUTH_KEY_BYTES], const char *role, const char *host, const char *nc,
	       const char *ns, const char *mac_hex)
{
	char want[AUTH_MAC_HEX + 1];

	if (!hex_ok(mac_hex, AUTH_MAC_HEX))
		return -EACCES;
	if (auth_mac(key, role, host, nc, ns, want))
		return -EIO;
	return CRYPTO_memcmp(want, mac_hex, AUTH_MAC_HEX) ? -EACCES : 0;
}

struct auth_frame {
	/* HMAC-SHA256 with the frame key, its pads absorbed once: a tag hashes only the frame's
	 * bytes and the 32 of the inner digest (RFC 2104 with the states kept, as OpenSSL's HMAC
	 * does, without EVP's dispatch per call) */
	SHA256_CTX inner, outer;
};

struct auth_frame *auth_frame_new(const uint8_t key[AUTH_KEY_BYTES])
{
	static const char label[] = "mlfabric-frame-v1";
	uint8_t fkey[EVP_MAX_MD_SIZE], pad[2][SHA256_CBLOCK];
	unsigned int flen = 0;
	struct auth_frame *af = calloc(1, sizeof(*af));
	int ok;

	if (!af)
		return NULL;
	ok = HMAC(EVP_sha256(), key, AUTH_KEY_BYTES, (const unsigned char *)label, sizeof(label) - 1, fkey,
		  &flen) && flen <= SHA256_CBLOCK;
	if (ok) {
		memset(pad, 0, sizeof(pad));
		memcpy(pad[0], fkey, flen);
		memcpy(pad[1], fkey, flen);
		for (int i = 0; i < SHA256_CBLOCK; i++) {
			pad[0][i] ^= 0x36;
			pad[1][i] ^= 0x5c;
		}
		ok = SHA256_Init(&af->inner) && SHA256_Update(&af->inner, pad[0], SHA256_CBLOCK) &&
		     SHA256_Init(&af->outer) && SHA256_Update(&af->outer, pad[1], SHA256_CBLOCK);
	}
	OPENSSL_cleanse(fkey, sizeof(fkey));
	OPENSSL_cleanse(pad, sizeof(pad));
	if (!ok) {
		auth_frame_free(af);
		return NULL;
	}
	return af;
}

void auth_frame_free(struct auth_frame *af)
{
	if (!af)
		return;
	OPENSSL_cleanse(af, sizeof(*af));
	free(af);
}

int auth_frame_tag(struct auth_frame *af, uint32_t src_ip, uint32_t dst_ip, const uint8_t *hdr,
		   size_t hdr_len, const uint8_t *body, size_t body_len, uint8_t tag[AUTH_TAG_BYTES])
{
	uint8_t ips[8], ih[SHA256_DIGEST_LENGTH], full[SHA256_DIGEST_LENGTH];
	SHA256_CTX c = af->inner;
	int ok;

	memcpy(ips, &src_ip, 4);
	memcpy(ips + 4, &dst_ip, 4);
	ok = SHA256_Update(&c, ips, sizeof(ips)) && SHA256_Update(&c, hdr, hdr_len) &&
	     (!body_len || SHA256_Update(&c, body, body_len)) && SHA256_Final(ih, &c);
	c = af->outer;
	ok = ok && SHA256_Update(&c, ih, sizeof(ih)) && SHA256_Final(full, &c);
	OPENSSL_cleanse(&c, sizeof(c));
	if (!ok)
		return -EIO;
	memcpy(tag, full, AUTH_TAG_BYTES);
	return 0;
}

int auth_frame_check(struct auth_frame *af, uint32_t src_ip, uint32_t dst_ip, const uint8_t *hdr,
		     size_t hdr_len, const uint8_t *body, size_t body_len, const uint8_t tag[AUTH_TAG_BYTES])
{
	uint8_t want[AUTH_TAG_BYTES];

	if (auth_frame_tag(af, src_ip, dst_ip, hdr, hdr_len, body, body_len, want))
		return -EIO;
	return CRYPTO_memcmp(want, tag, AUTH_TAG_BYTES) ? -EACCES : 0;
}
