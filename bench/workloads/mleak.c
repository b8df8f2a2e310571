/*
 * mleak.c - thread churn with transfers, after mimalloc's leak test:
 * --iters rounds (default 5000, quick 1000) of --threads threads (default
 * 10), created together and joined together.  Each thread allocates one
 * small block (16..256 bytes), swaps it into a random slot of a shared
 * table of --slots slots (default 100, filled by the main thread) with an
 * atomic exchange, and frees the block it got back, which a thread that
 * has exited allocated.  Each thread lives a few microseconds: what is
 * measured is what an allocator does when a thread starts and exits, and
 * whether the memory of the heaps of exited threads is found again.
 *
 * Checks: every block freed still holds its size and tags (common.h's
 * stamp); blocks allocated == blocks freed (the main thread frees the
 * table at the end).
 * Metrics: seconds, threads_per_sec, rss_end_kb (the resident set after
 * the last round, before the table is freed).
 */
#include <stdatomic.h>

#include "common.h"

#define MIN_SIZE 16
#define MAX_SIZE 256

static _Atomic(char *) *table;
static long slots;
static atomic_long freed;

struct worker {
	uint64_t seed;
};

static char *make_block(uint64_t *rng)
{
	return bench_stamped_block(rng, MIN_SIZE, MAX_SIZE);
}

static void check_and_free(char *p)
{
	if (!p)
		bench_fail("a slot of the table was empty");
	bench_stamp_checked(p, MIN_SIZE, MAX_SIZE);
	free(p);
	atomic_fetch_add_explicit(&freed, 1, memory_order_relaxed);
}

static void *run(void *arg)
{
	uint64_t rng = ((struct worker *)arg)->seed;
	char *p = make_block(&rng);
	long s = (long)(bench_rand(&rng) % (uint64_t)slots);

	check_and_free(atomic_exchange(&table[s], p));
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, rounds = BENCH_UNSET, rss;
	const struct bench_opt opts[] = {
		{ "--threads", "threads per round (default 10)", &threads,
		  NULL },
		{ "--iters", "rounds (default 5000, quick 1000)", &rounds,
		  NULL },
		{ "--slots", "slots of the shared table (default 100)", &slots,
		  NULL },
		{ NULL, NULL, NULL, NULL },
	};
	struct worker *w;
	uint64_t rng = bench_seed(~0u);
	double t0, secs;
	long made;

	slots = BENCH_UNSET;
	bench_parse(argc, argv, "Rounds of short-lived threads that each swap "
		    "one block into a shared table (mimalloc's leak test).",
		    opts);
	bench_pick(&threads, 10, 10);
	bench_pick(&rounds, 5000, 1000);
	bench_pick(&slots, 100, 100);
	bench_require(threads >= 1 && rounds >= 1 && slots >= 1, argv[0],
		      "--threads, --iters and --slots must be >= 1");
	table = (_Atomic(char *) *)calloc((size_t)slots, sizeof(*table));
	w = (struct worker *)calloc((size_t)threads, sizeof(*w));
	if (!table || !w)
		bench_fail("calloc returned NULL");
	for (long s = 0; s < slots; s++)
		atomic_init(&table[s], make_block(&rng));

	t0 = bench_now();
	for (long r = 0; r < rounds; r++) {
		for (long t = 0; t < threads; t++)
			w[t].seed = bench_seed((uint64_t)(r * threads + t));
		bench_run_threads(threads, run, w, sizeof(*w));
	}
	secs = bench_now() - t0;
	rss = bench_rss_kb();

	made = slots + rounds * threads;
	if (atomic_load(&freed) != rounds * threads)
		bench_fail("%ld blocks freed by the threads, expected %ld",
			   atomic_load(&freed), rounds * threads);
	for (long s = 0; s < slots; s++)
		check_and_free(atomic_load(&table[s]));
	if (atomic_load(&freed) != made)
		bench_fail("%ld blocks allocated and %ld freed", made,
			   atomic_load(&freed));
	free(table);
	free(w);
	bench_metric("seconds", secs, "s");
	bench_metric("threads_per_sec", rounds * threads / secs, "threads/s");
	bench_metric("rss_end_kb", (double)rss, "kB");
	return bench_check_ok();
}
