/*
 * Node links, the side the event bus sees (eventbus/remote.c): peer ids,
 * link up/down events, incoming frames and a zero-copy way to write one.
 * The public half (options, peers, stats) is include/ebnode/link.h.
 *
 * Peer ids are small integers, never reused during a manager's life, so a
 * stale id finds nothing instead of another peer. Frame types 1..15 belong
 * to the link layer (hello, heartbeat); the upper layer uses 16..255.
 *
 * Threads: loop thread only.
 */
#ifndef EB_LINK_LINK_H
#define EB_LINK_LINK_H

#include <stddef.h>
#include <stdint.h>

#include <ebnode/link.h>

#include "common/buf.h"

#define EB_LINK_FRAME_USER 16

typedef struct eb__link_handler {
	/* The link to peer came up (hello exchanged). */
	void (*up)(void *ctx, uint32_t peer, const char *node_id);
	/* The link to peer went down (or the peer was removed). */
	void (*down)(void *ctx, uint32_t peer);
	/* A frame of type >= EB_LINK_FRAME_USER; p borrowed for the call. */
	void (*frame)(
	    void *ctx, uint32_t peer, uint8_t type, const char *p, size_t n);
	/* The manager is being freed: forget it (after every down). */
	void (*detach)(void *ctx);
	/* (Optional.) The link to peer is congested (on: more than
	 * EB__LINK_CONGESTED_HI bytes wait for the kernel) or not any more
	 * (below EB__LINK_CONGESTED_LO). A down ends it too, without a call. */
	void (*congested)(void *ctx, uint32_t peer, int on);
} eb__link_handler;

/* Congestion watermarks of a link's write queue (the bytes the kernel has
 * not taken), and the fixed socket buffers of a link, so that what is in
 * flight to a peer stays bounded: kernel buffers (Linux doubles the value
 * asked) plus the high watermark, about 2 MiB. */
#define EB__LINK_CONGESTED_HI  ((size_t) 1024 * 1024)
#define EB__LINK_CONGESTED_LO  ((size_t) 256 * 1024)
#define EB__LINK_SOCKET_BUFFER (256 * 1024)

/* One upper layer per manager; NULL h detaches without a callback. */
void eb__link_mgr_set_handler(
    eb_link_mgr *m, const eb__link_handler *h, void *ctx);

/*
 * Starts a frame of type to peer and returns the buffer to append its body
 * to (do not consume from it), or NULL when the link is not up. Finish with
 * eb__link_frame_end() before starting another frame; nothing is sent
 * before the loop's next idle turn (writes are coalesced).
 */
eb__buf *eb__link_frame_begin(eb_link_mgr *m, uint32_t peer, uint8_t type);
/* 0, or EB_ELINKDOWN when the frame was too big or the link's queue
 * overflowed (the link is then closed on a later turn). */
int eb__link_frame_end(eb_link_mgr *m, uint32_t peer);

/* The node id of an up peer, or NULL. */
const char *eb__link_peer_node_id(eb_link_mgr *m, uint32_t peer);
/* The link protocol version an up peer's link speaks, or 0. A frame that
 * a version introduced goes only to peers at that version or later
 * (docs/UPGRADING.md, "Adding a link protocol version"). */
unsigned eb__link_peer_version(eb_link_mgr *m, uint32_t peer);
/* Calls fn for every peer whose link is up. */
void eb__link_foreach_up(
    eb_link_mgr *m, void (*fn)(void *arg, uint32_t peer), void *arg);

/* Big-endian helpers for frame bodies. */
void eb__link_put_u8(eb__buf *b, uint8_t v);
void eb__link_put_u16(eb__buf *b, uint16_t v);
void eb__link_put_u32(eb__buf *b, uint32_t v);
/* u16 length + bytes; UV_EINVAL when longer than 65535. */
int eb__link_put_str16(eb__buf *b, const char *s, size_t n);
/* u32 length + bytes. */
void eb__link_put_bytes32(eb__buf *b, const char *s, size_t n);

/* A bounds-checked reader over a received frame body. */
typedef struct eb__link_rd {
	const char *p;
	size_t      n;
	int         bad; /* a read ran past the end */
} eb__link_rd;

uint8_t  eb__link_get_u8(eb__link_rd *r);
uint16_t eb__link_get_u16(eb__link_rd *r);
uint32_t eb__link_get_u32(eb__link_rd *r);
/* Borrowed pointer into the frame (not NUL-terminated) and its length. */
const char *eb__link_get_str16(eb__link_rd *r, size_t *len);
const char *eb__link_get_bytes32(eb__link_rd *r, size_t *len);

#endif
