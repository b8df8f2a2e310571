/*
 * scaling.c - thread scaling: one fixed amount of work split over --threads
 * (the harness runs 1, 2, 4, 8).  The work is rounds of "allocate a set of
 * --set blocks of random sizes 16..1024, check them, free them": --iters
 * blocks in all (default 6e7, quick 6e6), so more threads means less work
 * each.  With a lock, time grows with every thread added; with thread-local
 * heaps it should not, while the memory held stays about the same.
 *
 * Built twice from this file:
 * - scaling: plain malloc/free; data_bytes is the process RSS at the end.
 * - scaling_ts (SCALING_TS defined, linked with tlmalloc): --api lock uses
 *   ts_malloc_lock/ts_free_lock, --api nolock ts_malloc_nolock/
 *   ts_free_nolock; data_bytes is get_data_segment_size().
 *
 * Checks: the blocks of a set never overlap (checked on each thread's first
 * and last round), each holds its tag until freed, every round ran.
 * Metrics: seconds, data_bytes (bytes held from the OS at the end).
 */
#include "common.h"

#ifdef SCALING_TS
#include "ts_malloc.h"
#endif

#define MIN_SIZE 16
#define MAX_SIZE 1024

static void *(*alloc_fn)(size_t) = malloc;
static void (*free_fn)(void *) = free;

struct block {
	char *p;
	size_t n;
	uint32_t tag;
};

struct worker {
	long rounds;
	long set;
	long done;		/* rounds completed */
	uint32_t id;
};

static int by_address(const void *a, const void *b)
{
	const struct block *x = (const struct block *)a;
	const struct block *y = (const struct block *)b;

	return (x->p > y->p) - (x->p < y->p);
}

/* Sort the set by address and fail if two blocks overlap. */
static void check_overlap(struct block *set, long n)
{
	qsort(set, (size_t)n, sizeof(*set), by_address);
	for (long i = 1; i < n; i++)
		if (set[i - 1].p + set[i - 1].n > set[i].p)
			bench_fail("blocks %p (%zu bytes) and %p overlap",
				   (void *)set[i - 1].p, set[i - 1].n,
				   (void *)set[i].p);
}

static void fill_set(struct block *set, long n, uint64_t *rng, uint32_t id)
{
	for (long i = 0; i < n; i++) {
		struct block *b = &set[i];

		b->n = bench_between(rng, MIN_SIZE, MAX_SIZE);
		b->p = (char *)alloc_fn(b->n);
		if (!b->p)
			bench_fail("allocation of %zu bytes returned NULL",
				   b->n);
		b->tag = (uint32_t)bench_rand(rng) ^ id;
		bench_fill(b->p, b->n, b->tag);
	}
}

/* Free the even slots, then the odd ones: holes first, then merges. */
static void free_set(struct block *set, long n)
{
	for (long start = 0; start < 2; start++)
		for (long i = start; i < n; i += 2) {
			if (!bench_intact(set[i].p, set[i].n, set[i].tag))
				bench_fail("block %p was overwritten",
					   (void *)set[i].p);
			free_fn(set[i].p);
		}
}

static void *run(void *arg)
{
	struct worker *w = (struct worker *)arg;
	struct block *set = (struct block *)calloc((size_t)w->set,
						    sizeof(*set));
	uint64_t rng = bench_seed(w->id);

	if (!set)
		bench_fail("calloc returned NULL");
	for (long r = 0; r < w->rounds; r++) {
		fill_set(set, w->set, &rng, w->id);
		if (r == 0 || r == w->rounds - 1)
			check_overlap(set, w->set);
		free_set(set, w->set);
		w->done++;
	}
	free(set);
	return NULL;
}

/* Choose the allocation API; scaling_ts needs --api. */
static void choose_api(const char *prog, const char *api)
{
#ifdef SCALING_TS
	bench_require(api != NULL, prog, "--api lock|nolock is required");
	if (!strcmp(api, "lock")) {
		alloc_fn = ts_malloc_lock;
		free_fn = ts_free_lock;
		return;
	}
	bench_require(!strcmp(api, "nolock"), prog, "--api: lock or nolock");
	alloc_fn = ts_malloc_nolock;
	free_fn = ts_free_nolock;
#else
	bench_require(api == NULL || !strcmp(api, "malloc"), prog,
		      "--api: only malloc here (lock/nolock: scaling_ts)");
#endif
}

static void report_memory(void)
{
#ifdef SCALING_TS
	bench_metric("data_bytes", (double)get_data_segment_size(), "B");
	bench_metric("data_free_bytes",
		     (double)get_data_segment_free_space_size(), "B");
#else
	bench_metric("data_bytes", bench_rss_kb() * 1024.0, "B");
#endif
}

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, iters = BENCH_UNSET, set = BENCH_UNSET;
	const char *api = NULL;
	const struct bench_opt opts[] = {
		{ "--threads", "threads sharing the work (default 8)", &threads,
		  NULL },
		{ "--iters", "blocks allocated in all (default 6e7, quick "
			     "6e6)", &iters, NULL },
		{ "--set", "blocks a thread holds at once (default 1000)", &set,
		  NULL },
		{ "--api", "lock or nolock (scaling_ts only)", NULL, &api },
		{ NULL, NULL, NULL, NULL },
	};
	struct worker *w;
	long rounds, done = 0;
	double t0, secs;

	bench_parse(argc, argv, "Fixed work split over N threads: hold a set "
		    "of random-size blocks, free it, repeat.", opts);
	bench_pick(&threads, 8, 8);
	bench_pick(&iters, 60000000, 6000000);
	bench_pick(&set, 1000, 1000);
	choose_api(argv[0], api);
	bench_require(threads >= 1 && set >= 1, argv[0],
		      "--threads and --set must be >= 1");
	rounds = iters / set;
	bench_require(rounds >= threads, argv[0],
		      "--iters must be at least --set times --threads");

	w = (struct worker *)calloc((size_t)threads, sizeof(*w));
	if (!w)
		bench_fail("calloc returned NULL");
	for (long t = 0; t < threads; t++) {
		w[t].rounds = rounds / threads + (t < rounds % threads);
		w[t].set = set;
		w[t].id = (uint32_t)t;
	}

	t0 = bench_now();
	bench_run_threads(threads, run, w, sizeof(*w));
	secs = bench_now() - t0;

	for (long t = 0; t < threads; t++)
		done += w[t].done;
	if (done != rounds)
		bench_fail("%ld of %ld rounds ran", done, rounds);
	free(w);
	bench_metric("seconds", secs, "s");
	report_memory();
	return bench_check_ok();
}
