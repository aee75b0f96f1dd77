/*
 * What the web fuzz targets (web_fuzz.c, web_sock_fuzz.c) share: one
 * process-wide loop with a local bus, a permit-all bridge and a web front
 * on it, built per input and closed again, the loop run until the last
 * close callback (bounded; a handle left behind aborts, ASan checks for
 * leaks at exit).
 *
 * Included by one target's .c file only (the definitions are static).
 * Single-threaded like the targets: the loop runs on the fuzzer's thread.
 * The objects are owned here and gone after fz_node_close().
 */
#ifndef EB_TESTS_FUZZ_FZ_NODE_H
#define EB_TESTS_FUZZ_FZ_NODE_H

#include <stdlib.h>

#include <uv.h>

#include <ebnode/bridge.h>
#include <ebnode/bus.h>
#include <ebnode/web.h>

static uv_loop_t  fz_loop;
static eb_bus    *fz_bus;
static eb_bridge *fz_bridge;
static eb_web    *fz_web;
static int        fz_closed; /* close callbacks seen by this close */

/* Bridge options with the defaults, every address permitted both ways. */
static void
fz_bridge_opts(eb_bridge_opts *o)
{
	static const eb_bridge_permitted all[] = { { NULL, NULL } };

	eb_bridge_opts_init(o);
	o->inbound = all;
	o->inbound_count = 1;
	o->outbound = all;
	o->outbound_count = 1;
}

/* A bus (bo) and a bridge (o) on fz_loop; the bridge listens when
 * start is set. Aborts on a failure. */
static void
fz_bus_bridge_new(const eb_bus_opts *bo, const eb_bridge_opts *o, int start)
{
	if (eb_bus_new(&fz_loop, bo, &fz_bus) != 0) {
		abort();
	}
	if (eb_bridge_new(&fz_loop, fz_bus, o, NULL, &fz_bridge) != 0 ||
	    (start && eb_bridge_start(fz_bridge, NULL) != 0)) {
		abort();
	}
}

/* The web front (wo) over fz_bridge; it listens when start is set. */
static void
fz_web_new(const eb_web_opts *wo, int start)
{
	if (eb_web_new(&fz_loop, fz_bridge, wo, NULL, &fz_web) != 0 ||
	    (start && eb_web_start(fz_web, NULL) != 0)) {
		abort();
	}
}

static void
fz_closed_cb(void *x, void *arg)
{
	(void) x;
	(void) arg;
	fz_closed++;
}

static void
fz_web_closed_cb(eb_web *w, void *arg)
{
	fz_closed_cb(w, arg);
}

static void
fz_bridge_closed_cb(eb_bridge *b, void *arg)
{
	fz_closed_cb(b, arg);
}

static void
fz_bus_closed_cb(eb_bus *b, void *arg)
{
	fz_closed_cb(b, arg);
}

/* Runs the loop until n close callbacks were seen (bounded). */
static void
fz_wait_closed(int n)
{
	int k;

	for (k = 0; k < 1000 && fz_closed < n; k++) {
		(void) uv_run(&fz_loop, UV_RUN_NOWAIT);
	}
	if (fz_closed < n) {
		abort(); /* something never finished closing */
	}
}

/* Closes the web front and waits for it (the bridge and bus stay). */
static void
fz_web_close(void)
{
	fz_closed = 0;
	eb_web_close(fz_web, fz_web_closed_cb, NULL);
	fz_wait_closed(1);
}

/* Then the bridge and the bus, in that order; nothing may be left on the
 * loop. */
static void
fz_bus_bridge_close(void)
{
	eb_bridge_close(fz_bridge, fz_bridge_closed_cb, NULL);
	fz_wait_closed(2);
	eb_bus_close(fz_bus, fz_bus_closed_cb, NULL);
	fz_wait_closed(3);
	if (uv_loop_alive(&fz_loop)) {
		abort(); /* a handle outlived its owner */
	}
}

#endif
