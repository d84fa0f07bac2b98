/* bench_aggregator.c - `make bench-aggregator`: the aggregator's sum of k 3.26 MB updates
 * (fabric_agg_sum, plain and weighted) against memcpy of the same input bytes, in the same run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

#include "fabric_agg.h"

#define N_FLOATS 814090 /* the 784-1024-10 MLP: one update is 3.26 MB */

int main(int argc, char **argv)
{
	int ks[] = { 2, 4, 8 }, reps = argc > 1 ? atoi(argv[1]) : 20;
	float *in[8], *out = malloc(N_FLOATS * sizeof(float));
	double w[8];
	volatile float sink = 0;

	if (argc > 1 && (!strcmp(argv[1], "--help") || reps <= 0)) {
		printf("usage: bench-aggregator [REPS]   (default 20 repetitions per figure)\n"
		       "GB/s of input bytes summed by the aggregator vs memcpy of the same bytes.\n");
		return 0;
	}
	for (int j = 0; j < 8; j++) {
		in[j] = malloc(N_FLOATS * sizeof(float));
		for (int i = 0; i < N_FLOATS; i++)
			in[j][i] = (float)((i + j) % 97) * 0.01f;
		w[j] = 1.0 / (j + 1);
	}
	printf("bench-aggregator: updates of %d float32 (%.2f MB), %d repetitions\n", N_FLOATS,
	       N_FLOATS * 4 / 1e6, reps);
	printf("%3s %12s %12s %12s %10s %10s\n", "k", "sum GB/s", "wsum GB/s", "memcpy GB/s", "sum/memcpy", "wsum/memcpy");
	for (unsigned t = 0; t < sizeof(ks) / sizeof(ks[0]); t++) {
		int k = ks[t];
		double bytes = (double)k * N_FLOATS * 4 * reps, t0, ts, tw, tm;
		fabric_agg_sum(out, (const float *const *)in, NULL, k, N_FLOATS); /* warm-up */
		t0 = clock_mono_s();
		for (int r = 0; r < reps; r++)
			fabric_agg_sum(out, (const float *const *)in, NULL, k, N_FLOATS);
		ts = clock_mono_s() - t0;
		sink += out[N_FLOATS / 2];
		t0 = clock_mono_s();
		for (int r = 0; r < reps; r++)
			fabric_agg_sum(out, (const float *const *)in, w, k, N_FLOATS);
		tw = clock_mono_s() - t0;
		sink += out[N_FLOATS / 3];
		t0 = clock_mono_s();
		for (int r = 0; r < reps; r++)
			for (int j = 0; j < k; j++)
				memcpy(out, in[j], N_FLOATS * sizeof(float));
		tm = clock_mono_s() - t0;
		sink += out[7];
		printf("%3d %12.2f %12.2f %12.2f %10.2f %10.2f\n", k, bytes / ts / 1e9, bytes / tw / 1e9,
		       bytes / tm / 1e9, tm / ts, tm / tw);
	}
	for (int j = 0; j < 8; j++)
		free(in[j]);
	free(out);
	return sink == -1.0f;
}
