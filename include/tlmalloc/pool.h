/*
 * pool.h - the global pool's state, private to the files of the pool:
 * pool.c (segments, free pages, heap structs), abandoned.c (abandoned and
 * fork-orphaned pages), huge_cache.c (freed huge segments), purge.c
 * (purging), stats.c (the statistics walk) and pool_check.c (the
 * invariants).  Every other file calls the tl_pool_ functions of
 * internal.h and never sees these fields.
 *
 * Locking rule: every field of tl_pool is read and written under
 * tl_pool.lock, the only lock on any allocation path.  Functions ending in
 * _locked expect the caller to hold it.  System calls (mmap of a new
 * segment, madvise, munmap) are made with the lock released: a page being
 * purged is pinned (counted in its segment's used_pages) and out of every
 * list meanwhile.
 */
#ifndef TLMALLOC_POOL_H
#define TLMALLOC_POOL_H

#include "tlmalloc/internal.h"

/*
 * The huge cache's slots (huge_cache.c): a malloc's search reads this
 * array, not the segment headers, which would be a cache miss each.
 */
#define TL_HUGE_CACHE_COUNT 64
typedef struct tl_huge_slot {
	size_t map_size;		/* seg->map_size */
	uint64_t until_ms;		/* kept until then */
	tl_segment *seg;
} tl_huge_slot;

struct tl_pool {
	tl_lock lock;
	tl_page_list free_pages[2];	/* by kind: small, medium */
	tl_page_list abandoned[TL_CLASSES];
	tl_segment *segments;		/* every live segment */
	tl_heap *free_heaps;
	tl_heap *parked;		/* parked heaps, newest first */
	uint32_t parked_count;
	uint8_t *heap_area;
	size_t heap_area_left;
	size_t mapped;			/* bytes mapped for segments */
	size_t mapped_peak;		/* statistics: most mapped at once */
	uint64_t segment_count;		/* segments in the list */
	uint64_t segments_peak;		/* statistics: most at once */
	uint64_t next_purge_ms;		/* earliest purge_at; UINT64_MAX: none */
	tl_huge_slot huge_cache[TL_HUGE_CACHE_COUNT];	/* freed huge
					 * segments, huge_count of them */
	tl_atomic_u64 huge_cached;	/* their bytes (read without the
					   lock as a hint) */
	tl_atomic_u64 huge_live;	/* bytes of the huge blocks held */
	tl_atomic_u64 huge_peak;	/* most of huge_live at once: the
					   cache stays under it */
	uint32_t huge_count;
	uint32_t abandoned_dirty;	/* abandoned pages with dirty set */
	uint32_t heaps_live;
	uint32_t heaps_made;			/* heap structs carved */
	uint64_t threads_seen;			/* heaps handed out */
	uint64_t given_away;	/* full pages given away (tl_pool_give_away) */
	uint64_t purged;			/* bytes madvised, in all */
	uint64_t unmapped;			/* segments unmapped by purges */
	bool threaded;			/* a second heap was ever made, or
					   a heap of another thread than
					   the initial one */
	bool orphans;			/* fork child: orphaned pages to count */
};

extern struct tl_pool tl_pool;

/* The bytes of a page's area: 0 for a slice inside a larger page. */
static inline size_t tl_page_area_size(const tl_page *page)
{
	size_t size;
	tl_page_area(tl_segment_of(page->start), page, &size);
	return size;
}


/* A segment leaves the list: its pages' counts stay in their classes. */
void tl_pool_unregister_locked(tl_segment *seg);

/* A purge is due at when, or earlier. */
static inline void tl_pool_note_purge_at_locked(uint64_t when)
{
	if (when < tl_pool.next_purge_ms)
		tl_pool.next_purge_ms = when;
}

/* abandoned.c: an abandoned page of class cls (orphans counted first), now
 * heap's, not yet collected; NULL if none. */
tl_page *tl_pool_adopt_locked(tl_heap *heap, unsigned cls);
/* abandoned.c: the abandoned pages that other threads emptied become free
 * pages, dirty and due at now. */
void tl_pool_reclaim_abandoned_locked(uint64_t now);
/* pool.c, a purge's step: the parked heaps that are due (all, if force)
 * leave the list (linked by next_free) to be destroyed with the lock
 * released; earliest: lowered to the first of the others (now 0: none
 * is due, earliest is all it does). */
tl_heap *tl_pool_take_parked_locked(uint64_t now, bool force,
				    uint64_t *earliest);
/* abandoned.c: every abandoned page left uncounted is counted and its
 * frees collected (the statistics' walk wants exact counts). */
void tl_pool_count_abandoned_locked(void);
/* abandoned.c, a purge's steps: the abandoned pages whose free blocks are
 * due to be given back leave their lists pinned (linked by next; earliest
 * lowered to the first of the others); then, with the lock released,
 * their free blocks are madvised and they go back on their lists. */
tl_page *tl_pool_pin_abandoned_locked(uint64_t now, bool force,
				      uint64_t *earliest);
void tl_pool_purge_abandoned(tl_page *todo);
/* abandoned.c: after a fork, the orphaned pages are counted and become
 * abandoned pages, or free ones if empty (nothing to do without a fork). */
void tl_pool_adopt_orphans_locked(void);
/* abandoned.c, in the fork child before any other thread exists (no lock):
 * the pages of heaps other than the forking thread's (self), the shared
 * heap (shared) and the heap profiler's (profiler) are marked orphaned. */
void tl_pool_orphan_pages(uintptr_t self, uintptr_t shared,
			  uintptr_t profiler);

/* huge_cache.c: cached huge segments that are due (all if force) leave the
 * cache and the segment list for the unmap list (linked by next), which is
 * returned; earliest: lowered to the next one's time. */
tl_segment *tl_pool_expire_huge_locked(uint64_t now, bool force,
				       tl_segment *unmap, uint64_t *earliest);

#endif
