/* The dashboard's cluster view (cview.h). */
#include "web/cview.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>
#include <ebnode/log.h>

#include "bridge/bridge_obs.h"
#include "common/alloc.h"
#include "common/assert.h"
#include "common/util.h"

#define CVIEW_DEFAULT_TIMEOUT_MS 1000u
#define CVIEW_ADDR_MAX           256u

typedef struct cview_gather cview_gather;

/* One member's answer. */
typedef struct cview_row {
	cview_gather *g;       /* borrowed: the gather this row is part of */
	char         *node_id; /* owned */
	char         *text;    /* owned: its /metrics text, or NULL */
	size_t        text_len;
	char         *error; /* owned: why there is no text, or NULL */
	uint64_t      ms;    /* how long its answer took */
} cview_row;

/* One GET /cluster/metrics in flight. */
struct cview_gather {
	eb__web_cview *v;  /* borrowed: v lives while gathers do */
	uint64_t       id; /* the admin request */
	uint64_t       t0; /* eb__mono_ms() at the start */
	size_t         n;  /* rows (this node first) */
	size_t         left;
	cview_row      rows[];
};

struct eb__web_cview {
	eb_bus          *bus;  /* borrowed */
	eb__admin       *adm;  /* borrowed; NULL once released */
	char            *self; /* owned */
	eb__web_peers_fn peers;
	void            *peers_arg; /* borrowed */
	uint64_t         timeout_ms;
	int              serve;
	eb_bus_consumer *consumer; /* owned; NULL: none */
	size_t           gathers;  /* in flight */
	int              released;
};

static void
cview_free(eb__web_cview *v)
{
	free(v->self);
	free(v);
}

/* ---- serving this node's figures to the other members ---- */

static void
serve_cb(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	eb__web_cview *v = arg;
	const json_t  *h = eb_bus_msg_headers(msg);
	json_t        *body;
	char          *text;
	size_t         len;

	(void) c;
	if (eb_bus_msg_reply_address(msg) == NULL) {
		return; /* a send or publish: nobody to answer */
	}
	if (h != NULL && json_object_get(h, EB__BRIDGE_CONN_HEADER) != NULL) {
		/* A bridge client's request (its bridge stamped it): the
		 * members' figures are for the members only. */
		(void) eb_bus_msg_fail(msg, 403, "forbidden");
		return;
	}
	if (v->adm == NULL) {
		(void) eb_bus_msg_fail(msg, 503, "admin endpoint stopping");
		return;
	}
	text = eb__admin_metrics_text(v->adm, &len);
	body = text != NULL ? json_stringn(text, len) : NULL;
	if (body == NULL) {
		(void) eb_bus_msg_fail(msg, 500, "metrics not encodable");
	} else {
		(void) eb_bus_msg_reply(msg, body, NULL, NULL, NULL, NULL);
	}
	json_decref(body);
	free(text);
}

/* ---- gathering: GET /cluster/metrics ---- */

static json_t *
gather_json(const cview_gather *g)
{
	json_t *nodes = json_array();
	size_t  i;

	for (i = 0; i < g->n; i++) {
		const cview_row *r = &g->rows[i];
		json_t *o = json_pack("{s:s, s:b, s:b, s:I}", "node_id",
		    r->node_id, "self", i == 0, "ok", r->text != NULL, "ms",
		    (json_int_t) r->ms);

		if (o == NULL) {
			continue;
		}
		if (r->text != NULL) {
			json_t *t = json_stringn(r->text, r->text_len);

			(void) json_object_set_new(o,
			    t != NULL ? "metrics" : "error",
			    t != NULL ? t : json_string("metrics not UTF-8"));
		} else {
			(void) json_object_set_new(o, "error",
			    json_string(r->error != NULL ? r->error : "?"));
		}
		(void) json_array_append_new(nodes, o);
	}
	return json_pack("{s:s, s:I, s:o}", "node_id", g->v->self, "timeout_ms",
	    (json_int_t) g->v->timeout_ms, "nodes", nodes);
}

/* Every row is in: answers the request (unless the admin server is gone
 * or the connection hit its deadline) and frees the gather. */
static void
gather_end(cview_gather *g)
{
	eb__web_cview *v = g->v;
	size_t         i;

	if (v->adm != NULL) {
		eb__admin_resp rs;
		json_t        *o = gather_json(g);

		memset(&rs, 0, sizeof(rs));
		eb__admin_reply_json(&rs, 200, o);
		json_decref(o);
		(void) eb__admin_answer(v->adm, g->id, &rs);
		free(rs.body);
	}
	for (i = 0; i < g->n; i++) {
		free(g->rows[i].node_id);
		free(g->rows[i].text);
		free(g->rows[i].error);
	}
	free(g);
	if (--v->gathers == 0 && v->released) {
		cview_free(v);
	}
}

