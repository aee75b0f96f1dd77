/*
 * eb__steps: the ordered lifecycle of an object made of parts (the node's
 * bus, ingress, bridge, admin and cluster). Steps start in table order, one
 * at a time; when a start fails, or a stop is requested, the started steps
 * stop in reverse order. Exactly one step is in flight at a time: a stop
 * requested while a start step runs waits for it to complete, or cancels
 * it when the step has a cancel, so no part is stopped half-started.
 *
 * A step's contract:
 *   start(s, cb): returns 0 and then calls cb(s, status) exactly once on a
 *     later loop turn (eb__steps_complete). status 0: the part runs and
 *     holds its resources; status < 0: it holds nothing. A non-zero return
 *     means no callback and nothing held.
 *   stop(s, cb): only after a successful start, at most once; closes what
 *     the part holds, then cb(s, 0) exactly once on a later turn.
 *   cancel(s) (NULL: the step completes promptly anyway): a stop was
 *     requested while start is in flight; the start completes soon, with
 *     EB_ECANCELED.
 *
 * The owner embeds the struct, fills table, count, cbs and defer, and
 * reaches itself from a step with EB_CONTAINER_OF. Loop thread only.
 */
#ifndef EB_COMMON_STEPS_H
#define EB_COMMON_STEPS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/defer.h"

typedef struct eb__steps eb__steps;

/* A step's completion (the contract above). */
typedef void (*eb__steps_done_cb)(eb__steps *s, int status);

typedef struct eb__step {
	const char *name;
	int (*start)(eb__steps *s, eb__steps_done_cb cb);
	void (*stop)(eb__steps *s, eb__steps_done_cb cb);
	void (*cancel)(eb__steps *s);
} eb__step;

/* The owner's hooks, each optional. */
typedef struct eb__steps_cbs {
	void (*up)(eb__steps *s); /* every step started */
	/* A start failed (not canceled): the walk back follows. */
	void (*failed)(eb__steps *s, const eb__step *step, int err);
	void (*stopping)(eb__steps *s); /* the walk back begins */
	void (*down)(eb__steps *s);     /* every started step stopped */
} eb__steps_cbs;

enum eb__steps_phase {
	EB__STEPS_NEW = 0,
	EB__STEPS_STARTING,
	EB__STEPS_RUNNING,
	EB__STEPS_STOPPING,
	EB__STEPS_DONE
};

struct eb__steps {
	/* Filled by the owner before eb__steps_start. */
	const eb__step      *table;
	size_t               count;
	const eb__steps_cbs *cbs;
	eb__deferq          *defer; /* borrowed, for eb__steps_complete */
	const char          *log;   /* log subsystem name */

	/* Read only. */
	int    phase;   /* enum eb__steps_phase */
	size_t started; /* number of steps started */
	bool   busy;    /* a start or stop step is in flight */
	bool   stop_requested;
};

/* Starts the first step; at most once. */
void eb__steps_start(eb__steps *s);
/* Requests the walk back (idempotent): at once, or when the start step in
 * flight completes. Before eb__steps_start: straight to DONE, down runs. */
void eb__steps_stop(eb__steps *s);
/* The step in flight or last run (for logs), or "-". */
const char *eb__steps_current(const eb__steps *s);

/* Calls cb(s, status) on a later loop turn. */
void eb__steps_complete(eb__steps *s, eb__steps_done_cb cb, int status);

/* Waits for `pending` close callbacks of a step, each of which calls
 * eb__steps_wait_done; the last one frees it and calls cb(s, status)
 * (cb NULL: nothing). pending >= 1. */
typedef struct eb__steps_wait {
	eb__steps        *s;
	eb__steps_done_cb cb;
	int               status;
	int               pending;
} eb__steps_wait;
eb__steps_wait *eb__steps_wait_new(
    eb__steps *s, eb__steps_done_cb cb, int status, int pending);
void eb__steps_wait_done(eb__steps_wait *w);

#endif
