/*
 * ebctl output: tables for people, compact JSON for scripts. Tolerant of
 * whatever the admin endpoint returns: known fields get friendly columns,
 * unknown ones are printed too, missing ones are left out.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/jsonscan.h"
#include "ctl/ctl.h"

#define MAX_COLS 32

/* The /nodes columns in display order, with their headings. */
static const struct {
	const char *key;
	const char *title;
} g_node_cols[] = {
	{ "node_id", "NODE" },
	{ "address", "ADDRESS" },
	{ "host", "HOST" },
	{ "cluster_port", "CLUSTER" },
	{ "bridge_port", "BRIDGE" },
	{ "admin_port", "ADMIN" },
	{ "sequence", "SEQ" },
	{ "epoch", "EPOCH" },
	{ "czxid", "CZXID" },
	{ "joined_ms", "JOINED" },
	{ "leader", "LEADER" },
	{ "self", "SELF" },
};

#define NNODE_COLS (sizeof(g_node_cols) / sizeof(g_node_cols[0]))

static void
print_json_line(FILE *out, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);

	(void) fprintf(out, "%s\n", s != NULL ? s : "null");
	free(s);
}

char *
eb__ctl_cell(json_t *v)
{
	char *s;

	if (v == NULL || json_is_null(v)) {
		return eb__strdup("-");
	}
	if (json_is_string(v)) {
		return eb__strdup(json_string_value(v));
	}
	if (json_is_boolean(v)) {
		return eb__strdup(json_is_true(v) ? "yes" : "no");
	}
	s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	return s != NULL ? s : eb__strdup("?");
}

/* joined_ms as UTC time, which people read better than epoch millis. */
static char *
time_cell(json_t *v)
{
	struct tm tm;
	time_t    secs;
	char      buf[40];

	if (!json_is_integer(v) || json_integer_value(v) <= 0) {
		return eb__ctl_cell(v);
	}
	secs = (time_t) (json_integer_value(v) / 1000);
	if (gmtime_r(&secs, &tm) == NULL ||
	    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
		return eb__ctl_cell(v);
	}
	return eb__strdup(buf);
}

/* "k=v k2=v2" (malloc'd). */
static char *
headers_text(json_t *headers)
{
	const char *k;
	json_t     *v;
	char       *s = NULL;
	size_t      len = 0;
	FILE       *m = open_memstream(&s, &len);
	char       *cell;
	const char *sep = "";

	if (m == NULL) {
		return eb__strdup("");
	}
	json_object_foreach(headers, k, v)
	{
		cell = eb__ctl_cell(v);
		(void) fprintf(m, "%s%s=%s", sep, k, cell);
		free(cell);
		sep = " ";
	}
	(void) fclose(m);
	return s != NULL ? s : eb__strdup("");
}

int
eb__ctl_out_mode(const ctl_args *a)
{
	return a->raw ? CTL_OUT_RAW : a->json ? CTL_OUT_JSON : CTL_OUT_TEXT;
}

/* Writes p[0..n) without the whitespace between its tokens. */
static void
put_compact(FILE *out, const char *p, size_t n)
{
	char *c = eb__malloc(n + 1);

	(void) fwrite(c, 1, eb__json_compact(p, n, c), out);
	free(c);
}

void
eb__ctl_print_message(FILE *out, const char *p, size_t n, int mode)
{
	const char *body;
	size_t      blen;
	json_t     *frame;
	json_t     *h;
	const char *addr;
	char       *ht;

	if (mode == CTL_OUT_RAW) {
		(void) fwrite(p, 1, n, out);
		(void) fputc('\n', out);
		return;
	}
	if ((frame = eb__ctl_frame_read(p, n, &body, &blen)) == NULL) {
		return;
	}
	if (mode == CTL_OUT_JSON) {
		put_compact(out, p, n);
		(void) fputc('\n', out);
		json_decref(frame);
		return;
	}
	h = json_object_get(frame, "headers");
	addr = json_string_value(json_object_get(frame, "address"));
	ht = json_is_object(h) ? headers_text(h) : eb__strdup("");
	(void) fprintf(out, "%s%s%s  ", addr != NULL ? addr : "-",
	    ht[0] != '\0' ? "  " : "", ht);
	if (body != NULL) {
		put_compact(out, body, blen);
	} else {
		(void) fputs("null", out);
	}
	(void) fprintf(out, "%s\n",
	    json_is_false(json_object_get(frame, "send")) ? "  (publish)" : "");
	free(ht);
	json_decref(frame);
}

