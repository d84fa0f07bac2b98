/* fabric_pool.c - a worker's push buffers kept for reuse (docs/api.md "Push buffers"): a memfd
 * handed to the dataplane comes back to the endpoint's pool when the dataplane reports the
 * transfer ended (its SENT event: the dataplane unmaps it then, docs/dataplane.md "App socket
 * trust"), so the next push of the same size writes into pages that already exist instead of
 * creating a memfd and faulting in a fresh zeroed page per 4 KiB (about 4 ms per 4 MB group on
 * the critical path of an overlapped iteration, docs/results/torch.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_int.h"

/* A buffer in the pool: free (xfer 0) or mapped by the dataplane for transfer @xfer. */
struct fabric_pooled {
	struct mlfabric_buf buf;
	uint64_t xfer;
	struct fabric_pooled *next;
};

/* Drops the free buffers beyond FABRIC_POOL_FREE_MAX of them or FABRIC_POOL_FREE_BYTES in all,
 * the oldest (last in the list) first; caller holds the lock. Returns them in a list to release
 * outside the lock. */
static struct fabric_pooled *trim(struct mlf *f)
{
	struct fabric_pooled **p = &f->pool.free, *out = NULL;
	size_t n = 0, bytes = 0;

	while (*p) {
		struct fabric_pooled *e = *p;
		if (n < FABRIC_POOL_FREE_MAX && bytes + e->buf.size <= FABRIC_POOL_FREE_BYTES) {
			n++;
			bytes += e->buf.size;
			p = &e->next;
			continue;
		}
		*p = e->next;
		e->next = out;
		out = e;
	}
	return out;
}

static void release_list(struct fabric_pooled *e)
{
	while (e) {
		struct fabric_pooled *next = e->next;
		mlfabric_buf_free(&e->buf);
		free(e);
		e = next;
	}
}

int fabric_pool_take(struct mlf *f, size_t size, struct mlfabric_buf *b)
{
	struct fabric_pooled **p, *e = NULL;
	int rc;

	pthread_mutex_lock(&f->lock);
	for (p = &f->pool.free; *p; p = &(*p)->next)
		if ((*p)->buf.size == size) {
			e = *p;
			*p = e->next;
			break;
		}
	if (e)
		f->pool.reused++;
	pthread_mutex_unlock(&f->lock);
	if (e) {
		*b = e->buf;
		free(e);
		memset(b->data, 0, MLF_PAYLOAD_HDR < size ? MLF_PAYLOAD_HDR : size); /* a fresh header */
		return 0;
	}
	rc = mlfabric_buf_alloc(size, b);
	if (rc == 0) {
		pthread_mutex_lock(&f->lock);
		f->pool.allocated++;
		pthread_mutex_unlock(&f->lock);
	}
	return rc;
}

/* Puts @b (taken by fabric_pool_take) in the pool as in flight for @xfer, or free when @xfer is 0. */
static void pool_put(struct mlf *f, struct mlfabric_buf *b, uint64_t xfer)
{
	struct fabric_pooled *e = calloc(1, sizeof(*e)), *gone = NULL;

	if (!e) { /* no room to remember it: it goes (the dataplane keeps its own mapping) */
		mlfabric_buf_free(b);
		return;
	}
	e->buf = *b;
	e->xfer = xfer;
	pthread_mutex_lock(&f->lock);
	if (xfer) {
		e->next = f->pool.busy;
		f->pool.busy = e;
	} else {
		e->next = f->pool.free;
		f->pool.free = e;
		gone = trim(f);
	}
	pthread_mutex_unlock(&f->lock);
	release_list(gone);
	memset(b, 0, sizeof(*b));
	b->fd = -1;
}

void fabric_pool_sent(struct mlf *f, struct mlfabric_buf *b, uint64_t xfer)
{
	if (xfer)
		pool_put(f, b, xfer);
	else
		mlfabric_buf_free(b);
}

void fabric_pool_give_back(struct mlf *f, struct mlfabric_buf *b)
{
	pool_put(f, b, 0);
}

int fabric_pool_done(struct mlf *f, uint64_t xfer, int handed_over)
{
	struct fabric_pooled **p, *e = NULL, *gone;

	pthread_mutex_lock(&f->lock);
	for (p = &f->pool.busy; *p; p = &(*p)->next)
		if ((*p)->xfer == xfer) {
			e = *p;
			*p = e->next;
			break;
		}
	if (e && handed_over) {
		e->next = NULL; /* the local listener holds the same memfd: never written again */
	} else if (e) {
		e->xfer = 0;
		e->next = f->pool.free;
		f->pool.free = e;
	}
	gone = trim(f);
	if (e && handed_over) {
		e->next = gone;
		gone = e;
	}
	pthread_mutex_unlock(&f->lock);
	release_list(gone);
	return e != NULL;
}

void mlf_get_push_buffers(mlf_t *f, struct mlf_push_buffers *s)
{
	pthread_mutex_lock(&f->lock);
	s->allocated = f->pool.allocated;
	s->reused = f->pool.reused;
	pthread_mutex_unlock(&f->lock);
}

void fabric_pool_release(struct mlf *f)
{
	release_list(f->pool.free);
	release_list(f->pool.busy);
	f->pool.free = f->pool.busy = NULL;
}
