/*
 * struct eb_bridge: the bridge's state (server.c owns it: created by
 * eb_bridge_new, freed after the close callback of eb_bridge_close). The
 * bridge's files see it through bridge/bridge_int.h; bridge/bridge_layer.h
 * includes it only because web/xhr.c still reads three fields
 * (closing, stats.conns_open, opts.max_connections) to apply the
 * connection limit to its sessions.
 *
 * Invariants: conns holds the open connections (none closing); live counts
 * the accepted sockets whose handle has not closed, and the bridge's close
 * callback runs only once live and open_handles are both 0.
 *
 * Threads: loop thread only.
 */
#ifndef EB_BRIDGE_BRIDGE_STATE_H
#define EB_BRIDGE_BRIDGE_STATE_H

#include <stdint.h>

#include <uv.h>

#include <ebnode/bridge.h>
#include <ebnode/bus.h>

#include "bridge/perm.h"
#include "common/budget.h"
#include "common/list.h"
#include "common/obs.h"
#include "common/spare.h"
#include "common/stall.h"
#include "stream/stream.h"

struct eb_bridge {
	uv_loop_t     *loop;  /* borrowed */
	eb_bus        *bus;   /* borrowed */
	eb_bridge_opts opts;  /* strings point into the copies below */
	char          *host;  /* owned */
	char          *token; /* owned */
	eb__perm_list  inbound;
	eb__perm_list  outbound;
	eb__tls_ctx   *tls; /* owned, NULL without TLS */

	uv_tcp_t   listener;
	uv_timer_t sweep;       /* idle and reply expiry, once a second */
	eb__stall  sweep_stall; /* no silence verdicts right after a stall */
	uv_idle_t  drain;       /* runs paused connections' buffered frames */
	int        port;
	int        started;
	int        listener_inited;
	int        drain_inited;
	eb__list   paused; /* of eb__bconn that used their frame budget */
	/* Flow control: connections that stopped reading because the address
	 * their last frame went to is busy (eb_bus_address_busy); the bus's
	 * pressure observer moves them back to paused (to drain) when it is
	 * not any more. */
	eb__list blocked;
	int      pressure_watching;
	/* Write coalescing: connections with gathered output, flushed by
	 * flush_prep (after the idle phase: bus deliveries) and flush_check
	 * (after the poll phase: answers to reads), active only while the list
	 * is non-empty. */
	eb__list     pending_out;
	uv_prepare_t flush_prep;
	uv_check_t   flush_check;
	int          flush_inited;
	int          flush_active;

	/* The node-wide input budget (bridge.input_budget_bytes): every
	 * connection's input buffer and what a layer holds for it
	 * (eb__bconn_layer_hold), plus other servers' charges (budget.h). */
	eb__budget input;

	/* Freed requests (eb__breq) whose two strings fit EB__BREQ_STRS bytes,
	 * kept for the next ones (deliver.c; issue 25). */
	eb__spare breq_spare;

	eb__list conns; /* of eb__bconn (open, not closing) */
	eb__list
	    fresh;     /* of eb__bconn without a complete frame, oldest first */
	unsigned live; /* accepted sockets whose handle has not closed */
	uint64_t next_conn_id;

	eb_bridge_stats stats;

	eb_bridge_hook_fn hook; /* NULL: none */
	void             *hook_arg;
	eb__obs           closed_obs; /* bridge_obs.h */

	int                closing;
	int                open_handles;
	eb_bridge_close_cb close_cb;
	void              *close_arg;
};

#endif
