/*
 * page.c - the blocks inside one page: formatting for a size class, carving
 * fresh blocks lazily, and collecting the frees.
 *
 * A page has three free lists ("sharded"): free, which malloc pops;
 * local_free, which the owner's free pushes; thread_free, which other
 * threads push with one CAS.  When free runs dry the owner takes the other
 * two.  Fresh blocks are carved at most a few KiB at a time, so a page
 * touches its memory only as it is used.  Owner only, except thread_free.
 */
#include "tlmalloc/internal.h"

/* Carve at most this many bytes of fresh blocks at a time. */
#define TL_EXTEND_BYTES 4096
#define TL_EXTEND_MIN_BLOCKS 4

void tl_page_format(tl_page *page, unsigned cls)
{
	tl_segment *seg = tl_segment_of(page->start);
	size_t area;
	tl_page_area(seg, page, &area);
	page->size_class = (uint8_t)cls;
	page->block_size = tl_class_size[cls];
	page->reserved = (uint32_t)(area / page->block_size);
	page->capacity = 0;
	page->used = 0;
	page->free = NULL;
	page->local_free = NULL;
	tl_uptr_store_relaxed(&page->thread_free, 0);
}

bool tl_page_extend(tl_page *page)
{
	uint32_t left = page->reserved - page->capacity;
	if (left == 0)
		return false;
	uint32_t n = TL_EXTEND_BYTES / page->block_size;
	if (n < TL_EXTEND_MIN_BLOCKS)
		n = TL_EXTEND_MIN_BLOCKS;
	if (n > left)
		n = left;
	size_t bs = page->block_size;
	uint8_t *first = page->start + (size_t)page->capacity * bs;
	uint8_t *p = first;
	for (uint32_t i = 1; i < n; i++, p += bs)
		((tl_block *)p)->next = (tl_block *)(p + bs);
	((tl_block *)p)->next = page->free;
	page->free = (tl_block *)first;
	page->capacity += n;
	return true;
}

void tl_page_collect(tl_page *page)
{
	if (page->local_free != NULL && page->free == NULL) {
		page->free = page->local_free;
		page->local_free = NULL;
	} else if (page->local_free != NULL) {
		tl_block *last = page->local_free;
		while (last->next != NULL)
			last = last->next;
		last->next = page->free;
		page->free = page->local_free;
		page->local_free = NULL;
	}
	if (tl_uptr_load_relaxed(&page->thread_free) == 0)
		return;
	tl_block *list = (tl_block *)tl_uptr_exchange_acquire(&page->thread_free, 0);
	tl_block *last = list;
	uint32_t n = 1;
	while (last->next != NULL) {
		last = last->next;
		n++;
	}
	last->next = page->free;
	page->free = list;
	page->used -= n;
}

static size_t list_length(const tl_block *b)
{
	size_t n = 0;
	for (; b != NULL; b = b->next)
		n++;
	return n;
}

size_t tl_page_count_free(const tl_page *page)
{
	return list_length(page->free) + list_length(page->local_free) +
	       list_length((const tl_block *)tl_uptr_load_acquire(&page->thread_free));
}
