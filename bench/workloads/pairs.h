/*
 * pairs.h - producer/consumer pairs joined by a ring, shared by prodcons
 * and memtime.  Each pair has a producer thread that mallocs BATCH blocks
 * at a time (sizes from the pair's size function), fills each with a tag
 * and puts it in a ring of RING slots guarded by two semaphores, and a
 * consumer thread that checks each block's tag and frees it: every free is
 * from a thread other than the allocating one.
 *
 * The bytes the rings hold (the sizes asked for) are counted LIVE_STEP
 * blocks at a time, added when a producer has made them and taken off
 * when a consumer has freed them, and the most they came to is kept
 * (live_max_kb, within LIVE_STEP blocks a thread): the program's own live
 * data.  How far the producers run ahead of the consumers is the
 * scheduler's choice as much as the allocator's, so a peak RSS is read
 * against it (pairs_report_live).
 */
#ifndef BENCH_PAIRS_H
#define BENCH_PAIRS_H

#include <semaphore.h>
#include <stdatomic.h>
#include <sys/resource.h>

#include "common.h"

#define BATCH 1024
#define RING 10240
#define LIVE_STEP 64	/* blocks counted at once (BATCH is a multiple) */

struct pair;
/* The size of block j (0..BATCH-1) of round r, drawn with the pair's rng. */
typedef size_t (*pair_size_fn)(struct pair *pr, long round, long j);

struct pair {
	long rounds;
	uint32_t id;
	pair_size_fn size_of;
	uint64_t rng;		/* producer only */
	unsigned int next_in;	/* producer only */
	unsigned int next_out;	/* consumer only */
	long consumed;		/* consumer only */
	sem_t empty;		/* batches of free slots */
	sem_t occupied;		/* batches of filled slots */
	void *ring[RING];
	size_t size[RING];
};

static atomic_long pairs_live_bytes, pairs_live_max;

/* A producer made blocks of bytes in all: the rings' total, and its most. */
static void pairs_live_add(long bytes)
{
	long now = atomic_fetch_add(&pairs_live_bytes, bytes) + bytes;
	long max = atomic_load(&pairs_live_max);

	while (now > max &&
	       !atomic_compare_exchange_weak(&pairs_live_max, &max, now))
		;
}

static uint32_t pair_tag(const struct pair *pr, long seq)
{
	return (uint32_t)seq * 2654435761u ^ pr->id << 26;
}

static void *pair_produce(void *arg)
{
	struct pair *pr = (struct pair *)arg;
	long seq = 0;

	for (long r = 0; r < pr->rounds; r++) {
		long bytes = 0;

		sem_wait(&pr->empty);
		for (long j = 0; j < BATCH; j++, seq++) {
			size_t n = pr->size_of(pr, r, j);
			void *p = bench_malloc(n);

			bytes += (long)n;
			bench_fill(p, n, pair_tag(pr, seq));
			pr->ring[pr->next_in] = p;
			pr->size[pr->next_in] = n;
			pr->next_in = (pr->next_in + 1) % RING;
			if ((j + 1) % LIVE_STEP == 0) {
				pairs_live_add(bytes);
				bytes = 0;
			}
		}
		sem_post(&pr->occupied);
	}
	return NULL;
}

static void *pair_consume(void *arg)
{
	struct pair *pr = (struct pair *)arg;
	long seq = 0;

	for (long r = 0; r < pr->rounds; r++) {
		long bytes = 0;

		sem_wait(&pr->occupied);
		for (long j = 0; j < BATCH; j++, seq++) {
			unsigned int k = pr->next_out;

			bytes += (long)pr->size[k];
			if (!bench_intact(pr->ring[k], pr->size[k],
					  pair_tag(pr, seq)))
				bench_fail("pair %u: block %ld was overwritten",
					   pr->id, seq);
			free(pr->ring[k]);
			pr->next_out = (k + 1) % RING;
			pr->consumed++;
			if ((j + 1) % LIVE_STEP == 0) {
				atomic_fetch_sub(&pairs_live_bytes, bytes);
				bytes = 0;
			}
		}
		sem_post(&pr->empty);
	}
	return NULL;
}

/* npairs pairs of rounds batches each; calloc'd, free() when done. */
static struct pair *pairs_new(long npairs, long rounds, pair_size_fn size_of)
{
	struct pair *pairs = (struct pair *)calloc((size_t)npairs,
						   sizeof(*pairs));

	if (!pairs)
		bench_fail("calloc returned NULL");
	for (long i = 0; i < npairs; i++) {
		pairs[i].rounds = rounds;
		pairs[i].id = (uint32_t)i;
		pairs[i].size_of = size_of;
		pairs[i].rng = bench_seed((unsigned)i);
		sem_init(&pairs[i].empty, 0, RING / BATCH);
		sem_init(&pairs[i].occupied, 0, 0);
	}
	return pairs;
}

/* Thread 2k produces for pair k, thread 2k + 1 consumes; all joined. */
static void pairs_run(struct pair *pairs, long npairs)
{
	pthread_t *tid = (pthread_t *)calloc(2 * npairs, sizeof(*tid));

	if (!tid)
		bench_fail("calloc returned NULL");
	for (long i = 0; i < npairs; i++)
		if (pthread_create(&tid[2 * i], NULL, pair_produce, &pairs[i]) ||
		    pthread_create(&tid[2 * i + 1], NULL, pair_consume,
				   &pairs[i]))
			bench_fail("pthread_create failed for pair %ld", i);
	for (long i = 0; i < 2 * npairs; i++)
		pthread_join(tid[i], NULL);
	free(tid);
}

/* Every pair moved all its blocks. */
static void pairs_check(const struct pair *pairs, long npairs)
{
	for (long i = 0; i < npairs; i++)
		if (pairs[i].consumed != pairs[i].rounds * BATCH)
			bench_fail("pair %ld freed %ld of %ld blocks", i,
				   pairs[i].consumed, pairs[i].rounds * BATCH);
}

/*
 * After pairs_run: the metrics live_max_kb (the most the rings held) and
 * peak_over_live (the process's peak RSS so far over it: what is
 * resident for each byte of live data, the program's start-up and the
 * pairs' own arrays included).
 */
static void pairs_report_live(void)
{
	struct rusage ru;
	double live_kb = (double)atomic_load(&pairs_live_max) / 1024;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		bench_fail("getrusage failed");
	if (live_kb <= 0)
		bench_fail("the rings never held a byte");
	bench_metric("live_max_kb", live_kb, "KiB");
	bench_metric("peak_over_live", (double)ru.ru_maxrss / live_kb, "x");
}

#endif /* BENCH_PAIRS_H */
