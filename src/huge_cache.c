/*
 * huge_cache.c - the pool's cache of freed huge segments.  A freed one (up
 * to TL_HUGE_CACHE_SEGMENT bytes, at most TL_HUGE_CACHE_COUNT (pool.h) and
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
 * Why 64 slots: threads that allocate and free blocks just above
 * TL_MEDIUM_MAX at random (mstress) keep a number of them live that
 * wanders by tens; with 16 slots, 2% of their mallocs missed the cache and
 * mapped a fresh segment (five system calls and its page faults each),
 * with 64 few do (docs/measurements.md).  The slots hold each segment's
 * size, so a malloc's search does not read the headers.
 *
 * Locking rule (pool.h): the cache's fields (the huge_cache slots,
 * huge_cached, huge_count) are the pool's, under tl_pool.lock; a cached
 * segment stays in the pool's segment list, its owner word TL_OWNER_FREE
 * and its used_pages 0.  Evicted segments are unmapped after the lock is
 * released.
 */
#include <stdint.h>

#include "tlmalloc/internal.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"
#include "tlmalloc/pool.h"

#define TL_HUGE_CACHE_SEGMENT ((size_t)64 << 20)
#define TL_HUGE_CACHE_BYTES ((size_t)128 << 20)

/* Take slot i out of the cache (the last slot fills its place): its
 * segment is the caller's. */
static tl_segment *uncache_locked(uint32_t i)
{
	tl_segment *seg = tl_pool.huge_cache[i].seg;
	tl_pool.huge_cached -= tl_pool.huge_cache[i].map_size;
	tl_pool.huge_cache[i] = tl_pool.huge_cache[--tl_pool.huge_count];
	return seg;
}

/* The slot kept the longest (the next to expire anyway). */
static uint32_t oldest_locked(void)
{
	uint32_t old = 0;
	for (uint32_t i = 1; i < tl_pool.huge_count; i++)
		if (tl_pool.huge_cache[i].until_ms <
		    tl_pool.huge_cache[old].until_ms)
			old = i;
	return old;
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
	/* Full: the oldest make room. */
	while (tl_pool.huge_count >= TL_HUGE_CACHE_COUNT ||
	       tl_pool.huge_cached + seg->map_size > TL_HUGE_CACHE_BYTES) {
		tl_segment *old = uncache_locked(oldest_locked());
		tl_pool_unregister_locked(old);
		old->next = evicted;
		evicted = old;
	}
	/* No block lives here now: a free of the old pointer is caught. */
	tl_uptr_store_relaxed(&page->owner, TL_OWNER_FREE);
	seg->used_pages = 0;
	tl_pool.huge_cache[tl_pool.huge_count++] = (tl_huge_slot){
		.map_size = seg->map_size, .until_ms = until, .seg = seg };
	tl_pool.huge_cached += seg->map_size;
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
	/* map_size is whole OS pages: >= want as for the unrounded size */
	size_t want = tl_segment_huge_map_size(TL_SEGMENT_HEADER, size);
	if (size > TL_HUGE_CACHE_SEGMENT)
		return NULL;
	tl_lock_acquire(&tl_pool.lock);
	uint32_t n = tl_pool.huge_count, best = n;
	size_t best_size = 0;
	for (uint32_t i = 0; i < n; i++) {
		size_t m = tl_pool.huge_cache[i].map_size;
		bool better;
		if (best == n)
			better = true;
		else if (best_size >= want)
			better = m >= want && m < best_size;
		else
			better = m > best_size;
		if (better) {
			best = i;
			best_size = m;
		}
	}
	tl_segment *seg = NULL;
	if (best != n) {
		seg = uncache_locked(best);
		seg->used_pages = 1;
		tl_uptr_store_relaxed(&seg->slices[0].owner, TL_OWNER_HUGE);
	}
	tl_lock_release(&tl_pool.lock);
	return seg;
}

tl_segment *tl_pool_expire_huge_locked(uint64_t now, bool force,
				       tl_segment *unmap, uint64_t *earliest)
{
	for (uint32_t i = 0; i < tl_pool.huge_count;) {
		uint64_t until = tl_pool.huge_cache[i].until_ms;
		if (!force && until > now) {
			if (until < *earliest)
				*earliest = until;
			i++;
			continue;
		}
		tl_segment *seg = uncache_locked(i);	/* i now holds another */
		tl_pool_unregister_locked(seg);
		seg->next = unmap;
		unmap = seg;
	}
	return unmap;
}
