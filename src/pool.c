/*
 * pool.c - the global pool's store: the list of every live segment (their
 * bytes mapped), the free pages carved of them, by kind, and the heap
 * structs; what a heap takes from it and gives back.  A page given back
 * dirty is due for a purge (purge.c) after the purge delay.  The other
 * files of the pool (pool.h names them) keep its other parts: abandoned
 * pages, the huge cache, purging, the statistics walk, the checker.
 *
 * Locking rule (pool.h, where the pool's fields are declared): every field
 * of tl_pool is read and written under tl_pool.lock, the only lock on any
 * allocation path; functions ending in _locked expect the caller to hold
 * it; system calls are made with the lock released.
 */
#include <stdint.h>

#include "tlmalloc/internal.h"
#include "tlmalloc/pool.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"

#define TL_HEAP_AREA TL_SEGMENT_SIZE

struct tl_pool tl_pool = {
	.lock = TL_LOCK_INIT,
	.next_purge_ms = UINT64_MAX,
};

void tl_pool_register_segment(tl_segment *seg)
{
	tl_lock_acquire(&tl_pool.lock);
	seg->prev = NULL;
	seg->next = tl_pool.segments;
	if (tl_pool.segments != NULL)
		tl_pool.segments->prev = seg;
	tl_pool.segments = seg;
	tl_pool.mapped += seg->map_size;
	if (tl_pool.mapped > tl_pool.mapped_peak)
		tl_pool.mapped_peak = tl_pool.mapped;
	if (++tl_pool.segment_count > tl_pool.segments_peak)
		tl_pool.segments_peak = tl_pool.segment_count;
	if (seg->kind != TL_PAGE_HUGE) {
		for (uint32_t i = 0; i < seg->page_count; i++) {
			tl_page *page = tl_segment_page(seg, i);
			size_t size = tl_page_area_size(page);
			if (size == 0)
				continue;
			page->in_pool = 1;
			tl_list_push_back(&tl_pool.free_pages[seg->kind], page);
		}
	}
	tl_lock_release(&tl_pool.lock);
}

void tl_pool_unregister_locked(tl_segment *seg)
{
	if (seg->kind != TL_PAGE_HUGE)
		for (uint32_t i = 0; i < seg->page_count; i++)
			tl_page_retire_counts(tl_segment_page(seg, i));
	if (seg->prev != NULL)
		seg->prev->next = seg->next;
	else
		tl_pool.segments = seg->next;
	if (seg->next != NULL)
		seg->next->prev = seg->prev;
	tl_pool.mapped -= seg->map_size;
	tl_pool.segment_count--;
}

void tl_pool_unregister_segment(tl_segment *seg)
{
	tl_lock_acquire(&tl_pool.lock);
	tl_pool_unregister_locked(seg);
	tl_lock_release(&tl_pool.lock);
}

void tl_pool_segment_resized(tl_segment *seg, size_t map_size)
{
	tl_lock_acquire(&tl_pool.lock);
	tl_pool.mapped = tl_pool.mapped - seg->map_size + map_size;
	if (tl_pool.mapped > tl_pool.mapped_peak)
		tl_pool.mapped_peak = tl_pool.mapped;
	seg->map_size = map_size;
	tl_lock_release(&tl_pool.lock);
	tl_segment_huge_sized(map_size);
}

static tl_page *take_free_locked(enum tl_page_kind kind)
{
	tl_page *page = tl_pool.free_pages[kind].first;
	if (page == NULL)
		return NULL;
	tl_assert(page->in_pool &&
		  tl_uptr_load_relaxed(&page->owner) == TL_OWNER_FREE);
	tl_list_remove(&tl_pool.free_pages[kind], page);
	page->in_pool = 0;
	tl_segment_of(page->start)->used_pages++;
	return page;
}

/* A free page formatted for class cls, now heap's. */
static tl_page *own_free_page(tl_heap *heap, unsigned cls, tl_page *page)
{
	tl_page_format(page, cls);
	/* release: a statistics reader that sees the owner sees the format */
	tl_uptr_store_release(&page->owner, heap->id);
	return page;
}

