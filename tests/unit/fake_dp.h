/* fake_dp.h - the start of a fake dataplane for libmlfabric's Check tests: a temporary directory
 * holding a cluster file and a listening Unix SOCK_SEQPACKET socket (the app socket). */
#ifndef MLF_FAKE_DP_H
#define MLF_FAKE_DP_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

/**
 * fake_dp_listen - make the directory @dir (64 bytes: a mkdtemp template on entry, the path on
 * return), write the cluster JSON @cluster to @cfg = <dir>/c.json (96 bytes) and listen (backlog
 * @backlog) on @sock = <dir>/dp.sock (96 bytes). Returns the listening socket; a failure fails
 * the test.
 */
static inline int fake_dp_listen(char *dir, char *cfg, char *sock, const char *cluster, int backlog)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	FILE *f;
	int lfd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cfg, 96, "%s/c.json", dir);
	snprintf(sock, 96, "%s/dp.sock", dir);
	f = fopen(cfg, "w");
	ck_assert_ptr_nonnull(f);
	fputs(cluster, f);
	fclose(f);
	strcpy(sa.sun_path, sock);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(lfd, backlog), 0);
	return lfd;
}

#endif
