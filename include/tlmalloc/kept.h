/*
 * kept.h - kept blocks (the option kept_bytes, off by default): a block of
 * another live heap's page that a thread frees stays with that thread, in
 * a LIFO list per class in its heap, for its own next malloc of the
 * class; past the list's limit a block goes back to its page (thread_free,
 * as any other thread's free), and all of them do at the thread's exit,
 * at tl_trim, at a statistics snapshot it takes and when memory runs out
 * (tl_kept_flush).
 *
 * Why: a block another thread frees goes cold in its owner's lists (its
 * owner takes it when its page's head runs dry, long after, from another
 * core's cache) while the freeing thread carves or takes blocks of its
 * own; kept, the block is taken again while it is still in the cache that
 * freed it, and fewer blocks circulate (`server`: 0.85x the time, 0.6x the
 * peak RSS).  Why off: a kept block handed out is still another thread's,
 * so its next free is a remote one too (`mstress`, whose threads free
 * their young blocks soon: 1.1x the time).  docs/design.md, "Kept blocks".
 * The lists are popped by the slow path only (tl_malloc_slow, when the
 * class's page has no block at hand): no instruction on either fast path.
 *
 * A kept block is still in use for its page (no list of the page holds
 * it, no count has it free): its page is neither emptied nor given away
 * while a thread keeps it, whoever owns the page meanwhile.  It carries
 * its free mark, so any second free of it reaches the checks of free.c,
 * which find it by its link (tl_kept_holds): the link is encoded with
 * TL_KEPT_TAG, whose top bits no pointer has, so a word of user data
 * decodes to NULL or to an address in tlmalloc's segments by chance once
 * in far more than 2^32 (2^-16 for the top bits alone).
 *
 * The secure build keeps nothing (TL_KEEPS 0): its frees go through the
 * quarantine and its links are keyed per page.
 */
#ifndef TLMALLOC_KEPT_H
#define TLMALLOC_KEPT_H

#include "tlmalloc/internal.h"

#define TL_KEEPS (!TL_SECURE)

/* At most this many blocks of a class are kept, and at most the heap's
 * kept_bytes (the option kept_bytes) of it: none of a class larger. */
#define TL_KEPT_MAX 128u

/* The statistics' count of blocks handed out of kept lists lags by less
 * than this a class and a live thread (exact for the thread that takes a
 * snapshot, which flushes its own). */
#define TL_KEPT_COUNT_BATCH 64u

/* "kept" in the top bits: an encoded link is no canonical address. */
#define TL_KEPT_TAG ((uintptr_t)0x6b65707400000000ull)

static inline tl_block *tl_kept_link(const tl_block *link)
{
	return (tl_block *)((uintptr_t)link ^ TL_KEPT_TAG);
}

/*
 * Keep block, of page (another live heap's), that heap's thread frees,
 * checked already, with its free mark, when the heap keeps blocks (its
 * kept_bytes is not 0: the caller tests it); false when the class's list
 * is full, and the block goes back to its page.
 */
static inline bool tl_kept_push(tl_heap *heap, const tl_page *page,
				tl_block *block, uintptr_t mark)
{
#if TL_KEEPS
	unsigned cls = __atomic_load_n(&page->kept_class, __ATOMIC_RELAXED);
	uint32_t n = heap->kept_count[cls];
	if (n >= TL_KEPT_MAX ||
	    (size_t)(n + 1) * tl_class_size[cls] > heap->kept_bytes)
		return false;
#if TL_CHECKS
	block->mark = mark;
#else
	(void)mark;
#endif
	block->next = tl_kept_link(heap->kept[cls]);
	heap->kept[cls] = block;
	heap->kept_count[cls] = (uint16_t)(n + 1);
	return true;
#else
	(void)heap;
	(void)page;
	(void)block;
	(void)mark;
	return false;
#endif
}

/* The block of class cls the heap's thread kept last, now handed out;
 * NULL if it keeps none. */
static inline tl_block *tl_kept_pop(tl_heap *heap, unsigned cls)
{
#if TL_KEEPS
	tl_block *block = heap->kept[cls];
	if (block == NULL)
		return NULL;
	heap->kept[cls] = tl_kept_link(block->next);
	heap->kept_count[cls]--;
#if TL_COUNTS
	/* counted in the class's total TL_KEPT_COUNT_BATCH at a time */
	if (++heap->kept_allocs[cls] == TL_KEPT_COUNT_BATCH) {
		tl_u64_add_relaxed(&tl_class_allocs[cls], TL_KEPT_COUNT_BATCH);
		heap->kept_allocs[cls] = 0;
	}
#endif
#if TL_CHECKS
	block->mark = 0;
#endif
	return block;
#else
	(void)heap;
	(void)cls;
	return NULL;
#endif
}

/* Every kept block of the heap back to its page (its thread's exit,
 * tl_trim, a statistics snapshot, out of memory); the heap's kept_allocs
 * into the classes' totals. */
void tl_kept_flush(tl_heap *heap);

/* Whether a block that carries its free mark lies in some thread's kept
 * list, by its link (above): NULL or an aligned address of one of
 * tlmalloc's segments once decoded.  A second free of it is a double
 * free.  Inline and short: free.c's checks inline it, and more here cost
 * tl_free_slow registers on all its paths (docs/design.md, "Kept
 * blocks"). */
static inline bool tl_kept_holds(const tl_block *block)
{
#if TL_KEEPS
	const tl_block *next = tl_kept_link(block->next);
	return next == NULL ||
	       (((uintptr_t)next & (TL_MIN_ALIGN - 1)) == 0 &&
		tl_segment_is_ours(next));
#else
	(void)block;
	return false;
#endif
}

#endif
