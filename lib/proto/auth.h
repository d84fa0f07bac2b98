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

#define AUTH_TAG_BYTES 16   /* a frame's tag: HMAC-SHA256 truncated to 128 bits */

struct auth_frame; /* opaque: the keyed HMAC state of one thread (auth.c) */

/**
 * auth_frame_new - the frame-MAC state of the cluster secret @key (docs/security.md "Frames"):
 * the frame key is HMAC-SHA256(@key, "mlfabric-frame-v1"), so a frame tag can never be
 * confused with a control-connection MAC. One state per thread (not thread-safe).
 * Returns NULL when OpenSSL fails (out of memory).
 */
struct auth_frame *auth_frame_new(const uint8_t key[AUTH_KEY_BYTES]);

/** auth_frame_free - release @af; NULL is allowed. */
void auth_frame_free(struct auth_frame *af);

/**
 * auth_frame_tag - the tag of one frame: HMAC-SHA256 (frame key) over @src_ip, @dst_ip (IPv4,
 * network order, 4 bytes each as on the wire), the @hdr_len bytes of the MLfabric header @hdr
 * (flags, id, offset and lengths: what the frame claims) and the @body_len bytes of @body,
 * truncated to AUTH_TAG_BYTES into @tag. Binding the addresses means a frame of one host pair
 * cannot be replayed as another's. Returns 0 or -EIO (OpenSSL failed).
 */
int auth_frame_tag(struct auth_frame *af, uint32_t src_ip, uint32_t dst_ip, const uint8_t *hdr,
		   size_t hdr_len, const uint8_t *body, size_t body_len, uint8_t tag[AUTH_TAG_BYTES]);

/**
 * auth_frame_check - does @tag equal auth_frame_tag() of the same fields? Compared in constant
 * time. Returns 0 (it does), -EACCES (forged, corrupt or made with another key), -EIO.
 */
int auth_frame_check(struct auth_frame *af, uint32_t src_ip, uint32_t dst_ip, const uint8_t *hdr,
		     size_t hdr_len, const uint8_t *body, size_t body_len, const uint8_t tag[AUTH_TAG_BYTES]);

#endif
