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
 *                                 page's (20000).  The older free blocks
 *                                 are other threads' frees, which malloc
 *                                 collects into the page's free list when
 *                                 it has no block left (larger blocks are
 *                                 carved one at a time: no carved block
 *                                 is left over)
 *   round_not_started_on_first_page
 *                                 a round of 1 KiB blocks over three
 *                                 pages, freed in the order allocated: the
 *                                 next malloc's block is not in the lowest
 *                                 of the pages (the one the round started
 *                                 on; the head the round ended on gave way
 *                                 to it: heap.c, page_takes_head)
 *   head_given_to_page_with_one_free
 *                                 a head that has handed out one block
 *                                 since it became the head gives way to a
 *                                 lower page back from the full list with
 *                                 one free block (the eighth of page_takes_head)
 *   head_carves_past_freed_page   a head with no free block left but room
 *                                 to carve, and behind it a page with a
 *                                 quarter of its blocks freed: the next
 *                                 mallocs take that page's blocks, not
 *                                 fresh ones (heap.c, head_yields)
 *   dry_head_not_behind_freed_page
 *                                 two pages of eight 8 KiB blocks: the
 *                                 head, carved to its end, runs dry while
 *                                 the page behind it holds a block its
 *                                 owner freed; it goes behind that page,
 *                                 not to the full list, so the owner's
 *                                 next free into it does not take the head
 *                                 back, and the latest free, into the new
 *                                 head, comes back first (heap.c,
 *                                 dry_head_rotates)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { BLOCKS = 6 };

/* body(arg) in a new thread, waited for: each case in a new heap (and
 * other threads' frees where a case needs them). */
static void in_new_thread(void *(*body)(void *), void *arg)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, body, arg) == 0);
	CHECK(pthread_join(t, NULL) == 0);
}

/* Another thread's frees of p[0], p[2] and p[3]. */
static void *free_three(void *arg)
{
	void **p = arg;
	free(p[0]);
	free(p[2]);
	free(p[3]);
	return NULL;
}

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
		in_new_thread(free_three, p);
		/* a block carved before, or (none left) one of those three:
		 * the two others wait on the page's free list */
		void *q = malloc(sizes[s]);
		CHECK(q != NULL);
		free(p[1]);
		free(p[4]);
		void *a = malloc(sizes[s]), *b = malloc(sizes[s]);
		CHECKF(a == p[4] && b == p[1],
		       "size %zu: freed %p then %p, got back %p then %p",
		       sizes[s], p[1], p[4], a, b);
		free(q);
		free(a);
		free(b);
		free(p[5]);
	}
	return NULL;
}

static void latest_free_not_reused_first(void)
{
	in_new_thread(latest_body, NULL);
}

enum { ROUND_SIZE = 1024, ROUND_MAX = 512 };

/* The 64 KiB slice (a small page) that holds p. */
static uintptr_t page_of(const void *p)
{
	return (uintptr_t)p >> 16;
}

/* Allocates 1 KiB blocks into p until on_third of them are on a third
 * page (the head then), the first two full; returns the count, and the
 * first and the last page.  The pages come from a fresh segment in
 * address order, which both cases need (the page back from the full list
 * must lie below the head). */
static int fill_pages(void **p, int on_third, uintptr_t *first,
		      uintptr_t *last)
{
	int n = 0, pages = 1;
	for (; n < ROUND_MAX; n++) {
		p[n] = malloc(ROUND_SIZE);
		CHECK(p[n] != NULL);
		memset(p[n], n, ROUND_SIZE);
		if (n > 0 && page_of(p[n]) != page_of(p[n - 1]))
			pages++;
		if (pages == 3)
			break;
	}
	CHECKF(pages == 3, "%d blocks of %d bytes stayed on %d pages",
	       ROUND_MAX, ROUND_SIZE, pages);
	for (int i = 1; i < on_third; i++) {
		p[++n] = malloc(ROUND_SIZE);
		CHECK(p[n] != NULL && page_of(p[n]) == page_of(p[n - 1]));
	}
	*first = page_of(p[0]);
	*last = page_of(p[n]);
	CHECKF(*first < *last, "pages %#lx then %#lx: not in address order",
	       (unsigned long)*first, (unsigned long)*last);
	return n + 1;
}

static void *round_body(void *arg)
{
	void *p[ROUND_MAX + 64];
	uintptr_t first, last;
	(void)arg;
	int n = fill_pages(p, 32, &first, &last);
	for (int i = 0; i < n; i++)
		free(p[i]);
	void *q = malloc(ROUND_SIZE);
	CHECKF(page_of(q) == first,
	       "round on pages %#lx..%#lx: the next block %p is on page %#lx",
	       (unsigned long)first, (unsigned long)last, q,
	       (unsigned long)page_of(q));
	free(q);
	return NULL;
}

