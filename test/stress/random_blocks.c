/*
 * random_blocks.c - many threads allocating random sizes at once.
 *
 * THREADS threads each keep SLOTS blocks: small, medium, large (> 1 MiB)
 * and aligned ones, from every allocation call, each filled with a pattern
 * of its own.  A random operation checks a block's pattern and then frees it
 * (free, free_sized, free_aligned_sized), reallocates it (the old contents
 * must survive) or posts it to the outbox that the next thread frees.
 * After every round all threads stop at a barrier; thread 0 sorts the
 * [start, start + usable size) intervals of every live block of every thread
 * and fails if two overlap, while each thread checks all its patterns.
 * Fails when two live blocks share memory or a block's bytes change while
 * its owner is not writing it.
 */
#include <pthread.h>
#include <stdint.h>
#include "alloc_api.h"
#include "check.h"

#define THREADS 8
#define SLOTS 400
#define OUTBOX 64
#define MIB ((size_t)1 << 20)

#ifdef TL_TEST_TSAN
#define ROUNDS 4
#define OPS 1500
#else
#define ROUNDS 12
#define OPS 4000
#endif

enum how { BY_MALLOC, BY_CALLOC, BY_ALIGNED, BY_POSIX, BY_MEMALIGN, HOWS };

struct block {
	unsigned char *p;
	size_t n;
	size_t align;
	uint64_t tag;
};

struct worker {
	pthread_t thread;
	int id;
	uint64_t rng;
	uint64_t next_tag;
	struct block slot[SLOTS];
	struct block outbox[OUTBOX];
	int outbox_len;
};

static struct worker workers[THREADS];
static pthread_barrier_t barrier;

static size_t random_size(uint64_t *rng)
{
	uint64_t r = rng_next(rng);

	switch (r % 1000) {
	case 0:
	case 1:
		return MIB + (r >> 20) % (3 * MIB);
	case 2 ... 40:
		return (r >> 10) % (256 * 1024);
	case 41 ... 300:
		return (r >> 10) % 8192;
	default:
		return (r >> 10) % 512;
	}
}

static void block_check(const struct block *b, const char *when)
{
	size_t bad = pattern_find_damage(b->p, b->n, b->tag);

	CHECKF(bad == b->n, "%s: byte %zu of block %p (size %zu, alignment "
	       "%zu) overwritten", when, bad, (void *)b->p, b->n, b->align);
}

static void block_alloc(struct worker *w, struct block *b)
{
	uint64_t r = rng_next(&w->rng);
	enum how how = (enum how)(r % HOWS);
	size_t n = random_size(&w->rng);
	void *p = NULL;

	b->align = how == BY_MALLOC || how == BY_CALLOC ? 16
						       : (size_t)16 << (r >> 8) % 13;
	if (how == BY_MALLOC)
		p = T_MALLOC(n);
	else if (how == BY_CALLOC)
		p = T_CALLOC(1, n);
	else if (how == BY_ALIGNED)
		p = T_ALIGNED_ALLOC(b->align, n);
	else if (how == BY_MEMALIGN)
		p = T_MEMALIGN(b->align, n);
	else
		CHECK(T_POSIX_MEMALIGN(&p, b->align, n) == 0);
	CHECKF(p != NULL && is_aligned(p, b->align), "%p size %zu alignment "
	       "%zu", p, n, b->align);
	CHECKF(T_USABLE_SIZE(p) >= n, "usable %zu < %zu", T_USABLE_SIZE(p), n);
	b->p = p;
	b->n = n;
	b->tag = w->next_tag++ * THREADS + (uint64_t)w->id;
	pattern_fill(b->p, n, b->tag);
}

static void block_free(struct block *b, uint64_t r)
{
	/* free_sized is for malloc's blocks (C23), which the default build
	 * checks: an aligned block is freed with its alignment */
	if (r % 3 == 0 && b->align <= 16)
		T_FREE_SIZED(b->p, b->n);
	else if (r % 3 == 1)
		T_FREE_ALIGNED_SIZED(b->p, b->align, b->n);
	else
		T_FREE(b->p);
	b->p = NULL;
}

