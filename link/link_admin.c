/*
 * The node-link metric families (link_admin.h), one group per family,
 * peers in the order eb_link_mgr_stats_foreach reports them. Loop thread
 * only.
 */
#include "link/link_admin.h"

#include <stddef.h>
#include <stdlib.h>

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
};

static void
link_metrics(eb__prom *w, void *arg)
{
	eb_link_mgr  *m = arg;
	eb__vec       lr;
	eb__prom_rows rows;
	size_t        i;

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
	for (i = 0; i < lr.len; i++) {
		free(((link_row *) eb__vec_at(&lr, i))->node_id);
	}
	eb__vec_free(&lr);
}

void
eb__link_admin_register(eb__admin *adm, eb_link_mgr *m)
{
	eb__admin_on_metrics(adm, link_metrics, m);
}
