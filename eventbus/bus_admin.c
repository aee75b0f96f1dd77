/*
 * GET /subscriptions and the bus metric families (bus_admin.h), read on
 * demand: a scrape costs one pass over the address table, keeping the
 * EB__BUS_METRICS_TOP busiest addresses. Loop thread only.
 */
#include "eventbus/bus_admin.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "admin/url.h"
#include "common/alloc.h"
#include "common/util.h"
#include "common/vec.h"

/* ---- metrics ---- */

typedef struct bus_row {
	char             *address; /* owned */
	uint64_t          total;
	eb_bus_addr_stats st;
} bus_row;

typedef struct bus_top {
	bus_row rows[EB__BUS_METRICS_TOP];
	size_t  n;
	size_t  least; /* the least busy row, once the table is full */
} bus_top;

static uint64_t
bus_total(const eb_bus_addr_stats *s)
{
	return s->sent + s->published + s->received + s->replied + s->failed +
	       s->dropped;
}

/* Busier first; ties by address so that the selection is deterministic. */
static int
bus_row_before(uint64_t ta, const char *aa, uint64_t tb, const char *ab)
{
	return ta > tb || (ta == tb && strcmp(aa, ab) < 0);
}

static void
bus_top_find_least(bus_top *t)
{
	size_t i;

	t->least = 0;
	for (i = 1; i < t->n; i++) {
		if (bus_row_before(t->rows[t->least].total,
		        t->rows[t->least].address, t->rows[i].total,
		        t->rows[i].address)) {
			t->least = i;
		}
	}
}

/* Keeps the EB__BUS_METRICS_TOP busiest records: O(1) for a record that
 * does not make it, O(EB__BUS_METRICS_TOP) for one that does. */
static void
bus_top_cb(const eb_bus_addr_stats *s, void *arg)
{
	bus_top *t = arg;
	uint64_t total = bus_total(s);
	size_t   slot = t->n;

	if (t->n == EB__BUS_METRICS_TOP) {
		slot = t->least;
		if (!bus_row_before(total, s->address, t->rows[slot].total,
		        t->rows[slot].address)) {
			return;
		}
		free(t->rows[slot].address);
	} else {
		t->n++;
	}
	t->rows[slot].address = eb__strdup(s->address);
	t->rows[slot].total = total;
	t->rows[slot].st = *s;
	t->rows[slot].st.address = t->rows[slot].address;
	if (t->n == EB__BUS_METRICS_TOP) {
		bus_top_find_least(t);
	}
}

static int
bus_row_cmp(const void *a, const void *b)
{
	const bus_row *ra = a;
	const bus_row *rb = b;

	if (ra->total != rb->total) {
		return ra->total > rb->total ? -1 : 1;
	}
	return strcmp(ra->address, rb->address);
}

#define BT(m) EB__PROM_AT(eb_bus_totals, m)
#define BR(m) EB__PROM_AT(bus_row, m)

static const eb__prom_field all_kinds[] = {
	{ "sent", BT(sent) },
	{ "published", BT(published) },
	{ "received", BT(received) },
	{ "replied", BT(replied) },
	{ "failed", BT(failed) },
	{ "dropped", BT(dropped) },
};

static const eb__prom_desc total_families[] = {
	EB__PROM_SET("ebnode_bus_messages_all_total", "counter",
	    "Bus messages of every address, by kind.", "kind", all_kinds),
	EB__PROM_ONE("ebnode_bus_no_handlers_total", "counter",
	    "Sends and requests that found no handler.", BT(no_handlers)),
	EB__PROM_ONE("ebnode_bus_addresses", "gauge",
	    "Address records (local consumers or remote interest).",
	    BT(addresses)),
	EB__PROM_ONE("ebnode_bus_pending_requests", "gauge",
	    "Requests awaiting a reply.", BT(pending_requests)),
	EB__PROM_ONE("ebnode_bus_requests_refused_total", "counter",
	    "Requests failed at once (too_many_requests) because "
	    "bus.max_pending_requests were pending.",
	    BT(requests_refused)),
};