/* A body that is one string: its text; else NULL. */
static char *
body_text(const char *body, size_t blen, size_t *len)
{
	char     *t;
	ptrdiff_t n;

	if (body == NULL || blen < 2 || body[0] != '"') {
		return NULL;
	}
	t = eb__malloc(blen);
	n = eb__json_unescape(body + 1, blen - 2, t);
	if (n < 0) {
		free(t);
		return NULL; /* no text form: printed as it came */
	}
	*len = (size_t) n;
	return t;
}

void
eb__ctl_print_reply(FILE *out, const char *p, size_t n, int mode)
{
	const char *body;
	size_t      blen;
	size_t      tlen = 0;
	json_t     *frame;
	json_t     *h;
	char       *s;

	if (mode == CTL_OUT_RAW) {
		eb__ctl_print_message(out, p, n, mode);
		return;
	}
	if ((frame = eb__ctl_frame_read(p, n, &body, &blen)) == NULL) {
		return;
	}
	if (mode == CTL_OUT_JSON) {
		h = json_object_get(frame, "headers");
		s = json_dumps(json_object_get(frame, "address"),
		    JSON_COMPACT | JSON_ENCODE_ANY);
		(void) fprintf(out,
		    "{\"address\":%s,\"headers\":", s != NULL ? s : "null");
		free(s);
		s = json_is_object(h) ? json_dumps(h, JSON_COMPACT) : NULL;
		(void) fprintf(out, "%s,\"body\":", s != NULL ? s : "{}");
		free(s);
		if (body != NULL) {
			put_compact(out, body, blen);
		} else {
			(void) fputs("null", out);
		}
		(void) fputs("}\n", out);
	} else if ((s = body_text(body, blen, &tlen)) != NULL) {
		(void) fwrite(s, 1, tlen, out);
		(void) fputc('\n', out);
		free(s);
	} else {
		if (body != NULL) {
			(void) fwrite(body, 1, blen, out);
		} else {
			(void) fputs("null", out);
		}
		(void) fputc('\n', out);
	}
	json_decref(frame);
}

void
eb__ctl_format_err(json_t *frame, char *buf, size_t len)
{
	const char *type =
	    json_string_value(json_object_get(frame, "failureType"));
	const char *msg = json_string_value(json_object_get(frame, "message"));
	json_t     *code = json_object_get(frame, "failureCode");

	if (type != NULL) {
		(void) snprintf(buf, len, "%s (%lld): %s", type,
		    json_is_integer(code) ? (long long) json_integer_value(code)
		                          : -1LL,
		    msg != NULL ? msg : "");
	} else {
		(void) snprintf(
		    buf, len, "%s", msg != NULL ? msg : "err frame");
	}
}

/* Column widths, then the rows: cells[r * ncols + c], row 0 the titles. */
static void
print_table(FILE *out, char **cells, size_t nrows, size_t ncols)
{
	size_t w[MAX_COLS] = { 0 };
	size_t r;
	size_t c;
	size_t l;

	for (r = 0; r < nrows; r++) {
		for (c = 0; c < ncols; c++) {
			l = strlen(cells[r * ncols + c]);
			w[c] = l > w[c] ? l : w[c];
		}
	}
	for (r = 0; r < nrows; r++) {
		for (c = 0; c < ncols; c++) {
			if (c + 1 == ncols) {
				(void) fprintf(
				    out, "%s\n", cells[r * ncols + c]);
			} else {
				(void) fprintf(out, "%-*s  ", (int) w[c],
				    cells[r * ncols + c]);
			}
		}
	}
}

static int
has_key(json_t *nodes, const char *key)
{
	size_t  i;
	json_t *n;

	json_array_foreach(nodes, i, n)
	{
		if (json_object_get(n, key) != NULL) {
			return 1;
		}
	}
	return 0;
}

static int
is_known_col(const char *key)
{
	size_t i;

	for (i = 0; i < NNODE_COLS; i++) {
		if (strcmp(g_node_cols[i].key, key) == 0) {
			return 1;
		}
	}
	return 0;
}

