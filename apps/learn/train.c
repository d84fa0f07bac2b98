/* train.c - shared training pieces: eq. 2 apply, stragglers, shards, mini-batches, evaluation, JSON-lines records. */
#include "train.h"

#include "clock.h"
#include "vec.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
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

/* splitmix64: the deterministic generator of stragglers and mini-batch sampling. */
static uint64_t train_rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
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

int train_straggle_parse(const char *spec, uint64_t seed, struct train_straggle *st)
{
	static const struct { const char *name; double r, s; } named[] = {
		{ "C1", 0.10, 2 }, { "C2", 0.10, 4 }, { "C3", 0.04, 2 }, { "none", 0, 1 },
	};
	char *end;

	memset(st, 0, sizeof(*st));
	st->state = seed ^ 0x5374726167676c65ULL;
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (!strcasecmp(spec, named[i].name)) {
			st->rate = named[i].r;
			st->factor = named[i].s;
			return 0;
		}
	st->rate = strtod(spec, &end);
	if (end == spec || *end != ',')
		return -EINVAL;
	spec = end + 1;
	st->factor = strtod(spec, &end);
	if (end == spec || *end)
		return -EINVAL;
	if (!(st->rate >= 0 && st->rate <= 1) || !(st->factor >= 1))
		return -EINVAL;
	return 0;
}

double train_straggle_next(struct train_straggle *st)
{
	double u = (double)(train_rng_next(&st->state) >> 11) * (1.0 / 9007199254740992.0);

	return u < st->rate ? st->factor : 1.0;
}

