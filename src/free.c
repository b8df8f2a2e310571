/*
 * free.c - the generic path of free: a block whose page the caller's heap
 * does not own as a plain, non-full page, or that failed the fast path's
 * checks.
 *
 *   follower slice     the block is in a page of several slices: look at
 *                      its leader
 *   own page           check the block in full, free locally (a full page
 *                      goes back to its queue)
 *   huge page          the block is a whole segment: unmap or cache it
 *   other owner        check, push on the page's thread_free with one
 *                      CAS; the owner (or whoever adopts the page) collects
 *   free page          nobody owns a block there: a double or invalid free
 *
 * The checks (tl_free_check), in every build: the pointer starts a block of
 * the page's carved part, and the block does not carry the free mark that
 * every free block carries (internal.h, tl_free_mark).  A mark alone may be
 * user data: the owner confirms by walking the page's lists; another thread
 * cannot walk the owner's lists and confirms by the block's link, which in a
 * free block is NULL or another block of the page (the secure build's keyed
 * mark needs no confirmation there: user data matches it once in 2^64).
 * The secure build also fills freed blocks (fill.c has the fill's checks).
 *
 * A sized free (tl_free_sized_slow, after the inline test of
 * tl_free_sized_local failed) also checks the size given against the
 * block: its page's sized_min..block_size, the class that an aligned
 * request of that size would have had, or a huge block's bounds.
 */
#include <string.h>

#include "tlmalloc/fastpath.h"
#include "tlmalloc/guarded.h"
#include "tlmalloc/kept.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"
#include "tlmalloc/profile.h"

#if TL_CHECKS
static bool list_holds(const tl_page *page, const tl_block *b,
		       const tl_block *block)
{
	uint32_t n = 0, cap = page->capacity;
	for (; b != NULL && n <= cap; b = tl_link_decode(page, b, b->next), n++)
		if (b == block)
			return true;
	return false;
}

/* Whether block is on one of the page's free lists (the owner's view: the
 * blocks of a thread_free snapshot do not change under it). */
static bool page_holds_free(const tl_page *page, const tl_block *block)
{
	const tl_block *remote =
		tl_remote_list(tl_uptr_load_acquire(&page->thread_free));
	return list_holds(page, page->free, block) ||
	       list_holds(page, page->local_free, block) ||
	       list_holds(page, remote, block) ||
	       tl_profile_holds(tl_heap_local, block);
}

/* A marked block as another thread sees it: free, unless its link is
 * neither NULL nor a block of the page. */
static bool looks_free(const tl_page *page, const tl_block *block)
{
#if TL_SECURE
	(void)page;
	(void)block;
	return true;
#else
	return block->next == NULL || tl_block_in_page(page, block->next);
#endif
}
#endif

__attribute__((noreturn)) static void not_a_block(const char *call,
						 const void *p)
{
	tl_fatal(call, p, "not the start of a block (interior or stray pointer)");
}

/* A pointer that tl_block_in_page rejects: a block start of the page past
 * its carved part (malloc never returned it), or no block start at all. */
__attribute__((noreturn)) static void not_carved(const char *call,
						const tl_page *page,
						const void *p)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)page->start;
	if (page->block_size != 0 &&
	    off < (uintptr_t)page->reserved * page->block_size &&
	    off % page->block_size == 0)
		tl_fatal(call, p, "not a block malloc returned (past the "
				  "page's carved blocks)");
	not_a_block(call, p);
}

