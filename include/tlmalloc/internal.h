/*
 * internal.h - what the modules of src/ call of each other: the page
 * lists, the blocks and their links, and each module's functions.  The
 * inline fast paths of malloc and free, built on these, are in fastpath.h;
 * the debug build's invariant checkers are here too (its assertions, fatal
 * errors and the report formatter: diag.h, included).
 */
#ifndef TLMALLOC_INTERNAL_H
#define TLMALLOC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tlmalloc/diag.h"
#include "tlmalloc/types.h"
#if TL_SECURE	/* malloc's inline test of secure_fill_check */
#include "tlmalloc/options.h"
#endif

#define TL_NOINLINE __attribute__((noinline))
#define TL_ALWAYS_INLINE inline __attribute__((always_inline))
/*
 * A function of a file the link puts among the rarely run code (the
 * profiler's, the statistics', guarded sampling's: src/CMakeLists.txt)
 * that every process runs all the same (start-up, exit, fork): marked hot,
 * it goes to .text.hot, which the linker puts before the rest of the code,
 * so a process touches only the first part of the library's code
 * (design.md, "What a preload costs").
 */
#define TL_EVERY_PROCESS __attribute__((hot))
#define tl_likely(x) __builtin_expect(!!(x), 1)
#define tl_unlikely(x) __builtin_expect(!!(x), 0)

/*
 * The TLS model of the heap pointer and the direct table: initial-exec (one
 * load from the GOT, then %fs-relative) for a library loaded at start-up,
 * as with LD_PRELOAD or linking.  A build meant for dlopen defines
 * TL_TLS_MODEL "global-dynamic".
 */
#ifndef TL_TLS_MODEL
#define TL_TLS_MODEL "initial-exec"
#endif
#define TL_TLS __attribute__((tls_model(TL_TLS_MODEL)))

/* ---- page lists (a page is in at most one; see types.h) ---- */
static inline void tl_list_push_front(tl_page_list *l, tl_page *p)
{
	p->prev = NULL;
	p->next = l->first;
	if (l->first != NULL)
		l->first->prev = p;
	else
		l->last = p;
	l->first = p;
}

static inline void tl_list_push_back(tl_page_list *l, tl_page *p)
{
	p->next = NULL;
	p->prev = l->last;
	if (l->last != NULL)
		l->last->next = p;
	else
		l->first = p;
	l->last = p;
}

static inline void tl_list_remove(tl_page_list *l, tl_page *p)
{
	tl_assert((p->prev != NULL ? p->prev->next : l->first) == p);
	tl_assert((p->next != NULL ? p->next->prev : l->last) == p);
	if (p->prev != NULL)
		p->prev->next = p->next;
	else
		l->first = p->next;
	if (p->next != NULL)
		p->next->prev = p->prev;
	else
		l->last = p->prev;
	p->next = p->prev = NULL;
}

/* ---- thread-local heap (heap.c) ---- */
extern __thread tl_heap *tl_heap_local
	TL_TLS;
extern __thread tl_page *tl_direct_local[TL_DIRECT_SLOTS]
	TL_TLS;
/*
 * The class queues malloc's class-queue path (sizes above the direct
 * table, tl_malloc_slow) pops from: the heap's, or tl_profile_no_queue,
 * all empty, while the heap samples, so those allocations reach the
 * generic path.  Set with tl_heap_local, by tl_heap_set_local.
 */
extern __thread tl_page_list *tl_queue_local
	TL_TLS;
extern tl_heap tl_heap_empty;
extern tl_heap tl_heap_exiting;
extern tl_page tl_page_empty;

/* Times a heap ran out of memory: the others then give their cached
 * empty pages to the pool (heap.c, "out of memory"). */
extern tl_atomic_u32 tl_heap_pressure;

/* Make heap the calling thread's (tl_heap_local and tl_queue_local). */
void tl_heap_set_local(tl_heap *heap);
/* Point every direct slot at what the heap allocates from now. */
void tl_heap_set_direct_all(tl_heap *heap);
/* The calling thread's heap, created if it is still tl_heap_empty. */
tl_heap *tl_heap_get_or_create(void);
/* direct: the heap's table of TL_DIRECT_SLOTS pages; id: see tl_heap. */
void tl_heap_init(tl_heap *heap, tl_page **direct, uintptr_t id);
/* Not tl_heap_empty nor tl_heap_exiting. */
bool tl_heap_is_thread_heap(const tl_heap *heap);
/* Count every page exactly; with release, empty pages (heads too) go back. */
void tl_heap_collect_all(tl_heap *heap, bool release);
/* Release a heap's pages: empty ones to the pool, live ones abandoned. */
void tl_heap_destroy(tl_heap *heap);
/* At its thread's exit: keep the heap whole for the next thread (its
 * pages' owner TL_OWNER_PARKED); false if it is not worth it (no pages,
 * or a sampling heap) and must be destroyed. */
bool tl_heap_park(tl_heap *heap);
/* A page of class cls with a free block, or NULL when out of memory. */
tl_page *tl_heap_find_page(tl_heap *heap, unsigned cls);
/*
 * When tl_heap_find_page found none: a page with a free block for a
 * request of class cls from what the heap and the pool hold (heap.c,
 * "out of memory"), perhaps of a larger class; NULL if nothing is left.
 */
tl_page *tl_heap_find_held(tl_heap *heap, unsigned cls);
/* Out of memory for a huge block: the calling thread's empty pages and
 * the pool's free memory go back to the OS (step 1 of the above); false
 * if no segment was unmapped (a retry would fail the same way). */
bool tl_heap_release_held(void);
/*
 * The owner's free into its page flagged full (free.c): tl_heap_full_hold
 * takes the heap's full_lock and says whether the page is still in its
 * full list (false: it was given away, the lock is not held); then
 * tl_heap_page_unfull brings it back to its queue and drops the lock.
 */
bool tl_heap_full_hold(tl_heap *heap, tl_page *page);
void tl_heap_page_unfull(tl_heap *heap, tl_page *page);
/* Drop the lock tl_heap_full_hold took, the page left as it is. */
void tl_heap_full_release(tl_heap *heap);
/* In a fork's child: the forking thread's heap's full_lock, which a
 * thread that is gone may have held, is free (init.c). */
