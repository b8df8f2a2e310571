/*
 * internal.h - what the modules of src/ call of each other, and the inline
 * fast paths of malloc and free.
 *
 * The fast paths take no lock and do no atomic read-modify-write: malloc
 * pops the first block of the heap's page for the size, free pushes a block
 * on its page's local list when the caller's heap owns the page.  Anything
 * else (empty list, other owner, full page, large block) goes to one
 * noinline generic function.
 */
#ifndef TLMALLOC_INTERNAL_H
#define TLMALLOC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tlmalloc/types.h"

#define TL_NOINLINE __attribute__((noinline))
#define tl_likely(x) __builtin_expect(!!(x), 1)
#define tl_unlikely(x) __builtin_expect(!!(x), 0)

#if defined(TL_DEBUG) && TL_DEBUG > 0
void tl_assert_fail(const char *expr, const char *file, int line);
#define tl_assert(x) \
	((x) ? (void)0 : tl_assert_fail(#x, __FILE__, __LINE__))
#else
#define tl_assert(x) ((void)0)
#endif

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
extern tl_heap tl_heap_empty;
extern tl_heap tl_heap_exiting;
extern tl_page tl_page_empty;

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
/* A page of class cls with a free block, or NULL when out of memory. */
tl_page *tl_heap_find_page(tl_heap *heap, unsigned cls);
/* The owner freed into a page flagged full: back to its queue. */
void tl_heap_page_unfull(tl_heap *heap, tl_page *page);

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

static inline void tl_page_set_capacity(tl_page *page, uint32_t v)
{
	__atomic_store_n(&page->capacity, v, __ATOMIC_RELAXED);
}

void tl_page_format(tl_page *page, unsigned cls);
/* Carve more fresh blocks into page->free; false if none are left. */
bool tl_page_extend(tl_page *page);
/*
 * A thread_free word: the list of blocks other threads freed into the page,
 * and in its top 16 bits (above every user-space address) how many, so the
 * owner and the statistics learn the count without walking the list.
 */
#define TL_REMOTE_COUNT_SHIFT 48
#define TL_REMOTE_ONE ((uintptr_t)1 << TL_REMOTE_COUNT_SHIFT)

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
 * A queue head whose free list ran dry takes its local frees, or else its
 * thread frees, without counting them (its avail means nothing until it
 * leaves the head).  False if there were none.
 */
bool tl_page_collect_head(tl_page *page);
/*
 * Give the OS back the memory inside the free blocks of a medium page (all
 * but each block's first OS page, which holds its link and mark): for a
 * page whose heap leaves it with live blocks, whose free blocks may wait
 * long for another heap to adopt it.  After tl_page_collect; the owner, or
 * under the pool lock.
 */
void tl_page_purge_free(tl_page *page);
/* Recount avail from the free list (a head page leaving the fast path). */
void tl_page_count_avail(tl_page *page);

/* ---- segments (segment.c) ---- */
/* Bytes at the end of a huge segment's mapping kept as a guard page. */
#if TL_SECURE
size_t tl_os_page_size(void);
#define TL_HUGE_GUARD tl_os_page_size()
#else
#define TL_HUGE_GUARD ((size_t)0)
#endif

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

tl_segment *tl_segment_create(enum tl_page_kind kind);
/* Bytes to map for a huge block of size bytes at offset in its segment:
 * whole OS pages, and the guard page of the secure build. */
size_t tl_segment_huge_map_size(size_t offset, size_t size);
/* A huge segment holding one block of size bytes at the given alignment. */
tl_segment *tl_segment_create_huge(size_t size, size_t alignment);
/*
 * Cut a huge segment (its block at TL_SEGMENT_HEADER, no guard page) to
 * its first keep bytes (a multiple of the OS page): the pages after them
 * move, resident, to a new huge segment, returned on the books as a live
 * block; NULL if the OS refuses (seg is then unchanged).
 */
tl_segment *tl_segment_split_huge(tl_segment *seg, size_t keep);
/*
 * Grow a huge segment whose block is at TL_SEGMENT_HEADER (and whose guard
 * page, if any, is open) to map_size bytes at a new place: the block's
 * pages move, resident, and the growth is fresh; seg is unmapped.  The new
 * segment, or NULL if the OS refuses (seg is then unchanged).  Unlike
 * tl_os_remap_moved, it works for a segment of two mappings, as those
 * that tl_segment_split_huge makes.
 */
tl_segment *tl_segment_move_huge(tl_segment *seg, size_t map_size);
/* Unregister from the pool, then unmap. */
void tl_segment_destroy(tl_segment *seg);
/* Unmap a segment the pool already dropped. */
void tl_segment_unmap(tl_segment *seg);
/* Take a huge segment off the books while it moves, and back after. */
void tl_segment_forget(tl_segment *seg);
void tl_segment_remember(tl_segment *seg);
/* Make free() of a static or a string literal report instead of fault. */
void tl_segment_shadow_objects(void);
/* Install the handler of faulting free probes, if asked (fault.c). */
void tl_fault_init(void);
/* Whether p lies in a live segment of tlmalloc's. */
bool tl_segment_is_ours(const void *p);
uint8_t *tl_page_area(const tl_segment *seg, const tl_page *page,
		      size_t *size);

/* ---- the global pool (pool.c) ---- */
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
	uint64_t pages_free;	/* pages in the pool's free lists */
	uint64_t huge_blocks;	/* huge blocks handed out */
	uint64_t huge_bytes;	/* their mapped bytes */
	uint64_t huge_cached;	/* bytes of freed huge segments kept */
	struct tl_pool_class_stats classes[TL_CLASSES];	/* [0] unused */
};
/* A formatted page of class cls owned by heap (adopted or fresh). */
tl_page *tl_pool_take_page(tl_heap *heap, unsigned cls);
void tl_pool_give_page(tl_page *page);
/* Keep a freed huge segment for reuse (false: too big or unusual, unmap). */
bool tl_pool_cache_huge(tl_segment *seg);
/* The cached huge segment closest to a block of size bytes: the smallest
 * that holds it, else the largest (large.c cuts or grows it); NULL when
 * none is cached. */
tl_segment *tl_pool_take_huge(size_t size);
/* The pages of an exiting heap that still hold live blocks, under one
 * lock: abandoned, for any heap to adopt (the list is left empty). */
void tl_pool_abandon_pages(tl_page_list *pages);
tl_heap *tl_pool_heap_alloc(void);
void tl_pool_heap_free(tl_heap *heap);
void tl_pool_register_segment(tl_segment *seg);
void tl_pool_unregister_segment(tl_segment *seg);
void tl_pool_segment_resized(tl_segment *seg, size_t map_size);
/* Purge free pages whose delay ran out (all of them if force). */
bool tl_pool_purge(bool force);
bool tl_pool_purge_pending(void);
void tl_pool_stats_get(struct tl_pool_stats *out);
/* The same after counting the caller's heap and the shared heap exactly
 * (stats.c). */
void tl_stats_counted(struct tl_pool_stats *out);
void tl_pool_fork_prepare(void);
void tl_pool_fork_parent(void);
void tl_pool_fork_child(void);

/* ---- the shared heap behind one lock (ts.c) ---- */
/* The owner id of the shared heap's pages. */
uintptr_t tl_shared_heap_id(void);
/* malloc from the shared heap: the lock baseline, and exiting threads. */
void *tl_shared_malloc(size_t size);
/* tl_heap_collect_all of the shared heap, under its lock. */
void tl_shared_collect(bool release);
void tl_ts_fork_prepare(void);
void tl_ts_fork_parent(void);
void tl_ts_fork_child(void);

/* ---- large blocks (large.c) ---- */
void *tl_large_alloc(size_t size, size_t alignment);
void tl_large_free(tl_segment *seg);
/* Resize a huge block without copying (in place, or its pages moved);
 * returns the block's address, or NULL when realloc must copy. */
void *tl_large_resize(void *p, size_t size);
bool tl_large_is_fresh(const void *p);

/* ---- allocation and free (alloc.c, free.c) ---- */
void *tl_malloc_generic(tl_heap *heap, size_t size) TL_NOINLINE;
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
/* Free p into page, which the caller owns, after tl_free_check. */
void tl_free_owned(tl_page *page, void *p) TL_NOINLINE;
void *tl_alloc_aligned(size_t alignment, size_t size);
/* The usable size of p, a pointer into one of tlmalloc's segments; aborts
 * naming call unless p is a live block (tl_free_check). */
size_t tl_block_usable(const char *call, const void *p);
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
/* Report a fatal misuse and abort. */
__attribute__((noreturn)) void tl_fatal(const char *call, const void *p,
					const char *what);

/* ---- blocks ---- */
/* tl_page.slice_magic of blocks of bs bytes (16 <= bs <= TL_MEDIUM_MAX). */
static inline uint32_t tl_slice_magic(uint32_t bs)
{
	return UINT32_MAX / bs + 1;
}

/* Whether an offset below TL_SLICE_SIZE is a multiple of the block size
 * whose slice_magic is magic: one multiply and one compare, exact for
 * every class (test/unit/block_start.c). */
static inline bool tl_slice_offset_starts(uint32_t off, uint32_t magic)
{
	return off * magic < magic;
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
#if TL_SECURE
/* Blocks up to this size are filled with TL_SECURE_FILL when freed. */
#define TL_SECURE_FILL_MAX ((size_t)64 << 10)
#define TL_SECURE_FILL 0xdf

/* A new secret for a page being formatted. */
void tl_secure_page_init(tl_page *page);
__attribute__((noreturn)) void tl_secure_corrupt(const void *block)
	TL_NOINLINE;
__attribute__((noreturn)) void tl_secure_modified(const void *block)
	TL_NOINLINE;

#endif

/*
 * The mark of a free block (tl_block.mark): the secure build's is keyed by
 * the page's secret; the default build's is the address of the block's
 * segment, which the free fast path holds in a register anyway.  User data
 * may equal it by chance: a mark is a reason to look, the lists decide
 * (free.c, tl_free_check).
 */
static inline uintptr_t tl_free_mark(const tl_page *page, const void *block)
{
#if TL_SECURE
	return page->key ^ ~(uintptr_t)block;
#else
	(void)page;
	return (uintptr_t)tl_segment_of(block);
#endif
}

static inline tl_block *tl_link_encode(const tl_page *page, const void *at,
				       const tl_block *next)
{
#if TL_SECURE
	return (tl_block *)((uintptr_t)next ^ page->key ^ (uintptr_t)at);
#else
	(void)page;
	(void)at;
	return (tl_block *)next;
#endif
}

/* The link stored at block `at`; the secure build aborts if it is bad. */
static inline tl_block *tl_link_decode(const tl_page *page, const void *at,
				       const tl_block *stored)
{
#if TL_SECURE
	tl_block *next = (tl_block *)((uintptr_t)stored ^ page->key ^
				      (uintptr_t)at);
	if (tl_unlikely(next != NULL && !tl_block_in_page(page, next)))
		tl_secure_corrupt(at);
	return next;
#else
	(void)page;
	(void)at;
	return (tl_block *)stored;
#endif
}

/* A block leaves the free lists for malloc: counted, and its mark is
 * cleared (the secure build first checks that it is intact). */
static inline void tl_block_taken(tl_page *page, tl_block *block)
{
#if TL_COUNTS && defined(__SANITIZE_THREAD__)
	__atomic_store_n(&page->allocs,
			 __atomic_load_n(&page->allocs, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
#elif TL_COUNTS
	page->allocs++;	/* the owner's; read relaxed by the statistics */
#endif
#if TL_SECURE
	if (tl_unlikely(block->mark != tl_free_mark(page, block)))
		tl_secure_modified(block);
#else
	(void)page;
#endif
#if TL_CHECKS
	block->mark = 0;
#else
	(void)block;
#endif
}

/* ---- the fast paths ---- */

/*
 * The stores before it stay before the stores after it, as a forked child
 * sees them, so an update cut by a fork in another thread leaves no block
 * on two lists (page.c explains; the child counts such pages, pool.c
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

/*
 * owner is written by other threads (atomically) only to values that are
 * never the reader's heap, so the fast path may read it plainly and compare
 * in one instruction; ThreadSanitizer builds read it atomically.
 */
static inline uintptr_t tl_page_owner_fast(const tl_page *page)
{
#if defined(__SANITIZE_THREAD__)
	return tl_uptr_load_relaxed(&page->owner);
#else
	return *(const uintptr_t *)&page->owner;
#endif
}

/*
 * Free's first read at a pointer's would-be descriptor, the owner word, is
 * a probe: the instruction's address goes into the section tl_free_probes
 * (as an offset from the entry, so the section needs no relocation) and
 * the pointer is in a fixed register while it runs (TL_FREE_PROBE_REG: rdi
 * on x86-64, x0 on arm64).  A fault there is a free of a pointer whose
 * 4 MiB-aligned base is unmapped, which fault.c reports.  On other
 * machines, and under ThreadSanitizer, the read is plain and such a free
 * is a SIGSEGV.
 */
#if (defined(__x86_64__) || defined(__aarch64__)) && defined(__GNUC__) && \
	!defined(__SANITIZE_THREAD__)
#define TL_FREE_PROBES 1
#define TL_FREE_PROBE_RECORD \
		".pushsection tl_free_probes,\"a\"\n\t" \
		".balign 4\n\t" \
		".long 1b - .\n\t" \
		".popsection\n\t"
#else
#define TL_FREE_PROBES 0
#endif

/* page's owner word, read as free's probe of p (see above). */
static inline uintptr_t tl_page_owner_probe(const tl_page *page, const void *p)
{
#if TL_FREE_PROBES && defined(__x86_64__)
	uintptr_t owner;
	__asm__("1:\n\t"
		"mov %1, %0\n\t"
		TL_FREE_PROBE_RECORD
		: "=r"(owner)
		: "m"(*(const uintptr_t *)&page->owner), "D"(p));
	return owner;
#elif TL_FREE_PROBES
	/* arm64: the same load, with p held in x0. */
	uintptr_t owner;
	register const void *x0 __asm__("x0") = p;
	__asm__("1:\n\t"
		"ldr %0, %1\n\t"
		TL_FREE_PROBE_RECORD
		: "=r"(owner)
		: "m"(*(const uintptr_t *)&page->owner), "r"(x0));
	return owner;
#else
	(void)p;
	return tl_page_owner_fast(page);
#endif
}

static inline tl_block *tl_page_pop(tl_page *page)
{
	tl_block *block = page->free;
	if (tl_likely(block != NULL)) {
		page->free = tl_link_decode(page, block, block->next);
		tl_block_taken(page, block);
	}
	return block;
}

static inline void *tl_heap_malloc(tl_heap *heap, size_t size)
{
	if (tl_likely(size <= TL_DIRECT_MAX)) {
		tl_block *block = tl_page_pop(heap->direct[(size + 15) >> 4]);
		if (tl_likely(block != NULL))
			return block;
	}
	return tl_malloc_generic(heap, size);
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

/*
 * Pop a block of a heap's current page for its size: from free, or when
 * free ran dry, from the owner's frees swapped in; NULL when both are empty
 * (tl_malloc_local below does the same for the direct table's sizes).
 */
static inline tl_block *tl_page_pop_or_swap(tl_page *page)
{
	tl_block *block = page->free;
	if (tl_unlikely(block == NULL)) {
		block = page->local_free;
		if (tl_unlikely(block == NULL))
			return NULL;
		page->local_free = NULL;
		tl_fork_order();
	}
	page->free = tl_link_decode(page, block, block->next);
	tl_block_taken(page, block);
	return block;
}

/*
 * The calling thread's malloc: its direct table sits in TLS.  When the
 * page's free list is dry, its own frees usually wait in local_free: take
 * them here, so a hot page cycles without leaving the inline path.
 */
static inline void *tl_malloc_local(size_t size)
{
	/* tl_page_pop_or_swap's steps, written out: through it, compilers
	 * spend a register move more on this path. */
	if (tl_likely(size <= TL_DIRECT_MAX)) {
		tl_page *page = tl_direct_local[(size + 15) >> 4];
		tl_block *block = page->free;
		if (tl_likely(block != NULL)) {
			page->free = tl_link_decode(page, block, block->next);
			tl_block_taken(page, block);
			return block;
		}
		block = page->local_free;
		if (tl_likely(block != NULL)) {
			page->local_free = NULL;
			tl_fork_order();
			page->free = tl_link_decode(page, block, block->next);
			tl_block_taken(page, block);
			return block;
		}
	}
	return tl_malloc_slow(size);
}

/*
 * Whether a block freed into a page its caller owns passes the fast path's
 * checks: it starts a block (its offset in its slice, which is the page's
 * first for every page the fast path reaches, is a multiple of the block
 * size: tl_page.slice_magic) and does not carry the free mark.  The secure
 * build checks every free in full (free.c), the fast variant none.
 */
static inline bool tl_free_fast_ok(const tl_page *page, const tl_block *block,
				   uintptr_t mark)
{
#if TL_SECURE
	(void)page;
	(void)block;
	(void)mark;
	return false;
#elif !TL_CHECKS
	(void)page;
	(void)block;
	(void)mark;
	return true;
#else
	uint32_t off = (uint32_t)(uintptr_t)block & (uint32_t)(TL_SLICE_SIZE - 1);
	return tl_slice_offset_starts(off, page->slice_magic) &&
	       block->mark != mark;
#endif
}

/* Push a checked block on the local_free of a page the caller owns. */
static inline void tl_page_push_local(tl_page *page, tl_block *block,
				      uintptr_t mark)
{
	block->next = tl_link_encode(page, block, page->local_free);
#if TL_CHECKS
	block->mark = mark;
#else
	(void)mark;
#endif
	tl_fork_order();
	page->local_free = block;
}

static inline void tl_heap_free(tl_heap *heap, void *p)
{
	if (tl_unlikely(p == NULL))
		return;
	tl_page *page = tl_slice_of(tl_segment_of(p), p);
	if (tl_likely(tl_page_owner_probe(page, p) == heap->id)) {
		uintptr_t mark = tl_free_mark(page, p);
		if (tl_likely(tl_free_fast_ok(page, p, mark))) {
			tl_page_push_local(page, p, mark);
			return;
		}
	}
	tl_free_generic(heap, page, p);
}

/*
 * The calling thread's free: compares with the thread pointer.  NULL needs
 * no test of its own: (NULL - 1) rounded down to a segment is negative, as
 * is every address outside user space, and the sign falls out of the mask.
 * Then the two checks of tl_free_fast_ok; anything else (another owner, a
 * flag, a failed check) goes to the generic path, which decides.
 *
 * On x86-64 the same steps are written out, because compilers put the
 * slice's address in a register of its own, one instruction more than
 * addressing segment + index each time: 20 instructions in all (13 in the
 * fast variant, TL_CHECKS=0).  The C version below is the definition; the
 * ThreadSanitizer build, the secure build and other machines use it, and
 * the test suite runs both.
 */
#if defined(__x86_64__) && defined(__GNUC__) && \
	!defined(__SANITIZE_THREAD__) && !TL_SECURE
#if TL_CHECKS
#define TL_FREE_CHECKS_X86 \
		"movzwl %w0, %%ecx\n\t"		/* offset in the slice */ \
		"imul %c[magic](%%rax,%%rdx), %%ecx\n\t" \
		"cmp %c[magic](%%rax,%%rdx), %%ecx\n\t" \
		"jae %l[slow]\n\t"			/* not a block's start */ \
		"cmp %%rax, 8(%0)\n\t" \
		"je %l[slow]\n\t"			/* marked free already */
#define TL_FREE_MARK_X86 \
		"mov %%rax, 8(%0)\n\t"		/* block->mark = segment */
#else
#define TL_FREE_CHECKS_X86
#define TL_FREE_MARK_X86
#endif
static inline void tl_free_local(void *p)
{
	__asm__ goto(
		"lea -1(%0), %%rax\n\t"
		"and %[segmask], %%rax\n\t"		/* segment, sign: NULL */
		"js %l[slow]\n\t"
		"mov %0, %%rdx\n\t"
		"shr %[shift], %%rdx\n\t"
		"and %[index], %%edx\n\t"		/* slice * 128 */
		"1:\n\t"
		"mov %c[owner](%%rax,%%rdx), %%rcx\n\t"	/* the probe */
		TL_FREE_PROBE_RECORD
		"cmp %%rcx, %%fs:0\n\t"		/* the thread pointer */
		"jne %l[slow]\n\t"
		TL_FREE_CHECKS_X86
		"mov %c[local](%%rax,%%rdx), %%rcx\n\t"
		"mov %%rcx, (%0)\n\t"		/* block->next = local_free */
		TL_FREE_MARK_X86
		"mov %0, %c[local](%%rax,%%rdx)"	/* local_free = block */
		:
		: "D"(p),
		  [segmask] "i"(~(intptr_t)TL_SEGMENT_MASK),
		  [shift] "i"(TL_SLICE_SHIFT - TL_PAGE_DESC_SHIFT),
		  [index] "i"((TL_SLICES - 1) << TL_PAGE_DESC_SHIFT),
		  [owner] "i"(offsetof(tl_segment, slices) +
			      offsetof(tl_page, owner)),
		  [magic] "i"(offsetof(tl_segment, slices) +
			      offsetof(tl_page, slice_magic)),
		  [local] "i"(offsetof(tl_segment, slices) +
			      offsetof(tl_page, local_free))
		: "rax", "rcx", "rdx", "memory", "cc"
		: slow);
	return;
slow:
	tl_free_slow(p);
}
#else
static inline void tl_free_local(void *p)
{
	tl_segment *seg = tl_segment_of(p);
	if (tl_unlikely((intptr_t)seg < 0)) {
		tl_free_slow(p);
		return;
	}
	tl_page *page = tl_slice_of(seg, p);
	if (tl_likely(tl_page_owner_probe(page, p) == tl_thread_id())) {
		uintptr_t mark = tl_free_mark(page, p);
		if (tl_likely(tl_free_fast_ok(page, p, mark)))
			tl_page_push_local(page, p, mark);
		else
			tl_free_owned(page, p);
		return;
	}
	tl_free_slow(p);
}
#endif

#endif /* TLMALLOC_INTERNAL_H */
