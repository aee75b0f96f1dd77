/*
 * The Vert.x 4.5 cluster wire codec; see wire.h for the contract and the
 * body mapping. Decoding reads through a bounds-checked cursor (rd_*): a
 * length is compared with the bytes left before anything uses it, and no
 * function here allocates in proportion to a length it read. Stateless; any
 * thread.
 */
#include "vertx/wire.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "common/alloc.h"
#include "common/jsonscan.h"
#include "common/jsonstr.h"

#define WIRE_STR_MAX   0x7fffffff
#define JSON_MAX_DEPTH 128

/* A bounds-checked reader over one payload. */
typedef struct rd {
	const unsigned char *p;
	const unsigned char *end;
} rd;

static size_t
rd_left(const rd *r)
{
	return (size_t) (r->end - r->p);
}

static int
rd_u8(rd *r, unsigned *v)
{
	if (rd_left(r) < 1) {
		return EB_EFRAME;
	}
	*v = *r->p++;
	return 0;
}

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 |
	       (uint32_t) p[2] << 8 | (uint32_t) p[3];
}

static uint64_t
be64(const unsigned char *p)
{
	return (uint64_t) be32(p) << 32 | be32(p + 4);
}

static int
rd_i32(rd *r, int32_t *v)
{
	uint32_t u;

	if (rd_left(r) < 4) {
		return EB_EFRAME;
	}
	u = be32(r->p);
	memcpy(v, &u, sizeof(*v)); /* two's complement, as Java writes it */
	r->p += 4;
	return 0;
}

/* An i32 length and that many bytes; a negative length is refused. */
static int
rd_str(rd *r, eb__vx_span *s)
{
	int32_t len;

	if (rd_i32(r, &len) != 0 || len < 0 || (size_t) len > rd_left(r)) {
		return EB_EFRAME;
	}
	s->p = (const char *) r->p;
	s->n = (size_t) len;
	r->p += len;
	return 0;
}

/* Strict UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF). */
static int
utf8_valid(const unsigned char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = p[i];
		size_t   k;
		unsigned cp;
		unsigned min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			k = 1, cp = c & 0x1f, min = 0x80;
		} else if (c >= 0xe0 && c <= 0xef) {
			k = 2, cp = c & 0x0f, min = 0x800;
		} else if (c >= 0xf0 && c <= 0xf4) {
			k = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return 0;
		}
		if (n - i <= k) {
			return 0;
		}
		for (size_t j = 1; j <= k; j++) {
			if ((p[i + j] & 0xc0) != 0x80) {
				return 0;
			}
			cp = cp << 6 | (p[i + j] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff)) {
			return 0;
		}
		i += k + 1;
	}
	return 1;
}

/* An address-like field: UTF-8 without NUL (it becomes a C string). */
static int
name_ok(const eb__vx_span *s)
{
	return memchr(s->p, '\0', s->n) == NULL &&
	       utf8_valid((const unsigned char *) s->p, s->n);
}

/* The header block: blockLen counts its own 4 bytes; entries must end
 * exactly at the block's end. */
static int
rd_headers(rd *r, eb__vx_frame *f)
{
	const unsigned char *start = r->p;
	int32_t              block;
	int32_t              count;
	rd                   h;

	if (rd_i32(r, &block) != 0 || block < 4 ||
	    (size_t) block - 4 > rd_left(r)) {
		return EB_EFRAME;
	}
	r->p = start + block;
	f->header_count = 0;
	f->headers.p = (const char *) r->p;
	f->headers.n = 0;
	if (block == 4) {
		return 0;
	}
	h.p = start + 4;
	h.end = start + block;
	if (rd_i32(&h, &count) != 0 || count < 0) {
		return EB_EFRAME;
	}
	f->headers.p = (const char *) h.p;
	f->headers.n = rd_left(&h);
	for (int32_t i = 0; i < count; i++) {
		eb__vx_span k;
		eb__vx_span v;

		if (rd_str(&h, &k) != 0 || rd_str(&h, &v) != 0) {
			return EB_EFRAME;
		}
	}
	if (h.p != h.end) {
		return EB_EFRAME;
	}
	f->header_count = (uint32_t) count;
	return 0;
}

