/* _mlfabric.c - the CPython extension under the mlfabric package (docs/python.md): a thin,
 * copy-free wrapper of libmlfabric (include/mlfabric/mlfabric.h, the paper's Table-1 API, §4).
 *
 * One type, _mlfabric.Handle, owns one endpoint (mlf_t). Its methods take the server host
 * explicitly; the Python class mlfabric.Endpoint (__init__.py) adds the defaults of the
 * cluster file. Vectors are float32 buffers (buffer protocol, C-contiguous, format 'f'):
 * numpy arrays, torch tensors' .numpy(), array.array('f'), memoryviews; they are passed to
 * the library in place, never copied here.
 *
 * Threads: the GIL is released around every call that may block (open, close, get, push_get,
 * send_model, registrations). The library calls the server callbacks on its event thread;
 * they take the GIL (PyGILState_Ensure) and receive memoryviews of the library's buffers,
 * valid only during the call. A handle is used by one Python thread at a time (the library's
 * rule): a second thread calling a blocking method while one is running gets mlfabric.Error
 * (EBUSY) instead of racing; close() while a call runs is refused the same way.
 *
 * Errors: mlfabric.Error (a subclass of OSError: .errno, .strerror = the library's one-line
 * text, mlf_error() or the mlf_open error). Wrong buffer types raise TypeError naming float32.
 *
 * Files: this one holds the type, its methods and the module; the batch of gets in the
 * background (gets_start / gets_add / gets_wait) is _mlfabric_gets.c; what both use (the
 * Handle object, mlfabric.Error, the busy guard, float32 buffers) is _mlfabric_common.c, declared
 * in _mlfabric_int.h.
 */
#include "_mlfabric_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <mlfabric/mlfabric.h>
#include <mlfabric/mlfabric_sync.h>

/* Raise the endpoint's last error (mlf_error) for return code @rc; returns NULL. */
static PyObject *raise_handle(HandleObject *h, long long rc)
{
	return raise_mlf((int)(rc < 0 ? -rc : rc), h->f ? mlf_error(h->f) : "");
}

/* ---- Handle(cluster, host, mode="mlfabric-a", sock=None, timeout_s=10.0) ------------------ */

static int Handle_init(HandleObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "cluster", "host", "mode", "sock", "timeout_s", NULL };
	const char *cluster, *host, *mode = "mlfabric-a", *sock = NULL;
	double timeout_s = 10.0;
	struct mlf_opts o;
	char err[512] = "";
	mlf_t *f;
	int e;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|szd", kwlist, &cluster, &host, &mode, &sock, &timeout_s))
		return -1;
	if (self->f) {
		raise_mlf(EISCONN, "Handle is already open");
		return -1;
	}
	memset(&o, 0, sizeof(o));
	if (mlf_mode_parse(mode, &o.mode) < 0) {
		char msg[300];
		snprintf(msg, sizeof(msg), "unknown mode '%s' (mlfabric-a, mlfabric-s, async)", mode);
		raise_mlf(EINVAL, msg);
		return -1;
	}
	if (!(timeout_s > 0)) {
		raise_mlf(EINVAL, "timeout_s must be > 0 seconds");
		return -1;
	}
	o.cluster = cluster;
	o.host = host;
	o.sock = sock;
	o.timeout_s = timeout_s;
	Py_BEGIN_ALLOW_THREADS
	f = mlf_open(&o, err, sizeof(err));
	e = errno;
	Py_END_ALLOW_THREADS
	if (!f) {
		/* a dataplane that did not accept within the timeout: ETIMEDOUT, as for other waits */
		raise_mlf(e == ETIMEDOUT ? ETIMEDOUT : ENOTCONN, err);
		return -1;
	}
	self->f = f;
	return 0;
}

