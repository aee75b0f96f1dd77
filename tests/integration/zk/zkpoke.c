/*
 * zkpoke: a small ZooKeeper client for the integration tests that damage
 * or crowd <root>/members from outside (tests/integration/cluster/
 * members_test.py). Built on libzookeeper_st directly (tests may; the
 * modules may not), driven by its own poll() loop; every wait is bounded.
 *
 *   zkpoke <connect> [session_ms]
 *
 * reads one command per line on stdin and answers one line on stdout:
 *   create <p|e|ps|es> <open|noread> <path> [data]   OK <created path>
 *   set <path> <data>                                OK
 *   delete <path>                                    OK
 *   get <path>                                       OK <owner-hex> <data>
 *   children <path>                                  OK <count>
 *   sessions <n> <members path> <eligible 0|1>       OK <n> <ms>
 *       n more sessions, each with one valid EPHEMERAL_SEQUENTIAL member
 *       record (host "" and cluster_port 0: never linked to)
 *   requests                                         OK <requests sent>
 * and "ERR <zk error name>" on failure. Every session is kept alive
 * (driven) while zkpoke waits for the next command, so ephemeral nodes
 * live until stdin closes; then every session is closed and it exits 0.
 * "noread" creates the node with world:anyone all but READ (an unreadable
 * child).
 */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#define POKE_WAIT_MS  10000
#define POKE_MAX_SESS 4096

typedef struct poke_res {
	int  done;
	int  rc;
	char buf[1024];
	long owner;
} poke_res;

static zhandle_t *sess[POKE_MAX_SESS]; /* [0]: the command session */
static int        nsess;
static int        connected[POKE_MAX_SESS];
static long       requests;
/* While zkpoke waits for the next command it keeps every session alive
 * (pings): drive() then also polls stdin and has no deadline. */
static int stdin_wait;
static int stdin_ready;

static long
now_ms(void)
{
	struct timespec ts;

	(void) clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void
watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	int *c = ctx;

	(void) zh;
	(void) path;
	if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE) {
		*c = 1;
	}
}

/* Drives every session until *done (or all connected when done is
 * NULL); 0, or -1 after POKE_WAIT_MS. */
static int
drive(const int *done)
{
	long deadline = stdin_wait ? -1 : now_ms() + POKE_WAIT_MS;

	for (;;) {
		struct pollfd pfd[POKE_MAX_SESS + 1];
		int           i;
		int           all = 1;
		long          wait = 100;

		for (i = 0; i < nsess; i++) {
			all &= connected[i];
		}
		if (done != NULL ? *done : all) {
			return 0;
		}
		if (deadline >= 0 && now_ms() > deadline) {
			return -1;
		}
		for (i = 0; i < nsess; i++) {
			int            fd = -1;
			int            interest = 0;
			struct timeval tv;

			(void) zookeeper_interest(sess[i], &fd, &interest, &tv);
			pfd[i].fd = fd;
			pfd[i].events =
			    (short) (((interest & ZOOKEEPER_READ) ? POLLIN
			                                          : 0) |
			             ((interest & ZOOKEEPER_WRITE) ? POLLOUT
			                                           : 0));
			pfd[i].revents = 0;
			if (tv.tv_sec * 1000L + tv.tv_usec / 1000 < wait) {
				wait = tv.tv_sec * 1000L + tv.tv_usec / 1000;
			}
		}
		pfd[nsess].fd = stdin_wait ? 0 : -1;
		pfd[nsess].events = POLLIN;
		pfd[nsess].revents = 0;
		(void) poll(
		    pfd, (nfds_t) nsess + 1, (int) (wait < 1 ? 1 : wait));
		if (pfd[nsess].revents != 0) {
			stdin_ready = 1;
		}
		for (i = 0; i < nsess; i++) {
			int ev = 0;

			if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) {
				ev |= ZOOKEEPER_READ;
			}
			if (pfd[i].revents & POLLOUT) {
				ev |= ZOOKEEPER_WRITE;
			}
			(void) zookeeper_process(sess[i], ev);
		}
	}
}

static int
open_session(const char *connect, int session_ms)
{
	if (nsess == POKE_MAX_SESS) {
		return -1;
	}
	connected[nsess] = 0;
	sess[nsess] = zookeeper_init(
	    connect, watcher, session_ms, NULL, &connected[nsess], 0);
	if (sess[nsess] == NULL) {
		return -1;
	}
	nsess++;
	return 0;
}

/* The completion's data is the poke_res the caller passed (the client
 * hands it back as const void *). */
static poke_res *
res_of(const void *data)
{
	union {
		const void *c;
		poke_res   *p;
	} u;

	u.c = data;
	return u.p;
}

