/* Unit tests for mutual TLS on node links (link/link_tls.c): a link
 * between two nodes with certificates of the test CA carries frames; a peer
 * with a certificate of another CA, an expired certificate or no TLS at all
 * never gets a link, and the dialer reports the peer down for "tls"
 * (/health). Certificates come from the "certs" fixture
 * (tests/certs/gen.sh) in EB_CERTS_DIR. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/link.h>

#include "link/link.h"
#include "link/link_int.h"
#include "tests/harness/th.h"

typedef struct node {
	eb_link_mgr *mgr;
	int          ups;
	int          frames;
	int          closed;
	char         last_body[64];
	uint32_t     peer;
} node;

static void
up_cb(void *ctx, uint32_t peer, const char *node_id)
{
	node *n = ctx;

	(void) node_id;
	n->ups++;
	n->peer = peer;
}

static void
down_cb(void *ctx, uint32_t peer)
{
	(void) ctx;
	(void) peer;
}

static void
frame_cb(void *ctx, uint32_t peer, uint8_t type, const char *p, size_t len)
{
	node *n = ctx;

	(void) peer;
	(void) type;
	n->frames++;
	(void) snprintf(
	    n->last_body, sizeof(n->last_body), "%.*s", (int) len, p);
}

static const eb__link_handler handler = { up_cb, down_cb, frame_cb, NULL,
	NULL };

/* tls: "good" (server cert of the test CA), "wrongca", "expired", NULL. */
static void
node_open(th_loop *t, node *n, const char *id, const char *tls)
{
	eb_link_opts o;
	eb_errbuf    e;

	memset(n, 0, sizeof(*n));
	eb_link_opts_init(&o);
	o.node_id = id;
	o.connect_timeout_ms = 500;
	if (tls != NULL && strcmp(tls, "good") == 0) {
		o.tls_ca_file = th_cert("ca.pem");
		o.tls_cert_file = th_cert("server.pem");
		o.tls_key_file = th_cert("server.key");
	} else if (tls != NULL && strcmp(tls, "wrongca") == 0) {
		o.tls_ca_file = th_cert("wrongca.pem");
		o.tls_cert_file = th_cert("wrong.pem");
		o.tls_key_file = th_cert("wrong.key");
	} else if (tls != NULL) {
		o.tls_ca_file = th_cert("ca.pem");
		o.tls_cert_file = th_cert("expired.pem");
		o.tls_key_file = th_cert("expired.key");
	}
	assert_int_equal(eb_link_mgr_new(&t->loop, &o, &n->mgr, &e), 0);
	eb__link_mgr_set_handler(n->mgr, &handler, n);
	assert_int_equal(eb_link_mgr_start(n->mgr), 0);
}

static void
closed_cb(eb_link_mgr *m, void *arg)
{
	(void) m;
	((node *) arg)->closed++;
}

static void
node_close(th_loop *t, node *n)
{
	eb_link_mgr_close(n->mgr, closed_cb, n);
	assert_int_equal(th_run_until(t, th_flag_set, &n->closed, 2000), 0);
}

static int
both_up(void *arg)
{
	node **n = arg;

	return n[0]->ups > 0 && n[1]->ups > 0;
}

static int
attempts_ge2(void *arg)
{
	return ((link_peer *) arg)->attempts >= 2;
}

static void
test_mutual_tls_link(void **state)
{
	th_loop *t = *state;
	node     a;
	node     b;
	node    *both[2] = { &a, &b };
	eb__buf *buf;

	node_open(t, &a, "a", "good");
	node_open(t, &b, "b", "good");
	assert_int_equal(eb_link_mgr_peer_add(
	                     a.mgr, "b", "127.0.0.1", eb_link_mgr_port(b.mgr)),
	    0);
	assert_int_equal(th_run_until(t, both_up, both, 3000), 0);
	buf = eb__link_frame_begin(a.mgr, a.peer, EB_LINK_FRAME_USER);
	assert_non_null(buf);
	eb__buf_append(buf, "over tls", 8);
	assert_int_equal(eb__link_frame_end(a.mgr, a.peer), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &b.frames, 3000), 0);
	assert_string_equal(b.last_body, "over tls");
	node_close(t, &a);
	node_close(t, &b);
}

/* The dialer's reason for a peer whose link is down (link_version.c). */
static void
reason_cb(const eb_link_peer_stats *s, void *arg)
{
	const char **r = arg;

	if (strcmp(s->node_id, "b") == 0) {
		*r = s->down_reason;
	}
}

/* why: the reason the dialer (a) must report for b ("tls"), or NULL for
 * any reason (a plain peer may look unreachable: it just hangs up). */
static void
check_refused(th_loop *t, const char *tls_a, const char *tls_b, const char *why)
{
	node        a;
	node        b;
	link_peer  *p;
	const char *reason = NULL;

	node_open(t, &a, "a", tls_a);
	node_open(t, &b, "b", tls_b);
	assert_int_equal(eb_link_mgr_peer_add(
	                     a.mgr, "b", "127.0.0.1", eb_link_mgr_port(b.mgr)),
	    0);
	p = eb__link_peer_find(a.mgr, "b");
	assert_non_null(p);
	assert_int_equal(th_run_until(t, attempts_ge2, p, 5000), 0);
	assert_int_equal(a.ups + b.ups, 0);
	eb_link_mgr_stats_foreach(a.mgr, reason_cb, &reason);
	assert_non_null(reason);
	if (why != NULL) {
		assert_string_equal(reason, why);
		assert_int_equal(
		    eb_link_mgr_down_total(a.mgr, EB_LINK_DOWN_TLS), 1);
		/* TLS counts for /health at once. */
		assert_int_equal(eb_link_mgr_degraded(a.mgr, NULL, 0), 1);
	}
	node_close(t, &a);
	node_close(t, &b);
}

static void
test_wrong_ca_refused(void **state)
{
	check_refused(*state, "good", "wrongca", "tls");
	check_refused(*state, "wrongca", "good", "tls");
}

static void
test_expired_refused(void **state)
{
	check_refused(*state, "good", "expired", "tls");
}

static void
test_plain_peer_refused(void **state)
{
	check_refused(*state, NULL, "good", NULL);
	check_refused(*state, "good", NULL, NULL);
}

int
main(void)
{
	/* A peer that goes away mid-write must not kill the test: libuv
	 * writes with write(2), as ebnode does after ignoring SIGPIPE. */
	(void) signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_mutual_tls_link, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_wrong_ca_refused, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_expired_refused, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_plain_peer_refused, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
