/* planio.h - JSON batch reader and plan writer for the planning library (docs/plan-format.md). */
#ifndef MLF_PLANIO_H
#define MLF_PLANIO_H

/*
 * planio turns the batch document of docs/plan-format.md into a struct plan_batch (validating
 * every field) and a struct plan back into the plan document. It is kept out of libplan.a (its
 * own archive, build/libplanio.a) so the planning library stays free of I/O and of jansson.
 *
 * Units follow plan.h: seconds, bytes, Gbit/s (1 Gbit/s = 1e9 bit/s).
 */

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "plan.h"

/** Size of an error buffer that always holds planio's one-line messages whole. */
#define PLANIO_ERR_MAX 512

/**
 * planio_read_string - parse and validate one batch document.
 * @json:   NUL-terminated JSON text.
 * @out:    zeroed, then filled; every array is malloc'ed, release with planio_batch_free()
 *          (also safe after a failed read: @out is left zeroed). An update's shards are
 *          sorted by server index (slot i is for servers[i]), whatever their order in @json.
 * @err:    receives ONE line (no newline) naming the field path and the problem, e.g.
 *          `updates[3].worker: unknown host "w9"`, or `line 4 column 7: ...` for JSON syntax.
 * @errlen: size of @err (PLANIO_ERR_MAX is always enough).
 * Returns 0; -EINVAL for malformed JSON, a missing required field, a wrong type, a value out of
 * range, an unknown key, an unknown host, a duplicate id or name; -ENOMEM.
 */
int planio_read_string(const char *json, struct plan_batch *out, char *err, size_t errlen);

/**
 * planio_read_file - planio_read_string() on the contents of @path ("-" reads stdin).
 * Returns as planio_read_string(), or -errno when the file cannot be read (@err names the file).
 */
int planio_read_file(const char *path, struct plan_batch *out, char *err, size_t errlen);

/** planio_batch_free - free every array of a batch filled by planio or gen_batch, and zero it. */
void planio_batch_free(struct plan_batch *batch);

/**
 * planio_batch_to_json - the batch document for @batch (inverse of planio_read_string: reading
 * the result gives an equal batch). Returns a new reference, or NULL on allocation failure.
 */
json_t *planio_batch_to_json(const struct plan_batch *batch);

/**
 * planio_plan_to_json - the plan document (docs/plan-format.md, keys in the documented order)
 * for @plan computed from @batch: aggregates get ids a0, a1, ... and transfers t0, t1, ... in
 * array order; updates, hosts and pulls are named by their batch names.
 * Returns a new reference, or NULL on allocation failure or an index out of range in @plan.
 */
json_t *planio_plan_to_json(const struct plan_batch *batch, const struct plan *plan);

/**
 * planio_write_json - write @doc to @f, indented, followed by a newline; reals with 15
 * significant digits. Returns 0 or -EIO.
 */
int planio_write_json(FILE *f, const json_t *doc);

/** planio_link_name - "<host>.up" / "<host>.down" into @buf (size @len); returns @buf. */
const char *planio_link_name(const struct plan_batch *batch, int host, enum plan_link_dir dir,
			     char *buf, size_t len);

/** planio_carry_name - the id of what a transfer or commit carries (update, aggregate "a<i>",
 * or pull id), into @buf (size @len); returns @buf. */
const char *planio_carry_name(const struct plan_batch *batch, enum plan_carry_kind kind,
			      int carries, char *buf, size_t len);

#endif
