/* sched_esync.c - ESync's State Server (esync.txt §4, Alg. 2): READY / NOT-READY per local iteration. */
#include "sched_esync.h"

int esync_query(struct esync_rec *recs, int n, int r, int64_t round, int k, double c, double now,
		double eps)
{
	struct esync_rec *cur = &recs[r];
	int slow = -1;

	/* line 2: update the record of the querying device */
	if (!cur->known)
		cur->ready_round = -1;
	cur->known = 1;
	cur->round = round;
	cur->k = k;
	if (c > 0)
		cur->c = c;
	cur->t_e = now;
	/* line 4: the slowest device, by capability */
	for (int i = 0; i < n; i++)
		if (recs[i].known && recs[i].alive && (slow < 0 || recs[i].c > recs[slow].c))
			slow = i;
	/* lines 5-6: every device does one local iteration, and waits for the slowest's pull */
	if (k == 0 || slow < 0 || recs[slow].round < round)
		return 0;
	/* lines 7-11 */
	double rest = recs[slow].c - now + recs[slow].t_e;
	if (slow == r || recs[slow].ready_round == round || cur->c + eps > rest) {
		cur->ready_round = round;
		return 1;
	}
	return 0;
}
