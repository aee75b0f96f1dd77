/*
 * The node-link metric families (link_admin.h), one group per family,
 * peers in the order eb_link_mgr_stats_foreach reports them. Loop thread
 * only.
 */
#include "link/link_admin.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "admin/prom.h"
#include "common/alloc.h"
#include "common/vec.h"

typedef struct link_row {
	char              *node_id; /* owned */
	eb_link_peer_stats st;
} link_row;

static void
link_collect_cb(const eb_link_peer_stats *s, void *arg)
{
	link_row *r = eb__vec_push(arg);

	r->st = *s;
	r->node_id = eb__strdup(s->node_id);
	r->st.node_id = r->node_id;
	r->st.host = NULL; /* borrowed: not kept */
	/* down_reason points at a static name: kept as it is. */
}

#define LR(m) EB__PROM_AT(link_row, m)

static const eb__prom_field frames_dir[] = {
	{ "in", LR(st.frames_in) },
	{ "out", LR(st.frames_out) },
};

static const eb__prom_field bytes_dir[] = {
	{ "in", LR(st.bytes_in) },
	{ "out", LR(st.bytes_out) },
};

/* Over the peers, labelled peer="<node id>". */
static const eb__prom_desc families[] = {
	EB__PROM_ONE("ebnode_link_up", "gauge",
	    "1 while the node link to peer is up (hello exchanged).",
	    LR(st.up)),
	EB__PROM_ONE("ebnode_link_ups_total", "counter",
	    "Times the node link to peer came up.", LR(st.ups)),
	EB__PROM_SET("ebnode_link_frames_total", "counter",
	    "Node link frames by peer and direction.", "direction", frames_dir),
	EB__PROM_SET("ebnode_link_bytes_total", "counter",
	    "Node link bytes by peer and direction.", "direction", bytes_dir),
	EB__PROM_ONE("ebnode_link_queued_bytes", "gauge",
	    "Bytes waiting to be written on the node link to peer.",
	    LR(st.queued)),
	EB__PROM_ONE("ebnode_link_congestions_total", "counter",
	    "Times the node link to peer became congested (its "
	    "addresses busy until it drains).",
	    LR(st.congestions)),
	EB__PROM_ONE("ebnode_link_version", "gauge",
	    "The link protocol version spoken with peer (0: not linked).",
	    LR(st.version)),
};

/* Per reason a link is down (eb_link_down_reason), over all peers. */
typedef struct link_down_vals {
	uint64_t now[EB_LINK_DOWN_REASONS];   /* peers down for it now */
	uint64_t total[EB_LINK_DOWN_REASONS]; /* times */
} link_down_vals;

#define LD(m) EB__PROM_AT(link_down_vals, m)

static const eb__prom_field down_now[] = {
	{ "version", LD(now[EB_LINK_DOWN_VERSION]) },
	{ "tls", LD(now[EB_LINK_DOWN_TLS]) },
	{ "unreachable", LD(now[EB_LINK_DOWN_UNREACHABLE]) },
};

static const eb__prom_field down_total[] = {
	{ "version", LD(total[EB_LINK_DOWN_VERSION]) },
	{ "tls", LD(total[EB_LINK_DOWN_TLS]) },
	{ "unreachable", LD(total[EB_LINK_DOWN_UNREACHABLE]) },
};

static const eb__prom_desc down_families[] = {
	EB__PROM_SET("ebnode_link_down", "gauge",
	    "Peers whose node link is down, by the reason this node knows "
	    "(version: no protocol version in common; tls; unreachable).",
	    "reason", down_now),
	EB__PROM_SET("ebnode_link_down_total", "counter",
	    "Times a peer's node link went down for a reason, by reason.",
	    "reason", down_total),
};

static void
link_metrics(eb__prom *w, void *arg)
{
	eb_link_mgr   *m = arg;
	eb__vec        lr;
	eb__prom_rows  rows;
	link_down_vals dv;
	size_t         i;

	eb__vec_init(&lr, sizeof(link_row));
	if (m != NULL) {
		eb_link_mgr_stats_foreach(m, link_collect_cb, &lr);
	}
	rows.label = "peer";
	rows.label_off = offsetof(link_row, node_id);
	rows.base = lr.data;
	rows.stride = sizeof(link_row);
	rows.n = lr.len;
	eb__prom_write_rows(w, families, EB__PROM_LEN(families), &rows);
	memset(&dv, 0, sizeof(dv));
	for (i = 0; i < lr.len; i++) {
		link_row *r = eb__vec_at(&lr, i);
		int       k;

		for (k = 1; k < EB_LINK_DOWN_REASONS; k++) {
			const char *name =
			    eb_link_down_reason_name((eb_link_down_reason) k);

			dv.now[k] += !r->st.up && r->st.down_reason != NULL &&
			             strcmp(r->st.down_reason, name) == 0;
		}
		free(r->node_id);
	}
	for (i = 1; m != NULL && i < EB_LINK_DOWN_REASONS; i++) {
		dv.total[i] =
		    eb_link_mgr_down_total(m, (eb_link_down_reason) i);
	}
	eb__prom_write(w, down_families, EB__PROM_LEN(down_families), &dv);
	eb__vec_free(&lr);
}

void
eb__link_admin_register(eb__admin *adm, eb_link_mgr *m)
{
	eb__admin_on_metrics(adm, link_metrics, m);
}
