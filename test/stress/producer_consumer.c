/*
 * producer_consumer.c - one thread allocates, another frees.
 *
 * PAIRS producer/consumer pairs, each joined by a single-producer ring.  The
 * producer mallocs blocks of the classic 4*((j%64)+1) sizes (and now and
 * then a bigger one), fills them with a pattern and pushes them; the
 * consumer checks the pattern and frees them with free or free_sized: every
 * free is a free from a thread that is not the owner.  The work runs in
 * PHASES; between phases every thread waits at a barrier while the main
 * thread reads get_data_segment_size().  Fails when a block arrives
 * damaged, or when the memory held keeps growing from phase to phase (the
 * freed blocks are never reused by their owner: "blowup").
 */
#include <pthread.h>
#include <stdint.h>
#include "alloc_api.h"
#include "check.h"

#define PAIRS 4
#define RING 1024
#define PHASES 8
#define MIB ((unsigned long)1 << 20)
/* Beyond twice what the first phase held, more than this is growth. */
#define SLACK (32 * MIB)
#include "ring.h"

#ifdef TL_TEST_TSAN
#define ITEMS 20000
#else
#define ITEMS 200000
#endif

static struct ring rings[PAIRS];
static pthread_barrier_t phase_end;

static size_t item_size(size_t j)
{
	if (j % 1000 == 999)
		return 4096 + j % 60000;
	return 4 * ((j % 64) + 1);
}

static void barrier_wait(void)
{
	int rc = pthread_barrier_wait(&phase_end);

	CHECK(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
}

/* Items a phase: ITEMS, or under an emulator as many as under TSan. */
static size_t items = ITEMS;

static void *producer(void *arg)
{
	struct ring *r = arg;
	size_t j, phase;

	for (phase = 0; phase < PHASES; phase++) {
		for (j = 0; j < items; j++) {
			size_t n = item_size(j);
			void *p = T_MALLOC(n);

			CHECKF(p != NULL, "size %zu", n);
			pattern_fill(p, n, j + phase * items);
			ring_push(r, p);
		}
		barrier_wait();
		barrier_wait();
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct ring *r = arg;
	size_t j, phase;

	for (phase = 0; phase < PHASES; phase++) {
		for (j = 0; j < items; j++) {
			size_t n = item_size(j);
			void *p = ring_pop(r);

			CHECKF(pattern_find_damage(p, n, j + phase * items) ==
			       n, "item %zu of phase %zu (size %zu) damaged",
			       j, phase, n);
			if (j & 1)
				T_FREE_SIZED(p, n);
			else
				T_FREE(p);
		}
		barrier_wait();
		barrier_wait();
	}
	return NULL;
}

static void cross_thread_free_blowup(void)
{
	pthread_t t[2 * PAIRS];
	unsigned long first = 0, held;
	int i, phase;

	if (test_emulated())
		items = ITEMS / 10;
	CHECK(pthread_barrier_init(&phase_end, NULL, 2 * PAIRS + 1) == 0);
	for (i = 0; i < PAIRS; i++) {
		CHECK(pthread_create(&t[2 * i], NULL, producer,
				     &rings[i]) == 0);
		CHECK(pthread_create(&t[2 * i + 1], NULL, consumer,
				     &rings[i]) == 0);
	}
	for (phase = 0; phase < PHASES; phase++) {
		barrier_wait();
		held = get_data_segment_size();
		if (phase == 0)
			first = held;
		CHECKF(held <= 2 * first + SLACK, "phase %d: %lu bytes held, "
		       "%lu after the first phase", phase, held, first);
		barrier_wait();
	}
	for (i = 0; i < 2 * PAIRS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	pthread_barrier_destroy(&phase_end);
	printf("held %lu bytes after the first phase, %lu at the end\n",
	       first, get_data_segment_size());
}

static const struct test_case tests[] = {
	TEST_CASE(cross_thread_free_blowup),
};

int main(int argc, char **argv)
{
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