void tl_heap_fork_child(void);
/*
 * Heaps by index (tl_heap.index, from 1; pool.c): what a page's full_heap
 * names.  Heap structs are never unmapped, so an entry stays readable.
 */
#define TL_HEAP_TABLE 4096
extern tl_atomic_uptr tl_heap_table[TL_HEAP_TABLE];
#if !TL_SECURE
/* A page's full_heap (types.h): read by threads that free into it. */
static inline uint32_t tl_page_full_heap(const tl_page *page)
{
	return __atomic_load_n(&page->full_heap, __ATOMIC_RELAXED);
}

static inline void tl_page_set_full_heap(tl_page *page, uint32_t index)
{
	__atomic_store_n(&page->full_heap, (uint16_t)index, __ATOMIC_RELAXED);
}
#endif
/*
 * A free by another thread made every block of page free, a full page of
 * heap table[index] for a while (below): the page leaves that heap's full
 * list for the pool's free list, if it is still there and still all free
 * under the heap's lock (pool.c; heap.c, "Full pages given away").
 */
void tl_pool_give_away(tl_page *page, uint32_t index);
/* Only a page that has been full for a purge delay / this (12 ms by
 * default), or of a heap that has stopped filling pages (free.c,
 * give_away_if_due): a producer whose consumer frees its pages as fast as
 * it fills them takes them back itself (heap_check_full), at no cost to
 * the pool. */
#define TL_GIVE_AFTER_DIV 8
/* Push a chain of n free blocks, first to last (linked, marked), on the
 * thread_free of a page the caller does not own (free.c). */
void tl_page_push_remote_chain(tl_page *page, tl_block *first,
			       tl_block *last, uint32_t n);

/* ---- size classes (sizeclass.c) ---- */
extern const uint32_t tl_class_size[TL_CLASSES];

/* The class of a block of size bytes (size <= TL_MEDIUM_MAX). */
static inline unsigned tl_size_to_class(size_t size)
{
	tl_assert(size <= TL_MEDIUM_MAX);
	if (size <= 128)
		return size == 0 ? 1 : (unsigned)((size + 15) >> 4);
	/* size in (2^b, 2^(b+1)]: four classes 2^b + k * 2^(b-2), k = 1..4 */
	unsigned b = 63u - (unsigned)__builtin_clzll((unsigned long long)size - 1);
	unsigned k = (unsigned)((size - 1 - ((size_t)1 << b)) >> (b - 2)) + 1;
	return 8 + (b - 7) * 4 + k;
}

/* The kind of page that holds blocks of class cls (sizeclass.c). */
static inline enum tl_page_kind tl_class_kind(unsigned cls)
{
	return tl_class_size[cls] <= TL_SMALL_MAX ? TL_PAGE_SMALL
						  : TL_PAGE_MEDIUM;
}

/* The least size of class cls: one more than the class below. */
static inline uint32_t tl_class_min(unsigned cls)
{
	return cls <= 1 ? 0 : tl_class_size[cls - 1] + 1;
}

/* The class tl_alloc_aligned gives size bytes at alignment (a power of
 * two), or 0 where it gives a huge block. */
unsigned tl_aligned_class(size_t alignment, size_t size);

/* ---- pages (page.c) ---- */
/*
 * avail, capacity and block_size are the owner's, but the statistics read
 * them from other threads (a snapshot): the owner writes them with relaxed
 * atomic stores (a plain mov on x86-64), so those reads are no data race.
 */
static inline void tl_page_set_avail(tl_page *page, uint32_t v)
{
	__atomic_store_n(&page->avail, v, __ATOMIC_RELAXED);
}

static inline uint32_t tl_slice_limit(uint32_t magic, uint32_t bs,
				      uint32_t capacity);

/* capacity, and with it the fast path's limit of block starts. */
static inline void tl_page_set_capacity(tl_page *page, uint32_t v)
{
	__atomic_store_n(&page->capacity, v, __ATOMIC_RELAXED);
	/* relaxed: another thread's free reads it (free.c, free_remote) */
	__atomic_store_n(&page->slice_limit,
			 tl_slice_limit(page->slice_magic, page->block_size, v),
			 __ATOMIC_RELAXED);
}

void tl_page_format(tl_page *page, unsigned cls);

/* Whether a block of page may have been asked for with size bytes: what
 * a sized free accepts and what realloc keeps in place (types.h,
 * tl_page.sized_min).  Not for huge pages. */
static inline bool tl_page_holds_size(const tl_page *page, size_t size)
{
	return size <= __atomic_load_n(&page->block_size, __ATOMIC_RELAXED) &&
	       size >= __atomic_load_n(&page->sized_min, __ATOMIC_RELAXED);
}

/*
 * The same, as another thread's free asks it: from the page's second
 * cache line alone (types.h), so that the free does not pull in the line
 * the owner's malloc writes.  size <= block_size is (size - 1) * div_magic
 * not wrapping: div_magic is 2^64 / block_size rounded up and block sizes
 * are below 2^32 (tl_block_in_page's division, run backwards).  Size 0
 * answers false.
 */
static inline bool tl_page_holds_size_remote(const tl_page *page, size_t size)
{
	uint64_t product;
	return !__builtin_mul_overflow((uint64_t)size - 1, page->div_magic,
				       &product) &&
	       size >= __atomic_load_n(&page->sized_min, __ATOMIC_RELAXED);
}

/* The owner hands out a block of page for a request as small as min
 * bytes (a young group's, an out-of-memory fallback's): a sized free of
 * that size must pass from now on. */
static inline void tl_page_allow_size(tl_page *page, uint32_t min)
{
	if (min < page->sized_min)
		__atomic_store_n(&page->sized_min, min, __ATOMIC_RELAXED);
}
/* Carve more fresh blocks into page->free; false if none are left. */
bool tl_page_extend(tl_page *page);
/*
 * A thread_free word: the list of blocks other threads freed into the page,
 * and in its top 16 bits (above every user-space address) how many, so the
 * owner and the statistics learn the count without walking the list.
 */