static const eb__prom_field row_kinds[] = {
	{ "sent", BR(st.sent) },
	{ "published", BR(st.published) },
	{ "received", BR(st.received) },
	{ "replied", BR(st.replied) },
	{ "failed", BR(st.failed) },
	{ "dropped", BR(st.dropped) },
};

static const eb__prom_field row_where[] = {
	{ "local", BR(st.handlers) },
	{ "remote", BR(st.remote_handlers) },
};

/* Over the busiest addresses, labelled address="...". */
static const eb__prom_desc row_families[] = {
	EB__PROM_SET("ebnode_bus_messages_total", "counter",
	    "Bus messages per address and kind, for the busiest addresses "
	    "only (at most 32; see ebnode_bus_addresses).",
	    "kind", row_kinds),
	EB__PROM_SET("ebnode_bus_handlers", "gauge",
	    "Handlers per address (same addresses as "
	    "ebnode_bus_messages_total), local or on other nodes.",
	    "where", row_where),
};

static const eb__prom_field error_types[] = {
	{ "bus_no_handlers", BT(no_handlers) },
	{ "bus_failed", BT(failed) },
	{ "bus_dropped", BT(dropped) },
};

/* bus's totals, or zeros without a bus. */
static void
totals_get(eb_bus *bus, eb_bus_totals *t)
{
	memset(t, 0, sizeof(*t));
	if (bus != NULL) {
		eb_bus_stats_totals(bus, t);
	}
}

static void
bus_metrics(eb__prom *w, void *arg)
{
	eb_bus       *bus = arg;
	bus_top      *t = eb__calloc(1, sizeof(*t));
	eb_bus_totals bt;
	eb__prom_rows rows;
	size_t        i;

	totals_get(bus, &bt);
	if (bus != NULL) {
		eb_bus_stats_foreach(bus, bus_top_cb, t);
	}
	qsort(t->rows, t->n, sizeof(t->rows[0]), bus_row_cmp);
	eb__prom_write(w, total_families, EB__PROM_LEN(total_families), &bt);
	rows.label = "address";
	rows.label_off = offsetof(bus_row, address);
	rows.base = t->rows;
	rows.stride = sizeof(t->rows[0]);
	rows.n = t->n;
	eb__prom_write_rows(w, row_families, EB__PROM_LEN(row_families), &rows);
	for (i = 0; i < t->n; i++) {
		free(t->rows[i].address);
	}
	free(t);
}

/* ---- GET /subscriptions ---- */

/* Query: ?prefix=<address prefix>&limit=<n>; the answer lists the first
 * limit matching addresses in address order, so that a node with a huge
 * address table is never serialised whole on the loop. */
#define SUBS_LIMIT_DEFAULT 1000
#define SUBS_LIMIT_MAX     100000
#define SUBS_PREFIX_MAX    1024

typedef struct subs_query {
	char    prefix[SUBS_PREFIX_MAX + 1];
	int64_t limit;
} subs_query;