tl_page *tl_pool_take_page(tl_heap *heap, unsigned cls)
{
	enum tl_page_kind kind = tl_class_kind(cls);
	tl_page *page;
	for (;;) {
		tl_lock_acquire(&tl_pool.lock);
		page = tl_pool_adopt_locked(heap, cls);
		if (page != NULL) {
			bool counted = !page->uncounted;
			tl_assert_expensive(tl_pool_check_locked());
			tl_lock_release(&tl_pool.lock);
			/* it becomes its queue's head, which needs no count:
			 * an uncounted page's lists are taken as they run dry
			 * (tl_page_collect_head) */
			if (counted)
				tl_page_collect(page);
			else
				page->uncounted = 0;
			tl_assert_internal(tl_page_check(page, heap->id,
							 counted));
			return page;
		}
		page = take_free_locked(kind);
		tl_assert_expensive(tl_pool_check_locked());
		tl_lock_release(&tl_pool.lock);
		if (page != NULL)
			break;
		tl_segment *seg = tl_segment_create(kind);
		if (seg == NULL)
			return NULL;
		tl_pool_register_segment(seg);
	}
	return own_free_page(heap, cls, page);
}

/*
 * Out of memory: a free page of the other kind.  Any page holds blocks of
 * any class that fits in it (the descriptors of its slices find them):
 * a 1 MiB page holds small blocks, a 64 KiB page medium ones up to 64 KiB.
 */
tl_page *tl_pool_take_other_kind(tl_heap *heap, unsigned cls)
{
	enum tl_page_kind kind = tl_class_kind(cls) == TL_PAGE_SMALL
					 ? TL_PAGE_MEDIUM : TL_PAGE_SMALL;
	if (kind == TL_PAGE_SMALL && tl_class_size[cls] > TL_SLICE_SIZE)
		return NULL;
	tl_lock_acquire(&tl_pool.lock);
	tl_page *page = take_free_locked(kind);
	tl_lock_release(&tl_pool.lock);
	return page != NULL ? own_free_page(heap, cls, page) : NULL;
}

/* An empty page nobody owns joins the free list (pool lock held). */
static void give_locked(tl_page *page, uint64_t now)
{
	tl_segment *seg = tl_segment_of(page->start);
	tl_assert(!page->in_pool && seg->used_pages > 0);
	page->in_pool = 1;
	seg->used_pages--;
	if (page->dirty) {
		page->purge_at_ms = now + (uint64_t)tl_option(TL_OPT_purge_delay);
		if (page->purge_at_ms < tl_pool.next_purge_ms)
			tl_pool.next_purge_ms = page->purge_at_ms;
		tl_list_push_front(&tl_pool.free_pages[page->kind], page);
	} else {
		tl_list_push_back(&tl_pool.free_pages[page->kind], page);
	}
}

/* After a page joined the free list: purge what is due, or wake the
 * purger thread to do it when it is. */
static void after_give(uint64_t now)
{
	bool due = now >= tl_pool.next_purge_ms;
	bool wake = tl_pool.threaded && tl_pool.next_purge_ms != UINT64_MAX;
	tl_assert_expensive(tl_pool_check_locked());
	tl_lock_release(&tl_pool.lock);
	if (due)
		tl_pool_purge(false);
	else if (wake)
		tl_purger_wake();
}

void tl_pool_give_page(tl_page *page)
{
	uint64_t now = tl_os_now_ms();
	tl_page_retire_counts(page);
	if (page->capacity > 0)
		page->dirty = 1;
	tl_uptr_store_relaxed(&page->owner, TL_OWNER_FREE);
	tl_lock_acquire(&tl_pool.lock);
	give_locked(page, now);
	after_give(now);
}

