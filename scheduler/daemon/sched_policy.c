/* sched_policy.c - which synchronization policies run, and the calls from the core to their
 * hooks (docs/architecture.md "Scheduler policies"). */
#include "sched_policy.h"

#include <errno.h>
#include <string.h>

#include "log.h"
#include "sched_state.h"

/* Every policy the daemon knows: the owners of the policy message types. */
static const struct sched_policy_ops *const known[] = {
	&sched_policy_mlfabric_a, &sched_policy_mlfabric_s, &sched_policy_ssp,
	&sched_policy_esync, &sched_policy_adsp,
};
#define N_KNOWN (sizeof(known) / sizeof(known[0]))

void sched_policy_defaults(struct sched_config *cfg)
{
	cfg->ssp_s = -1;
	cfg->asp_w = 1;
	cfg->adsp.eval_s = 6;
	cfg->adsp.max_lag_r = 4;
}

/* The policies that should run now, in hook order, into @want; returns how many. */
static int wanted(const struct sched *s, const struct sched_policy_ops **want)
{
	int n = 0;

	want[n++] = s->server.sync ? &sched_policy_mlfabric_s : &sched_policy_mlfabric_a;
	if (s->cfg.ssp_s >= 0)
		want[n++] = &sched_policy_ssp;
	want[n++] = &sched_policy_esync;
	if (s->cfg.adsp.gamma_s > 0)
		want[n++] = &sched_policy_adsp;
	return n;
}

/* Index of @ops in @set, or -1. */
static int running(const struct sched_policy_set *set, const struct sched_policy_ops *ops)
{
	for (int i = 0; i < set->n; i++)
		if (set->ops[i] == ops)
			return i;
	return -1;
}

int sched_policy_choose(struct sched *s, char *err, size_t len)
{
	const struct sched_policy_ops *want[SCHED_POLICY_MAX];
	struct sched_policy_set next = { .n = wanted(s, want) };
	struct sched_policy_set *cur = &s->pol;

	for (int i = 0; i < next.n; i++) {
		int k = running(cur, want[i]);
		next.ops[i] = want[i];
		if (k >= 0) {
			next.data[i] = cur->data[k];
			continue;
		}
		int rc = want[i]->init ? want[i]->init(s, &next.data[i], err, len) : 0;
		if (rc) {
			for (int j = 0; j < i; j++)
				if (running(cur, next.ops[j]) < 0 && next.ops[j]->fini)
					next.ops[j]->fini(s, next.data[j]);
			return rc;
		}
	}
	for (int k = 0; k < cur->n; k++)
		if (running(&next, cur->ops[k]) < 0) {
			if (cur->ops[k]->fini)
				cur->ops[k]->fini(s, cur->data[k]);
			log_info("policy %s stops", cur->ops[k]->name);
		}
	for (int i = 0; i < next.n; i++)
		if (running(cur, next.ops[i]) < 0)
			log_info("policy %s runs", next.ops[i]->name);
	*cur = next;
	return 0;
}

void sched_policy_free(struct sched *s)
{
	for (int i = 0; i < s->pol.n; i++)
		if (s->pol.ops[i]->fini)
			s->pol.ops[i]->fini(s, s->pol.data[i]);
	s->pol.n = 0;
}

void sched_policy_on_register(struct sched *s, int h, unsigned role)
{
	for (int i = 0; i < s->pol.n; i++)
		if (s->pol.ops[i]->on_register)
			s->pol.ops[i]->on_register(s, s->pol.data[i], h, role);
}

void sched_policy_on_update(struct sched *s, int h, double now)
{
	sched_ssp_count(s, h, now);
}

void sched_policy_part_lost(struct sched *s, const struct sched_update *u, int k, int parts)
{
	for (int i = 0; i < s->pol.n; i++)
		if (s->pol.ops[i]->part_lost)
			s->pol.ops[i]->part_lost(s, s->pol.data[i], u, k, parts);
}

int sched_policy_pull_ready(const struct sched *s, int h)
{
	for (int i = 0; i < s->pol.n; i++)
		if (s->pol.ops[i]->pull_ready && !s->pol.ops[i]->pull_ready(s, s->pol.data[i], h))
			return 0;
	return 1;
}

void sched_policy_pull_planned(struct sched *s, int h, double now)
{
	s->hosts[h].t_pull_planned = now;
}

enum plan_mode sched_policy_plan_mode(const struct sched *s)
{
	for (int i = 0; i < s->pol.n; i++)
		if (s->pol.ops[i]->select_updates)
			return s->pol.ops[i]->plan_mode;
	return PLAN_MLFABRIC_A;
}

int sched_policy_select_updates(struct sched *s, double now, int *sel, int max)
{
	for (int i = 0; i < s->pol.n; i++)
		if (s->pol.ops[i]->select_updates)
			return s->pol.ops[i]->select_updates(s, s->pol.data[i], now, sel, max);
	return 0;
}

void sched_policy_planned(struct sched *s, double now, const int *sel, int n)
{
	for (int i = 0; i < s->pol.n; i++)
		if (s->pol.ops[i]->planned)
			s->pol.ops[i]->planned(s, s->pol.data[i], now, sel, n);
}

/* The known policy that owns message type @type, or NULL. */
static const struct sched_policy_ops *owner(const char *type)
{
	for (size_t i = 0; i < N_KNOWN; i++)
		for (const char *const *t = known[i]->msg_types; t && *t; t++)
			if (!strcmp(*t, type))
				return known[i];
	return NULL;
}

int sched_policy_owns_msg(const char *type)
{
	return owner(type) != NULL;
}

int sched_policy_on_msg(struct sched *s, int h, const char *app, const char *type, json_t *m,
			double now, char *err, size_t len)
{
	const struct sched_policy_ops *ops = owner(type);
	int k = ops ? running(&s->pol, ops) : -1;

	if (!ops || !ops->on_msg) {
		snprintf(err, len, "%s: no policy answers this message", type);
		return -EINVAL;
	}
	return ops->on_msg(s, k >= 0 ? s->pol.data[k] : NULL, h, app, type, m, now, err, len);
}

json_t *sched_policy_status(const struct sched *s, double now)
{
	json_t *all = json_object();

	for (int i = 0; all && i < s->pol.n; i++) {
		json_t *o = json_object();
		if (o && s->pol.ops[i]->status)
			s->pol.ops[i]->status(s, s->pol.data[i], o, now);
		json_object_set_new(all, s->pol.ops[i]->name, o);
	}
	return all;
}

void sched_policy_tick(struct sched *s, double now)
{
	for (int i = 0; i < s->pol.n; i++)
		if (s->pol.ops[i]->on_tick && s->pol.ops[i]->next_deadline &&
		    now >= s->pol.ops[i]->next_deadline(s, s->pol.data[i]))
			s->pol.ops[i]->on_tick(s, s->pol.data[i], now);
}
