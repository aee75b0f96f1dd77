/*
 * ebnode's command line (cli.c): the options of docs/NODE.md "Command
 * line" turned into configuration sources (-c FILE, else $EBNODE_CONFIG;
 * every -s KEY=VALUE in order; the process environment) and the
 * one-shot actions (--check, --print-config, --help, --version).
 */
#ifndef EB_CONF_CLI_H
#define EB_CONF_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "conf/conf.h"

typedef struct eb__conf_cli {
	eb__conf_sources src;  /* src.sets is sets */
	const char     **sets; /* owned: eb__conf_cli_free */
	bool             check;
	bool             print_config;
	bool             help;
	bool             version;
} eb__conf_cli;

/* 0, or -1 after one usage line on stderr. Free c either way. */
int  eb__conf_cli_parse(int argc, char **argv, eb__conf_cli *c);
void eb__conf_cli_free(eb__conf_cli *c);
/* Parses the command line, does the one-shot actions and loads the
 * configuration. -1: run the node with *conf (owned by the caller); else
 * the exit code: 0 (--help, --version, --check, --print-config done), 1
 * (printing failed), 2 (usage or configuration error, said on stderr).
 * Free c (and *conf) either way, after the run: the node re-reads c->src. */
int eb__conf_cli_prepare(
    int argc, char **argv, eb__conf_cli *c, eb__conf **conf);

#endif