static inline void check_block(const char *call, const tl_page *page,
				const void *p, bool owner)
{
	if (tl_unlikely(!tl_block_in_page(page, p)))
		not_carved(call, page, p);
#if TL_CHECKS
	const tl_block *block = p;
	/* free: a double free; realloc, malloc_usable_size: a freed block */
#if TL_SECURE
	if (tl_unlikely(((block->mark ^ tl_free_mark(page, block)) |
			 TL_SECURE_UNFILLED) ==
			(TL_SECURE_QUARANTINED | TL_SECURE_UNFILLED)))
		tl_fatal(call, p, call[0] == 'f' ? "double free"
						 : "block already freed");
#endif
	if (tl_unlikely(tl_block_marked(page, block)) &&
	    ((owner ? page_holds_free(page, block) : looks_free(page, block)) ||
	     tl_kept_holds(block)))
		tl_fatal(call, p, call[0] == 'f' ? "double free"
						 : "block already freed");
#else
	(void)owner;	/* no marks: a double free goes unseen */
#endif
}

/*
 * The bytes right before a huge block lie in its segment's header, past
 * all the header holds (its descriptors, sizes and cuts): zero from the
 * mapping on and never written by tlmalloc, whether the block starts at
 * TL_SEGMENT_HEADER or further for an alignment, so a write there (an
 * underflow of up to this many bytes) is found when the block is freed,
 * reallocated or measured.
 */
#define HUGE_UNDERFLOW_BYTES 64
_Static_assert(sizeof(tl_segment) + HUGE_UNDERFLOW_BYTES <= TL_SEGMENT_HEADER,
	       "the bytes before a huge block are the header's unused tail");

static void huge_underflow_check(const char *call, const tl_page *page)
{
	const uint64_t *w = (const uint64_t *)(const void *)
		(page->start - HUGE_UNDERFLOW_BYTES);
	uint64_t any = 0;
	for (size_t i = 0; i < HUGE_UNDERFLOW_BYTES / sizeof(*w); i++)
		any |= w[i];
	if (tl_unlikely(any != 0))
		tl_fatal(call, page->start, "the bytes before the block were "
					    "overwritten (buffer underflow)");
}

void tl_free_check(const char *call, const tl_page *page, const void *p,
		   bool owner)
{
	if (page->kind == TL_PAGE_HUGE) {	/* one block, at start */
		if (p != page->start)
			not_a_block(call, p);
		huge_underflow_check(call, page);
		return;
	}
	check_block(call, page, p, owner);
}

static size_t put_text(char *out, const char *text)
{
	size_t n = strlen(text);
	memcpy(out, text, n);
	return n;
}

__attribute__((noreturn)) static void size_mismatch(const char *call,
						  const void *p, size_t size,
						  size_t usable)
{
	char what[128];
	size_t n = put_text(what, "size ");
	n += tl_format_u64(what + n, size, 10);
	n += put_text(what + n, " does not match the block (");
	n += tl_format_u64(what + n, usable, 10);
	n += put_text(what + n, " bytes): freed as another size or type");
	what[n] = '\0';
	tl_fatal(call, p, what);
}

/* What tl_free_sized_slow checks; anything that is not a live block of
 * tlmalloc's is left for free to report. */
static void sized_check(const char *call, const void *p, size_t size,
			size_t alignment)
{
	if (p == NULL)
		return;
	if (!tl_segment_is_ours(p)) {
		if (tl_guarded_holds(p) && size > tl_guarded_usable(call, p))
			size_mismatch(call, p, size, tl_guarded_usable(call, p));
#if TL_SECURE
		if (tl_zero_holds(p)) {
			tl_zero_check(call, p);
			if (size != 0)
				size_mismatch(call, p, size, 0);
		}
#endif
		return;
	}
	tl_segment *seg = tl_segment_of(p);
	tl_page *page = tl_page_of(seg, p);
	if (tl_uptr_load_relaxed(&page->owner) == TL_OWNER_FREE)
		return;
	/* the size a block of the page was asked for, as malloc counts it
	 * (the secure build's malloc adds the canary's tail) */
	size_t given = size;
#if TL_SECURE
	size = tl_canary_ask(size, tl_canary_tail());
#endif
	unsigned cls = tl_aligned_class(alignment, size);
	if (page->kind == TL_PAGE_HUGE) {
		size_t usable = tl_huge_usable(seg, page);
		/* no canary: the size given against the block's */
		if (p == page->start && (cls != 0 || given > usable))
			size_mismatch(call, p, given, usable);
		return;
	}
	if (!tl_block_in_page(page, p))
		return;
#if TL_SECURE
	if (tl_canary_tail() != 0 && tl_canary_page(page)) {
		/* exact: a sized free must give the size asked for (C23's
		 * free_sized, C++'s sized delete), and n is that size for
		 * every block with a canary (realloc and the aligned family
		 * set it too) */
		size_t n = tl_canary_check(call, page, p);
		if (given != n)
			size_mismatch(call, p, given, n);
	}
#endif
	size_t asked = alignment > TL_MIN_ALIGN && cls != 0
			       ? tl_class_size[cls] : size;
	if (cls == 0 || !tl_page_holds_size(page, asked))
		size_mismatch(call, p, given, page->block_size);
}


