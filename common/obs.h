/*
 * An observer list: any number of (callback, argument) pairs that listen to
 * one kind of event. No fixed cap and no single slot: wherever several
 * parties listen (leadership, membership, handler counts), they add
 * themselves here.
 *
 * Emitting is safe against changes made by the callbacks themselves: an
 * observer removed during an emit is not called afterwards (its slot is
 * cleared and compacted once the outermost emit returns), and one added
 * during an emit is first called by the next emit. Emits may nest.
 *
 * The callback type is the caller's: the list stores it as a generic
 * function pointer and eb__obs_each hands each pair back, so every emitter
 * calls its observers with its own typed arguments:
 *
 *   EB__OBS_EACH(&c->leadership, it) {
 *       ((eb_cluster_leadership_cb) it.fn)(c, &info, it.arg);
 *   }
 *
 * Never leave an EB__OBS_EACH loop with break or return: the iteration
 * ends the emit only when it runs to its end.
 *
 * Loop thread only (not thread safe).
 */
#ifndef EB_COMMON_OBS_H
#define EB_COMMON_OBS_H

#include <stddef.h>

#include "common/vec.h"

typedef void (*eb__obs_fn)(void);

typedef struct eb__obs_ent {
	eb__obs_fn fn; /* NULL: removed during an emit */
	void      *arg;
} eb__obs_ent;

typedef struct eb__obs {
	eb__vec  v;       /* of eb__obs_ent */
	unsigned depth;   /* nested emits in progress */
	int      removed; /* a slot was cleared during an emit */
} eb__obs;

void eb__obs_init(eb__obs *o);
void eb__obs_free(eb__obs *o);
/* Adds (fn, arg). The same pair may be added twice (then it is called
 * twice and must be removed twice). */
void eb__obs_add(eb__obs *o, eb__obs_fn fn, void *arg);
/* Removes one (fn, arg) pair: 0, or -1 when it was not there. */
int eb__obs_remove(eb__obs *o, eb__obs_fn fn, void *arg);
/* The number of observers. */
size_t eb__obs_count(const eb__obs *o);

/* Iteration, used through EB__OBS_EACH. */
typedef struct eb__obs_it {
	eb__obs   *o;
	size_t     i;
	size_t     n; /* observers present when the emit began */
	eb__obs_fn fn;
	void      *arg;
} eb__obs_it;

void eb__obs_begin(eb__obs *o, eb__obs_it *it);
/* Moves to the next live observer: 1, or 0 at the end (then the emit is
 * over and removed slots are compacted). */
int eb__obs_next(eb__obs_it *it);

#define EB__OBS_EACH(obs, it) \
	for (eb__obs_begin((obs), &(it)); eb__obs_next(&(it));)

#endif