/* A decimal argument (0 when absent or not a number). */
static int
num(const char *s)
{
	long v = s != NULL ? strtol(s, NULL, 10) : 0;

	return v > 0 && v < 1000000 ? (int) v : 0;
}

/* Batch creates of cmd_sessions: creates_all turns 1 when all are in. */
static int creates_done;
static int creates_want = -1;
static int creates_all;

static void
string_cb(int rc, const char *value, const void *data)
{
	poke_res *r = res_of(data);

	if (creates_want >= 0 && ++creates_done >= creates_want) {
		creates_all = 1;
	}
	r->rc = rc;
	if (rc == ZOK && value != NULL) {
		(void) snprintf(r->buf, sizeof(r->buf), "%s", value);
	}
	r->done++;
}

static void
void_cb(int rc, const void *data)
{
	poke_res *r = res_of(data);

	r->rc = rc;
	r->done++;
}

static void
stat_cb(int rc, const struct Stat *st, const void *data)
{
	(void) st;
	void_cb(rc, data);
}

static void
data_cb(
    int rc, const char *value, int len, const struct Stat *st, const void *data)
{
	poke_res *r = res_of(data);

	r->rc = rc;
	if (rc == ZOK) {
		int n = len < 0 ? 0 : len;

		if (n > (int) sizeof(r->buf) - 1) {
			n = (int) sizeof(r->buf) - 1;
		}
		memcpy(r->buf, value != NULL ? value : "", (size_t) n);
		r->buf[n] = '\0';
		r->owner = (long) st->ephemeralOwner;
	}
	r->done++;
}

static void
children_cb(int rc, const struct String_vector *v, const void *data)
{
	poke_res *r = res_of(data);

	r->rc = rc;
	r->owner = rc == ZOK ? v->count : 0;
	r->done++;
}

static void
answer(int ok, poke_res *r)
{
	if (!ok) {
		printf("ERR timeout\n");
	} else if (r->rc != ZOK) {
		printf("ERR %s\n", zerror(r->rc));
	} else {
		printf("OK\n");
	}
}

/* world:anyone with WRITE|CREATE|DELETE|ADMIN (2|4|8|16) but not READ (1):
 * ZOO_PERM_* are not constant expressions. */
static char              world[] = "world";
static char              anyone[] = "anyone";
static struct ACL        noread_acl[] = { { 30, { world, anyone } } };
static struct ACL_vector noread = { 1, noread_acl };

static void
cmd_create(char *flags, char *acl, char *path, char *data)
{
	poke_res r = { 0 };
	int      mode = 0;

	mode |= strchr(flags, 'e') != NULL ? ZOO_EPHEMERAL : 0;
	mode |= strchr(flags, 's') != NULL ? ZOO_SEQUENCE : 0;
	requests++;
	if (zoo_acreate(sess[0], path, data,
	        data != NULL ? (int) strlen(data) : -1,
	        strcmp(acl, "noread") == 0 ? &noread : &ZOO_OPEN_ACL_UNSAFE,
	        mode, string_cb, &r) != ZOK) {
		printf("ERR submit\n");
		return;
	}
	if (drive(&r.done) != 0 || r.rc != ZOK) {
		answer(r.done, &r);
		return;
	}
	printf("OK %s\n", r.buf);
}

/* n sessions, each with one valid member record. */
static void
cmd_sessions(const char *connect, int session_ms, int n, const char *members,
    int eligible)
{
	poke_res *res = calloc((size_t) (n > 0 ? n : 1), sizeof(*res));
	long      t0 = now_ms();
	int       first = nsess;
	int       i;

	if (res == NULL) {
		printf("ERR nomem\n");
		return;
	}
	for (i = 0; i < n; i++) {
		if (open_session(connect, session_ms) != 0) {
			printf("ERR sessions\n");
			free(res);
			return;
		}
	}
	if (drive(NULL) != 0) {
		printf("ERR connect-timeout\n");
		free(res);
		return;
	}
	for (i = 0; i < n; i++) {
		char path[512];
		char data[512];

		(void) snprintf(path, sizeof(path),
		    "%s/m-%08x-0000-4000-8000-%012x-", members,
		    (unsigned) (first + i), (unsigned) i);
		(void) snprintf(data, sizeof(data),
		    "{\"address\":\"poke-%d\",\"node_id\":\"poke-%d\","
		    "\"host\":\"\",\"cluster_port\":0,\"bridge_port\":0,"
		    "\"admin_port\":0,\"version\":\"poke\",\"started_ms\":1,"
		    "\"eligible\":%s}",
		    first + i, first + i, eligible ? "true" : "false");
		requests++;
		if (zoo_acreate(sess[first + i], path, data, (int) strlen(data),
		        &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE,
		        string_cb, &res[i]) != ZOK) {
			res[i].done = 1;
			res[i].rc = ZSYSTEMERROR;
		}
	}
	/* string_cb counts into creates_done too: one wait for all. */
	creates_done = 0;
	creates_all = 0;
	creates_want = n;
	(void) drive(&creates_all);
	creates_want = -1;
	for (i = 0; i < n; i++) {
		if (!res[i].done || res[i].rc != ZOK) {
			printf("ERR create %d: %s\n", i, zerror(res[i].rc));
			free(res);
			return;
		}
	}
	printf("OK %d %ld\n", n, now_ms() - t0);
	free(res);
}

