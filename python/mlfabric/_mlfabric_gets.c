/* _mlfabric_gets.c - Handle.gets_start / gets_add / gets_wait of the CPython extension
 * _mlfabric: the gets of one batch, each made by a thread of its own while Python goes on
 * (docs/python.md "Overlap"). */
#include "_mlfabric_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct get_batch;

/**
 * One get of gets_start or gets_add: @server's model into @out, made by a thread of its own
 * (@thread, @started once it runs); @rc, @version, @err and @finished (under the batch's @mu)
 * once done; @t_start/@t_end: CLOCK_REALTIME seconds the get began and ended (last_get_times).
 */
struct get_job {
	char server[64];
	Py_buffer out;
	int64_t version;
	int rc;
	char err[256];
	double t_start, t_end;
	int finished, started;
	pthread_t thread;
	struct get_batch *b;
};

/**
 * The gets of one gets_start, each on a thread of its own while Python goes on, so that the
 * gets of several servers overlap (the library takes up to FABRIC_GETS_MAX at once in direct
 * mode and makes them one at a time with a scheduler; docs/python.md "Overlap"), or, with
 * @chain, one after another in the order given (a prefetch: the first model whole first). @cap: gets
 * the batch will hold (@jobs' size); @n: gets given so far (gets_start's list, then one per
 * gets_add). Changes of a job's @finished under @mu, signalled on @cv. @waiters: gets_wait
 * calls blocked on it (under the GIL); a batch reaped while some wait is @orphan and freed by
 * the last of them.
 */
struct get_batch {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	mlf_t *f;
	double timeout_s;
	struct get_job *jobs;
	int cap, n;
	int chain;            /* each get begins only once the one before it ended (gets_start's chain) */
	int waiters, orphan;
};

/* CLOCK_REALTIME in seconds (Python's time.time(); the servers' records use the same clock). */
static double now_real_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *get_job_thread(void *arg)
{
	struct get_job *j = arg;
	struct get_batch *b = j->b;
	int64_t v = 0;
	int rc;

	if (b->chain && j > b->jobs) { /* the get before it ends first (its slot exists: @jobs holds @cap) */
		pthread_mutex_lock(&b->mu);
		while (!j[-1].finished)
			pthread_cond_wait(&b->cv, &b->mu);
		pthread_mutex_unlock(&b->mu);
	}
	j->t_start = now_real_s();
	rc = mlf_get(b->f, j->server, j->out.buf, (size_t)(j->out.len / 4), &v, b->timeout_s);
	pthread_mutex_lock(&b->mu);
	j->t_end = now_real_s();
	j->rc = rc;
	j->version = v;
	if (rc < 0)
		snprintf(j->err, sizeof(j->err), "%s", mlf_error(b->f));
	j->finished = 1;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

/* Start job @k of @b (its server and buffer set) on a thread; a thread that cannot start makes
 * the job finish with -EAGAIN. */
static void get_job_start(struct get_batch *b, int k)
{
	struct get_job *j = &b->jobs[k];

	j->b = b;
	if (pthread_create(&j->thread, NULL, get_job_thread, j) == 0) {
		j->started = 1;
		return;
	}
	pthread_mutex_lock(&b->mu);
	j->rc = -EAGAIN;
	snprintf(j->err, sizeof(j->err), "get from %s: cannot start a thread", j->server);
	j->finished = 1;
	pthread_mutex_unlock(&b->mu);
}

/* Free batch @b (its threads gone): release its buffers, its lock, its memory. */
static void batch_free(struct get_batch *b)
{
	for (int i = 0; i < b->n; i++)
		PyBuffer_Release(&b->jobs[i].out);
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
	free(b->jobs);
	free(b);
}

/* Wait for the batch's threads (GIL released), free the batch, clear busy. */
void gets_reap(HandleObject *h)
{
	struct get_batch *b = h->gets;

	if (!b)
		return;
	/* detached before the GIL is released for the join: another thread's gets_wait, gets_add
	 * or push must not find the batch being freed (busy stays set until it is gone) */
	h->gets = NULL;
	Py_BEGIN_ALLOW_THREADS
	for (int i = 0; i < b->n; i++)
		if (b->jobs[i].started)
			pthread_join(b->jobs[i].thread, NULL);
	Py_END_ALLOW_THREADS
	if (b->waiters)
		b->orphan = 1; /* another thread's gets_wait still uses it: it frees it */
	else
		batch_free(b);
	h->busy = 0;
}

/*
 * gets_start([(server, out), ...], timeout_s, total=0, chain=False): start getting each server's
 * model into its writable float32 buffer, each on a thread of its own (they overlap; with @chain
 * each begins when the one before it, in the order given, ended); with @total above the list's length the
 * batch waits for the rest, given one by one with gets_add (a group's get as soon as its update
 * is pushed). The endpoint stays busy (other calls get EBUSY, except push) until gets_wait has
 * seen the last one (or a failure).
 */
PyObject *Handle_gets_start(HandleObject *self, PyObject *args)
{
	PyObject *list, *seq = NULL;
	double timeout_s;
	struct get_batch *b;
	Py_ssize_t n, total = 0;
	int chain = 0;

	if (!PyArg_ParseTuple(args, "Od|np", &list, &timeout_s, &total, &chain) ||
	    !(seq = PySequence_Fast(list, "a list of (server, out)")))
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	if (total < n)
		total = n;
	if (total < 1 || total > 4096 || handle_enter(self) < 0) {
		Py_DECREF(seq);
		return total < 1 ? raise_mlf(EINVAL, "gets_start: no gets") :
		       total > 4096 ? raise_mlf(EINVAL, "gets_start: more than 4096 gets in one batch") : NULL;
	}
	b = calloc(1, sizeof(*b));
	if (b)
		b->jobs = calloc((size_t)total, sizeof(*b->jobs));
	if (!b || !b->jobs) {
		free(b);
		handle_leave(self);
		Py_DECREF(seq);
		return PyErr_NoMemory();
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		const char *server;
		PyObject *out;

		if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "sO", &server, &out) ||
		    get_f32(out, &b->jobs[i].out, 1, "out") < 0) {
			while (--i >= 0)
				PyBuffer_Release(&b->jobs[i].out);
			free(b->jobs);
			free(b);
			handle_leave(self);
			Py_DECREF(seq);
			return NULL;
		}
		snprintf(b->jobs[i].server, sizeof(b->jobs[i].server), "%s", server);
	}
	Py_DECREF(seq);
	b->n = (int)n;
	b->cap = (int)total;
	b->chain = chain;
	b->f = self->f;
	b->timeout_s = timeout_s;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	for (int i = 0; i < b->n; i++)
		get_job_start(b, i);
	self->gets = b; /* busy stays set */
	Py_RETURN_NONE;
}

