/*
 * churn.c - thread churn: --iters waves (default 2000, quick 200) of
 * --threads short-lived threads (default 8).  In each wave, thread t first
 * frees the --blocks blocks (default 1000, sizes 16..512) that thread t+1
 * of the previous wave left behind, then allocates blocks of its own and
 * exits while they are still live.  An allocator must hand the heap of an
 * exiting thread to someone, or take it back, without leaking it and
 * without corrupting blocks that outlive their thread.
 *
 * Checks: every block is intact when the next wave frees it; every block
 * allocated was freed (the main thread frees the last wave's).
 * Metric: seconds.
 */
#include "common.h"

#define MIN_SIZE 16
#define MAX_SIZE 512

struct block {
	char *p;
	size_t n;
	uint32_t tag;
};

struct worker {
	struct block *leftover;	/* the previous wave's blocks to free */
	struct block *mine;	/* this thread's blocks, left for the next */
	long blocks;
	uint32_t id;
	long allocated, freed;
};

static long free_blocks(struct block *b, long n)
{
	long freed = 0;

	for (long i = 0; i < n; i++) {
		if (!b[i].p)
			continue;
		if (!bench_intact(b[i].p, b[i].n, b[i].tag))
			bench_fail("block %p outlived its thread but not its "
				   "contents", (void *)b[i].p);
		free(b[i].p);
		b[i].p = NULL;
		freed++;
	}
	return freed;
}

static void *run(void *arg)
{
	struct worker *w = (struct worker *)arg;
	uint64_t rng = bench_seed(w->id);

	w->freed = free_blocks(w->leftover, w->blocks);
	for (long i = 0; i < w->blocks; i++) {
		struct block *b = &w->mine[i];

		b->n = bench_between(&rng, MIN_SIZE, MAX_SIZE);
		b->p = (char *)bench_malloc(b->n);
		b->tag = (uint32_t)bench_rand(&rng);
		bench_fill(b->p, b->n, b->tag);
		w->allocated++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, waves = BENCH_UNSET, blocks = BENCH_UNSET;
	const struct bench_opt opts[] = {
		{ "--threads", "threads per wave (default 8)", &threads, NULL },
		{ "--iters", "waves (default 2000, quick 200)", &waves, NULL },
		{ "--blocks", "blocks per thread (default 1000)", &blocks,
		  NULL },
		{ NULL, NULL, NULL, NULL },
	};
	struct block *store[2];
	struct worker *w;
	long allocated = 0, freed = 0;
	double t0, secs;

	bench_parse(argc, argv, "Waves of short-lived threads whose blocks "
		    "outlive them.", opts);
	bench_pick(&threads, 8, 8);
	bench_pick(&waves, 2000, 200);
	bench_pick(&blocks, 1000, 1000);
	bench_require(threads >= 1 && waves >= 1 && blocks >= 1, argv[0],
		      "--threads, --iters and --blocks must be >= 1");

	/* Wave v frees store[v % 2] and fills store[(v + 1) % 2]. */
	store[0] = (struct block *)calloc((size_t)(threads * blocks),
					  sizeof(struct block));
	store[1] = (struct block *)calloc((size_t)(threads * blocks),
					  sizeof(struct block));
	w = (struct worker *)calloc((size_t)threads, sizeof(*w));
	if (!store[0] || !store[1] || !w)
		bench_fail("calloc returned NULL");

	t0 = bench_now();
	for (long v = 0; v < waves; v++) {
		for (long t = 0; t < threads; t++) {
			long next = (t + 1) % threads;

			w[t] = (struct worker){
				store[v % 2] + next * blocks,
				store[(v + 1) % 2] + t * blocks,
				blocks, (uint32_t)(v * threads + t), 0, 0 };
		}
		bench_run_threads(threads, run, w, sizeof(*w));
		for (long t = 0; t < threads; t++) {
			allocated += w[t].allocated;
			freed += w[t].freed;
		}
	}
	freed += free_blocks(store[waves % 2], threads * blocks);
	secs = bench_now() - t0;

	if (allocated != waves * threads * blocks || freed != allocated)
		bench_fail("%ld blocks allocated and %ld freed, expected %ld",
			   allocated, freed, waves * threads * blocks);
	free(store[0]);
	free(store[1]);
	free(w);
	bench_metric("seconds", secs, "s");
	return bench_check_ok();
}
