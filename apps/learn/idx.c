/* idx.c - IDX reader over zlib's gzFile (reads plain files too, transparently). */
#include "idx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

/* Reads exactly @len bytes; returns 0 or -1 on a short read. */
static int read_full(gzFile f, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		unsigned chunk = len > (1u << 30) ? (1u << 30) : (unsigned)len;
		int got = gzread(f, p, chunk);
		if (got <= 0)
			return -1;
		p += got;
		len -= (size_t)got;
	}
	return 0;
}

static uint32_t be32(const uint8_t b[4])
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Opens @path and reads the IDX header: magic, then @ndims big-endian dimensions. */
static int open_idx(const char *path, uint32_t magic, int ndims, uint32_t *dims, gzFile *out,
		    char *err, size_t errlen)
{
	uint8_t hdr[4 * 4];
	gzFile f = gzopen(path, "rb");

	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
		return -ENOENT;
	}
	if (read_full(f, hdr, 4) != 0) {
		snprintf(err, errlen, "%s: truncated IDX header", path);
		gzclose(f);
		return -EINVAL;
	}
	if (be32(hdr) != magic) {
		snprintf(err, errlen, "%s: bad IDX magic 0x%08x (expected 0x%08x)", path, be32(hdr), magic);
		gzclose(f);
		return -EINVAL;
	}
	if (read_full(f, hdr + 4, 4 * (size_t)ndims) != 0) {
		snprintf(err, errlen, "%s: truncated IDX header", path);
		gzclose(f);
		return -EINVAL;
	}
	for (int i = 0; i < ndims; i++)
		dims[i] = be32(hdr + 4 * (i + 1));
	*out = f;
	return 0;
}

int idx_load_dataset(const char *images_path, const char *labels_path, size_t limit,
		     struct idx_dataset *out, char *err, size_t errlen)
{
	uint32_t idims[3], ldims[1];
	gzFile fi = NULL, fl = NULL;
	uint8_t *raw = NULL;
	size_t n, npix;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = open_idx(images_path, 0x00000803, 3, idims, &fi, err, errlen)))
		return rc;
	if ((rc = open_idx(labels_path, 0x00000801, 1, ldims, &fl, err, errlen)))
		goto fail;
	rc = -EINVAL;
	if (idims[0] != ldims[0]) {
		snprintf(err, errlen, "%s: %u labels for %u images in %s", labels_path, ldims[0], idims[0],
			 images_path);
		goto fail;
	}
	if (idims[1] == 0 || idims[2] == 0 || idims[1] > 4096 || idims[2] > 4096) {
		snprintf(err, errlen, "%s: implausible image shape %ux%u", images_path, idims[1], idims[2]);
		goto fail;
	}
	n = idims[0];
	if (limit && limit < n)
		n = limit;
	npix = (size_t)idims[1] * idims[2];
	out->n = n;
	out->rows = (int)idims[1];
	out->cols = (int)idims[2];
	out->pixels = malloc(n * npix * sizeof(float));
	out->labels = malloc(n ? n : 1);
	raw = malloc(n * npix > 0 ? n * npix : 1);
	if (!out->pixels || !out->labels || !raw) {
		snprintf(err, errlen, "%s: out of memory for %zu images", images_path, n);
		rc = -ENOMEM;
		goto fail;
	}
	if (read_full(fi, raw, n * npix) != 0) {
		snprintf(err, errlen, "%s: truncated: fewer than %zu images", images_path, n);
		goto fail;
	}
	if (read_full(fl, out->labels, n) != 0) {
		snprintf(err, errlen, "%s: truncated: fewer than %zu labels", labels_path, n);
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		if (out->labels[i] > 9) {
			snprintf(err, errlen, "%s: label %zu is %u, not in 0..9", labels_path, i, out->labels[i]);
			goto fail;
		}
	}
	for (size_t i = 0; i < n * npix; i++)
		out->pixels[i] = raw[i] * (1.0f / 255.0f);
	free(raw);
	gzclose(fi);
	gzclose(fl);
	return 0;
fail:
	free(raw);
	if (fi)
		gzclose(fi);
	if (fl)
		gzclose(fl);
	idx_free(out);
	return rc;
}

void idx_free(struct idx_dataset *d)
{
	free(d->pixels);
	free(d->labels);
	memset(d, 0, sizeof(*d));
}
