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
 * brings it back (to the back of its queue, or as its head when it lies
 * below the head: page_takes_head); but a head of at most 16 blocks goes
 * behind the page after it when its owner freed into that one
 * (dry_head_rotates).  The fast paths keep no free counts
 * (see tl_page in types.h; malloc counts only the blocks handed out, for
 * the statistics): the sweep, run before the heap takes new pages, counts
 * the frees of the other pages, gives empty ones back (up to
 * TL_HEAP_EMPTY_CACHE stay cached, the rest go to the pool) and brings
 * back full pages that other threads freed into.  A queue head is never
 * given back: no thrash on malloc/free loops.
 *
 * Young groups: the classes the direct table serves come in five groups of
 * four (16-64, 80-128, 160-256, 320-512, 640-1024 bytes).  While a group is
 * young, its four classes share the page of its largest class, a power of
 * two (so a block asked for at an alignment of its class still has it): a
 * thread that holds a few small blocks touches one OS page per group, not
 * one per class.  A group grows up, for good, when that page has no free
 * block left and would need more carved (or another page): its first carve
 * (TL_EXTEND_BYTES), or the free blocks of a page it adopted.  From then on
 * each class has its own pages; the blocks larger than their class are
 * those few, per group.
 *
 * Full pages given away: a heap collects the frees other threads make into
 * its full pages only when it looks for a page, so a thread that allocated
 * a table and now waits while others free it holds that memory until it
 * allocates again.  The thread whose free into a full page makes all its
 * blocks free takes the page out of its heap's full list and gives it to
 * the pool as a free page (tl_pool_give_away), for any heap and class,
 * once the page has been full for a while or at once when its heap has
 * stopped filling pages (free.c, give_away_if_due).  A heap that
 * allocates brings such pages back when it looks for a page
 * (heap_check_full, at a quarter freed), so mostly those of heaps that do
 * not are given away.  The full list is under the heap's full_lock: the
 * owner takes it for each change (a page going full, its own free into a
 * full page, the sweep), the giver only tries it, inside the pool lock.
 * A page's full_heap is its heap's index while it is in that heap's full
 * list and 0 otherwise, both written under the lock, so a giver holding
 * the lock knows the page is still there.  The owner's fast paths never
 * touch a full page (its owner word has TL_OWNER_FULL).
 */
#include <pthread.h>
#include <string.h>

#include "tlmalloc/internal.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"
#include "tlmalloc/profile.h"

#define TL_HEAP_EMPTY_CACHE 4
/* Full pages looked at before a new page is taken (heap_check_full). */
#define TL_HEAP_FULL_CHECK 8
/* A head that has handed out this share of its blocks (1/n) since it
 * became the head gives way to a lower page back from the full list
 * (page_takes_head). */
#define TL_HEAD_SERVED_DIV 8
/* A dry head gives way to the page behind it with this share (1/n) of
 * its blocks free (head_yields). */
#define TL_HEAD_YIELD_DIV 8

tl_atomic_u32 tl_heap_pressure;

static void heap_release_cached(tl_heap *heap);

/* The static empty page and heap seen by threads that never allocated. */
tl_page tl_page_empty;

/* Every direct slot of a new thread points at the empty page (ISO C has no
 * "repeat" in an initialiser: 65 written out as 13 times 5). */
#define EMPTY_PAGE_X1 &tl_page_empty
#define EMPTY_PAGE_X5 EMPTY_PAGE_X1, EMPTY_PAGE_X1, EMPTY_PAGE_X1, \
	EMPTY_PAGE_X1, EMPTY_PAGE_X1
#define EMPTY_PAGE_X65 EMPTY_PAGE_X5, EMPTY_PAGE_X5, EMPTY_PAGE_X5, \
	EMPTY_PAGE_X5, EMPTY_PAGE_X5, EMPTY_PAGE_X5, EMPTY_PAGE_X5, \
	EMPTY_PAGE_X5, EMPTY_PAGE_X5, EMPTY_PAGE_X5, EMPTY_PAGE_X5, \
	EMPTY_PAGE_X5, EMPTY_PAGE_X5
_Static_assert(TL_DIRECT_SLOTS == 65, "initialiser below has 65 slots");
__thread tl_page *tl_direct_local[TL_DIRECT_SLOTS]
	TL_TLS = { EMPTY_PAGE_X65 };