/* The body's size as its codec defines it; 1 when the codec is one this
 * node cannot map. */
static int
body_check(const eb__vx_frame *f)
{
	static const signed char fixed[] = { 0, 0, 1, 1, 2, 4, 8, 4, 8 };
	rd                       b = { (const unsigned char *) f->body.p,
		                      (const unsigned char *) f->body.p + f->body.n };
	eb__vx_span              s;
	unsigned                 u;
	int32_t                  code;

	if (f->codec >= 0 && f->codec <= EB_VX_CODEC_DOUBLE) {
		return f->body.n == (size_t) fixed[f->codec] ? 0 : EB_EFRAME;
	}
	switch (f->codec) {
	case EB_VX_CODEC_CHAR:
		return f->body.n == 2 ? 0 : EB_EFRAME;
	case EB_VX_CODEC_STRING:
	case EB_VX_CODEC_BUFFER:
	case EB_VX_CODEC_BYTES:
	case EB_VX_CODEC_JSON_OBJECT:
	case EB_VX_CODEC_JSON_ARRAY:
		return rd_str(&b, &s) == 0 && rd_left(&b) == 0 ? 0 : EB_EFRAME;
	case EB_VX_CODEC_FAILURE:
		if (rd_u8(&b, &u) != 0 || rd_i32(&b, &code) != 0 ||
		    rd_u8(&b, &u) != 0) {
			return EB_EFRAME;
		}
		if (u != 0 && rd_str(&b, &s) != 0) {
			return EB_EFRAME;
		}
		return rd_left(&b) == 0 ? 0 : EB_EFRAME;
	default:
		return 1;
	}
}

static int
decode_fields(rd *r, eb__vx_frame *f, eb_errbuf *e)
{
	unsigned u;

	if (f->codec == EB_VX_CODEC_USER && rd_str(r, &f->codec_name) != 0) {
		return eb_errf(e, EB_EFRAME, "truncated codec name");
	}
	if (rd_u8(r, &u) != 0) {
		return eb_errf(e, EB_EFRAME, "truncated before the send flag");
	}
	f->publish = u != 0; /* Java: send = (byte == 0) */
	if (rd_str(r, &f->address) != 0 || rd_str(r, &f->reply) != 0 ||
	    rd_str(r, &f->sender) != 0) {
		return eb_errf(e, EB_EFRAME,
		    "address, reply address or sender "
		    "past the end or negative");
	}
	if (f->address.n == 0 || !name_ok(&f->address) || !name_ok(&f->reply) ||
	    !name_ok(&f->sender)) {
		return eb_errf(e, EB_EFRAME,
		    "empty address, or an address, "
		    "reply address or sender that is "
		    "not UTF-8 text without NUL");
	}
	if (rd_headers(r, f) != 0) {
		return eb_errf(e, EB_EFRAME, "malformed header block");
	}
	f->body.p = (const char *) r->p;
	f->body.n = rd_left(r);
	return 0;
}

int
eb__vx_decode(const void *p, size_t n, eb__vx_frame *f, eb_errbuf *e)
{
	rd       r = { p, (const unsigned char *) p + n };
	unsigned version;
	unsigned codec;
	int      err;

	memset(f, 0, sizeof(*f));
	f->codec = EB_VX_CODEC_NULL;
	if (rd_u8(&r, &version) != 0 || rd_u8(&r, &codec) != 0) {
		return eb_errf(e, EB_EFRAME, "frame shorter than 2 bytes");
	}
	f->version = (int) version;
	f->codec = codec > 127 ? (int) codec - 256 : (int) codec;
	/* A version above 2 is read with the version-2 layout anyway, as the
	 * JVM does, so that its reply address and sender are known. */
	err = decode_fields(&r, f, e);
	if (err != 0) {
		return err;
	}
	if (version > EB_VX_WIRE_VERSION) {
		return eb_errf(e, EB_EPROTO,
		    "Invalid wire protocol version %u should be <= %d", version,
		    EB_VX_WIRE_VERSION);
	}
	err = body_check(f);
	if (err == 1) {
		if (f->codec == EB_VX_CODEC_USER) {
			return eb_errf(e, EB_EPROTO,
			    "No message codec registered with name %.*s",
			    (int) (f->codec_name.n > 64 ? 64 : f->codec_name.n),
			    f->codec_name.p);
		}
		return eb_errf(e, EB_EPROTO,
		    "unsupported message codec %d (only JSON, String, "
		    "numbers, booleans, null, Buffer and byte[] map to "
		    "bridge JSON)",
		    f->codec);
	}
	if (err != 0) {
		return eb_errf(e, EB_EFRAME,
		    "body size does not match codec %d", f->codec);
	}
	return 0;
}