#define TL_REMOTE_COUNT_SHIFT 48
#define TL_REMOTE_ONE ((uintptr_t)1 << TL_REMOTE_COUNT_SHIFT)
/* Counts below this are exact (a page with fewer blocks never wraps). */
#define TL_REMOTE_COUNT_MAX ((uint32_t)1 << (64 - TL_REMOTE_COUNT_SHIFT))

static inline tl_block *tl_remote_list(uintptr_t w)
{
	return (tl_block *)(w & (TL_REMOTE_ONE - 1));
}

static inline uint32_t tl_remote_count(uintptr_t w)
{
	return (uint32_t)(w >> TL_REMOTE_COUNT_SHIFT);
}

/* Frees from other threads collected by the pages' owners, in all. */
extern tl_atomic_u64 tl_remote_frees;
/* Per class: allocations of pages since reformatted or unmapped. */
extern tl_atomic_u64 tl_class_allocs[TL_CLASSES];
/* Move page->allocs into its class's total: the statistics count it only
 * while a heap owns the page or it is abandoned, so before the page is
 * cached empty, given to the pool, formatted again or unmapped (its owner,
 * or the pool under its lock). */
void tl_page_retire_counts(tl_page *page);

/* Move local_free and thread_free into free, counting them in avail. */
void tl_page_collect(tl_page *page);
/*
 * A queue head whose free list ran dry takes its thread frees into free
 * (its local_free, which malloc pops first, stays), or else its local
 * frees, without counting them (its avail means nothing until it leaves
 * the head).  False if there were none.
 */
bool tl_page_collect_head(tl_page *page);
/*
 * Give the OS back the memory inside the free blocks of a medium page (all
 * but each block's first OS page, which holds its link and mark): for a
 * page whose heap leaves it with live blocks, whose free blocks may wait
 * long for another heap to adopt it.  After tl_page_collect; by a purge
 * that pinned the abandoned page (abandoned.c), so no heap touches it.
 */
void tl_page_purge_free(tl_page *page);
/* Recount avail from the free list (a head page leaving the fast path). */
void tl_page_count_avail(tl_page *page);
/* Whether page holds no live block: its avail (types.h) after a collect
 * (tl_page_collect), and not a queue head, whose avail is stale. */
static inline bool tl_page_is_empty(const tl_page *page)
{
	return page->avail == page->capacity;
}

/* ---- segments (segment.c) ----
 * A segment made, cut, moved or freed here is on no books but the
 * ownership bitmap: the caller (the pool, large.c) registers it with the
 * pool, updates its size there, and unregisters it before it is unmapped. */
/* Bytes at the end of a huge segment's mapping kept as a guard page: an
 * OS page in the secure build, none in the others. */
size_t tl_os_page_size(void);
#define TL_HUGE_GUARD (TL_SECURE ? tl_os_page_size() : (size_t)0)

static inline tl_segment *tl_segment_of(const void *p)
{
	return (tl_segment *)(((uintptr_t)p - 1) & ~(uintptr_t)TL_SEGMENT_MASK);
}

_Static_assert(sizeof(tl_page) == (1u << TL_PAGE_DESC_SHIFT),
	       "slice descriptors are indexed by a shift");

/*
 * The descriptor of p's 64 KiB slice: (p >> 16) % 64 scaled by the size of
 * a descriptor, in one shift and one mask.  A huge block at an offset of
 * TL_SEGMENT_SIZE lands on slice 0, its leader.
 */
static inline tl_page *tl_slice_of(const tl_segment *seg, const void *p)
{
	uintptr_t off = ((uintptr_t)p >> (TL_SLICE_SHIFT - TL_PAGE_DESC_SHIFT)) &
			((uintptr_t)(TL_SLICES - 1) << TL_PAGE_DESC_SHIFT);
	return (tl_page *)((uintptr_t)seg->slices + off);
}

/* The page holding p: its slice's leader. */
static inline tl_page *tl_page_of(const tl_segment *seg, const void *p)
{
	tl_page *slice = tl_slice_of(seg, p);
	return slice - slice->slice_offset;
}

/* Page i of a segment (its leader slice); const in, mutable out, as strchr. */
static inline tl_page *tl_segment_page(const tl_segment *seg, uint32_t i)
{
	return (tl_page *)&seg->slices[i << (seg->page_shift - TL_SLICE_SHIFT)];
}

/* A segment of kind's pages, every page free; NULL if the OS refuses. */
tl_segment *tl_segment_create(enum tl_page_kind kind);
/* The usable bytes of the one block of a huge segment (page: its leader):
 * from the block to the mapping's end, less the guard page. */
static inline size_t tl_huge_usable(const tl_segment *seg,
				    const tl_page *page)
{
	return seg->map_size - TL_HUGE_GUARD -
	       (size_t)(page->start - (const uint8_t *)seg);
}

/* Bytes to map for a huge block of size bytes at offset in its segment:
 * whole OS pages, and the guard page of the secure build. */
size_t tl_segment_huge_map_size(size_t offset, size_t size);
/* A huge segment holding one block of size bytes at the given alignment. */
tl_segment *tl_segment_create_huge(size_t size, size_t alignment);
/*
 * Cut a huge segment (its block at TL_SEGMENT_HEADER, no guard page) to
 * its first keep bytes (a multiple of the OS page): the pages after them
 * move, resident, to a new huge segment, returned as a live block; NULL
 * if the OS refuses, or the tail spans too many mappings (seg is then
 * unchanged).  seg->map_size is left to the caller's
 * tl_pool_segment_resized(seg, keep).
 */
tl_segment *tl_segment_split_huge(tl_segment *seg, size_t keep);
/*
 * Grow a huge segment whose block is at TL_SEGMENT_HEADER (and whose guard
 * page, if any, is open, and which the caller took off the pool's books)
 * to map_size bytes at a new place: the block's pages move, resident, and
 * the growth is fresh; seg is unmapped.  The new
 * segment, or NULL if the OS refuses or seg spans too many mappings (seg
 * is then unchanged).  Unlike tl_os_remap_moved, it works for a segment
 * of several mappings, as those cut or gathered from pieces are.
 */
tl_segment *tl_segment_move_huge(tl_segment *seg, size_t map_size);
/*
 * Grow or shrink a huge segment's mapping where it stands, to map_size
 * bytes (the caller's tl_pool_segment_resized says so): a shrink unmaps
 * its tail; a growth is one mremap for one mapping, and for several its
 * last mapping grown or fresh pages mapped after it.  false if it cannot
 * grow there (the address space after it is taken, or too many mappings):
 * nothing changed.
 */
