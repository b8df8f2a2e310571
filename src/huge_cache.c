/*
 * huge_cache.c - the pool's cache of freed huge segments.  A freed one (up
 * to TL_HUGE_CACHE_SEGMENT bytes, at most TL_HUGE_CACHE_COUNT (pool.h) and
 * TL_HUGE_CACHE_BYTES in all) is kept until the purge delay runs out, for
 * a large malloc to reuse, cut or grown to its size (large.c): few mmaps
 * and page faults for a program that allocates and frees large buffers in
 * a loop.  A full cache makes room by unmapping its oldest; a purge
 * (purge.c) unmaps those whose time ran out.
 *
 * The cache never makes the process larger than its huge blocks once
 * were: the bytes of the blocks held (huge_live) and the cache's stay
 * under the most the blocks held at once (huge_peak).  Where a block
 * takes fresh memory that the cache could not give (an alignment, pieces
 * too small to gather) or a freed one would pass the peak, the oldest
 * cached segments give the difference back, whole or their tail.  So a
 * program that frees a buffer and allocates another as large reuses it,
 * and the cache costs no peak memory: docs/design.md, "Huge segment".
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
 * huge_cached, huge_count) are the pool's, under tl_pool.lock (huge_cached
 * is also read without it, as a hint); huge_live and huge_peak are
 * atomics that any thread updates at its huge malloc, free or realloc.
 * A cached segment stays in the pool's segment list, its owner word
 * TL_OWNER_FREE and its used_pages 0.  Evicted segments, and a trimmed
 * segment's tail, are unmapped after the lock is released.
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
	tl_u64_sub_relaxed(&tl_pool.huge_cached,
			   tl_pool.huge_cache[i].map_size);
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

/* What leaves the cache under the lock, unmapped after it. */
typedef struct tl_huge_shed {
	tl_segment *evicted;		/* whole segments, linked by next */
	void *tail;			/* and one segment's tail */
	size_t tail_size;
} tl_huge_shed;

static void evict_locked(uint32_t i, tl_huge_shed *shed)
{
	tl_segment *seg = uncache_locked(i);
	tl_pool_unregister_locked(seg);
	seg->next = shed->evicted;
	shed->evicted = seg;
}

static void shed_unmap(tl_huge_shed *shed)
{
	if (shed->tail != NULL)
		tl_os_unmap(shed->tail, shed->tail_size);
	for (tl_segment *next; shed->evicted != NULL; shed->evicted = next) {
		next = shed->evicted->next;
		tl_segment_unmap(shed->evicted);
	}
}

/*
 * How many bytes the huge blocks held, the cache and size bytes more in
 * it come to over the most that the blocks ever held at once (0 if
 * none).  The cached segments' headers are left out: a cut makes one
 * more, and they are address space more than memory.
 */
static size_t over_peak_locked(size_t size)
{
	size_t held = tl_u64_load_relaxed(&tl_pool.huge_live) +
		      tl_u64_load_relaxed(&tl_pool.huge_cached) + size;
	size_t allowed = tl_u64_load_relaxed(&tl_pool.huge_peak) +
			 (tl_pool.huge_count + 1) * TL_SEGMENT_HEADER;
	return held > allowed ? held - allowed : 0;
}

/* Cut seg's mapping back by at least over bytes if enough is left of it,
 * its tail into *shed (one tail at most); false if not. */
static bool trim_locked(tl_segment *seg, size_t over, tl_huge_shed *shed)
{
	size_t page = tl_os_page_size();
	over = (over + page - 1) & ~(page - 1);
	if (TL_HUGE_GUARD != 0 || shed->tail != NULL ||
	    seg->map_size < TL_SEGMENT_HEADER + over + page)
		return false;
	size_t map_size = seg->map_size - over;
	shed->tail = (uint8_t *)seg + map_size;
	shed->tail_size = over;
	tl_pool.mapped -= over;
	tl_segment_cut_back(seg, map_size);
	return true;
}

/* Over the peak with size bytes more in the cache: its oldest give memory
 * back, whole or their tail, until it is not (or the cache is empty). */
