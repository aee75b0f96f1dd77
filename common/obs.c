/* The observer list (common/obs.h). */
#include "common/obs.h"

void
eb__obs_init(eb__obs *o)
{
	eb__vec_init(&o->v, sizeof(eb__obs_ent));
	o->depth = 0;
	o->removed = 0;
}

void
eb__obs_free(eb__obs *o)
{
	EB_ASSERT(o->depth == 0); /* not from inside an emit */
	eb__vec_free(&o->v);
}

void
eb__obs_add(eb__obs *o, eb__obs_fn fn, void *arg)
{
	eb__obs_ent *e;

	EB_ASSERT(fn != NULL);
	e = eb__vec_push(&o->v);
	e->fn = fn;
	e->arg = arg;
}

int
eb__obs_remove(eb__obs *o, eb__obs_fn fn, void *arg)
{
	size_t i;

	for (i = 0; i < o->v.len; i++) {
		eb__obs_ent *e = eb__vec_at(&o->v, i);

		if (e->fn == fn && e->arg == arg) {
			if (o->depth > 0) {
				e->fn = NULL; /* compacted after the emit */
				o->removed = 1;
			} else {
				eb__vec_remove(&o->v, i);
			}
			return 0;
		}
	}
	return -1;
}

size_t
eb__obs_count(const eb__obs *o)
{
	size_t i;
	size_t n = 0;

	for (i = 0; i < o->v.len; i++) {
		const eb__obs_ent *e = eb__vec_at(&o->v, i);

		n += e->fn != NULL;
	}
	return n;
}

void
eb__obs_begin(eb__obs *o, eb__obs_it *it)
{
	it->o = o;
	it->i = 0;
	it->n = o->v.len;
	it->fn = NULL;
	it->arg = NULL;
	o->depth++;
}

static void
compact(eb__obs *o)
{
	size_t i = 0;

	while (i < o->v.len) {
		const eb__obs_ent *e = eb__vec_at(&o->v, i);

		if (e->fn == NULL) {
			eb__vec_remove(&o->v, i);
		} else {
			i++;
		}
	}
	o->removed = 0;
}

int
eb__obs_next(eb__obs_it *it)
{
	eb__obs *o = it->o;

	while (it->i < it->n && it->i < o->v.len) {
		const eb__obs_ent *e = eb__vec_at(&o->v, it->i++);

		if (e->fn != NULL) {
			it->fn = e->fn;
			it->arg = e->arg;
			return 1;
		}
	}
	EB_ASSERT(o->depth > 0);
	o->depth--;
	if (o->depth == 0 && o->removed) {
		compact(o);
	}
	return 0;
}
