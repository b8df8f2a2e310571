/*
 * mstress.c - mixed lifetimes with transfers, after mimalloc's stress test:
 * --rounds rounds (default 150, quick 15) of --threads threads (default 8),
 * each doing --iters operations (default 1e5) and exiting; the next round
 * starts new threads.  Each operation allocates one block and puts it where
 * it replaces, and frees, an older one:
 *   60%  a random slot of the thread's young array (64 slots: blocks live
 *        for tens of operations, freed by the thread that made them);
 *   30%  a random slot of the thread's old array (--keep slots, default
 *        1000: blocks live for thousands of operations; the array goes
 *        to another thread of the next round, so many are freed by a
 *        thread other than the one that made them, after it exited);
 *   10%  a random slot of a shared array of --shared slots (default 10000,
 *        swapped in with an atomic exchange): a transfer, the block that
 *        comes back was made by any thread, often one that has exited.
 * Sizes are mostly small: 85% 8..128 bytes, 14% up to 4 KiB, 1% 4 KiB to
 * 256 KiB.  A thread frees its young array when it exits; the main thread
 * frees the old and shared arrays at the end.
 *
 * Checks: every block carries its size and tags (common.h's stamp) and is
 * verified when it is freed; blocks allocated == blocks freed.
 * Metrics: seconds, ops_per_sec (operations: one malloc + at most one free).
 */
#include <stdatomic.h>

#include "common.h"

#define YOUNG 64

struct worker {
	char **old;		/* --keep slots, kept from round to round */
	long keep, iters;
	uint64_t seed;
	long allocated, freed;
};

static _Atomic(char *) *shared;
static long shared_slots;

static size_t pick_size(uint64_t *rng)
{
	unsigned r = (unsigned)(bench_rand(rng) % 100);

	if (r < 85)
		return bench_between(rng, 8, 128);
	if (r < 99)
		return bench_between(rng, 129, 4096);
	return bench_between(rng, 4097, 256 * 1024);
}

/* Check and free p (NULL: an empty slot); 1 when a block was freed. */
static long check_and_free(char *p)
{
	if (!p)
		return 0;
	bench_stamp_checked(p, 8, 256 * 1024);
	free(p);
	return 1;
}

static void *run(void *arg)
{
	struct worker *w = (struct worker *)arg;
	uint64_t rng = w->seed;
	char *young[YOUNG] = { 0 };

	for (long i = 0; i < w->iters; i++) {
		size_t n = pick_size(&rng);
		char *p = (char *)bench_malloc(n);
		unsigned r = (unsigned)(bench_rand(&rng) % 100);
		char *old;
		long s;

		bench_stamp(p, n);
		w->allocated++;
		if (r < 60) {
			s = (long)(bench_rand(&rng) % YOUNG);
			old = young[s];
			young[s] = p;
		} else if (r < 90) {
			s = (long)(bench_rand(&rng) % (uint64_t)w->keep);
			old = w->old[s];
			w->old[s] = p;
		} else {
			s = (long)(bench_rand(&rng) % (uint64_t)shared_slots);
			old = atomic_exchange(&shared[s], p);
		}
		w->freed += check_and_free(old);
	}
	for (long s = 0; s < YOUNG; s++)
		w->freed += check_and_free(young[s]);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, iters = BENCH_UNSET, rounds = BENCH_UNSET;
	long keep = BENCH_UNSET, allocated = 0, freed = 0;
	const struct bench_opt opts[] = {
		{ "--threads", "threads per round (default 8)", &threads,
		  NULL },
		{ "--iters", "operations per thread and round (default 1e5)",
		  &iters, NULL },
		{ "--rounds", "rounds of threads (default 150, quick 15)",
		  &rounds, NULL },
		{ "--keep", "old-array slots per thread (default 1000)", &keep,
		  NULL },
		{ "--shared", "shared slots (default 10000)", &shared_slots,
		  NULL },
		{ NULL, NULL, NULL, NULL },
	};
	struct worker *w;
	char **old;
	double t0, secs;

	shared_slots = BENCH_UNSET;
	bench_parse(argc, argv, "Threads restarted in rounds allocate blocks "
		    "of mixed sizes and lifetimes, some moved between threads "
		    "(mimalloc's stress test).", opts);
	bench_pick(&threads, 8, 8);
	bench_pick(&iters, 100000, 100000);
	bench_pick(&rounds, 150, 15);
	bench_pick(&keep, 1000, 1000);
	bench_pick(&shared_slots, 10000, 10000);
	bench_require(threads >= 1 && iters >= 1 && rounds >= 1 && keep >= 1 &&
		      shared_slots >= 1, argv[0], "every option must be >= 1");

	shared = (_Atomic(char *) *)calloc((size_t)shared_slots,
					   sizeof(*shared));
	old = (char **)calloc((size_t)(threads * keep), sizeof(*old));
	w = (struct worker *)calloc((size_t)threads, sizeof(*w));
	if (!shared || !old || !w)
		bench_fail("calloc returned NULL");
	for (long s = 0; s < shared_slots; s++)
		atomic_init(&shared[s], NULL);

	t0 = bench_now();
	for (long r = 0; r < rounds; r++) {
		for (long t = 0; t < threads; t++) {
			uint64_t seed = bench_seed((uint64_t)(r * threads + t));

			/* Thread t gets the old array of thread t+1 of r-1. */
			w[t] = (struct worker){ old + (t + r) % threads * keep,
						keep, iters, seed, 0, 0 };
		}
		bench_run_threads(threads, run, w, sizeof(*w));
		for (long t = 0; t < threads; t++) {
			allocated += w[t].allocated;
			freed += w[t].freed;
		}
	}
	for (long s = 0; s < threads * keep; s++)
		freed += check_and_free(old[s]);
	for (long s = 0; s < shared_slots; s++)
		freed += check_and_free(atomic_load(&shared[s]));
	secs = bench_now() - t0;

	if (allocated != rounds * threads * iters || freed != allocated)
		bench_fail("%ld blocks allocated and %ld freed, expected %ld",
			   allocated, freed, rounds * threads * iters);
	free(shared);
	free(old);
	free(w);
	bench_metric("seconds", secs, "s");
	bench_metric("ops_per_sec", allocated / secs, "ops/s");
	return bench_check_ok();
}
