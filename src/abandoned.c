/*
 * abandoned.c - the pool's pages that no live thread owns: a heap's pages
 * with live blocks, abandoned when its thread exits, and in a fork child
 * the pages of the threads that did not survive the fork (orphans, which
 * become abandoned pages).  Any heap adopts an abandoned page of the class
 * it needs; one whose blocks other threads have all freed since goes back
 * to the free pages (reclaimed), at a purge or when memory runs out.
 *
 * Why the orphans and the reclaim are here: an orphan is an abandoned page
 * not yet counted, and reclaiming walks the abandoned lists; both turn
 * pages nobody owns into abandoned or free ones, this file's one concept.
 *
 * Locking rule (pool.h): the abandoned lists and the orphans flag are the
 * pool's, under tl_pool.lock; under it, an owner word TL_OWNER_ABANDONED
 * means "on an abandoned list".  tl_pool_orphan_pages alone runs without
 * it: in the fork child, before any other thread can exist.
 */
#include <stdint.h>

#include "tlmalloc/internal.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"
#include "tlmalloc/pool.h"

/* Count an abandoned page left uncounted (pool lock: nobody owns it). */
static void count_uncounted_locked(tl_page *page)
{
	if (!page->uncounted)
		return;
	tl_page_count_avail(page);
	page->uncounted = 0;
}

/* An abandoned page of class cls, now heap's: under the lock, an owner
 * ABANDONED means "on the list". */
tl_page *tl_pool_adopt_locked(tl_heap *heap, unsigned cls)
{
	tl_pool_adopt_orphans_locked();
	tl_page *page = tl_pool.abandoned[cls].first;
	if (page == NULL)
		return NULL;
	tl_list_remove(&tl_pool.abandoned[cls], page);
	/* its given-back blocks are the new owner's to touch; those not
	 * given back yet stay (the new owner reuses them) */
	__atomic_store_n(&page->purged, 0, __ATOMIC_RELAXED);
	tl_pool.abandoned_dirty -= page->dirty;
	page->dirty = 0;
	tl_uptr_store_release(&page->owner, heap->id);
	return page;
}

tl_page *tl_pool_adopt_page(tl_heap *heap, unsigned cls)
{
	tl_lock_acquire(&tl_pool.lock);
	tl_page *page = tl_pool_adopt_locked(heap, cls);
	if (page != NULL)
		count_uncounted_locked(page);	/* it may not be a head */
	tl_lock_release(&tl_pool.lock);
	if (page != NULL)
		tl_page_collect(page);
	return page;
}

/*
 * At most this many abandoned pages wait to give back the memory inside
 * their free blocks (tl_pool_pin_abandoned_locked); the others give it
 * back as their heap leaves them.  Up to 16 MiB kept resident for the
 * purge delay, for no system calls and no page faults when a heap adopts
 * them in that time (docs/design.md, "Giving memory back").
 */
#define TL_ABANDONED_DIRTY_MAX 16

/* Worth giving back: a medium page at least half free (for the others the
 * system calls cost more than they give back). */
static bool worth_purging(const tl_page *page)
{
	return page->kind == TL_PAGE_MEDIUM &&
	       page->avail >= page->capacity / 2;
}