static void shed_over_peak_locked(size_t size, tl_huge_shed *shed)
{
	size_t over;
	while ((over = over_peak_locked(size)) != 0 &&
	       tl_pool.huge_count > 0) {
		uint32_t i = oldest_locked();
		tl_segment *old = tl_pool.huge_cache[i].seg;
		size_t was = old->map_size;
		if (trim_locked(old, over, shed)) {
			tl_pool.huge_cache[i].map_size = old->map_size;
			tl_u64_sub_relaxed(&tl_pool.huge_cached,
					   was - old->map_size);
			return;
		}
		evict_locked(i, shed);
	}
}

void tl_pool_huge_held(size_t let_go, size_t taken)
{
	if (taken < let_go) {
		tl_u64_sub_relaxed(&tl_pool.huge_live, let_go - taken);
		return;
	}
	size_t more = taken - let_go;
	uint64_t now = tl_u64_fetch_add_relaxed(&tl_pool.huge_live, more) +
		       more;
	uint64_t peak = tl_u64_max_relaxed(&tl_pool.huge_peak, now);
	/* The cache may be over the peak now: it gives back what the
	 * blocks took fresh.  (The unlocked read of huge_cached is a hint;
	 * over_peak_locked decides.) */
	uint64_t cached = tl_u64_load_relaxed(&tl_pool.huge_cached);
	if (cached == 0 || now + cached <= peak)
		return;
	tl_huge_shed shed = { NULL, NULL, 0 };
	tl_lock_acquire(&tl_pool.lock);
	shed_over_peak_locked(0, &shed);
	tl_lock_release(&tl_pool.lock);
	shed_unmap(&shed);
}

bool tl_pool_cache_huge(tl_segment *seg)
{
#if TL_SECURE
	/* a freed huge block unmapped: a use after free of it faults */
	if (tl_option(TL_OPT_secure_huge_unmap))
		return false;
#endif
	tl_page *page = &seg->slices[0];
	if (seg->map_size - TL_SEGMENT_HEADER - TL_HUGE_GUARD >
	    TL_HUGE_CACHE_SEGMENT ||
	    page->start != (uint8_t *)seg + TL_SEGMENT_HEADER)
		return false;
	if (seg->map_size > TL_HUGE_CACHE_BYTES)
		return false;
	uint64_t now = tl_os_now_ms();
	uint64_t until = now + (uint64_t)tl_option(TL_OPT_purge_delay);
	tl_huge_shed shed = { NULL, NULL, 0 };
	tl_lock_acquire(&tl_pool.lock);
	/* Full: the oldest make room. */
	while (tl_pool.huge_count >= TL_HUGE_CACHE_COUNT ||
	       tl_u64_load_relaxed(&tl_pool.huge_cached) + seg->map_size >
		       TL_HUGE_CACHE_BYTES)
		evict_locked(oldest_locked(), &shed);
	/* Never larger than the blocks once were: the others give back
	 * first, then this one its tail. */
	shed_over_peak_locked(seg->map_size, &shed);
	size_t over = over_peak_locked(seg->map_size);
	bool keep = over == 0 || trim_locked(seg, over, &shed);
	if (keep) {
		/* No block lives here now: a free of the old pointer is
		 * caught. */
		tl_uptr_store_relaxed(&page->owner, TL_OWNER_FREE);
		seg->used_pages = 0;
		tl_pool.huge_cache[tl_pool.huge_count++] = (tl_huge_slot){
			.map_size = seg->map_size, .until_ms = until,
			.seg = seg };
		tl_u64_add_relaxed(&tl_pool.huge_cached, seg->map_size);
		tl_pool_note_purge_at_locked(until);
	}
	bool due = keep && now >= tl_pool.next_purge_ms;
	bool wake = keep && tl_pool.threaded;
	tl_lock_release(&tl_pool.lock);
	shed_unmap(&shed);
	if (due)
		tl_pool_purge(false);
	else if (wake)
		tl_purger_wake();
	return keep;
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