bool tl_segment_resize_huge(tl_segment *seg, size_t map_size);
/* A cached huge segment ends at map_size now: the cuts past it are gone;
 * the caller unmaps the rest and keeps the pool's books. */
void tl_segment_cut_back(tl_segment *seg, size_t map_size);
/*
 * Move the last n bytes of pages (a multiple of the OS page) of the huge
 * segment from, which nobody else touches, over the pages of seg that end
 * at offset end; from's mapping ends n bytes sooner (the caller's
 * tl_pool_segment_resized says so).  false if refused (too many mappings:
 * seg keeps half of its TL_HUGE_CUTS for its growth later; or the OS):
 * then nothing moved.
 */
bool tl_segment_take_tail(tl_segment *seg, size_t end, tl_segment *from,
			  size_t n);
/* Unmap a segment the pool already dropped. */
void tl_segment_unmap(tl_segment *seg);
/* The same, its addresses left reserved and inaccessible (tl_os_reserve);
 * false if the OS refused that and the segment was unmapped instead. */
bool tl_segment_retire(tl_segment *seg);
/* Clear a huge segment's bit in the ownership bitmap while it moves
 * (tl_os_remap_moved), and set it at its new place after. */
void tl_segment_forget(tl_segment *seg);
void tl_segment_remember(tl_segment *seg);
/* Make free() of a static or a string literal report instead of fault. */
void tl_segment_shadow_objects(void);
/* Install the handler of faulting free probes, if asked (fault.c). */
void tl_fault_init(void);
/* The live segments' starts, a bit each (segment.c): 2^48 bytes of
 * addresses in 4 MiB segments, 64 a word. */
#define TL_ADDRESS_BITS 48
#define TL_MAP_WORDS ((size_t)1 << (TL_ADDRESS_BITS - TL_SEGMENT_SHIFT - 6))
extern tl_atomic_u64 tl_segment_map[TL_MAP_WORDS];

/* Whether p lies in a live segment of tlmalloc's: its bit, inline (every
 * free of another thread's block asks).  One test of p - 1 (the address
 * tl_segment_of masks) leaves out NULL and what the map does not cover. */
static inline bool tl_segment_is_ours(const void *p)
{
	if (((uintptr_t)p - 1) >> TL_ADDRESS_BITS)
		return false;
	uintptr_t n = (uintptr_t)tl_segment_of(p) >> TL_SEGMENT_SHIFT;
	return (tl_u64_load_relaxed(&tl_segment_map[n >> 6]) >> (n & 63)) & 1;
}
/*
 * The live segment whose mapping holds p, wherever in it p points (a huge
 * block reaches past its segment's first 4 MiB, which tl_segment_is_ours
 * names alone), or NULL.  Looks no further down than the largest huge
 * mapping made yet, and reads the header of the nearest live segment
 * start within that: a pointer so near a segment that another thread is
 * unmapping may fault (malloc_object_size's pointers are live blocks').
 */
tl_segment *tl_segment_holding(const void *p);
/* A huge segment's mapping is now map_size bytes (made, grown, moved):
 * how far tl_segment_holding must look. */
void tl_segment_huge_sized(size_t map_size);
uint8_t *tl_page_area(const tl_segment *seg, const tl_page *page,
		      size_t *size);

/* ---- the global pool (pool.c and the files of pool.h) ---- */
/* Pages and blocks of one size class, in pages some heap owns or abandoned. */
struct tl_pool_class_stats {
	uint64_t allocs;	/* blocks handed out, in all (TL_COUNTS) */
	uint64_t pages;
	uint64_t carved;	/* blocks carved in those pages */
	uint64_t live;		/* carved minus counted free (see below) */
};

/*
 * A snapshot of the pool.  live (and each class's live) counts the blocks
 * of a page as capacity - avail: frees not collected yet count as live, and
 * a queue head's pops since it was last counted do not.  tl_stats_get
 * counts the calling thread's heap first, so its own pages are exact.
 */
struct tl_pool_stats {
	size_t mapped;		/* bytes of address space mapped */
	size_t held;		/* of those, touched and not given back */
	size_t live;		/* bytes of blocks handed out */
	uint64_t purged;	/* bytes given back with madvise, in all */
	uint64_t segments;	/* segments mapped now */
	uint64_t segments_unmapped;	/* by purges, in all */
	uint64_t threads_seen;	/* thread heaps handed out */
	uint64_t threads_live;
	uint64_t lock_acquired;	/* the pool lock */
	uint64_t lock_waited;
	uint64_t mapped_peak;	/* most bytes mapped at once */
	uint64_t segments_peak;	/* most segments mapped at once */
	uint64_t remote_frees;	/* collected by owners, and still pending */
	uint64_t pages_abandoned;	/* pages of exited threads, in the pool */
	uint64_t pages_given_away;	/* tl_pool_give_away's, in all */
	uint64_t pages_free;	/* pages in the pool's free lists */
	uint64_t huge_blocks;	/* huge blocks handed out */
	uint64_t huge_bytes;	/* their mapped bytes */
	uint64_t huge_cached;	/* bytes of freed huge segments kept */
	struct tl_pool_class_stats classes[TL_CLASSES];	/* [0] unused */
};
/* A formatted page of class cls owned by heap (adopted or fresh). */
tl_page *tl_pool_take_page(tl_heap *heap, unsigned cls);
/* An abandoned page of class cls, now heap's; NULL if none. */
tl_page *tl_pool_adopt_page(tl_heap *heap, unsigned cls);
/* Out of memory: a free page of the kind that class cls does not use,
 * formatted for it and owned by heap; NULL if none (no mapping). */
tl_page *tl_pool_take_other_kind(tl_heap *heap, unsigned cls);
void tl_pool_give_page(tl_page *page);
/* Keep a freed huge segment for reuse (false: too big or unusual, or the
 * cache at the most the program's huge blocks ever held: unmap);
 * huge_cache.c. */
bool tl_pool_cache_huge(tl_segment *seg);
/* The program let go of a huge block of let_go bytes of mapping and took
 * one of taken (a malloc, free or realloc): the bytes it holds, and their
 * peak. */