/* The mark a freed block gets: the secure build fills the block (its
 * first two words are the link and the mark), or marks it unfilled. */
static TL_ALWAYS_INLINE uintptr_t fill_freed(const tl_page *page,
					     tl_block *block, uintptr_t mark)
{
#if TL_SECURE
	size_t bs = page->block_size;
	if (bs <= TL_SECURE_FILL_MAX && tl_canary_tail() != 0) {
		tl_canary_check("free", page, block);
		if (tl_option(TL_OPT_secure_underflow))
			tl_canary_check_before("free", page, block);
	}
	if (bs <= TL_SECURE_FILL_MAX && tl_option(TL_OPT_secure_fill)) {
		memset(block + 1, TL_SECURE_FILL, bs - sizeof(tl_block));
	} else {
		mark ^= TL_SECURE_UNFILLED;
		tl_secure_fill_tail(page, block);
	}
#else
	(void)page;
	(void)block;
#endif
	return mark;
}

/* Whether the secure build's quarantine took the freed block (the
 * option tested here, so that with it off no call is made). */
static inline bool quarantined(tl_block *block, uintptr_t mark)
{
#if TL_SECURE
	uint32_t n = (uint32_t)tl_option(TL_OPT_secure_quarantine);
	return n != 0 && tl_quarantine_hold(block, mark, n);
#else
	(void)block;
	(void)mark;
	return false;
#endif
}

/* The owner's free that missed the fast path: a block past a medium
 * page's first slice, most often (rptest: two in three of them). */
static TL_ALWAYS_INLINE void free_owned(tl_page *page, void *p)
{
	tl_block *block = p;
	check_block("free", page, block, true);
	uintptr_t mark = fill_freed(page, block, tl_free_mark(page, block));
	if (quarantined(block, mark))
		return;
	tl_page_push_local(page, block, mark);
}

void tl_free_owned(tl_page *page, void *p)
{
	free_owned(page, p);
}

/* Push a chain of n blocks, first to last (linked, marked), on the
 * thread_free of a page the caller does not own, with one CAS; returns the
 * count of blocks waiting there now (exact below 2^16: tl_page_collect). */
static TL_ALWAYS_INLINE uint32_t push_chain(tl_page *page, tl_block *first,
					    tl_block *last, uint32_t n)
{
	/* head is count << SHIFT | list: head - list + add is the count
	 * plus n, over first (a carry past the top bits drops, as the
	 * count wraps); add does not change in the loop */
	uintptr_t add = ((uintptr_t)n << TL_REMOTE_COUNT_SHIFT) |
			(uintptr_t)first;
	uintptr_t head = tl_uptr_load_relaxed(&page->thread_free);
	uintptr_t next;
	do {
		tl_block *list = tl_remote_list(head);
		last->next = tl_link_encode(page, last, list);
		next = head - (uintptr_t)list + add;
	} while (!tl_uptr_cas_weak_release(&page->thread_free, &head, next));
	return tl_remote_count(next);
}

