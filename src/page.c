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
	__atomic_store_n(&page->block_size, tl_class_size[cls], __ATOMIC_RELAXED);
	page->reserved = (uint32_t)(area / page->block_size);
	tl_page_set_capacity(page, 0);
	tl_page_set_avail(page, 0);
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
	tl_page_set_capacity(page, page->capacity + n);
	tl_page_set_avail(page, page->avail + n);
	return true;
}

/*
 * Put a list in front of free; returns its length.  A page never has more
 * free blocks than it carved: a longer list loops, which only a double
 * free makes, and is reported instead of walked forever.
 */
static uint32_t splice_into_free(tl_page *page, tl_block *list)
{
	uint32_t n = 1;
	tl_block *last = list;
	while (last->next != NULL) {
		last = last->next;
		if (tl_unlikely(++n > page->capacity))
			tl_fatal("free", list, "a page's free list loops "
					       "(double free)");
	}
	last->next = page->free;
	page->free = list;
	return n;
}

void tl_page_collect(tl_page *page)
{
	if (page->local_free != NULL) {
		tl_page_set_avail(page, page->avail +
					splice_into_free(page, page->local_free));
		page->local_free = NULL;
	}
	if (tl_uptr_load_relaxed(&page->thread_free) != 0) {
		tl_block *list = (tl_block *)
			tl_uptr_exchange_acquire(&page->thread_free, 0);
		tl_page_set_avail(page, page->avail + splice_into_free(page, list));
	}
}

bool tl_page_collect_head(tl_page *page)
{
	if (page->local_free != NULL) {
		page->free = page->local_free;
		page->local_free = NULL;
		return true;
	}
	if (tl_uptr_load_relaxed(&page->thread_free) == 0)
		return false;
	page->free = (tl_block *)tl_uptr_exchange_acquire(&page->thread_free, 0);
	return true;
}

static size_t list_length(const tl_block *b)
{
	size_t n = 0;
	for (; b != NULL; b = b->next)
		n++;
	return n;
}

void tl_page_count_avail(tl_page *page)
{
	tl_page_set_avail(page, (uint32_t)list_length(page->free));
}
