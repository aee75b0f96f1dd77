/*
 * The bus services of shared data (docs/SHARED.md): ebnode.lock,
 * ebnode.counter and ebnode.id, node-local consumers so that a bridge
 * client's request is served by its own node, whose session then holds the
 * client's locks. Requests are JSON objects; answers are a reply body or a
 * RECIPIENT_FAILURE with one of the codes below.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ebnode/bus.h>
#include <ebnode/shared.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/list.h"

/* Failure codes (docs/SHARED.md "Failure codes"). */
#define SVC_BAD_REQUEST 400
#define SVC_NOT_HELD    404
#define SVC_TIMEOUT     408
#define SVC_BUSY        409
#define SVC_TOO_MANY    429
#define SVC_FAILED      500
#define SVC_UNAVAILABLE 503

#define SVC_DEFAULT_TIMEOUT_MS 10000

struct eb_shared_service {
	eb_shared       *s;
	eb_bus          *bus;
	eb_bus_consumer *lock_c, *counter_c, *id_c;
	eb__list         locks; /* of svc_lock */
	int              closing;
};

typedef struct svc_lock {
	eb_shared_service *svc;
	eb__list           link;
	eb_lock           *lk;
	eb_bus_msg        *msg; /* the acquire awaiting its answer, or NULL */
	uint64_t           owner;
	int64_t            token;
	char              *name;
	char              *notify; /* NULL: none */
} svc_lock;

/* "<what><detail>" as the failure message. */
static void
fail(eb_bus_msg *msg, int code, const char *what, const char *detail)
{
	char text[300];

	(void) snprintf(text, sizeof(text), "%s%s", what, detail);
	(void) eb_bus_msg_fail(msg, code, text);
}

static void
reply(eb_bus_msg *msg, json_t *body)
{
	(void) eb_bus_msg_reply(msg, body, NULL, NULL, NULL, NULL);
	json_decref(body);
}

/* The failure code and text of an eb_shared status. */
static void
fail_status(eb_bus_msg *msg, int status)
{
	char text[200];
	int  code = SVC_FAILED;

	switch (status) {
	case EB_ETIMEOUT:
		code = SVC_TIMEOUT;
		break;
	case UV_EBUSY:
		code = SVC_BUSY;
		break;
	case EB_EFULL:
		(void) eb_bus_msg_fail(msg, SVC_TOO_MANY,
		    "too_many: a cap of this node or cluster is reached "
		    "(shared.max_locks_per_conn, shared.max_locks_per_node "
		    "or shared.max_counters)");
		return;
	case UV_EINVAL:
		code = SVC_BAD_REQUEST;
		break;
	case EB_EZKLOSS:
	case EB_EZKEXPIRED:
	case EB_ECONF:
	case EB_ECANCELED:
	case EB_ECLOSED:
		code = SVC_UNAVAILABLE;
		break;
	default:
		break;
	}
	(void) snprintf(text, sizeof(text), "%s: %s", eb_err_name(status),
	    eb_strerror(status));
	(void) eb_bus_msg_fail(msg, code, text);
}

static uint64_t
msg_owner(const eb_bus_msg *msg)
{
	const json_t *h = eb_bus_msg_headers(msg);
	const char   *v =
            h != NULL
	          ? json_string_value(json_object_get(h, EB_SHARED_CONN_HEADER))
	          : NULL;

	return v != NULL ? strtoull(v, NULL, 10) : 0;
}

/* ---- locks ---- */

static void
sl_free(svc_lock *sl)
{
	eb__list_remove(&sl->link);
	if (sl->msg != NULL) {
		eb_bus_msg_release(sl->msg);
	}
	free(sl->name);
	free(sl->notify);
	free(sl);
}

