/*
 * ebproxy: the th_proxy TCP fault proxy as a process, for Python tests.
 *
 *   ebproxy <listen-port-or-0> <target-host:port>
 *
 * Prints "PROXY port=<p>" once listening, then reads one command per line on
 * stdin and answers "ok" (or "err <reason>") on stdout:
 *   pause | resume | cut | heal | delay <ms> | stats | quit
 * ("stats" answers "ok accepted=<n> active=<n>"). EOF on stdin or "quit"
 * closes the proxy and exits 0. Exit 2 on bad arguments, 1 on listen errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "tests/harness/proxy.h"

#define LINE_MAX_LEN 256

struct app {
	uv_loop_t *loop;
	uv_pipe_t  in;
	th_proxy  *proxy;
	char       line[LINE_MAX_LEN];
	size_t     used;
	int        quitting;
};

static void
reply(const char *s)
{
	(void) fputs(s, stdout);
	(void) fputc('\n', stdout);
	(void) fflush(stdout);
}

static void
quit(struct app *a)
{
	if (a->quitting) {
		return;
	}
	a->quitting = 1;
	uv_close((uv_handle_t *) &a->in, NULL);
	th_proxy_close(a->proxy, NULL, NULL);
}

static void
command(struct app *a, char *cmd)
{
	char  out[128];
	char *end = NULL;
	long  ms;

	if (strcmp(cmd, "pause") == 0) {
		th_proxy_pause(a->proxy);
	} else if (strcmp(cmd, "resume") == 0) {
		th_proxy_resume(a->proxy);
	} else if (strcmp(cmd, "cut") == 0) {
		th_proxy_cut(a->proxy);
	} else if (strcmp(cmd, "heal") == 0) {
		th_proxy_heal(a->proxy);
	} else if (strncmp(cmd, "delay ", 6) == 0) {
		ms = strtol(cmd + 6, &end, 10);
		if (end == cmd + 6 || *end != '\0' || ms < 0) {
			reply("err bad delay");
			return;
		}
		th_proxy_delay_ms(a->proxy, (uint64_t) ms);
	} else if (strcmp(cmd, "stats") == 0) {
		(void) snprintf(out, sizeof(out), "ok accepted=%llu active=%u",
		    (unsigned long long) th_proxy_accepted(a->proxy),
		    th_proxy_active(a->proxy));
		reply(out);
		return;
	} else if (strcmp(cmd, "quit") == 0) {
		reply("ok");
		quit(a);
		return;
	} else if (cmd[0] == '\0') {
		return;
	} else {
		reply("err unknown command");
		return;
	}
	reply("ok");
}

static void
alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char slab[4096];

	(void) h;
	(void) suggested;
	*buf = uv_buf_init(slab, sizeof(slab));
}

static void
read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct app *a = s->data;
	ssize_t     i;

	if (nread < 0) {
		quit(a); /* EOF: the test is gone */
		return;
	}
	for (i = 0; i < nread && !a->quitting; i++) {
		char ch = buf->base[i];

		if (ch == '\n') {
			a->line[a->used] = '\0';
			if (a->used > 0 && a->line[a->used - 1] == '\r') {
				a->line[a->used - 1] = '\0';
			}
			command(a, a->line);
			a->used = 0;
		} else if (a->used + 1 < sizeof(a->line)) {
			a->line[a->used++] = ch;
		}
	}
}

int
main(int argc, char **argv)
{
	struct app a;
	char       host[128];
	char      *end = NULL;
	long       lport;
	int        tport;
	int        rv;

	memset(&a, 0, sizeof(a));
	if (argc != 3) {
		(void) fprintf(
		    stderr, "usage: %s <listen-port|0> <host:port>\n", argv[0]);
		return 2;
	}
	lport = strtol(argv[1], &end, 10);
	if (end == argv[1] || *end != '\0' || lport < 0 || lport > 65535 ||
	    th_proxy_parse_target(argv[2], host, sizeof(host), &tport) != 0) {
		(void) fprintf(stderr, "ebproxy: bad arguments\n");
		return 2;
	}
	a.loop = uv_default_loop();
	rv = th_proxy_new(a.loop, (int) lport, host, tport, &a.proxy);
	if (rv != 0) {
		(void) fprintf(
		    stderr, "ebproxy: listen: %s\n", uv_strerror(rv));
		(void) uv_run(a.loop, UV_RUN_DEFAULT);
		return 1;
	}
	(void) printf("PROXY port=%d\n", th_proxy_port(a.proxy));
	(void) fflush(stdout);
	(void) uv_pipe_init(a.loop, &a.in, 0);
	(void) uv_pipe_open(&a.in, 0);
	a.in.data = &a;
	(void) uv_read_start((uv_stream_t *) &a.in, alloc_cb, read_cb);
	(void) uv_run(a.loop, UV_RUN_DEFAULT);
	(void) uv_loop_close(a.loop);
	return 0;
}