/*
 * A page in a heap's full list whose blocks other threads have all freed
 * (heap.c, "Full pages given away"): out of that list, into the free list,
 * unless the heap's full_lock is taken (tried only: its owner may hold it
 * while it waits for the pool lock), or the page left the list meanwhile
 * (its full_heap is no longer index) or has live blocks again (the owner
 * collected it, handed its blocks out and found it full once more): both
 * read under the lock.
 */
void tl_pool_give_away(tl_page *page, uint32_t index)
{
#if TL_SECURE
	(void)page;
	(void)index;
#else
	if (index >= TL_HEAP_TABLE)
		return;
	tl_heap *heap = (tl_heap *)tl_uptr_load_acquire(&tl_heap_table[index]);
	if (heap == NULL)
		return;
	uint64_t now = tl_os_now_ms();
	tl_lock_acquire(&tl_pool.lock);
	if (!tl_lock_try(&heap->full_lock)) {
		tl_lock_release(&tl_pool.lock);
		return;
	}
	/* Still in that full list, and still all free: since the caller's
	 * free the owner may have collected the page, handed its blocks out
	 * and found it full again.  Under the lock the owner collects
	 * nothing, so the count can only grow. */
	uintptr_t w = tl_uptr_load_acquire(&page->thread_free);
	if (tl_page_full_heap(page) != index ||
	    tl_remote_count(w) != page->capacity) {
		tl_lock_release(&heap->full_lock);
		tl_lock_release(&tl_pool.lock);
		return;
	}
	tl_list_remove(&heap->full, page);
	tl_page_set_full_heap(page, 0);
	tl_u32_add_relaxed(&heap->donated, 1);
	/* the owner word last: a free of one of its blocks by the owner (a
	 * double free) waits on the lock above and finds the page free */
	tl_page_retire_counts(page);
	/* its other threads' frees, which no owner will collect now */
	tl_u64_add_relaxed(&tl_remote_frees, tl_remote_count(w));
	page->dirty = 1;
	tl_uptr_store_release(&page->owner, TL_OWNER_FREE);
	tl_lock_release(&heap->full_lock);
	tl_pool.given_away++;
	give_locked(page, now);
	after_give(now);
#endif
}

/*
 * Parked heaps: a heap whose thread exited, kept whole (its pages' owner
 * TL_OWNER_PARKED) for the next thread to start, which takes the newest
 * (heap.c, tl_heap_park).  At most TL_PARKED_MAX, each for the purge delay:
 * then its pages are handed back as at its thread's exit
 * (tl_pool_release_heap, purge.c), so a program whose threads are gone
 * gets its memory back all the same.
 */
#define TL_PARKED_MAX 16

tl_atomic_uptr tl_heap_table[TL_HEAP_TABLE];

tl_heap *tl_pool_heap_alloc(bool *parked)
{
	tl_heap *heap = NULL;
	tl_lock_acquire(&tl_pool.lock);
	if (tl_pool.parked != NULL) {
		heap = tl_pool.parked;
		tl_pool.parked = heap->next_free;
		tl_pool.parked_count--;
		*parked = true;
	} else if (tl_pool.free_heaps != NULL) {
		heap = tl_pool.free_heaps;
		tl_pool.free_heaps = heap->next_free;
	} else {
		if (tl_pool.heap_area_left < sizeof(tl_heap)) {
			tl_pool.heap_area = tl_os_map_aligned(TL_HEAP_AREA,
							   TL_SEGMENT_SIZE, 0);
			tl_pool.heap_area_left = tl_pool.heap_area ? TL_HEAP_AREA : 0;
		}
		if (tl_pool.heap_area_left >= sizeof(tl_heap)) {
			heap = (tl_heap *)tl_pool.heap_area;
			tl_pool.heap_area += sizeof(tl_heap);
			tl_pool.heap_area_left -= sizeof(tl_heap);
			tl_pool.heaps_made++;
			/* past the table's end: a heap whose full pages stay */
			if (tl_pool.heaps_made < TL_HEAP_TABLE) {
				heap->index = tl_pool.heaps_made;
				tl_uptr_store_release(
					&tl_heap_table[heap->index],
					(uintptr_t)heap);
			}
		}
	}
	/* Threaded: a second heap, or a heap of a thread that is not the
	 * initial one.  A thread can allocate without a heap of its own
	 * (guarded samples, the shared heap), so a program whose main thread
	 * had none yet when a worker made one (its first malloc a guarded
	 * sample) never started the purger, and an exited worker's memory
	 * stayed (stress.purger_never_starts_guarded). */
	if (heap != NULL &&
	    (++tl_pool.heaps_live >= 2 || !tl_os_is_initial_thread()))
		tl_pool.threaded = true;
	if (heap != NULL)
		tl_pool.threads_seen++;
	tl_lock_release(&tl_pool.lock);
	return heap;
}

