/*
 * kept.c - kept blocks (kept.h): a thread's kept lists given back to their
 * pages.
 */
#include "tlmalloc/kept.h"

#if TL_KEEPS
/* A kept list's blocks back to their pages' thread_free, one CAS for each
 * run of blocks of the same page (the list is LIFO: runs are common). */
static void flush_list(tl_block *block)
{
	while (block != NULL) {
		tl_page *page = tl_page_of(tl_segment_of(block), block);
		tl_block *first = block, *last = block;
		uint32_t n = 1;
		block = tl_kept_link(block->next);
		while (block != NULL &&
		       tl_page_of(tl_segment_of(block), block) == page) {
			last->next = tl_link_encode(page, last, block);
			last = block;
			n++;
			block = tl_kept_link(block->next);
		}
		tl_page_push_remote_chain(page, first, last, n);
	}
}
#endif

void tl_kept_flush(tl_heap *heap)
{
#if TL_KEEPS
	for (unsigned cls = 1; cls < TL_CLASSES; cls++) {
#if TL_COUNTS
		if (heap->kept_allocs[cls] != 0) {
			tl_u64_add_relaxed(&tl_class_allocs[cls],
					   heap->kept_allocs[cls]);
			heap->kept_allocs[cls] = 0;
		}
#endif
		tl_block *list = heap->kept[cls];
		if (list == NULL)
			continue;
		heap->kept[cls] = NULL;
		heap->kept_count[cls] = 0;
		flush_list(list);
	}
#else
	(void)heap;
#endif
}
