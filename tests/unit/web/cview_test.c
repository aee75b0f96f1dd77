/* Unit tests for the dashboard's cluster view (web/cview.h) on a real loop,
 * a real admin server and socket, and a standalone bus standing in for the
 * node links: GET /cluster/metrics gathers this node's text and a peer's
 * (another view serving its internal address on the same bus), a member
 * nobody serves is reported at once, a request stamped by a bridge is
 * refused 403, at most EB_WEB_CVIEW_MAX_GATHERS views are in flight (the
 * next one: 503), and a view released while a gather waits is freed when
 * that gather ends (ASan's leak check) without answering. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/bus.h>
#include <ebnode/err.h>

#include "admin/admin.h"
#include "bridge/bridge_obs.h"
#include "tests/harness/th.h"
#include "tests/harness/th_http.h"
#include "web/cview.h"

/* ---- requests (tests/harness/th_http.h) ---- */

/* Starts GET path (Connection: close); c->done once the server closed. */
static void
get_start(th_loop *t, int port, const char *path, th_http *c)
{
	char req[256];

	(void) snprintf(req, sizeof(req),
	    "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	th_http_start(t, port, req, c);
}

/* The JSON body of a 200 answer (the caller decrefs). */
static json_t *
body_json(const th_http *c)
{
	const char  *b = strstr(c->resp, "\r\n\r\n");
	json_error_t e;
	json_t      *v;

	assert_non_null(strstr(c->resp, "HTTP/1.1 200 "));
	assert_non_null(b);
	v = json_loads(b + 4, 0, &e);
	assert_non_null(v);
	return v;
}

/* ---- fixtures ---- */

typedef struct peers {
	const char *ids[4];
	size_t      n;
} peers;

static size_t
peers_fn(void *arg, const char **ids, size_t max)
{
	peers *p = arg;
	size_t i;

	for (i = 0; i < p->n && i < max; i++) {
		ids[i] = p->ids[i];
	}
	return i;
}

static void
self_metrics(eb__prom *w, void *arg)
{
	eb__prom_one(w, "self_metric", "gauge", "Self.", *(uint64_t *) arg);
}

static void
peer_metrics(eb__prom *w, void *arg)
{
	(void) arg;
	eb__prom_one(w, "peer_metric", "gauge", "Peer.", 7);
}

typedef struct world {
	eb_bus        *bus;
	eb__admin     *adm;  /* this node's, started */
	eb__admin     *adm2; /* the peer's, never started */
	eb__web_cview *v;
	eb__web_cview *v2;
	int            port;
	uint64_t       self_value;
	peers          p;
} world;

static void
world_open(th_loop *t, world *w, uint64_t timeout_ms)
{
	eb_bus_opts        bo;
	eb__admin_opts     ao;
	eb__web_cview_opts vo;

	eb_bus_opts_init(&bo);
	bo.node_id = "self";
	assert_int_equal(eb_bus_new(&t->loop, &bo, &w->bus), 0);
	eb__admin_opts_init(&ao);
	assert_int_equal(eb__admin_new(&t->loop, &ao, &w->adm), 0);
	assert_int_equal(eb__admin_new(&t->loop, &ao, &w->adm2), 0);
	w->self_value = 3;
	eb__admin_on_metrics(w->adm, self_metrics, &w->self_value);
	eb__admin_on_metrics(w->adm2, peer_metrics, NULL);
	memset(&vo, 0, sizeof(vo));
	vo.bus = w->bus;
	vo.self_id = "self";
	vo.peers = peers_fn;
	vo.peers_arg = &w->p;
	vo.timeout_ms = timeout_ms;
	vo.serve = 1;
	assert_int_equal(eb__web_cview_new(&vo, &w->v), 0);
	assert_int_equal(eb__web_cview_start(w->v, w->adm), 0);
	vo.self_id = "peer";
	vo.peers = NULL;
	assert_int_equal(eb__web_cview_new(&vo, &w->v2), 0);
	assert_int_equal(eb__web_cview_start(w->v2, w->adm2), 0);
	w->port = eb__admin_start(w->adm);
	assert_true(w->port > 0);
}

static void
count_cb(void *arg)
{
	(*(int *) arg)++;
}

static void
bus_closed_cb(eb_bus *bus, void *arg)
{
	(void) bus;
	(*(int *) arg)++;
}

static void
world_close(th_loop *t, world *w)
{
	int closed = 0;

	if (w->v != NULL) {
		eb__web_cview_release(w->v);
	}
	eb__web_cview_release(w->v2);
	eb__admin_close(w->adm, count_cb, &closed);
	eb__admin_close(w->adm2, count_cb, &closed);
	eb_bus_close(w->bus, bus_closed_cb, &closed);
	assert_int_equal(th_run_until(t, th_flag_set, &closed, 5000), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(closed, 3);
}

/* ---- tests ---- */

static void
test_gather(void **state)
{
	th_loop      *t = *state;
	world         w;
	th_http       c;
	json_t       *o;
	json_t       *nodes;
	const json_t *n;

	memset(&w, 0, sizeof(w));
	w.p.ids[0] = "peer";
	w.p.ids[1] = "ghost";
	w.p.n = 2;
	world_open(t, &w, 1000);
	get_start(t, w.port, "/cluster/metrics", &c);
	assert_int_equal(th_run_until(t, th_flag_set, &c.done, 5000), 0);
	o = body_json(&c);
	assert_string_equal(
	    json_string_value(json_object_get(o, "node_id")), "self");
	nodes = json_object_get(o, "nodes");
	assert_int_equal(json_array_size(nodes), 3);
	n = json_array_get(nodes, 0);
	assert_string_equal(
	    json_string_value(json_object_get(n, "node_id")), "self");
	assert_true(json_is_true(json_object_get(n, "self")));
	assert_non_null(strstr(json_string_value(json_object_get(n, "metrics")),
	    "self_metric 3\n"));
	n = json_array_get(nodes, 1);
	assert_string_equal(
	    json_string_value(json_object_get(n, "node_id")), "peer");
	assert_true(json_is_true(json_object_get(n, "ok")));
	assert_true(json_is_false(json_object_get(n, "self")));
	assert_non_null(strstr(json_string_value(json_object_get(n, "metrics")),
	    "peer_metric 7\n"));
	n = json_array_get(nodes, 2);
	assert_true(json_is_false(json_object_get(n, "ok")));
	assert_string_equal(json_string_value(json_object_get(n, "error")),
	    "No handlers for address " EB_WEB_CVIEW_PREFIX "ghost");
	json_decref(o);
	world_close(t, &w);
}

typedef struct reply_rec {
	int done;
	int status;
	int type;
	int code;
} reply_rec;

static void
reply_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	reply_rec *r = arg;

	(void) bus;
	(void) reply;
	r->done = 1;
	r->status = status;
	if (failure != NULL) {
		r->type = (int) failure->type;
		r->code = failure->code;
	}
}

static void
test_bridge_stamp_refused(void **state)
{
	th_loop         *t = *state;
	world            w;
	reply_rec        r;
	json_t          *h = json_pack("{s:s}", EB__BRIDGE_CONN_HEADER, "1");
	eb_bus_send_opts so;

	memset(&w, 0, sizeof(w));
	memset(&r, 0, sizeof(r));
	world_open(t, &w, 1000);
	eb_bus_send_opts_init(&so);
	assert_int_equal(eb_bus_request(w.bus, EB_WEB_CVIEW_PREFIX "peer", NULL,
	                     h, &so, reply_cb, &r),
	    0);
	assert_int_equal(th_run_until(t, th_flag_set, &r.done, 5000), 0);
	assert_int_equal(r.status, EB_ERECIPIENT);
	assert_int_equal(r.type, EB_BUS_RECIPIENT_FAILURE);
	assert_int_equal(r.code, 403);
	json_decref(h);
	world_close(t, &w);
}

/* A member that never answers: a consumer that keeps its messages. */
typedef struct silent {
	eb_bus_consumer *c;
	int              got;
} silent;

static void
silent_cb(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	(void) c;
	(void) msg;
	((silent *) arg)->got++;
}

static int
got_all(void *arg)
{
	return ((silent *) arg)->got >= EB_WEB_CVIEW_MAX_GATHERS;
}

static int
all_done(void *arg)
{
	th_http *cs = arg;
	int      i;

	for (i = 0; i <= EB_WEB_CVIEW_MAX_GATHERS; i++) {
		if (!cs[i].done) {
			return 0;
		}
	}
	return 1;
}

static void
test_busy_and_release_in_flight(void **state)
{
	th_loop *t = *state;
	world    w;
	silent   s;
	th_http *cs = calloc(EB_WEB_CVIEW_MAX_GATHERS + 1, sizeof(th_http));
	int      ok = 0;
	int      busy = 0;
	int      i;

	memset(&w, 0, sizeof(w));
	memset(&s, 0, sizeof(s));
	w.p.ids[0] = "slow";
	w.p.n = 1;
	world_open(t, &w, 200);
	assert_int_equal(eb_bus_consumer_new(w.bus, EB_WEB_CVIEW_PREFIX "slow",
	                     0, silent_cb, &s, &s.c),
	    0);
	/* One over the bound: the last dispatched is answered 503 at once. */
	for (i = 0; i <= EB_WEB_CVIEW_MAX_GATHERS; i++) {
		get_start(t, w.port, "/cluster/metrics", &cs[i]);
	}
	assert_int_equal(th_run_until(t, all_done, cs, 5000), 0);
	for (i = 0; i <= EB_WEB_CVIEW_MAX_GATHERS; i++) {
		ok += strstr(cs[i].resp, "HTTP/1.1 200 ") != NULL;
		busy += strstr(cs[i].resp, "HTTP/1.1 503 ") != NULL &&
		        strstr(cs[i].resp, "\"busy\"") != NULL;
	}
	assert_int_equal(ok, EB_WEB_CVIEW_MAX_GATHERS);
	assert_int_equal(busy, 1);
	assert_true(strstr(cs[0].resp, "\"ok\":false") != NULL ||
	            strstr(cs[1].resp, "\"ok\":false") != NULL);

	/* Released while a gather waits for "slow": no answer, and the view
	 * is freed when that request times out. */
	s.got = EB_WEB_CVIEW_MAX_GATHERS - 1;
	get_start(t, w.port, "/cluster/metrics", &cs[0]);
	assert_int_equal(th_run_until(t, got_all, &s, 5000), 0);
	eb__web_cview_release(w.v);
	w.v = NULL;
	eb_bus_consumer_close(s.c);
	world_close(t, &w);
	assert_true(cs[0].done);
	assert_null(strstr(cs[0].resp, "HTTP/1.1 200 "));
	free(cs);
}

static void
test_new_invalid(void **state)
{
	eb__web_cview_opts o;
	eb__web_cview     *v = NULL;
	char               longid[300];

	(void) state;
	memset(&o, 0, sizeof(o));
	assert_int_equal(eb__web_cview_new(NULL, &v), UV_EINVAL);
	assert_int_equal(eb__web_cview_new(&o, &v), UV_EINVAL); /* no bus */
	o.bus = (eb_bus *) &o; /* never used: self_id fails first */
	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	o.self_id = longid;
	assert_int_equal(eb__web_cview_new(&o, &v), UV_EINVAL);
	assert_null(v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_gather, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_bridge_stamp_refused, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_busy_and_release_in_flight, th_setup, th_teardown),
		cmocka_unit_test(test_new_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