void tl_pool_abandon_pages(tl_page_list *pages)
{
	if (pages->first == NULL)
		return;
	uint64_t when = tl_os_now_ms() + (uint64_t)tl_option(TL_OPT_purge_delay);
	tl_page *page;
	/* Pages past the budget of deferred ones are given back now, still
	 * private to the exiting heap. */
	uint32_t want = 0;
	for (page = pages->first; page != NULL; page = page->next)
		want += worth_purging(page);
	uint32_t defer = 0;
	uint64_t purged = 0;
	if (want != 0) {
		tl_lock_acquire(&tl_pool.lock);
		uint32_t room = TL_ABANDONED_DIRTY_MAX -
				(tl_pool.abandoned_dirty < TL_ABANDONED_DIRTY_MAX
					 ? tl_pool.abandoned_dirty
					 : TL_ABANDONED_DIRTY_MAX);
		defer = want < room ? want : room;
		tl_lock_release(&tl_pool.lock);
	}
	for (page = pages->first; page != NULL; page = page->next) {
		page->dirty = 0;
		if (!worth_purging(page))
			continue;
		if (defer > 0) {
			defer--;
			page->dirty = 1;
		} else {
			tl_page_purge_free(page);
			purged += __atomic_load_n(&page->purged,
						  __ATOMIC_RELAXED);
		}
	}
	tl_lock_acquire(&tl_pool.lock);
	tl_pool.purged += purged;
	while ((page = pages->first) != NULL) {
		tl_list_remove(pages, page);
		tl_list_push_back(&tl_pool.abandoned[page->size_class], page);
		/* Under the lock, once listed: an ABANDONED owner means "on
		 * the list" (or pinned by a purge, below). */
		tl_uptr_store_relaxed(&page->owner, TL_OWNER_ABANDONED);
		/* dirty: its free blocks are given back when due, unless a
		 * heap adopts it first (tl_pool_pin_abandoned_locked) */
		page->purge_at_ms = when;
		tl_pool.abandoned_dirty += page->dirty;
	}
	/* Their blocks are often freed by other threads soon after: a purge
	 * pass then finds the pages empty and takes them back.  Those still
	 * live by then give back the memory inside their free blocks. */
	tl_pool_note_purge_at_locked(when);
	bool wake = tl_pool.threaded;
	tl_assert_expensive(tl_pool_check_locked());
	tl_lock_release(&tl_pool.lock);
	if (wake)
		tl_purger_wake();
}

/* Hand a counted page back: empty to the pool, else onto live (abandoned
 * together, under one lock). */
static void release_page(tl_page *page, tl_page_list *live)
{
	tl_page_collect(page);
	if (tl_page_is_empty(page))
		tl_pool_give_page(page);
	else
		tl_list_push_back(live, page);
}

/*
 * Every page of a heap that no thread will use again (tl_heap_destroy's,
 * or a parked heap's whose time ran out, purge.c): its small pages of the
 * queues are abandoned as they are, uncounted (tl_page.uncounted); the
 * others are counted: empty ones go to the pool, the rest are abandoned.
 * Its cached empty pages go to the pool.  The heap struct is left empty.
 *
 * Why not count the small pages: a thread's free lists are cache misses,
 * one a block, and a server whose threads are replaced after a thousand
 * requests (larson) spent a third of its time counting them at exits.
 * The heap that adopts such a page makes it its queue's head, which needs
 * no count; only a page nobody adopts is counted, by a reclaim, in a
 * purge.  Medium pages are still counted: the memory inside their free
 * blocks is given back (tl_pool_abandon_pages), which needs the count, and
 * their lists are short.
 */
void tl_pool_release_heap(tl_heap *heap)
{
	tl_page_list live = { NULL, NULL };
	for (uint64_t m = heap->classes; m != 0; m &= m - 1) {
		unsigned cls = (unsigned)__builtin_ctzll(m);
		tl_page_list *q = &heap->queue[cls];
		if (q->first == NULL)
			continue;
		if (tl_class_kind(cls) == TL_PAGE_SMALL) {
			tl_page *page;
			while ((page = q->first) != NULL) {
				tl_list_remove(q, page);
				page->uncounted = 1;
				tl_list_push_back(&live, page);
			}
			continue;
		}
		tl_page_count_avail(q->first);
		tl_page *page;
		while ((page = q->first) != NULL) {
			tl_list_remove(q, page);
			release_page(page, &live);
		}
	}
	/* full pages: avail is exact (0), only their thread frees wait;
	 * under full_lock, out of reach of a thread giving one away */
	tl_page *page;
	tl_lock_acquire(&heap->full_lock);
	while ((page = heap->full.first) != NULL) {
		tl_list_remove(&heap->full, page);
#if !TL_SECURE
		tl_page_set_full_heap(page, 0);
#endif
		if (page->kind == TL_PAGE_SMALL)
			tl_list_push_back(&live, page);
		else
			release_page(page, &live);
	}
	tl_u32_store_relaxed(&heap->donated, 0);
	tl_lock_release(&heap->full_lock);
	tl_pool_abandon_pages(&live);
	while ((page = heap->empty.first) != NULL) {
		tl_list_remove(&heap->empty, page);
		tl_pool_give_page(page);
	}
	heap->empty_count = 0;
	heap->pages_owned = 0;
}

