/* idx.h - read IDX files (MNIST / Fashion-MNIST format), gzip-compressed or plain, with zlib. */
#ifndef MLF_IDX_H
#define MLF_IDX_H

#include <stddef.h>
#include <stdint.h>

/** A labelled image set: n images of rows x cols bytes, pixel values scaled to [0, 1]. */
struct idx_dataset {
	size_t n;         /* number of examples */
	int rows, cols;   /* image shape (28 x 28 for Fashion-MNIST) */
	float *pixels;    /* n * rows * cols floats in [0, 1], row-major per image */
	uint8_t *labels;  /* n labels in 0..9 */
};

/**
 * idx_load_dataset - load an image file (magic 0x00000803) and its label file (0x00000801).
 * @images_path, @labels_path: IDX files, optionally gzip-compressed (.gz is read by zlib).
 * @limit: keep at most this many examples (0 = all).
 * @err:   on error, one line naming the file and the problem.
 * Returns 0, -ENOENT (file missing), -EINVAL (bad magic, truncated, counts differ, label > 9),
 * -ENOMEM.
 */
int idx_load_dataset(const char *images_path, const char *labels_path, size_t limit,
		     struct idx_dataset *out, char *err, size_t errlen);

/** idx_free - release a dataset; safe on a zeroed struct. */
void idx_free(struct idx_dataset *d);

#endif
