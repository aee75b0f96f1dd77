/* The lifecycle walk (steps.h). Loop thread only. */
#include "common/steps.h"

#include <stdlib.h>

#include <ebnode/err.h>
#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"

static void start_next(eb__steps *s);
static void stop_next(eb__steps *s);

eb__steps_wait *
eb__steps_wait_new(eb__steps *s, eb__steps_done_cb cb, int status, int pending)
{
	eb__steps_wait *w = eb__malloc(sizeof(*w));

	EB_ASSERT(pending >= 1);
	w->s = s;
	w->cb = cb;
	w->status = status;
	w->pending = pending;
	return w;
}

void
eb__steps_wait_done(eb__steps_wait *w)
{
	eb__steps_wait c = *w;

	if (--w->pending > 0) {
		return;
	}
	free(w);
	if (c.cb != NULL) {
		c.cb(c.s, c.status);
	}
}

static void
completion_run(void *arg)
{
	eb__steps_wait_done(arg);
}

void
eb__steps_complete(eb__steps *s, eb__steps_done_cb cb, int status)
{
	eb__defer(
	    s->defer, completion_run, eb__steps_wait_new(s, cb, status, 1));
}

const char *
eb__steps_current(const eb__steps *s)
{
	return s->started < s->count ? s->table[s->started].name : "-";
}

static void
start_done_cb(eb__steps *s, int status)
{
	const eb__step *step = &s->table[s->started];

	EB_ASSERT(s->busy && s->phase == EB__STEPS_STARTING);
	s->busy = false;
	if (status == EB_ECANCELED && s->stop_requested) {
		/* Canceled for the requested stop: not a failure. */
		EB_LOG_NOTICE(s->log, "start-canceled: step=%s", step->name);
		eb__steps_stop(s);
		return;
	}
	if (status != 0) {
		EB_LOG_ERR(s->log, "start-failed: step=%s err=%s (%s)",
		    step->name, eb_err_name(status), eb_strerror(status));
		if (s->cbs->failed != NULL) {
			s->cbs->failed(s, step, status);
		}
		eb__steps_stop(s);
		return;
	}
	EB_LOG_DEBUG(s->log, "started: step=%s", step->name);
	s->started++;
	start_next(s);
}

static void
start_next(eb__steps *s)
{
	const eb__step *step;
	int             rv;

	if (s->stop_requested) {
		eb__steps_stop(s);
		return;
	}
	if (s->started == s->count) {
		s->phase = EB__STEPS_RUNNING;
		if (s->cbs->up != NULL) {
			s->cbs->up(s);
		}
		return;
	}
	step = &s->table[s->started];
	s->busy = true;
	if ((rv = step->start(s, start_done_cb)) != 0) {
		/* Failed at once: no callback will come. */
		s->busy = false;
		EB_LOG_ERR(s->log, "start-failed: step=%s err=%s (%s)",
		    step->name, eb_err_name(rv), eb_strerror(rv));
		if (s->cbs->failed != NULL) {
			s->cbs->failed(s, step, rv);
		}
		eb__steps_stop(s);
	}
}

void
eb__steps_start(eb__steps *s)
{
	if (s->phase != EB__STEPS_NEW) {
		EB_ASSERT(s->stop_requested); /* stopped before it started */
		return;
	}
	s->phase = EB__STEPS_STARTING;
	start_next(s);
}

static void
stop_done_cb(eb__steps *s, int status)
{
	EB_ASSERT(s->busy && s->phase == EB__STEPS_STOPPING);
	s->busy = false;
	if (status != 0) {
		EB_LOG_WARN(s->log, "stop-failed: step=%s err=%s",
		    s->table[s->started].name, eb_err_name(status));
	}
	stop_next(s);
}

static void
stop_next(eb__steps *s)
{
	if (s->started == 0) {
		s->phase = EB__STEPS_DONE;
		if (s->cbs->down != NULL) {
			s->cbs->down(s);
		}
		return;
	}
	s->started--;
	s->busy = true;
	EB_LOG_DEBUG(s->log, "stopping: step=%s", s->table[s->started].name);
	s->table[s->started].stop(s, stop_done_cb);
}

void
eb__steps_stop(eb__steps *s)
{
	bool first = !s->stop_requested;

	s->stop_requested = true;
	if (s->phase == EB__STEPS_STARTING && s->busy) {
		/* Prompt stop in every phase of start: the step completes
		 * (canceled, when it can be) and start_done_cb calls us
		 * again. */
		if (first && s->table[s->started].cancel != NULL) {
			s->table[s->started].cancel(s);
		}
		return;
	}
	if (s->phase == EB__STEPS_STOPPING || s->phase == EB__STEPS_DONE ||
	    s->busy) {
		return; /* in progress, or start_done_cb will call us */
	}
	s->phase = EB__STEPS_STOPPING;
	EB_LOG_NOTICE(s->log, "stopping: started_steps=%zu", s->started);
	if (s->cbs->stopping != NULL) {
		s->cbs->stopping(s);
	}
	stop_next(s);
}