/* Grow or shrink (not to 0: that frees); the common prefix must survive. */
static void block_realloc(struct worker *w, struct block *b)
{
	size_t n = random_size(&w->rng) + 1;
	size_t keep = n < b->n ? n : b->n;
	unsigned char *p = T_REALLOC(b->p, n);

	CHECKF(p != NULL && is_aligned(p, 16), "realloc to %zu: %p", n,
	       (void *)p);
	CHECKF(pattern_find_damage(p, keep, b->tag) == keep,
	       "realloc from %zu to %zu lost contents", b->n, n);
	b->p = p;
	b->n = n;
	b->align = 16;
	pattern_fill(p, n, b->tag);
}

static void operate(struct worker *w)
{
	uint64_t r = rng_next(&w->rng);
	struct block *b = &w->slot[r % SLOTS];

	if (!b->p) {
		block_alloc(w, b);
		return;
	}
	block_check(b, "before use");
	r >>= 16;
	if (r % 8 == 0) {
		block_realloc(w, b);
	} else if (r % 8 == 1 && w->outbox_len < OUTBOX) {
		w->outbox[w->outbox_len++] = *b;
		b->p = NULL;
	} else {
		block_free(b, r >> 8);
	}
}

static int cmp_interval(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct block *)a)->p;
	uintptr_t y = (uintptr_t)((const struct block *)b)->p;

	return x < y ? -1 : x > y;
}

static struct block all_live[THREADS * (SLOTS + OUTBOX)];

/* Thread 0, while every thread waits: no two live blocks overlap. */
static void check_overlap(void)
{
	size_t n = 0, i;
	int t, k;

	for (t = 0; t < THREADS; t++) {
		for (k = 0; k < SLOTS; k++)
			if (workers[t].slot[k].p)
				all_live[n++] = workers[t].slot[k];
		for (k = 0; k < workers[t].outbox_len; k++)
			all_live[n++] = workers[t].outbox[k];
	}
	qsort(all_live, n, sizeof(all_live[0]), cmp_interval);
	for (i = 0; i + 1 < n; i++) {
		uintptr_t end = (uintptr_t)all_live[i].p +
				T_USABLE_SIZE(all_live[i].p);

		CHECKF(end <= (uintptr_t)all_live[i + 1].p, "block %p (usable "
		       "%zu) overlaps %p", (void *)all_live[i].p,
		       T_USABLE_SIZE(all_live[i].p),
		       (void *)all_live[i + 1].p);
	}
}

static void check_own(struct worker *w)
{
	int k;

	for (k = 0; k < SLOTS; k++)
		if (w->slot[k].p)
			block_check(&w->slot[k], "at the barrier");
	for (k = 0; k < w->outbox_len; k++)
		block_check(&w->outbox[k], "in the outbox");
}

/* Free what the next thread posted: frees from a thread not the owner. */
static void drain_neighbour(struct worker *w)
{
	struct worker *from = &workers[(w->id + 1) % THREADS];
	int k;

	for (k = 0; k < from->outbox_len; k++) {
		block_check(&from->outbox[k], "handed over");
		block_free(&from->outbox[k], (uint64_t)k);
	}
}

static void barrier_wait(void)
{
	int rc = pthread_barrier_wait(&barrier);

	CHECK(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int round, i;

	/* Under an emulator, as many rounds as under TSan. */
	int rounds = test_emulated() ? 4 : ROUNDS;

	for (round = 0; round < rounds; round++) {
		for (i = 0; i < OPS; i++)
			operate(w);
		barrier_wait();
		if (w->id == 0)
			check_overlap();
		check_own(w);
		barrier_wait();
		drain_neighbour(w);
		barrier_wait();
		workers[(w->id + 1) % THREADS].outbox_len = 0;
		barrier_wait();
	}
	for (i = 0; i < SLOTS; i++)
		if (w->slot[i].p)
			block_free(&w->slot[i], (uint64_t)i);
	return NULL;
}

static void blocks_overlap_or_corrupt(void)
{
	int t;

	CHECK(pthread_barrier_init(&barrier, NULL, THREADS) == 0);
	for (t = 0; t < THREADS; t++) {
		workers[t].id = t;
		workers[t].rng = 0x1234567ULL * (uint64_t)(t + 1) + 99;
		CHECK(pthread_create(&workers[t].thread, NULL, worker_main,
				     &workers[t]) == 0);
	}
	for (t = 0; t < THREADS; t++)
		CHECK(pthread_join(workers[t].thread, NULL) == 0);
	pthread_barrier_destroy(&barrier);
}

static const struct test_case tests[] = {
	TEST_CASE(blocks_overlap_or_corrupt),
};

int main(int argc, char **argv)
{
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
