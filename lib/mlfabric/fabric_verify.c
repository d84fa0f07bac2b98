/* fabric_verify.c - include/mlfabric/mlfabric_verify.h: verification-mode snapshot files: write (temporary + rename), read with checks, divergence. */
#include "mlfabric_verify.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mlf_verify_write(const char *path, const float *w, uint64_t n, int64_t version)
{
	char tmp[4200];
	FILE *o;
	int ok, rc;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(o = fopen(tmp, "wb")))
		return -errno;
	ok = fwrite(&version, sizeof(version), 1, o) == 1 && fwrite(&n, sizeof(n), 1, o) == 1 &&
	     fwrite(w, sizeof(float), n, o) == n;
	rc = fclose(o);
	if (!ok || rc != 0 || rename(tmp, path) < 0) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

int mlf_verify_read(const char *path, float **w, uint64_t *n, int64_t *version, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	int rc = 0;

	*w = NULL;
	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fileno(f), &st) < 0 || fread(version, sizeof(*version), 1, f) != 1 || fread(n, sizeof(*n), 1, f) != 1) {
		snprintf(err, errlen, "%s: truncated: no 16-byte header (version, n)", path);
		rc = -EBADMSG;
	} else if (*n == 0 || *n > ((uint64_t)st.st_size - MLF_VERIFY_HDR) / 4 ||
		   (uint64_t)st.st_size != MLF_VERIFY_HDR + 4 * *n) {
		snprintf(err, errlen, "%s: %lld bytes, but n = %llu needs %llu (truncated or not a snapshot)", path,
			 (long long)st.st_size, (unsigned long long)*n,
			 *n > (1ULL << 60) ? 0ULL : (unsigned long long)(MLF_VERIFY_HDR + 4 * *n));
		rc = -EBADMSG;
	} else if (!(*w = malloc(*n * sizeof(float)))) {
		snprintf(err, errlen, "%s: no memory for %llu floats", path, (unsigned long long)*n);
		rc = -ENOMEM;
	} else if (fread(*w, sizeof(float), *n, f) != *n) {
		snprintf(err, errlen, "%s: read error", path);
		rc = -EIO;
	}
	fclose(f);
	if (rc) {
		free(*w);
		*w = NULL;
	}
	return rc;
}

double mlf_verify_divergence(const float *a, const float *b, uint64_t n)
{
	double s = 0;

	for (uint64_t i = 0; i < n; i++) {
		double d = (double)a[i] - (double)b[i];
		s += d * d;
	}
	return sqrt(s);
}
