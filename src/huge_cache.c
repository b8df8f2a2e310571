/*
 * huge_cache.c - the pool's cache of freed huge segments.  A freed one (up
 * to TL_HUGE_CACHE_SEGMENT bytes, at most TL_HUGE_CACHE_COUNT and
 * TL_HUGE_CACHE_BYTES in all) is kept until the purge delay runs out, for
 * a large malloc to reuse, cut or grown to its size (large.c): few mmaps
 * and page faults for a program that allocates and frees large buffers in
 * a loop.  A full cache makes room by unmapping its oldest; a purge
 * (purge.c) unmaps those whose time ran out.
 *
 * Why a file beside large.c and not inside it: large.c works on one huge
 * block its caller owns, with no lock, and fits it (cut, grown, moved);
 * the cache is shared state, a part of the pool under its lock.  Two
 * concepts, two locking rules.
 *
 * Locking rule (pool.h): the cache's fields (huge_cache, huge_cached,
 * huge_count) are the pool's, under tl_pool.lock; a cached segment stays
 * in the pool's segment list, its owner word TL_OWNER_FREE and its
 * used_pages 0.  Evicted segments are unmapped after the lock is released.
 */
#include <stdint.h>

#include "tlmalloc/internal.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"
#include "tlmalloc/pool.h"

#define TL_HUGE_CACHE_SEGMENT ((size_t)64 << 20)
#define TL_HUGE_CACHE_BYTES ((size_t)128 << 20)
#define TL_HUGE_CACHE_COUNT 16

/* Unlink seg from the cache; prev is the one before it, or NULL. */
static void uncache_locked(tl_segment *prev, tl_segment *seg)
{
	if (prev != NULL)
		prev->cache_next = seg->cache_next;
	else
		tl_pool.huge_cache = seg->cache_next;
	seg->cache_next = NULL;
	tl_pool.huge_cached -= seg->map_size;
	tl_pool.huge_count--;
}

bool tl_pool_cache_huge(tl_segment *seg)
{
#if TL_SECURE
	/* a freed huge block unmapped: a use after free of it faults */
	if (tl_option(TL_OPT_secure_huge_unmap))
		return false;
#endif
	tl_page *page = &seg->slices[0];
	if (seg->map_size > TL_HUGE_CACHE_SEGMENT ||
	    page->start != (uint8_t *)seg + TL_SEGMENT_HEADER)
		return false;
	if (seg->map_size > TL_HUGE_CACHE_BYTES)
		return false;
	uint64_t now = tl_os_now_ms();
	uint64_t until = now + (uint64_t)tl_option(TL_OPT_purge_delay);
	bool wake;
	tl_segment *evicted = NULL;
	tl_lock_acquire(&tl_pool.lock);
	/* Full: the oldest make room (they are the next to expire anyway). */
	while (tl_pool.huge_count >= TL_HUGE_CACHE_COUNT ||
	       tl_pool.huge_cached + seg->map_size > TL_HUGE_CACHE_BYTES) {
		tl_segment *prev = NULL, *old = tl_pool.huge_cache;
		while (old->cache_next != NULL) {
			prev = old;
			old = old->cache_next;
		}
		uncache_locked(prev, old);
		tl_pool_unregister_locked(old);
		old->next = evicted;
		evicted = old;
	}
	/* No block lives here now: a free of the old pointer is caught. */
	tl_uptr_store_relaxed(&page->owner, TL_OWNER_FREE);
	seg->used_pages = 0;
	seg->cached_until_ms = until;
	seg->cache_next = tl_pool.huge_cache;
	tl_pool.huge_cache = seg;
	tl_pool.huge_cached += seg->map_size;
	tl_pool.huge_count++;
	tl_pool_note_purge_at_locked(until);
	bool due = now >= tl_pool.next_purge_ms;
	wake = tl_pool.threaded;
	tl_lock_release(&tl_pool.lock);
	for (tl_segment *next; evicted != NULL; evicted = next) {
		next = evicted->next;
		tl_segment_unmap(evicted);
	}
	if (due)
		tl_pool_purge(false);
	else if (wake)
		tl_purger_wake();
	return true;
}

/* The cached segment that serves a block of size bytes with the least
 * change: the smallest that holds it, else the largest (the caller cuts
 * or grows it, large.c). */
tl_segment *tl_pool_take_huge(size_t size)
{
	size_t want = TL_SEGMENT_HEADER + size + TL_HUGE_GUARD;
	tl_segment *best = NULL, *best_prev = NULL, *prev = NULL;
	if (size > TL_HUGE_CACHE_SEGMENT)
		return NULL;
	tl_lock_acquire(&tl_pool.lock);
	for (tl_segment *seg = tl_pool.huge_cache; seg != NULL;
	     prev = seg, seg = seg->cache_next) {
		bool better;
		if (best == NULL)
			better = true;
		else if (best->map_size >= want)
			better = seg->map_size >= want &&
				 seg->map_size < best->map_size;
		else
			better = seg->map_size > best->map_size;
		if (better) {
			best = seg;
			best_prev = prev;
		}
	}
	if (best != NULL) {
		uncache_locked(best_prev, best);
		best->used_pages = 1;
		tl_uptr_store_relaxed(&best->slices[0].owner, TL_OWNER_HUGE);
	}
	tl_lock_release(&tl_pool.lock);
	return best;
}

tl_segment *tl_pool_expire_huge_locked(uint64_t now, bool force,
				       tl_segment *unmap, uint64_t *earliest)
{
	tl_segment *prev = NULL, *next;
	for (tl_segment *seg = tl_pool.huge_cache; seg != NULL; seg = next) {
		next = seg->cache_next;
		if (!force && seg->cached_until_ms > now) {
			if (seg->cached_until_ms < *earliest)
				*earliest = seg->cached_until_ms;
			prev = seg;
			continue;
		}
		uncache_locked(prev, seg);
		tl_pool_unregister_locked(seg);
		seg->next = unmap;
		unmap = seg;
	}
	return unmap;
}