json_t *
eb__vx_headers_json(const eb__vx_frame *f, int *err)
{
	rd      h = { (const unsigned char *) f->headers.p,
		     (const unsigned char *) f->headers.p + f->headers.n };
	json_t *obj = json_object();

	*err = 0;
	for (uint32_t i = 0; i < f->header_count; i++) {
		eb__vx_span k;
		eb__vx_span v;
		char       *key;
		json_t     *val;

		if (rd_str(&h, &k) != 0 || rd_str(&h, &v) != 0 ||
		    !name_ok(&k)) {
			goto fail;
		}
		val = json_stringn(v.p, v.n); /* checks UTF-8 */
		if (val == NULL) {
			goto fail;
		}
		key = eb__strndup(k.p, k.n);
		(void) json_object_set_new(obj, key, val);
		free(key);
	}
	return obj;
fail:
	json_decref(obj);
	*err = EB_EFRAME;
	return NULL;
}

/* ---- bodies to bridge JSON ---- */

static void
put(eb__buf *out, const char *s, size_t n)
{
	eb__buf_append(out, s, n);
}

static void
put_str(eb__buf *out, const char *s)
{
	put(out, s, strlen(s));
}

/* A JSON string of valid UTF-8 p[0..n), escaped as jansson's compact
 * encoder does (", \, control characters; nothing else). */
static void
put_json_string(eb__buf *out, const char *p, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t            run = 0;

	put(out, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char) p[i];
		char          esc[6] = { '\\', 'u', '0', '0', 0, 0 };

		if (c >= 0x20 && c != '"' && c != '\\') {
			continue;
		}
		put(out, p + run, i - run);
		run = i + 1;
		if (c == '"' || c == '\\') {
			esc[1] = (char) c;
			put(out, esc, 2);
		} else if (c != 0 && strchr("\n\r\t\b\f", (int) c) != NULL) {
			static const char from[] = "\n\r\t\b\f";
			static const char to[] = "nrtbf";

			esc[1] = to[strchr(from, (int) c) - from];
			put(out, esc, 2);
		} else {
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 0xf];
			put(out, esc, 6);
		}
	}
	put(out, p + run, n - run);
	put(out, "\"", 1);
}

/* The shortest %g text that reads back as the same value; ".0" added to an
 * integral result so that it stays a floating-point number (Jackson writes
 * 1.0, and a client echoing it sends a Double back). */
