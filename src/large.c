/*
 * large.c - blocks above TL_MEDIUM_MAX (or above 64 KiB alignment): each is
 * a huge segment of its own.  A freed one goes to the pool's cache for a
 * while (huge_cache.c) and a large malloc reuses one, cut to its size or
 * grown (huge_fit); the others are mapped from the OS and unmapped on
 * free.  realloc grows or
 * shrinks one where it stands when the address space after it is free
 * (mremap, or for a block of several mappings its last one grown or fresh
 * pages mapped after it: segment.c) and else by moving its pages to a new
 * segment-aligned place: a growing buffer is never copied.  Growth, by
 * malloc or realloc, is filled with the cache's resident pages where it
 * can (huge_gather).
 */
#include <errno.h>

#include "tlmalloc/internal.h"
#include "tlmalloc/kept.h"
#include "tlmalloc/os.h"

/* Resize a huge block (below), unless it holds size bytes with at most
 * usable >> keep_shift to spare. */
static void *huge_resize(void *p, size_t size, unsigned keep_shift);
static void huge_release(tl_segment *seg);

/* Off the pool's books, then unmapped. */
static void huge_destroy(tl_segment *seg)
{
	tl_pool_unregister_segment(seg);
	tl_segment_unmap(seg);
}

/* A cut-off tail at least this long becomes a cached segment of its own,
 * and a piece at least this long is worth gathering (below). */
#define TL_HUGE_PIECE_MIN ((size_t)1 << 20)

/*
 * Fill the fresh growth of a huge segment, from offset from to its end,
 * with the resident pages of other cached segments, moved with mremap:
 * pages that were written once already, where fresh ones would each cost
 * a page fault and a zeroing.  A donor larger than the gap gives its tail
 * and goes back to the cache; one that fits goes whole.  Pieces under
 * TL_HUGE_PIECE_MIN, and donors that would split the segment into too
 * many mappings (segment.c), are left: what is not filled stays fresh.
 * Not with guard pages (the secure build): a donor's tail ends in its
 * guard page, which would land inside the block.  (docs/design.md,
 * "Huge segment", has the figures.)
 */
static void huge_gather(tl_segment *seg, size_t from)
{
	if (TL_HUGE_GUARD != 0)
		return;
	size_t end = seg->map_size;
	while (end - from >= TL_HUGE_PIECE_MIN) {
		tl_segment *d = tl_pool_take_huge(end - from);
		if (d == NULL)
			return;
		size_t have = d->map_size - TL_SEGMENT_HEADER;
		size_t n = have < end - from ? have : end - from;
		if (n < TL_HUGE_PIECE_MIN ||
		    !tl_segment_take_tail(seg, end, d, n)) {
			huge_release(d);
			return;
		}
		tl_pool_segment_resized(d, d->map_size - n);
		end -= n;
		if (n == have)
			huge_destroy(d);	/* its header is left */
		else
			huge_release(d);
	}
}


/*
 * Fit a cached huge segment to a block of size bytes, touching as little
 * fresh memory as it can: one too small grows (only the growth is fresh);
 * one at least twice the size is cut, its resident tail cached as a
 * segment of its own (or unmapped when the cache is full).  Cutting
 * less often gives back less; cutting at any excess made more of the
 * later blocks grow into fresh memory (docs/design.md, "Huge segment").
 * NULL when it cannot grow.
 */
static void *huge_fit(tl_segment *seg, size_t size)
{
	void *p = seg->slices[0].start;
	size_t keep = tl_segment_huge_map_size(TL_SEGMENT_HEADER, size);
	if (keep > seg->map_size)
		return huge_resize(p, size, 0);
	size_t tail = seg->map_size - keep;
	if (TL_HUGE_GUARD == 0 && tail >= TL_HUGE_PIECE_MIN && tail >= keep) {
		tl_segment *rest = tl_segment_split_huge(seg, keep);
		if (rest != NULL) {
			tl_pool_segment_resized(seg, keep);
			tl_pool_register_segment(rest);
			huge_release(rest);
		}
	}
	return p;
}

