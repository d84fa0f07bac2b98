/* auth.c - cluster secret and HMAC-SHA256 challenge-response of control connections (OpenSSL), and
 * frame tags (libsodium's AEADs as MACs, docs/security.md "Frames"). */
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
#include <sodium.h>

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

static const char *const frame_alg_names[] = { [AUTH_FRAME_AES256GCM] = "aes256-gcm",
						 [AUTH_FRAME_CHACHA20POLY1305] = "chacha20-poly1305" };

const char *auth_frame_alg_name(int alg)
{
	return alg == AUTH_FRAME_AES256GCM || alg == AUTH_FRAME_CHACHA20POLY1305 ? frame_alg_names[alg] : "?";
}

int auth_frame_alg_parse(const char *s)
{
	for (int a = 0; s && a < (int)(sizeof(frame_alg_names) / sizeof(frame_alg_names[0])); a++)
		if (!strcmp(s, frame_alg_names[a]))
			return a;
	return -1;
}

struct auth_frame {
	/* AES-256-GCM with its key schedule and powers of H computed once (libsodium's afternm
	 * calls): nothing is set up per frame; ChaCha20-Poly1305 derives its Poly1305 key from the
	 * nonce in the call */
	crypto_aead_aes256gcm_state gcm;
	uint8_t key[32];          /* the frame key (ChaCha20-Poly1305) */
	int alg;                  /* enum auth_frame_alg */
	uint8_t prefix[8];        /* the nonce's random part, drawn at start and at every wrap */
	uint32_t next;            /* the nonce's counter of the next tag */
	int redraw;               /* 1: the counter wrapped, draw a new prefix before the next tag */
	uint8_t ad[AUTH_FRAME_AD_MAX]; /* the covered bytes in one piece (libsodium takes one) */
};

struct auth_frame *auth_frame_new(const uint8_t key[AUTH_KEY_BYTES], int alg, char *err, size_t errlen)
{
	char label[64];
	uint8_t fkey[EVP_MAX_MD_SIZE];
	unsigned int flen = 0;
	struct auth_frame *af;
	int n;

	if (sodium_init() < 0) {
		snprintf(err, errlen, "libsodium failed to initialise");
		return NULL;
	}
	if (alg != AUTH_FRAME_AES256GCM && alg != AUTH_FRAME_CHACHA20POLY1305) {
		snprintf(err, errlen, "frame_mac: unknown algorithm %d", alg);
		return NULL;
	}
	if (alg == AUTH_FRAME_AES256GCM && !crypto_aead_aes256gcm_is_available()) {
		snprintf(err, errlen, "frame_mac aes256-gcm needs a CPU with AES-NI and PCLMUL (libsodium); "
			 "this one has none: set \"frame_mac\": \"chacha20-poly1305\" in the cluster config "
			 "(every host reads it)");
		return NULL;
	}
	af = aligned_alloc(64, (sizeof(*af) + 63) / 64 * 64);
	if (!af) {
		snprintf(err, errlen, "frame tags: out of memory");
		return NULL;
	}
	memset(af, 0, sizeof(*af));
	af->alg = alg;
	n = snprintf(label, sizeof(label), "mlfabric-frame-v2 %s", frame_alg_names[alg]);
	if (!HMAC(EVP_sha256(), key, AUTH_KEY_BYTES, (const unsigned char *)label, (size_t)n, fkey, &flen) ||
	    flen != sizeof(af->key)) {
		snprintf(err, errlen, "frame tags: HMAC-SHA256 (OpenSSL) failed deriving the frame key");
		auth_frame_free(af);
		return NULL;
	}
	memcpy(af->key, fkey, sizeof(af->key));
	OPENSSL_cleanse(fkey, sizeof(fkey));
	if (alg == AUTH_FRAME_AES256GCM)
		crypto_aead_aes256gcm_beforenm(&af->gcm, af->key);
	if (getrandom(af->prefix, sizeof(af->prefix), 0) != (ssize_t)sizeof(af->prefix)) {
		snprintf(err, errlen, "frame tags: getrandom failed: %s", strerror(errno));
		auth_frame_free(af);
		return NULL;
	}
	return af;
}