/* Picks the columns: known keys present in any node, then unknown ones in
 * first-seen order. keys[] are borrowed from the JSON or the table. */
static size_t
pick_columns(json_t *nodes, const char **keys, const char **titles)
{
	size_t      n = 0;
	size_t      i;
	size_t      j;
	json_t     *node;
	const char *k;
	json_t     *v;
	int         seen;

	for (i = 0; i < NNODE_COLS; i++) {
		if (has_key(nodes, g_node_cols[i].key)) {
			keys[n] = g_node_cols[i].key;
			titles[n++] = g_node_cols[i].title;
		}
	}
	json_array_foreach(nodes, i, node)
	{
		json_object_foreach(node, k, v)
		{
			seen = is_known_col(k);
			for (j = 0; j < n && !seen; j++) {
				seen = strcmp(keys[j], k) == 0;
			}
			if (!seen && n < MAX_COLS) {
				keys[n] = k;
				titles[n++] = NULL; /* upper-cased key */
			}
		}
	}
	return n;
}

static char *
upper_dup(const char *s)
{
	char  *u = eb__strdup(s);
	size_t i;

	for (i = 0; u[i] != '\0'; i++) {
		if (u[i] >= 'a' && u[i] <= 'z') {
			u[i] = (char) (u[i] - 'a' + 'A');
		}
	}
	return u;
}

static void
print_node_table(FILE *out, json_t *nodes)
{
	const char *keys[MAX_COLS];
	const char *titles[MAX_COLS];
	size_t      ncols = pick_columns(nodes, keys, titles);
	size_t      nrows = json_array_size(nodes) + 1;
	char      **cells;
	size_t      r;
	size_t      c;
	json_t     *v;

	if (ncols == 0) {
		(void) fprintf(out, "(no nodes)\n");
		return;
	}
	cells = eb__calloc(nrows * ncols, sizeof(*cells));
	for (c = 0; c < ncols; c++) {
		cells[c] = titles[c] != NULL ? eb__strdup(titles[c])
		                             : upper_dup(keys[c]);
	}
	for (r = 1; r < nrows; r++) {
		for (c = 0; c < ncols; c++) {
			v = json_object_get(
			    json_array_get(nodes, r - 1), keys[c]);
			cells[r * ncols + c] = strcmp(keys[c], "joined_ms") == 0
			                           ? time_cell(v)
			                           : eb__ctl_cell(v);
		}
	}
	print_table(out, cells, nrows, ncols);
	for (r = 0; r < nrows * ncols; r++) {
		free(cells[r]);
	}
	free(cells);
}

void
eb__ctl_print_nodes(FILE *out, json_t *resp, int json)
{
	json_t     *nodes;
	const char *k;
	json_t     *v;
	char       *cell;

	if (json) {
		print_json_line(out, resp);
		return;
	}
	nodes = json_is_array(resp) ? resp : json_object_get(resp, "nodes");
	if (json_is_object(resp)) {
		/* Summary fields (leader, epoch, ...) above the table. */
		json_object_foreach(resp, k, v)
		{
			if (strcmp(k, "nodes") != 0) {
				cell = eb__ctl_cell(v);
				(void) fprintf(out, "%s: %s\n", k, cell);
				free(cell);
			}
		}
	}
	if (!json_is_array(nodes) || json_array_size(nodes) == 0) {
		(void) fprintf(out, "(no nodes)\n");
		return;
	}
	print_node_table(out, nodes);
}

void
eb__ctl_print_object(FILE *out, json_t *obj, int json)
{
	const char *k;
	json_t     *v;
	char       *cell;
	size_t      w = 0;

	if (json || !json_is_object(obj)) {
		print_json_line(out, obj);
		return;
	}
	json_object_foreach(obj, k, v)
	{
		w = strlen(k) > w ? strlen(k) : w;
	}
	json_object_foreach(obj, k, v)
	{
		cell = strcmp(k, "joined_ms") == 0 ? time_cell(v)
		                                   : eb__ctl_cell(v);
		(void) fprintf(
		    out, "%s:%*s %s\n", k, (int) (w - strlen(k)), "", cell);
		free(cell);
	}
}