static void
sl_acquired(eb_lock *lk, int status, int64_t token, void *arg)
{
	svc_lock *sl = arg;
	json_t   *body;

	if (status != 0) {
		fail_status(sl->msg, status);
		sl_free(sl);
		return;
	}
	sl->token = token;
	body = json_pack(
	    "{s:s, s:I}", "name", sl->name, "token", (json_int_t) token);
	reply(sl->msg, body);
	eb_bus_msg_release(sl->msg);
	sl->msg = NULL;
	(void) lk;
}

static void
sl_revoked(eb_lock *lk, const char *reason, void *arg)
{
	svc_lock *sl = arg;
	json_t   *body;

	(void) lk;
	if (sl->notify != NULL && !sl->svc->closing) {
		body = json_pack("{s:s, s:I, s:s}", "name", sl->name, "token",
		    (json_int_t) sl->token, "reason", reason);
		(void) eb_bus_send(sl->svc->bus, sl->notify, body, NULL, NULL);
		json_decref(body);
	}
	sl_free(sl);
}

static svc_lock *
sl_find(eb_shared_service *svc, uint64_t owner, const char *name, int64_t token)
{
	eb__list *it;

	for (it = eb__list_first(&svc->locks); it != NULL && it != &svc->locks;
	     it = it->next) {
		svc_lock *sl = EB_CONTAINER_OF(it, svc_lock, link);

		if (sl->msg == NULL && sl->owner == owner &&
		    sl->token == token && strcmp(sl->name, name) == 0) {
			return sl;
		}
	}
	return NULL;
}

static void
lock_acquire(eb_shared_service *svc, eb_bus_msg *msg, const json_t *b,
    const char *name, int try_only)
{
	const json_t *t = json_object_get(b, "timeout_ms");
	const char   *notify = json_string_value(json_object_get(b, "notify"));
	int64_t       timeout = SVC_DEFAULT_TIMEOUT_MS;
	svc_lock     *sl;
	int           rv;

	if (t != NULL) {
		if (!json_is_integer(t)) {
			fail(msg, SVC_BAD_REQUEST,
			    "bad_request: timeout_ms must be an integer", "");
			return;
		}
		timeout = json_integer_value(t);
	}
	if (try_only) {
		timeout = 0;
	} else if (timeout <= 0) {
		timeout = -1; /* no bound (the bus request timeout is one) */
	}
	sl = eb__calloc(1, sizeof(*sl));
	sl->svc = svc;
	sl->owner = msg_owner(msg);
	sl->name = eb__strdup(name);
	sl->notify = notify != NULL ? eb__strdup(notify) : NULL;
	sl->msg = eb_bus_msg_hold(msg);
	eb__list_init(&sl->link);
	eb__list_insert_tail(&svc->locks, &sl->link);
	rv = eb_lock_acquire(svc->s, name, timeout, sl->owner, sl_acquired,
	    sl_revoked, sl, &sl->lk);
	if (rv != 0) {
		fail_status(msg, rv);
		sl_free(sl);
	}
}

static void
lock_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	eb_shared_service *svc = arg;
	const json_t      *b = eb_bus_msg_body(msg);
	const char        *op = json_string_value(json_object_get(b, "op"));
	const char        *name = json_string_value(json_object_get(b, "name"));
	svc_lock          *sl;

	(void) c;
	if (eb_bus_msg_reply_address(msg) == NULL) {
		return; /* a send without reply: nobody to answer */
	}
	if (op == NULL || name == NULL) {
		fail(msg, SVC_BAD_REQUEST,
		    "bad_request: \"op\" and \"name\" are required", "");
		return;
	}
	if (strcmp(op, "acquire") == 0 || strcmp(op, "try") == 0) {
		lock_acquire(svc, msg, b, name, op[0] == 't');
	} else if (strcmp(op, "release") == 0) {
		const json_t *t = json_object_get(b, "token");

		if (!json_is_integer(t)) {
			fail(msg, SVC_BAD_REQUEST,
			    "bad_request: \"token\" is required", "");
			return;
		}
		sl = sl_find(svc, msg_owner(msg), name, json_integer_value(t));
		if (sl == NULL) {
			fail(msg, SVC_NOT_HELD,
			    "not_held: this sender holds no lock with this "
			    "name and token: ",
			    name);
			return;
		}
		eb_lock_release(sl->lk);
		sl_free(sl);
		reply(
		    msg, json_pack("{s:s, s:b}", "name", name, "released", 1));
	} else {
		fail(msg, SVC_BAD_REQUEST, "bad_request: unknown op ", op);
	}
}

