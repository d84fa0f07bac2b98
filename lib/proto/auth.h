/* auth.h - the cluster secret and the control connection's challenge-response (docs/security.md). */
#ifndef MLF_AUTH_H
#define MLF_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define AUTH_KEY_BYTES 32   /* the cluster secret: 32 random bytes in a file of mode 0600 */
#define AUTH_NONCE_HEX 32   /* a nonce: 16 random bytes as 32 lower-case hex digits */
#define AUTH_MAC_HEX 64     /* HMAC-SHA256 as 64 lower-case hex digits */

/**
 * auth_key_load - read the cluster secret from @path: a regular file of exactly
 * AUTH_KEY_BYTES bytes that neither its group nor others may read or write (mode 0600 or
 * 0400; `tools/mlf-keygen` creates one). Returns 0, or -errno with @err naming the file:
 * -ENOENT/-EACCES (cannot open), -EPERM (group or others have access: chmod 600),
 * -EINVAL (not a regular file, or not AUTH_KEY_BYTES bytes), -EIO.
 */
int auth_key_load(const char *path, uint8_t key[AUTH_KEY_BYTES], char *err, size_t errlen);

/** auth_nonce - a fresh nonce (getrandom) into @hex (AUTH_NONCE_HEX digits and a NUL). Returns 0 or -errno. */
int auth_nonce(char hex[AUTH_NONCE_HEX + 1]);

/** auth_nonce_ok - is @s exactly AUTH_NONCE_HEX lower-case hex digits? */
int auth_nonce_ok(const char *s);

/**
 * auth_mac - HMAC-SHA256 (OpenSSL) with @key over "mlfabric-auth-v1\n@role\n@host\n@nc\n@ns",
 * into @hex (AUTH_MAC_HEX digits and a NUL). @role is "host" (a host proving itself to the
 * scheduler) or "scheduler" (the scheduler proving itself to a host): the two directions
 * never share a MAC. @nc is the host's nonce, @ns the scheduler's; binding @host means a MAC
 * cannot be replayed for another host, the nonces that it cannot be replayed on another
 * connection. Returns 0 or -EIO (OpenSSL failed).
 */
int auth_mac(const uint8_t key[AUTH_KEY_BYTES], const char *role, const char *host, const char *nc,
	     const char *ns, char hex[AUTH_MAC_HEX + 1]);

/**
 * auth_check - does @mac_hex equal auth_mac(@key, @role, @host, @nc, @ns)? Compared in
 * constant time (CRYPTO_memcmp). Returns 0 (it does), -EACCES (it does not, or @mac_hex is
 * not AUTH_MAC_HEX hex digits), -EIO.
 */
int auth_check(const uint8_t key[AUTH_KEY_BYTES], const char *role, const char *host, const char *nc,
	       const char *ns, const char *mac_hex);

#define AUTH_TAG_BYTES 16         /* a frame's MAC: the 128-bit AEAD tag (GMAC or Poly1305) */
#define AUTH_FRAME_NONCE_BYTES 12 /* a frame's nonce: 8 random bytes, then a 32-bit counter */
#define AUTH_FRAME_AD_MAX (8 + 65536) /* most bytes one tag covers: addresses and a UDP payload */

/** The MAC of frame tags ("frame_mac" of the cluster config, docs/security.md "Frames"). */
enum auth_frame_alg {
	AUTH_FRAME_AES256GCM = 0,        /* AES-256-GCM with an empty message (GMAC): needs AES-NI and
					  * PCLMUL (libsodium 1.0.18); the default */
	AUTH_FRAME_CHACHA20POLY1305 = 1, /* ChaCha20-Poly1305 (IETF, RFC 8439) with an empty message:
					  * any CPU */
};

/** auth_frame_alg_name - "aes256-gcm" or "chacha20-poly1305" (the config's names), or "?". */
const char *auth_frame_alg_name(int alg);

/** auth_frame_alg_parse - the enum auth_frame_alg named @s, or -1 when @s names none. */
int auth_frame_alg_parse(const char *s);

struct auth_frame; /* opaque: the keyed AEAD state and nonce counter of one thread (auth.c) */

/**
 * auth_frame_new - the frame-MAC state of the cluster secret @key for MAC @alg
 * (docs/security.md "Frames"): the frame key is HMAC-SHA256(@key, "mlfabric-frame-v2 " and the
 * algorithm's name), so a frame tag never shares a key with a control-connection MAC or with the
 * other algorithm. Draws the nonce prefix (8 bytes, getrandom). One state per thread (not
 * thread-safe). Returns NULL with @err saying why: libsodium failed to start, the CPU cannot run
 * @alg (AES-256-GCM without AES-NI and PCLMUL: the message names "frame_mac"), getrandom failed,
 * out of memory.
 */
struct auth_frame *auth_frame_new(const uint8_t key[AUTH_KEY_BYTES], int alg, char *err, size_t errlen);

/** auth_frame_free - release @af; NULL is allowed. */
void auth_frame_free(struct auth_frame *af);

/** auth_frame_alg - the enum auth_frame_alg @af was made for. */
int auth_frame_alg(const struct auth_frame *af);

/**
 * auth_frame_tag - tag one frame: takes the next nonce of @af (AUTH_FRAME_NONCE_BYTES into
 * @nonce: the 8-byte prefix, then the 32-bit big-endian counter; when the counter wraps, after
 * 2^32 tags, a new prefix is drawn, so a nonce is never used twice under the key) and writes
 * into @tag the AEAD tag (frame key, that nonce, an empty message) whose additional data are
 * @src_ip, @dst_ip (IPv4, network order, 4 bytes each as on the wire), the @hdr_len bytes of the
 * MLfabric header and stamp @hdr (what the frame claims) and the @body_len bytes of @body.
 * Binding the addresses means a frame of one host pair cannot be replayed as another's.
 * Returns 0, -EMSGSIZE (more than AUTH_FRAME_AD_MAX bytes to cover) or -EIO (getrandom or
 * libsodium failed; nothing was tagged).
 */
int auth_frame_tag(struct auth_frame *af, uint32_t src_ip, uint32_t dst_ip, const uint8_t *hdr,
		   size_t hdr_len, const uint8_t *body, size_t body_len, uint8_t nonce[AUTH_FRAME_NONCE_BYTES],
		   uint8_t tag[AUTH_TAG_BYTES]);

/**
 * auth_frame_check - is @tag the AEAD tag of the same fields under @nonce (from the frame)?
 * Compared in constant time (crypto_verify_16). Returns 0 (it is), -EACCES (forged, corrupt,
 * another nonce, or made with another key or algorithm), -EMSGSIZE (more than
 * AUTH_FRAME_AD_MAX bytes to cover).
 */
int auth_frame_check(struct auth_frame *af, uint32_t src_ip, uint32_t dst_ip, const uint8_t *hdr,
		     size_t hdr_len, const uint8_t *body, size_t body_len,
		     const uint8_t nonce[AUTH_FRAME_NONCE_BYTES], const uint8_t tag[AUTH_TAG_BYTES]);

/** auth_frame_nonce_seek - for tests: the next tag of @af uses counter @next (the wrap at 2^32). */
void auth_frame_nonce_seek(struct auth_frame *af, uint32_t next);

#endif