void tl_pool_huge_held(size_t let_go, size_t taken);
/* The cached huge segment closest to a block of size bytes: the smallest
 * that holds it, else the largest (large.c cuts or grows it); NULL when
 * none is cached. */
tl_segment *tl_pool_take_huge(size_t size);
/* The pages of an exiting heap that still hold live blocks, under one
 * lock: abandoned, for any heap to adopt (the list is left empty). */
void tl_pool_abandon_pages(tl_page_list *pages);
/* Every page of a heap no thread will use again, counted: empty ones to
 * the pool, the others abandoned (abandoned.c). */
void tl_pool_release_heap(tl_heap *heap);
/* A heap struct for a new thread: a parked heap (*parked set) if there is
 * one, else a fresh struct; NULL when out of memory. */
tl_heap *tl_pool_heap_alloc(bool *parked);
void tl_pool_heap_free(tl_heap *heap);
/* At a thread's exit, its parked heap (tl_heap_park) joins the pool's
 * parked heaps; the oldest past their number is destroyed. */
void tl_pool_park_heap(tl_heap *heap);
/* The pool's books of every live segment (its list, the bytes mapped; a
 * small or medium segment's pages become free pages): a segment made or
 * moved by segment.c enters them, one to be unmapped or moved leaves. */
void tl_pool_register_segment(tl_segment *seg);
void tl_pool_unregister_segment(tl_segment *seg);
/* A huge segment's mapping is map_size bytes now (sets seg->map_size). */
void tl_pool_segment_resized(tl_segment *seg, size_t map_size);
/* Purge free pages whose delay ran out (all of them if force). */
bool tl_pool_purge(bool force);
bool tl_pool_purge_pending(void);
/* Out of memory: the abandoned pages that other threads emptied become
 * free pages (as a purge does, without purging). */
void tl_pool_reclaim_abandoned(void);
/* Out of memory: purge everything, abandoned pages emptied since
 * included; whether a segment was unmapped (address space for a retry). */
bool tl_pool_unmap_free(void);
void tl_pool_stats_get(struct tl_pool_stats *out);
/* The same after counting the caller's heap and the shared heap exactly
 * (stats.c). */
void tl_stats_counted(struct tl_pool_stats *out);
void tl_pool_fork_prepare(void);
void tl_pool_fork_parent(void);
/* In the child: the shared heap (id shared) and the heap profiler's (id
 * profiler) keep their pages as the forking thread's heap does, for they
 * live on; every other heap's are orphaned. */
void tl_pool_fork_child(uintptr_t shared, uintptr_t profiler);

#if TL_DEBUG > 0
/*
 * The invariants of types.h as code (debug builds only).  Each returns
 * true, or aborts with "tlmalloc: tl_X_check(0xADDRESS): what is broken".
 *
 * tl_page_check (page.c): a page some heap owns, caches or abandoned.  Its
 * owner word is owner; it is a leader, formatted for its class (block
 * size, reserved, magics); free, local_free and thread_free are acyclic,
 * hold only block starts of the carved part, no block twice, every block
 * marked free (TL_CHECKS); thread_free's count is its list's length; avail
 * <= capacity, and when counted (not a queue head, see tl_page) avail is
 * the length of free; a full page has nothing in free and local_free.
 * The caller owns the page (or holds the pool lock for an abandoned one).
 */
bool tl_page_check(const tl_page *page, uintptr_t owner, bool counted);
/*
 * tl_heap_check (heap.c): the heap's lists are well linked; every page in
 * them is in exactly one (owner word, class and list agree: queue[c]
 * holds pages of class c owned by the heap, full those flagged full,
 * empty those owned by none) and passes tl_page_check; pages_owned and
 * empty_count count them; each direct slot points at its class's queue
 * head (a young group's: its top class's), or the empty page.  Its thread.
 */
bool tl_heap_check(const tl_heap *heap);
/*
 * tl_pool_check_locked (pool_check.c): the caller holds the pool lock; the
 * segment list is well linked and its count and bytes are the pool's; each
 * free page list holds free leaders of its kind, flagged in_pool, as many
 * as the segments say; each segment's used_pages counts its pages out of
 * the pool; each abandoned list holds abandoned pages of its class that
 * pass tl_page_check; the huge cache's count and bytes are its list's; no
 * dirty free page or cached segment is due before the next purge.
 * tl_pool_check takes the lock around it.
 */
bool tl_pool_check_locked(void);
bool tl_pool_check(void);
#endif

/* ---- the shared heap behind one lock (shared_heap.c) ---- */
/* The owner id of the shared heap's pages. */
uintptr_t tl_shared_heap_id(void);
/* malloc from the shared heap: the lock baseline, and exiting threads;
 * size as the generic path counts it (the secure build's canary tail in
 * it already). */
void *tl_shared_malloc(size_t size);
/* free into the shared heap, under its lock (the lock baseline). */
void tl_shared_free(void *p);
/* tl_heap_collect_all of the shared heap, under its lock. */
void tl_shared_collect(bool release);
void tl_shared_fork_prepare(void);
void tl_shared_fork_parent(void);
void tl_shared_fork_child(void);

/* ---- large blocks (large.c) ---- */
void *tl_large_alloc(size_t size, size_t alignment);
void tl_large_free(tl_segment *seg);
/* Resize a huge block without copying (in place, or its pages moved);
 * returns the block's address, or NULL when realloc must copy. */
void *tl_large_resize(void *p, size_t size);
bool tl_large_is_fresh(const void *p);

/* ---- allocation and free (alloc.c, free.c) ---- */
void *tl_malloc_generic(tl_heap *heap, size_t size) TL_NOINLINE;
/* A block from a heap that is a thread's or the shared one: its page
 * queues, or a huge segment; NULL with errno ENOMEM. */
void *tl_heap_alloc(tl_heap *heap, size_t size);
/* The same for the calling thread's heap. */
void *tl_malloc_slow(size_t size) TL_NOINLINE;
/* slice: the descriptor of p's slice (tl_slice_of), leader or follower. */
void tl_free_generic(tl_heap *heap, tl_page *slice, void *p) TL_NOINLINE;
/* The same for the calling thread's heap; also takes NULL and pointers
 * outside user space (finds p's slice again: the fast path passes p only). */
