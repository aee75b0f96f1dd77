/* Deferred calls on a uv_idle handle; see defer.h. */
#include "common/defer.h"

#include <stdlib.h>

#include "common/alloc.h"

struct defer_call {
	eb__list     link;
	eb__defer_fn fn;
	void        *arg; /* borrowed */
};

static void
defer_idle_cb(uv_idle_t *h)
{
	eb__deferq *q = h->data;
	eb__list    batch;
	eb__list   *it;

	/* Run only what is queued now; calls queued by these callbacks wait
	 * for the next turn, so the loop keeps polling for I/O. */
	eb__list_init(&batch);
	if (!eb__list_empty(&q->calls)) {
		batch.next = q->calls.next;
		batch.prev = q->calls.prev;
		batch.next->prev = &batch;
		batch.prev->next = &batch;
		eb__list_init(&q->calls);
	}
	while ((it = eb__list_first(&batch)) != NULL) {
		struct defer_call *c =
		    EB_CONTAINER_OF(it, struct defer_call, link);

		eb__list_remove(it);
		if (!q->closing) {
			c->fn(c->arg);
		}
		free(c);
	}
	if (eb__list_empty(&q->calls) && !q->closing) {
		(void) uv_idle_stop(&q->idle);
	}
}

int
eb__deferq_init(uv_loop_t *loop, eb__deferq *q)
{
	int rv;

	eb__list_init(&q->calls);
	q->closing = 0;
	q->close_cb = NULL;
	rv = uv_idle_init(loop, &q->idle);
	if (rv != 0) {
		return rv;
	}
	q->idle.data = q;
	return 0;
}

void
eb__defer(eb__deferq *q, eb__defer_fn fn, void *arg)
{
	struct defer_call *c;

	if (q->closing) {
		return;
	}
	c = eb__malloc(sizeof(*c));
	c->fn = fn;
	c->arg = arg;
	eb__list_insert_tail(&q->calls, &c->link);
	(void) uv_idle_start(&q->idle, defer_idle_cb);
}

unsigned
eb__defer_cancel(eb__deferq *q, const void *arg)
{
	eb__list *it;
	eb__list *tmp;
	unsigned  n = 0;

	EB_LIST_FOREACH (it, tmp, &q->calls) {
		struct defer_call *c =
		    EB_CONTAINER_OF(it, struct defer_call, link);

		if (c->arg == arg) {
			eb__list_remove(it);
			free(c);
			n++;
		}
	}
	return n;
}

static void
defer_closed_cb(uv_handle_t *h)
{
	eb__deferq *q = h->data;
	eb__list   *it;
	eb__list   *tmp;

	/* The spare cursor (not eb__list_first() after each free) also lets
	 * clang-analyzer see that no freed call is read again: it cannot
	 * prove that removing the head's first element relinks the head. */
	EB_LIST_FOREACH (it, tmp, &q->calls) {
		eb__list_remove(it);
		free(EB_CONTAINER_OF(it, struct defer_call, link));
	}
	if (q->close_cb != NULL) {
		q->close_cb(q);
	}
}

void
eb__deferq_close(eb__deferq *q, void (*cb)(eb__deferq *q))
{
	q->closing = 1;
	q->close_cb = cb;
	uv_close((uv_handle_t *) &q->idle, defer_closed_cb);
}
