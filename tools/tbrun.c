/* tbrun.c - run ip/tc commands without a shell and clean up processes left in namespaces. */
#define _GNU_SOURCE
#include "tbrun.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

extern char **environ;

/* Reads both pipes until EOF into the (optional) buffers, dropping what does not fit. */
static void drain(int fd_out, int fd_err, char *out, size_t outlen, char *err, size_t errlen)
{
	struct pollfd p[2] = { { .fd = fd_out, .events = POLLIN }, { .fd = fd_err, .events = POLLIN } };
	char *buf[2] = { out, err };
	size_t len[2] = { outlen, errlen }, used[2] = { 0, 0 };
	int open_fds = 2;
	char scratch[4096];

	while (open_fds > 0) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			ssize_t r;

			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(p[i].fd, scratch, sizeof(scratch));
			if (r <= 0) {
				p[i].fd = -1;
				open_fds--;
				continue;
			}
			if (buf[i] && used[i] + 1 < len[i]) {
				size_t n = (size_t)r < len[i] - 1 - used[i] ? (size_t)r : len[i] - 1 - used[i];
				memcpy(buf[i] + used[i], scratch, n);
				used[i] += n;
				buf[i][used[i]] = '\0';
			}
		}
	}
}

int tbrun_run(const struct tbcmd_argv *a, char *out, size_t outlen, char *err, size_t errlen)
{
	posix_spawn_file_actions_t fa;
	int po[2], pe[2], status, rc;
	pid_t pid;

	if (out && outlen)
		out[0] = '\0';
	if (err && errlen)
		err[0] = '\0';
	if (a->err || a->n == 0) {
		snprintf(err, errlen, "argument list too long or empty");
		return -EINVAL;
	}
	if (pipe2(po, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(pe, O_CLOEXEC) < 0) {
		rc = -errno;
		close(po[0]);
		close(po[1]);
		return rc;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, po[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, pe[1], STDERR_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	rc = posix_spawnp(&pid, a->v[0], &fa, NULL, a->v, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(po[1]);
	close(pe[1]);
	if (rc) {
		close(po[0]);
		close(pe[0]);
		snprintf(err, errlen, "cannot start %s: %s", a->v[0], strerror(rc));
		return -rc;
	}
	drain(po[0], pe[0], out, outlen, err, errlen);
	close(po[0]);
	close(pe[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

int tbrun_must(const char *what, const struct tbcmd_argv *a)
{
	char err[1024], line[512];
	int rc = tbrun_run(a, NULL, 0, err, sizeof(err));
	size_t n = strlen(err);

	if (rc == 0)
		return 0;
	while (n && (err[n - 1] == '\n' || err[n - 1] == ' '))
		err[--n] = '\0';
	for (char *p = err; *p; p++)
		if (*p == '\n')
			*p = ' ';
	if (rc < 0)
		log_err("%s: '%s' could not run: %s", what, tbcmd_join(a, line, sizeof(line)), err);
	else
		log_err("%s: '%s' failed (exit %d): %s", what, tbcmd_join(a, line, sizeof(line)), rc,
			err[0] ? err : "(no message)");
	return -1;
}

int tbrun_ns_exists(const char *ns)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	return stat(path, &st) == 0;
}

int tbrun_ns_pids(const char *ns, pid_t *pids, int max)
{
	struct tbcmd_argv a;
	char out[8192], err[512];
	int n = 0, rc;

	tbcmd_init(&a);
	tbcmd_add(&a, "ip");
	tbcmd_add(&a, "netns");
	tbcmd_add(&a, "pids");
	tbcmd_add(&a, "%s", ns);
	rc = tbrun_run(&a, out, sizeof(out), err, sizeof(err));
	if (rc != 0) {
		log_err("namespace %s: 'ip netns pids %s' failed: %s", ns, ns, err);
		return -1;
	}
	for (char *tok = strtok(out, " \n"); tok && n < max; tok = strtok(NULL, " \n")) {
		long v = strtol(tok, NULL, 10);
		if (v > 1 && v != getpid())
			pids[n++] = (pid_t)v;
	}
	return n;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* 1 while @pid exists and is not a zombie (an orphan's zombie may wait for a slow reaper). */
static int running(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

int tbrun_ns_kill(const char *ns, int grace_ms)
{
	pid_t pids[256];
	int n = tbrun_ns_pids(ns, pids, 256), alive;

	if (n <= 0)
		return n;
	for (int i = 0; i < n; i++) {
		log_info("namespace %s: stopping pid %d", ns, (int)pids[i]);
		kill(pids[i], SIGTERM);
	}
	for (int waited = 0; waited < grace_ms; waited += 20) {
		alive = 0;
		for (int i = 0; i < n; i++) {
			/* reap our own children (dataplanes we started in this process) */
			waitpid(pids[i], NULL, WNOHANG);
			alive += running(pids[i]);
		}
		if (!alive)
			return n;
		sleep_ms(20);
	}
	for (int i = 0; i < n; i++) {
		if (running(pids[i])) {
			log_warn("namespace %s: pid %d ignored SIGTERM for %d ms, killing it", ns, (int)pids[i], grace_ms);
			kill(pids[i], SIGKILL);
		}
	}
	return n;
}