static void
row_reply_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	cview_row    *r = arg;
	cview_gather *g = r->g;
	const json_t *body = status == 0 ? eb_bus_msg_body(reply) : NULL;

	(void) bus;
	r->ms = eb__mono_ms() - g->t0;
	if (json_is_string(body)) {
		r->text_len = json_string_length(body);
		r->text = eb__malloc(r->text_len + 1);
		memcpy(r->text, json_string_value(body), r->text_len);
		r->text[r->text_len] = '\0';
	} else {
		r->error =
		    eb__strdup(failure != NULL && failure->message != NULL
		                   ? failure->message
		                   : eb_err_name(status));
	}
	EB_ASSERT(g->left > 0);
	if (--g->left == 0) {
		gather_end(g);
	}
}

/* Asks member r for its figures; the reply (or failure) fills r. */
static void
row_ask(eb__web_cview *v, cview_row *r)
{
	eb_bus_send_opts so;
	char             addr[CVIEW_ADDR_MAX];
	int              rv;

	eb_bus_send_opts_init(&so);
	so.timeout_ms = v->timeout_ms;
	(void) snprintf(
	    addr, sizeof(addr), "%s%s", EB_WEB_CVIEW_PREFIX, r->node_id);
	rv = eb_bus_request(v->bus, addr, NULL, NULL, &so, row_reply_cb, r);
	if (rv != 0) {
		r->error = eb__strdup(eb_err_name(rv));
		r->g->left--;
	}
}

static void
route_cb(eb__admin *adm, const eb__admin_req *rq, uint64_t id, void *arg)
{
	eb__web_cview *v = arg;
	const char    *ids[EB_WEB_CVIEW_MAX_PEERS];
	size_t         n = 0;
	size_t         i;
	cview_gather  *g;

	(void) rq;
	if (v->gathers >= EB_WEB_CVIEW_MAX_GATHERS) {
		eb__admin_resp rs;

		memset(&rs, 0, sizeof(rs));
		eb__admin_reply_error(&rs, 503, "busy",
		    "too many cluster views in flight, retry");
		(void) eb__admin_answer(adm, id, &rs);
		free(rs.body);
		return;
	}
	if (v->peers != NULL) {
		n = v->peers(v->peers_arg, ids, EB_WEB_CVIEW_MAX_PEERS);
	}
	g = eb__calloc(1, sizeof(*g) + (n + 1) * sizeof(cview_row));
	g->v = v;
	g->id = id;
	g->t0 = eb__mono_ms();
	g->n = n + 1;
	g->left = n + 1; /* the last one, this node's own, is taken below */
	v->gathers++;
	g->rows[0].g = g;
	g->rows[0].node_id = eb__strdup(v->self);
	g->rows[0].text = eb__admin_metrics_text(adm, &g->rows[0].text_len);
	for (i = 0; i < n; i++) {
		g->rows[i + 1].g = g;
		g->rows[i + 1].node_id = eb__strdup(ids[i]);
		row_ask(v, &g->rows[i + 1]);
	}
	if (--g->left == 0) {
		gather_end(g); /* nothing asked, or every ask failed at once */
	}
}

/* ---- lifecycle ---- */

int
eb__web_cview_new(const eb__web_cview_opts *o, eb__web_cview **out)
{
	eb__web_cview *v;

	if (o == NULL || o->bus == NULL || o->self_id == NULL ||
	    strlen(o->self_id) + sizeof(EB_WEB_CVIEW_PREFIX) > CVIEW_ADDR_MAX) {
		return UV_EINVAL;
	}
	v = eb__calloc(1, sizeof(*v));
	v->bus = o->bus;
	v->self = eb__strdup(o->self_id);
	v->peers = o->peers;
	v->peers_arg = o->peers_arg;
	v->timeout_ms =
	    o->timeout_ms != 0 ? o->timeout_ms : CVIEW_DEFAULT_TIMEOUT_MS;
	v->serve = o->serve;
	*out = v;
	return 0;
}

int
eb__web_cview_start(eb__web_cview *v, eb__admin *adm)
{
	char addr[CVIEW_ADDR_MAX];

	EB_ASSERT(v->adm == NULL && !v->released);
	v->adm = adm;
	eb__admin_route_async(adm, "GET", "/cluster/metrics", route_cb, v);
	if (!v->serve) {
		return 0;
	}
	(void) snprintf(
	    addr, sizeof(addr), "%s%s", EB_WEB_CVIEW_PREFIX, v->self);
	return eb_bus_consumer_new(v->bus, addr, 0, serve_cb, v, &v->consumer);
}

void
eb__web_cview_release(eb__web_cview *v)
{
	EB_ASSERT(!v->released);
	v->released = 1;
	v->adm = NULL;
	if (v->consumer != NULL) {
		eb_bus_consumer_close(v->consumer);
		v->consumer = NULL;
	}
	if (v->gathers == 0) {
		cview_free(v);
	}
}
