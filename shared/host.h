/*
 * host.c: shared data on a running cluster, as a node runs it: an
 * eb_shared (on a ZooKeeper session of its own) and its bus services
 * (node-local consumers at ebnode.lock, ebnode.counter, ebnode.id). Close: the
 * services release their locks, then the object closes (freed on a later
 * turn). Loop thread only.
 */
#ifndef EB_SHARED_HOST_H
#define EB_SHARED_HOST_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebnode/bus.h>
#include <ebnode/cluster.h>
#include <ebnode/shared.h>

typedef struct eb__shared_host eb__shared_host;

/* 0 and *out, or an error (logged; *out NULL, nothing held). */
int eb__shared_host_start(uv_loop_t *loop, eb_cluster *c, eb_bus *bus,
    const eb_shared_opts *opts, eb__shared_host **out);
/* A bridge connection closed: releases its locks (logged when any). */
void eb__shared_host_conn_closed(eb__shared_host *h, uint64_t conn_id);
void eb__shared_host_close(eb__shared_host *h);
/* The eb_shared (its stats). */
eb_shared *eb__shared_host_shared(const eb__shared_host *h);

#endif
