/*
 * alloc.c - the generic path of malloc and the calls built on malloc:
 * calloc, realloc, the aligned family, usable size.
 *
 * Aligned blocks need no header and no interior pointers: every page starts
 * at a multiple of 64 KiB, so a block of a class whose size is a multiple of
 * the alignment is aligned.  Alignments above 64 KiB, or sizes above
 * TL_MEDIUM_MAX, get a huge segment placed at the alignment.
 */
#include <errno.h>
#include <string.h>

#include "tlmalloc/fastpath.h"
#include "tlmalloc/guarded.h"
#include "tlmalloc/kept.h"
#include "tlmalloc/profile.h"

/* A block of class cls from the heap's pages; NULL and ENOMEM when it
 * has none and can get none. */
static TL_ALWAYS_INLINE void *heap_alloc_class(tl_heap *heap, unsigned cls)
{
	tl_page *page = tl_heap_find_page(heap, cls);
	if (page == NULL) {
		tl_kept_flush(heap);	/* out of memory: to their pages */
		page = tl_heap_find_held(heap, cls);
	}
	if (page == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	return tl_page_pop(page);
}

void *tl_heap_alloc(tl_heap *heap, size_t size)
{
	if (size > TL_MEDIUM_MAX)
		return tl_large_alloc(size, 0);
	return heap_alloc_class(heap, tl_size_to_class(size));
}

/*
 * A thread heap that samples for the heap profiler, or should start or
 * stop, goes through the profiler (profile.c); other heaps (the shared
 * heap, the profiler's own) have ids that are no thread's.
 */
void *tl_malloc_generic(tl_heap *heap, size_t size)
{
	if (tl_unlikely(heap == &tl_heap_empty)) {
		heap = tl_heap_get_or_create();
		if (heap == NULL) {
			errno = ENOMEM;
			return NULL;
		}
	} else if (tl_unlikely(heap == &tl_heap_exiting)) {
		return tl_shared_malloc(size);
	}
	if (tl_unlikely(heap->prof != NULL || tl_profile_wanted()) &&
	    heap->id == tl_thread_id())
		return tl_profile_malloc(heap, size);
	return tl_heap_alloc(heap, size);
}

/* tl_malloc_slow past the pop of its queue head: a guarded sample, the
 * heap profiler, a kept block, the generic path. */
static TL_NOINLINE void *malloc_slow_rest(size_t size)
{
	if (tl_unlikely(tl_guarded_on())) {
		void *g = tl_guarded_malloc(size);
		if (g != NULL)
			return g;
	}
	/* A heap that samples goes to the profiler at once: the end of a
	 * chain (profile.c) is most of its slow paths; a jump, so a sample's
	 * stack has no frame of this function. */
	tl_heap *heap = tl_heap_local;
	if (tl_unlikely(heap->prof != NULL))
		return tl_profile_malloc(heap, size);
	/* a heap that keeps nothing has no kept block (kept_bytes is 0 from
	 * its creation, or since its flush at its thread's exit) */
	if (heap->kept_bytes != 0 && size <= TL_MEDIUM_MAX) {
		tl_block *block = tl_kept_pop(heap, tl_size_to_class(size));
		if (block != NULL)
			return block;
	}
	void *p = tl_malloc_generic(heap, size);
	tl_purger_poll();
	return p;
}

/*
 * A dry head of a class above the direct table (its free and local_free
 * empty), with no guarded sampling, no kept blocks and no profiler to ask
 * first (malloc_slow_rest's cases): alone, with no other thread's free to
 * collect, it carves its next blocks here, as heap_scan_queue would (a
 * class above 1 KiB carves one or two blocks at a time, page.c, so a
 * thread that only allocates, the producers of `memtime`, went through
 * the whole generic path at nearly every malloc); otherwise the heap finds
 * the next page at once (heap_alloc_class), without the generic path's
 * layers: a page of 8 blocks of 8 KiB runs dry every few mallocs
 * (`rptest`).  docs/measurements.md, "And the rest of the slow paths'
 * common cases" and "The page that goes full and comes back".  Out of
 * line, so that tl_malloc_slow's pop saves no register for it.
 */
static TL_NOINLINE void *medium_head_dry(tl_page *page, size_t size)
{
	tl_heap *heap = tl_heap_local;
	if (tl_unlikely(tl_guarded_on() || heap->kept_bytes != 0 ||
			tl_profile_wanted()))
		return malloc_slow_rest(size);
	if (page->next == NULL &&
	    tl_uptr_load_relaxed(&page->thread_free) == 0) {
		tl_page_set_avail(page, 0);	/* exact again: free is empty */
		if (tl_page_extend(page))
			return tl_page_pop(page);
	}
	void *p = heap_alloc_class(heap, page->size_class);
	tl_purger_poll();
	return p;
}

/*
 * Sizes above the direct table up to TL_MEDIUM_MAX take the head of their
 * class's queue, the page the direct table would point at, the same way
 * before the generic path, which finds a page.  A heap that has none
 * (tl_heap_empty, tl_heap_exiting, a class not used yet) has an empty
 * queue there.  What would reach the generic path may be a guarded sample
 * instead (guarded.c), when the option guarded_rate is on; a heap that
 * samples for the heap profiler goes to it instead of the generic path.
 * Before the generic path, the block of the class the thread kept last
 * (kept.h), if it keeps one.
 */
void *tl_malloc_slow(size_t size)
{
	if (size - (TL_DIRECT_MAX + 1) < TL_MEDIUM_MAX - TL_DIRECT_MAX) {
		tl_page *page = tl_queue_local[tl_size_to_class(size)].first;
		if (page != NULL) {
			tl_block *block = tl_page_pop_recent(page);
			if (tl_likely(block != NULL))
				return block;
			return medium_head_dry(page, size);
		}
	}
	return malloc_slow_rest(size);
}

unsigned tl_aligned_class(size_t alignment, size_t size)
{
	if (size > TL_MEDIUM_MAX || alignment > TL_SLICE_SIZE)
		return 0;
	if (alignment <= TL_MIN_ALIGN)
		return tl_size_to_class(size);
	size_t n = size < alignment ? alignment : size;
	for (unsigned cls = tl_size_to_class(n); cls < TL_CLASSES; cls++)
		if (tl_class_size[cls] % alignment == 0)
			return cls;
	return 0;
}

void *tl_alloc_aligned(size_t alignment, size_t size)
{
	tl_assert(alignment != 0 && (alignment & (alignment - 1)) == 0);
	if (alignment <= TL_MIN_ALIGN)
		return tl_malloc_local(size);
#if TL_SECURE
	/* the class must hold the canary's tail, which malloc adds back;
	 * the canary then goes right after the size asked for, where an
	 * overflow reaches it first and a sized free finds that size */
	size_t tail = tl_canary_tail();
	unsigned cls = tl_aligned_class(alignment, tl_canary_ask(size, tail));
	if (cls != 0)
		return tl_canary_set(tl_malloc_local(tl_class_size[cls] - tail),
				     size, tail);
#else
	unsigned cls = tl_aligned_class(alignment, size);
	if (cls != 0)
		return tl_malloc_local(tl_class_size[cls]);
#endif
	return tl_large_alloc(size, alignment);
}

/* The page of p, a pointer into one of tlmalloc's segments, after
 * checking that p is a live block (aborts naming call otherwise). */
static tl_page *live_block_page(const char *call, const void *p)
{
	tl_page *page = tl_page_of(tl_segment_of(p), p);
	uintptr_t owner = tl_uptr_load_relaxed(&page->owner);
	if (owner == TL_OWNER_FREE)
		tl_fatal(call, p, "block of a free page (freed already?)");
	tl_free_check(call, page, p,
		      (owner & ~(uintptr_t)TL_OWNER_FULL) == tl_heap_local->id);
#if TL_SECURE
	if (tl_canary_tail() != 0 && tl_canary_page(page))
		tl_canary_check(call, page, p);
#endif
	return page;
}

static size_t page_usable(const tl_page *page, const void *p)
{
	if (page->kind == TL_PAGE_HUGE) {
		return tl_huge_usable(tl_segment_of(p), page);
	}
#if TL_SECURE
	if (tl_canary_tail() != 0 && tl_canary_page(page))	/* checked */
		return tl_canary_check("malloc_usable_size", page, p);
#endif
	return page->block_size;
}

size_t tl_block_usable(const char *call, const void *p)
{
	return page_usable(live_block_page(call, p), p);
}

/* The start of page's block that holds p; NULL where none does (p before
 * the first block, past the carved ones, or in a page without blocks). */
static const uint8_t *block_holding(const tl_page *page, const void *p)
{
	const uint8_t *q = p;
	if (tl_uptr_load_relaxed(&page->owner) == TL_OWNER_FREE ||
	    q < page->start)
		return NULL;
	if (page->kind == TL_PAGE_HUGE)
		return page->start;
	uint32_t bs = page->block_size;
	if (bs == 0)
		return NULL;
	size_t i = (size_t)(q - page->start) / bs;
	if (i >= __atomic_load_n(&page->capacity, __ATOMIC_RELAXED))
		return NULL;
	return page->start + i * bs;
}

/* malloc_object_size of p, a pointer into page (tlmalloc.h): from p to the
 * end of what malloc_usable_size says of the block holding p, after the
 * same checks; 0 from that end on (the slack, the secure canary). */
size_t tl_block_object_size(const char *call, const tl_page *page,
			    const void *p)
{
	const uint8_t *block = block_holding(page, p);
	if (block == NULL)
		tl_fatal(call, p, "not inside a block malloc returned");
	size_t usable = tl_block_usable(call, block);
	size_t off = (size_t)((const uint8_t *)p - block);
	return off < usable ? usable - off : 0;
}

/* The same from the page's figures alone, with no check and no abort (0
 * where no block is): the secure canary's tail is taken off the block's
 * size, its exact place not read. */
size_t tl_block_object_size_fast(const tl_segment *seg, const tl_page *page,
				 const void *p)
{
	const uint8_t *block = block_holding(page, p);
	if (block == NULL)
		return 0;
	size_t size = page->kind == TL_PAGE_HUGE ? tl_huge_usable(seg, page)
						 : page->block_size;
#if TL_SECURE
	if (tl_canary_tail() != 0 && tl_canary_page(page))
		size -= tl_canary_tail();
#endif
	size_t off = (size_t)((const uint8_t *)p - block);
	return off < size ? size - off : 0;
}

void *tl_calloc_impl(size_t count, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(count, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = tl_malloc_local(total);
	if (p != NULL && !tl_large_is_fresh(p))
		memset(p, 0, total);
	return p;
}

void *tl_realloc_impl(void *p, size_t size)
{
	if (p == NULL)
		return tl_malloc_local(size);
	if (!tl_segment_is_ours(p)) {
		if (tl_guarded_holds(p))
			return tl_guarded_realloc(p, size);
#if TL_SECURE
		if (tl_zero_holds(p))
			return tl_zero_realloc(p, size);
#endif
		tl_fatal("realloc", p, "not allocated by tlmalloc");
	}
	if (size == 0) {	/* glibc: free and return NULL */
		tl_free_local(p);
		return NULL;
	}
	/* In place only where a sized free of the new size would pass: the
	 * same class (or young group), or a huge block staying huge. */
	tl_page *page = live_block_page("realloc", p);
	size_t usable = page_usable(page, p);
	if (page->kind == TL_PAGE_HUGE) {
		if (size > TL_MEDIUM_MAX) {
			void *q = tl_large_resize(p, size);
			if (q != NULL && q != p)
				tl_profile_huge_moved(p, q);
			if (q != NULL)
				return q;
		}
#if TL_SECURE
	} else if (tl_page_holds_size(page,
				      tl_canary_ask(size, tl_canary_tail()))) {
		return tl_canary_set(p, size, tl_canary_tail());
	}
#else
	} else if (tl_page_holds_size(page, size)) {
		return p;
	}
#endif
	void *q = tl_malloc_local(size);
	if (q == NULL)
		return NULL;
	memcpy(q, p, size < usable ? size : usable);
	tl_free_local(p);
	return q;
}
