/*
 * tlmalloc.h - the public API of tlmalloc, a thread-caching malloc for Linux.
 *
 * The library also exports the standard names (malloc, free, operator new,
 * ...), so linking with -ltlmalloc or preloading libtlmalloc.so replaces the
 * system allocator.  The tl_ names below are the same allocator under names
 * of its own: they work whether or not the standard names are overridden
 * (for example in a ThreadSanitizer build, which keeps its own malloc).
 *
 * Every function here is thread-safe.  Semantics follow glibc: NULL and
 * errno == ENOMEM on failure, EINVAL for a bad alignment, tl_free(NULL) is a
 * no-op and tl_free preserves errno.
 */
#ifndef TLMALLOC_H
#define TLMALLOC_H

#include <stddef.h>
#include <stdint.h>

#define TLMALLOC_VERSION_MAJOR 0
#define TLMALLOC_VERSION_MINOR 1
#define TLMALLOC_VERSION_PATCH 0
/* One number, comparable: major * 10000 + minor * 100 + patch. */
#define TLMALLOC_VERSION \
	(TLMALLOC_VERSION_MAJOR * 10000 + TLMALLOC_VERSION_MINOR * 100 + \
	 TLMALLOC_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TL_API __attribute__((visibility("default")))
#define TL_MALLOC_ATTR __attribute__((malloc, warn_unused_result))
#else
#define TL_API
#define TL_MALLOC_ATTR
#endif

/* The library's version as "major.minor.patch" (a static string). */
TL_API const char *tl_version(void);

TL_API TL_MALLOC_ATTR void *tl_malloc(size_t size);
TL_API TL_MALLOC_ATTR void *tl_calloc(size_t count, size_t size);
TL_API void *tl_realloc(void *ptr, size_t size);
TL_API void *tl_reallocarray(void *ptr, size_t count, size_t size);
TL_API void tl_free(void *ptr);
/* free with the size (and alignment) the block was asked for: a hint. */
TL_API void tl_free_sized(void *ptr, size_t size);
TL_API void tl_free_aligned_sized(void *ptr, size_t alignment, size_t size);

TL_API TL_MALLOC_ATTR void *tl_aligned_alloc(size_t alignment, size_t size);
TL_API int tl_posix_memalign(void **out, size_t alignment, size_t size);
TL_API TL_MALLOC_ATTR void *tl_memalign(size_t alignment, size_t size);
TL_API TL_MALLOC_ATTR void *tl_valloc(size_t size);
TL_API TL_MALLOC_ATTR void *tl_pvalloc(size_t size);

/* Bytes usable at ptr (at least what was asked for); 0 for NULL. */
TL_API size_t tl_usable_size(const void *ptr);

/*
 * Bytes from ptr to the end of the block holding it, ptr anywhere inside
 * the block: what tl_usable_size says of the block, less ptr's offset in
 * it (0 from there on); 0 for NULL; SIZE_MAX for a pointer tlmalloc does
 * not manage (no bound known).  A pointer into tlmalloc's memory but not
 * inside a live block (freed, never handed out) is reported on stderr,
 * then abort, as free does.  hardened_malloc's malloc_object_size, also
 * exported under that name; a bound for checks like _FORTIFY_SOURCE's.
 */
TL_API size_t tl_object_size(const void *ptr);
/* The same without the checks and never aborting (0 where no block is):
 * an upper bound from the block's size; hardened_malloc's
 * malloc_object_size_fast, exported under that name too. */
TL_API size_t tl_object_size_fast(const void *ptr);

/*
 * Options (docs/options.md lists them; TLMALLOC_<NAME> in the environment
 * sets them at start-up): 0 on success, EINVAL for an unknown name, a value
 * out of range, or a NULL value pointer.
 */
TL_API int tl_option_get(const char *name, long *value);
TL_API int tl_option_set(const char *name, long value);

/*
 * Statistics (docs/stats.md): a snapshot of what tlmalloc holds, taken
 * under the pool lock from figures the allocator keeps anyway; the fast
 * paths count one thing for it, the blocks each page hands out (for
 * class_ops; not in libtlmalloc-fast).
 *
 * Live blocks are counted page by page as carved minus counted free.  The
 * calling thread's heap (and the lock baseline's shared heap) is counted
 * exactly first; for other threads' pages two things blur the figure: a
 * block they freed that its page has not collected yet counts as live
 * (live is an upper bound there), and blocks popped from a page at the head
 * of its class queue since it was last counted do not (a lower bound
 * there).  Both settle when the page is next counted (its heap's sweep,
 * tl_trim, thread exit).
 */
#define TL_STATS_VERSION 6
#define TL_STATS_CLASSES 48	/* size classes, smallest first */

struct tl_stats_class {
	uint64_t block_size;	/* bytes per block of the class */
	uint64_t pages;		/* pages of the class owned or abandoned */
	uint64_t blocks_carved;	/* blocks made in those pages so far */
	uint64_t blocks_live;	/* carved minus counted free */
};

/*
 * Blocks of a class handed out and freed since the start (a small request
 * served by a larger class's block, as a new thread's first ones are, counts
 * in that class).  frees is allocs - blocks_live: it blurs as blocks_live
 * does.
 */
struct tl_stats_class_ops {
	uint64_t allocs;
	uint64_t frees;
};

/*
 * Fields are only ever added at the end, and TL_STATS_VERSION grows when
 * they are.  A caller passes sizeof(struct tl_stats) as it was compiled:
 * the library fills what fits, so an older caller keeps working.
 */
struct tl_stats {
	uint32_t version;	/* TL_STATS_VERSION of the library */
	uint32_t class_count;	/* entries of classes[] (TL_STATS_CLASSES) */
	uint64_t mapped;	/* bytes of address space mapped */
	uint64_t held;		/* of those, touched and not given back */
	uint64_t live;		/* bytes in blocks handed out */
	uint64_t purged;	/* bytes given back with madvise, in all */
	uint64_t segments;	/* segments mapped now (huge blocks included) */
	uint64_t segments_unmapped;	/* segments unmapped by purges, in all */
	uint64_t threads_seen;	/* thread heaps made, in all */
	uint64_t threads_live;	/* thread heaps now */
	uint64_t lock_acquired;	/* pool lock: times taken */
	uint64_t lock_waited;	/* of those, how many had to wait */
	uint64_t pages_abandoned;	/* pages of exited threads, blocks live */
	uint64_t pages_free;	/* pages in the pool, free */
	uint64_t huge_blocks;	/* blocks above 128 KiB handed out */
	uint64_t huge_bytes;	/* their bytes (mapped, in live and held) */
	uint64_t huge_cached;	/* bytes of freed huge blocks kept for reuse */
	uint64_t mapped_peak;	/* most bytes mapped at once */
	uint64_t segments_peak;	/* most segments mapped at once */
	struct tl_stats_class classes[TL_STATS_CLASSES];
	/* Version 2. */
	uint64_t remote_frees;	/* blocks freed by a thread other than
				   their page's owner (huge blocks aside) */
	/* Version 3. */
	uint64_t class_ops_counted;	/* 1, or 0 in libtlmalloc-fast, which
					   does not count class_ops */
	struct tl_stats_class_ops class_ops[TL_STATS_CLASSES];
	/* Version 4: the heap profiler (docs/profiling.md). */
	uint64_t profile_samples;	/* sampled blocks live now */
	uint64_t profile_samples_total;	/* blocks sampled since the start */
	uint64_t profile_dropped;	/* samples its tables had no room for */
	uint64_t profile_held;		/* bytes it mapped: tables, states */
	/* Version 5: guarded sampling (docs/secure.md); not in the above. */
	uint64_t guarded_live;		/* guarded blocks live now */
	uint64_t guarded_total;		/* blocks guarded since the start */
	uint64_t guarded_missed;	/* samples with no slot ready */
	uint64_t guarded_mapped;	/* bytes its pool maps (4 MiB, or 0) */
	/* Version 6. */
	uint64_t pages_given_away;	/* full pages a waiting thread's heap
					   gave to the pool, in all */
};

/*
 * Fill the first size bytes of *out (at most sizeof(struct tl_stats)) with
 * a snapshot; returns how many bytes were filled, 0 if out is NULL or size
 * cannot hold the version.
 */
TL_API size_t tl_stats_get(struct tl_stats *out, size_t size);

/*
 * The same snapshot as one JSON object (docs/stats.md shows it), written to
 * buf without allocating.  As snprintf: returns the length the whole text
 * needs (without the NUL); when size is non-zero, writes at most size - 1
 * characters and a NUL.  buf may be NULL when size is 0.
 */
TL_API size_t tl_stats_json(char *buf, size_t size);

/* Print tlmalloc's statistics to stderr (also at exit with show_stats). */
TL_API void tl_stats_print(void);

/*
 * Heap profiling (docs/profiling.md): switched on by the option profile
 * (TLMALLOC_PROFILE=1, or tl_option_set("profile", 1) at run time).
 * Write the sampled profile now to path, in the heap-profile text that
 * pprof reads: the live heap and the allocations since the start, by call
 * stack, estimated from the samples.  Returns 0, or an errno value (the
 * file cannot be created or written; EINVAL for a NULL path).  With
 * nothing sampled yet, the profile is empty.
 */
TL_API int tl_profile_dump(const char *path);

/*
 * Give free memory back to the OS now instead of after the purge delay.
 * Returns 1 if memory was released, else 0 (malloc_trim's convention).
 */
TL_API int tl_trim(void);

#ifdef __cplusplus
}
#endif

#endif /* TLMALLOC_H */