size_t
eb_shared_service_conn_closed(eb_shared_service *svc, uint64_t conn_id)
{
	eb__list *it, *tmp;
	size_t    n = 0;

	if (conn_id == 0) {
		return 0;
	}
	EB_LIST_FOREACH (it, tmp, &svc->locks) {
		svc_lock *sl = EB_CONTAINER_OF(it, svc_lock, link);

		if (sl->owner != conn_id) {
			continue;
		}
		if (sl->msg != NULL) {
			(void) eb_bus_msg_fail(sl->msg, SVC_UNAVAILABLE,
			    "unavailable: the sender's connection closed");
		}
		eb_lock_release(sl->lk);
		sl_free(sl);
		n++;
	}
	return n;
}

/* ---- counters ---- */

typedef struct svc_op {
	eb_bus_msg *msg;
	char       *name;
	int         kind; /* 0: value; 'c': cas (ok); 'd': delete */
} svc_op;

static void
counter_cb(eb_shared *s, int status, int64_t value, int ok, void *arg)
{
	svc_op *o = arg;

	(void) s;
	if (status != 0) {
		fail_status(o->msg, status);
	} else if (o->kind == 'c') {
		reply(o->msg, json_pack("{s:s, s:I, s:b}", "name", o->name,
		                  "value", (json_int_t) value, "ok", ok));
	} else if (o->kind == 'd') {
		reply(o->msg, json_pack("{s:s, s:b, s:I}", "name", o->name,
		                  "deleted", ok, "value", (json_int_t) value));
	} else {
		reply(o->msg, json_pack("{s:s, s:I}", "name", o->name, "value",
		                  (json_int_t) value));
	}
	eb_bus_msg_release(o->msg);
	free(o->name);
	free(o);
}

static int
int_field(const json_t *b, const char *key, int64_t *out)
{
	const json_t *v = json_object_get(b, key);

	if (!json_is_integer(v)) {
		return -1;
	}
	*out = json_integer_value(v);
	return 0;
}

static void
counter_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	eb_shared_service *svc = arg;
	const json_t      *b = eb_bus_msg_body(msg);
	const char        *op = json_string_value(json_object_get(b, "op"));
	const char        *name = json_string_value(json_object_get(b, "name"));
	int64_t            x = 1, y = 0;
	svc_op            *o;
	int                rv;

	(void) c;
	if (eb_bus_msg_reply_address(msg) == NULL) {
		return;
	}
	if (op == NULL || name == NULL) {
		fail(msg, SVC_BAD_REQUEST,
		    "bad_request: \"op\" and \"name\" are required", "");
		return;
	}
	o = eb__calloc(1, sizeof(*o));
	o->msg = eb_bus_msg_hold(msg);
	o->name = eb__strdup(name);
	if (strcmp(op, "get") == 0) {
		rv = eb_counter_get(svc->s, name, counter_cb, o);
	} else if (strcmp(op, "increment") == 0) {
		rv = eb_counter_add(svc->s, name, 1, counter_cb, o);
	} else if (strcmp(op, "add") == 0) {
		rv = int_field(b, "delta", &x) != 0
		         ? UV_EINVAL
		         : eb_counter_add(svc->s, name, x, counter_cb, o);
	} else if (strcmp(op, "cas") == 0) {
		o->kind = 'c';
		rv = int_field(b, "expect", &x) != 0 ||
		             int_field(b, "update", &y) != 0
		         ? UV_EINVAL
		         : eb_counter_cas(svc->s, name, x, y, counter_cb, o);
	} else if (strcmp(op, "delete") == 0) {
		o->kind = 'd';
		rv = eb_counter_delete(svc->s, name, counter_cb, o);
	} else {
		rv = UV_EINVAL;
	}
	if (rv != 0) {
		fail_status(msg, rv);
		eb_bus_msg_release(o->msg);
		free(o->name);
		free(o);
	}
}

