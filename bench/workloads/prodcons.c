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
 * blocks.  Metrics: seconds, ops_per_sec (allocations per second, all pairs).
 * --threads N is the same as --pairs N/2.
 */
#include <semaphore.h>

#include "common.h"

#define BATCH 1024
#define RING 10240

struct pair {
	long rounds;
	uint32_t id;
	unsigned int next_in;	/* producer only */
	unsigned int next_out;	/* consumer only */
	long consumed;		/* consumer only */
	sem_t empty;		/* batches of free slots */
	sem_t occupied;		/* batches of filled slots */
	void *ring[RING];
};

static size_t block_size(long j)
{
	return 4 * ((j % 64) + 1);
}

static uint32_t block_tag(const struct pair *pr, long seq)
{
	return (uint32_t)seq * 2654435761u ^ pr->id << 26;
}

static void *produce(void *arg)
{
	struct pair *pr = (struct pair *)arg;
	long seq = 0;

	for (long r = 0; r < pr->rounds; r++) {
		sem_wait(&pr->empty);
		for (long j = 0; j < BATCH; j++, seq++) {
			size_t n = block_size(j);
			void *p = bench_malloc(n);

			bench_fill(p, n, block_tag(pr, seq));
			pr->ring[pr->next_in] = p;
			pr->next_in = (pr->next_in + 1) % RING;
		}
		sem_post(&pr->occupied);
	}
	return NULL;
}

static void *consume(void *arg)
{
	struct pair *pr = (struct pair *)arg;
	long seq = 0;

	for (long r = 0; r < pr->rounds; r++) {
		sem_wait(&pr->occupied);
		for (long j = 0; j < BATCH; j++, seq++) {
			void *p = pr->ring[pr->next_out];

			if (!bench_intact(p, block_size(j), block_tag(pr, seq)))
				bench_fail("pair %u: block %ld was overwritten",
					   pr->id, seq);
			free(p);
			pr->next_out = (pr->next_out + 1) % RING;
			pr->consumed++;
		}
		sem_post(&pr->empty);
	}
	return NULL;
}

/* Thread 2k produces for pair k, thread 2k + 1 consumes. */
static void run_pairs(struct pair *pairs, long npairs)
{
	pthread_t *tid = (pthread_t *)calloc(2 * npairs, sizeof(*tid));

	if (!tid)
		bench_fail("calloc returned NULL");
	for (long i = 0; i < npairs; i++)
		if (pthread_create(&tid[2 * i], NULL, produce, &pairs[i]) ||
		    pthread_create(&tid[2 * i + 1], NULL, consume, &pairs[i]))
			bench_fail("pthread_create failed for pair %ld", i);
	for (long i = 0; i < 2 * npairs; i++)
		pthread_join(tid[i], NULL);
	free(tid);
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

	pairs = (struct pair *)calloc((size_t)npairs, sizeof(*pairs));
	if (!pairs)
		bench_fail("calloc returned NULL");
	for (long i = 0; i < npairs; i++) {
		pairs[i].rounds = rounds;
		pairs[i].id = (uint32_t)i;
		sem_init(&pairs[i].empty, 0, RING / BATCH);
		sem_init(&pairs[i].occupied, 0, 0);
	}

	t0 = bench_now();
	run_pairs(pairs, npairs);
	secs = bench_now() - t0;

	for (long i = 0; i < npairs; i++)
		if (pairs[i].consumed != rounds * BATCH)
			bench_fail("pair %ld freed %ld of %ld blocks", i,
				   pairs[i].consumed, rounds * BATCH);
	bench_metric("seconds", secs, "s");
	bench_metric("ops_per_sec", npairs * rounds * BATCH / secs, "ops/s");
	free(pairs);
	return bench_check_ok();
}
