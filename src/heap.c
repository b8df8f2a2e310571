/*
 * heap.c - thread-local heaps: the per-class page queues, finding a page
 * with a free block, retiring empty pages, and handing everything back at
 * thread exit.
 *
 * A heap is touched only by its thread (the lock baseline's shared heap:
 * only under its lock).  Per size class it keeps a queue of pages; the head
 * of each queue is what the fast path allocates from (heap->direct).  A page
 * found with no free block moves to the full list, flagged in its owner
 * word, so that the owner's next free into it takes the generic path and
 * brings it back.  Frees from other threads into a full page are found when
 * the heap next needs a page of any class (scan of the full list).
 * Empty pages: the queue head stays (no thrash on malloc/free loops), up to
 * TL_HEAP_EMPTY_CACHE others are cached, the rest go back to the pool.
 */
#include <pthread.h>

#include "tlmalloc/internal.h"

#define TL_HEAP_EMPTY_CACHE 4

/* The static empty page and heap seen by threads that never allocated. */
tl_page tl_page_empty;

#define E1 &tl_page_empty
#define E5 E1, E1, E1, E1, E1
#define E65 E5, E5, E5, E5, E5, E5, E5, E5, E5, E5, E5, E5, E5
_Static_assert(TL_DIRECT_SLOTS == 65, "initialiser below has 65 slots");
tl_heap tl_heap_empty = { .direct = { E65 } };

__thread tl_heap *tl_heap_local __attribute__((tls_model("initial-exec"))) =
	&tl_heap_empty;

/* Point the direct slots of class cls at the head of its queue. */
static void heap_set_direct(tl_heap *heap, unsigned cls)
{
	uint32_t size = tl_class_size[cls];
	if (size > TL_DIRECT_MAX)
		return;
	tl_page *page = heap->queue[cls].first;
	if (page == NULL)
		page = &tl_page_empty;
	unsigned lo = cls == 1 ? 0 : tl_class_size[cls - 1] / 16 + 1;
	for (unsigned i = lo; i <= size / 16; i++)
		heap->direct[i] = page;
}

void tl_heap_init(tl_heap *heap, bool is_thread_heap)
{
	*heap = (tl_heap){ .is_thread_heap = is_thread_heap };
	for (unsigned i = 0; i < TL_DIRECT_SLOTS; i++)
		heap->direct[i] = &tl_page_empty;
}

static void page_set_owner(tl_page *page, tl_heap *heap, uintptr_t flags)
{
	tl_uptr_store_relaxed(&page->owner, (uintptr_t)heap | flags);
}

static void heap_queue_front(tl_heap *heap, tl_page *page)
{
	tl_list_push_front(&heap->queue[page->size_class], page);
	heap_set_direct(heap, page->size_class);
}

/* Move full pages that other threads freed into back to their queues. */
static void heap_reclaim_full(tl_heap *heap)
{
	tl_page *next;
	for (tl_page *page = heap->full.first; page != NULL; page = next) {
		next = page->next;
		if (tl_uptr_load_relaxed(&page->thread_free) == 0)
			continue;
		tl_list_remove(&heap->full, page);
		page_set_owner(page, heap, 0);
		tl_page_collect(page);
		tl_list_push_back(&heap->queue[page->size_class], page);
		heap_set_direct(heap, page->size_class);
	}
}

static tl_page *heap_take_cached(tl_heap *heap, unsigned cls)
{
	uint8_t kind = tl_class_size[cls] <= TL_SMALL_MAX ? TL_PAGE_SMALL
							  : TL_PAGE_MEDIUM;
	for (tl_page *page = heap->empty.first; page != NULL; page = page->next) {
		if (page->kind != kind)
			continue;
		tl_list_remove(&heap->empty, page);
		heap->empty_count--;
		tl_page_format(page, cls);
		page_set_owner(page, heap, 0);
		return page;
	}
	return NULL;
}