static void round_not_started_on_first_page(void)
{
	in_new_thread(round_body, NULL);
}

static void *one_free_body(void *arg)
{
	void *p[ROUND_MAX + 64];
	uintptr_t first, last;
	(void)arg;
	int n = fill_pages(p, 1, &first, &last);
	free(p[0]);	/* the first page, full, back with one free block */
	void *q = malloc(ROUND_SIZE);
	CHECKF(page_of(q) == last,
	       "the head (page %#lx) gave way to page %#lx: block %p",
	       (unsigned long)last, (unsigned long)first, q);
	free(q);
	for (int i = 1; i < n; i++)
		free(p[i]);
	return NULL;
}

static void head_given_to_page_with_one_free(void)
{
	in_new_thread(one_free_body, NULL);
}

/* Pages 1 and 2 full, the head page 3 with one block handed out; a
 * quarter of page 2 freed (it goes behind the head: page 3 has handed
 * out too few blocks to give way); then the head's carved blocks run out
 * (a carve is 4 KiB, 4 blocks) and the next malloc takes page 2's. */
static void *carve_body(void *arg)
{
	void *p[ROUND_MAX + 64];
	uintptr_t first, last;
	(void)arg;
	int n = fill_pages(p, 1, &first, &last);
	int second = 0;
	while (page_of(p[second]) == first)
		second++;
	uintptr_t middle = page_of(p[second]);
	int freed = 0;
	for (int i = second; i < n && page_of(p[i]) == middle; i++) {
		if (i % 4 == 0) {
			free(p[i]);
			p[i] = NULL;
			freed++;
		}
	}
	CHECK(freed >= 8);
	void *q[8];
	int on_middle = 0;
	for (int i = 0; i < 8; i++) {
		q[i] = malloc(ROUND_SIZE);
		CHECK(q[i] != NULL);
		on_middle += page_of(q[i]) == middle;
	}
	CHECKF(on_middle > 0, "8 mallocs after %d blocks of page %#lx were "
	       "freed: none from it (the head, page %#lx, carved anew)",
	       freed, (unsigned long)middle, (unsigned long)last);
	for (int i = 0; i < 8; i++)
		free(q[i]);
	for (int i = 0; i < n; i++)
		free(p[i]);
	return NULL;
}

static void head_carves_past_freed_page(void)
{
	in_new_thread(carve_body, NULL);
}

/* The sequence of dry_head_not_behind_freed_page: which block the last
 * malloc returns tells where the first page went when it ran dry. */
enum { DRY_SIZE = 8192, DRY_BLOCKS = 16 };

static void *dry_body(void *arg)
{
	void *p[DRY_BLOCKS];
	(void)arg;
	for (int i = 0; i < DRY_BLOCKS; i++) {
		p[i] = malloc(DRY_SIZE);
		CHECK(p[i] != NULL);
		memset(p[i], i, DRY_SIZE);
	}
	uintptr_t first = page_of(p[0]), second = page_of(p[8]);
	CHECKF(page_of(p[7]) == first && page_of(p[15]) == second &&
	       first != second, "blocks of %d bytes: not eight a page",
	       DRY_SIZE);
	/* a fresh segment's pages, in address order: the first page,
	 * back from the full list, takes the head (page_takes_head) */
	CHECKF(first < second, "pages %#lx then %#lx: not in address order",
	       (unsigned long)first, (unsigned long)second);
	/* the first page back with p[3] free, the second's p[10] freed */
	free(p[3]);
	free(p[10]);
	void *a = malloc(DRY_SIZE);	/* p[3] or p[10] */
	void *b = malloc(DRY_SIZE);	/* the other: a page runs dry */
	CHECKF((a == p[3] && b == p[10]) || (a == p[10] && b == p[3]),
	       "freed %p and %p, got back %p and %p", p[3], p[10], a, b);
	/* both pages dry now; the owner frees into each, the first page's
	 * block first */
	free(p[5]);
	free(p[12]);
	void *c = malloc(DRY_SIZE);
	CHECKF(c == p[12], "freed %p (first page) then %p (second page): got "
	       "back %p, not the latest", p[5], p[12], c);
	free(a);
	free(b);
	free(c);
	for (int i = 0; i < DRY_BLOCKS; i++)
		if (i != 3 && i != 5 && i != 10 && i != 12)
			free(p[i]);
	return NULL;
}

static void dry_head_not_behind_freed_page(void)
{
	in_new_thread(dry_body, NULL);
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		TEST_CASE(latest_free_not_reused_first),
		TEST_CASE(round_not_started_on_first_page),
		TEST_CASE(head_given_to_page_with_one_free),
		TEST_CASE(head_carves_past_freed_page),
		TEST_CASE(dry_head_not_behind_freed_page),
	};
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
