/*
 * loop.c - the malloc/free loop: N threads (default 32) each run
 *
 *	p = malloc(8 * ((i % 64) + 1)); write a byte; free(p);
 *
 * --iters times (default 10,000,000; quick 1,000,000).  Every call hits the
 * allocator's fast path from many threads at once: one shared lock makes
 * them queue, per-thread caches let them run side by side.
 *
 * Checks: no block is NULL or less than 8-byte aligned, each keeps the byte
 * written into its last position, every thread did all its iterations.
 * Metrics: seconds (create to join), ops_per_sec (malloc/free pairs).
 */
#include "common.h"

struct worker {
	long iters;
	long done;
};

static void *run(void *arg)
{
	struct worker *w = (struct worker *)arg;
	long done = 0;

	for (long i = 0; i < w->iters; i++) {
		size_t n = 8 * ((i % 64) + 1);
		char *p = (char *)malloc(n);

		if (!p || ((uintptr_t)p & 7))
			bench_fail("malloc(%zu) returned %p", n, (void *)p);
		p[n - 1] = (char)i;
		bench_escape(p);
		if (p[n - 1] != (char)i)
			bench_fail("block %p lost the byte written into it",
				   (void *)p);
		free(p);
		done++;
	}
	w->done = done;	/* once: the workers' records share cache lines */
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, iters = BENCH_UNSET;
	const struct bench_opt opts[] = {
		{ "--threads", "threads (default 32)", &threads, NULL },
		{ "--iters", "malloc/free pairs per thread (default 1e7, "
			     "quick 1e6)", &iters, NULL },
		{ NULL, NULL, NULL, NULL },
	};
	struct worker *w;
	double t0, secs;

	bench_parse(argc, argv, "The malloc/free loop on N threads.", opts);
	bench_pick(&threads, 32, 32);
	bench_pick(&iters, 10000000, 1000000);
	bench_require(threads >= 1 && iters >= 1, argv[0],
		      "--threads and --iters must be >= 1");

	w = (struct worker *)calloc((size_t)threads, sizeof(*w));
	if (!w)
		bench_fail("calloc returned NULL");
	for (long t = 0; t < threads; t++)
		w[t].iters = iters;

	t0 = bench_now();
	bench_run_threads(threads, run, w, sizeof(*w));
	secs = bench_now() - t0;

	for (long t = 0; t < threads; t++)
		if (w[t].done != iters)
			bench_fail("thread %ld did %ld of %ld iterations", t,
				   w[t].done, iters);
	bench_metric("seconds", secs, "s");
	bench_metric("ops_per_sec", threads * (double)iters / secs, "ops/s");
	free(w);
	return bench_check_ok();
}
