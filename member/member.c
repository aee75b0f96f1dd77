/* Member names and data, and address encoding; see member.h. */
#include "member/member.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>

#include "common/alloc.h"

int
eb__member_parse_name(const char *name, int64_t *seq, char *uuid)
{
	size_t  n;
	size_t  i;
	int64_t v = 0;

	if (name == NULL || strncmp(name, EB_MEMBER_PREFIX, 2) != 0) {
		return EB_EPROTO;
	}
	n = strlen(name);
	/* "m-" + 36 + "-" + 10 digits */
	if (n != 2 + 36 + 1 + 10 || name[38] != '-') {
		return EB_EPROTO;
	}
	for (i = 39; i < n; i++) {
		if (name[i] < '0' || name[i] > '9') {
			return EB_EPROTO;
		}
		v = v * 10 + (name[i] - '0');
	}
	*seq = v;
	if (uuid != NULL) {
		memcpy(uuid, name + 2, 36);
		uuid[36] = '\0';
	}
	return 0;
}

static char *
dup_str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return eb__strdup(s != NULL ? s : "");
}

static int
get_port(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > 65535) {
		return 0;
	}
	return (int) json_integer_value(v);
}

/* "link_min".."link_max", both integers in 1..65535, min <= max; else
 * none (0, 0): the node predates versioned links. */
static void
get_link_range(eb__member *m)
{
	json_t *lo = json_object_get(m->data, "link_min");
	json_t *hi = json_object_get(m->data, "link_max");

	if (!json_is_integer(lo) || !json_is_integer(hi) ||
	    json_integer_value(lo) < 1 ||
	    json_integer_value(hi) < json_integer_value(lo) ||
	    json_integer_value(hi) > 65535) {
		return;
	}
	m->link_min = (int) json_integer_value(lo);
	m->link_max = (int) json_integer_value(hi);
}

int
eb__member_init(eb__member *m, const char *name, const char *data, size_t len,
    int64_t czxid, int64_t owner, int32_t version)
{
	json_t *v;
	int     rv;

	memset(m, 0, sizeof(*m));
	rv = eb__member_parse_name(name, &m->seq, m->uuid);
	if (rv != 0) {
		return rv;
	}
	m->name = eb__strdup(name);
	m->czxid = czxid;
	m->owner = owner;
	m->version = version;
	m->eligible = 1;
	m->data =
	    data != NULL && len > 0 ? json_loadb(data, len, 0, NULL) : NULL;
	if (m->data != NULL && !json_is_object(m->data)) {
		json_decref(m->data);
		m->data = NULL;
	}
	m->node_id = dup_str(m->data, "node_id");
	m->address = dup_str(m->data, "address");
	m->host = dup_str(m->data, "host");
	m->version_str = dup_str(m->data, "version");
	m->cluster_port = get_port(m->data, "cluster_port");
	m->bridge_port = get_port(m->data, "bridge_port");
	m->admin_port = get_port(m->data, "admin_port");
	v = json_object_get(m->data, "started_ms");
	if (json_is_integer(v) && json_integer_value(v) > 0) {
		m->started_ms = (uint64_t) json_integer_value(v);
	}
	if (json_is_false(json_object_get(m->data, "eligible"))) {
		m->eligible = 0;
	}
	get_link_range(m);
	return 0;
}

static int
port_ok(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return v == NULL || (json_is_integer(v) && json_integer_value(v) >= 0 &&
	                        json_integer_value(v) <= 65535);
}

static int
nonempty_string(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL && s[0] != '\0';
}

const char *
eb__member_invalid_reason(const eb__member *m)
{
	json_t *el;

	if (m->owner == 0) {
		return "not-ephemeral";
	}
	if (m->data == NULL) {
		return "bad-json"; /* not JSON, not an object, or empty */
	}
	if (!nonempty_string(m->data, "node_id")) {
		return "no-node-id";
	}
	if (!nonempty_string(m->data, "address")) {
		return "no-address";
	}
	if (!port_ok(m->data, "cluster_port") ||
	    !port_ok(m->data, "bridge_port") ||
	    !port_ok(m->data, "admin_port")) {
		return "bad-port";
	}
	el = json_object_get(m->data, "eligible");
	if (el != NULL && !json_is_boolean(el)) {
		return "bad-eligible";
	}
	return NULL;
}

const char *
eb__member_load(eb__member *m, const char *name, const char *data, size_t len,
    int64_t czxid, int64_t owner, int32_t version)
{
	const char *why;

	if (eb__member_init(m, name, data, len, czxid, owner, version) != 0) {
		return "bad-name";
	}
	why = eb__member_invalid_reason(m);
	if (why != NULL) {
		eb__member_free(m);
	}
	return why;
}

void
eb__member_free(eb__member *m)
{
	free(m->name);
	free(m->node_id);
	free(m->address);
	free(m->host);
	free(m->version_str);
	if (m->data != NULL) {
		json_decref(m->data);
	}
	memset(m, 0, sizeof(*m));
}

char *
eb__member_encode_address(const char *address)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t            n = strlen(address);
	char             *out = eb__malloc(n * 3 + 1);
	size_t            o = 0;
	size_t            i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char) address[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    c == '~' || (c == '.' && n > 2)) {
			out[o++] = (char) c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return out;
}
