/*
 * types.h - tlmalloc's data structures and the invariants that bind them.
 *
 * Glossary
 *   block    what malloc returns.  Blocks of one page all have one size
 *            (the page's size class).  A free block's first word links it
 *            into one of the page's free lists.
 *   page     a run of memory inside a segment holding blocks of one size
 *            class, owned by at most one heap at a time.  Small pages are
 *            64 KiB, medium pages 1 MiB; a huge segment is a single page
 *            holding one large block.
 *   segment  a TL_SEGMENT_SIZE-aligned mapping from the OS.  Its first
 *            TL_SEGMENT_HEADER bytes hold the tl_segment header and a
 *            descriptor per 64 KiB slice, so the page of any block is found
 *            in O(1): segment = (p - 1) & ~(TL_SEGMENT_SIZE - 1) (no block
 *            starts at a segment's first byte), slice = (p >> 16) % 64.
 *   heap     the per-thread allocator state, reached through initial-exec
 *            TLS (tl_heap_local).  A thread that has not allocated yet sees
 *            tl_heap_empty, whose pages are all the empty page, so the fast
 *            path needs no "initialised?" test.
 *   pool     the global store of free pages, free segments, abandoned pages
 *            and heap structs; the only state behind a lock (tl_pool.lock).
 *
 * Locking rule: a page's owner-only fields are touched by the thread whose
 * heap owns the page (or, for the lock baseline's shared heap, by whoever
 * holds its lock); thread_free is pushed by any thread with one CAS; pages
 * that no heap owns (free or abandoned) are touched under the pool lock.
 */
#ifndef TLMALLOC_TYPES_H
#define TLMALLOC_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "tlmalloc/atomic.h"
#include "tlmalloc/lock.h"

/*
 * The secure variant (libtlmalloc-secure, docs/secure.md) is the same
 * sources compiled with TL_SECURE=1: encoded and checked free-list links,
 * double-free marks, filled free blocks, shuffled carving, guard pages.
 * Every line of it sits behind TL_SECURE (default 0): a plain
 * if (TL_SECURE) on the constant where the code compiles in every build
 * (internal.h's links and marks: the compiler drops the dead branch, and
 * every build type-checks it), #if where it needs what only the secure
 * build has (tl_page.key).
 */
#ifndef TL_SECURE
#define TL_SECURE 0
#endif

/*
 * Free's checks of the pointer (fastpath.h, tl_free_fast_ok; free.c): on
 * in the default and secure builds.  The fast variant (libtlmalloc-fast,
 * TL_CHECKS=0) has no free marks and tests a block's start only on the
 * generic path of its own pages (full ones, medium ones past their first
 * slice): fewer instructions a malloc/free pair (docs/measurements.md), and
 * a double or interior free corrupts the heap silently.
 */
#ifndef TL_CHECKS
#define TL_CHECKS 1
#endif
/*
 * Allocations counted per page (tl_page.allocs, one add on malloc's fast
 * path) for the statistics' allocations and frees per size class, and for
 * which page of a class serves next (heap.c, page_takes_head): on but in
 * the fast variant (TL_COUNTS=0).
 */
#ifndef TL_COUNTS
#define TL_COUNTS 1
#endif
#if TL_SECURE && !TL_CHECKS
#error "the secure build checks every free: TL_CHECKS=0 is not for it"
#endif
#if TL_SECURE
/* The most blocks a thread's quarantine holds (option secure_quarantine). */
#define TL_QUARANTINE_MAX 256
#endif

#define TL_SEGMENT_SHIFT 22
#define TL_SEGMENT_SIZE ((size_t)1 << TL_SEGMENT_SHIFT)	/* 4 MiB */
#define TL_SEGMENT_MASK (TL_SEGMENT_SIZE - 1)
#define TL_SLICE_SHIFT 16
#define TL_SLICE_SIZE ((size_t)1 << TL_SLICE_SHIFT)	/* 64 KiB */
#define TL_SLICES (TL_SEGMENT_SIZE / TL_SLICE_SIZE)	/* 64 */
#define TL_SEGMENT_HEADER TL_SLICE_SIZE	/* header + descriptors */

#define TL_SMALL_PAGE_SHIFT TL_SLICE_SHIFT	/* 64 KiB */
#define TL_MEDIUM_PAGE_SHIFT 20		/* 1 MiB */

#define TL_SMALL_MAX ((size_t)8 << 10)		/* <= 8 KiB: small pages */
#define TL_MEDIUM_MAX ((size_t)128 << 10)	/* <= 128 KiB: medium pages */
/* Sizes up to this take the inline fast path (direct page table). */
#define TL_DIRECT_MAX 1024
#define TL_DIRECT_SLOTS (TL_DIRECT_MAX / 16 + 1)

