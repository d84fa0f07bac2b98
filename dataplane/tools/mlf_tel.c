/* mlf_tel.c - mlf-tel: send one DPDK telemetry command to a running dataplane, print the JSON reply. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void usage(FILE *out)
{
	fprintf(out,
		"usage: mlf-tel FILE_PREFIX COMMAND\n"
		"Sends COMMAND to the DPDK telemetry socket of the process started with\n"
		"--file-prefix=FILE_PREFIX (/var/run/dpdk/FILE_PREFIX/dpdk_telemetry.v2), prints the JSON\n"
		"reply. A small stand-in for dpdk-telemetry.py, which Debian's dpdk package lacks.\n"
		"Examples: mlf-tel pair-a /mlfabric/stats\n"
		"          mlf-tel pair-b /mlfabric/faults,rx_drop=0.01,reorder=0.01\n"
		"          mlf-tel pair-a /mlfabric/shaper,2.5\n");
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static char buf[1 << 16];
	ssize_t n;
	int fd;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc != 3) {
		usage(stderr);
		return 2;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/var/run/dpdk/%s/dpdk_telemetry.v2", argv[1]);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "mlf-tel: cannot connect to %s: %s (is a dataplane running with "
			"--file-prefix=%s?)\n", sa.sun_path, strerror(errno), argv[1]);
		return 1;
	}
	if (read(fd, buf, sizeof(buf)) <= 0 || write(fd, argv[2], strlen(argv[2])) < 0 ||
	    (n = read(fd, buf, sizeof(buf) - 1)) <= 0) {
		fprintf(stderr, "mlf-tel: %s: no reply to '%s'\n", sa.sun_path, argv[2]);
		close(fd);
		return 1;
	}
	buf[n] = '\0';
	printf("%s\n", buf);
	close(fd);
	return strstr(buf, "\"error\"") ? 1 : 0;
}
