/* Unit tests for the length-prefixed frame decoder and encoder. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ebnode/err.h>

#include "common/frame.h"
#include "tests/harness/th.h"

static void
put_frame(eb__frame_dec *d, const char *payload)
{
	unsigned char hdr[4];
	size_t        n = strlen(payload);

	eb__frame_put_len(hdr, (uint32_t) n);
	eb__frame_dec_feed(d, hdr, 4);
	eb__frame_dec_feed(d, payload, n);
}

static void
test_one_frame(void **state)
{
	eb__frame_dec d;
	const char   *p;
	uint32_t      n;

	(void) state;
	eb__frame_dec_init(&d, 1024);
	put_frame(&d, "{\"type\":\"ping\"}");
	assert_int_equal(eb__frame_dec_next(&d, &p, &n), 0);
	assert_int_equal(n, 15);
	assert_memory_equal(p, "{\"type\":\"ping\"}", 15);
	assert_int_equal(eb__frame_dec_next(&d, &p, &n), UV_EAGAIN);
	assert_int_equal(eb__frame_dec_buffered(&d), 0);
	eb__frame_dec_free(&d);
}

static void
test_truncated_header_and_body(void **state)
{
	eb__frame_dec       d;
	const char         *p;
	uint32_t            n;
	const unsigned char hdr[4] = { 0, 0, 0, 5 };

	(void) state;
	eb__frame_dec_init(&d, 1024);
	eb__frame_dec_feed(&d, hdr, 3);
	assert_int_equal(eb__frame_dec_next(&d, &p, &n), UV_EAGAIN);
	eb__frame_dec_feed(&d, hdr + 3, 1);
	assert_int_equal(eb__frame_dec_next(&d, &p, &n), UV_EAGAIN);
	eb__frame_dec_feed(&d, "abcd", 4);
	assert_int_equal(eb__frame_dec_next(&d, &p, &n), UV_EAGAIN);
	eb__frame_dec_feed(&d, "e", 1);
	assert_int_equal(eb__frame_dec_next(&d, &p, &n), 0);
	assert_int_equal(n, 5);
	assert_memory_equal(p, "abcde", 5);
	eb__frame_dec_free(&d);
}

static void
test_zero_length(void **state)
{
	eb__frame_dec       d;
	const char         *p = NULL;
	uint32_t            n = 99;
	const unsigned char hdr[4] = { 0, 0, 0, 0 };

	(void) state;
	eb__frame_dec_init(&d, 1024);
	eb__frame_dec_feed(&d, hdr, 4);
	put_frame(&d, "{}");
	/* An empty frame is returned as such; the next one follows intact. */
	assert_int_equal(eb__frame_dec_next(&d, &p, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(eb__frame_dec_next(&d, &p, &n), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(p, "{}", 2);
	eb__frame_dec_free(&d);
}

static void
test_oversized_rejected_before_body(void **state)
{
	eb__frame_dec       d;
	const char         *p;
	uint32_t            n;
	const unsigned char hdr[4] = { 0, 0, 4, 1 }; /* 1025 */

	(void) state;
	eb__frame_dec_init(&d, 1024);
	eb__frame_dec_feed(&d, hdr, 4);
	/* Rejected from the header alone, without buffering the body. */
	assert_int_equal(eb__frame_dec_next(&d, &p, &n), EB_EFRAME);
	assert_int_equal(d.bad_len, 1025);
	assert_true(d.in.cap <= 4096);
	eb__frame_dec_free(&d);
}

static void
test_max_exactly_accepted(void **state)
{
	eb__frame_dec d;
	const char   *p;
	uint32_t      n;
	char          body[17];

	(void) state;
	memset(body, 'x', 16);
	body[16] = '\0';
	eb__frame_dec_init(&d, 16);
	put_frame(&d, body);
	assert_int_equal(eb__frame_dec_next(&d, &p, &n), 0);
	assert_int_equal(n, 16);
	eb__frame_dec_free(&d);
}

static void
test_negative_length(void **state)
{
	eb__frame_dec       d;
	const char         *p;
	uint32_t            n;
	const unsigned char hdr[4] = { 0xff, 0xff, 0xff, 0xfe }; /* -2 */

	(void) state;
	eb__frame_dec_init(&d, UINT32_MAX);
	eb__frame_dec_feed(&d, hdr, 4);
	assert_int_equal(eb__frame_dec_next(&d, &p, &n), EB_EFRAME);
	assert_int_equal(d.bad_len, -2);
	eb__frame_dec_free(&d);
}

static void
test_split_byte_by_byte(void **state)
{
	eb__frame_dec d;
	const char   *p;
	uint32_t      n;
	unsigned char wire[64];
	const char    a[] = "{\"a\":1}";
	const char    b[] = "[2]";
	size_t        alen = sizeof(a) - 1;
	size_t        blen = sizeof(b) - 1;
	size_t        len = 0;
	size_t        i;
	int           got = 0;

	(void) state;
	/* Frames are not NUL-terminated: only the payload bytes go in. */
	eb__frame_put_len(wire, (uint32_t) alen);
	memcpy(wire + 4, a, alen);
	len = 4 + alen;
	eb__frame_put_len(wire + len, (uint32_t) blen);
	memcpy(wire + len + 4, b, blen);
	len += 4 + blen;
	eb__frame_dec_init(&d, 1024);
	for (i = 0; i < len; i++) {
		eb__frame_dec_feed(&d, wire + i, 1);
		while (eb__frame_dec_next(&d, &p, &n) == 0) {
			if (got == 0) {
				assert_int_equal(n, strlen(a));
				assert_memory_equal(p, a, n);
			} else {
				assert_int_equal(n, strlen(b));
				assert_memory_equal(p, b, n);
			}
			got++;
		}
	}
	assert_int_equal(got, 2);
	eb__frame_dec_free(&d);
}

static void
test_many_frames_one_feed(void **state)
{
	eb__frame_dec d;
	const char   *p;
	uint32_t      n;
	int           i;
	int           got = 0;

	(void) state;
	eb__frame_dec_init(&d, 1024);
	for (i = 0; i < 64; i++) {
		put_frame(&d, "{\"type\":\"ping\"}");
	}
	while (eb__frame_dec_next(&d, &p, &n) == 0) {
		assert_int_equal(n, 15);
		got++;
	}
	assert_int_equal(got, 64);
	eb__frame_dec_free(&d);
}

static void
test_borrowed_payload_survives_feed(void **state)
{
	eb__frame_dec d;
	const char   *p;
	uint32_t      n;
	char          big[8000];

	(void) state;
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	eb__frame_dec_init(&d, 100000);
	put_frame(&d, "{\"k\":1}");
	assert_int_equal(eb__frame_dec_next(&d, &p, &n), 0);
	/* Feeding may move the buffer; the pending frame must not be lost. */
	put_frame(&d, big);
	assert_int_equal(eb__frame_dec_next(&d, &p, &n), 0);
	assert_int_equal(n, strlen(big));
	assert_int_equal(p[0], 'y');
	eb__frame_dec_free(&d);
}

/* Appends a frame of payload to buf at *len. */
static void
add_frame(char *buf, size_t *len, const char *payload)
{
	size_t n = strlen(payload);

	eb__frame_put_len((unsigned char *) buf + *len, (uint32_t) n);
	for (size_t i = 0; i < n; i++) {
		buf[*len + 4 + i] = payload[i];
	}
	*len += 4 + n;
}

/*
 * eb__frame_dec_next_in: whole frames are read where they are (payload
 * pointers into the input, nothing copied), a partial one is left for
 * feed and next; nothing is read in place while bytes are buffered; a bad
 * length is left to next, which reports it; the frame of the last next()
 * is consumed first.
 */
static void
test_next_in_place(void **state)
{
	eb__frame_dec d;
	char          in[256];
	size_t        len = 0;
	const char   *p = in;
	size_t        n;
	const char   *pl;
	uint32_t      m;

	(void) state;
	eb__frame_dec_init(&d, 64);
	add_frame(in, &len, "one");
	add_frame(in, &len, "");
	add_frame(in, &len, "three");
	add_frame(in, &len, "four!"); /* cut below: 2 of its 5 bytes */
	n = len - 3;
	assert_int_equal(eb__frame_dec_next_in(&d, &p, &n, &pl, &m), 0);
	assert_ptr_equal(pl, in + 4);
	assert_int_equal(m, 3);
	assert_int_equal(eb__frame_dec_next_in(&d, &p, &n, &pl, &m), 0);
	assert_int_equal(m, 0);
	assert_int_equal(eb__frame_dec_next_in(&d, &p, &n, &pl, &m), 0);
	assert_ptr_equal(pl, in + 15);
	assert_memory_equal(pl, "three", 5);
	assert_int_equal(eb__frame_dec_next_in(&d, &p, &n, &pl, &m), UV_EAGAIN);
	assert_ptr_equal(p, in + 20);
	assert_int_equal(n, 6);
	assert_int_equal(eb__frame_dec_buffered(&d), 0);
	/* The rest is fed; in place is refused while it is buffered. */
	eb__frame_dec_feed(&d, p, n);
	assert_int_equal(eb__frame_dec_next(&d, &pl, &m), UV_EAGAIN);
	p = in + len - 3;
	n = 3;
	assert_int_equal(eb__frame_dec_next_in(&d, &p, &n, &pl, &m), UV_EAGAIN);
	assert_ptr_equal(p, in + len - 3);
	eb__frame_dec_feed(&d, p, n);
	assert_int_equal(eb__frame_dec_next(&d, &pl, &m), 0);
	assert_memory_equal(pl, "four!", 5);
	/* The frame of that next() is consumed by next_in. */
	len = 0;
	add_frame(in, &len, "five");
	p = in;
	n = len;
	assert_int_equal(eb__frame_dec_next_in(&d, &p, &n, &pl, &m), 0);
	assert_ptr_equal(pl, in + 4);
	assert_int_equal(n, 0);
	assert_int_equal(eb__frame_dec_buffered(&d), 0);
	/* Over max_frame: left to next, which rejects it. */
	eb__frame_put_len((unsigned char *) in, 65);
	p = in;
	n = 80;
	assert_int_equal(eb__frame_dec_next_in(&d, &p, &n, &pl, &m), UV_EAGAIN);
	assert_int_equal(n, 80);
	eb__frame_dec_feed(&d, p, n);
	assert_int_equal(eb__frame_dec_next(&d, &pl, &m), EB_EFRAME);
	assert_int_equal(d.bad_len, 65);
	eb__frame_dec_free(&d);
}

static void
test_encode_json(void **state)
{
	json_t *j = json_pack("{s:s,s:s}", "type", "pong", "path", "a/b");
	char   *out = NULL;
	size_t  n = 0;

	(void) state;
	assert_int_equal(eb__frame_encode_json(j, 0, &out, &n), 0);
	assert_int_equal(n, 4 + strlen("{\"type\":\"pong\",\"path\":\"a/b\"}"));
	assert_int_equal(eb__frame_get_len((unsigned char *) out), n - 4);
	assert_memory_equal(
	    out + 4, "{\"type\":\"pong\",\"path\":\"a/b\"}", n - 4);
	free(out);
	/* Over the limit: refused, nothing allocated for the caller. */
	assert_int_equal(eb__frame_encode_json(j, 8, &out, &n), EB_EFRAME);
	json_decref(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_frame),
		cmocka_unit_test(test_truncated_header_and_body),
		cmocka_unit_test(test_zero_length),
		cmocka_unit_test(test_oversized_rejected_before_body),
		cmocka_unit_test(test_max_exactly_accepted),
		cmocka_unit_test(test_negative_length),
		cmocka_unit_test(test_split_byte_by_byte),
		cmocka_unit_test(test_many_frames_one_feed),
		cmocka_unit_test(test_borrowed_payload_survives_feed),
		cmocka_unit_test(test_next_in_place),
		cmocka_unit_test(test_encode_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