/*
 * id 0: no page is ever owned by these.  tl_heap_empty: a thread that has
 * not allocated yet.  tl_heap_exiting: a thread whose heap was handed back
 * by its exit destructor; it allocates from the shared heap from then on,
 * so allocations in later destructors make no heap that nobody frees.
 */
tl_heap tl_heap_empty;
tl_heap tl_heap_exiting;

__thread tl_heap *tl_heap_local TL_TLS =
	&tl_heap_empty;
__thread tl_page_list *tl_queue_local TL_TLS =
	tl_heap_empty.queue;

void tl_heap_set_local(tl_heap *heap)
{
	tl_heap_local = heap;
	tl_queue_local = heap->prof != NULL ? tl_profile_no_queue : heap->queue;
}

#define TL_YOUNG_GROUPS 5
#define TL_YOUNG_CLASSES (4 * TL_YOUNG_GROUPS)
_Static_assert(TL_DIRECT_MAX == 1024, "young groups: classes 1..20, to 1024");

static unsigned young_group(unsigned cls)
{
	return (cls - 1) / 4;
}

/* The largest class of group g, whose page the group shares while young. */
static unsigned young_top(unsigned g)
{
	return 4 * g + 4;
}

static bool class_is_young(const tl_heap *heap, unsigned cls)
{
	return cls <= TL_YOUNG_CLASSES && (heap->young >> young_group(cls)) & 1;
}

/*
 * Point the direct slots of class cls at the head of its queue; the top of
 * a young group takes the slots of the whole group.  Called whenever the
 * head changes, so it also notes the new head's count of blocks handed
 * out (for page_takes_head).
 */
static void heap_set_direct(tl_heap *heap, unsigned cls)
{
	uint32_t size = tl_class_size[cls];
	tl_page *page = heap->queue[cls].first;
#if TL_COUNTS
	if (page != NULL)
		heap->head_allocs[cls] = (uint32_t)page->allocs;
#endif
	if (size > TL_DIRECT_MAX)
		return;
	unsigned first = cls;
	if (class_is_young(heap, cls)) {
		if (cls != young_top(young_group(cls)))
			return;	/* its slots are the top's */
		first = cls - 3;
	}
	/* the group's sizes come to its head, through the slots or (with
	 * the profiler on) its proxy: a sized free of them must pass */
	if (page != NULL && first != cls)
		tl_page_allow_size(page, tl_class_min(first));
	if (heap->prof != NULL) {
		page = tl_profile_proxy(heap, cls);
		if (heap->direct[size / 16] == page)
			return;	/* set already: a proxy stays */
	} else if (page == NULL)
		page = &tl_page_empty;
	unsigned lo = first == 1 ? 0 : tl_class_size[first - 1] / 16 + 1;
	for (unsigned i = lo; i <= size / 16; i++)
		heap->direct[i] = page;
}

void tl_heap_set_direct_all(tl_heap *heap)
{
	for (unsigned cls = 1; cls < TL_CLASSES; cls++)
		heap_set_direct(heap, cls);
}

void tl_heap_init(tl_heap *heap, tl_page **direct, uintptr_t id)
{
	/* full_lock and index stay (types.h): a giver may hold the lock */
	memset(heap, 0, offsetof(tl_heap, full_lock));
	heap->direct = direct;
	heap->id = id;
	heap->young = (1u << TL_YOUNG_GROUPS) - 1;
	for (unsigned i = 0; i < TL_DIRECT_SLOTS; i++)
		heap->direct[i] = &tl_page_empty;
}

/* release: a statistics reader that sees the owner sees the page's format
 * (tl_page_format, before it) as own_free_page gives it (pool.c) */
static void page_set_owner(tl_page *page, tl_heap *heap, uintptr_t flags)
{
	tl_uptr_store_release(&page->owner, heap->id | flags);
}

/* The full list's changes (see the top of the file). */
static void full_lock(tl_heap *heap)
{
	tl_lock_acquire(&heap->full_lock);
}

static void full_unlock(tl_heap *heap)
{
	tl_lock_release(&heap->full_lock);
}

