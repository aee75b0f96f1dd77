/*
 * ebnode: the daemon's entry point. Parses the command line, loads the
 * configuration and runs the node on one libuv loop. The only place that
 * calls exit().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/eb.h>

static void
usage(FILE *out)
{
	fprintf(out,
	    "Usage: ebnode [options]\n"
	    "\n"
	    "A clustered event-bus node: Vert.x TCP event-bus bridge, "
	    "ZooKeeper\n"
	    "membership and leader election, leader-routed ingress.\n"
	    "\n"
	    "Options:\n"
	    "  -c, --config FILE   configuration file (JSON, see README)\n"
	    "  -s, --set KEY=VALUE override one configuration key\n"
	    "      --check         validate the configuration and exit\n"
	    "  -h, --help          show this help and exit\n"
	    "  -V, --version       show the version and exit\n");
}

int
main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return EXIT_SUCCESS;
		}
		if (strcmp(argv[i], "-V") == 0 ||
		    strcmp(argv[i], "--version") == 0) {
			printf("ebnode %s (link protocol %d)\n",
			    EB_VERSION_STRING, EB_LINK_PROTOCOL_VERSION);
			return EXIT_SUCCESS;
		}
	}
	usage(stderr);
	return 2;
}
