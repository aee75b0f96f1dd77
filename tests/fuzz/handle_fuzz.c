/*
 * libFuzzer target: bridge frame handling. One process-wide loop, local bus
 * and bridge (permit-all lists, short request timeout); each input is the
 * byte stream of one client connection (a detached connection whose output
 * is discarded). The input is fed in two halves with loop turns in between,
 * so that deliveries to the connection's own consumers, replies, request
 * failures and the replies map all run; then the connection closes and the
 * loop runs until its handle is gone. The bridge must stay consistent: no
 * crash, no leak, every consumer removed on close.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/bridge.h>
#include <ebnode/bus.h>
#include <ebnode/log.h>

#include "bridge/bridge_int.h"

/* libFuzzer's names and signatures. */
/* NOLINTNEXTLINE(readability-identifier-naming) */
int LLVMFuzzerInitialize(int *argc, char ***argv);
/* NOLINTNEXTLINE(readability-identifier-naming) */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uv_loop_t  fz_loop;
static eb_bus    *fz_bus;
static eb_bridge *fz_bridge;

static int fz_hook(const eb_bridge_event *ev, void *arg);

/* libFuzzer's signature: */
/* NOLINTBEGIN(readability-identifier-naming,readability-non-const-parameter) */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
/* NOLINTEND(readability-identifier-naming,readability-non-const-parameter) */
{
	static const eb_bridge_permitted all[] = { { NULL, NULL } };
	eb_bus_opts                      bo;
	eb_bridge_opts                   o;

	(void) argc;
	(void) argv;
	eb_log_set_level(EB_LOG_LEVEL_ERR);
	if (uv_loop_init(&fz_loop) != 0) {
		abort();
	}
	eb_bus_opts_init(&bo);
	bo.request_timeout_ms = 5;
	if (eb_bus_new(&fz_loop, &bo, &fz_bus) != 0) {
		abort();
	}
	eb_bridge_opts_init(&o);
	o.max_frame_bytes = 65536;
	o.inbound = all;
	o.inbound_count = 1;
	o.outbound = all;
	o.outbound_count = 1;
	if (eb_bridge_new(&fz_loop, fz_bus, &o, NULL, &fz_bridge) != 0) {
		abort();
	}
	eb_bridge_set_hook(fz_bridge, fz_hook, NULL);
	return 0;
}

/* A hook that blocks some frames and closes the connection on others, so
 * that both paths run from inside frame handling. */
static int
fz_hook(const eb_bridge_event *ev, void *arg)
{
	(void) arg;
	if (ev->address == NULL) {
		return 0;
	}
	if (ev->address[0] == 'X') {
		(void) eb_bridge_conn_close(fz_bridge, ev->conn_id);
		return 0;
	}
	return strlen(ev->address) % 7 == 3;
}

static void
turns(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		(void) uv_run(&fz_loop, UV_RUN_NOWAIT);
	}
}

/* NOLINTNEXTLINE(readability-identifier-naming) */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	eb__bconn      *c = eb__bconn_open_detached(fz_bridge);
	eb_bridge_stats st;
	size_t          half = size / 2;

	eb__bconn_feed(c, (const char *) data, half);
	turns(3);
	/* The connection may have closed itself (bad length). */
	eb_bridge_stats_get(fz_bridge, &st);
	if (st.conns_open > 0) {
		eb__bconn_feed(c, (const char *) data + half, size - half);
		turns(3);
	}
	eb_bridge_stats_get(fz_bridge, &st);
	if (st.conns_open > 0) {
		eb__bconn_close(c, "fuzz");
	}
	turns(3);
	eb_bridge_stats_get(fz_bridge, &st);
	if (st.conns_open != 0 || st.consumers != 0) {
		abort(); /* a closed connection leaves nothing behind */
	}
	return 0;
}
