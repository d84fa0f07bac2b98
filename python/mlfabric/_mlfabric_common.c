/* _mlfabric_common.c - what every method of the CPython extension _mlfabric uses (docs/python.md):
 * mlfabric.Error and its raising, the one-call-at-a-time guard of a Handle, float32 buffers. */
#include "_mlfabric_int.h"

#include <errno.h>
#include <string.h>

PyObject *MlfError;

PyObject *raise_mlf(int err, const char *text)
{
	PyObject *args;

	if (err < 0)
		err = -err;
	args = Py_BuildValue("(is)", err ? err : EIO, text && text[0] ? text : strerror(err ? err : EIO));
	if (args) {
		PyErr_SetObject(MlfError, args);
		Py_DECREF(args);
	}
	return NULL;
}

int handle_enter(HandleObject *h)
{
	if (!h->f) {
		raise_mlf(ENOTCONN, "the mlfabric endpoint is closed");
		return -1;
	}
	/* a push beside a batch of gets may outlive the batch (gets_wait reaps it and clears busy):
	 * until it returns, no other call (another push among them) may start beside it */
	if (h->busy || h->pushing) {
		raise_mlf(EBUSY, "the mlfabric endpoint is in use by another thread (one call at a time)");
		return -1;
	}
	h->busy = 1;
	return 0;
}

int get_f32(PyObject *obj, Py_buffer *view, int writable, const char *what)
{
	int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);

	if (PyObject_GetBuffer(obj, view, flags) < 0) {
		if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_BufferError) ||
		    PyErr_ExceptionMatches(PyExc_ValueError)) { /* numpy: "ndarray is not C-contiguous" */
			PyErr_Clear();
			PyErr_Format(PyExc_TypeError,
				     "%s must be a %sC-contiguous float32 buffer (numpy float32 array, "
				     "tensor.numpy(), array('f')), got %.100s",
				     what, writable ? "writable " : "", Py_TYPE(obj)->tp_name);
		}
		return -1;
	}
	/* struct codes: "f", "<f", "=f" on little-endian machines are all native float32 */
	const char *fmt = view->format ? view->format : "B";
	if (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@')
		fmt++;
	if (strcmp(fmt, "f") != 0 || view->itemsize != 4) {
		PyErr_Format(PyExc_TypeError, "%s must hold float32 (format 'f', itemsize 4), got format '%s' itemsize %zd",
			     what, view->format ? view->format : "B", view->itemsize);
		PyBuffer_Release(view);
		return -1;
	}
	return 0;
}
