/* fault.c - parse fault-injection specs and draw per-frame decisions (no I/O here). */
#include "fault.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double fault_rand(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) * (1.0 / 9007199254740992.0);
}

int fault_active(const struct fault_dir *d)
{
	return d->drop > 0 || d->dup > 0 || d->reorder > 0 || d->delay_us > 0;
}

enum fault_action fault_decide(const struct fault_dir *d, uint64_t *rng)
{
	if (d->drop > 0 && fault_rand(rng) < d->drop)
		return FAULT_DROP;
	if (d->dup > 0 && fault_rand(rng) < d->dup)
		return FAULT_DUP;
	if (d->reorder > 0 && fault_rand(rng) < d->reorder)
		return FAULT_REORDER;
	return FAULT_PASS;
}

/* Parses a probability; 0 or -EINVAL. */
static int parse_prob(const char *v, double *out)
{
	char *end;
	double p = strtod(v, &end);

	if (end == v || *end || !(p >= 0 && p <= 1))
		return -EINVAL;
	*out = p;
	return 0;
}

static int parse_delay(const char *v, uint32_t *out)
{
	char *end;
	long d = strtol(v, &end, 10);

	if (end == v || *end || d < 0 || d > 1000000)
		return -EINVAL;
	*out = (uint32_t)d;
	return 0;
}

int fault_parse(const char *spec, struct fault_spec *out, char *err, size_t errlen)
{
	char buf[512], *save = NULL, *tok;

	memset(out, 0, sizeof(*out));
	if (strlen(spec) >= sizeof(buf)) {
		snprintf(err, errlen, "fault spec too long (max %zu characters)", sizeof(buf) - 1);
		return -EINVAL;
	}
	strcpy(buf, spec);
	if (strcmp(buf, "none") == 0)
		return 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *v = strchr(tok, '=');
		int rc = 0;
		double p = 0;
		uint32_t d = 0;

		if (!v) {
			snprintf(err, errlen, "fault spec: '%s' is not key=value", tok);
			return -EINVAL;
		}
		*v++ = '\0';
		if (!strcmp(tok, "rx_drop")) rc = parse_prob(v, &out->rx.drop);
		else if (!strcmp(tok, "tx_drop")) rc = parse_prob(v, &out->tx.drop);
		else if (!strcmp(tok, "rx_dup")) rc = parse_prob(v, &out->rx.dup);
		else if (!strcmp(tok, "tx_dup")) rc = parse_prob(v, &out->tx.dup);
		else if (!strcmp(tok, "rx_reorder")) rc = parse_prob(v, &out->rx.reorder);
		else if (!strcmp(tok, "tx_reorder")) rc = parse_prob(v, &out->tx.reorder);
		else if (!strcmp(tok, "rx_delay_us")) rc = parse_delay(v, &out->rx.delay_us);
		else if (!strcmp(tok, "tx_delay_us")) rc = parse_delay(v, &out->tx.delay_us);
		else if (!strcmp(tok, "drop")) { rc = parse_prob(v, &p); out->rx.drop = out->tx.drop = p; }
		else if (!strcmp(tok, "dup")) { rc = parse_prob(v, &p); out->rx.dup = out->tx.dup = p; }
		else if (!strcmp(tok, "reorder")) { rc = parse_prob(v, &p); out->rx.reorder = out->tx.reorder = p; }
		else if (!strcmp(tok, "delay_us")) { rc = parse_delay(v, &d); out->rx.delay_us = out->tx.delay_us = d; }
		else if (!strcmp(tok, "cut")) {
			if (strlen(v) >= sizeof(out->cut)) {
				snprintf(err, errlen, "fault spec: cut: host name '%s' too long", v);
				return -EINVAL;
			}
			strcpy(out->cut, v);
		} else {
			snprintf(err, errlen, "fault spec: unknown key '%s' (keys: [rx_|tx_]drop, dup, "
				 "reorder, delay_us; cut)", tok);
			return -EINVAL;
		}
		if (rc) {
			snprintf(err, errlen, "fault spec: %s: bad value '%s' (%s)", tok, v,
				 strstr(tok, "delay") ? "integer microseconds 0..1000000" : "probability in [0,1]");
			return -EINVAL;
		}
	}
	return 0;
}

void fault_format(const struct fault_spec *f, char *buf, size_t len)
{
	static const char *const dir_name[2] = { "rx", "tx" };
	const struct fault_dir *dirs[2] = { &f->rx, &f->tx };
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < 2 && n < len; i++) {
		const struct fault_dir *d = dirs[i];
		if (d->drop > 0) n += (size_t)snprintf(buf + n, len - n, "%s_drop=%g,", dir_name[i], d->drop);
		if (n < len && d->dup > 0) n += (size_t)snprintf(buf + n, len - n, "%s_dup=%g,", dir_name[i], d->dup);
		if (n < len && d->reorder > 0) n += (size_t)snprintf(buf + n, len - n, "%s_reorder=%g,", dir_name[i], d->reorder);
		if (n < len && d->delay_us > 0) n += (size_t)snprintf(buf + n, len - n, "%s_delay_us=%u,", dir_name[i], d->delay_us);
	}
	if (n < len && f->cut[0])
		n += (size_t)snprintf(buf + n, len - n, "cut=%s,", f->cut);
	if (n == 0)
		snprintf(buf, len, "none");
	else if (n <= len)
		buf[n - 1] = '\0';
}