/* The same for one checked block. */
static uint32_t push_remote(tl_page *page, tl_block *block, uintptr_t mark)
{
#if TL_CHECKS
	block->mark = mark;
#else
	(void)mark;
#endif
	return push_chain(page, block, block, 1);
}

void tl_page_push_remote_chain(tl_page *page, tl_block *first,
			       tl_block *last, uint32_t n)
{
	push_chain(page, first, last, n);
}

/*
 * After a free into another heap's page: a full page whose blocks are now
 * all freed by other threads goes to the pool as a free page, out of its
 * heap's full list (heap.c, "Full pages given away"), once it has been
 * full for a while or its heap has stopped filling pages.  full_heap is
 * nonzero only while the page is in a full list; it is read again under
 * the locks, with the count.  Every field read here is in the
 * descriptor's second line: the first is the owner's, which its malloc
 * writes.
 */
#if !TL_SECURE
static TL_NOINLINE void give_away_if_due(tl_page *page, uint32_t index);
#endif

static TL_ALWAYS_INLINE void maybe_give_away(tl_page *page, uint32_t waiting)
{
#if TL_SECURE
	(void)page;
	(void)waiting;
#else
	uint32_t index = tl_page_full_heap(page);
	if (tl_unlikely(index != 0) &&
	    waiting == __atomic_load_n(&page->full_capacity, __ATOMIC_RELAXED))
		give_away_if_due(page, index);
#endif
}

#if !TL_SECURE
/*
 * The rest of it, for a page in a full list whose blocks other threads
 * have all freed now (out of line: rare).  Given
 * away once full for long enough, or at once when its heap has put no
 * page in its full list since the coarse clock last ticked: a producer
 * fills pages all the time and takes an emptied one back itself, a heap
 * that stopped (its thread waits) would keep the page until it allocates
 * again, since no free comes after the last (`server`'s main thread
 * fills its table in a few ms, and the workers empty most of its pages
 * within the 12 ms).  Times in units of 4 ms (full_since, full_last); a
 * wrap (after 262 s) only delays the page.
 */
static TL_NOINLINE void give_away_if_due(tl_page *page, uint32_t index)
{
	uint16_t now = (uint16_t)(tl_os_coarse_ms() >> 2);
	uint16_t full_for = (uint16_t)(now -
		__atomic_load_n(&page->full_since, __ATOMIC_RELAXED));
	if ((uint32_t)full_for * 4 <
	    (uint32_t)tl_option(TL_OPT_purge_delay) / TL_GIVE_AFTER_DIV) {
		const tl_heap *heap = index < TL_HEAP_TABLE ?
			(const tl_heap *)tl_uptr_load_acquire(
				&tl_heap_table[index]) : NULL;
		/* not after now: a page pushed since this thread read the
		 * clock counts too */
		if (heap == NULL ||
		    (int16_t)(now - __atomic_load_n(&heap->full_last,
						    __ATOMIC_RELAXED)) <= 0)
			return;
	}
	tl_pool_give_away(page, index);
	/* the pool may want its purger now; the free paths that called
	 * this poll for nothing else (free_remote_lean) */
	tl_purger_poll();
}
#endif

/* The rest of free_remote when the calling thread keeps blocks: kept
 * (kept.h) if the page is a live heap's (an abandoned, orphaned or parked
 * page's blocks go to it, for the heap that adopts it) and its class's
 * list has room, else pushed on the page's thread_free.  Out of line, and
 * reading what it needs again, so that tl_free_slow's other paths keep
 * their registers. */
static TL_NOINLINE void free_kept(tl_heap *heap, tl_page *page,
				  tl_block *block, uintptr_t mark)
{
	uintptr_t owner = tl_uptr_load_relaxed(&page->owner) &
			  ~(uintptr_t)TL_OWNER_FULL;
	if (owner >= TL_OWNER_MARKERS &&
	    tl_kept_push(heap, page, block, mark))
		return;
	maybe_give_away(page, push_remote(page, block, mark));
}

