/*
 * The node-link metric families (link_admin.h), one group per family,
 * peers in the order eb_link_mgr_stats_foreach reports them. Loop thread
 * only.
 */
#include "link/link_admin.h"

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

static void
emit_family(eb__prom *w, const eb__vec *lr, int which)
{
	size_t i;

	for (i = 0; i < lr->len; i++) {
		const eb_link_peer_stats *s =
		    &((const link_row *) eb__vec_at(lr, i))->st;
		const char *l[] = { "peer", s->node_id, NULL };
		const char *in[] = { "peer", s->node_id, "direction", "in",
			NULL };
		const char *out[] = { "peer", s->node_id, "direction", "out",
			NULL };

		switch (which) {
		case 0:
			eb__prom_u64(w, "ebnode_link_up", l, s->up ? 1 : 0);
			break;
		case 1:
			eb__prom_u64(w, "ebnode_link_ups_total", l, s->ups);
			break;
		case 2:
			eb__prom_u64(
			    w, "ebnode_link_frames_total", in, s->frames_in);
			eb__prom_u64(
			    w, "ebnode_link_frames_total", out, s->frames_out);
			break;
		case 3:
			eb__prom_u64(
			    w, "ebnode_link_bytes_total", in, s->bytes_in);
			eb__prom_u64(
			    w, "ebnode_link_bytes_total", out, s->bytes_out);
			break;
		case 4:
			eb__prom_u64(
			    w, "ebnode_link_queued_bytes", l, s->queued);
			break;
		default:
			eb__prom_u64(w, "ebnode_link_congestions_total", l,
			    s->congestions);
			break;
		}
	}
}

static void
link_metrics(eb__prom *w, void *arg)
{
	static const char *const fam[][3] = {
		{ "ebnode_link_up", "gauge",
		    "1 while the node link to peer is up (hello exchanged)." },
		{ "ebnode_link_ups_total", "counter",
		    "Times the node link to peer came up." },
		{ "ebnode_link_frames_total", "counter",
		    "Node link frames by peer and direction." },
		{ "ebnode_link_bytes_total", "counter",
		    "Node link bytes by peer and direction." },
		{ "ebnode_link_queued_bytes", "gauge",
		    "Bytes waiting to be written on the node link to peer." },
		{ "ebnode_link_congestions_total", "counter",
		    "Times the node link to peer became congested (its "
		    "addresses busy until it drains)." },
	};
	eb_link_mgr *m = arg;
	eb__vec      lr;
	size_t       i;

	eb__vec_init(&lr, sizeof(link_row));
	if (m != NULL) {
		eb_link_mgr_stats_foreach(m, link_collect_cb, &lr);
	}
	for (i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
		eb__prom_family(w, fam[i][0], fam[i][1], fam[i][2]);
		emit_family(w, &lr, (int) i);
	}
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
