/* Unit tests for msg.c: hold/release, lazy bodies, headers. */
#include <ebnode/bus.h>

#include "tests/unit/eventbus/bus_th.h"

static eb_bus_msg *held[4];
static int         n_held;

static void
keep_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	(void) c;
	(void) arg;
	held[n_held++] = eb_bus_msg_hold(msg);
}

static void
test_hold_release(void **state)
{
	th_loop         *t = *state;
	eb_bus          *bus = bus_open(t, 0, 0);
	eb_bus_consumer *c[2];
	json_t          *b = json_pack("{s:s,s:[i,i]}", "a", "x/y", "n", 1, 2);
	json_t          *h = json_pack("{s:s}", "k", "v");
	size_t           len;
	const char      *bytes;

	n_held = 0;
	assert_int_equal(
	    eb_bus_consumer_new(bus, "m", 0, keep_handler, NULL, &c[0]), 0);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "m", 0, keep_handler, NULL, &c[1]), 0);
	assert_int_equal(eb_bus_publish(bus, "m", b, h, NULL), 0);
	/* The caller's objects are borrowed: changing them now is safe. */
	json_object_set_new(h, "k", json_string("changed"));
	json_decref(b);
	json_decref(h);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(n_held, 2);
	assert_ptr_equal(held[0], held[1]); /* fan-out shares one message */
	assert_false(eb_bus_msg_is_send(held[0]));
	assert_string_equal(eb_bus_msg_address(held[0]), "m");
	assert_null(eb_bus_msg_reply_address(held[0]));
	bytes = eb_bus_msg_body_bytes(held[0], &len);
	assert_int_equal(len, strlen("{\"a\":\"x/y\",\"n\":[1,2]}"));
	assert_memory_equal(bytes, "{\"a\":\"x/y\",\"n\":[1,2]}", len);
	assert_string_equal(
	    json_string_value(json_object_get(eb_bus_msg_body(held[0]), "a")),
	    "x/y");
	assert_string_equal(json_string_value(json_object_get(
	                        eb_bus_msg_headers(held[0]), "k")),
	    "v");
	bus_shut(t, bus);
	/* Held messages survive the bus; release frees (ASan checks). */
	eb_bus_msg_release(held[0]);
	eb_bus_msg_release(held[1]);
}

static void
test_bodies(void **state)
{
	th_loop         *t = *state;
	eb_bus          *bus = bus_open(t, 0, 0);
	eb_bus_consumer *c;
	json_t          *s = json_string("hello");
	size_t           len;

	n_held = 0;
	assert_int_equal(
	    eb_bus_consumer_new(bus, "b", 0, keep_handler, NULL, &c), 0);
	assert_int_equal(eb_bus_send(bus, "b", NULL, NULL, NULL), 0);
	assert_int_equal(eb_bus_send(bus, "b", json_null(), NULL, NULL), 0);
	assert_int_equal(eb_bus_send(bus, "b", s, NULL, NULL), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(n_held, 3);
	assert_null(eb_bus_msg_body(held[0]));
	assert_string_equal(eb_bus_msg_body_bytes(held[0], &len), "null");
	assert_int_equal(len, 4);
	assert_null(eb_bus_msg_body(held[1]));
	assert_string_equal(
	    json_string_value(eb_bus_msg_body(held[2])), "hello");
	assert_string_equal(eb_bus_msg_body_bytes(held[2], NULL), "\"hello\"");
	assert_int_equal(json_object_size(eb_bus_msg_headers(held[2])), 0);
	for (int i = 0; i < 3; i++) {
		eb_bus_msg_release(held[i]);
	}
	json_decref(s);
	bus_shut(t, bus);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_hold_release, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_bodies, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