void tl_free_slow(void *p) TL_NOINLINE;
/*
 * Abort with a line naming call and p unless p is the start of a block of
 * page that is not free (owner: the caller owns the page's lists, which
 * confirm a mark; free.c explains); of a huge page, its one block's start.
 * For free, realloc, malloc_usable_size.
 */
void tl_free_check(const char *call, const tl_page *page, const void *p,
		   bool owner) TL_NOINLINE;
/*
 * A sized free (free_sized, free_aligned_sized, the sized deletes) in
 * full: abort with a line naming call, p and both sizes unless size (at
 * alignment, 0 for none) may be what p was asked for, then free p (which
 * reports what is not a live block of tlmalloc's).
 */
void tl_free_sized_slow(const char *call, void *p, size_t size,
			size_t alignment) TL_NOINLINE;
/* Free p into page, which the caller owns, after tl_free_check. */
void tl_free_owned(tl_page *page, void *p) TL_NOINLINE;
void *tl_alloc_aligned(size_t alignment, size_t size);
/* The usable size of p, a pointer into one of tlmalloc's segments; aborts
 * naming call unless p is a live block (tl_free_check). */
size_t tl_block_usable(const char *call, const void *p);
/* tl_object_size and tl_object_size_fast (tlmalloc.h) of p, a pointer into
 * page of segment seg; the first aborts naming call unless p is inside a
 * live block. */
size_t tl_block_object_size(const char *call, const tl_page *page,
			    const void *p);
size_t tl_block_object_size_fast(const tl_segment *seg, const tl_page *page,
				 const void *p);
void *tl_realloc_impl(void *p, size_t size);
void *tl_calloc_impl(size_t count, size_t size);

/* ---- process (init.c) ---- */
void tl_process_init(void);
/* Arrange for tl_heap_destroy(heap) at the calling thread's exit. */
void tl_thread_register(tl_heap *heap);
/*
 * The pool has pages to purge in a threaded program: ask for the purger.
 * pthread_create allocates, so the thread is started later, by
 * tl_purger_poll at the end of a slow path: no heap operation under way,
 * no lock held.
 */
void tl_purger_wake(void);
extern tl_atomic_u32 tl_purger_wanted;
void tl_purger_start(void) TL_NOINLINE;

static inline void tl_purger_poll(void)
{
	if (tl_unlikely(tl_u32_load_relaxed(&tl_purger_wanted) != 0))
		tl_purger_start();
}
/* ---- blocks ---- */
/* tl_page.slice_magic of blocks of bs bytes (16 <= bs <= TL_MEDIUM_MAX):
 * 2^32 / bs, plus one, so that magic * bs = 2^32 + e with 0 < e <= bs. */
static inline uint32_t tl_slice_magic(uint32_t bs)
{
	return (uint32_t)(((uint64_t)1 << 32) / bs + 1);
}

/*
 * Offset k * bs times magic is k * e (mod 2^32): growing with k, and below
 * magic for every block start in a slice, while any other offset lands at
 * magic or above.  So off * magic < k * e says "a block start, of one of
 * the first k blocks": tl_page.slice_limit, for the k blocks carved.  The
 * limit never exceeds magic (block starts that far are not in the slice).
 */
static inline uint32_t tl_slice_limit(uint32_t magic, uint32_t bs,
				      uint32_t capacity)
{
	uint32_t e = magic * bs;	/* wraps: 2^32 + e */
	uint64_t limit = (uint64_t)capacity * e;
	return limit < magic ? (uint32_t)limit : magic;
}

/* Whether an offset below TL_SLICE_SIZE is the start of one of the blocks
 * that the limit (tl_slice_limit) counts: one multiply and one compare,
 * exact for every class (test/unit/block_start.c). */
static inline bool tl_slice_offset_starts(uint32_t off, uint32_t magic,
					  uint32_t limit)
{
	return off * magic < limit;
}

/* Whether p is the start of a block in the carved part of page: a range
 * check, and off % block_size == 0 without a division (off < 2^32).  The
 * generic paths' test of a freed pointer, and the secure build's of every
 * link. */
static inline bool tl_block_in_page(const tl_page *page, const void *p)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)page->start;
	uint32_t cap = __atomic_load_n(&page->capacity, __ATOMIC_RELAXED);
	uint32_t bs = __atomic_load_n(&page->block_size, __ATOMIC_RELAXED);
	if (off >= (uintptr_t)cap * bs)		/* an unformatted page: cap 0 */
		return false;
	return (uint64_t)off * page->div_magic <= page->div_magic - 1;
}

/* ---- free-list links ---- */
/*
 * A link stored in a free block goes through these two, which are the
 * identity in the default build.  The secure build stores
 * next ^ page->key ^ block (a per-page secret: a leaked or overwritten link
 * means nothing without it) and checks every decoded link: NULL, or a block
 * of the same page's carved area.  A free block there also carries a mark
 * in its second word (tl_free_mark), checked and cleared by malloc.
 */
/* The secure build's (the others call them in dead branches alone). */
/* Blocks up to this size are filled with TL_SECURE_FILL when freed. */
#define TL_SECURE_FILL_MAX ((size_t)64 << 10)
#define TL_SECURE_FILL 0xdf
/* The same byte in each of a word's 8. */
#define TL_SECURE_FILL_WORD (0x0101010101010101ull * TL_SECURE_FILL)

/*
 * The mark of a free block that holds no fill to check (fresh blocks,
 * blocks freed with secure_fill 0, purged ones) is tl_free_mark ^
 * TL_SECURE_UNFILLED; malloc checks the fill of the others
 * (tl_secure_take_filled, option secure_fill_check).
 */
#define TL_SECURE_UNFILLED ((uintptr_t)1)
/*
 * Every free block of a page with canaries (up to TL_SECURE_FILL_MAX, of
 * 32 bytes or more) ends in TL_SECURE_TAIL bytes of TL_SECURE_FILL,
 * filled or not: written at carve, by a free without fill, and kept by
 * the purge (page.c).  An underflow of the block after it changes them
 * (canary.c, tl_canary_check_before).
 */
