/*
 * The node-wide input budget (bridge.input_budget_bytes, common/budget.h):
 * what it counts of each connection (its input buffer plus what a layer
 * holds for it, kept in step by eb__bconn_in_account in conn.c), giving
 * back empty buffers, and closing the connections that hold the most when
 * the total is over the budget. The bridge owns the budget; other servers
 * (admin) charge it too.
 *
 * Invariants: b->input.used is the sum of the open connections' in_acct
 * plus the other servers' charges; a connection handling a frame borrowed
 * from its buffer (processing) is neither reclaimed nor chosen; idle
 * connections (nothing buffered, nothing held) are never closed for it.
 *
 * Threads: loop thread only.
 */
#include <stddef.h>

#include <ebnode/log.h>

#include "bridge/bridge_int.h"

void
eb__bridge_input_reclaim(eb__budget *bg, void *arg)
{
	eb_bridge *b = arg;
	eb__list  *it;

	(void) bg;
	for (it = b->conns.next; it != &b->conns; it = it->next) {
		eb__bconn *c = eb__bconn_from_link(it);

		if (c->in_acct > c->layer_held && !c->processing &&
		    eb__frame_dec_buffered(&c->dec) == 0) {
			eb__frame_dec_free(&c->dec);
			eb__frame_dec_init(&c->dec, b->opts.max_frame_bytes);
			eb__bconn_in_account(c);
		}
	}
}

/* The open connection holding the most buffered input (partial or not yet
 * handled frames, or a layer's share), or NULL. */
static eb__bconn *
biggest_holder(eb_bridge *b)
{
	eb__list  *it;
	eb__bconn *big = NULL;

	for (it = b->conns.next; it != &b->conns; it = it->next) {
		eb__bconn *c = eb__bconn_from_link(it);

		if (c->in_acct > 0 && !c->processing &&
		    (eb__frame_dec_buffered(&c->dec) > 0 ||
		        c->layer_held > 0) &&
		    (big == NULL || c->in_acct > big->in_acct)) {
			big = c;
		}
	}
	return big;
}

/*
 * Over the node-wide input budget: first frees the empty buffers, then
 * closes the connections holding the largest buffered input until the
 * total fits. The memory clients can make the node hold is bounded by the
 * budget, not by max_connections times max_frame_bytes; the clients that
 * hold the most pay first, idle ones are never closed for it. Linear
 * scans, but only while over the budget, and each close frees the most.
 */
void
eb__bridge_input_budget(eb_bridge *b)
{
	eb__bconn *big;

	if (!eb__budget_over(&b->input)) {
		return;
	}
	eb__bridge_input_reclaim(&b->input, b);
	while (eb__budget_over(&b->input)) {
		big = biggest_holder(b);
		if (big == NULL) {
			return;
		}
		b->stats.conns_closed_memory++;
		EB_LOG_RL_WARN("bridge",
		    "input-budget-closed: peer=%s buffered=%zu total=%llu "
		    "budget=%zu",
		    big->peer, big->in_acct, (unsigned long long) b->input.used,
		    b->opts.input_budget_bytes);
		eb__bconn_close(big, "input-budget");
	}
}

void
eb__bconn_layer_hold(eb__bconn *c, size_t bytes, uint64_t since_ms)
{
	if (c->closing) {
		return;
	}
	c->layer_started_ms = since_ms;
	if (bytes == c->layer_held) {
		return;
	}
	c->layer_held = bytes;
	eb__bconn_in_account(c);
	if (!c->processing) {
		eb__bridge_input_budget(c->b);
	}
}
