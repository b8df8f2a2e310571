/*
 * init_race.c - threads that exist before tlmalloc initialises.
 *
 * A constructor that runs before tlmalloc's own (priority 101) starts
 * RACERS threads; main, after every constructor (tlmalloc's
 * tl_process_init among them), lets them go through a relaxed flag, which
 * orders nothing.  So the only order between what the initialisation
 * wrote (the page size, the options, the thread-exit key) and a racer's
 * first allocation is the one tlmalloc gives it: its INIT_DONE store and
 * the racers' load of it (design.md, "Memory order, field by field").
 * Each racer allocates, checks and frees a batch and exits, so its heap is
 * destroyed through the key.  Under ThreadSanitizer (the _tsan twin) a
 * relaxed load there is a data race on what init wrote; elsewhere it
 * checks that the racers' heaps work and are handed back.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include "alloc_api.h"
#include "check.h"

#define RACERS 4
#define BATCH 256

static pthread_t racers[RACERS];
static atomic_int go;

static void *racer_main(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&go, memory_order_relaxed))
		;
	void *blocks[BATCH];
	for (int i = 0; i < BATCH; i++) {
		size_t n = 16 + (size_t)i * 24;
		blocks[i] = T_MALLOC(n);
		CHECK(blocks[i] != NULL);
		memset(blocks[i], i & 0xff, n);
	}
	for (int i = 0; i < BATCH; i++) {
		CHECK(((unsigned char *)blocks[i])[0] == (i & 0xff));
		T_FREE(blocks[i]);
	}
	return NULL;
}

__attribute__((constructor(101))) static void start_racers(void)
{
	for (int i = 0; i < RACERS; i++)
		CHECK(pthread_create(&racers[i], NULL, racer_main, NULL) == 0);
}

static void init_race(void)
{
	atomic_store_explicit(&go, 1, memory_order_relaxed);
	for (int i = 0; i < RACERS; i++)
		CHECK(pthread_join(racers[i], NULL) == 0);
}

static const struct test_case tests[] = {
	TEST_CASE(init_race),
};

int main(int argc, char **argv)
{
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
