/*
 * invariants.c - the debug build's invariant checkers catch each invariant
 * broken by hand.
 *
 * Linked against the static debug variant (TL_DEBUG, tlmalloc_debug_static),
 * so it reaches the internals: each case sets up a sound heap, checks that
 * the checker passes it, breaks one invariant of types.h through the
 * internal headers, and expects the checker's abort with its one line.
 * The breaking runs in a child (this program, exec'd with the case name and
 * "child"); the parent checks the signal and the line.  One row a case:
 *
 *   page_free_list_loops         a free block linked back to the one before
 *   page_link_outside_carved     a link to a block not carved yet
 *   page_block_on_two_lists      a block on local_free pushed on free too
 *   page_free_mark_lost          a free block whose mark is cleared
 *   page_avail_miscounted        avail one more than the free list's length
 *   page_remote_count_wrong      thread_free's count one more than its list
 *   page_owner_word_wrong        a queued page flagged full (tl_heap_check
 *                                finds it through tl_page_check)
 *   heap_page_in_wrong_queue     a page moved to another class's queue
 *   heap_queue_links_broken      a queue head whose prev is not NULL
 *   heap_pages_owned_wrong       pages_owned one more than the lists hold
 *   heap_direct_slot_stale       a direct slot pointing off its queue head
 *   pool_used_pages_wrong        a segment's used_pages one more
 *   pool_free_page_owned         a page of the pool's free list with an owner
 *   pool_abandoned_page_loops    an abandoned page's free list looping
 *   list_remove_not_listed       a cheap assertion: removing a page from a
 *                                list that does not hold it
 *   slow_path_checks_heap        pages_owned broken, then plain mallocs: the
 *                                library's own slow path aborts
 * and one that is not a death case:
 *   reclaimed_page_not_due       an exited thread's empty page, reclaimed on
 *                                the way to out of memory, is due for a
 *                                purge the pool does not know of (the
 *                                pool checker caught it from the fuzzer)
 *   sound_state_rejected         after threads allocated and freed across
 *                                each other, every checker passes
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "child.h"
#include "tlmalloc.h"
#include "tlmalloc/internal.h"

#if !defined(TL_DEBUG) || TL_DEBUG < 1
#error "invariants.c needs the debug variant (TL_DEBUG >= 1)"
#endif

#define BLOCK 64	/* a class of the direct table, not young-shared */

static tl_heap *heap(void)
{
	return tl_heap_local;
}

static tl_page *page_of(void *p)
{
	return tl_page_of(tl_segment_of(p), p);
}

/* A block of BLOCK bytes and its page, the head of its class queue, with
 * free blocks left; checked sound. */
static tl_page *sound_page(void **block)
{
	/* a few live blocks first, so that the young group has grown up */
	static void *keep[256];
	for (int i = 0; i < 256; i++)
		CHECK((keep[i] = malloc(BLOCK)) != NULL);
	*block = malloc(BLOCK);
	tl_page *page = page_of(*block);
	CHECK(page->free != NULL);
	CHECK(tl_heap_check(heap()));
	CHECK(tl_page_check(page, heap()->id, false));
	return page;
}

static void page_free_list_loops(void)
{
	void *p;
	tl_page *page = sound_page(&p);
	tl_block *b = page->free;
	CHECK(b->next != NULL);
	b->next->next = b;
	tl_page_check(page, heap()->id, false);
}

static void page_link_outside_carved(void)
{
	void *p;
	tl_page *page = sound_page(&p);
	CHECK(page->capacity < page->reserved);
	page->free->next = (tl_block *)(page->start +
					(size_t)page->capacity * BLOCK);
	tl_page_check(page, heap()->id, false);
}

static void page_block_on_two_lists(void)
{
	void *p;
	tl_page *page = sound_page(&p);
	free(p);
	CHECK(page->local_free == p);
	CHECK(tl_page_check(page, heap()->id, false));
	tl_block *b = p;
	b->next = page->free;
	page->free = b;
	tl_page_check(page, heap()->id, false);
}

static void page_free_mark_lost(void)
{
	void *p;
	tl_page *page = sound_page(&p);
	free(p);
	CHECK(tl_page_check(page, heap()->id, false));
	((tl_block *)p)->mark = 0;
	tl_page_check(page, heap()->id, false);
}