/* A page of the queue has a free block, or it moves to the full list. */
static tl_page *heap_scan_queue(tl_heap *heap, unsigned cls)
{
	tl_page_list *q = &heap->queue[cls];
	tl_page *next;
	for (tl_page *page = q->first; page != NULL; page = next) {
		next = page->next;
		if (page->free == NULL)
			tl_page_collect(page);
		if (page->free != NULL || tl_page_extend(page)) {
			if (page != q->first) {
				tl_list_remove(q, page);
				tl_list_push_front(q, page);
			}
			heap_set_direct(heap, cls);
			return page;
		}
		tl_list_remove(q, page);
		tl_list_push_back(&heap->full, page);
		page_set_owner(page, heap, TL_OWNER_FULL);
	}
	heap_set_direct(heap, cls);
	return NULL;
}

tl_page *tl_heap_find_page(tl_heap *heap, unsigned cls)
{
	tl_page *page = heap_scan_queue(heap, cls);
	if (page != NULL)
		return page;
	if (heap->full.first != NULL) {
		heap_reclaim_full(heap);
		if ((page = heap_scan_queue(heap, cls)) != NULL)
			return page;
	}
	for (;;) {
		page = heap_take_cached(heap, cls);
		if (page == NULL)
			page = tl_pool_take_page(heap, cls);
		if (page == NULL)
			return NULL;
		heap_queue_front(heap, page);
		if ((page = heap_scan_queue(heap, cls)) != NULL)
			return page;
		/* An adopted page that was full: it now sits in our full list. */
	}
}

void tl_heap_page_unfull(tl_heap *heap, tl_page *page)
{
	tl_list_remove(&heap->full, page);
	page_set_owner(page, heap, 0);
	tl_list_push_back(&heap->queue[page->size_class], page);
	heap_set_direct(heap, page->size_class);
}

void tl_heap_page_retire(tl_heap *heap, tl_page *page)
{
	tl_page_list *q = &heap->queue[page->size_class];
	if (q->first == page)
		return;	/* the page malloc uses: keep it */
	tl_list_remove(q, page);
	if (heap->empty_count < TL_HEAP_EMPTY_CACHE) {
		/* Owned by no one while cached: a free into it is caught. */
		tl_uptr_store_relaxed(&page->owner, TL_OWNER_FREE);
		tl_list_push_front(&heap->empty, page);
		heap->empty_count++;
		return;
	}
	tl_pool_give_page(page);
}

void tl_heap_release_cached(tl_heap *heap)
{
	tl_page *page;
	while ((page = heap->empty.first) != NULL) {
		tl_list_remove(&heap->empty, page);
		tl_pool_give_page(page);
	}
	heap->empty_count = 0;
}

/* Hand one page back at heap destruction. */
static void heap_release_page(tl_page *page)
{
	tl_page_collect(page);
	if (page->used == 0)
		tl_pool_give_page(page);
	else
		tl_pool_abandon_page(page);
}

static void heap_release_list(tl_page_list *l)
{
	tl_page *page;
	while ((page = l->first) != NULL) {
		tl_list_remove(l, page);
		heap_release_page(page);
	}
}

void tl_heap_destroy(tl_heap *heap)
{
	for (unsigned cls = 1; cls < TL_CLASSES; cls++)
		heap_release_list(&heap->queue[cls]);
	heap_release_list(&heap->full);
	tl_heap_release_cached(heap);
	for (unsigned i = 0; i < TL_DIRECT_SLOTS; i++)
		heap->direct[i] = &tl_page_empty;
}

tl_heap *tl_heap_get_or_create(void)
{
	tl_heap *heap = tl_heap_local;
	if (heap != &tl_heap_empty)
		return heap;
	tl_process_init();
	heap = tl_pool_heap_alloc();
	if (heap == NULL)
		return NULL;
	tl_heap_init(heap, true);
	tl_heap_local = heap;
	tl_thread_register(heap);
	return heap;
}
