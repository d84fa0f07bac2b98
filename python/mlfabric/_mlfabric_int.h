/* _mlfabric_int.h - what the C files of the CPython extension _mlfabric share (docs/python.md):
 * the Handle object, mlfabric.Error and its raising, the one-call-at-a-time guard, float32
 * buffers (_mlfabric_common.c), and the batch of gets in the background (_mlfabric_gets.c).
 * Calls go one way: _mlfabric.c -> _mlfabric_gets.c -> _mlfabric_common.c. */
#ifndef MLF_PY_MLFABRIC_INT_H
#define MLF_PY_MLFABRIC_INT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include <mlfabric/mlfabric.h>

/* the batch of Handle.gets_start (_mlfabric_gets.c) */
struct get_batch;

/**
 * One endpoint. @busy: a library call other than a getter runs with the GIL released (0/1, one
 * at a time); @peeking: getters (stats, role) running with the GIL released. close() waits for
 * neither: it refuses while either is non-zero.
 */
typedef struct {
	PyObject_HEAD
	mlf_t *f;
	int busy, peeking;
	int pushing;                      /* a push running beside gets_start's batch (which holds busy) */
	PyObject *on_update, *on_request; /* server callbacks (owned references) */
	int64_t version;                  /* server: the last version a callback returned */
	struct get_batch *gets;           /* gets_start's running batch (busy until it is reaped) */
	double get_t[2];                  /* the last get gets_wait returned: began, ended (realtime s) */
} HandleObject;

/* the extension's own names: not exported from its shared object */
#pragma GCC visibility push(hidden)

/* ---- _mlfabric_common.c ------------------------------------------------------------------ */

/* mlfabric.Error, created at import (PyInit__mlfabric) */
extern PyObject *MlfError;

/* Raise mlfabric.Error(err, text); returns NULL. */
PyObject *raise_mlf(int err, const char *text);

/* Check that @h is open and free; mark it busy (caller must call handle_leave). -1 + Error. */
int handle_enter(HandleObject *h);

/* Clear the busy mark handle_enter set. */
static inline void handle_leave(HandleObject *h) { h->busy = 0; }

/*
 * Get a float32 buffer of @obj (@what names the argument in errors); @writable for outputs.
 * Returns 0 with @view filled (release with PyBuffer_Release), -1 with TypeError/BufferError.
 */
int get_f32(PyObject *obj, Py_buffer *view, int writable, const char *what);

/* ---- _mlfabric_gets.c: gets in the background (docs/python.md "Overlap") ------------------ */

/* Wait for the batch's thread (GIL released), free the batch, clear busy. */
void gets_reap(HandleObject *h);

/*
 * gets_start([(server, out), ...], timeout_s, total=0): start getting each server's model into
 * its writable float32 buffer, in order, on a thread; with @total above the list's length the
 * batch waits for the rest, given one by one with gets_add (a group's get as soon as its update
 * is pushed). The endpoint stays busy (other calls get EBUSY, except push) until gets_wait has
 * seen the last one (or a failure).
 */
PyObject *Handle_gets_start(HandleObject *self, PyObject *args);

/* gets_add(server, out) -> k: give the running batch its next get (index k for gets_wait). */
PyObject *Handle_gets_add(HandleObject *self, PyObject *args);

/* gets_wait(k) -> the version of get k (blocks, GIL released); the last one or a failure reaps. */
PyObject *Handle_gets_wait(HandleObject *self, PyObject *args);

#pragma GCC visibility pop

#endif
