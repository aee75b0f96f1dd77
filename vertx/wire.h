/*
 * The Vert.x 4.5 cluster wire codec (docs/VERTX.md "The wire frame",
 * WIRE_PROTOCOL_VERSION 2): one frame's payload (the bytes after the i32
 * length prefix, which common/frame.h splits off and bounds) decoded into
 * borrowed spans, and frames encoded from the bus's form of a message (an
 * address, a JSON body as its bytes, headers as a JSON object of strings).
 *
 * Invariants:
 *  - the decoder is pure and allocates nothing: every length field is
 *    checked against the bytes that are there before it is used, so a
 *    peer-chosen length can never size a buffer (the frame's own size is
 *    bounded by the caller with max_frame before its bytes are buffered);
 *  - a decoded frame has been checked whole: version <= 2, known codec,
 *    strings inside the frame and free of NUL bytes, the header block walked
 *    to its declared end, and the body the exact size its codec implies;
 *  - body mapping (what vertx-tcp-eventbus-bridge does with a JSON body):
 *    bridge JSON -> Vert.x: object 13, array 14, string 9, true/false 3,
 *    null 0, an integer 5 (i32) or 6 (i64), any other number 8 (f64);
 *    Vert.x -> bridge JSON: 13/14 as their text, 9 and 10 as a string,
 *    2/4/5/6 as integers, 7/8 as the shortest decimal that reads back as
 *    the same value (NaN and the infinities as the strings Jackson writes),
 *    3 as true/false, 0 as null, 11 (Buffer) and 12 (byte[]) as a base64url
 *    string without padding (Vert.x 4's JSON encoding of binary), 15 as a
 *    failure; 16, 17 and user codecs (-1) are refused with EB_EPROTO.
 *
 * Stateless; any thread. The spans of eb__vx_frame point into the payload
 * passed to eb__vx_decode() (borrowed: valid while it is).
 */
#ifndef EB_VERTX_WIRE_H
#define EB_VERTX_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <ebnode/err.h>

#include "common/buf.h"

#define EB_VX_WIRE_VERSION 2

/* System codec ids (docs/VERTX.md "Bodies"). */
enum {
	EB_VX_CODEC_USER = -1,
	EB_VX_CODEC_NULL = 0,
	EB_VX_CODEC_PING = 1,
	EB_VX_CODEC_BYTE = 2,
	EB_VX_CODEC_BOOL = 3,
	EB_VX_CODEC_SHORT = 4,
	EB_VX_CODEC_INT = 5,
	EB_VX_CODEC_LONG = 6,
	EB_VX_CODEC_FLOAT = 7,
	EB_VX_CODEC_DOUBLE = 8,
	EB_VX_CODEC_STRING = 9,
	EB_VX_CODEC_CHAR = 10,
	EB_VX_CODEC_BUFFER = 11,
	EB_VX_CODEC_BYTES = 12,
	EB_VX_CODEC_JSON_OBJECT = 13,
	EB_VX_CODEC_JSON_ARRAY = 14,
	EB_VX_CODEC_FAILURE = 15,
	EB_VX_CODEC_CLUSTER_SER = 16,
	EB_VX_CODEC_SERIALIZABLE = 17
};

/* ReplyFailure.toInt of Vert.x. */
enum {
	EB_VX_FAIL_TIMEOUT = 0,
	EB_VX_FAIL_NO_HANDLERS = 1,
	EB_VX_FAIL_RECIPIENT = 2,
	EB_VX_FAIL_ERROR = 3
};

/* A byte span inside a decoded payload (not NUL-terminated). */
typedef struct eb__vx_span {
	const char *p;
	size_t      n;
} eb__vx_span;

typedef struct eb__vx_frame {
	int         version;
	int         codec;      /* -1 .. 17 */
	int         publish;    /* 1: publish; 0: send, request or reply */
	eb__vx_span codec_name; /* codec -1 only */
	eb__vx_span address;
	eb__vx_span reply; /* n == 0: no reply address */
	eb__vx_span sender;
	uint32_t    header_count;
	eb__vx_span headers; /* the entries, after blockLen and count */
	eb__vx_span body;    /* the codec's bytes, to the end */
} eb__vx_frame;

/* A failure reply's body (codec 15). */
typedef struct eb__vx_failure {
	int         type; /* EB_VX_FAIL_* (any u8 the peer sent) */
	int32_t     code;
	int         has_message;
	eb__vx_span message;
} eb__vx_failure;

/*
 * Decodes one payload p[0..n) (the frame without its length prefix).
 * Returns 0 and fills *f, or:
 *   EB_EFRAME  truncated or inconsistent (a length past the end, a
 *              negative length, a NUL in an address, a header block whose
 *              entries do not end at its declared end, a body of the wrong
 *              size for its codec);
 *   EB_EPROTO  a version above 2, or a codec this node cannot map (16, 17,
 *              a user codec, an unknown id); *f is filled as far as the
 *              frame could be read (address, reply, sender when present),
 *              so the caller can answer with an ERROR failure, as a JVM does.
 * The detail goes to e when non-NULL.
 */
int eb__vx_decode(const void *p, size_t n, eb__vx_frame *f, eb_errbuf *e);

/* Headers as a JSON object of strings (a repeated key: the last value wins,
 * as the Vert.x TCP bridge builds its headers object). New reference, or
 * NULL with EB_EFRAME in *err when a key or value is not UTF-8 or holds a
 * NUL. f must come from a successful eb__vx_decode(). */
json_t *eb__vx_headers_json(const eb__vx_frame *f, int *err);

/*
 * Appends the body of f as bridge JSON text to out (see the mapping above).
 * Returns 0; EB_ERECIPIENT with *fail filled for a failure (codec 15,
 * nothing appended; fail may not be NULL); EB_EFRAME when a String or
 * JSON body is not valid UTF-8 / JSON of its kind; EB_EPROTO for a codec
 * that has no JSON form (ping, 16, 17, user codecs). On error out is left
 * as it was.
 */
int eb__vx_body_json(
    const eb__vx_frame *f, eb__buf *out, eb__vx_failure *fail, eb_errbuf *e);

/* What eb__vx_encode() writes. */
typedef struct eb__vx_out {
	const char   *address; /* NUL-terminated, borrowed */
	const char   *reply;   /* NULL or "": none */
	const char   *sender;  /* this node's id */
	int           publish;
	const json_t *headers; /* NULL or an object of strings */
	const char   *body;    /* valid JSON text of one value (NULL: null) */
	size_t        body_len;
} eb__vx_out;

/*
 * Appends one whole frame (length prefix included) to out. Returns 0, or
 * UV_EINVAL (nothing appended) when a header value is not a string or a
 * string body holds an unpaired surrogate escape, EB_EFRAME when the frame
 * would pass 2^31-1 bytes.
 */
int eb__vx_encode(eb__buf *out, const eb__vx_out *m);
/* A failure reply (codec 15) to reply_address; message may be NULL. */
int eb__vx_encode_failure(eb__buf *out, const char *reply_address,
    const char *sender, int type, int32_t code, const char *message);
/* The ping frame to the node target_id (its sender field holds the
 * target's id, docs/VERTX.md "The wire frame"). */
int eb__vx_encode_ping(eb__buf *out, const char *target_id);

/* The codec id eb__vx_encode() picks for a JSON body (the mapping above). */
int eb__vx_body_codec(const char *body, size_t body_len);

/* Base64url without padding (Vert.x 4's JSON form of binary) of p[0..n),
 * appended to out. */
void eb__vx_base64url(eb__buf *out, const unsigned char *p, size_t n);

#endif