#define TL_SECURE_TAIL ((size_t)16)
/* Whether free blocks of bs bytes end in that tail. */
static inline bool tl_secure_tailed(size_t bs)
{
	return bs >= 2 * TL_SECURE_TAIL && bs <= TL_SECURE_FILL_MAX;
}
static inline void tl_secure_fill_tail(const tl_page *page, void *block)
{
	size_t bs = page->block_size;
	if (tl_secure_tailed(bs))
		memset((uint8_t *)block + bs - TL_SECURE_TAIL, TL_SECURE_FILL,
		       TL_SECURE_TAIL);
}
/* A block held in a quarantine (quarantine.c) carries its free mark ^
 * TL_SECURE_QUARANTINED: a free of it is a double free. */
#define TL_SECURE_QUARANTINED ((uintptr_t)2)

/* Hold a block that free checked, filled and gave `mark` in the calling
 * thread's quarantine of n blocks (n: the option secure_quarantine, which
 * free tests first, not 0); false if the thread has none (then free goes
 * on).  The block pushed out, if any, is freed for real
 * (tl_free_released). */
bool tl_quarantine_hold(tl_block *block, uintptr_t mark, uint32_t n);
/* The link a quarantined block holds while it waits (its mark's
 * complement), and whether it still holds it. */
static inline tl_block *tl_quarantine_link(uintptr_t mark)
{
	return (tl_block *)~mark;
}

static inline bool tl_quarantine_intact(const tl_block *block)
{
	return block->next == tl_quarantine_link(block->mark);
}
/* Check again the block heap's thread freed last (heap->quarantine_newest,
 * not NULL), at that thread's next call (malloc or free), and forget it:
 * a write into it since its free is reported as call's. */
void tl_quarantine_recheck(tl_heap *heap, const char *call) TL_NOINLINE;
/* Free every block of heap's quarantine for real (thread exit). */
void tl_quarantine_flush(tl_heap *heap);
/* Free for real a block that leaves a quarantine of heap; checks that its
 * mark and link were left alone while it waited. */
void tl_free_released(tl_heap *heap, tl_block *block);

/* The secure build's zero-size blocks (zero_size.c, option
 * secure_zero_size): slots of a pool mapped PROT_NONE at the 4 MiB-aligned
 * tl_zero_base (0 until it is mapped).  tl_zero_malloc serves a malloc of
 * 0 bytes (from the pool, or as any other size when it cannot);
 * tl_zero_check aborts naming call unless p is a live slot; free, realloc
 * of a pointer into the pool. */
extern tl_atomic_uptr tl_zero_base;
static inline bool tl_zero_holds(const void *p)
{
	uintptr_t base = tl_uptr_load_relaxed(&tl_zero_base);
	return base != 0 && ((uintptr_t)p & ~(TL_SEGMENT_SIZE - 1)) == base;
}
void *tl_zero_malloc(void) TL_NOINLINE;
void tl_zero_check(const char *call, const void *p) TL_NOINLINE;
void tl_zero_free(const char *call, void *p) TL_NOINLINE;
void *tl_zero_realloc(void *p, size_t size) TL_NOINLINE;

/* The secure build's quarantine of freed huge blocks' addresses
 * (huge_quarantine.c, option secure_huge_quarantine, at most
 * TL_HUGE_QUARANTINE_MAX): true if it took seg, which the pool no longer
 * holds then. */
#define TL_HUGE_QUARANTINE_MAX 1024
bool tl_huge_quarantine_hold(tl_segment *seg);

/* A new secret for a page being formatted. */
void tl_secure_page_init(tl_page *page);
/* A block marked filled that malloc takes (with secure_fill_check or
 * secure_zero on, which malloc tests first, inline): aborts unless it
 * still holds its fill (secure_fill_check), zeroes it (secure_zero). */
void tl_secure_take_filled(const tl_page *page, tl_block *block)
	TL_NOINLINE;
/* A block with no fill that malloc takes, with secure_zero on: zeroed (up
 * to TL_SECURE_FILL_MAX). */
void tl_secure_zero(const tl_page *page, tl_block *block) TL_NOINLINE;
/* 16 bytes, compared as one (a vector register where there is one). */
typedef uint64_t tl_fill_chunk __attribute__((vector_size(16)));

/* Whether a block marked filled still holds TL_SECURE_FILL past its first
 * two words, up to upto bytes into it (a multiple of 16; at most the
 * block, itself at most TL_SECURE_FILL_MAX).  Blocks are 16-byte aligned
 * and their sizes multiples of 16: the fill is whole 16-byte chunks, read
 * as such (no scalar head or tail).  Inline: through a call, its callers
 * (fill.c, free.c, quarantine.c) took 30 instructions a pair more. */
static inline bool tl_secure_fill_intact(const tl_page *page,
					 const tl_block *block, size_t upto)
{
	const tl_fill_chunk fill = { TL_SECURE_FILL_WORD, TL_SECURE_FILL_WORD };
	const tl_fill_chunk *c = (const tl_fill_chunk *)(block + 1);
	size_t n = upto < page->block_size ? upto : page->block_size;
	const tl_fill_chunk *end =
		(const tl_fill_chunk *)((const uint8_t *)block + n);
	tl_fill_chunk diff = { 0, 0 };
	for (; c < end; c++)
		diff |= *c ^ fill;
	return (diff[0] | diff[1]) == 0;
}

/*
 * Canaries (canary.c, option secure_canary): with them on, a malloc of n
 * bytes up to TL_SECURE_FILL_MAX asks for TL_CANARY_TAIL bytes more, and
 * a block of a small or medium page up to TL_SECURE_FILL_MAX carries, right after its
 * n bytes, a canary of 6 to TL_CANARY_MAX bytes keyed by its page's secret
 * and its address (its first byte 0 with secure_canary_nul), and n in its
 * last two bytes.  free,
 * realloc and malloc_usable_size check the canary; malloc_usable_size
 * says n.
 */
#define TL_CANARY_MAX 8	/* the canary's bytes where the block has room */
#define TL_CANARY_TAIL ((size_t)8)	/* 6 bytes of canary at least, n in 2 */
/* TL_CANARY_TAIL, or 0 with canaries off, and TL_CANARY_NUL with the
 * canary's first byte 0 (secure_canary_nul): decided once, at the first
 * malloc (-1 until then).  Every caller of the canary's functions has read
 * it before (tl_canary_tail), so they read the same. */