/* Size classes: 16..128 by 16, then 4 per doubling up to TL_MEDIUM_MAX. */
#define TL_CLASSES 49		/* class 0 is unused */

/* Minimum alignment of every block (glibc's guarantee on x86-64). */
#define TL_MIN_ALIGN 16

/*
 * A free block.  next is stored as is in the default build; the secure
 * build stores tl_link_encode(next).  Every build marks a free block in its
 * second word (blocks are at least 16 bytes), so a second free of it is
 * caught: tl_free_mark() while free, 0 once malloc hands it out.
 */
typedef struct tl_block {
	struct tl_block *next;
	uintptr_t mark;
} tl_block;

typedef struct tl_heap tl_heap;
typedef struct tl_segment tl_segment;

/*
 * Values of tl_page.owner: the owning heap's id (its thread's pointer, or
 * its own address; both 64-byte aligned), with TL_OWNER_FULL set while the
 * page sits in its heap's full list, or one of the small markers below.
 * The free fast path compares owner with the caller's thread pointer: any
 * flag or marker sends it to the generic path.  A thread pointer can be
 * reused by a later thread only after the exit of the first, which leaves
 * no page with its id (tl_heap_destroy), or in the child of a fork, whose
 * other threads' pages are orphaned first (tl_pool_fork_child).
 */
#define TL_OWNER_FREE 0u	/* in the pool, or never used */
#define TL_OWNER_ABANDONED 2u	/* its thread exited with live blocks */
#define TL_OWNER_HUGE 4u	/* a huge segment's single page */
#define TL_OWNER_FOLLOWER 6u	/* a slice inside a page: see slice_offset */
#define TL_OWNER_ORPHAN 8u	/* fork child: a page of a thread left behind */
#define TL_OWNER_PARKED 10u	/* its heap is parked (pool.c, "parked heaps") */
#define TL_OWNER_FULL 1u	/* flag on a heap pointer */
#define TL_OWNER_MARKERS 64u	/* owner words below this are no heap's */

enum tl_page_kind { TL_PAGE_SMALL, TL_PAGE_MEDIUM, TL_PAGE_HUGE };

/*
 * A page descriptor; the fields the fast paths touch come first.
 *
 * Counting: the fast paths do not count free blocks (malloc counts only
 * the blocks handed out, allocs, for the statistics).  avail is the
 * length of free as of the last count, exact for every page but the head
 * of its class queue, whose free list malloc pops without counting.  A
 * head stops being the head once free is empty, so avail is exact again
 * then, or is counted when a page takes its place (heap.c,
 * page_takes_head).  local_free and thread_free are counted when collected
 * (tl_page_collect), which walks them once: amortised O(1) a block.  So
 * for a page that is not a queue head, blocks in use = capacity - avail -
 * (uncollected frees), and after a collect, capacity == avail means the
 * page is empty.
 *
 * The page is in exactly one list: its class queue of the owner heap, the
 * owner's full list (owner has TL_OWNER_FULL; free and avail are empty),
 * the owner's empty cache, the pool's free list, or the pool's abandoned
 * list of its class.
 *
 * Every 64 KiB slice of a segment has a descriptor, so the free fast path
 * finds one by shifting and masking the pointer, with no table to load.  A
 * page of several slices (medium pages, huge blocks) is described by its
 * first slice, the leader; the others are followers (owner
 * TL_OWNER_FOLLOWER, slice_offset slices after their leader), which send
 * free to the generic path.  256 bytes, so the index scales by a shift.
 */