/* A block of another heap's page (or an abandoned one): checked, then kept
 * for the calling thread's next malloc of its class (kept.h) or, when it
 * keeps no more, pushed on the page's thread_free with one CAS.  In its
 * page's first slice the fast path's two checks do (tl_free_checks_pass);
 * past it, where the test of a slice offset does not apply, the checks run
 * in full. */
static TL_ALWAYS_INLINE void free_remote(tl_heap *heap, tl_page *page,
					tl_block *block, bool first_slice)
{
	uintptr_t mark = tl_free_mark(page, block);
	if (!first_slice ||
	    !tl_free_checks_pass(page, block, mark,
				 __atomic_load_n(&page->slice_limit,
						 __ATOMIC_RELAXED)))
		check_block("free", page, block, false);
	mark = fill_freed(page, block, mark);
	if (quarantined(block, mark))
		return;
	if (tl_unlikely(heap->kept_bytes != 0))
		free_kept(heap, page, block, mark);
	else
		maybe_give_away(page, push_remote(page, block, mark));
}

#if TL_SECURE
void tl_free_released(tl_heap *heap, tl_block *block)
{
	tl_page *page = tl_page_of(tl_segment_of(block), block);
	uintptr_t mark = block->mark ^ TL_SECURE_QUARANTINED;
	uintptr_t d = mark ^ tl_free_mark(page, block);
	/* its mark and link, and its fill (if it has one, with
	 * secure_quarantine_check): a write in its time in the quarantine is
	 * found here, whether or not the block is ever handed out again */
	if (tl_unlikely(d > TL_SECURE_UNFILLED ||
			!tl_quarantine_intact(block) ||
			(d == 0 && tl_option(TL_OPT_secure_quarantine_check) &&
			 !tl_secure_fill_intact(page, block,
						page->block_size))))
		tl_fatal("free", block,
			 "quarantined block modified (write after free)");
	/* a full page of the heap's own too goes by thread_free, which the
	 * heap's sweep looks at (its free may be unfulling that page now) */
	if (tl_uptr_load_relaxed(&page->owner) == heap->id)
		tl_page_push_local(page, block, mark);
	else
		push_remote(page, block, mark);
}
#endif

/* The owner's free into its page flagged full: back to its queue, unless
 * the page was given away since the caller read its owner (heap.c, "Full
 * pages given away"): then the free goes the way its owner word says now.
 * Out of line, so free_generic's common paths keep their registers. */
static TL_NOINLINE void free_into_full(tl_heap *heap, tl_page *page, void *p)
{
	if (tl_heap_full_hold(heap, page)) {
		tl_free_owned(page, p);
		tl_heap_page_unfull(heap, page);
		return;
	}
	tl_free_generic(heap, page, p);
}

/* The generic path, inlined in each of its callers: a free that missed
 * the fast path is most often another thread's block (free_remote),
 * reached here with no call more, or the owner's past a medium page's
 * first slice (free_owned). */
static TL_ALWAYS_INLINE void free_generic(tl_heap *heap, tl_page *page,
					  void *p)
{
	uintptr_t owner = tl_uptr_load_relaxed(&page->owner);
	bool first_slice = owner != TL_OWNER_FOLLOWER;
	if (!first_slice) {
		page -= page->slice_offset;
		owner = tl_uptr_load_relaxed(&page->owner);
	}
	/* A heap's page (full or not): another heap's, the most frequent by
	 * far, takes two compares to reach free_remote. */
	uintptr_t heap_of = owner & ~(uintptr_t)TL_OWNER_FULL;
	if (tl_likely(heap_of >= TL_OWNER_MARKERS)) {
		if (tl_unlikely(heap_of == heap->id ||
				heap_of == tl_profile_heap_id())) {
			if (owner == heap->id)
				free_owned(page, p);
			else if (heap_of == heap->id)
				free_into_full(heap, page, p);
			else
				tl_profile_free(page, p); /* a sampled block */
			return;
		}
	} else if (owner == TL_OWNER_HUGE) {
		tl_free_check("free", page, p, false);
		tl_profile_huge_freed(p);
		tl_large_free(tl_segment_of(p));
		return;
	} else if (owner == TL_OWNER_FREE) {
		tl_fatal("free", p, "block of a free page (double free?)");
	}
	/* another heap's (kept, if the thread keeps blocks), or abandoned,
	 * orphaned, parked: thread_free */
	free_remote(heap, page, p, first_slice);
}

