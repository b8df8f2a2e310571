/*
 * purge.c - giving free memory back to the OS.  A page given back dirty
 * gets purge_at = now + purge delay (pool.c).  Any pool call that finds the
 * earliest purge_at passed purges what is due; in a program with threads a
 * purger thread also does it while it is idle.  A segment whose pages are
 * all free and due is unmapped whole; a cached huge segment whose time ran
 * out is unmapped (huge_cache.c); a due dirty page is madvised.  Out of
 * memory, everything is purged at once (tl_pool_unmap_free).
 *
 * Locking rule (pool.h): the lists are walked under tl_pool.lock, and the
 * system calls made with it released: a page being purged is pinned
 * (counted in its segment's used_pages) and out of every list meanwhile,
 * and a segment to unmap has left the segment list.
 */
#include <stdint.h>

#include "tlmalloc/internal.h"
#include "tlmalloc/os.h"
#include "tlmalloc/pool.h"

/* Every free page of seg is due (or force): drop it whole. */
static bool segment_due_locked(const tl_segment *seg, uint64_t now, bool force)
{
	if (seg->kind == TL_PAGE_HUGE || seg->used_pages != 0)
		return false;
	if (force)
		return true;
	for (uint32_t i = 0; i < seg->page_count; i++) {
		const tl_page *page = tl_segment_page(seg, i);
		if (page->in_pool && page->dirty && page->purge_at_ms > now)
			return false;
	}
	return true;
}

static void drop_segment_locked(tl_segment *seg)
{
	for (uint32_t i = 0; i < seg->page_count; i++) {
		tl_page *page = tl_segment_page(seg, i);
		if (!page->in_pool)
			continue;
		tl_list_remove(&tl_pool.free_pages[seg->kind], page);
	}
	tl_pool_unregister_locked(seg);
}

/* Step 2, under the lock: the segments whose free pages are all due (all,
 * if force) leave the pool, for the unmap list (linked by next). */
static tl_segment *take_due_segments_locked(uint64_t now, bool force)
{
	tl_segment *unmap = NULL, *next;
	for (tl_segment *seg = tl_pool.segments; seg != NULL; seg = next) {
		next = seg->next;
		if (!segment_due_locked(seg, now, force))
			continue;
		drop_segment_locked(seg);
		seg->next = unmap;
		unmap = seg;
	}
	return unmap;
}

/* Step 4, under the lock: the dirty free pages that are due (all, if
 * force) leave the free lists pinned, for the purge list (linked by next);
 * earliest: lowered to the first of the others. */
static tl_page *pin_due_pages_locked(uint64_t now, bool force,
				     uint64_t *earliest)
{
	tl_page *todo = NULL;
	for (int kind = 0; kind < 2; kind++) {
		tl_page *pnext;
		for (tl_page *page = tl_pool.free_pages[kind].first;
		     page != NULL; page = pnext) {
			pnext = page->next;
			if (!page->dirty)
				continue;
			if (!force && page->purge_at_ms > now) {
				if (page->purge_at_ms < *earliest)
					*earliest = page->purge_at_ms;
				continue;
			}
			tl_list_remove(&tl_pool.free_pages[kind], page);
			page->in_pool = 0;	/* pinned while purged */
			tl_segment_of(page->start)->used_pages++;
			page->next = todo;
			todo = page;
		}
	}
	return todo;
}

/* Step 5, lock released: unmap the segments, then count them. */
static void unmap_segments(tl_segment *unmap)
{
	size_t unmapped = 0;
	tl_segment *next;
	for (tl_segment *seg = unmap; seg != NULL; seg = next) {
		next = seg->next;
		tl_segment_unmap(seg);
		unmapped++;
	}
	if (unmapped != 0) {
		tl_lock_acquire(&tl_pool.lock);
		tl_pool.unmapped += unmapped;
		tl_lock_release(&tl_pool.lock);
	}
}

/* Step 6: madvise the pinned pages with the lock released, then take the
 * lock and put them back on the free lists, clean. */