/* Sleeps @s seconds (> 0), resuming after signals. */
static void sleep_s(double s)
{
	struct timespec ts;

	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

double train_compute_pad(double t_start, double min_s)
{
	double elapsed = clock_real_s() - t_start;

	if (min_s > elapsed) {
		sleep_s(min_s - elapsed);
		return min_s;
	}
	return elapsed;
}

double train_adsp_commit_due(double t_rate, int64_t j, int64_t delta, double period_s, double o_s)
{
	if (delta <= 0 || j < 1 || j > delta)
		return INFINITY;
	double due = t_rate + (double)j * period_s / (double)delta - (o_s > 0 ? o_s : 0);
	return due > t_rate ? due : t_rate;
}

double train_straggle_sleep(double compute_s, double factor)
{
	double extra = (factor - 1) * compute_s;

	if (!(extra > 0))
		return 0;
	sleep_s(extra);
	return extra;
}

int train_shard_parse(const char *spec, int *i, int *n)
{
	char *end;
	long a = strtol(spec, &end, 10), b;

	if (end == spec || *end != '/')
		return -EINVAL;
	spec = end + 1;
	b = strtol(spec, &end, 10);
	if (end == spec || *end || b < 1 || b > 1 << 20 || a < 0 || a >= b)
		return -EINVAL;
	*i = (int)a;
	*n = (int)b;
	return 0;
}

void train_shard_range(size_t total, int i, int n, size_t *begin, size_t *end)
{
	*begin = total * (size_t)i / (size_t)n;
	*end = total * (size_t)(i + 1) / (size_t)n;
}

int train_load(const char *dir, int test, size_t limit, struct idx_dataset *out, char *err, size_t errlen)
{
	const char *stem = test ? "t10k" : "train";
	char ip[4096], lp[4096];

	snprintf(ip, sizeof(ip), "%s/%s-images-idx3-ubyte.gz", dir, stem);
	snprintf(lp, sizeof(lp), "%s/%s-labels-idx1-ubyte.gz", dir, stem);
	return idx_load_dataset(ip, lp, limit, out, err, errlen);
}

int train_load_shard(const char *dir, size_t total, int i, int n, struct idx_dataset *out,
		     char *err, size_t errlen)
{
	size_t b, e, px;
	int rc;

	if (n < 1 || i < 0 || i >= n || total == 0) {
		snprintf(err, errlen, "bad shard %d/%d of %zu images", i, n, total);
		return -EINVAL;
	}
	train_shard_range(total, i, n, &b, &e);
	rc = train_load(dir, 0, e, out, err, errlen);
	if (rc)
		return rc;
	if (out->n < e) {
		snprintf(err, errlen, "%s holds %zu training images, fewer than the %zu asked for", dir,
			 out->n, total);
		idx_free(out);
		return -EINVAL;
	}
	px = (size_t)out->rows * out->cols;
	memmove(out->pixels, out->pixels + b * px, (e - b) * px * sizeof(float));
	memmove(out->labels, out->labels + b, e - b);
	out->n = e - b;
	return 0;
}

int train_load_shard_by_label(const char *dir, size_t total, int i, int n, struct idx_dataset *out,
			      char *err, size_t errlen)
{
	size_t px, k = 0;
	int rc;

	if (n < 1 || n > 10 || i < 0 || i >= n || total == 0) {
		snprintf(err, errlen, "bad label shard %d/%d of %zu images (1 to 10 shards)", i, n, total);
		return -EINVAL;
	}
	rc = train_load(dir, 0, total, out, err, errlen);
	if (rc)
		return rc;
	if (out->n < total) {
		snprintf(err, errlen, "%s holds %zu training images, fewer than the %zu asked for", dir,
			 out->n, total);
		idx_free(out);
		return -EINVAL;
	}
	px = (size_t)out->rows * out->cols;
	for (size_t j = 0; j < out->n; j++)
		if (out->labels[j] % n == i) {
			if (k != j) {
				memmove(out->pixels + k * px, out->pixels + j * px, px * sizeof(float));
				out->labels[k] = out->labels[j];
			}
			k++;
		}
	out->n = k;
	return 0;
}

void train_sample_batch(const struct idx_dataset *d, size_t begin, size_t end, int batch,
			uint64_t *rng, float *x, uint8_t *y)
{
	size_t px = (size_t)d->rows * d->cols, span = end - begin;

	for (int r = 0; r < batch; r++) {
		size_t k = begin + (size_t)(train_rng_next(rng) % span);
		memcpy(x + (size_t)r * px, d->pixels + k * px, px * sizeof(float));
		y[r] = d->labels[k];
	}
}

/* Inner product with four partial sums (lets the compiler keep four lanes busy). */
static float train_dot(const float *a, const float *b, int n)
{
	float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	int i;

	for (i = 0; i + 4 <= n; i += 4) {
		s0 += a[i] * b[i];
		s1 += a[i + 1] * b[i + 1];
		s2 += a[i + 2] * b[i + 2];
		s3 += a[i + 3] * b[i + 3];
	}
	for (; i < n; i++)
		s0 += a[i] * b[i];
	return (s0 + s1) + (s2 + s3);
}

int train_eval(const struct mlp_shape *s, const float *w, const struct idx_dataset *d, size_t k,
	       double *accuracy, double *loss)
{
	int width = 0, L = s->n_layers;
	size_t correct = 0, px = (size_t)d->rows * d->cols;
	double nll = 0;
	float *a, *z;

	if (k == 0 || k > d->n)
		k = d->n;
	for (int l = 0; l <= L; l++)
		width = s->sizes[l] > width ? s->sizes[l] : width;
	a = malloc(sizeof(float) * (size_t)width);
	z = malloc(sizeof(float) * (size_t)width);
	if (!a || !z) {
		free(a);
		free(z);
		return -ENOMEM;
	}
	for (size_t e = 0; e < k; e++) {
		const float *wl = w;
		int nout = s->sizes[L], best = 0;
		double mx, sum = 0;

		memcpy(a, d->pixels + e * px, sizeof(float) * (size_t)s->sizes[0]);
		for (int l = 1; l <= L; l++) {
			int in = s->sizes[l - 1], out = s->sizes[l];
			const float *bias = wl + (size_t)out * in;
			for (int o = 0; o < out; o++) {
				float v = train_dot(wl + (size_t)o * in, a, in) + bias[o];
				z[o] = (l < L && v < 0) ? 0 : v;
			}
			wl += (size_t)out * in + out;
			memcpy(a, z, sizeof(float) * (size_t)out);
		}
		for (int o = 1; o < nout; o++)
			best = a[o] > a[best] ? o : best;
		mx = a[best];
		for (int o = 0; o < nout; o++)
			sum += exp((double)a[o] - mx);
		/* -log softmax(label) = log sum exp(a - max) - (a_label - max) */
		nll += log(sum) - ((double)a[d->labels[e]] - mx);
		correct += best == d->labels[e];
	}
	free(a);
	free(z);
	*accuracy = k ? (double)correct / (double)k : 0;
	*loss = k ? nll / (double)k : 0;
	return 0;
}

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

double train_local_slowdown(const struct train_local *L)
{
	double f = train_straggle_next(L->st);

	return clock_real_s() - L->t0 >= L->speed_at ? f * L->speed : f;
}

double train_local_gradient(const struct train_local *L, const float *w)
{
	train_sample_batch(L->shard, 0, L->shard->n, L->batch, L->rng, L->x, L->y);
	return mlp_grad(L->shape, w, L->x, L->y, L->batch, L->u);
}

double train_local_step(struct train_local *L, float *wr)
{
	double ts = clock_real_s();

	L->aborted = 0;
	L->wait_err = 0;
	L->loss = train_local_gradient(L, wr);
	if (L->loss < 0)
		return -1;
	/* the emulated compute: compute_min (slept now, or with a wait part of it below), then the
	 * slowdown */
	double elapsed = clock_real_s() - ts;
	double compute_s = L->wait ? (elapsed > L->compute_min ? elapsed : L->compute_min)
				   : train_compute_pad(ts, L->compute_min);
	double factor = train_local_slowdown(L);
	L->straggled += factor > 1;
	if (L->wait) {
		int w = L->wait(L->wait_ctx, ts + compute_s * factor);
		L->wait_err = w < 0 ? w : 0;
		if (w == 1) {
			double took = clock_real_s() - ts;
			L->aborted = 1;
			L->n_aborted++;
			L->aborted_s += took;
			return took;
		}
	} else
		train_straggle_sleep(compute_s, factor);
	vec_scale_f32(L->u, (float)-L->lr, L->n);
	vec_add_f32(wr, L->u, L->n);
	double took = clock_real_s() - ts;
	L->busy += took;
	L->steps++;
	return took;
}

double train_local_delta(const float *copy, const float *w, double scale, float *delta, size_t n)
{
	for (size_t j = 0; j < n; j++)
		delta[j] = (copy[j] - w[j]) * (float)scale;
	return vec_norm2_f32(delta, n);
}
