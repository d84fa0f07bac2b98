/* dp.c - the one dataplane-wide state of mlf-dataplane (struct dp), at the bottom of its layers. */
#include "dp.h"

/* Defined apart from main.c so that the modules below main, which all read it, do not refer
 * to the top of the call graph (no file-level circle through a data symbol). */
struct dp dp;

struct log_bucket dp_xfer_log = LOG_BUCKET_INIT(DP_XFER_LOG_RATE, DP_XFER_LOG_BURST);