/* Close the endpoint (GIL released: mlf_close waits for pending pushes, at most the timeout). */
static PyObject *Handle_close(HandleObject *self, PyObject *unused)
{
	mlf_t *f = self->f;

	if (!f)
		Py_RETURN_NONE;
	if (self->pushing)
		return raise_mlf(EBUSY, "cannot close the mlfabric endpoint: another thread is in a call on it");
	gets_reap(self); /* background gets end first (each bounded by its timeout) */
	if (self->busy || self->peeking || self->pushing)
		return raise_mlf(EBUSY, "cannot close the mlfabric endpoint: another thread is in a call on it");
	self->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	mlf_close(f);
	Py_END_ALLOW_THREADS
	self->f = NULL;
	self->busy = 0;
	/* the event thread is gone: no callback can run any more */
	Py_CLEAR(self->on_update);
	Py_CLEAR(self->on_request);
	Py_RETURN_NONE;
}

static void Handle_dealloc(HandleObject *self)
{
	gets_reap(self);
	if (self->f) {
		mlf_t *f = self->f;
		self->f = NULL;
		Py_BEGIN_ALLOW_THREADS
		mlf_close(f);
		Py_END_ALLOW_THREADS
	}
	Py_CLEAR(self->on_update);
	Py_CLEAR(self->on_request);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Handle_error(HandleObject *self, PyObject *unused)
{
	return PyUnicode_FromString(self->f ? mlf_error(self->f) : "");
}

static PyObject *Handle_role(HandleObject *self, PyObject *unused)
{
	const char *r = "";

	if (self->f) {
		self->peeking++;
		Py_BEGIN_ALLOW_THREADS /* mlf_role may take the endpoint's lock */
		r = mlf_role(self->f);
		Py_END_ALLOW_THREADS
		self->peeking--;
	}
	return PyUnicode_FromString(r);
}

static PyObject *Handle_closed(HandleObject *self, void *unused) { return PyBool_FromLong(self->f == NULL); }

/* last_get_times: (began, ended) of the get the last gets_wait returned, CLOCK_REALTIME seconds
 * (time.time()), as its background thread saw them (MLF_TRACE timelines, docs/python.md). */
static PyObject *Handle_last_get_times(HandleObject *self, void *unused)
{
	return Py_BuildValue("(dd)", self->get_t[0], self->get_t[1]);
}

/* ---- worker ----------------------------------------------------------------------------- */

static PyObject *Handle_register_as_worker(HandleObject *self, PyObject *args)
{
	const char *server;
	int rc;

	if (!PyArg_ParseTuple(args, "s", &server) || handle_enter(self) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = mlf_register_as_worker(self->f, server);
	Py_END_ALLOW_THREADS
	handle_leave(self);
	if (rc < 0)
		return raise_handle(self, rc);
	Py_RETURN_NONE;
}

/* push(server, update, norm, version) -> update id. mlf_push copies and returns at once. */
static PyObject *Handle_push(HandleObject *self, PyObject *args)
{
	const char *server;
	PyObject *obj;
	double norm;
	long long version;
	Py_buffer u;
	int64_t rc;

	if (!PyArg_ParseTuple(args, "sOdL", &server, &obj, &norm, &version) || get_f32(obj, &u, 0, "update") < 0)
		return NULL;
	/* beside a batch of gets (which holds busy) one push at a time may run: mlf_push is safe
	 * beside a waiting mlf_get (include/mlfabric/mlfabric.h "Threads") */
	int beside = self->f && self->gets && !self->pushing;
	if (beside)
		self->pushing = 1;
	else if (handle_enter(self) < 0) {
		PyBuffer_Release(&u);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = mlf_push(self->f, server, u.buf, (size_t)(u.len / 4), norm, version);
	Py_END_ALLOW_THREADS
	if (beside)
		self->pushing = 0;
	else
		handle_leave(self);
	PyBuffer_Release(&u);
	if (rc < 0)
		return raise_handle(self, rc);
	return PyLong_FromLongLong(rc);
}

/* get(server, out, timeout_s) -> version; fills @out in place. */
static PyObject *Handle_get(HandleObject *self, PyObject *args)
{
	const char *server;
	PyObject *obj;
	double timeout_s;
	Py_buffer m;
	int64_t version = 0;
	int rc;

	if (!PyArg_ParseTuple(args, "sOd", &server, &obj, &timeout_s) || get_f32(obj, &m, 1, "out") < 0)
		return NULL;
	if (handle_enter(self) < 0) {
		PyBuffer_Release(&m);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = mlf_get(self->f, server, m.buf, (size_t)(m.len / 4), &version, timeout_s);
	Py_END_ALLOW_THREADS
	handle_leave(self);
	PyBuffer_Release(&m);
	if (rc < 0)
		return raise_handle(self, rc);
	return PyLong_FromLongLong(version);
}

/* push_get(server, update, norm, version, out, timeout_s) -> new version (MLfabric-S, §6). */
static PyObject *Handle_push_get(HandleObject *self, PyObject *args)
{
	const char *server;
	PyObject *uo, *mo;
	double norm, timeout_s;
	long long version;
	Py_buffer u, m;
	int64_t nv = 0;
	int rc;

	if (!PyArg_ParseTuple(args, "sOdLOd", &server, &uo, &norm, &version, &mo, &timeout_s) ||
	    get_f32(uo, &u, 0, "update") < 0)
		return NULL;
	if (get_f32(mo, &m, 1, "out") < 0) {
		PyBuffer_Release(&u);
		return NULL;
	}
	if (handle_enter(self) < 0) {
		PyBuffer_Release(&u);
		PyBuffer_Release(&m);
		return NULL;
	}
	if (u.len != m.len) {
		handle_leave(self);
		PyBuffer_Release(&u);
		PyBuffer_Release(&m);
		return raise_mlf(EINVAL, "push_get: update and out differ in size");
	}
	Py_BEGIN_ALLOW_THREADS
	rc = mlf_push_get(self->f, server, u.buf, (size_t)(u.len / 4), norm, version, m.buf, &nv, timeout_s);
	Py_END_ALLOW_THREADS
	handle_leave(self);
	PyBuffer_Release(&u);
	PyBuffer_Release(&m);
	if (rc < 0)
		return raise_handle(self, rc);
	return PyLong_FromLongLong(nv);
}

/*
 * Send a whole float32 vector to @host, returning None or raising: send_model(server, model,
 * version, timeout_s), the initial model (mlf_send_model; @peer 0), or peer_send(host, data,
 * tag) to a peer endpoint (mlf_peer_send, copied; @peer 1).
 */
static PyObject *send_vector(HandleObject *self, PyObject *args, int peer)
{
	const char *host;
	PyObject *obj;
	long long version;
	double timeout_s = 0;
	Py_buffer w;
	int rc;

	if (!(peer ? PyArg_ParseTuple(args, "sOL", &host, &obj, &version)
		   : PyArg_ParseTuple(args, "sOLd", &host, &obj, &version, &timeout_s)) ||
	    get_f32(obj, &w, 0, peer ? "data" : "model") < 0)
		return NULL;
	if (handle_enter(self) < 0) {
		PyBuffer_Release(&w);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = peer ? mlf_peer_send(self->f, host, w.buf, (size_t)(w.len / 4), version)
		  : mlf_send_model(self->f, host, w.buf, (size_t)(w.len / 4), version, timeout_s);
	Py_END_ALLOW_THREADS
	handle_leave(self);
	PyBuffer_Release(&w);
	if (rc < 0)
		return raise_handle(self, rc);
	Py_RETURN_NONE;
}

static PyObject *Handle_send_model(HandleObject *self, PyObject *args) { return send_vector(self, args, 0); }

/* stats() -> dict(pushed, sent, dropped, aggregated, models, push_buffers, push_buffers_reused).
 * Takes only the endpoint's mutex. */
static PyObject *Handle_stats(HandleObject *self, PyObject *unused)
{
	struct mlf_worker_stats s;
	struct mlf_push_buffers pb;

	if (!self->f)
		return raise_mlf(ENOTCONN, "the mlfabric endpoint is closed");
	self->peeking++;
	Py_BEGIN_ALLOW_THREADS /* the endpoint's lock: never wait for it holding the GIL */
	mlf_get_worker_stats(self->f, &s);
	mlf_get_push_buffers(self->f, &pb);
	Py_END_ALLOW_THREADS
	self->peeking--;
	return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "pushed", (unsigned long long)s.pushed, "sent",
			     (unsigned long long)s.sent, "dropped", (unsigned long long)s.dropped, "aggregated",
			     (unsigned long long)s.aggregated, "models", (unsigned long long)s.models,
			     "push_buffers", (unsigned long long)pb.allocated, "push_buffers_reused",
			     (unsigned long long)pb.reused);
}

/* ---- server ----------------------------------------------------------------------------- */

/* A float32 memoryview of @n floats at @p (read-only unless @writable); NULL + exception. */
static PyObject *f32_view(const float *p, size_t n, int writable)
{
	static char fmt[] = "f";
	Py_ssize_t shape[1] = { (Py_ssize_t)n };
	Py_buffer b;

	memset(&b, 0, sizeof(b));
	b.buf = (void *)p;
	b.len = (Py_ssize_t)(n * 4);
	b.readonly = !writable;
	b.itemsize = 4;
	b.format = fmt;
	b.ndim = 1;
	b.shape = shape; /* copied by the memoryview */
	return PyMemoryView_FromBuffer(&b);
}

/* End the life of a callback's memoryview (the library's buffer is gone after the call). */
static void view_release(PyObject *mv)
{
	PyObject *r = PyObject_CallMethod(mv, "release", NULL);

	if (!r) /* still exported by the callback (e.g. np.frombuffer kept): cannot invalidate */
		PyErr_Clear();
	Py_XDECREF(r);
	Py_DECREF(mv);
}

/* Report an exception of a callback on stderr; the library gets @fallback (the last version). */
static int64_t callback_failed(const char *which, int64_t fallback)
{
	fprintf(stderr, "mlfabric: the server's %s callback raised an exception:\n", which);
	PyErr_Print();
	return fallback;
}

/* The version the callback returned, or -1 with an exception set. */
static int64_t callback_version(PyObject *r)
{
	long long v;

	if (!r)
		return -1;
	v = PyLong_AsLongLong(r);
	Py_DECREF(r);
	if (v == -1 && PyErr_Occurred())
		return -1;
	return v;
}

/* Event thread: on_update(u: memoryview float32 read-only, info: dict) -> new version. */
static int64_t py_on_update(void *arg, const struct mlf_update *u)
{
	HandleObject *h = arg;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *mv, *info = NULL, *parts, *r = NULL;
	int64_t v = -1;
	uint32_t np = u->hdr ? u->hdr->n_parts : 0;

	mv = f32_view(u->u, u->n, 0);
	parts = PyList_New(0);
	for (uint32_t i = 0; parts && i < np && i < MLF_UPDATE_MAX_PARTS; i++) {
		PyObject *t = Py_BuildValue("(KL)", (unsigned long long)u->hdr->parts[i].id,
					    (long long)u->hdr->parts[i].version);
		if (!t || PyList_Append(parts, t) < 0)
			Py_CLEAR(parts);
		Py_XDECREF(t);
	}
	if (mv && parts)
		info = Py_BuildValue("{s:K,s:s,s:O,s:L}", "xfer", (unsigned long long)u->xfer, "src",
				     u->src ? u->src : "", "parts", parts, "version",
				     (long long)(u->hdr ? u->hdr->version : 0));
	if (info)
		r = PyObject_CallFunctionObjArgs(h->on_update, mv, info, NULL);
	v = callback_version(r);
	if (v < 0 && PyErr_Occurred())
		v = callback_failed("on_update", h->version); /* the model is as before */
	h->version = v;
	Py_XDECREF(info);
	Py_XDECREF(parts);
	if (mv)
		view_release(mv);
	PyGILState_Release(g);
	return v;
}

/* Event thread: on_request(model: writable memoryview float32) -> version of what it wrote. */
static int64_t py_on_request(void *arg, float *model, size_t n)
{
	HandleObject *h = arg;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *mv = f32_view(model, n, 1), *r = NULL;
	int64_t v;

	if (mv)
		r = PyObject_CallFunctionObjArgs(h->on_request, mv, NULL);
	v = callback_version(r);
	if (v < 0 && PyErr_Occurred())
		v = callback_failed("on_request", h->version);
	h->version = v;
	if (mv)
		view_release(mv);
	PyGILState_Release(g);
	return v;
}

/* register_as_server(n, on_update, on_request, tau_max, momentum, n_workers, version0). */
static PyObject *Handle_register_as_server(HandleObject *self, PyObject *args)
{
	Py_ssize_t n;
	PyObject *on_update, *on_request;
	long long tau_max, version0;
	double momentum;
	int n_workers, rc;
	struct mlf_params p;

	if (!PyArg_ParseTuple(args, "nOOLdiL", &n, &on_update, &on_request, &tau_max, &momentum, &n_workers,
			      &version0))
		return NULL;
	if (!PyCallable_Check(on_update) || !PyCallable_Check(on_request))
		return PyErr_Format(PyExc_TypeError, "on_update and on_request must be callable");
	if (n <= 0)
		return raise_mlf(EINVAL, "register_server: the model size n must be > 0 floats");
	if (self->on_update)
		return raise_mlf(EISCONN, "register_server: this endpoint already serves a model");
	if (handle_enter(self) < 0)
		return NULL;
	Py_INCREF(on_update);
	Py_INCREF(on_request);
	self->on_update = on_update;
	self->on_request = on_request;
	self->version = version0;
	memset(&p, 0, sizeof(p));
	p.tau_max = tau_max;
	p.momentum = momentum;
	p.n_workers = n_workers;
	Py_BEGIN_ALLOW_THREADS
	rc = mlf_register_as_server(self->f, &p, (size_t)n, version0, py_on_update, py_on_request, self);
	Py_END_ALLOW_THREADS
	handle_leave(self);
	if (rc < 0) {
		Py_CLEAR(self->on_update);
		Py_CLEAR(self->on_request);
		return raise_handle(self, rc);
	}
	Py_RETURN_NONE;
}

/* Call the registration @reg(f) with the GIL released; None, or Error with mlf_error(). */
static PyObject *handle_register(HandleObject *self, int (*reg)(mlf_t *))
{
	int rc;

	if (handle_enter(self) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = reg(self->f);
	Py_END_ALLOW_THREADS
	handle_leave(self);
	if (rc < 0)
		return raise_handle(self, rc);
	Py_RETURN_NONE;
}

static PyObject *Handle_register_as_aggregator(HandleObject *self, PyObject *unused)
{
	return handle_register(self, mlf_register_as_aggregator);
}

/* ---- peer channel (docs/python.md "Collectives": allreduce and the broadcasts) ----------- */

static PyObject *Handle_register_as_peer(HandleObject *self, PyObject *unused)
{
	return handle_register(self, mlf_register_as_peer);
}

/* peer_send(host, data, tag): float32 buffer @data to the peer endpoint on @host (copied). */
static PyObject *Handle_peer_send(HandleObject *self, PyObject *args) { return send_vector(self, args, 1); }

/* peer_recv(timeout_s) -> (from host, tag, bytes of the float32 data), or None on timeout. */
static PyObject *Handle_peer_recv(HandleObject *self, PyObject *args)
{
	struct mlf_peer_msg m;
	double timeout_s;
	PyObject *r;
	int rc;

	if (!PyArg_ParseTuple(args, "d", &timeout_s) || handle_enter(self) < 0)
		return NULL;
	memset(&m, 0, sizeof(m));
	Py_BEGIN_ALLOW_THREADS
	rc = mlf_peer_recv(self->f, &m, timeout_s);
	Py_END_ALLOW_THREADS
	handle_leave(self);
	if (rc == -ETIMEDOUT)
		Py_RETURN_NONE;
	if (rc < 0)
		return raise_handle(self, rc);
	r = Py_BuildValue("(sLy#)", m.from, (long long)m.iter, m.w ? (const char *)m.w : "",
			  (Py_ssize_t)(m.token ? 0 : m.n * sizeof(float)));
	free(m.w);
	return r;
}

/* ---- type and module -------------------------------------------------------------------- */

static PyMethodDef Handle_methods[] = {
	{ "close", (PyCFunction)Handle_close, METH_NOARGS, "close() - mlf_close (idempotent; waits for pending pushes)" },
	{ "error", (PyCFunction)Handle_error, METH_NOARGS, "error() -> str - mlf_error, the last error text" },
	{ "role", (PyCFunction)Handle_role, METH_NOARGS, "role() -> str - mlf_role ('' before registering)" },
	{ "register_as_worker", (PyCFunction)Handle_register_as_worker, METH_VARARGS,
	  "register_as_worker(server) - mlf_register_as_worker" },
	{ "register_as_server", (PyCFunction)Handle_register_as_server, METH_VARARGS,
	  "register_as_server(n, on_update, on_request, tau_max, momentum, n_workers, version0)" },
	{ "register_as_aggregator", (PyCFunction)Handle_register_as_aggregator, METH_NOARGS,
	  "register_as_aggregator() - mlf_register_as_aggregator" },
	{ "push", (PyCFunction)Handle_push, METH_VARARGS, "push(server, update, norm, version) -> update id" },
	{ "get", (PyCFunction)Handle_get, METH_VARARGS, "get(server, out, timeout_s) -> model version" },
	{ "push_get", (PyCFunction)Handle_push_get, METH_VARARGS,
	  "push_get(server, update, norm, version, out, timeout_s) -> model version" },
	{ "send_model", (PyCFunction)Handle_send_model, METH_VARARGS,
	  "send_model(server, model, version, timeout_s) - mlf_send_model" },
	{ "stats", (PyCFunction)Handle_stats, METH_NOARGS, "stats() -> dict of the worker counters" },
	{ "gets_start", (PyCFunction)Handle_gets_start, METH_VARARGS,
	  "gets_start([(server, out), ...], timeout_s, total=0, chain=False) - get each model on a thread of its own "
	  "(total: the batch's size when more come by gets_add; chain: each get begins when the one before it ended)" },
	{ "gets_add", (PyCFunction)Handle_gets_add, METH_VARARGS,
	  "gets_add(server, out) -> k - the running batch's next get" },
	{ "gets_wait", (PyCFunction)Handle_gets_wait, METH_VARARGS, "gets_wait(k) -> version of get k" },
	{ "register_as_peer", (PyCFunction)Handle_register_as_peer, METH_NOARGS,
	  "register_as_peer() - mlf_register_as_peer (mode async)" },
	{ "peer_send", (PyCFunction)Handle_peer_send, METH_VARARGS, "peer_send(host, data, tag) - mlf_peer_send" },
	{ "peer_recv", (PyCFunction)Handle_peer_recv, METH_VARARGS,
	  "peer_recv(timeout_s) -> (host, tag, bytes) or None on timeout - mlf_peer_recv" },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef Handle_getset[] = {
	{ "closed", (getter)Handle_closed, NULL, "True once closed", NULL },
	{ "last_get_times", (getter)Handle_last_get_times, NULL,
	  "(began, ended) of the background get the last gets_wait returned, time.time() seconds", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject HandleType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "mlfabric._mlfabric.Handle",
	.tp_doc = "Handle(cluster, host, mode='mlfabric-a', sock=None, timeout_s=10.0) - one libmlfabric endpoint (mlf_open)",
	.tp_basicsize = sizeof(HandleObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)Handle_init,
	.tp_dealloc = (destructor)Handle_dealloc,
	.tp_methods = Handle_methods,
	.tp_getset = Handle_getset,
};

static struct PyModuleDef mlfabric_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "mlfabric._mlfabric",
	.m_doc = "libmlfabric bindings (include/mlfabric/mlfabric.h); use the mlfabric package, not this module",
	.m_size = -1,
};

PyMODINIT_FUNC PyInit__mlfabric(void)
{
	PyObject *m;

	if (PyType_Ready(&HandleType) < 0)
		return NULL;
	if (!(m = PyModule_Create(&mlfabric_module)))
		return NULL;
	MlfError = PyErr_NewExceptionWithDoc("mlfabric.Error",
					     "An MLfabric failure: .errno, .strerror = the library's one-line message",
					     PyExc_OSError, NULL);
	if (!MlfError || PyModule_AddObject(m, "Error", MlfError) < 0) {
		Py_XDECREF(MlfError);
		Py_DECREF(m);
		return NULL;
	}
	Py_INCREF(MlfError); /* the module's reference was stolen; keep ours */
	Py_INCREF(&HandleType);
	if (PyModule_AddObject(m, "Handle", (PyObject *)&HandleType) < 0) {
		Py_DECREF(&HandleType);
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
