/*
 * A node-wide byte budget for what clients make this node hold before it
 * has handled it: partial frames and messages, request heads and bodies.
 *
 * One budget per node (bridge.input_budget_bytes), owned by the bridge
 * (eb__bridge_budget() in bridge/bridge_admin.h) and shared with the other
 * servers that buffer client input (the web front through the bridge
 * connections it rides on; the admin HTTP server, which the composition
 * root can hand this pointer to). Two ways to use it:
 *
 *   - A holder that is evicted by its owner (the bridge's connections)
 *     reports its bytes with eb__budget_adjust() (never refused) and its
 *     owner closes the biggest holders while eb__budget_over() is true.
 *   - Any other server asks first: eb__budget_charge(bg, n) returns 0 and
 *     counts n bytes, or UV_ENOBUFS (nothing counted) when they do not fit
 *     even after the owner's reclaim callback gave back what it could
 *     without closing anyone; the server then refuses the request (e.g.
 *     503, or closes the socket). eb__budget_release(bg, n) gives the
 *     bytes back when the request is answered or its connection closes.
 *     Charges made this way are never evicted by the owner, so a refusal
 *     is the only bound: charge before buffering, release exactly what was
 *     charged.
 *
 * limit 0 turns the bound off (charges always succeed, bytes are still
 * counted). Loop thread only.
 */
#ifndef EB_COMMON_BUDGET_H
#define EB_COMMON_BUDGET_H

#include <stddef.h>

typedef struct eb__budget eb__budget;

/* Gives back bytes that can be freed without closing anyone (empty
 * buffers kept for reuse); called before a charge is refused. */
typedef void (*eb__budget_reclaim_fn)(eb__budget *bg, void *arg);

struct eb__budget {
	size_t                limit;    /* 0: unbounded */
	size_t                used;     /* every holder's bytes */
	size_t                external; /* of used: eb__budget_charge()'d */
	eb__budget_reclaim_fn reclaim;  /* NULL: none */
	void                 *reclaim_arg;
};

void eb__budget_init(
    eb__budget *bg, size_t limit, eb__budget_reclaim_fn fn, void *arg);
/* A holder's count changed from was to now bytes (never refused). */
void eb__budget_adjust(eb__budget *bg, size_t was, size_t now);
/* 1 when more is counted than the limit allows. */
int eb__budget_over(const eb__budget *bg);
/* Counts n more bytes: 0, or UV_ENOBUFS (nothing counted). */
int  eb__budget_charge(eb__budget *bg, size_t n);
void eb__budget_release(eb__budget *bg, size_t n);

#endif