typedef struct tl_page {
	/* First cache line: the owner's. */
	tl_block *free;		/* owner: blocks to allocate from */
	tl_block *local_free;	/* owner: blocks the owner freed */
	/* owner: a stale count, the length of free when last counted (by
	 * tl_page_collect, tl_page_count_avail): exact unless the page is its
	 * class queue's head, whose pops since do not lower it; never counts
	 * local_free or thread_free.  So "empty" is avail == capacity right
	 * after a collect of a page that is no head (tl_page_is_empty). */
	uint32_t avail;
	uint32_t capacity;	/* owner: blocks carved so far */
	uint32_t reserved;	/* blocks that fit in the page */
	uint32_t block_size;	/* bytes per block; huge: 0 */
	uint8_t size_class;	/* 0 for a page without a class */
	uint8_t kind;		/* enum tl_page_kind */
	uint8_t dirty;		/* pool: holds data not yet purged */
	uint8_t in_pool;	/* pool: in the pool's free list */
#if TL_SECURE
	uint8_t slice_offset;	/* follower: see below */
#endif
	/* abandoned: left by its heap without a count (a small page of a
	 * queue): avail means nothing, local_free is not collected; the heap
	 * that adopts it makes it its queue's head, which needs no count, and
	 * a reclaim counts it first (abandoned.c) */
	uint8_t uncounted;
	struct tl_page *next;	/* links of whichever list holds the page */
	uint8_t *start;		/* first block */
	/* owner: blocks handed out since the page was formatted for its class
	 * (TL_COUNTS); the statistics read it (relaxed), tl_page_retire_counts
	 * adds it to its class's total when the page changes class or goes,
	 * and its heap reads it when the page is its class's head */
	uint64_t allocs;
	/*
	 * Second cache line: what every free reads, written only when the
	 * page changes hands or joins or leaves a full list.  A thread
	 * freeing into another's page reads owner here, and does not take
	 * the line the owner's malloc and free write.
	 */
	tl_atomic_uptr owner __attribute__((aligned(64)));
	/*
	 * Set by tl_page_format: 2^32 / block_size rounded up, so that for a
	 * slice offset off, off * slice_magic (mod 2^32) < slice_magic exactly
	 * when off is a multiple of block_size (tl_slice_offset_starts).  The
	 * free fast path's test of a block start, next to owner.
	 */
	uint32_t slice_magic;
	/*
	 * Owner: what off * slice_magic stays below for the blocks carved so
	 * far (tl_slice_limit, kept by tl_page_set_capacity), so the same test
	 * also rejects a block start past the carved part.
	 */
	uint32_t slice_limit;
	/* Abandoned: bytes inside its free blocks given back to the OS
	 * (tl_page_purge_free), which the statistics do not count as held;
	 * 0 once a heap adopts it (pool lock). */
	uint32_t purged;
	/*
	 * The least size a block of the page may have been asked for with
	 * (its class's, or its young group's, or less after an out-of-memory
	 * fallback: tl_page_allow_size); with block_size, what a sized free
	 * accepts and what realloc keeps in place.  Set by tl_page_format,
	 * only ever lowered by the owner until the next format (relaxed).
	 */
	uint32_t sized_min;
	/* Set by tl_page_format: UINT64_MAX / block_size + 1, the same test
	 * for any offset in the page (tl_block_in_page). */
	uint64_t div_magic;
	uint64_t purge_at_ms;	/* pool: when a dirty free page is purged */
	struct tl_page *prev;	/* the other link (next), rarely written */
#if !TL_SECURE
	/* Follower: slices after its leader.  In this line, with owner: a
	 * free past a medium page's first slice reads one line of the
	 * follower's descriptor, not two (the secure build's line has no
	 * room left, for its key). */
	uint8_t slice_offset;
	/* Set by tl_page_format: size_class again, in the line another
	 * thread's free reads, for it to keep the block (kept.h). */
	uint8_t kept_class;
	/* In a heap's full list: that heap's index (tl_heap.index), written
	 * with the owner word, under the heap's full_lock, and 0 otherwise;
	 * what a thread that frees into the page reads to give it away
	 * (heap.c, "Full pages given away"), with full_capacity (its
	 * capacity, or 0 above 65535 blocks: never given away) and
	 * full_since (when it joined the list, tl_os_coarse_ms / 4), all in
	 * this line, which other threads' frees read anyway.  The secure
	 * build has no room, and gives no full page away. */
	uint16_t full_heap;
	uint16_t full_capacity;
	uint16_t full_since;
#endif
#if TL_SECURE
	/* Set by tl_page_format, read-only while the page is owned. */
	uintptr_t key;		/* secret of the page's link encoding */
#endif
	/*
	 * Third cache line: what other threads write (and the owner's
	 * collect takes with an exchange).  Any thread: CAS push
	 * of a tl_block*, with the list's length in the top bits
	 * (tl_remote_list, tl_remote_count).  Alone in its line, so that
	 * other threads' frees do not take the line of the owner word, which
	 * the owner's every free reads (docs/measurements.md, "Where
	 * tcmalloc's lead on server comes from").
	 */
	tl_atomic_uptr thread_free __attribute__((aligned(64)));
} __attribute__((aligned(256))) tl_page;

#define TL_PAGE_DESC_SHIFT 8	/* log2(sizeof(tl_page)) */

/* The most mapping boundaries a huge segment may hold: at most
 * TL_HUGE_CUTS + 1 OS mappings a huge block. */
#define TL_HUGE_CUTS 63

/*
 * A segment header.  Written under the pool lock (used_pages, links) or at
 * creation (the rest, read-only afterwards).
 */
