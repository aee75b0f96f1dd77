/*
 * conf internals shared by conf.c (the load pipeline), schema.c (the key
 * table and the typed setters) and posidx.c (comment stripping and the
 * position index). Not installed; only conf/ includes it (and its tests).
 *
 * Error messages all go through eb__conf_errf(), which prefixes the origin
 * of the value: "file:line:col", "environment EBNODE_X" or "--set key".
 */
#ifndef EB_CONF_CONF_INT_H
#define EB_CONF_CONF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <ebnode/err.h>

#include "conf/conf.h"

/* ---- position index (posidx.c) ---------------------------------------- */

/* Where one value sits in the file: its key (objects) and its value. */
typedef struct eb__conf_pos {
	char *path;        /* owned: "bridge.port", "ingress.routes[2].to" */
	int   kline, kcol; /* key position (element: same as the value) */
	int   vline, vcol; /* first character of the value */
} eb__conf_pos;

typedef struct eb__conf_posidx {
	eb__conf_pos *v; /* owned array */
	size_t        n, cap;
	/* The first duplicate key met, if any (jansson's error has no path). */
	char *dup_path; /* owned, NULL if none */
	int   dup_line, dup_col;
} eb__conf_posidx;

/*
 * Replaces every comment in text (len bytes, any NULs are left alone) by
 * spaces, keeping newlines, so positions stay true. Strings are respected.
 * Returns 0, or -1 for an unterminated block comment starting at
 * *line:*col.
 */
int eb__conf_strip_comments(char *text, size_t len, int *line, int *col);
/*
 * Scans JSON text and records the position of every object member and
 * array element. Stops quietly at the first syntax error (jansson reports
 * it) and records the first duplicate key. Nesting is limited to 64.
 */
void eb__conf_posidx_build(eb__conf_posidx *idx, const char *text, size_t len);
/* The entry for path, or NULL. */
const eb__conf_pos *eb__conf_posidx_find(
    const eb__conf_posidx *idx, const char *path);
/* The last entry whose value starts at or before line:col, or NULL. */
const eb__conf_pos *eb__conf_posidx_before(
    const eb__conf_posidx *idx, int line, int col);
void eb__conf_posidx_free(eb__conf_posidx *idx);

/* ---- origins and errors ---------------------------------------------- */

enum eb__conf_src_kind {
	EB__CONF_SRC_DEFAULT = 0,
	EB__CONF_SRC_FILE,
	EB__CONF_SRC_ENV,
	EB__CONF_SRC_FLAG,
	EB__CONF_SRC_CLUSTER /* the cluster configuration (dynamic keys) */
};

/* Where the values being applied come from. */
typedef struct eb__conf_src {
	int                    kind; /* enum eb__conf_src_kind */
	const char            *name; /* file path, env var name or --set key */
	const eb__conf_posidx *idx;  /* FILE: positions by path; may be NULL */
	int                    line, col; /* FILE without idx: fixed position */
} eb__conf_src;

/*
 * Formats "<origin>: <path>: <text>" into err and returns EB_ECONF. For a
 * file the position is looked up by path (the key's when at_key, else the
 * value's; the nearest enclosing path if the path itself has none). For
 * --set the path is left out when it equals the flag's key.
 */