static void full_push(tl_heap *heap, tl_page *page)
{
	tl_list_push_back(&heap->full, page);
#if !TL_SECURE
	uint32_t cap = page->capacity;
	__atomic_store_n(&page->full_capacity,
			 (uint16_t)(cap <= UINT16_MAX ? cap : 0), __ATOMIC_RELAXED);
	uint16_t now = (uint16_t)(tl_os_coarse_ms() >> 2);
	__atomic_store_n(&page->full_since, now, __ATOMIC_RELAXED);
	__atomic_store_n(&heap->full_last, now, __ATOMIC_RELAXED);
	tl_page_set_full_heap(page, heap->index);
#endif
	page_set_owner(page, heap, TL_OWNER_FULL);
}

static void full_remove(tl_heap *heap, tl_page *page)
{
	tl_list_remove(&heap->full, page);
#if !TL_SECURE
	tl_page_set_full_heap(page, 0);
#endif
}

/* The pages given away since the owner last looked leave its count. */
static void heap_fold_donated(tl_heap *heap)
{
	if (tl_u32_load_relaxed(&heap->donated) != 0)
		heap->pages_owned -= tl_u32_exchange_acquire(&heap->donated, 0);
}

static tl_page *heap_take_cached(tl_heap *heap, unsigned cls)
{
	uint8_t kind = (uint8_t)tl_class_kind(cls);
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

/* An empty page leaves its heap: into the cache, or back to the pool. */
static void heap_retire(tl_heap *heap, tl_page *page)
{
	tl_assert(tl_page_is_empty(page) && page->local_free == NULL);
	heap->pages_owned--;
	tl_page_retire_counts(page);	/* the statistics skip unowned pages */
	if (heap->empty_count < TL_HEAP_EMPTY_CACHE) {
		/* Owned by no one while cached: a free into it is caught. */
		tl_uptr_store_relaxed(&page->owner, TL_OWNER_FREE);
		tl_list_push_front(&heap->empty, page);
		heap->empty_count++;
		return;
	}
	tl_pool_give_page(page);
}

/*
 * A dry head that could carve fresh blocks goes to the back of its queue
 * instead when the page behind it, its frees collected and counted, has
 * an eighth of its blocks free: memory already touched before new
 * (design.md, "Which page a round starts on").  A page behind with fewer
 * keeps them for later: handing the head to it would run it dry again at
 * once (server: design.md, the same section).
 */
static bool head_yields(tl_page_list *q, tl_page *head)
{
	tl_page *next = head->next;
	if (next == NULL || head->capacity == head->reserved)
		return false;
	tl_page_collect(next);
	if (next->avail == 0 || next->avail < next->capacity / TL_HEAD_YIELD_DIV)
		return false;
	tl_list_remove(q, head);
	tl_list_push_back(q, head);
	return true;
}

/*
 * A dry head whose page holds at most TL_ROTATE_CAPACITY blocks, carved to
 * its end, goes behind the page after it when that page has a free block
 * on its own lists (free, or the owner's local_free: other threads' frees
 * leave it to the full list, whose pages are given away once they empty),
 * instead of to the full list.  Blocks of 4 KiB and up replaced at random
 * (rptest) fill pages of 8-16 blocks that run dry every few mallocs: the
 * full list's lock, its clock reading, and the owner's next free into the
 * page on the generic path to bring it back, for one block at a time.  In
 * the queue, the owner's frees into it stay on the fast path.  Why not
 * every class: a round of small blocks freed in order (scaling) starts
 * again on the page the last one started on only through the full list
 * (page_takes_head); with every class rotating, scaling took 1.3x the CPU.
 */
#define TL_ROTATE_CAPACITY 16

static bool dry_head_rotates(tl_page_list *q, tl_page *head)
{
	tl_page *next = head->next;
	if (next == NULL || head->capacity > TL_ROTATE_CAPACITY)
		return false;
	if (next->free == NULL && next->local_free == NULL)
		return false;
	tl_list_remove(q, head);
	tl_list_push_back(q, head);
	return true;
}

/*
 * The head of queue cls has a free block, or the queue is empty.  The head
 * runs dry only here: its uncounted pops are all gone (avail = 0), then it
 * collects its frees, goes behind the page after it (head_yields), carves
 * fresh blocks, or moves to the full list.
 */
static tl_page *heap_scan_queue(tl_heap *heap, unsigned cls)
{
	tl_page_list *q = &heap->queue[cls];
	tl_page *head = q->first, *page;
	while ((page = q->first) != NULL) {
		if (page->free != NULL || tl_page_collect_head(page))
			break;
		tl_page_set_avail(page, 0);	/* exact again: free is empty */
		if (head_yields(q, page))
			continue;
		if (tl_page_extend(page))
			break;
		if (dry_head_rotates(q, page))
			continue;
		tl_list_remove(q, page);
		full_lock(heap);
		full_push(heap, page);
		full_unlock(heap);
	}
	/* The direct slots point at the head the scan began with (a new
	 * head's caller sets them: heap_add_page). */
	if (page != head)
		heap_set_direct(heap, cls);
	tl_assert_internal(page == NULL || tl_page_check(page, heap->id, false));
	return page;
}

/* A page back from the full list joins the back of its queue, q; behind
 * a head, the direct slots stay the head's. */
static void queue_push_back(tl_heap *heap, tl_page_list *q, tl_page *page)
{
	tl_list_push_back(q, page);
	if (q->first == page)
		heap_set_direct(heap, page->size_class);
}

/* A full page other threads freed into, found by the sweep: its frees
 * collected, back to its queue, or retired if it is empty and its queue
 * has a head already.  (The owner's own free into a full page is
 * tl_heap_page_unfull, below.)  full_lock held. */
static void heap_unfull_remote(tl_heap *heap, tl_page *page)
{
	tl_page_collect(page);
	full_remove(heap, page);
	page_set_owner(page, heap, 0);
	tl_assert_internal(tl_page_check(page, heap->id, true));
	tl_page_list *q = &heap->queue[page->size_class];
	if (tl_page_is_empty(page) && q->first != NULL) {
		heap_retire(heap, page);
		return;
	}
	queue_push_back(heap, q, page);
}

/*
 * Count the frees of every page but the queue heads: empty pages leave the
 * heap, full pages that other threads freed into go back to their queues.
 * Run when the heap would otherwise take a new page, at most once per
 * 1/8 of its pages taken, so its cost is amortised.
 */
_Static_assert(TL_CLASSES <= 64, "tl_heap.classes has a bit per class");

static void heap_sweep(tl_heap *heap)
{
	tl_page *page, *next;
	heap->fresh_since_sweep = 0;
	for (uint64_t m = heap->classes; m != 0; m &= m - 1) {
		tl_page_list *q = &heap->queue[__builtin_ctzll(m)];
		if (q->first == NULL)
			continue;
		for (page = q->first->next; page != NULL; page = next) {
			next = page->next;
			tl_page_collect(page);
			if (tl_page_is_empty(page)) {
				tl_list_remove(q, page);
				heap_retire(heap, page);
			}
		}
	}
	full_lock(heap);
	for (page = heap->full.first; page != NULL; page = next) {
		next = page->next;
		if (tl_uptr_load_relaxed(&page->thread_free) != 0)
			heap_unfull_remote(heap, page);
	}
	full_unlock(heap);
}

/*
 * Before the heap takes a new page: the first few pages of its full list
 * (the oldest full) that other threads have freed a quarter of since come
 * back (the count is in their thread_free word: no walk), the others go to
 * the end of the list.  A producer whose blocks another thread frees finds
 * them again here instead of growing until its next sweep; the cost is a
 * few reads per page taken.
 */
static void heap_check_full(tl_heap *heap)
{
	full_lock(heap);
	for (unsigned i = 0; i < TL_HEAP_FULL_CHECK; i++) {
		tl_page *page = heap->full.first;
		if (page == NULL)
			break;
		uintptr_t w = tl_uptr_load_relaxed(&page->thread_free);
		if (w != 0 && tl_remote_count(w) >= page->capacity / 4) {
			heap_unfull_remote(heap, page);
			continue;
		}
		tl_list_remove(&heap->full, page);
		tl_list_push_back(&heap->full, page);
	}
	full_unlock(heap);
}

static bool heap_sweep_due(const tl_heap *heap)
{
	return (heap->fresh_since_sweep + 1) * 8 >= heap->pages_owned ||
	       heap->fresh_since_sweep >= 64;
}

/*
 * Whether young group g can still allocate from its top class's head page:
 * there is none yet, or it has free blocks, or its first carve is to come.
 */
static bool young_fits(tl_heap *heap, unsigned g)
{
	tl_page *page = heap->queue[young_top(g)].first;
	return page == NULL || page->free != NULL || page->capacity == 0 ||
	       tl_page_collect_head(page);
}

static void young_grow_up(tl_heap *heap, unsigned g)
{
	heap->young &= ~(1u << g);
	for (unsigned cls = young_top(g) - 3; cls <= young_top(g); cls++)
		heap_set_direct(heap, cls);
}

/* A page from the pool or the cache joins queue cls, in front: the head,
 * if it has a free block (else NULL: an adopted page that was full). */
static tl_page *heap_add_page(tl_heap *heap, unsigned cls, tl_page *page)
{
	heap->pages_owned++;
	heap->classes |= (uint64_t)1 << cls;
	tl_list_push_front(&heap->queue[cls], page);
	tl_page *head = heap_scan_queue(heap, cls);
	if (head == page)	/* kept as the head: the scan left the slots */
		heap_set_direct(heap, cls);
	return head;
}

/*
 * Another heap ran out of memory since this one last looked (the count
 * tl_heap_pressure moved): its cached empty pages go to the pool, where
 * that heap can take them.
 */
static void heap_under_pressure(tl_heap *heap)
{
	uint32_t now = tl_u32_load_relaxed(&tl_heap_pressure);
	if (tl_likely(now == heap->pressure_seen))
		return;
	heap->pressure_seen = now;
	heap_release_cached(heap);
}

tl_page *tl_heap_find_page(tl_heap *heap, unsigned cls)
{
	tl_assert(cls > 0 && cls < TL_CLASSES);
	heap_fold_donated(heap);
	tl_assert_expensive(tl_heap_check(heap));
	heap_under_pressure(heap);
	if (class_is_young(heap, cls)) {
		unsigned g = young_group(cls);
		if (young_fits(heap, g))
			cls = young_top(g);
		else
			young_grow_up(heap, g);
	}
	tl_page *page = heap_scan_queue(heap, cls);
	if (page != NULL)
		return page;
	if (heap_sweep_due(heap)) {
		heap_sweep(heap);
		if ((page = heap_scan_queue(heap, cls)) != NULL)
			return page;
	} else {
		heap_check_full(heap);
		if ((page = heap_scan_queue(heap, cls)) != NULL)
			return page;
	}
	for (;;) {
		page = heap_take_cached(heap, cls);
		if (page == NULL) {
			page = tl_pool_take_page(heap, cls);
			heap->fresh_since_sweep++;
		}
		if (page == NULL)
			return NULL;
		if ((page = heap_add_page(heap, cls, page)) != NULL)
			return page;
		/* An adopted page that was full: it now sits in our full list. */
	}
}

/*
 * Out of memory: the OS refused a mapping, so before malloc returns NULL
 * the heap uses what it holds, in this order.  Slow, and only taken then.
 *   1. Empty pages of any class: its own (queue heads and the cache) go
 *      to the pool, with the abandoned pages other threads have emptied,
 *      and it looks again (a heap that finds other heaps ran out gives
 *      its cached empty pages to the pool too: heap_under_pressure).
 *   2. A free page of the other kind (a 1 MiB page for small blocks, a
 *      64 KiB one for medium blocks up to 64 KiB).
 *   3. The address space of what the pool holds free (segments wholly
 *      free, cached huge blocks) given back, for a new mapping.
 *   4. Free blocks of a larger class: in its own pages, then in abandoned
 *      pages it adopts.  The page then accepts a sized free of the
 *      smaller size (tl_page_allow_size).
 */
static void heap_give_back(tl_heap *heap)
{
	tl_u32_add_relaxed(&tl_heap_pressure, 1);
	tl_heap_collect_all(heap, true);
}

bool tl_heap_release_held(void)
{
	tl_heap *heap = tl_heap_local;
	if (tl_heap_is_thread_heap(heap))
		heap_give_back(heap);
	else
		tl_u32_add_relaxed(&tl_heap_pressure, 1);
	return tl_pool_unmap_free();
}

/* Step 4: a page of a larger class with a free block, now allowed to
 * serve class cls. */
static tl_page *heap_find_larger(tl_heap *heap, unsigned cls)
{
	for (unsigned c = cls + 1; c < TL_CLASSES; c++) {
		tl_page *page = heap_scan_queue(heap, c);
		if (page == NULL) {
			tl_page *adopted = tl_pool_adopt_page(heap, c);
			if (adopted != NULL)
				page = heap_add_page(heap, c, adopted);
		}
		if (page != NULL) {
			tl_page_allow_size(page, tl_class_min(cls));
			return page;
		}
	}
	return NULL;
}

/*
 * Steps 1-3 walk every page of the heap and of the pool: a heap that
 * reached step 4 goes there first for its next few calls (a program out
 * of memory goes on asking), then walks again.
 */
#define TL_HEAP_LARGER_FIRST 64

tl_page *tl_heap_find_held(tl_heap *heap, unsigned cls)
{
	tl_page *page;
	if (heap->larger_first > 0) {
		heap->larger_first--;
		if ((page = heap_find_larger(heap, cls)) != NULL)
			return page;
	}
	heap_give_back(heap);
	tl_pool_reclaim_abandoned();
	if ((page = tl_heap_find_page(heap, cls)) != NULL)
		return page;
	page = tl_pool_take_other_kind(heap, cls);
	if (page != NULL && (page = heap_add_page(heap, cls, page)) != NULL)
		return page;
	if (tl_pool_unmap_free() &&
	    (page = tl_heap_find_page(heap, cls)) != NULL)
		return page;
	page = heap_find_larger(heap, cls);
	if (page != NULL)
		heap->larger_first = TL_HEAP_LARGER_FIRST;
	return page;
}

void tl_heap_fork_child(void)
{
	if (tl_heap_is_thread_heap(tl_heap_local))
		tl_lock_reset(&tl_heap_local->full_lock);
}

bool tl_heap_full_hold(tl_heap *heap, tl_page *page)
{
	full_lock(heap);
	if (tl_uptr_load_relaxed(&page->owner) == (heap->id | TL_OWNER_FULL))
		return true;
	full_unlock(heap);	/* given away since the caller looked */
	return false;
}

void tl_heap_full_release(tl_heap *heap)
{
	full_unlock(heap);
}

/*
 * Whether page, back from the full list by its owner's free, becomes its
 * queue's head (design.md, "Which page a round starts on"): it lies below
 * the head in memory, and the head has handed out an eighth of its blocks
 * since it became the head.  A thread that allocates a round of blocks and
 * frees them all then starts its next round on the page its last one
 * started on, and uses the same pages in the same order, their blocks
 * still in the cache; at the back of the queue, that page would wait
 * behind the page the round ended on and that page's older blocks, and
 * each round would use a different part of the class's blocks.  The
 * eighth keeps a head that has just come back with a few blocks (frees
 * and mallocs interleaved, as a server's) from giving way to a page with
 * one free block, which would run dry at the next malloc.  The old head
 * is counted (tl_page_count_avail walks its free list): at most its
 * page's blocks, after an eighth of them were handed out, so at most 8
 * steps a block.  The fast variant counts no allocations: its pages go to
 * the back.
 */
static bool page_takes_head(const tl_heap *heap, const tl_page *head,
			    const tl_page *page)
{
#if TL_COUNTS
	return head != NULL && (uintptr_t)page < (uintptr_t)head &&
	       (uint32_t)head->allocs - heap->head_allocs[page->size_class] >=
		       head->reserved / TL_HEAD_SERVED_DIV;
#else
	(void)heap;
	(void)head;
	(void)page;
	return false;
#endif
}

/* The owner freed into its page flagged full (free.c, under
 * tl_heap_full_hold): back to its queue, as its head or at the back
 * (page_takes_head).  The sweep's case, frees from other threads, is
 * heap_unfull_remote. */
void tl_heap_page_unfull(tl_heap *heap, tl_page *page)
{
	tl_assert(tl_uptr_load_relaxed(&page->owner) ==
		  (heap->id | TL_OWNER_FULL));
	full_remove(heap, page);
	page_set_owner(page, heap, 0);
	full_unlock(heap);
	tl_page_list *q = &heap->queue[page->size_class];
	if (page_takes_head(heap, q->first, page)) {
		tl_page_count_avail(q->first);	/* no head now: counted */
		tl_list_push_front(q, page);
		heap_set_direct(heap, page->size_class);
		return;
	}
	queue_push_back(heap, q, page);
}

/* Return every empty page the heap caches to the pool. */
static void heap_release_cached(tl_heap *heap)
{
	tl_page *page;
	while ((page = heap->empty.first) != NULL) {
		tl_list_remove(&heap->empty, page);
		tl_pool_give_page(page);
	}
	heap->empty_count = 0;
}

bool tl_heap_is_thread_heap(const tl_heap *heap)
{
	return heap != &tl_heap_empty && heap != &tl_heap_exiting;
}

/* Count every page exactly; with release, empty pages (heads too) go back. */
void tl_heap_collect_all(tl_heap *heap, bool release)
{
	tl_page *page, *next;
	heap_fold_donated(heap);
	if (heap->prof != NULL)
		tl_profile_heap_settle(heap);	/* its proxies' blocks back */
	for (unsigned cls = 1; cls < TL_CLASSES; cls++) {
		tl_page_list *q = &heap->queue[cls];
		if (q->first != NULL)
			tl_page_count_avail(q->first);
		for (page = q->first; page != NULL; page = next) {
			next = page->next;
			tl_page_collect(page);
			if (release && tl_page_is_empty(page)) {
				tl_list_remove(q, page);
				heap->pages_owned--;
				tl_pool_give_page(page);
			}
		}
		heap_set_direct(heap, cls);
	}
	heap_sweep(heap);
	if (release)
		heap_release_cached(heap);
	tl_assert_expensive(tl_heap_check(heap));
}

void tl_heap_destroy(tl_heap *heap)
{
	if (heap->prof != NULL)
		tl_profile_heap_detach(heap);
	tl_assert_expensive(tl_heap_check(heap));
	/* First: a malloc from here on (the pool may start the purger) must
	 * not pop from the pages being handed back (a parked heap has no
	 * table any more). */
	for (unsigned i = 0; heap->direct != NULL && i < TL_DIRECT_SLOTS; i++)
		heap->direct[i] = &tl_page_empty;
	tl_pool_release_heap(heap);
}

/* Every page of the heap's queues gets owner, of its full list full. */
static void heap_set_owners(tl_heap *heap, uintptr_t owner, uintptr_t full)
{
	for (unsigned cls = 1; cls < TL_CLASSES; cls++)
		for (tl_page *p = heap->queue[cls].first; p != NULL; p = p->next)
			tl_uptr_store_release(&p->owner, owner);
	full_lock(heap);
	for (tl_page *p = heap->full.first; p != NULL; p = p->next)
		tl_uptr_store_release(&p->owner, full);
	full_unlock(heap);
}

/*
 * Parked heaps (pool.c; option park_heaps, off by default: each parked
 * heap keeps a partly used page of every class it used, docs/design.md):
 * a thread that exits leaves its heap whole for the next thread to start.
 * Parking and taking it back cost a store a page and one pool lock, where
 * its pages' adoption takes the lock a page.
 */
bool tl_heap_park(tl_heap *heap)
{
	heap_fold_donated(heap);
	if (heap->prof != NULL || heap->pages_owned == 0 ||
	    !tl_option(TL_OPT_park_heaps))
		return false;
	/* First: a malloc from here on must not pop from its pages. */
	for (unsigned i = 0; i < TL_DIRECT_SLOTS; i++)
		heap->direct[i] = &tl_page_empty;
	heap->direct = NULL;
	/* A thread that gets the same thread pointer owns none of them. */
	heap_set_owners(heap, TL_OWNER_PARKED, TL_OWNER_PARKED);
	heap->id = 0;
	heap_release_cached(heap);
	return true;
}

/* A parked heap becomes the calling thread's: the same as tl_heap_init,
 * with the pages it holds. */
static void heap_unpark(tl_heap *heap, tl_page **direct, uintptr_t id)
{
	heap->direct = direct;
	heap->id = id;
	heap_fold_donated(heap);
	for (unsigned i = 0; i < TL_DIRECT_SLOTS; i++)
		direct[i] = &tl_page_empty;
	heap_set_owners(heap, id, id | TL_OWNER_FULL);
	tl_heap_set_direct_all(heap);
	tl_assert_expensive(tl_heap_check(heap));
}

tl_heap *tl_heap_get_or_create(void)
{
	tl_heap *heap = tl_heap_local;
	if (heap != &tl_heap_empty)
		return heap;
	tl_process_init();
	bool parked = false;
	heap = tl_pool_heap_alloc(&parked);
	if (heap == NULL)
		return NULL;
	if (parked)
		heap_unpark(heap, tl_direct_local, tl_thread_id());
	else
		tl_heap_init(heap, tl_direct_local, tl_thread_id());
	/* kept.h: 0 again at its thread's exit (and always in the secure
	 * build, whose option takes 0 alone) */
	heap->kept_bytes = (uint32_t)tl_option(TL_OPT_kept_bytes);
	tl_heap_set_local(heap);
	tl_thread_register(heap);
	return heap;
}

#if TL_DEBUG > 0
/* Pages a list may hold at most: every page of a 128 TiB address space. */
#define TL_LIST_MAX ((size_t)1 << 31)

/* Whether a list's links agree both ways and end where it says. */
static bool list_linked(const tl_page_list *l)
{
	const tl_page *prev = NULL;
	size_t n = 0;
	for (const tl_page *p = l->first; p != NULL; prev = p, p = p->next)
		if (p->prev != prev || ++n > TL_LIST_MAX)
			return false;
	return l->last == prev;
}

/* What is wrong with heap's lists and counts, or NULL. */
static const char *heap_broken(const tl_heap *heap)
{
	uint32_t owned = 0, cached = 0;
	/* a parked heap: no id, no table, its pages' owner PARKED */
	bool parked = heap->direct == NULL;
	uintptr_t owner = parked ? TL_OWNER_PARKED : heap->id;
	uintptr_t full = parked ? TL_OWNER_PARKED : heap->id | TL_OWNER_FULL;
	for (unsigned cls = 1; cls < TL_CLASSES; cls++) {
		const tl_page_list *q = &heap->queue[cls];
		if (!list_linked(q))
			return "a class queue's links are broken";
		for (const tl_page *p = q->first; p != NULL; p = p->next) {
			if (p->size_class != cls)
				return "a page in the queue of another class";
			tl_page_check(p, owner, p != q->first);
			owned++;
		}
	}
	/* a giver changes the full list under its lock (the top of the file) */
	tl_lock *lock = &((tl_heap *)heap)->full_lock;
	const char *why = NULL;
	tl_lock_acquire(lock);
	if (!list_linked(&heap->full))
		why = "the full list's links are broken";
	for (const tl_page *p = heap->full.first; why == NULL && p != NULL;
	     p = p->next) {
		tl_page_check(p, full, true);
#if !TL_SECURE
		if (tl_page_full_heap(p) != heap->index)
			why = "a page of the full list does not name its heap";
#endif
		owned++;
	}
	uint32_t donated = tl_u32_load_relaxed(&heap->donated);
	tl_lock_release(lock);
	if (why != NULL)
		return why;
	if (!list_linked(&heap->empty))
		return "the empty cache's links are broken";
	for (const tl_page *p = heap->empty.first; p != NULL; p = p->next) {
		tl_page_check(p, TL_OWNER_FREE, true);
		if (!tl_page_is_empty(p))
			return "a cached empty page has live blocks";
		cached++;
	}
	if (owned + donated != heap->pages_owned)
		return "pages_owned is not the pages in its lists";
	if (cached != heap->empty_count)
		return "empty_count is not the pages in its cache";
	/* A sampling heap's slots point at the profiler's stand-ins
	 * (profile.c), which hold the blocks before its next sample. */
	for (unsigned i = 0; heap->prof == NULL && !parked &&
			     i < TL_DIRECT_SLOTS; i++) {
		unsigned cls = tl_size_to_class((size_t)i * 16);
		if (class_is_young(heap, cls))
			cls = young_top(young_group(cls));
		const tl_page *head = heap->queue[cls].first;
		if (heap->direct[i] != (head != NULL ? head : &tl_page_empty))
			return "a direct slot is not its queue's head";
	}
	return NULL;
}

bool tl_heap_check(const tl_heap *heap)
{
	if (!tl_heap_is_thread_heap(heap))
		return true;	/* no pages, no table */
	const char *bad = heap_broken(heap);
	if (bad != NULL)
		tl_fatal("tl_heap_check", heap, bad);
	return true;
}
#endif
