/* train_rec.c - the applications' records: JSON lines flushed per line, and whole JSON files (docs/fabric.md). */
#include "train_rec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

FILE *train_rec_open(const char *dir, const char *name, char *err, size_t errlen)
{
	char path[4096];
	FILE *f;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(err, errlen, "cannot create records directory %s: %s", dir, strerror(errno));
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		snprintf(err, errlen, "cannot open record file %s: %s", path, strerror(errno));
	return f;
}

int train_rec_line(FILE *f, json_t *obj)
{
	int rc = 0;

	if (f && obj) {
		if (json_dumpf(obj, f, JSON_COMPACT | JSON_REAL_PRECISION(16)) || fputc('\n', f) == EOF ||
		    fflush(f))
			rc = -EIO;
	}
	json_decref(obj);
	return rc;
}

int train_rec_file(const char *dir, const char *name, json_t *obj, char *err, size_t errlen)
{
	FILE *f = train_rec_open(dir, name, err, errlen);
	int rc;

	if (!f) {
		json_decref(obj);
		return -EIO;
	}
	rc = json_dumpf(obj, f, JSON_INDENT(2) | JSON_REAL_PRECISION(16)) ? -EIO : 0;
	if (fputc('\n', f) == EOF || fclose(f))
		rc = -EIO;
	if (rc)
		snprintf(err, errlen, "cannot write %s/%s", dir, name);
	json_decref(obj);
	return rc;
}
