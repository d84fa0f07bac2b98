/* dp.c - the one dataplane-wide state of mlf-dataplane (struct dp), at the bottom of its layers. */
#define _GNU_SOURCE
#include "dp.h"

#include <errno.h>
#include <sys/mman.h>

/* Defined apart from main.c so that the modules below main, which all read it, do not refer
 * to the top of the call graph (no file-level circle through a data symbol). */
struct dp dp;

struct log_bucket dp_xfer_log = LOG_BUCKET_INIT(DP_XFER_LOG_RATE, DP_XFER_LOG_BURST);

/* one madvise per 4 MiB instead of a page fault per 4 KiB page (a quarter of the receiver's CPU
 * at MTU 9000 went to faults) */
#define POPULATE_CHUNK (4u << 20)

int dp_populate(uint8_t *base, uint64_t size, uint64_t *done, uint64_t upto, int advice)
{
	while (*done < upto && *done < size) {
		uint64_t n = size - *done < POPULATE_CHUNK ? size - *done : POPULATE_CHUNK;
		if (madvise(base + *done, n, advice) < 0) { /* *done stays a multiple of the chunk */
			if (errno == ENOMEM || errno == EFAULT || errno == EHWPOISON)
				return -errno;
			*done = size; /* not supported (kernel < 5.14): fall back to page faults */
			return 0;
		}
		*done += n;
	}
	return 0;
}