int eb__conf_errf(const eb__conf_src *src, eb_errbuf *err, const char *path,
    bool at_key, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* ---- schema (schema.c) ------------------------------------------------ */

/*
 * A row's kind says how the value is checked and how wide the field it is
 * stored in is (the schema macros check the width at compile time).
 */
typedef enum eb__conf_type {
	EB__CT_STRING, /* const char * (owned by the eb__conf) */
	EB__CT_WORD,   /* const char *, one of words */
	EB__CT_I64,    /* int64_t */
	EB__CT_U64,    /* uint64_t */
	EB__CT_U32,    /* uint32_t */
	EB__CT_INT,    /* int */
	EB__CT_SIZE,   /* size_t */
	EB__CT_BOOL,   /* bool */
	EB__CT_IBOOL,  /* int, 0 or 1 */
	EB__CT_ENUM,   /* an int-sized enum: vals[index of word] */
	EB__CT_ARRAY,  /* of objects described by obj; off_n: size_t count */
	EB__CT_OBJECT, /* one object described by obj, or null/absent */
	EB__CT_MATCH   /* element fields only: a string stored at off, with
	                  tag stored at off2 (equals/prefix/regex) */
} eb__conf_type;

#define EB__CF_NONEMPTY 0x01u /* strings: "" is an error */
#define EB__CF_SECRET   0x02u /* redacted by eb__conf_to_json */
#define EB__CF_COMPUTED 0x04u /* default derived by conf after loading */
#define EB__CF_REGEX    0x08u /* strings: must compile as POSIX ERE */
#define EB__CF_NULLSTR  0x10u /* strings: "" is stored as NULL (off) */
#define EB__CF_NOT      0x20u /* booleans: stored negated */
#define EB__CF_DEFAULT                                  \
	0x40u /* the row states the default (the module \
	         has none, or the daemon's differs) */
/* Dynamic: may change at run time (the cluster configuration, SIGHUP);
 * every other key is static (node-local, read once at start). */
#define EB__CF_DYNAMIC 0x80u
/* Strings: a list of browser origins (admin.cors_origins), checked by
 * eb__admin_origins_check. */
#define EB__CF_ORIGINS 0x100u

/* A field of an element object (strings, match strings and enums). */
typedef struct eb__conf_field {
	const char        *key;
	eb__conf_type      type; /* STRING, MATCH or ENUM (int, index) */
	size_t             off;
	size_t             off2;  /* MATCH: of the int tag */
	const char *const *words; /* enum: NULL-terminated */
	int                tag;   /* MATCH: the value stored at off2 */
	unsigned           flags;
} eb__conf_field;

typedef struct eb__conf_objdesc {
	size_t                size; /* of the element struct */
	const eb__conf_field *fields;
	size_t                n_fields;
	/* Cross-field rules of one element (n_match: MATCH keys given); 0 or
	 * EB_ECONF (via errf). */
	int (*check)(const void *obj, int n_match, const char *path,
	    const eb__conf_src *src, eb_errbuf *err);
} eb__conf_objdesc;

typedef struct eb__conf_entry {
	const char             *path;
	size_t                  off;     /* of the field in eb__conf */
	size_t                  size;    /* of the field */
	size_t                  off_n;   /* arrays: of the size_t count */
	const char             *def_str; /* EB__CF_DEFAULT only */
	int64_t                 def_int; /* EB__CF_DEFAULT only */
	int64_t                 min, max;
	const char *const      *words; /* enum, word: NULL-terminated */
	const int              *vals;  /* enum: value of each word */
	const eb__conf_objdesc *obj;   /* array and object */
	eb__conf_type           type;
	unsigned                flags;
} eb__conf_entry;

extern const eb__conf_entry eb__conf_schema[];
extern const size_t         eb__conf_schema_len;

/* The entry for a full key path, or NULL. */
const eb__conf_entry *eb__conf_find(const char *path);

/* True if path names a section ("bridge", "bridge.tls"). */
bool eb__conf_is_section(const char *path);
/* Sets every value to its default: the modules' _opts_init, then the rows
 * that state their own (computed ones stay NULL). */
void eb__conf_defaults(eb__conf *c);
/* Frees what c owns (not c). */
void eb__conf_release(eb__conf *c);
/* Validates v against e and stores it in c, replacing the old value. */
int eb__conf_set(eb__conf *c, const eb__conf_entry *e, json_t *v,
    const eb__conf_src *src, eb_errbuf *err);
/* Turns env/flag text into a JSON value for e (new reference in *out). */
int eb__conf_parse_text(const eb__conf_entry *e, const char *text, json_t **out,
    const eb__conf_src *src, eb_errbuf *err);
/* The value of e in c as JSON (new reference). */
json_t *eb__conf_get_json(
    const eb__conf *c, const eb__conf_entry *e, bool show_secrets);
/* "got ..." text for a JSON value: compact JSON, cut at 40 characters. */
void eb__conf_describe(const json_t *v, char *out, size_t n);

#endif
