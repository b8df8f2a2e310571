/*
 * larson.c - a server with thread churn, after Larson and Krishnan's server
 * benchmark: a table of --slots blocks per thread (default 1000, sizes
 * 8..1000 bytes, random), filled by the main thread, and --threads columns
 * (default 4).  The thread of a column replaces random blocks of its own
 * slots --iters times (default: as many as it has slots), then starts its
 * successor and exits; the successor takes over the same slots.  This goes
 * on for --rounds generations (default 10000, quick 2000).  A thread lives
 * for about as many replacements as it has slots, so most of its frees (about
 * 63%) hit blocks allocated by a thread that has already exited; the
 * foreign_free_pct metric counts them.  Columns run out of step, as in the
 * original: no barrier between generations.
 *
 * --free sized frees with free_sized(p, size) (C23) instead of free(p),
 * when the allocator has it: it is looked up with dlsym(RTLD_DEFAULT) at
 * start.  When it is absent (glibc 2.36, musl, a static program) the run
 * uses plain free and says so: the metric sized_free is 1 when free_sized
 * was called, 0 when it was not.
 *
 * Checks: every block replaced, and every block left in the table at the
 * end, still holds its size and tags; every generation of every column ran
 * its replacements.
 * Metrics: seconds, ops_per_sec (replacements: one malloc + one free each),
 * threads_per_sec, foreign_free_pct, sized_free.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>

#include "common.h"

#define MIN_SIZE 8
#define MAX_SIZE 1000

struct column {
	char **slots;		/* this column's part of the table */
	uint32_t *gen;		/* the generation that allocated each block */
	long count, iters;
	long rounds, round;	/* generations in all, this one */
	long done, foreign;	/* replacements, frees of an older thread's */
	uint32_t id;
};

static void (*sized_free)(void *, size_t);
static atomic_long columns_left;
static pthread_mutex_t finish_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t finished = PTHREAD_COND_INITIALIZER;

static char *make_block(uint64_t *rng)
{
	return bench_stamped_block(rng, MIN_SIZE, MAX_SIZE);
}

static void check_and_free(char *p)
{
	size_t n;

	if (!p)
		bench_fail("a slot of the table was empty");
	n = bench_stamp_checked(p, MIN_SIZE, MAX_SIZE);
	if (sized_free)
		sized_free(p, n);
	else
		free(p);
}

static void *run(void *arg)
{
	struct column *c = (struct column *)arg;
	uint64_t rng = bench_seed((uint64_t)c->id << 20 | (uint64_t)c->round);
	uint32_t me = (uint32_t)c->round + 1;
	pthread_attr_t attr;
	pthread_t next;
	long done = 0, foreign = 0;

	for (long i = 0; i < c->iters; i++) {
		long s = (long)(bench_rand(&rng) % (uint64_t)c->count);

		if (c->gen[s] != me)
			foreign++;
		check_and_free(c->slots[s]);
		c->slots[s] = make_block(&rng);
		c->gen[s] = me;
		done++;
	}
	/* once: the columns' records share cache lines */
	c->done += done;
	c->foreign += foreign;
	if (++c->round < c->rounds) {
		/* The successor takes over the slots; this thread is gone. */
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&next, &attr, run, c))
			bench_fail("pthread_create failed in column %u", c->id);
		pthread_attr_destroy(&attr);
		return NULL;
	}
	pthread_mutex_lock(&finish_lock);
	if (atomic_fetch_sub(&columns_left, 1) == 1)
		pthread_cond_signal(&finished);
	pthread_mutex_unlock(&finish_lock);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, iters = BENCH_UNSET, per = BENCH_UNSET;
	long rounds = BENCH_UNSET, done = 0, foreign = 0;
	const char *how = "plain";
	const struct bench_opt opts[] = {
		{ "--threads", "threads alive at a time (default 4)", &threads,
		  NULL },
		{ "--slots", "table slots per thread (default 1000)", &per,
		  NULL },
		{ "--iters", "replacements in a thread's life (default: "
			     "--slots)", &iters, NULL },
		{ "--rounds", "generations of threads (default 10000, quick "
			      "2000)", &rounds, NULL },
		{ "--free", "plain or sized: free_sized where there is one "
			    "(default plain)", NULL, &how },
		{ NULL, NULL, NULL, NULL },
	};
	struct column *cols;
	char **table;
	uint32_t *gen;
	pthread_attr_t attr;
	pthread_t tid;
	double t0, secs;
	uint64_t rng = bench_seed(~0u);

	bench_parse(argc, argv, "Threads replace blocks of 8..1000 bytes in a "
		    "table and hand their slots to a successor (larson).",
		    opts);
	bench_pick(&threads, 4, 4);
	bench_pick(&per, 1000, 1000);
	bench_pick(&iters, per, per);
	bench_pick(&rounds, 10000, 2000);
	bench_require(threads >= 1 && per >= 1 && iters >= 1 && rounds >= 1,
		      argv[0], "--threads, --slots, --iters and --rounds must "
		      "be >= 1");
	bench_require(!strcmp(how, "plain") || !strcmp(how, "sized"),
		      argv[0], "--free is plain or sized");
	if (!strcmp(how, "sized"))
		*(void **)&sized_free = dlsym(RTLD_DEFAULT, "free_sized");

	table = (char **)calloc((size_t)(threads * per), sizeof(*table));
	gen = (uint32_t *)calloc((size_t)(threads * per), sizeof(*gen));
	cols = (struct column *)calloc((size_t)threads, sizeof(*cols));
	if (!table || !gen || !cols)
		bench_fail("calloc returned NULL");
	for (long s = 0; s < threads * per; s++)
		table[s] = make_block(&rng);
	for (long t = 0; t < threads; t++)
		cols[t] = (struct column){ table + t * per, gen + t * per, per,
					   iters, rounds, 0, 0, 0,
					   (uint32_t)t };
	atomic_store(&columns_left, threads);

	t0 = bench_now();
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (long t = 0; t < threads; t++)
		if (pthread_create(&tid, &attr, run, &cols[t]))
			bench_fail("pthread_create failed for column %ld", t);
	pthread_attr_destroy(&attr);
	pthread_mutex_lock(&finish_lock);
	while (atomic_load(&columns_left) > 0)
		pthread_cond_wait(&finished, &finish_lock);
	pthread_mutex_unlock(&finish_lock);
	secs = bench_now() - t0;

	for (long t = 0; t < threads; t++) {
		done += cols[t].done;
		foreign += cols[t].foreign;
	}
	if (done != threads * rounds * iters)
		bench_fail("%ld of %ld replacements done", done,
			   threads * rounds * iters);
	for (long s = 0; s < threads * per; s++)
		check_and_free(table[s]);
	free(table);
	free(gen);
	free(cols);
	bench_metric("seconds", secs, "s");
	bench_metric("ops_per_sec", done / secs, "ops/s");
	bench_metric("threads_per_sec", threads * rounds / secs, "threads/s");
	bench_metric("foreign_free_pct", 100.0 * foreign / done, "%");
	bench_metric("sized_free", sized_free != NULL, "bool");
	return bench_check_ok();
}
