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
 *
 * The secure build checks every block freed here or on the fast path
 * (tl_secure_on_free): a block of the page's carved area, not marked free
 * already; then marks it and fills it.
 */
#include "tlmalloc/internal.h"
#if TL_SECURE
#include <string.h>

void tl_secure_corrupt(const void *block)
{
	tl_fatal("malloc", block,
		 "free list corrupted (buffer overrun or use after free)");
}

void tl_secure_modified(const void *block)
{
	tl_fatal("malloc", block,
		 "free block modified (buffer overrun or use after free)");
}

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
	       list_holds(page, remote, block);
}

/*
 * A block carrying the mark is free, or its user data happens to equal the
 * mark.  The owner confirms by walking the page's lists; another thread
 * cannot walk the owner's lists and trusts the mark, a secret-keyed value
 * that user data matches by chance once in 2^64.
 */
void tl_secure_on_free(tl_page *page, tl_block *block, bool owner)
{
	if (tl_unlikely(!tl_block_in_page(page, block)))
		tl_fatal("free", block, "not the start of a block "
					"(interior or stray pointer)");
	uintptr_t mark = tl_free_mark(page, block);
	if (tl_unlikely(block->mark == mark) &&
	    (!owner || page_holds_free(page, block)))
		tl_fatal("free", block, "double free");
	block->mark = mark;
	size_t bs = page->block_size;
	if (bs <= TL_SECURE_FILL_MAX)
		memset(block + 1, TL_SECURE_FILL, bs - sizeof(tl_block));
}
#endif

static void free_remote(tl_page *page, tl_block *block)
{
#if TL_SECURE
	tl_secure_on_free(page, block, false);
#endif
	uintptr_t head = tl_uptr_load_relaxed(&page->thread_free);
	uintptr_t next;
	do {
		block->next = tl_link_encode(page, block, tl_remote_list(head));
		/* one more in the count; it wraps at 2^16 (statistics only) */
		next = ((head & ~(TL_REMOTE_ONE - 1)) + TL_REMOTE_ONE) |
		       (uintptr_t)block;
	} while (!tl_uptr_cas_weak_release(&page->thread_free, &head, next));
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
	tl_purger_poll();
}
