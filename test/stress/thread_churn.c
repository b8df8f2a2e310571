/*
 * thread_churn.c - many short-lived threads whose blocks outlive them.
 *
 * THREAD_COUNT threads run WINDOW at a time.  Thread k first checks and
 * frees the blocks thread k - WINDOW left behind (that thread has exited
 * and been joined), then allocates blocks of its own (small ones of many
 * classes, a medium one, now and then a large one), fills them and exits
 * without freeing them.  Every SAMPLE_EVERY threads the main thread lets the
 * running ones finish and reads get_data_segment_size().  Fails when a
 * block of a dead thread was damaged, or when the memory held grows: after
 * the first BASELINE_AT threads it may never exceed twice what it was then
 * plus SLACK (a dead thread's pages that are neither reused nor returned
 * would make it grow with every thread).
 */
#include <pthread.h>
#include <stdint.h>
#include "alloc_api.h"
#include "check.h"
#include "held.h"

#define WINDOW 4
#define SLOTS (2 * WINDOW)
#define BLOCKS 48
#define SAMPLE_EVERY 250
#define BASELINE_AT 1000
#define MIB ((unsigned long)1 << 20)
#define SLACK (16 * MIB)

#ifdef TL_TEST_TSAN
#define THREAD_COUNT 3000
#else
#define THREAD_COUNT 10000
#endif

struct leftovers {
	void *p[BLOCKS];
	size_t n[BLOCKS];
	uint64_t tag;
};

static struct leftovers slot[SLOTS];

static size_t block_size(size_t k, int i)
{
	if (i == 0 && k % 64 == 0)
		return 2 * MIB + k;
	if (i == 1)
		return 20000 + k % 5000;
	return (size_t)(i * 24) + k % 16;
}

static void free_leftovers(struct leftovers *l)
{
	int i;

	for (i = 0; i < BLOCKS; i++) {
		if (!l->p[i])
			continue;
		CHECKF(pattern_find_damage(l->p[i], l->n[i], l->tag + i) ==
		       l->n[i], "block %d (size %zu) of a dead thread "
		       "damaged", i, l->n[i]);
		T_FREE(l->p[i]);
		l->p[i] = NULL;
	}
}

static void *short_lived(void *arg)
{
	size_t k = (size_t)(uintptr_t)arg;
	struct leftovers *mine = &slot[k % SLOTS];
	int i;

	if (k >= WINDOW)
		free_leftovers(&slot[(k - WINDOW) % SLOTS]);
	mine->tag = (uint64_t)k * BLOCKS;
	for (i = 0; i < BLOCKS; i++) {
		size_t n = block_size(k, i);

		mine->p[i] = i % 5 ? T_MALLOC(n) : T_CALLOC(1, n);
		CHECKF(mine->p[i] != NULL, "size %zu", n);
		mine->n[i] = n;
		pattern_fill(mine->p[i], n, mine->tag + i);
	}
	return NULL;
}

static pthread_t threads[SLOTS];
static int running[SLOTS];

static void join(size_t k)
{
	if (!running[k % SLOTS])
		return;
	CHECK(pthread_join(threads[k % SLOTS], NULL) == 0);
	running[k % SLOTS] = 0;
}

static void spawn(size_t k)
{
	int rc = pthread_create(&threads[k % SLOTS], NULL, short_lived,
				(void *)(uintptr_t)k);

	CHECKF(rc == 0, "thread %zu: pthread_create returned %d", k, rc);
	running[k % SLOTS] = 1;
}

static void dead_thread_memory_grows(void)
{
	unsigned long baseline = 0;
	size_t k, j;
	/* Under an emulator, as many as under TSan: still three times the
	 * baseline's. */
	size_t count = test_emulated() ? 3 * BASELINE_AT : THREAD_COUNT;

	for (k = 0; k < count; k++) {
		if (k % SAMPLE_EVERY == 0 && k > 0) {
			for (j = k - WINDOW; j < k; j++)
				join(j);
			check_held(k, BASELINE_AT, SLACK, &baseline);
		}
		if (k >= WINDOW)
			join(k - WINDOW);
		spawn(k);
	}
	for (j = k - WINDOW; j < k; j++)
		join(j);
	for (j = 0; j < SLOTS; j++)
		free_leftovers(&slot[j]);
	check_held(k, BASELINE_AT, SLACK, &baseline);
	printf("held %lu bytes after %d threads, %lu after %zu\n", baseline,
	       BASELINE_AT, get_data_segment_size(), count);
}

static const struct test_case tests[] = {
	TEST_CASE(dead_thread_memory_grows),
};

int main(int argc, char **argv)
{
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