#define TL_CANARY_NUL 0x100
extern int tl_canary_state;
size_t tl_canary_start(void) TL_NOINLINE;
/* Writes p's canary and size for a request of n bytes when tail is not 0
 * and p's page carries canaries; returns p. */
void *tl_canary_set(void *p, size_t n, size_t tail) TL_NOINLINE;
/* The size a block of a page with canaries was asked for, after checking
 * its canary (aborts naming call when it was overwritten). */
size_t tl_canary_check(const char *call, const tl_page *page, const void *p)
	TL_NOINLINE;
/* The tail of the block before p in its page (a live one's canary, a
 * freed one's fill), while the process has one thread; aborts naming call
 * and p when an underflow of p overwrote it (canary.c). */
void tl_canary_check_before(const char *call, const tl_page *page,
			    const void *p) TL_NOINLINE;

/* What malloc asks for a request of size bytes: the tail added up to
 * TL_SECURE_FILL_MAX (the blocks past it carry no canary). */
static inline size_t tl_canary_ask(size_t size, size_t tail)
{
	return size <= TL_SECURE_FILL_MAX ? size + tail : size;
}

static inline size_t tl_canary_tail(void)
{
	int s = __atomic_load_n(&tl_canary_state, __ATOMIC_RELAXED);
	return tl_likely(s >= 0) ? (size_t)s & (TL_CANARY_NUL - 1)
				 : tl_canary_start();
}

/* Whether blocks of page carry canaries (with them on). */
static inline bool tl_canary_page(const tl_page *page)
{
	return page->kind != TL_PAGE_HUGE &&
	       page->block_size <= TL_SECURE_FILL_MAX;
}
__attribute__((noreturn)) void tl_secure_corrupt(const void *block)
	TL_NOINLINE;
__attribute__((noreturn)) void tl_secure_modified(const void *block)
	TL_NOINLINE;

/* The page's secret: the secure build's tl_page.key; 0 in the others,
 * whose pages have no such field (the one #if of the links below). */
static inline uintptr_t tl_page_key(const tl_page *page)
{
#if TL_SECURE
	return page->key;
#else
	(void)page;
	return 0;
#endif
}

/*
 * The mark of a free block (tl_block.mark): the secure build's is keyed by
 * the page's secret; the default build's is the address of the block's
 * segment, which the free fast path holds in a register anyway.  User data
 * may equal it by chance: a mark is a reason to look, the lists decide
 * (free.c, tl_free_check).
 */
static inline uintptr_t tl_free_mark(const tl_page *page, const void *block)
{
	if (TL_SECURE)
		return tl_page_key(page) ^ ~(uintptr_t)block;
	return (uintptr_t)tl_segment_of(block);
}

/* Whether a block carries its free mark (in the secure build, either). */
static inline bool tl_block_marked(const tl_page *page, const tl_block *block)
{
#if TL_SECURE
	return (block->mark ^ tl_free_mark(page, block)) <= TL_SECURE_UNFILLED;
#else
	return block->mark == tl_free_mark(page, block);
#endif
}

static inline tl_block *tl_link_encode(const tl_page *page, const void *at,
				       const tl_block *next)
{
	if (TL_SECURE)
		return (tl_block *)((uintptr_t)next ^ tl_page_key(page) ^
				    (uintptr_t)at);
	return (tl_block *)next;
}

/* The link stored at block `at`; the secure build aborts if it is bad. */
static inline tl_block *tl_link_decode(const tl_page *page, const void *at,
				       const tl_block *stored)
{
	if (!TL_SECURE)
		return (tl_block *)stored;
	tl_block *next = (tl_block *)((uintptr_t)stored ^ tl_page_key(page) ^
				      (uintptr_t)at);
	if (tl_unlikely(next != NULL && !tl_block_in_page(page, next)))
		tl_secure_corrupt(at);
	return next;
}

/* A block leaves the free lists for malloc: counted, and its mark is
 * cleared (the secure build first checks that it is intact, and the fill
 * of a block marked filled). */
static inline void tl_block_taken(tl_page *page, tl_block *block)
{
#if TL_COUNTS && defined(__SANITIZE_THREAD__)
	__atomic_store_n(&page->allocs,
			 __atomic_load_n(&page->allocs, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
#elif TL_COUNTS
	page->allocs++;	/* the owner's; read relaxed by the statistics */
#endif
#if TL_SECURE	/* its fill check and the unfilled mark are the secure build's */
	uintptr_t d = block->mark ^ tl_free_mark(page, block);
	if (tl_likely(d == 0)) {
		if (tl_option(TL_OPT_secure_fill_check) |
		    tl_option(TL_OPT_secure_zero))
			tl_secure_take_filled(page, block);
	} else if (tl_unlikely(d != TL_SECURE_UNFILLED))
		tl_secure_modified(block);
	else if (tl_option(TL_OPT_secure_zero))
		tl_secure_zero(page, block);
#elif !TL_COUNTS
	(void)page;
#endif
	if (TL_CHECKS)
		block->mark = 0;
}

/* ---- ordering and the thread pointer ---- */

/*
 * The stores before it stay before the stores after it, as a forked child
 * sees them, so an update cut by a fork in another thread leaves no block
 * on two lists (page.c explains; the child counts such pages, abandoned.c
 * "orphaned").  The child sees what the thread's stores had reached when
 * its pages were shared: x86-64 makes them visible in program order, so
 * only the compiler must keep it (no code); arm64 may not, so a
 * store-store barrier (dmb ishst) keeps it there.
 */
static inline void tl_fork_order(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("" ::: "memory");
#elif defined(__aarch64__)
	__asm__ volatile("dmb ishst" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

/* The thread pointer: the calling thread's heap id. */
static inline uintptr_t tl_thread_id(void)
{
#if defined(__x86_64__)
	/* The x86-64 TLS ABI keeps the thread pointer at %fs:0 (clang before
	 * 16 has no __builtin_thread_pointer there). */
	uintptr_t tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
#else
	return (uintptr_t)__builtin_thread_pointer();
#endif
}

#endif /* TLMALLOC_INTERNAL_H */