static void
put_double(eb__buf *out, double d, int is_float)
{
	char buf[40];

	if (isnan(d)) {
		put_str(out, "\"NaN\"");
		return;
	}
	if (isinf(d)) {
		put_str(out, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
		return;
	}
	/* Plain notation where Java's toString uses it (1e-3 <= |d| < 1e7),
	 * else the exponent form. */
	int plain = fabs(d) >= 1e-3 && fabs(d) < 1e7;

	for (int prec = 1; prec <= 17; prec++) {
		double back;

		(void) snprintf(
		    buf, sizeof(buf), plain ? "%.*f" : "%.*g", prec, d);
		back = strtod(buf, NULL);
		if (is_float ? (float) back == (float) d : back == d) {
			break;
		}
	}
	if (plain && !is_float && strtod(buf, NULL) != d) {
		(void) snprintf(buf, sizeof(buf), "%.17g", d);
	}
	if (strpbrk(buf, ".e") == NULL) {
		size_t len = strlen(buf);

		(void) snprintf(buf + len, sizeof(buf) - len, ".0");
	}
	put_str(out, buf);
}

static void
put_i64(eb__buf *out, int64_t v)
{
	char buf[24];

	(void) snprintf(buf, sizeof(buf), "%lld", (long long) v);
	put_str(out, buf);
}

void
eb__vx_base64url(eb__buf *out, const unsigned char *p, size_t n)
{
	static const char a[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuv"
	    "wxyz0123456789-_";
	char  *dst = eb__buf_reserve(out, (n + 2) / 3 * 4);
	size_t o = 0;
	size_t i = 0;

	for (; i + 3 <= n; i += 3) {
		uint32_t v =
		    (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8 | p[i + 2];
		dst[o++] = a[v >> 18];
		dst[o++] = a[(v >> 12) & 63];
		dst[o++] = a[(v >> 6) & 63];
		dst[o++] = a[v & 63];
	}
	if (n - i == 1) {
		dst[o++] = a[p[i] >> 2];
		dst[o++] = a[(p[i] & 3) << 4];
	} else if (n - i == 2) {
		uint32_t v = (uint32_t) p[i] << 8 | p[i + 1];
		dst[o++] = a[v >> 10];
		dst[o++] = a[(v >> 4) & 63];
		dst[o++] = a[(v & 15) << 2];
	}
	out->len += o;
}

/* A JSON object (13) or array (14) body: checked and compacted. */
static int
put_json_text(eb__buf *out, const eb__vx_span *s, int codec)
{
	eb__jscan js;
	char     *dst;

	eb__jscan_init(&js, s->p, s->n, JSON_MAX_DEPTH);
	eb__jscan_ws(&js);
	if (js.p == js.end ||
	    *js.p != (codec == EB_VX_CODEC_JSON_OBJECT ? '{' : '[') ||
	    !eb__jscan_value(&js, 0)) {
		return EB_EFRAME;
	}
	eb__jscan_ws(&js);
	if (js.p != js.end) {
		return EB_EFRAME;
	}
	dst = eb__buf_reserve(out, s->n);
	out->len += eb__json_compact(s->p, s->n, dst);
	return 0;
}

static int
put_char(eb__buf *out, const unsigned char *p)
{
	unsigned c = (unsigned) p[0] << 8 | p[1];
	char     u[3];
	size_t   n;

	if (c >= 0xd800 && c <= 0xdfff) {
		return EB_EFRAME; /* half a surrogate pair has no UTF-8 form */
	}
	if (c < 0x80) {
		u[0] = (char) c, n = 1;
	} else if (c < 0x800) {
		u[0] = (char) (0xc0 | c >> 6);
		u[1] = (char) (0x80 | (c & 0x3f)), n = 2;
	} else {
		u[0] = (char) (0xe0 | c >> 12);
		u[1] = (char) (0x80 | ((c >> 6) & 0x3f));
		u[2] = (char) (0x80 | (c & 0x3f)), n = 3;
	}
	put_json_string(out, u, n);
	return 0;
}

static void
failure_read(const eb__vx_frame *f, eb__vx_failure *fail)
{
	rd       b = { (const unsigned char *) f->body.p,
		      (const unsigned char *) f->body.p + f->body.n };
	unsigned u = 0;

	memset(fail, 0, sizeof(*fail));
	(void) rd_u8(&b, &u);
	fail->type = (int) u;
	(void) rd_i32(&b, &fail->code);
	(void) rd_u8(&b, &u);
	fail->has_message = u != 0;
	if (fail->has_message) {
		(void) rd_str(&b, &fail->message); /* checked by decode */
	}
}

/* Scalars with a fixed size (codecs 0 to 8). */
static void
put_fixed(eb__buf *out, const eb__vx_frame *f)
{
	const unsigned char *p = (const unsigned char *) f->body.p;
	uint32_t             u32;
	uint64_t             u64;
	float                fl;
	double               db;
	int64_t              i64;

	switch (f->codec) {
	case EB_VX_CODEC_BYTE:
		put_i64(out, (int8_t) p[0]);
		break;
	case EB_VX_CODEC_BOOL:
		put_str(out, p[0] == 0 ? "true" : "false"); /* 0 = true */
		break;
	case EB_VX_CODEC_SHORT:
		put_i64(out, (int16_t) ((unsigned) p[0] << 8 | p[1]));
		break;
	case EB_VX_CODEC_INT:
		put_i64(out, (int32_t) be32(p));
		break;
	case EB_VX_CODEC_LONG:
		u64 = be64(p);
		memcpy(&i64, &u64, sizeof(i64));
		put_i64(out, i64);
		break;
	case EB_VX_CODEC_FLOAT:
		u32 = be32(p);
		memcpy(&fl, &u32, sizeof(fl));
		put_double(out, (double) fl, 1);
		break;
	case EB_VX_CODEC_DOUBLE:
		u64 = be64(p);
		memcpy(&db, &u64, sizeof(db));
		put_double(out, db, 0);
		break;
	default:
		put_str(out, "null");
		break;
	}
}

int
eb__vx_body_json(
    const eb__vx_frame *f, eb__buf *out, eb__vx_failure *fail, eb_errbuf *e)
{
	const unsigned char *p = (const unsigned char *) f->body.p;
	size_t               mark = out->len - out->off;
	eb__vx_span s = { f->body.p + 4, f->body.n >= 4 ? f->body.n - 4 : 0 };
	int         err = 0;

	if (f->codec >= EB_VX_CODEC_NULL && f->codec <= EB_VX_CODEC_DOUBLE &&
	    f->codec != EB_VX_CODEC_PING) {
		put_fixed(out, f);
		return 0;
	}
	switch (f->codec) {
	case EB_VX_CODEC_CHAR:
		err = put_char(out, p);
		break;
	case EB_VX_CODEC_STRING:
		if (!utf8_valid((const unsigned char *) s.p, s.n)) {
			return eb_errf(
			    e, EB_EFRAME, "String body is not UTF-8");
		}
		put_json_string(out, s.p, s.n);
		break;
	case EB_VX_CODEC_BUFFER:
	case EB_VX_CODEC_BYTES:
		put(out, "\"", 1);
		eb__vx_base64url(out, (const unsigned char *) s.p, s.n);
		put(out, "\"", 1);
		break;
	case EB_VX_CODEC_JSON_OBJECT:
	case EB_VX_CODEC_JSON_ARRAY:
		err = put_json_text(out, &s, f->codec);
		if (err != 0) {
			return eb_errf(e, err, "codec %d body is not a JSON %s",
			    f->codec,
			    f->codec == EB_VX_CODEC_JSON_OBJECT ? "object"
			                                        : "array");
		}
		break;
	case EB_VX_CODEC_FAILURE:
		failure_read(f, fail);
		return EB_ERECIPIENT;
	default:
		return eb_errf(
		    e, EB_EPROTO, "codec %d has no JSON form", f->codec);
	}
	if (err != 0) {
		out->len = out->off + mark;
		return eb_errf(
		    e, err, "Character body is half a surrogate pair");
	}
	return 0;
}

/* ---- encoding ---- */

static void
put_be32(eb__buf *out, uint32_t v)
{
	unsigned char b[4] = { (unsigned char) (v >> 24),
		(unsigned char) (v >> 16), (unsigned char) (v >> 8),
		(unsigned char) v };

	put(out, (const char *) b, 4);
}

static void
put_be64(eb__buf *out, uint64_t v)
{
	put_be32(out, (uint32_t) (v >> 32));
	put_be32(out, (uint32_t) v);
}

static void
put_wstr(eb__buf *out, const char *s, size_t n)
{
	put_be32(out, (uint32_t) n);
	put(out, s, n);
}

/* Starts a frame: the length placeholder, version, codec, send flag,
 * address, reply address and sender. Returns the frame's start, relative
 * to out->off (compaction moves the data, not that offset). */
static size_t
frame_begin(eb__buf *out, int codec, int publish, const char *address,
    const char *reply, const char *sender)
{
	size_t        start = out->len - out->off;
	unsigned char b[3] = { EB_VX_WIRE_VERSION, (unsigned char) codec,
		(unsigned char) (publish ? 1 : 0) };

	put_be32(out, 0);
	put(out, (const char *) b, 3);
	put_wstr(out, address, strlen(address));
	put_wstr(
	    out, reply != NULL ? reply : "", reply != NULL ? strlen(reply) : 0);
	put_wstr(out, sender, strlen(sender));
	return start;
}

static int
frame_end(eb__buf *out, size_t start)
{
	size_t         total = out->len - out->off - start;
	unsigned char *hdr = (unsigned char *) out->data + out->off + start;

	if (total - 4 > WIRE_STR_MAX) {
		out->len = out->off + start;
		return EB_EFRAME;
	}
	hdr[0] = (unsigned char) ((total - 4) >> 24);
	hdr[1] = (unsigned char) ((total - 4) >> 16);
	hdr[2] = (unsigned char) ((total - 4) >> 8);
	hdr[3] = (unsigned char) (total - 4);
	return 0;
}

static int
put_headers(eb__buf *out, const json_t *headers)
{
	size_t      start = out->len - out->off;
	const char *k;
	json_t     *v;
	size_t      count = 0;
	size_t      block;

	if (headers == NULL || json_object_size(headers) == 0) {
		put_be32(out, 4);
		return 0;
	}
	if (!json_is_object(headers)) {
		return UV_EINVAL;
	}
	put_be32(out, 0);
	put_be32(out, 0);
	json_object_foreach(eb__json_unconst(headers), k, v)
	{
		if (!json_is_string(v)) {
			out->len = out->off + start;
			return UV_EINVAL;
		}
		put_wstr(out, k, strlen(k));
		put_wstr(out, json_string_value(v), json_string_length(v));
		count++;
	}
	block = out->len - out->off - start;
	{
		unsigned char *b =
		    (unsigned char *) out->data + out->off + start;

		b[0] = (unsigned char) (block >> 24);
		b[1] = (unsigned char) (block >> 16);
		b[2] = (unsigned char) (block >> 8);
		b[3] = (unsigned char) block;
		b[4] = (unsigned char) (count >> 24);
		b[5] = (unsigned char) (count >> 16);
		b[6] = (unsigned char) (count >> 8);
		b[7] = (unsigned char) count;
	}
	return 0;
}

/* The JSON text without surrounding whitespace. */
static void
trim(const char **p, size_t *n)
{
	while (*n > 0 && (*p)[0] != 0 && strchr(" \t\r\n", (*p)[0]) != NULL) {
		(*p)++, (*n)--;
	}
	while (*n > 0 && (*p)[*n - 1] != 0 &&
	       strchr(" \t\r\n", (*p)[*n - 1]) != NULL) {
		(*n)--;
	}
}

/* A JSON number: *codec 5, 6 or 8 and its value. */
static int
number_parse(const char *p, size_t n, int64_t *iv, double *dv)
{
	char  small[64];
	char *s = n < sizeof(small) ? small : eb__malloc(n + 1);
	int   codec = EB_VX_CODEC_DOUBLE;
	char *end = NULL;

	memcpy(s, p, n);
	s[n] = '\0';
	if (strpbrk(s, ".eE") == NULL) {
		long long v;

		errno = 0;
		v = strtoll(s, &end, 10);
		if (errno == 0 && end != NULL && *end == '\0') {
			*iv = v;
			codec = v >= INT32_MIN && v <= INT32_MAX
			            ? EB_VX_CODEC_INT
			            : EB_VX_CODEC_LONG;
		}
	}
	if (codec == EB_VX_CODEC_DOUBLE) {
		*dv = strtod(s, NULL); /* past the range: +-HUGE_VAL, as Java */
	}
	if (s != small) {
		free(s);
	}
	return codec;
}

int
eb__vx_body_codec(const char *body, size_t body_len)
{
	int64_t iv;
	double  dv;

	if (body == NULL) {
		return EB_VX_CODEC_NULL;
	}
	trim(&body, &body_len);
	if (body_len == 0) {
		return EB_VX_CODEC_NULL;
	}
	switch (body[0]) {
	case '{':
		return EB_VX_CODEC_JSON_OBJECT;
	case '[':
		return EB_VX_CODEC_JSON_ARRAY;
	case '"':
		return EB_VX_CODEC_STRING;
	case 't':
	case 'f':
		return EB_VX_CODEC_BOOL;
	case 'n':
		return EB_VX_CODEC_NULL;
	default:
		return number_parse(body, body_len, &iv, &dv);
	}
}

/* A JSON string body as codec 9: the unescaped bytes. */
static int
put_string_body(eb__buf *out, const char *p, size_t n)
{
	eb__jscan   js;
	const char *str;
	size_t      len;
	int         esc;
	char       *tmp;
	ptrdiff_t   m;

	eb__jscan_init(&js, p, n, 1);
	if (!eb__jscan_string(&js, &str, &len, &esc)) {
		return UV_EINVAL;
	}
	if (!esc) {
		put_wstr(out, str, len);
		return 0;
	}
	tmp = eb__malloc(len + 1);
	m = eb__json_unescape(str, len, tmp);
	if (m >= 0) {
		put_wstr(out, tmp, (size_t) m);
	}
	free(tmp);
	return m >= 0 ? 0 : UV_EINVAL;
}

static int
put_body(eb__buf *out, int codec, const char *p, size_t n)
{
	int64_t  iv = 0;
	double   dv = 0;
	uint64_t u;

	switch (codec) {
	case EB_VX_CODEC_JSON_OBJECT:
	case EB_VX_CODEC_JSON_ARRAY:
		put_wstr(out, p, n);
		return 0;
	case EB_VX_CODEC_STRING:
		return put_string_body(out, p, n);
	case EB_VX_CODEC_BOOL:
		put(out, p[0] == 't' ? "\0" : "\1", 1); /* 0 = true */
		return 0;
	case EB_VX_CODEC_NULL:
		return 0;
	default:
		(void) number_parse(p, n, &iv, &dv);
		if (codec == EB_VX_CODEC_INT) {
			put_be32(out, (uint32_t) iv);
		} else if (codec == EB_VX_CODEC_LONG) {
			put_be64(out, (uint64_t) iv);
		} else {
			memcpy(&u, &dv, sizeof(u));
			put_be64(out, u);
		}
		return 0;
	}
}

int
eb__vx_encode(eb__buf *out, const eb__vx_out *m)
{
	const char *body = m->body;
	size_t      n = m->body_len;
	int         codec = eb__vx_body_codec(body, n);
	size_t      start;
	int         err;

	if (body != NULL) {
		trim(&body, &n);
	}
	start = frame_begin(
	    out, codec, m->publish, m->address, m->reply, m->sender);
	err = put_headers(out, m->headers);
	if (err == 0) {
		err = put_body(out, codec, body, n);
	}
	if (err != 0) {
		out->len = out->off + start;
		return err;
	}
	return frame_end(out, start);
}

int
eb__vx_encode_failure(eb__buf *out, const char *reply_address,
    const char *sender, int type, int32_t code, const char *message)
{
	size_t start = frame_begin(
	    out, EB_VX_CODEC_FAILURE, 0, reply_address, NULL, sender);
	unsigned char t = (unsigned char) type;
	unsigned char has = message != NULL ? 1 : 0;

	put_be32(out, 4);
	put(out, (const char *) &t, 1);
	put_be32(out, (uint32_t) code);
	put(out, (const char *) &has, 1);
	if (message != NULL) {
		put_wstr(out, message, strlen(message));
	}
	return frame_end(out, start);
}

int
eb__vx_encode_ping(eb__buf *out, const char *target_id)
{
	size_t start = frame_begin(
	    out, EB_VX_CODEC_PING, 0, "__vertx_ping", NULL, target_id);

	put_be32(out, 4);
	return frame_end(out, start);
}
