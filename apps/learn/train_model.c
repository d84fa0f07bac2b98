/* train_model.c - the model a parameter server (or an RR-Sync rank) holds: init, apply (paper eq. 2), state, checkpoints. */
#include "train_model.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int train_model_init(struct train_model *m, const struct mlp_shape *s, uint64_t seed, double gamma)
{
	memset(m, 0, sizeof(*m));
	if (!(gamma >= 0 && gamma < 1))
		return -EINVAL;
	m->n = mlp_param_count(s);
	m->w = malloc(m->n * sizeof(float));
	m->w_prev = malloc(m->n * sizeof(float));
	if (!m->w || !m->w_prev) {
		train_model_free(m);
		return -ENOMEM;
	}
	mlp_init(s, seed, m->w);
	memcpy(m->w_prev, m->w, m->n * sizeof(float));
	m->gamma = gamma;
	return 0;
}

int train_model_init_flat(struct train_model *m, const float *w, size_t n, int64_t version, double gamma)
{
	memset(m, 0, sizeof(*m));
	if (n == 0 || !(gamma >= 0 && gamma < 1))
		return -EINVAL;
	m->n = n;
	m->w = malloc(n * sizeof(float));
	m->w_prev = malloc(n * sizeof(float));
	if (!m->w || !m->w_prev) {
		train_model_free(m);
		return -ENOMEM;
	}
	memcpy(m->w, w, n * sizeof(float));
	memcpy(m->w_prev, w, n * sizeof(float));
	m->gamma = gamma;
	m->version = version;
	return 0;
}

int train_init_weights(struct train_model *m, const char *path, char *err, size_t errlen)
{
	float *w;
	size_t n;
	int rc = train_f32_read(path, &w, &n, err, errlen);

	if (rc)
		return rc;
	if (n != m->n) {
		snprintf(err, errlen, "%s: %zu floats, the model has %zu", path, n, m->n);
		free(w);
		return -EINVAL;
	}
	memcpy(m->w, w, sizeof(float) * n);
	memcpy(m->w_prev, w, sizeof(float) * n);
	free(w);
	return 0;
}

int train_f32_read(const char *path, float **w, size_t *n, char *err, size_t errlen)
{
	struct stat st;
	FILE *f = fopen(path, "rb");
	int rc = 0;

	*w = NULL;
	*n = 0;
	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fileno(f), &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	} else if (!S_ISREG(st.st_mode) || st.st_size == 0 || st.st_size % 4) {
		rc = -EINVAL;
		snprintf(err, errlen, "%s: %s", path, !S_ISREG(st.st_mode) ? "not a regular file" :
			 st.st_size == 0 ? "empty file (no floats)" : "size is not a multiple of 4 bytes (float32)");
	} else if (!(*w = malloc((size_t)st.st_size))) {
		rc = -ENOMEM;
		snprintf(err, errlen, "%s: no memory for %lld bytes", path, (long long)st.st_size);
	} else if (fread(*w, 4, (size_t)st.st_size / 4, f) != (size_t)st.st_size / 4) {
		rc = -EIO;
		snprintf(err, errlen, "%s: short read", path);
	} else {
		*n = (size_t)st.st_size / 4;
	}
	fclose(f);
	if (rc) {
		free(*w);
		*w = NULL;
	}
	return rc;
}

void train_model_free(struct train_model *m)
{
	free(m->w);
	free(m->w_prev);
	m->w = m->w_prev = NULL;
}

int64_t train_apply(struct train_model *m, const float *u, int64_t parts)
{
	const float g = (float)m->gamma;
	float *w = m->w, *wp = m->w_prev;

	for (size_t i = 0; i < m->n; i++) {
		float cur = w[i];
		w[i] = cur + u[i] + g * (cur - wp[i]);
		wp[i] = cur;
	}
	m->version += parts;
	return m->version;
}

int64_t train_state_get(const struct train_model *m, float *w, float *h)
{
	for (size_t i = 0; i < m->n; i++) {
		w[i] = m->w[i];
		h[i] = m->w[i] - m->w_prev[i];
	}
	return m->version;
}

void train_state_set(struct train_model *m, const float *w, const float *h, int64_t version)
{
	for (size_t i = 0; i < m->n; i++) {
		m->w[i] = w[i];
		m->w_prev[i] = w[i] - h[i];
	}
	m->version = version;
}

double train_history_norm(const struct train_model *m)
{
	double s = 0;

	for (size_t i = 0; i < m->n; i++) {
		double d = (double)m->w[i] - (double)m->w_prev[i];
		s += d * d;
	}
	return sqrt(s);
}

/* Writes @len bytes of @p to @fd. 0 or -errno. */
static int write_all(int fd, const void *p, size_t len)
{
	const char *c = p;

	while (len) {
		ssize_t k = write(fd, c, len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		c += k;
		len -= (size_t)k;
	}
	return 0;
}

int train_checkpoint_write(const struct train_model *m, const char *path, char *err, size_t errlen)
{
	uint32_t head[2] = { TRAIN_CKPT_MAGIC, 0 };
	uint64_t n = m->n;
	char tmp[4096];
	float *h = malloc(m->n * sizeof(float));
	int fd, rc;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!h) {
		snprintf(err, errlen, "checkpoint %s: out of memory", path);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->n; i++)
		h[i] = m->w[i] - m->w_prev[i];
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	rc = fd < 0 ? -errno : 0;
	if (!rc)
		rc = write_all(fd, head, sizeof(head));
	if (!rc)
		rc = write_all(fd, &m->version, sizeof(m->version));
	if (!rc)
		rc = write_all(fd, &n, sizeof(n));
	if (!rc)
		rc = write_all(fd, m->w, m->n * sizeof(float));
	if (!rc)
		rc = write_all(fd, h, m->n * sizeof(float));
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (fd >= 0 && close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	free(h);
	if (rc) {
		unlink(tmp);
		snprintf(err, errlen, "checkpoint %s: %s", path, strerror(-rc));
	}
	return rc;
}

int train_checkpoint_read(struct train_model *m, const char *path, char *err, size_t errlen)
{
	uint32_t head[2];
	int64_t version;
	uint64_t n;
	float *buf = NULL;
	FILE *f = fopen(path, "rb");
	int rc = 0;

	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "checkpoint %s: %s", path, strerror(errno));
		return rc;
	}
	if (fread(head, sizeof(head), 1, f) != 1 || fread(&version, sizeof(version), 1, f) != 1 ||
	    fread(&n, sizeof(n), 1, f) != 1) {
		snprintf(err, errlen, "checkpoint %s: truncated header", path);
		rc = -EBADMSG;
	} else if (head[0] != TRAIN_CKPT_MAGIC) {
		snprintf(err, errlen, "checkpoint %s: bad magic 0x%08x (not a checkpoint)", path, head[0]);
		rc = -EBADMSG;
	} else if (n != m->n) {
		snprintf(err, errlen, "checkpoint %s: %llu parameters, the model has %zu", path,
			 (unsigned long long)n, m->n);
		rc = -EBADMSG;
	} else if (!(buf = malloc(2 * m->n * sizeof(float)))) {
		snprintf(err, errlen, "checkpoint %s: out of memory", path);
		rc = -ENOMEM;
	} else if (fread(buf, sizeof(float), 2 * m->n, f) != 2 * m->n) {
		snprintf(err, errlen, "checkpoint %s: truncated (fewer than 2 x %zu floats)", path, m->n);
		rc = -EBADMSG;
	} else {
		train_state_set(m, buf, buf + m->n, version);
	}
	free(buf);
	fclose(f);
	return rc;
}
