/*
 * reuse.c - the order in which a thread's freed blocks come back
 * (docs/design.md, "The fast paths", 5): malloc hands out the latest
 * block the thread freed of that size first, while it is still in the
 * cache, before the page's older free blocks.  Each case runs in a new
 * thread (a new heap), so the pages hold only its own blocks.
 *   latest_free_not_reused_first  after freeing blocks of a page that
 *                                 still has older free blocks, the next
 *                                 mallocs of the size do not return the
 *                                 freed ones, newest first: a direct-table
 *                                 size (64 bytes), a small page's size
 *                                 above the table (4000) and a medium
 *                                 page's (20000)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { BLOCKS = 6 };	/* fewer than a carve leaves: free is not empty */

static void *latest_body(void *arg)
{
	static const size_t sizes[] = { 64, 4000, 20000 };
	(void)arg;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		void *p[BLOCKS];
		for (int i = 0; i < BLOCKS; i++) {
			p[i] = malloc(sizes[s]);
			CHECK(p[i] != NULL);
			memset(p[i], i, sizes[s]);
		}
		free(p[1]);
		free(p[4]);
		void *a = malloc(sizes[s]), *b = malloc(sizes[s]);
		CHECKF(a == p[4] && b == p[1],
		       "size %zu: freed %p then %p, got back %p then %p",
		       sizes[s], p[1], p[4], a, b);
		p[1] = b;
		p[4] = a;
		for (int i = 0; i < BLOCKS; i++)
			free(p[i]);
	}
	return NULL;
}

static void latest_free_not_reused_first(void)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, latest_body, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		TEST_CASE(latest_free_not_reused_first),
	};
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
