/* netstate.h - residual bandwidth of every access link as a step function of time (paper fig. 4). */
#ifndef MLF_NETSTATE_H
#define MLF_NETSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/*
 * The network of a batch: each host has an uplink (host -> switch) and a downlink
 * (switch -> host); the core is non-blocking (docs/planner.md "Pipeline"). A transfer from A
 * to B uses A.up and B.down; a transfer within one host uses no link at all.
 *
 * Each link's residual bandwidth (capacity minus reservations, Gbit/s) is a step function of
 * time: step i holds from steps[i].from_s until steps[i+1].from_s, the last one forever. The
 * first step starts at the batch's now_s. Adjacent steps never carry equal rates (coalesced).
 *
 * Reservations are logged so that they can be undone in LIFO order (netstate_mark() /
 * netstate_undo()): the fast planner explores the |U|+1 cases of Alg. 3 on one network instead
 * of copying it per case.
 */

/** Rates below this (Gbit/s, i.e. 1 bit/s) count as zero: guards against rounding slivers. */
#define NETSTATE_RATE_EPS 1e-9

/** One residual link: @n steps in @s (capacity @cap). */
struct netstate_link {
	int n, cap;
	struct plan_rate_step *s;
};

/** One undo record: steps [pos, pos+n_new) replaced the n_old steps saved at old_off. */
struct netstate_undo {
	int link;
	int pos;
	int n_old;
	int n_new;
	size_t old_off;
	uint64_t version; /* network version before the change */
};

/** The residual network of a batch. */
struct netstate {
	double now_s;
	int n_links;               /* 2 per host: link 2*h is h.up, 2*h+1 is h.down */
	struct netstate_link *links;
	uint64_t version;          /* identifies the current state; changes on every reservation */
	uint64_t counter;          /* source of fresh versions */
	int n_undo, cap_undo;
	struct netstate_undo *undo;
	size_t n_saved, cap_saved;
	struct plan_rate_step *saved; /* old steps referenced by undo records */
};

/** A saved position of the undo log (and the state's version at that point). */
struct netstate_mark {
	int n_undo;
	size_t n_saved;
	uint64_t version;
};

/**
 * A transfer's rate profile: n steps (from_s, Gbit/s) from start_s; the last step lasts until
 * end_s. Its integral over [start_s, end_s] equals the transfer's bytes.
 */
struct netstate_profile {
	int n, cap;
	struct plan_rate_step *steps;
	double start_s, end_s;
};

/**
 * netstate_init - build the residual network of @batch at now_s: every link at its capacity
 * (plan_host values, then the batch's capacity_changes; a change before now_s sets the value
 * at now_s). Returns 0, -EINVAL for a change naming an unknown host, or -ENOMEM.
 */
int netstate_init(struct netstate *ns, const struct plan_batch *batch);

/** netstate_free - release @ns (safe on a zeroed struct). */
void netstate_free(struct netstate *ns);

/**
 * netstate_copy - make @dst an independent copy of @src's residual links (the undo log is
 * not copied). Returns 0 or -ENOMEM. @dst must be zeroed or freed.
 */
int netstate_copy(struct netstate *dst, const struct netstate *src);

/** netstate_mark - the current undo position, to pass to netstate_undo() later. */
struct netstate_mark netstate_mark(const struct netstate *ns);

/** netstate_undo - roll every reservation made since @m back (restores the exact steps). */
void netstate_undo(struct netstate *ns, struct netstate_mark m);

/** netstate_up / netstate_down - link index of host @h's uplink / downlink. */
static inline int netstate_up(int h) { return 2 * h; }
static inline int netstate_down(int h) { return 2 * h + 1; }

/**
 * netstate_tend - t_en of paper fig. 4: when a transfer of @bytes from host @src to host @dst
 * that starts at @t0_s (seconds; clamped to now_s) ends, if at each instant it uses the minimum
 * residual bandwidth over its path links. Returns the end time in seconds, @t0_s itself for
 * src == dst or 0 bytes, or INFINITY when the residual bandwidth never suffices. When @prof is
 * not NULL it receives the rate profile (unused when the result is INFINITY).
 * Returns -1.0 only on -ENOMEM while filling @prof.
 */
double netstate_tend(const struct netstate *ns, int src, int dst, double t0_s, uint64_t bytes,
		     struct netstate_profile *prof);

/**
 * netstate_reserve - NetUp of paper fig. 4: subtract the rate profile @prof from the links of
 * the path src -> dst (nothing for src == dst). Residuals that would fall below
 * NETSTATE_RATE_EPS become 0. Returns 0 or -ENOMEM (then the network is unchanged).
 */
int netstate_reserve(struct netstate *ns, int src, int dst, const struct netstate_profile *prof);

/** netstate_profile_free - release a profile's steps. */
void netstate_profile_free(struct netstate_profile *prof);

/** netstate_gbps_at - the residual (Gbit/s) of link @link at time @t_s (tests, diagnostics). */
double netstate_gbps_at(const struct netstate *ns, int link, double t_s);

#endif
