/* train_rec.h - the applications' records: JSON lines flushed per line, and whole JSON files (docs/fabric.md). */
#ifndef MLF_TRAIN_REC_H
#define MLF_TRAIN_REC_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/**
 * train_rec_open - open (truncate) @dir/@name for JSON-lines records, creating @dir.
 * Returns the stream, or NULL with @err naming the path and the reason.
 */
FILE *train_rec_open(const char *dir, const char *name, char *err, size_t errlen);

/**
 * train_rec_line - write @obj (a reference that is stolen) as one compact JSON line to @f and
 * flush it. @f NULL: only releases @obj. Returns 0, or -EIO when the write failed.
 */
int train_rec_line(FILE *f, json_t *obj);

/**
 * train_rec_file - write @obj (stolen) as the whole file @dir/@name (e.g. server.json), indented.
 * Returns 0, or -EIO with @err naming the path.
 */
int train_rec_file(const char *dir, const char *name, json_t *obj, char *err, size_t errlen);

#endif