void *tl_large_alloc(size_t size, size_t alignment)
{
	tl_segment *seg = NULL;
	if (alignment <= TL_SEGMENT_HEADER)
		seg = tl_pool_take_huge(size);
	if (seg != NULL) {
		seg->slices[0].dirty = 1;	/* reused: calloc clears it */
		void *p = huge_fit(seg, size);
		if (p != NULL) {
			tl_pool_huge_held(0, tl_segment_of(p)->map_size);
			return p;
		}
		huge_release(seg);
	}
	seg = tl_segment_create_huge(size, alignment);
	if (seg == NULL) /* out of memory: kept blocks back to their pages */
		tl_kept_flush(tl_heap_local);
	if (seg == NULL && tl_heap_release_held()) /* out of memory */
		seg = tl_segment_create_huge(size, alignment);
	if (seg == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	tl_pool_register_segment(seg);
	tl_pool_huge_held(0, seg->map_size);
	seg->slices[0].dirty = 0;
	return seg->slices[0].start;
}

void tl_large_free(tl_segment *seg)
{
	tl_pool_huge_held(seg->map_size, 0);
	huge_release(seg);
}

/* A huge segment nobody holds: cached, quarantined or unmapped. */
static void huge_release(tl_segment *seg)
{
	if (tl_pool_cache_huge(seg))
		return;
#if TL_SECURE
	if (tl_huge_quarantine_hold(seg))
		return;
#endif
	huge_destroy(seg);
}

bool tl_large_is_fresh(const void *p)
{
	const tl_page *page = tl_page_of(tl_segment_of(p), p);
	/* A fresh mapping is zero until written; a reused one is dirty. */
	return page->kind == TL_PAGE_HUGE && !page->dirty;
}

/*
 * The secure build's guard page at the end of a huge segment: opened
 * before a resize (mremap wants one mapping), closed at the new end after.
 * Best effort once the block is resized: a refusal leaves no guard.
 */
static bool huge_unguard(tl_segment *seg)
{
#if TL_SECURE
	return tl_os_unguard((uint8_t *)seg + seg->map_size - TL_HUGE_GUARD,
			     TL_HUGE_GUARD);
#else
	(void)seg;
	return true;
#endif
}

static void huge_guard(tl_segment *seg, size_t map_size)
{
#if TL_SECURE
	tl_os_guard((uint8_t *)seg + map_size - TL_HUGE_GUARD, TL_HUGE_GUARD);
#else
	(void)seg;
	(void)map_size;
#endif
}

void *tl_large_resize(void *p, size_t size)
{
	size_t was = tl_segment_of(p)->map_size;
	/* realloc keeps a block that shrinks by half or less */
	void *q = huge_resize(p, size, 1);
	if (q != NULL)
		tl_pool_huge_held(was, tl_segment_of(q)->map_size);
	return q;
}

static void *huge_resize(void *p, size_t size, unsigned keep_shift)
{
	tl_segment *seg = tl_segment_of(p);
	tl_page *page = tl_page_of(seg, p);
	size_t offset = (size_t)(page->start - (uint8_t *)seg);
	size_t usable = tl_huge_usable(seg, page);
	if (size <= usable && usable - size <= usable >> keep_shift)
		return p;
	if (size > PTRDIFF_MAX - offset)
		return NULL;
	size_t map_size = tl_segment_huge_map_size(offset, size);
	if (!huge_unguard(seg))
		return NULL;
	size_t old_size = seg->map_size;
	if (tl_segment_resize_huge(seg, map_size)) {
		huge_guard(seg, map_size);
		tl_pool_segment_resized(seg, map_size);
		if (map_size > old_size)
			huge_gather(seg, old_size);
		return p;
	}
	/* Grow by moving the pages: no copy.  The segment leaves the pool's
	 * books while it moves (nobody else touches a block being
	 * reallocated) and comes back at its new address. */
	tl_pool_unregister_segment(seg);
	if (offset == TL_SEGMENT_HEADER) {
		tl_segment *moved = tl_segment_move_huge(seg, map_size);
		if (moved == NULL) {
			tl_pool_register_segment(seg);
			huge_guard(seg, seg->map_size);
			return NULL;
		}
		tl_pool_register_segment(moved);
		huge_guard(moved, map_size);
		huge_gather(moved, old_size);
		return moved->slices[0].start;
	}
	tl_segment_forget(seg);
	tl_segment *moved = tl_os_remap_moved(seg, old_size, map_size);
	if (moved == NULL) {
		tl_segment_remember(seg);
		tl_pool_register_segment(seg);
		huge_guard(seg, old_size);
		return NULL;
	}
	huge_guard(moved, map_size);
	moved->map_size = map_size;
	tl_segment_huge_sized(map_size);
	moved->slices[0].start = (uint8_t *)moved + offset;
	tl_segment_remember(moved);
	tl_pool_register_segment(moved);
	huge_gather(moved, old_size);
	return moved->slices[0].start;
}
