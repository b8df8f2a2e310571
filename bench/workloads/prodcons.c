/*
 * prodcons.c - producer/consumer pairs (default 16): the producer mallocs
 * 4 * ((j % 64) + 1) bytes, 1024 blocks at a time, into a ring of 10240
 * slots guarded by two semaphores; the consumer frees them.  --iters
 * allocations per pair (default 8,000,000; quick 500,000), rounded up to
 * whole batches of 1024.  Every block is freed by a thread other than the
 * one that allocated it: the case a thread-local design must handle well.
 *
 * Checks: each block still holds the tag its producer wrote (sequence
 * number and pair) when the consumer frees it; every pair moved all its
 * blocks.  Metrics: seconds, ops_per_sec (allocations per second, all pairs),
 * live_max_kb and peak_over_live (pairs.h: the most the rings held, and
 * the peak RSS over it).
 * --threads N is the same as --pairs N/2.
 */
#include "pairs.h"

static size_t block_size(struct pair *pr, long round, long j)
{
	(void)pr;
	(void)round;
	return 4 * ((j % 64) + 1);
}

int main(int argc, char **argv)
{
	long npairs = BENCH_UNSET, threads = BENCH_UNSET, iters = BENCH_UNSET;
	const struct bench_opt opts[] = {
		{ "--pairs", "producer/consumer pairs (default 16)", &npairs,
		  NULL },
		{ "--threads", "threads, two per pair (default 32)", &threads,
		  NULL },
		{ "--iters", "allocations per pair (default 8e6, quick 5e5)",
		  &iters, NULL },
		{ NULL, NULL, NULL, NULL },
	};
	struct pair *pairs;
	double t0, secs;
	long rounds;

	bench_parse(argc, argv, "Producer/consumer pairs passing blocks "
		    "through a ring.", opts);
	if (npairs == BENCH_UNSET && threads != BENCH_UNSET)
		npairs = threads / 2;
	bench_pick(&npairs, 16, 16);
	bench_pick(&iters, 8000000, 500000);
	bench_require(npairs >= 1, argv[0], "need at least one pair");
	bench_require(threads == BENCH_UNSET || threads == 2 * npairs, argv[0],
		      "--threads must be even and twice --pairs");
	bench_require(iters >= 1, argv[0], "--iters must be >= 1");
	rounds = (iters + BATCH - 1) / BATCH;

	pairs = pairs_new(npairs, rounds, block_size);
	t0 = bench_now();
	pairs_run(pairs, npairs);
	secs = bench_now() - t0;
	pairs_check(pairs, npairs);
	bench_metric("seconds", secs, "s");
	bench_metric("ops_per_sec", npairs * rounds * BATCH / secs, "ops/s");
	pairs_report_live();
	free(pairs);
	return bench_check_ok();
}