struct tl_segment {
	/* The descriptor of each 64 KiB slice (leaders and followers). */
	tl_page slices[TL_SLICES];
	size_t map_size;	/* bytes mapped, from the segment's start */
	uint32_t kind;		/* enum tl_page_kind */
	uint32_t page_count;
	uint32_t used_pages;	/* pool lock: pages not in the pool */
	uint32_t page_shift;
	struct tl_segment *next;	/* pool lock: list of all segments */
	struct tl_segment *prev;
	/* huge: offsets inside the mapping where one OS mapping may end and
	 * the next begin (pages moved in or out split them; segment.c) */
	uint32_t cut_count;
	size_t cuts[TL_HUGE_CUTS];
};

/* A list of pages (class queue, full list, pool lists). */
typedef struct tl_page_list {
	tl_page *first;
	tl_page *last;
} tl_page_list;

/*
 * A heap.  Only its thread touches it (the lock baseline's shared heap: only
 * under its lock), except the pool, which links dead heaps for reuse, and
 * a thread that takes a page of its full list away under full_lock (heap.c,
 * "Full pages given away": the full list, the owner words of its pages,
 * and donated).
 */
struct tl_heap {
	/*
	 * Page to allocate from for size (n + 15) / 16: a thread heap's table
	 * is its thread's TLS tl_direct_local, which the fast path reads
	 * without going through the heap.
	 */
	tl_page **direct;
	/* The owner word of its pages: the thread pointer of a thread heap
	 * (what the free fast path compares), the heap's address otherwise. */
	uintptr_t id;
	tl_page_list queue[TL_CLASSES];	/* pages with (maybe) free blocks */
	tl_page_list full;		/* pages found full, owner|FULL */
	tl_page_list empty;		/* cached empty pages, any class */
	uint32_t empty_count;
	uint32_t pages_owned;		/* pages in the queues and full list */
	uint32_t fresh_since_sweep;	/* pages taken since the last sweep */
	/* Bit c: queue c has held a page since the heap's init (a superset
	 * of the queues that hold one: what the sweep walks). */
	uint64_t classes;
	/* Bit g: class group g is young, its classes share the page of its
	 * largest class (heap.c, "young groups"). */
	uint32_t young;
	uint32_t pressure_seen;		/* tl_heap_pressure when last looked */
	/* Out of memory: calls that try larger classes first (heap.c) */
	uint32_t larger_first;
	struct tl_heap *next_free;	/* pool lock: dead or parked heaps */
	uint64_t parked_until_ms;	/* pool lock: parked until then */
	/* While the heap samples for the heap profiler, its state (profile.c:
	 * the direct table points at its proxies); NULL otherwise. */
	struct tl_profile_heap *prof;
	/* Pages of the full list given away since the owner last looked
	 * (pages_owned is the owner's to lower) */
	tl_atomic_u32 donated;
	/*
	 * Kept blocks (kept.h): blocks of other heaps' pages that this
	 * thread freed, kept for its own next mallocs of their class, a LIFO
	 * list per class (links encoded: tl_kept_link), at most kept_bytes
	 * of each class (the option, read by tl_heap_get_or_create; 0 for
	 * other heaps, and from its thread's exit on).  Owner only.
	 */
	tl_block *kept[TL_CLASSES];
	uint16_t kept_count[TL_CLASSES];
#if TL_COUNTS
	/* Blocks handed out of kept lists, not yet in tl_class_allocs */
	uint16_t kept_allocs[TL_CLASSES];
#endif
	uint32_t kept_bytes;
	/* When its latest page joined the full list (tl_os_coarse_ms / 4,
	 * as tl_page.full_since): written by the owner, read by a thread
	 * that empties one of its full pages (free.c, give_away_if_due) */
	uint16_t full_last;
#if TL_COUNTS
	/* Per class: its head's allocs when it became the head (heap.c,
	 * page_takes_head). */
	uint32_t head_allocs[TL_CLASSES];
#endif
#if TL_SECURE
	/* The quarantine's ring of freed blocks (quarantine.c). */
	struct tl_block *quarantine[TL_QUARANTINE_MAX];
	uint32_t quarantine_at;
	/* The block the thread freed last, in the ring, while its next
	 * malloc or free has not checked it again (option secure_recheck):
	 * NULL otherwise. */
	struct tl_block *quarantine_newest;
#endif
	/*
	 * Kept when the struct is reused for another thread (tl_heap_init
	 * clears what comes before): a thread giving a page away may hold
	 * full_lock of a heap struct whose thread has gone, and index (its
	 * place in tl_heap_table, 0 for none) never changes.
	 */
	tl_lock full_lock;	/* the full list, for the owner and givers */
	uint32_t index;
} __attribute__((aligned(64)));

#endif /* TLMALLOC_TYPES_H */