void tl_pool_heap_free(tl_heap *heap)
{
	tl_lock_acquire(&tl_pool.lock);
	heap->next_free = tl_pool.free_heaps;
	tl_pool.free_heaps = heap;
	tl_pool.heaps_live--;
	tl_lock_release(&tl_pool.lock);
}

void tl_pool_park_heap(tl_heap *heap)
{
	uint64_t until = tl_os_now_ms() + (uint64_t)tl_option(TL_OPT_purge_delay);
	tl_heap *evicted = NULL;
	tl_lock_acquire(&tl_pool.lock);
	if (tl_pool.parked_count >= TL_PARKED_MAX) {	/* the oldest goes */
		tl_heap **at = &tl_pool.parked;
		while ((*at)->next_free != NULL)
			at = &(*at)->next_free;
		evicted = *at;
		*at = NULL;
		tl_pool.parked_count--;
		tl_pool.heaps_live++;	/* tl_pool_heap_free counts it out */
	}
	heap->parked_until_ms = until;
	heap->next_free = tl_pool.parked;
	tl_pool.parked = heap;
	tl_pool.parked_count++;
	tl_pool.heaps_live--;
	tl_pool_note_purge_at_locked(until);
	bool wake = tl_pool.threaded;
	tl_lock_release(&tl_pool.lock);
	if (evicted != NULL) {
		tl_pool_release_heap(evicted);
		tl_pool_heap_free(evicted);
	}
	if (wake)
		tl_purger_wake();
}

tl_heap *tl_pool_take_parked_locked(uint64_t now, bool force,
				    uint64_t *earliest)
{
	tl_heap *due = NULL, **at = &tl_pool.parked;
	while (*at != NULL) {
		tl_heap *heap = *at;
		if (!force && heap->parked_until_ms > now) {
			if (heap->parked_until_ms < *earliest)
				*earliest = heap->parked_until_ms;
			at = &heap->next_free;
			continue;
		}
		*at = heap->next_free;
		tl_pool.parked_count--;
		tl_pool.heaps_live++;	/* tl_pool_heap_free counts it out */
		heap->next_free = due;
		due = heap;
	}
	return due;
}

void tl_pool_fork_prepare(void)
{
	tl_lock_acquire(&tl_pool.lock);
}

void tl_pool_fork_parent(void)
{
	tl_lock_release(&tl_pool.lock);
}

void tl_pool_fork_child(uintptr_t shared, uintptr_t profiler)
{
	tl_lock_reset(&tl_pool.lock);
	/* A full list's lock (heap.c) may have been held by a thread that is
	 * gone: the heaps the pool hands out get theirs back (the forking
	 * thread's: tl_heap_fork_child). */
	for (tl_heap *h = tl_pool.parked; h != NULL; h = h->next_free)
		tl_lock_reset(&h->full_lock);
	for (tl_heap *h = tl_pool.free_heaps; h != NULL; h = h->next_free)
		tl_lock_reset(&h->full_lock);
	/* Only the forking thread lives on; its heap (if any) is the one. */
	tl_pool.heaps_live = tl_pool.heaps_live > 0 ? 1 : 0;
	tl_pool_orphan_pages(tl_thread_id(), shared, profiler);
}
