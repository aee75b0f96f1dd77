/*
 * zk/ internals shared by the module's own files (and its tests): eb__
 * names, not installed. Other modules use zk/zk.h.
 *
 * Codes: raw ZooKeeper return codes (ZOK, ZNONODE, ...) exist only inside
 * zk/. eb__err_from_zk() is the one place where they become EB_E* codes;
 * it must be applied before any status leaves the module, because
 * ZSYSTEMERROR (-1) collides with -EPERM (UV_EPERM).
 * Loop thread or any thread (pure functions).
 */
#ifndef EB_ZK_ZK_INT_H
#define EB_ZK_ZK_INT_H

#include <stddef.h>
#include <stdint.h>

#include "zk/zk.h"

/*
 * Maps a ZooKeeper C client return code (enum ZOO_ERRORS) to 0 or an EB_E*
 * code. ZOK is 0; every other known code has a fixed EB_EZK* mapping (the
 * table is in docs/ZOOKEEPER.md); unknown codes map to EB_EZKSYSTEM. Never
 * returns a libuv code.
 */
int eb__err_from_zk(int zrc);

/* The ZooKeeper symbol for a raw code ("ZNONODE"), for log lines; never
 * NULL ("Z?" for unknown codes). */
const char *eb__zk_rc_name(int zrc);

/*
 * Test and diagnostics hooks of the real backend (zk/zk.c); both return
 * 0 for another backend.
 *   eb__zk_connected_port: the server port of the current connection, 0 when
 *   not connected (lets ensemble tests find the server to kill).
 *   eb__zk_poll_generation: how many uv_poll handles were made so far (one
 *   or more per connection attempt).
 */
int      eb__zk_connected_port(const eb__zk *zk);
uint64_t eb__zk_poll_generation(const eb__zk *zk);

#endif