void auth_frame_free(struct auth_frame *af)
{
	if (!af)
		return;
	sodium_memzero(af, sizeof(*af));
	free(af);
}

int auth_frame_alg(const struct auth_frame *af)
{
	return af->alg;
}

void auth_frame_nonce_seek(struct auth_frame *af, uint32_t next)
{
	af->next = next;
}

/* the AEAD tag of the covered bytes (gathered into af->ad) under @nonce */
static int frame_mac(struct auth_frame *af, uint32_t src_ip, uint32_t dst_ip, const uint8_t *hdr, size_t hdr_len,
		     const uint8_t *body, size_t body_len, const uint8_t nonce[AUTH_FRAME_NONCE_BYTES],
		     uint8_t tag[AUTH_TAG_BYTES])
{
	size_t n = 8 + hdr_len + body_len;
	unsigned long long tl = 0;
	uint8_t none[1]; /* the empty message's ciphertext (libsodium wants a pointer) */
	int r;

	if (hdr_len > AUTH_FRAME_AD_MAX - 8 || body_len > AUTH_FRAME_AD_MAX - 8 - hdr_len)
		return -EMSGSIZE;
	memcpy(af->ad, &src_ip, 4);
	memcpy(af->ad + 4, &dst_ip, 4);
	memcpy(af->ad + 8, hdr, hdr_len);
	if (body_len)
		memcpy(af->ad + 8 + hdr_len, body, body_len);
	if (af->alg == AUTH_FRAME_AES256GCM)
		r = crypto_aead_aes256gcm_encrypt_detached_afternm(none, tag, &tl, NULL, 0, af->ad, n, NULL, nonce,
								   &af->gcm);
	else
		r = crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, tag, &tl, NULL, 0, af->ad, n, NULL,
								       nonce, af->key);
	return r == 0 && tl == AUTH_TAG_BYTES ? 0 : -EIO;
}

int auth_frame_tag(struct auth_frame *af, uint32_t src_ip, uint32_t dst_ip, const uint8_t *hdr,
		   size_t hdr_len, const uint8_t *body, size_t body_len, uint8_t nonce[AUTH_FRAME_NONCE_BYTES],
		   uint8_t tag[AUTH_TAG_BYTES])
{
	int r;

	if (af->redraw) { /* 2^32 tags with this prefix: never reuse a (prefix, counter) */
		if (getrandom(af->prefix, sizeof(af->prefix), 0) != (ssize_t)sizeof(af->prefix))
			return -EIO;
		af->redraw = 0;
	}
	memcpy(nonce, af->prefix, sizeof(af->prefix));
	nonce[8] = (uint8_t)(af->next >> 24);
	nonce[9] = (uint8_t)(af->next >> 16);
	nonce[10] = (uint8_t)(af->next >> 8);
	nonce[11] = (uint8_t)af->next;
	r = frame_mac(af, src_ip, dst_ip, hdr, hdr_len, body, body_len, nonce, tag);
	if (++af->next == 0) /* a nonce handed out is never handed out again, tagged or not */
		af->redraw = 1;
	return r;
}

int auth_frame_check(struct auth_frame *af, uint32_t src_ip, uint32_t dst_ip, const uint8_t *hdr,
		     size_t hdr_len, const uint8_t *body, size_t body_len,
		     const uint8_t nonce[AUTH_FRAME_NONCE_BYTES], const uint8_t tag[AUTH_TAG_BYTES])
{
	uint8_t want[AUTH_TAG_BYTES];
	int r = frame_mac(af, src_ip, dst_ip, hdr, hdr_len, body, body_len, nonce, want);

	if (r == -EMSGSIZE)
		return r;
	return r == 0 && crypto_verify_16(want, tag) == 0 ? 0 : -EACCES;
}