void tl_free_generic(tl_heap *heap, tl_page *page, void *p)
{
	free_generic(heap, page, p);
}

/*
 * The slow free most frequent by far: a block of another heap's page (or
 * of an abandoned, orphaned or parked one) in its page's first slice,
 * with the fast path's two checks passed, freed by a thread that keeps no
 * blocks: pushed on the page's thread_free with one CAS.  With sized, the
 * size given must be one the page serves (the sized free's check, read
 * from the line other threads' frees read).  Every other call on this
 * path is a tail call or rare, so tl_free_slow and tl_free_sized_slow
 * save no register for it (docs/measurements.md, "The remote free,
 * lean"); it polls for the purger only after a page given away, the one
 * pool operation it can make (init.c: only the pool wakes the purger).
 * False, having done nothing, for anything else (the owner's
 * free past a medium page's first slice, a failed check, a huge block):
 * the general path decides, from the start.  The secure build's frees
 * fill, check in full and quarantine: none takes this path there.
 */
#define TL_OWNERS_REMOTE ((1ull << TL_OWNER_ABANDONED) | \
			  (1ull << TL_OWNER_ORPHAN) | (1ull << TL_OWNER_PARKED))

#if !TL_SECURE
/* Whether a free into a page whose owner word is owner goes on its
 * thread_free by the lean paths: an abandoned, orphaned or parked page's,
 * or another heap's (not the profiler's) while this thread keeps no
 * blocks. */
static TL_ALWAYS_INLINE bool frees_remotely(uintptr_t owner)
{
	if (owner < TL_OWNER_MARKERS)
		return (TL_OWNERS_REMOTE >> owner) & 1;
	const tl_heap *heap = tl_heap_local;
	uintptr_t heap_of = owner & ~(uintptr_t)TL_OWNER_FULL;
	return heap_of != heap->id && heap_of != tl_profile_heap_id() &&
	       heap->kept_bytes == 0;
}
#endif

static TL_ALWAYS_INLINE bool free_remote_lean(tl_page *page, tl_block *block,
					      bool sized, size_t size)
{
#if TL_SECURE
	(void)page;
	(void)block;
	(void)sized;
	(void)size;
	return false;
#else
	if (sized && !tl_page_holds_size_remote(page, size))
		return false;
	if (!frees_remotely(tl_uptr_load_relaxed(&page->owner)))
		return false;
	uintptr_t mark = tl_free_mark(page, block);
	if (!tl_free_checks_pass(page, block, mark,
				 __atomic_load_n(&page->slice_limit,
						 __ATOMIC_RELAXED)))
		return false;
	maybe_give_away(page, push_remote(page, block, mark));
	return true;
#endif
}

/* A pointer outside tlmalloc's segments: a guarded sample (guarded.c),
 * the secure build's zero-size block, or an invalid free. */
static TL_NOINLINE void free_foreign(void *p)
{
	if (tl_guarded_holds(p)) {
		tl_guarded_free("free", p);
		return;
	}
#if TL_SECURE
	if (tl_zero_holds(p)) {
		tl_zero_free("free", p);
		return;
	}
#endif
	tl_fatal("free", p, "not allocated by tlmalloc");
}