static void page_avail_miscounted(void)
{
	void *p;
	tl_page *page = sound_page(&p);
	tl_heap_collect_all(heap(), false);	/* counts the heads too */
	CHECK(tl_page_check(page, heap()->id, true));
	page->avail++;
	tl_page_check(page, heap()->id, true);
}

static void *free_it(void *p)
{
	free(p);
	return NULL;
}

static void page_remote_count_wrong(void)
{
	void *p;
	tl_page *page = sound_page(&p);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, free_it, p) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(tl_remote_count(tl_uptr_load_relaxed(&page->thread_free)) == 1);
	CHECK(tl_page_check(page, heap()->id, false));
	tl_uptr_store_relaxed(&page->thread_free,
			      tl_uptr_load_relaxed(&page->thread_free) +
			      TL_REMOTE_ONE);
	tl_page_check(page, heap()->id, false);
}

static void page_owner_word_wrong(void)
{
	void *p;
	tl_page *page = sound_page(&p);
	tl_uptr_store_relaxed(&page->owner, heap()->id | TL_OWNER_FULL);
	tl_heap_check(heap());
}

static void heap_page_in_wrong_queue(void)
{
	void *p;
	tl_page *page = sound_page(&p);
	unsigned cls = page->size_class;
	tl_list_remove(&heap()->queue[cls], page);
	tl_list_push_back(&heap()->queue[cls + 1], page);
	tl_heap_check(heap());
}

static void heap_queue_links_broken(void)
{
	void *p;
	tl_page *page = sound_page(&p);
	page->prev = page;
	tl_heap_check(heap());
}

static void heap_pages_owned_wrong(void)
{
	void *p;
	sound_page(&p);
	heap()->pages_owned++;
	tl_heap_check(heap());
}

static void heap_direct_slot_stale(void)
{
	void *p;
	sound_page(&p);
	CHECK(heap()->direct[BLOCK / 16] == page_of(p));
	heap()->direct[BLOCK / 16] = &tl_page_empty;
	tl_heap_check(heap());
}

static void pool_used_pages_wrong(void)
{
	void *p;
	sound_page(&p);
	CHECK(tl_pool_check());
	tl_segment_of(p)->used_pages++;
	tl_pool_check();
}

static void pool_free_page_owned(void)
{
	void *p;
	sound_page(&p);
	CHECK(tl_pool_check());
	tl_segment *seg = tl_segment_of(p);
	for (uint32_t i = 0; i < seg->page_count; i++) {
		tl_page *page = tl_segment_page(seg, i);
		if (page->in_pool) {
			tl_uptr_store_relaxed(&page->owner, heap()->id);
			tl_pool_check();
		}
	}
	CHECKF(0, "no free page in the segment");
}

/* A thread that leaves one live block: its page is abandoned at exit. */
static void *leave_block(void *arg)
{
	void *p;
	(void)arg;
	sound_page(&p);
	return p;
}

static void pool_abandoned_page_loops(void)
{
	pthread_t t;
	void *p;
	CHECK(pthread_create(&t, NULL, leave_block, NULL) == 0);
	CHECK(pthread_join(t, &p) == 0);
	tl_pool_purge(true);	/* its parked heap destroyed */
	tl_page *page = page_of(p);
	CHECK(tl_uptr_load_relaxed(&page->owner) == TL_OWNER_ABANDONED);
	CHECK(tl_pool_check());
	tl_block *b = page->free;
	CHECK(b != NULL && b->next != NULL);
	b->next->next = b;
	tl_pool_check();
}

static void list_remove_not_listed(void)
{
	void *p;
	tl_page *page = sound_page(&p);
	tl_page_list other = { NULL, NULL };
	tl_list_remove(&other, page);
}

static void slow_path_checks_heap(void)
{
	void *p;
	sound_page(&p);
	heap()->pages_owned++;
	/* the head page runs dry within a page: malloc's slow path runs */
	for (int i = 0; i < 100000; i++)
		CHECK(malloc(BLOCK) != NULL);
	CHECKF(0, "the slow path did not check the heap");
}

