/*
 * pool_check.c - the pool's invariants as code (debug builds, TL_DEBUG > 0):
 * tl_pool_check_locked walks the segment list, the free and abandoned page
 * lists and the huge cache and checks them against the pool's counts
 * (internal.h lists what it checks); any break is a tl_fatal.
 *
 * Locking rule (pool.h): tl_pool_check_locked expects tl_pool.lock held,
 * and checks that it is; tl_pool_check takes it around the walk.
 */
#include "tlmalloc/internal.h"
#include "tlmalloc/pool.h"

#if TL_DEBUG > 0
/* Whether a list's links agree both ways and end where it says (a cycle
 * meets a page whose prev is not the page before it). */
static bool list_linked(const tl_page_list *l)
{
	const tl_page *prev = NULL;
	for (const tl_page *p = l->first; p != NULL; prev = p, p = p->next)
		if (p->prev != prev)
			return false;
	return l->last == prev;
}

/* The segment list and what the pool counts of it. */
static const char *segments_broken(uint64_t *in_pool)
{
	const tl_segment *prev = NULL;
	uint64_t count = 0;
	size_t mapped = 0;
	*in_pool = 0;
	for (const tl_segment *seg = tl_pool.segments; seg != NULL;
	     prev = seg, seg = seg->next) {
		if (seg->prev != prev || ++count > tl_pool.segment_count)
			return "the segment list's links or count are wrong";
		mapped += seg->map_size;
		if (seg->kind == TL_PAGE_HUGE)
			continue;
		uint32_t used = 0;
		for (uint32_t i = 0; i < seg->page_count; i++) {
			const tl_page *page = tl_segment_page(seg, i);
			if (tl_page_area_size(page) == 0)
				continue;
			if (page->in_pool)
				(*in_pool)++;
			else
				used++;
		}
		if (used != seg->used_pages)
			return "a segment's used_pages is not its pages out of "
			       "the pool";
	}
	if (count != tl_pool.segment_count || count > tl_pool.segments_peak)
		return "segment_count is not the segment list's length";
	if (mapped != tl_pool.mapped || mapped > tl_pool.mapped_peak)
		return "mapped is not the segments' bytes";
	return NULL;
}

static const char *free_pages_broken(uint64_t in_pool)
{
	uint64_t listed = 0;
	for (int kind = 0; kind < 2; kind++) {
		if (!list_linked(&tl_pool.free_pages[kind]))
			return "a free page list's links are broken";
		for (const tl_page *p = tl_pool.free_pages[kind].first; p != NULL;
		     p = p->next, listed++) {
			if (!p->in_pool || p->slice_offset != 0 ||
			    p->kind != kind ||
			    tl_segment_of(p->start)->kind != (uint32_t)kind)
				return "a free page list holds a page not "
				       "free, or of another kind";
			if (tl_uptr_load_relaxed(&p->owner) != TL_OWNER_FREE)
				return "a free page has an owner";
			if (p->dirty && p->purge_at_ms < tl_pool.next_purge_ms)
				return "a dirty free page is due before the "
				       "next purge";
		}
	}
	if (listed != in_pool)
		return "pages flagged in_pool are not the free lists' pages";
	return NULL;
}

static const char *abandoned_broken(void)
{
	uint32_t dirty = 0;
	for (unsigned cls = 1; cls < TL_CLASSES; cls++) {
		if (!list_linked(&tl_pool.abandoned[cls]))
			return "an abandoned list's links are broken";
		for (const tl_page *p = tl_pool.abandoned[cls].first; p != NULL;
		     p = p->next) {
			if (p->in_pool || p->size_class != cls)
				return "an abandoned list holds a free page, "
				       "or one of another class";
			tl_page_check(p, TL_OWNER_ABANDONED, !p->uncounted);
			dirty += p->dirty;
			if (p->dirty && p->purge_at_ms < tl_pool.next_purge_ms)
				return "an abandoned page's free blocks are due "
				       "before the next purge";
		}
	}
	if (dirty != tl_pool.abandoned_dirty)
		return "abandoned_dirty is not the count of abandoned pages "
		       "to purge";
	return NULL;
}

static const char *huge_cache_broken(void)
{
	size_t bytes = 0;
	if (tl_pool.huge_count > TL_HUGE_CACHE_COUNT)
		return "huge_count is past the cache's slots";
	for (uint32_t i = 0; i < tl_pool.huge_count; i++) {
		const tl_huge_slot *slot = &tl_pool.huge_cache[i];
		const tl_segment *seg = slot->seg;
		if (seg == NULL || seg->kind != TL_PAGE_HUGE ||
		    seg->used_pages != 0 ||
		    tl_uptr_load_relaxed(&seg->slices[0].owner) !=
			    TL_OWNER_FREE)
			return "the huge cache holds a live segment";
		if (slot->map_size != seg->map_size)
			return "a huge cache slot's size is not its segment's";
		if (slot->until_ms < tl_pool.next_purge_ms)
			return "a cached huge segment is due before the next "
			       "purge";
		bytes += seg->map_size;
	}
	if (bytes != tl_u64_load_relaxed(&tl_pool.huge_cached))
		return "huge_cached is not the cache's bytes";
	return NULL;
}

bool tl_pool_check_locked(void)
{
	uint64_t in_pool;
	const char *bad;
	if (tl_u32_load_relaxed(&tl_pool.lock.state) == 0)
		bad = "the pool lock is not held";
	else if ((bad = segments_broken(&in_pool)) == NULL &&
		 (bad = free_pages_broken(in_pool)) == NULL &&
		 (bad = abandoned_broken()) == NULL)
		bad = huge_cache_broken();
	if (bad != NULL)
		tl_fatal("tl_pool_check_locked", &tl_pool, bad);
	return true;
}

bool tl_pool_check(void)
{
	tl_lock_acquire(&tl_pool.lock);
	tl_pool_check_locked();
	tl_lock_release(&tl_pool.lock);
	return true;
}
#endif