/* gets_add(server, out) -> k: give the running batch its next get (index k for gets_wait). */
PyObject *Handle_gets_add(HandleObject *self, PyObject *args)
{
	struct get_batch *b = self->gets;
	const char *server;
	PyObject *out;
	Py_buffer view;
	int k;

	if (!PyArg_ParseTuple(args, "sO", &server, &out))
		return NULL;
	if (!b)
		return raise_mlf(EINVAL, "gets_add: no batch of gets running (gets_start first)");
	k = b->n; /* only GIL-holding threads change it */
	if (k >= b->cap)
		return raise_mlf(EINVAL, "gets_add: the batch already holds all its gets");
	if (get_f32(out, &view, 1, "out") < 0)
		return NULL;
	b->jobs[k].out = view;
	snprintf(b->jobs[k].server, sizeof(b->jobs[k].server), "%s", server);
	b->n = k + 1;
	get_job_start(b, k);
	return PyLong_FromLong(k);
}

/* gets_wait(k) -> the version of get k (blocks, GIL released); the last one or a failure reaps. */
PyObject *Handle_gets_wait(HandleObject *self, PyObject *args)
{
	struct get_batch *b = self->gets;
	int k, rc;
	int64_t v;
	char err[256];

	if (!PyArg_ParseTuple(args, "i", &k))
		return NULL;
	if (!b || k < 0 || k >= b->n)
		return raise_mlf(EINVAL, "gets_wait: no such get running (or not given yet)");
	b->waiters++;
	Py_BEGIN_ALLOW_THREADS
	pthread_mutex_lock(&b->mu);
	while (!b->jobs[k].finished)
		pthread_cond_wait(&b->cv, &b->mu);
	pthread_mutex_unlock(&b->mu);
	Py_END_ALLOW_THREADS
	b->waiters--;
	rc = b->jobs[k].rc;
	v = b->jobs[k].version;
	self->get_t[0] = b->jobs[k].t_start;
	self->get_t[1] = b->jobs[k].t_end;
	snprintf(err, sizeof(err), "%s", b->jobs[k].err);
	if (b->orphan) { /* reaped by another thread while this one waited */
		if (!b->waiters)
			batch_free(b);
	} else if (rc < 0 || k == b->cap - 1) {
		gets_reap(self);
	}
	if (rc < 0)
		return raise_mlf(-rc, err);
	return PyLong_FromLongLong(v);
}