static int
drive_one(poke_res *r)
{
	return drive(&r->done) == 0;
}

static void
run(const char *connect, int session_ms, char *line)
{
	char    *cmd = strtok(line, " \n");
	char    *a = strtok(NULL, " \n");
	char    *b = strtok(NULL, " \n");
	char    *c = strtok(NULL, " \n");
	char    *d = strtok(NULL, "\n");
	poke_res r = { 0 };

	if (cmd == NULL) {
		printf("ERR empty\n");
	} else if (strcmp(cmd, "create") == 0 && c != NULL) {
		cmd_create(a, b, c, d);
	} else if (strcmp(cmd, "set") == 0 && b != NULL) {
		/* b and the rest are the data: rejoin what strtok split. */
		char data[1024];

		(void) snprintf(data, sizeof(data), "%s%s%s%s%s", b,
		    c != NULL ? " " : "", c != NULL ? c : "",
		    d != NULL ? " " : "", d != NULL ? d : "");
		requests++;
		(void) zoo_aset(
		    sess[0], a, data, (int) strlen(data), -1, stat_cb, &r);
		answer(drive_one(&r), &r);
	} else if (strcmp(cmd, "delete") == 0 && a != NULL) {
		requests++;
		(void) zoo_adelete(sess[0], a, -1, void_cb, &r);
		answer(drive_one(&r), &r);
	} else if (strcmp(cmd, "get") == 0 && a != NULL) {
		requests++;
		(void) zoo_aget(sess[0], a, 0, data_cb, &r);
		if (drive_one(&r) && r.rc == ZOK) {
			printf("OK %lx %s\n", r.owner, r.buf);
		} else {
			answer(r.done, &r);
		}
	} else if (strcmp(cmd, "children") == 0 && a != NULL) {
		requests++;
		(void) zoo_aget_children(sess[0], a, 0, children_cb, &r);
		if (drive_one(&r) && r.rc == ZOK) {
			printf("OK %ld\n", r.owner);
		} else {
			answer(r.done, &r);
		}
	} else if (strcmp(cmd, "sessions") == 0 && c != NULL && num(a) > 0) {
		cmd_sessions(connect, session_ms, num(a), b, num(c));
	} else if (strcmp(cmd, "requests") == 0) {
		printf("OK %ld\n", requests);
	} else {
		printf("ERR usage\n");
	}
	(void) fflush(stdout);
}

int
main(int argc, char **argv)
{
	char   line[2048];
	size_t have = 0;
	int    session_ms = argc > 2 ? num(argv[2]) : 10000;
	int    i;

	if (argc < 2) {
		(void) fprintf(
		    stderr, "usage: zkpoke <connect> [session_ms]\n");
		return 2;
	}
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	if (open_session(argv[1], session_ms) != 0 || drive(NULL) != 0) {
		(void) fprintf(
		    stderr, "zkpoke: cannot connect to %s\n", argv[1]);
		return 1;
	}
	printf("READY\n");
	(void) fflush(stdout);
	for (;;) {
		char   *nl = memchr(line, '\n', have);
		ssize_t got;

		if (nl != NULL) {
			char   cmd[2048];
			size_t len = (size_t) (nl - line);

			memcpy(cmd, line, len);
			cmd[len] = '\0';
			memmove(line, nl + 1, have - len - 1);
			have -= len + 1;
			run(argv[1], session_ms, cmd);
			continue;
		}
		stdin_ready = 0;
		stdin_wait = 1;
		(void) drive(&stdin_ready);
		stdin_wait = 0;
		got = read(0, line + have, sizeof(line) - 1 - have);
		if (got <= 0) {
			break; /* EOF (or a line longer than the buffer) */
		}
		have += (size_t) got;
	}
	for (i = 0; i < nsess; i++) {
		(void) zookeeper_close(sess[i]);
	}
	return 0;
}
