/*
 * huge_blocks.c - huge blocks (above 128 KiB: a segment each) changing
 * hands between threads at once: the pool's cache of freed ones, blocks
 * cut from them, gathered from their pieces and grown by realloc where
 * they stand, and the cache shedding its oldest (whole or a tail) when
 * the blocks took fresh memory (docs/design.md, "Huge segment").
 *
 * THREADS threads each keep SLOTS blocks of 130 KiB to 6 MiB.  A random
 * operation replaces a block by a new one, grows or shrinks it by realloc
 * (its bytes up to the smaller size must survive), or posts it to the
 * mailbox of the next thread, which frees it.  Every block carries a byte
 * of its own every 4 KiB and at its end, written when it is made or
 * resized and checked before it is resized or freed (by its owner, or by
 * the thread it was posted to).
 * Fails when a block's bytes change while its owner is not writing it (a
 * block given the pages of another, or a cached segment's pages moved or
 * unmapped while a block still holds them faults).
 */
#include <pthread.h>
#include <stdint.h>
#include "alloc_api.h"
#include "check.h"

#define THREADS 4
#define SLOTS 24
#define MAILBOX 8
#define STEP 4096
#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

#ifdef TL_TEST_TSAN
#define OPS 600
#else
#define OPS 3000
#endif

struct block {
	unsigned char *p;
	size_t n;
	uint64_t tag;
};

struct worker {
	pthread_t thread;
	int id;
	uint64_t rng;
	uint64_t next_tag;
	struct block slot[SLOTS];
	pthread_mutex_t lock;		/* guards mail and mail_len */
	struct block mail[MAILBOX];	/* posted by the previous thread */
	int mail_len;
};

static struct worker workers[THREADS];

static unsigned char byte_at(uint64_t tag, size_t i)
{
	return (unsigned char)((tag * 0x9e3779b97f4a7c15ULL + i / STEP) >> 56);
}

/* The marked bytes of p[from..to). */
static void mark(unsigned char *p, uint64_t tag, size_t from, size_t to)
{
	for (size_t i = (from + STEP - 1) / STEP * STEP; i < to; i += STEP)
		p[i] = byte_at(tag, i);
	p[to - 1] = byte_at(tag, to - 1);
}

/* The marked bytes below upto, and the last byte if end. */
static void check_block(const struct block *b, size_t upto, int end,
			const char *when)
{
	for (size_t i = 0; i < upto; i += STEP)
		CHECKF(b->p[i] == byte_at(b->tag, i), "%s: block %p (%zu bytes)"
		       " changed at byte %zu", when, (void *)b->p, b->n, i);
	if (end)
		CHECKF(b->p[b->n - 1] == byte_at(b->tag, b->n - 1),
		       "%s: block %p (%zu bytes) changed at its end", when,
		       (void *)b->p, b->n);
}

static size_t random_size(uint64_t *rng)
{
	uint64_t r = rng_next(rng);
	/* Mostly under 1 MiB, some up to 6 MiB: pieces and cuts of both. */
	if (r % 4 == 0)
		return MIB + (r >> 8) % (5 * MIB);
	return 130 * KIB + (r >> 8) % (900 * KIB);
}

static void block_new(struct worker *w, struct block *b)
{
	b->n = random_size(&w->rng);
	b->tag = ((uint64_t)w->id << 48) | w->next_tag++;
	b->p = T_MALLOC(b->n);
	CHECKF(b->p != NULL, "malloc(%zu) returned NULL", b->n);
	mark(b->p, b->tag, 0, b->n);
}

static void block_free(struct block *b, const char *when)
{
	check_block(b, b->n, 1, when);
	T_FREE(b->p);
	b->p = NULL;
}

static void block_resize(struct worker *w, struct block *b)
{
	size_t n = random_size(&w->rng);
	size_t keep = n < b->n ? n : b->n;
	check_block(b, b->n, 1, "before realloc");
	unsigned char *p = T_REALLOC(b->p, n);
	CHECKF(p != NULL, "realloc(%zu) returned NULL", n);
	b->p = p;
	b->n = n;
	/* the old bytes up to the smaller size, then new ones past it */
	check_block(b, keep, 0, "after realloc");
	mark(p, b->tag, keep, n);
}

/* Free what the previous thread posted here. */
static void drain(struct worker *w)
{
	struct block got[MAILBOX];
	int n;
	CHECK(pthread_mutex_lock(&w->lock) == 0);
	n = w->mail_len;
	for (int k = 0; k < n; k++)
		got[k] = w->mail[k];
	w->mail_len = 0;
	CHECK(pthread_mutex_unlock(&w->lock) == 0);
	for (int k = 0; k < n; k++)
		block_free(&got[k], "handed over");
}

/* Post b to the next thread (false: its mailbox is full). */
static int post(struct worker *w, struct block *b)
{
	struct worker *to = &workers[(w->id + 1) % THREADS];
	int ok;
	CHECK(pthread_mutex_lock(&to->lock) == 0);
	ok = to->mail_len < MAILBOX;
	if (ok)
		to->mail[to->mail_len++] = *b;
	CHECK(pthread_mutex_unlock(&to->lock) == 0);
	return ok;
}

static void operate(struct worker *w)
{
	struct block *b = &w->slot[rng_next(&w->rng) % SLOTS];
	uint64_t r = rng_next(&w->rng) % 10;
	if (b->p == NULL) {
		block_new(w, b);
	} else if (r < 4) {
		block_resize(w, b);
	} else if (r < 6 && post(w, b)) {
		b->p = NULL;
	} else {
		block_free(b, "before free");
		block_new(w, b);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int ops = test_emulated() ? OPS / 5 : OPS;
	for (int i = 0; i < ops; i++) {
		operate(w);
		if (i % 16 == 0)
			drain(w);
	}
	for (int k = 0; k < SLOTS; k++)
		if (w->slot[k].p != NULL)
			block_free(&w->slot[k], "at the end");
	return NULL;
}

static void huge_blocks_corrupt(void)
{
	for (int t = 0; t < THREADS; t++) {
		workers[t].id = t;
		workers[t].rng = 0x51ed27ULL * (uint64_t)(t + 3) + 7;
		CHECK(pthread_mutex_init(&workers[t].lock, NULL) == 0);
	}
	for (int t = 0; t < THREADS; t++)
		CHECK(pthread_create(&workers[t].thread, NULL, worker_main,
				     &workers[t]) == 0);
	for (int t = 0; t < THREADS; t++)
		CHECK(pthread_join(workers[t].thread, NULL) == 0);
	/* What was posted after its receiver's last look. */
	for (int t = 0; t < THREADS; t++) {
		drain(&workers[t]);
		pthread_mutex_destroy(&workers[t].lock);
	}
}

static const struct test_case tests[] = {
	TEST_CASE(huge_blocks_corrupt),
};

int main(int argc, char **argv)
{
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