static void purge_pinned_pages(tl_page *todo)
{
	for (tl_page *page = todo; page != NULL; page = page->next)
		tl_os_purge(page->start, tl_page_area_size(page));
	tl_lock_acquire(&tl_pool.lock);
	tl_page *pnext;
	for (tl_page *page = todo; page != NULL; page = pnext) {
		pnext = page->next;
		tl_pool.purged += tl_page_area_size(page);
		page->dirty = 0;
		page->in_pool = 1;
		tl_segment_of(page->start)->used_pages--;
		tl_list_push_back(&tl_pool.free_pages[page->kind], page);
	}
	tl_assert_expensive(tl_pool_check_locked());
	tl_lock_release(&tl_pool.lock);
}

/*
 * Purge what is due (everything, if force), in steps: under the lock,
 * (1) orphans are counted and abandoned pages emptied since become free
 * pages, due now (abandoned.c); (2) the segments wholly free and due leave
 * the pool; (3) the cached huge segments that are due leave the cache
 * (huge_cache.c); (4) the dirty free pages that are due are pinned, and
 * the next purge is set to the first of the others.  With the lock
 * released, (5) the segments are unmapped and (6) the pinned pages
 * madvised and given back clean.  True when anything was given back.
 */
/* Step 0: the parked heaps that are due hand their pages back, as at
 * their threads' exits: free or abandoned, for the steps after it.  True
 * if there were any. */
static bool destroy_parked(bool force)
{
	uint64_t earliest = UINT64_MAX;	/* the others': set below */
	tl_lock_acquire(&tl_pool.lock);
	tl_heap *due = tl_pool_take_parked_locked(tl_os_now_ms(), force,
						  &earliest);
	tl_lock_release(&tl_pool.lock);
	bool any = due != NULL;
	for (tl_heap *next; due != NULL; due = next) {
		next = due->next_free;
		tl_pool_release_heap(due);
		tl_pool_heap_free(due);
	}
	return any;
}

bool tl_pool_purge(bool force)
{
	tl_lock_acquire(&tl_pool.lock);
	uint64_t now = tl_os_now_ms();
	if (!force && now < tl_pool.next_purge_ms) {
		tl_lock_release(&tl_pool.lock);
		return false;
	}
	tl_lock_release(&tl_pool.lock);
	bool parked = destroy_parked(force);
	tl_lock_acquire(&tl_pool.lock);
	now = tl_os_now_ms();
	tl_pool_adopt_orphans_locked();
	tl_pool_reclaim_abandoned_locked(now);
	tl_segment *unmap = take_due_segments_locked(now, force);
	uint64_t earliest = UINT64_MAX;
	unmap = tl_pool_expire_huge_locked(now, force, unmap, &earliest);
	tl_page *todo = pin_due_pages_locked(now, force, &earliest);
	tl_page *abandoned = tl_pool_pin_abandoned_locked(now, force,
							  &earliest);
	/* the parked heaps left (and any parked since step 0) */
	tl_pool_take_parked_locked(0, false, &earliest);
	tl_pool.next_purge_ms = earliest;
	tl_assert_expensive(tl_pool_check_locked());
	tl_lock_release(&tl_pool.lock);

	bool released = parked || unmap != NULL || todo != NULL ||
			abandoned != NULL;
	unmap_segments(unmap);
	if (todo != NULL)
		purge_pinned_pages(todo);
	if (abandoned != NULL)
		tl_pool_purge_abandoned(abandoned);
	return released;
}

bool tl_pool_unmap_free(void)
{
	tl_lock_acquire(&tl_pool.lock);
	uint64_t before = tl_pool.unmapped;
	tl_lock_release(&tl_pool.lock);
	tl_pool_purge(true);
	tl_lock_acquire(&tl_pool.lock);
	bool unmapped = tl_pool.unmapped != before;
	tl_lock_release(&tl_pool.lock);
	return unmapped;
}

bool tl_pool_purge_pending(void)
{
	tl_lock_acquire(&tl_pool.lock);
	bool pending = tl_pool.next_purge_ms != UINT64_MAX;
	tl_lock_release(&tl_pool.lock);
	return pending;
}