void tl_pool_count_abandoned_locked(void)
{
	for (unsigned cls = 1; cls < TL_CLASSES; cls++)
		for (tl_page *page = tl_pool.abandoned[cls].first; page != NULL;
		     page = page->next)
			if (page->uncounted) {
				count_uncounted_locked(page);
				tl_page_collect(page);
			}
}

/* An empty page nobody owns goes back to the free list, due now. */
static void give_unowned_locked(tl_page *page, uint64_t now)
{
	tl_page_retire_counts(page);	/* its class's figures keep them */
	tl_uptr_store_relaxed(&page->owner, TL_OWNER_FREE);
	page->dirty = 1;
	page->purge_at_ms = now;
	tl_pool_note_purge_at_locked(now);	/* due: the next purge takes it */
	page->in_pool = 1;
	tl_segment_of(page->start)->used_pages--;
	tl_list_push_front(&tl_pool.free_pages[page->kind], page);
}

/*
 * Whether collecting an abandoned page's frees could empty it.  A counted
 * page holds avail + thread_free's count free blocks when its own frees
 * were collected: one that stays short of its capacity is passed by with
 * no walk of the blocks other threads freed (cold ones, under the lock).
 */
static bool may_empty_locked(const tl_page *page)
{
	if (page->uncounted)
		return true;
	uintptr_t w = tl_uptr_load_relaxed(&page->thread_free);
	if (w == 0)
		return false;
	if (page->local_free != NULL || page->reserved >= TL_REMOTE_COUNT_MAX)
		return true;
	return page->avail + tl_remote_count(w) >= page->capacity;
}

/*
 * Abandoned pages whose blocks other threads have all freed since come back
 * to the pool as free, dirty pages, due now.  Nobody owns an abandoned page:
 * under the pool lock its lists are ours to count (other threads only push
 * on thread_free, atomically).
 */
void tl_pool_reclaim_abandoned_locked(uint64_t now)
{
	for (unsigned cls = 1; cls < TL_CLASSES; cls++) {
		tl_page *page, *next;
		for (page = tl_pool.abandoned[cls].first; page != NULL;
		     page = next) {
			next = page->next;
			if (!may_empty_locked(page))
				continue;
			count_uncounted_locked(page);
			tl_page_collect(page);
			if (!tl_page_is_empty(page))
				continue;
			tl_list_remove(&tl_pool.abandoned[cls], page);
			tl_pool.abandoned_dirty -= page->dirty;
			give_unowned_locked(page, now);
		}
	}
}

/*
 * The abandoned medium pages whose free blocks are due to be given back
 * (all of them, if force) leave their lists, pinned: owner ABANDONED and
 * on no list, so no heap adopts one and no reclaim counts it while its
 * free blocks are madvised with the lock released.  Why not at the
 * thread's exit: a program whose threads come and go has the next
 * thread adopt the page within the purge delay, and then the system
 * calls and the page faults that refill the blocks are all saved
 * (docs/design.md, "Giving memory back").  earliest: lowered to the
 * first of the others.
 */
tl_page *tl_pool_pin_abandoned_locked(uint64_t now, bool force,
				      uint64_t *earliest)
{
	tl_page *todo = NULL;
	for (unsigned cls = 1; cls < TL_CLASSES; cls++) {
		tl_page *page, *next;
		for (page = tl_pool.abandoned[cls].first; page != NULL;
		     page = next) {
			next = page->next;
			if (!page->dirty)
				continue;
			if (!force && page->purge_at_ms > now) {
				if (page->purge_at_ms < *earliest)
					*earliest = page->purge_at_ms;
				continue;
			}
			tl_list_remove(&tl_pool.abandoned[cls], page);
			page->dirty = 0;
			tl_pool.abandoned_dirty--;
			page->next = todo;
			todo = page;
		}
	}
	return todo;
}