/* Parses the query string into q. 0, or -1 with a message for a 400. */
static int
subs_query_parse(const char *query, subs_query *q, const char **why)
{
	const char *p = query;

	q->prefix[0] = '\0';
	q->limit = SUBS_LIMIT_DEFAULT;
	while (*p != '\0') {
		const char *amp = strchr(p, '&');
		size_t      len = amp != NULL ? (size_t) (amp - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t      klen = eq != NULL ? (size_t) (eq - p) : len;
		const char *val = eq != NULL ? eq + 1 : p + len;
		size_t      vlen = (size_t) (p + len - val);
		char        num[24];

		if (klen == 6 && strncmp(p, "prefix", 6) == 0) {
			if (eb__url_decode(
			        val, vlen, q->prefix, sizeof(q->prefix)) != 0) {
				*why = "bad prefix (escape or length)";
				return -1;
			}
		} else if (klen == 5 && strncmp(p, "limit", 5) == 0) {
			if (eb__url_decode(val, vlen, num, sizeof(num)) != 0 ||
			    eb__parse_i64(num, 0, SUBS_LIMIT_MAX, &q->limit) !=
			        0) {
				*why = "limit: expected an integer 0..100000";
				return -1;
			}
		} else if (len > 0) {
			*why = "unknown query parameter (prefix, limit)";
			return -1;
		}
		p += len + (amp != NULL ? 1 : 0);
	}
	return 0;
}

typedef struct subs_scan {
	const char *prefix;
	size_t      prefix_len;
	eb__vec     rows; /* of bus_row */
} subs_scan;

static void
subs_cb(const eb_bus_addr_stats *s, void *arg)
{
	subs_scan *sc = arg;
	bus_row   *r;

	if (strncmp(s->address, sc->prefix, sc->prefix_len) != 0) {
		return;
	}
	r = eb__vec_push(&sc->rows);
	r->address = eb__strdup(s->address);
	r->st = *s;
	r->st.address = r->address;
}

static int
subs_cmp(const void *a, const void *b)
{
	const bus_row *ra = a;
	const bus_row *rb = b;

	return strcmp(ra->address, rb->address);
}

static json_t *
subs_row_json(const eb_bus_addr_stats *s)
{
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
	                 "s:I}",
	    "address", s->address, "handlers", (json_int_t) s->handlers,
	    "local_only_handlers", (json_int_t) s->local_only_handlers,
	    "remote_handlers", (json_int_t) s->remote_handlers, "remote_nodes",
	    (json_int_t) s->remote_nodes, "sent", (json_int_t) s->sent,
	    "published", (json_int_t) s->published, "received",
	    (json_int_t) s->received, "replied", (json_int_t) s->replied,
	    "failed", (json_int_t) s->failed, "dropped",
	    (json_int_t) s->dropped);
}

static json_t *
subs_totals_json(eb_bus *bus)
{
	eb_bus_totals t;

	eb_bus_stats_totals(bus, &t);
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
	    "addresses", (json_int_t) t.addresses, "pending_requests",
	    (json_int_t) t.pending_requests, "no_handlers",
	    (json_int_t) t.no_handlers, "sent", (json_int_t) t.sent,
	    "published", (json_int_t) t.published, "received",
	    (json_int_t) t.received, "replied", (json_int_t) t.replied,
	    "failed", (json_int_t) t.failed, "dropped", (json_int_t) t.dropped);
}

static void
subscriptions_route(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	eb_bus     *bus = arg;
	subs_query  q;
	subs_scan   sc;
	const char *why = NULL;
	json_t     *arr;
	json_t     *o;
	size_t      i;

	if (subs_query_parse(rq->query, &q, &why) != 0) {
		eb__admin_reply_error(rs, 400, "bad_request", why);
		return;
	}
	if (bus == NULL) {
		eb__admin_reply_error(
		    rs, 503, "unavailable", "bus not running");
		return;
	}
	sc.prefix = q.prefix;
	sc.prefix_len = strlen(q.prefix);
	eb__vec_init(&sc.rows, sizeof(bus_row));
	eb_bus_stats_foreach(bus, subs_cb, &sc);
	eb__vec_sort(&sc.rows, subs_cmp);
	arr = json_array();
	for (i = 0; i < sc.rows.len; i++) {
		bus_row *r = eb__vec_at(&sc.rows, i);

		if (i < (size_t) q.limit) {
			(void) json_array_append_new(
			    arr, subs_row_json(&r->st));
		}
		free(r->address);
	}
	o = json_pack("{s:s, s:s, s:I, s:I, s:b, s:o, s:o}", "node_id",
	    eb_bus_node_id(bus), "prefix", q.prefix, "matched",
	    (json_int_t) sc.rows.len, "limit", (json_int_t) q.limit,
	    "truncated", sc.rows.len > (size_t) q.limit, "totals",
	    subs_totals_json(bus), "subscriptions", arr);
	eb__vec_free(&sc.rows);
	eb__admin_reply_json(rs, 200, o);
	json_decref(o);
}

void
eb__bus_admin_register(eb__admin *adm, eb_bus *bus)
{
	eb__admin_route(adm, "GET", "/subscriptions", subscriptions_route, bus);
	eb__admin_on_metrics(adm, bus_metrics, bus);
}

void
eb__bus_admin_errors(eb__prom *w, eb_bus *bus)
{
	eb_bus_totals t;

	totals_get(bus, &t);
	eb__admin_error_rows(w, error_types, EB__PROM_LEN(error_types), &t);
}