/* ---- ids ---- */

static void
id_cb(eb_shared *s, int status, const uint64_t *ids, size_t count, void *arg)
{
	eb_bus_msg *msg = arg;
	json_t     *a;
	size_t      i;

	(void) s;
	if (status != 0) {
		fail_status(msg, status);
	} else {
		a = json_array();
		for (i = 0; i < count; i++) {
			(void) json_array_append_new(
			    a, json_integer((json_int_t) ids[i]));
		}
		reply(msg, json_pack("{s:o}", "ids", a));
	}
	eb_bus_msg_release(msg);
}

static void
id_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	eb_shared_service *svc = arg;
	const json_t      *b = eb_bus_msg_body(msg);
	const json_t      *n = json_object_get(b, "count");
	int64_t            count = 1;
	int                rv;

	(void) c;
	if (eb_bus_msg_reply_address(msg) == NULL) {
		return;
	}
	if (n != NULL) {
		if (!json_is_integer(n)) {
			fail(msg, SVC_BAD_REQUEST,
			    "bad_request: count must be an integer", "");
			return;
		}
		count = json_integer_value(n);
	}
	if (count < 1 || count > EB_SHARED_ID_BLOCK) {
		fail(msg, SVC_BAD_REQUEST, "bad_request: count must be 1..",
		    "1000");
		return;
	}
	rv = eb_id_next(svc->s, (size_t) count, id_cb, eb_bus_msg_hold(msg));
	if (rv != 0) {
		fail_status(msg, rv);
		eb_bus_msg_release(msg);
	}
}

/* ---- lifecycle ---- */

int
eb_shared_service_new(eb_shared *s, struct eb_bus *bus, eb_shared_service **out)
{
	eb_shared_service *svc = eb__calloc(1, sizeof(*svc));
	int                rv;

	svc->s = s;
	svc->bus = bus;
	eb__list_init(&svc->locks);
	rv = eb_bus_consumer_new(
	    bus, EB_SHARED_LOCK_ADDRESS, 1, lock_handler, svc, &svc->lock_c);
	if (rv == 0) {
		rv = eb_bus_consumer_new(bus, EB_SHARED_COUNTER_ADDRESS, 1,
		    counter_handler, svc, &svc->counter_c);
	}
	if (rv == 0) {
		rv = eb_bus_consumer_new(
		    bus, EB_SHARED_ID_ADDRESS, 1, id_handler, svc, &svc->id_c);
	}
	if (rv != 0) {
		eb_shared_service_close(svc);
		return rv;
	}
	*out = svc;
	return 0;
}

void
eb_shared_service_close(eb_shared_service *svc)
{
	eb__list *it, *tmp;

	EB_ASSERT(!svc->closing); /* close is exactly once */
	svc->closing = 1;
	if (svc->lock_c != NULL) {
		eb_bus_consumer_close(svc->lock_c);
	}
	if (svc->counter_c != NULL) {
		eb_bus_consumer_close(svc->counter_c);
	}
	if (svc->id_c != NULL) {
		eb_bus_consumer_close(svc->id_c);
	}
	EB_LIST_FOREACH (it, tmp, &svc->locks) {
		svc_lock *sl = EB_CONTAINER_OF(it, svc_lock, link);

		if (sl->msg != NULL) {
			(void) eb_bus_msg_fail(sl->msg, SVC_UNAVAILABLE,
			    "unavailable: the node is stopping");
		}
		eb_lock_release(sl->lk);
		sl_free(sl);
	}
	free(svc);
}
