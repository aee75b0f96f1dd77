/*
 * Embedding the ebnode event bus in your own libuv program: one consumer
 * that answers requests, one request with a reply handler, one publish, and
 * an orderly close. Build: part of the ebnode build (target `embed`); see
 * docs/EMBEDDING.md. Exits 0 when everything arrived as expected.
 */
#include <stdio.h>

#include <jansson.h>
#include <uv.h>

#include <ebnode/bus.h>

struct app {
	eb_bus          *bus;
	eb_bus_consumer *greeter;
	eb_bus_consumer *news;
	int              replies;
	int              news_seen;
};

/* A consumer: answers {"name": N} with {"greeting": "hello N"}. */
static void
greeter_fn(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	const json_t *name = json_object_get(eb_bus_msg_body(msg), "name");
	json_t       *reply;

	(void) c;
	(void) arg;
	if (eb_bus_msg_reply_address(msg) == NULL) {
		return; /* a plain send: nothing to answer */
	}
	if (!json_is_string(name)) {
		(void) eb_bus_msg_fail(msg, 400, "name missing");
		return;
	}
	reply =
	    json_pack("{s:s+}", "greeting", "hello ", json_string_value(name));
	(void) eb_bus_msg_reply(msg, reply, NULL, NULL, NULL, NULL);
	json_decref(reply);
}

static void
news_fn(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	struct app *app = arg;

	(void) c;
	(void) printf("news: %s\n", eb_bus_msg_body_bytes(msg, NULL));
	app->news_seen++;
}

static void
closed_cb(eb_bus *bus, void *arg)
{
	(void) bus;
	(void) arg;
	(void) printf("bus closed\n");
}

static void
reply_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	struct app *app = arg;

	if (status == 0) {
		(void) printf(
		    "reply: %s\n", eb_bus_msg_body_bytes(reply, NULL));
		app->replies++;
	} else {
		(void) printf("failed: %s %d %s\n",
		    eb_bus_failure_name(failure->type), failure->code,
		    failure->message);
	}
	if (app->replies + (status != 0) == 2) {
		/* Both requests are answered: close everything. Closing from
		 * a callback is fine; the close callback runs later. */
		eb_bus_consumer_close(app->greeter);
		eb_bus_consumer_close(app->news);
		eb_bus_close(bus, closed_cb, NULL);
	}
}

int
main(void)
{
	uv_loop_t        loop;
	eb_bus_opts      opts;
	eb_bus_send_opts so;
	struct app       app = { 0 };
	json_t          *body;
	int              rv;

	(void) uv_loop_init(&loop);
	eb_bus_opts_init(&opts);
	opts.node_id = "embedded";
	if ((rv = eb_bus_new(&loop, &opts, &app.bus)) != 0) {
		(void) fprintf(stderr, "eb_bus_new: %s\n", eb_strerror(rv));
		return 1;
	}
	(void) eb_bus_consumer_new(
	    app.bus, "greeter", 0, greeter_fn, &app, &app.greeter);
	(void) eb_bus_consumer_new(
	    app.bus, "news", 0, news_fn, &app, &app.news);

	body = json_pack("{s:s}", "name", "world");
	eb_bus_send_opts_init(&so);
	so.timeout_ms = 1000; /* per request; the bus default is 30 s */
	(void) eb_bus_request(
	    app.bus, "greeter", body, NULL, &so, reply_cb, &app);
	json_decref(body);
	body = json_pack("{s:s}", "name", "again");
	(void) eb_bus_request(
	    app.bus, "greeter", body, NULL, &so, reply_cb, &app);
	json_decref(body);

	body = json_string("extra, extra");
	(void) eb_bus_publish(app.bus, "news", body, NULL, NULL);
	json_decref(body);

	/* Nothing has been delivered yet: delivery happens on the loop. */
	(void) uv_run(&loop, UV_RUN_DEFAULT);
	rv = uv_loop_close(&loop);
	return rv == 0 && app.replies == 2 && app.news_seen == 1 ? 0 : 1;
}