void tl_pool_purge_abandoned(tl_page *todo)
{
	tl_page *next;
	for (tl_page *page = todo; page != NULL; page = page->next)
		tl_page_purge_free(page);
	tl_lock_acquire(&tl_pool.lock);
	for (tl_page *page = todo; page != NULL; page = next) {
		next = page->next;
		tl_pool.purged += __atomic_load_n(&page->purged,
						  __ATOMIC_RELAXED);
		tl_list_push_back(&tl_pool.abandoned[page->size_class], page);
	}
	tl_assert_expensive(tl_pool_check_locked());
	tl_lock_release(&tl_pool.lock);
}

/*
 * fork: in the child only the forking thread runs on.  The pages the other
 * threads' heaps owned (not the forking thread's, not the shared heap's,
 * not the heap profiler's: those heaps live on) are marked orphaned by
 * tl_pool_fork_child, before any new thread could be given a dead one's
 * thread pointer for its id; frees into them go the way of abandoned
 * pages (thread_free).  Here, at the first page taken or
 * purge after the fork, they are counted and become abandoned pages, or
 * free ones if empty, so blocks the child frees there are reused.  The
 * counting is not done in the fork handler, so a child that only execs
 * pays for the marking walk alone.  (A dead heap's few cached empty pages
 * stay where they are.)
 */
static void for_each_page_locked(void (*fn)(tl_page *, uint64_t), uint64_t arg)
{
	for (tl_segment *seg = tl_pool.segments; seg != NULL; seg = seg->next) {
		if (seg->kind == TL_PAGE_HUGE)
			continue;
		for (uint32_t i = 0; i < seg->page_count; i++) {
			tl_page *page = tl_segment_page(seg, i);
			if (!page->in_pool)
				fn(page, arg);
		}
	}
}

/* arg: the address of the three ids whose pages stay, the forking
 * thread's, the shared heap's and the profiler's (tl_pool_orphan_pages):
 * those heaps live on in the child with their lists. */
static void orphan_page(tl_page *page, uint64_t arg)
{
	const uintptr_t *keep = (const uintptr_t *)(uintptr_t)arg;
	uintptr_t owner = tl_uptr_load_relaxed(&page->owner);
	uintptr_t id = owner & ~(uintptr_t)TL_OWNER_FULL;
	if (owner < TL_OWNER_MARKERS || id == keep[0] || id == keep[1] ||
	    id == keep[2])
		return;
#if !TL_SECURE
	/* out of its dead heap's full list for good: not to be given away */
	tl_page_set_full_heap(page, 0);
#endif
	tl_uptr_store_relaxed(&page->owner, TL_OWNER_ORPHAN);
	tl_pool.orphans = true;
}

void tl_pool_orphan_pages(uintptr_t self, uintptr_t shared,
			  uintptr_t profiler)
{
	const uintptr_t keep[3] = { self, shared, profiler };
	for_each_page_locked(orphan_page, (uint64_t)(uintptr_t)keep);
}

/* arg: now, in ms. */
static void adopt_orphan_locked(tl_page *page, uint64_t arg)
{
	if (tl_uptr_load_relaxed(&page->owner) != TL_OWNER_ORPHAN)
		return;
	tl_page_count_avail(page);	/* a queue head's avail meant nothing */
	tl_page_collect(page);
	if (tl_page_is_empty(page)) {
		give_unowned_locked(page, arg);
		return;
	}
	tl_uptr_store_relaxed(&page->owner, TL_OWNER_ABANDONED);
	page->dirty = 0;	/* its free blocks stay resident */
	tl_list_push_back(&tl_pool.abandoned[page->size_class], page);
}

void tl_pool_adopt_orphans_locked(void)
{
	if (tl_likely(!tl_pool.orphans))
		return;
	tl_pool.orphans = false;
	uint64_t now = tl_os_now_ms();
	for_each_page_locked(adopt_orphan_locked, now);
	tl_pool_note_purge_at_locked(now);
}

void tl_pool_reclaim_abandoned(void)
{
	tl_lock_acquire(&tl_pool.lock);
	tl_pool_adopt_orphans_locked();
	tl_pool_reclaim_abandoned_locked(tl_os_now_ms());
	tl_lock_release(&tl_pool.lock);
}
