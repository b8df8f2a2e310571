/*
 * park.c - parked heaps (pool.c, "parked heaps"): an exiting thread's heap
 * kept whole for the next thread to start.  Against the debug variant,
 * which reads the pages' owner words and runs the heap and pool checkers.
 *
 * Each case is named after the failure it catches:
 *   parked_heap_not_reused     a thread exits with live blocks: its heap is
 *                              parked (its pages' owner PARKED, nobody's),
 *                              blocks freed meanwhile by another thread
 *                              are kept, and the next thread to start
 *                              takes that heap: its pages are that
 *                              thread's again, the freed blocks reused
 *   parked_heap_kept_forever   with a purge delay of 1 ms, a parked heap
 *                              nobody takes is destroyed by the purger
 *                              (its page abandoned), with no call from the
 *                              program
 *   park_option_ignored        with park_heaps 0 (the default), the page
 *                              of an exited thread is abandoned at its exit
 * The cases turn the option on (main) but for the last.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "tlmalloc.h"
#include "tlmalloc/internal.h"

#if !defined(TL_DEBUG) || TL_DEBUG < 1
#error "park.c needs the debug variant (TL_DEBUG >= 1)"
#endif

enum { BLOCKS = 64, SIZE = 48 };	/* a direct class */
static char *blocks[BLOCKS];

static tl_page *page_of(const void *p)
{
	return tl_slice_of(tl_segment_of(p), p);
}

static uintptr_t owner_of(const void *p)
{
	return tl_uptr_load_relaxed(&page_of(p)->owner) &
	       ~(uintptr_t)TL_OWNER_FULL;
}

static void *allocate_and_exit(void *arg)
{
	tl_heap **heap = arg;
	for (int i = 0; i < BLOCKS; i++) {
		CHECK((blocks[i] = malloc(SIZE)) != NULL);
		memset(blocks[i], i, SIZE);
	}
	*heap = tl_heap_local;
	return NULL;
}

struct reuse {
	tl_heap *heap;
	uintptr_t id;
	int reused;	/* mallocs that returned a block main freed */
};

static void *start_and_allocate(void *arg)
{
	struct reuse *r = arg;
	char *got[BLOCKS];
	for (int i = 0; i < BLOCKS; i++) {
		CHECK((got[i] = malloc(SIZE)) != NULL);
		for (int j = 0; j < BLOCKS; j += 2)
			r->reused += got[i] == blocks[j];
	}
	r->heap = tl_heap_local;
	r->id = tl_heap_local->id;
	CHECK(tl_heap_check(tl_heap_local));
	for (int i = 0; i < BLOCKS; i++)
		free(got[i]);
	return NULL;
}

static void parked_heap_not_reused(void)
{
	pthread_t t;
	tl_heap *first = NULL;
	CHECK(tl_option_set("park_heaps", 1) == 0);
	CHECK(tl_option_set("purge_delay", 3600000) == 0);
	CHECK(pthread_create(&t, NULL, allocate_and_exit, &first) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECKF(owner_of(blocks[0]) == TL_OWNER_PARKED, "owner %#lx after the "
	       "exit", (unsigned long)owner_of(blocks[0]));
	CHECK(tl_pool_check());
	/* Freed while parked: to the page's thread_free, as to an
	 * abandoned page. */
	for (int i = 0; i < BLOCKS; i += 2) {
		for (int k = 0; k < SIZE; k++)
			CHECK(blocks[i][k] == (char)i);
		free(blocks[i]);
	}
	struct reuse r = { 0 };
	CHECK(pthread_create(&t, NULL, start_and_allocate, &r) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECKF(r.heap == first, "the new thread's heap %p, the parked one %p",
	       (void *)r.heap, (void *)first);
	CHECKF(r.reused == BLOCKS / 2, "%d of the %d blocks freed while "
	       "parked came back", r.reused, BLOCKS / 2);
	/* That thread exited too: parked again, the live blocks intact. */
	CHECK(owner_of(blocks[1]) == TL_OWNER_PARKED);
	for (int i = 1; i < BLOCKS; i += 2) {
		for (int k = 0; k < SIZE; k++)
			CHECK(blocks[i][k] == (char)i);
		free(blocks[i]);
	}
	CHECK(tl_pool_check());
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

static void parked_heap_kept_forever(void)
{
	pthread_t t;
	tl_heap *first = NULL;
	CHECK(tl_option_set("park_heaps", 1) == 0);
	CHECK(tl_option_set("purge_delay", 1) == 0);
	CHECK(pthread_create(&t, NULL, allocate_and_exit, &first) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	/* Wait for the event, not for a time: up to 20 s under load. */
	uintptr_t owner = 0;
	for (int tries = 0; tries < 2000; tries++) {
		if ((owner = owner_of(blocks[0])) == TL_OWNER_ABANDONED)
			break;
		usleep(10000);
	}
	CHECKF(owner == TL_OWNER_ABANDONED, "owner %#lx 20 s after the exit",
	       (unsigned long)owner);
	for (int i = 0; i < BLOCKS; i++)
		free(blocks[i]);
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

static void park_option_ignored(void)
{
	pthread_t t;
	tl_heap *first = NULL;
	long v = -1;
	CHECK(tl_option_get("park_heaps", &v) == 0 && v == 0);	/* default */
	CHECK(tl_option_set("purge_delay", 3600000) == 0);
	CHECK(pthread_create(&t, NULL, allocate_and_exit, &first) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECKF(owner_of(blocks[0]) == TL_OWNER_ABANDONED, "owner %#lx after "
	       "the exit", (unsigned long)owner_of(blocks[0]));
	for (int i = 0; i < BLOCKS; i++)
		free(blocks[i]);
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

static const struct test_case cases[] = {
	TEST_CASE(parked_heap_not_reused),
	TEST_CASE(parked_heap_kept_forever),
	TEST_CASE(park_option_ignored),
};

int main(int argc, char **argv)
{
	return child_main(argc, argv, cases, TEST_COUNT(cases));
}