/* Threads that allocate and free their own blocks and each other's. */
static void *churn(void *arg)
{
	void **mine = arg;
	for (int i = 0; i < 4000; i++) {
		free(mine[i]);	/* the other thread's */
		mine[i] = malloc((size_t)(i % 700) * 3 + 1);
	}
	CHECK(tl_heap_check(heap()));
	return NULL;
}

static void *fill_free_exit(void *arg)
{
	static void *b[512];
	(void)arg;
	for (int i = 0; i < 512; i++)
		CHECK((b[i] = malloc(BLOCK)) != NULL);
	for (int i = 0; i < 512; i++)
		free(b[i]);
	return NULL;
}

static void reclaimed_page_not_due(void)
{
	pthread_t t;
	CHECK(tl_option_set("purge_delay", 3600000) == 0);
	CHECK(pthread_create(&t, NULL, fill_free_exit, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	tl_pool_reclaim_abandoned();	/* as out of memory does */
	CHECK(tl_pool_check());
}

static void sound_state_rejected(void)
{
	static void *blocks[2][4000];
	for (int t = 0; t < 2; t++)
		for (int i = 0; i < 4000; i++)
			blocks[t][i] = malloc((size_t)(i % 300) * 5 + 1);
	pthread_t th[2];
	for (int t = 0; t < 2; t++)
		CHECK(pthread_create(&th[t], NULL, churn, blocks[t]) == 0);
	for (int t = 0; t < 2; t++)
		CHECK(pthread_join(th[t], NULL) == 0);
	CHECK(tl_heap_check(heap()));
	CHECK(tl_pool_check());
	tl_heap_collect_all(heap(), true);
	CHECK(tl_pool_check());
}

static const struct test_case cases[] = {
	TEST_DEATH(page_free_list_loops, page_free_list_loops,
		   "tl_page_check", "a free list loops"),
	TEST_DEATH(page_link_outside_carved, page_link_outside_carved,
		   "tl_page_check", "a free list leaves the carved part"),
	TEST_DEATH(page_block_on_two_lists, page_block_on_two_lists,
		   "tl_page_check", "a block is on two free lists"),
	TEST_DEATH(page_free_mark_lost, page_free_mark_lost,
		   "tl_page_check", "a free block lacks its free mark"),
	TEST_DEATH(page_avail_miscounted, page_avail_miscounted,
		   "tl_page_check", "avail is not the length of free"),
	TEST_DEATH(page_remote_count_wrong, page_remote_count_wrong,
		   "tl_page_check",
		   "thread_free's count is not its list's length"),
	TEST_DEATH(page_owner_word_wrong, page_owner_word_wrong,
		   "tl_page_check", "owner word is not its list's"),
	TEST_DEATH(heap_page_in_wrong_queue, heap_page_in_wrong_queue,
		   "tl_heap_check", "a page in the queue of another class"),
	TEST_DEATH(heap_queue_links_broken, heap_queue_links_broken,
		   "tl_heap_check", "a class queue's links are broken"),
	TEST_DEATH(heap_pages_owned_wrong, heap_pages_owned_wrong,
		   "tl_heap_check",
		   "pages_owned is not the pages in its lists"),
	TEST_DEATH(heap_direct_slot_stale, heap_direct_slot_stale,
		   "tl_heap_check", "a direct slot is not its queue's head"),
	TEST_DEATH(pool_used_pages_wrong, pool_used_pages_wrong,
		   "tl_pool_check_locked",
		   "a segment's used_pages is not its pages out of the pool"),
	TEST_DEATH(pool_free_page_owned, pool_free_page_owned,
		   "tl_pool_check_locked", "a free page has an owner"),
	TEST_DEATH(pool_abandoned_page_loops, pool_abandoned_page_loops,
		   "tl_page_check", "a free list loops"),
	TEST_DEATH(list_remove_not_listed, list_remove_not_listed,
		   "tl_list_remove", "assertion failed: "),
	TEST_DEATH(slow_path_checks_heap, slow_path_checks_heap,
		   "tl_heap_check",
		   "pages_owned is not the pages in its lists"),
	TEST_CASE(reclaimed_page_not_due),
	TEST_CASE(sound_state_rejected),
};

int main(int argc, char **argv)
{
	return child_main(argc, argv, cases, TEST_COUNT(cases));
}
