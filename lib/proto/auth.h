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

#endif
