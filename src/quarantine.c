/*
 * quarantine.c - the secure variant's quarantine of freed blocks
 * (docs/secure.md, "Quarantine").
 *
 * Free checks a block, fills it and, with the option secure_quarantine at
 * N > 0, puts it in its thread's ring of N blocks instead of on its page's
 * lists; the block it pushes out is freed for real (free.c,
 * tl_free_released).  So a freed block is not handed out again before N
 * more frees of the thread: a write through a dangling pointer in that
 * time is found when the block is reused (the fill's check, or the mark's
 * and link's when it leaves the ring), and a second free in that time is
 * a double free (the block carries the quarantine's mark), where without
 * the quarantine it might already free the block's next owner.
 *
 * The block a thread freed last is looked at again at the thread's next
 * malloc or free (option secure_recheck; tl_quarantine_recheck, below):
 * its link, its mark and the fill of its first 64 bytes.  The usual dangling
 * pointer is written right after the free; held in the ring, the block
 * would show it only N frees later, or never in a program that ends first.
 *
 * Only blocks of small and medium pages that free fills or marks (free.c,
 * tl_free_owned and free_remote), only in thread heaps.  Quarantined
 * blocks count as live in the statistics and keep their pages; a thread's
 * exit frees them (thread_exit, init.c, before its heap is parked).
 */
#include "tlmalloc/internal.h"

#if TL_SECURE

bool tl_quarantine_hold(tl_block *block, uintptr_t mark, uint32_t n)
{
	tl_heap *heap = tl_heap_local;
	if (!tl_heap_is_thread_heap(heap))
		return false;
	if (heap->quarantine_newest != NULL)
		tl_quarantine_recheck(heap, "free");
	block->mark = mark ^ TL_SECURE_QUARANTINED;
	block->next = tl_quarantine_link(block->mark);
	uint32_t at = heap->quarantine_at;
	if (at >= n)	/* the option was lowered */
		at = 0;
	tl_block *out = heap->quarantine[at];
	heap->quarantine[at] = block;
	heap->quarantine_at = at + 1;
	if (tl_option(TL_OPT_secure_recheck))
		heap->quarantine_newest = block;
	if (out != NULL)
		tl_free_released(heap, out);
	return true;
}


/* The bytes of the freed block that tl_quarantine_recheck looks at: its
 * first cache line, which its link and mark share, where a dangling
 * pointer to a struct finds its first fields.  (Its cost, and that of 256
 * bytes: docs/secure.md, "What it costs".) */
#define TL_RECHECK_BYTES 64

void tl_quarantine_recheck(tl_heap *heap, const char *call)
{
	tl_block *block = heap->quarantine_newest;
	heap->quarantine_newest = NULL;
	if (tl_unlikely(!tl_quarantine_intact(block)))
		tl_fatal(call, block, "freed block modified (write after free)");
	tl_page *page = tl_page_of(tl_segment_of(block), block);
	uintptr_t d = block->mark ^ TL_SECURE_QUARANTINED ^
		      tl_free_mark(page, block);
	if (tl_unlikely(d > TL_SECURE_UNFILLED ||
			(d == 0 && !tl_secure_fill_intact(page, block,
						  TL_RECHECK_BYTES))))
		tl_fatal(call, block, "freed block modified (write after free)");
}

void tl_quarantine_flush(tl_heap *heap)
{
	heap->quarantine_newest = NULL;
	for (uint32_t i = 0; i < TL_QUARANTINE_MAX; i++) {
		tl_block *out = heap->quarantine[i];
		heap->quarantine[i] = NULL;
		if (out != NULL)
			tl_free_released(heap, out);
	}
	heap->quarantine_at = 0;
}
#endif
