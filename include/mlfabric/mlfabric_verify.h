/* mlfabric_verify.h - libmlfabric's verification-mode snapshot files (docs/replication.md, docs/api.md): write, read, divergence. */
#ifndef MLFABRIC_VERIFY_H
#define MLFABRIC_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * An endpoint opened with mlf_opts.verify_dir writes one file per `snapshot` command; checkers
 * (build/mlf-verify, tests) read them with these functions. Implemented in
 * lib/mlfabric/fabric_verify.c, part of libmlfabric.a.
 */

#define MLF_VERIFY_HDR 16u /* bytes before the floats: int64 version, uint64 n */

/**
 * mlf_verify_write - write a snapshot file @path: int64 @version, uint64 @n, then @n float32
 * of @w (little endian, as the host stores them), through @path".tmp" renamed into place so a
 * reader never sees a partial file. Returns 0 or -errno (the temporary file is removed).
 */
int mlf_verify_write(const char *path, const float *w, uint64_t n, int64_t version);

/**
 * mlf_verify_read - read the snapshot file @path: *@w (malloc'd, free it) holds *@n floats,
 * *@version its model version. Returns 0, or -errno / -EBADMSG with @err naming the file and the
 * problem (cannot open, truncated header, size not 16 + 4 n bytes, n = 0).
 */
int mlf_verify_read(const char *path, float **w, uint64_t *n, int64_t *version, char *err, size_t errlen);

/**
 * mlf_verify_divergence - the true divergence ||@a - @b||_2 of two models of @n floats
 * (paper §3.3: what Div_max bounds), accumulated in double.
 */
double mlf_verify_divergence(const float *a, const float *b, uint64_t n);

#ifdef __cplusplus
}
#endif

#endif /* MLFABRIC_VERIFY_H */