/*
 * A block past a medium page's first slice (its slice a follower, page its
 * leader) with the full check of a block start passed and no free mark:
 * the owner's free (rptest: most of its slow frees) pushed on local_free,
 * another thread's as free_remote_lean would; false for anything else.
 * Out of tl_free_slow's way: only free_follower inlines it.
 */
static TL_ALWAYS_INLINE bool free_follower_lean(tl_page *page, tl_block *block)
{
#if TL_SECURE
	(void)page;
	(void)block;
	return false;
#else
	uintptr_t owner = tl_uptr_load_relaxed(&page->owner);
	const tl_heap *heap = tl_heap_local;
	if (!tl_block_in_page(page, block) || tl_block_marked(page, block))
		return false;
	uintptr_t mark = tl_free_mark(page, block);
	if (owner == heap->id)
		tl_page_push_local(page, block, mark);
	else if (frees_remotely(owner))
		maybe_give_away(page, push_remote(page, block, mark));
	else
		return false;
	return true;
#endif
}

/* The frees free_slow_general sends nowhere else: from the start. */
static TL_NOINLINE void free_slow_rest(tl_page *slice, void *p)
{
	free_generic(tl_heap_local, slice, p);
	tl_purger_poll();
}

/*
 * A block past a medium page's first slice (slice a follower): the owner's
 * free and another thread's, checked in full, by free_follower_lean; the
 * rest from the start.  The owner's free of a medium block lands here
 * fifteen times in sixteen (rptest, mstress; docs/measurements.md, "The
 * page that goes full and comes back").
 */
static TL_NOINLINE void free_follower(tl_page *slice, void *p)
{
	if (free_follower_lean(slice - slice->slice_offset, p))
		return;
	free_slow_rest(slice, p);
}

/*
 * Every free of a block in tlmalloc's segments (slice: the descriptor of
 * its 64 KiB slice) that free_remote_lean did not take, sent on by jumps,
 * so that no path saves a register for another, nor tl_free_slow for any:
 * past a medium page's first slice; the owner's free into its page
 * flagged full (a page of eight 8 KiB blocks goes full and comes back
 * every few mallocs when they are replaced at random: rptest); the rest
 * (docs/measurements.md, "The page that goes full and comes back").
 */
static TL_NOINLINE void free_slow_general(tl_page *slice, void *p)
{
	uintptr_t owner = tl_uptr_load_relaxed(&slice->owner);
	if (owner == TL_OWNER_FOLLOWER) {
		free_follower(slice, p);
		return;
	}
	/* (a thread without a heap has id 0: no owner word is 1) */
	tl_heap *heap = tl_heap_local;
	if (owner == (heap->id | TL_OWNER_FULL))
		free_into_full(heap, slice, p);
	else
		free_slow_rest(slice, p);
}

/* A sized free that is not free_remote_lean's case: the size checked in
 * full (a block past a medium page's first slice among them), then free. */
static TL_NOINLINE void free_sized_general(const char *call, void *p,
					   size_t size, size_t alignment)
{
	sized_check(call, p, size, alignment);
	tl_free_local(p);
}

/* A sized free that missed the fast path is most often another thread's
 * block of a small or medium page with the right size (larson --free
 * sized: two in three frees): the size against its page, read from the
 * line other threads' frees read (free_remote_lean). */
void tl_free_sized_slow(const char *call, void *p, size_t size,
			size_t alignment)
{
	if (alignment == 0 && tl_segment_is_ours(p)) {
		if (free_remote_lean(tl_slice_of(tl_segment_of(p), p), p,
				     true, size))
			return;
	}
	free_sized_general(call, p, size, alignment);
}

void tl_free_slow(void *p)
{
	if (tl_unlikely(!tl_segment_is_ours(p))) {	/* NULL too */
		if (p != NULL)
			free_foreign(p);
		return;
	}
	tl_page *slice = tl_slice_of(tl_segment_of(p), p);
	if (tl_likely(free_remote_lean(slice, p, false, 0)))
		return;
	free_slow_general(slice, p);
}
