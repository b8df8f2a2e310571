/*
 * mthread.c - random sizes in threads, after glibc's bench-malloc-thread:
 * --threads threads (default 1; the harness runs 1 and 8) each keep a
 * working set of --set blocks (default 1024) and make --iters replacements
 * (default 2e7, quick 2e6): a random entry is freed and gets a new block.
 * Sizes follow glibc's distribution, an inverse square between 4 and
 * 32768 bytes (half of the blocks are 4..7 bytes, one in eight is above
 * 32 bytes, one in a thousand above 4 KiB), drawn from a table of 8000
 * quantiles.  No block crosses threads: what is measured is each thread's
 * own heap, small blocks mostly, with a tail of large ones.
 *
 * Checks: every block still holds its tag (common.h's bench_fill) when it
 * is freed, and every replacement ran.
 * Metrics: seconds, ops_per_sec (replacements, one free and one malloc
 * each, all threads).
 */
#include "common.h"

#define MIN_SIZE 4
#define MAX_SIZE 32768
#define QUANTILES 8000

static uint32_t quantile[QUANTILES];

struct slot {
	char *p;
	uint32_t n;
	uint32_t tag;
};

struct worker {
	long set;
	long iters;
	long done;
	uint32_t id;
};

/*
 * Inverse square on [MIN_SIZE, MAX_SIZE]: F(x) = (1/min - 1/x) /
 * (1/min - 1/max), so the quantile u is x = 1 / (1/min - u (1/min -
 * 1/max)); the table holds it at the midpoints of QUANTILES even steps.
 */
static void make_quantiles(void)
{
	const double lo = 1.0 / MIN_SIZE, hi = 1.0 / MAX_SIZE;

	for (int i = 0; i < QUANTILES; i++) {
		double u = (i + 0.5) / QUANTILES;

		quantile[i] = (uint32_t)(1.0 / (lo - u * (lo - hi)));
	}
}

static void put(struct slot *s, uint64_t *rng)
{
	s->n = quantile[bench_rand(rng) % QUANTILES];
	s->p = (char *)bench_malloc(s->n);
	s->tag = (uint32_t)bench_rand(rng);
	bench_fill(s->p, s->n, s->tag);
}

static void take(struct slot *s)
{
	if (!bench_intact(s->p, s->n, s->tag))
		bench_fail("block %p (%u bytes) was overwritten", (void *)s->p,
			   s->n);
	free(s->p);
}

static void *run(void *arg)
{
	struct worker *w = (struct worker *)arg;
	struct slot *set = (struct slot *)calloc((size_t)w->set, sizeof(*set));
	uint64_t rng = bench_seed(w->id);
	long done = 0;

	if (!set)
		bench_fail("calloc returned NULL");
	for (long i = 0; i < w->set; i++)
		put(&set[i], &rng);
	for (long i = 0; i < w->iters; i++) {
		struct slot *s = &set[bench_rand(&rng) % (uint64_t)w->set];

		take(s);
		put(s, &rng);
		done++;
	}
	/* once: the workers' records share cache lines */
	w->done = done;
	for (long i = 0; i < w->set; i++)
		take(&set[i]);
	free(set);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, iters = BENCH_UNSET, set = BENCH_UNSET;
	long done = 0;
	const struct bench_opt opts[] = {
		{ "--threads", "threads (default 1)", &threads, NULL },
		{ "--iters", "replacements per thread (default 2e7, quick "
			     "2e6)", &iters, NULL },
		{ "--set", "blocks each thread keeps (default 1024)", &set,
		  NULL },
		{ NULL, NULL, NULL, NULL },
	};
	struct worker *w;
	double t0, secs;

	bench_parse(argc, argv, "Threads replace random blocks of their own "
		    "working sets, 4..32768 bytes (inverse square), after "
		    "glibc's bench-malloc-thread.", opts);
	bench_pick(&threads, 1, 1);
	bench_pick(&iters, 20000000, 2000000);
	bench_pick(&set, 1024, 1024);
	bench_require(threads >= 1 && iters >= 1 && set >= 1, argv[0],
		      "--threads, --iters and --set must be >= 1");
	make_quantiles();
	w = (struct worker *)calloc((size_t)threads, sizeof(*w));
	if (!w)
		bench_fail("calloc returned NULL");
	for (long t = 0; t < threads; t++) {
		w[t].set = set;
		w[t].iters = iters;
		w[t].id = (uint32_t)t;
	}
	t0 = bench_now();
	bench_run_threads(threads, run, w, sizeof(*w));
	secs = bench_now() - t0;
	for (long t = 0; t < threads; t++)
		done += w[t].done;
	if (done != threads * iters)
		bench_fail("%ld replacements ran, expected %ld", done,
			   threads * iters);
	free(w);
	bench_metric("seconds", secs, "s");
	bench_metric("ops_per_sec", done / secs, "ops/s");
	return bench_check_ok();
}
