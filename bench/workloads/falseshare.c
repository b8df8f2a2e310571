/*
 * falseshare.c - false sharing, after Hoard's cache-thrash and
 * cache-scratch; built twice:
 *
 * falseshare_active (cache-thrash): --threads threads (default: one per
 * online CPU) each --iters times (default 2e4, quick 2e3) allocate an
 * object of --size bytes (default 8), store into and load from each of its
 * bytes --reps times (default 1e4) and free it.  The threads share nothing;
 * but an allocator that carves the objects of different threads from one
 * cache line makes every store invalidate the other cores' copies, and the
 * run slows down many times.
 *
 * falseshare_passive (cache-scratch, FALSESHARE_PASSIVE): first the main
 * thread allocates one object per thread, one after the other, so they
 * likely share a cache line, and hands object t to thread t, which frees it
 * before its loop.  An allocator that gives a freed block back to the
 * freeing thread hands every thread a slot of that one shared cache line
 * again, and the writes fight over it.
 *
 * Checks: after its writes each object holds the bytes last written (no
 * other thread's object overlaps it); every thread did all its objects
 * (and freed the one it was given).  Metric: seconds.
 */
#include "common.h"

struct worker {
	char *given;	/* passive: the object handed over, NULL once freed */
	long iters;
	long reps;
	long size;
	long done;
};

/* Store and reload every byte reps times; check the last values stayed. */
static void write_hard(volatile char *obj, long size, long reps)
{
	for (long r = 0; r < reps; r++)
		for (long k = 0; k < size; k++) {
			obj[k] = (char)(k + r);
			(void)obj[k];
		}
	for (long k = 0; k < size; k++)
		if (obj[k] != (char)(k + reps - 1))
			bench_fail("object %p: byte %ld was overwritten",
				   (void *)obj, k);
}

static void *run(void *arg)
{
	struct worker *w = (struct worker *)arg;
	long done = 0;

	if (w->given) {
		for (long k = 0; k < w->size; k++)
			if (w->given[k] != (char)k)
				bench_fail("given object %p was overwritten",
					   (void *)w->given);
		free(w->given);
		w->given = NULL;
	}
	for (long i = 0; i < w->iters; i++) {
		char *obj = (char *)bench_malloc((size_t)w->size);

		write_hard(obj, w->size, w->reps);
		free(obj);
		done++;
	}
	/* once: the workers' records share cache lines, and the objects'
	 * false sharing is what is measured */
	w->done = done;
	return NULL;
}

#ifdef FALSESHARE_PASSIVE
#define DESCRIPTION "Passive false sharing (cache-scratch): objects handed " \
		    "out by one thread, freed and reallocated by the others."
#define PASSIVE 1
#else
#define DESCRIPTION "Active false sharing (cache-thrash): threads write " \
		    "their own small objects hard."
#define PASSIVE 0
#endif

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, iters = BENCH_UNSET, reps = BENCH_UNSET;
	long size = BENCH_UNSET;
	const struct bench_opt opts[] = {
		{ "--threads", "threads (default: online CPUs)", &threads,
		  NULL },
		{ "--iters", "objects per thread (default 2e4, quick 2e3)",
		  &iters, NULL },
		{ "--reps", "writes of each byte of an object (default 1e4)",
		  &reps, NULL },
		{ "--size", "object size in bytes (default 8)", &size, NULL },
		{ NULL, NULL, NULL, NULL },
	};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct worker *w;
	double t0, secs;

	bench_parse(argc, argv, DESCRIPTION, opts);
	bench_pick(&threads, cpus, cpus);
	bench_pick(&iters, 20000, 2000);
	bench_pick(&reps, 10000, 10000);
	bench_pick(&size, 8, 8);
	bench_require(threads >= 1 && iters >= 1 && reps >= 1 && size >= 1,
		      argv[0], "--threads, --iters, --reps and --size must "
		      "be >= 1");

	w = (struct worker *)calloc((size_t)threads, sizeof(*w));
	if (!w)
		bench_fail("calloc returned NULL");
	for (long t = 0; t < threads; t++) {
		char *given = NULL;

		if (PASSIVE) {
			given = (char *)bench_malloc((size_t)size);
			for (long k = 0; k < size; k++)
				given[k] = (char)k;
		}
		w[t] = (struct worker){ given, iters, reps, size, 0 };
	}

	t0 = bench_now();
	bench_run_threads(threads, run, w, sizeof(*w));
	secs = bench_now() - t0;

	for (long t = 0; t < threads; t++)
		if (w[t].given || w[t].done != iters)
			bench_fail("thread %ld did %ld of %ld objects", t,
				   w[t].done, iters);
	free(w);
	bench_metric("seconds", secs, "s");
	return bench_check_ok();
}
