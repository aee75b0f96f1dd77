/*
 * Deferred calls: the way a function that returned 0 delivers an immediate
 * result on a later loop turn instead of from inside the call (STYLE B5).
 * A uv_idle handle runs the queue and is active only while it is non-empty.
 * Loop thread only.
 */
#ifndef EB_COMMON_DEFER_H
#define EB_COMMON_DEFER_H

#include <uv.h>

#include "common/list.h"

typedef void (*eb__defer_fn)(void *arg);

typedef struct eb__deferq {
	uv_idle_t idle;
	eb__list  calls; /* of struct defer_call, owned */
	int       closing;
	void (*close_cb)(struct eb__deferq *q);
} eb__deferq;

int eb__deferq_init(uv_loop_t *loop, eb__deferq *q);
/* Queues fn(arg) to run on a later loop turn, in FIFO order. */
void eb__defer(eb__deferq *q, eb__defer_fn fn, void *arg);
/*
 * Drops every queued call whose arg is arg (an object about to be freed).
 * Returns the number removed.
 */
unsigned eb__defer_cancel(eb__deferq *q, const void *arg);
/*
 * Runs nothing more; queued calls are dropped (their owners fail them with
 * EB_ECANCELED before closing). cb runs once the handle has closed.
 */
void eb__deferq_close(eb__deferq *q, void (*cb)(eb__deferq *q));

#endif
