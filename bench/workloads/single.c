/*
 * single.c - what thread safety costs one thread.  Measures ns per
 * malloc/free pair (sizes 8 * ((i % 64) + 1)) while the process has only one
 * thread, then creates and joins --threads other threads (default 1, each
 * doing a few mallocs of its own) and measures again.  An allocator that
 * switches to locked or atomic paths once a second thread has existed
 * shows it here, as stdio's putc does against putc_unlocked.
 *
 * Each measurement runs --iters pairs (default 5e7, quick 5e6) in 5 chunks
 * after a warm-up chunk and keeps the fastest chunk, to shed the noise of
 * a shared machine.
 *
 * Checks: each block keeps the byte written into its last position; every
 * pair ran; the helper threads did their allocations.
 * Metrics: ns_per_pair_single, ns_per_pair_after_thread.
 */
#include "common.h"

#define CHUNKS 5
#define HELPER_PAIRS 1000

static long pairs_done;

static void pairs(long n)
{
	for (long i = 0; i < n; i++) {
		size_t size = 8 * ((i % 64) + 1);
		char *p = (char *)bench_malloc(size);

		p[size - 1] = (char)i;
		bench_escape(p);
		if (p[size - 1] != (char)i)
			bench_fail("block %p lost the byte written into it",
				   (void *)p);
		free(p);
	}
	pairs_done += n;
}

/* Fastest of CHUNKS chunks of iters / CHUNKS pairs, in ns per pair. */
static double measure(long iters)
{
	long chunk = iters / CHUNKS;
	double best = 1e30;

	pairs(chunk);		/* warm-up */
	for (int c = 0; c < CHUNKS; c++) {
		double t0 = bench_now();
		double ns;

		pairs(chunk);
		ns = (bench_now() - t0) * 1e9 / chunk;
		best = ns < best ? ns : best;
	}
	return best;
}

static void *helper(void *arg)
{
	long *done = (long *)arg;

	for (long i = 0; i < HELPER_PAIRS; i++) {
		char *p = (char *)bench_malloc(8 * ((i % 64) + 1));

		p[0] = 1;
		bench_escape(p);
		free(p);
		(*done)++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, iters = BENCH_UNSET;
	const struct bench_opt opts[] = {
		{ "--threads", "threads created and joined between the two "
			       "measurements (default 1)", &threads, NULL },
		{ "--iters", "malloc/free pairs per measurement (default 5e7, "
			     "quick 5e6)", &iters, NULL },
		{ NULL, NULL, NULL, NULL },
	};
	long *done;
	double single, after;

	bench_parse(argc, argv, "ns per malloc/free pair on one thread, "
		    "before and after another thread has existed.", opts);
	bench_pick(&threads, 1, 1);
	bench_pick(&iters, 50000000, 5000000);
	bench_require(threads >= 1, argv[0], "--threads must be >= 1");
	bench_require(iters >= CHUNKS, argv[0], "--iters must be >= 5");

	single = measure(iters);
	done = (long *)calloc((size_t)threads, sizeof(*done));
	if (!done)
		bench_fail("calloc returned NULL");
	bench_run_threads(threads, helper, done, sizeof(*done));
	after = measure(iters);

	for (long t = 0; t < threads; t++)
		if (done[t] != HELPER_PAIRS)
			bench_fail("helper %ld did %ld of %d pairs", t, done[t],
				   HELPER_PAIRS);
	if (pairs_done != 2 * (CHUNKS + 1) * (iters / CHUNKS))
		bench_fail("%ld pairs ran, expected %ld", pairs_done,
			   2 * (CHUNKS + 1) * (iters / CHUNKS));
	free(done);
	bench_metric("ns_per_pair_single", single, "ns");
	bench_metric("ns_per_pair_after_thread", after, "ns");
	return bench_check_ok();
}
