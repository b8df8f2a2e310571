/*
 * free.c - the generic path of free: a block whose page the caller's heap
 * does not own as a plain, non-full page.
 *
 *   follower slice     the block is in a page of several slices: look at
 *                      its leader (a local free ends here)
 *   huge page          the block is a whole segment: unmap it
 *   own page, full     free locally, bring the page back to its queue
 *   other owner        push on the page's thread_free with one CAS; the
 *                      owner (or whoever adopts the page) collects it
 *   free page          nobody owns a block there: a double or invalid free
 */
#include "tlmalloc/internal.h"

static void free_remote(tl_page *page, tl_block *block)
{
	uintptr_t head = tl_uptr_load_relaxed(&page->thread_free);
	do {
		block->next = (tl_block *)head;
	} while (!tl_uptr_cas_weak_release(&page->thread_free, &head,
					   (uintptr_t)block));
}

void tl_free_generic(tl_heap *heap, tl_page *page, void *p)
{
	uintptr_t owner = tl_uptr_load_relaxed(&page->owner);
	if (owner == TL_OWNER_FOLLOWER) {
		page -= page->slice_offset;
		owner = tl_uptr_load_relaxed(&page->owner);
		if (owner == heap->id) {
			tl_page_push_local(page, p);
			return;
		}
	}
	if (owner == TL_OWNER_HUGE) {
		tl_large_free(tl_segment_of(p));
		return;
	}
	if (owner == TL_OWNER_FREE)
		tl_fatal("free", p, "block of a free page (double free?)");
	if (owner == (heap->id | TL_OWNER_FULL)) {
		tl_page_push_local(page, p);
		tl_heap_page_unfull(heap, page);
		return;
	}
	free_remote(page, p);
}

void tl_free_slow(void *p)
{
	if (p == NULL)
		return;
	if (!tl_segment_is_ours(p))
		tl_fatal("free", p, "not allocated by tlmalloc");
	tl_free_generic(tl_heap_local, tl_slice_of(tl_segment_of(p), p), p);
}
