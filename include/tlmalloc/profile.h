/*
 * profile.h - what the rest of tlmalloc calls of the heap profiler
 * (profile.c; docs/profiling.md).
 *
 * A thread heap that samples points its direct table at proxies (one page
 * descriptor per class of the table, holding blocks of the class's head
 * page up to the next sample) and its class-queue path at
 * tl_profile_no_queue, so the allocation to sample is the one that finds
 * its list empty and reaches the generic path, which calls
 * tl_profile_malloc.  A sampled block comes from the profiler's own heap
 * (id tl_profile_heap_id()), so its free never matches a thread on free's
 * fast path and reaches tl_profile_free; a sampled huge block is found by
 * its address when freed.  With profiling off nothing of this runs: the
 * fast paths are those of a build without it.
 */
#ifndef TLMALLOC_PROFILE_H
#define TLMALLOC_PROFILE_H

#include "tlmalloc/internal.h"
#include "tlmalloc/options.h"

/* Every class queue empty (tl_queue_local of a heap that samples). */
extern tl_page_list tl_profile_no_queue[TL_CLASSES];
/* The profiler's heap, whose pages hold the sampled blocks. */
extern tl_heap tl_profile_blocks;
/* Sampled huge blocks live now (their frees look themselves up). */
extern tl_atomic_u32 tl_profile_huge_live;

/* At start-up, after the options: the profile's file, signal, exit dump. */
void tl_profile_init(void);

static inline bool tl_profile_wanted(void)
{
	return tl_option(TL_OPT_profile) != 0;
}

static inline uintptr_t tl_profile_heap_id(void)
{
	return (uintptr_t)&tl_profile_blocks;
}

/* The generic path of a thread heap that samples, or must start or stop. */
void *tl_profile_malloc(tl_heap *heap, size_t size) TL_NOINLINE;
/* What the direct slots of class cls point at while heap samples. */
tl_page *tl_profile_proxy(tl_heap *heap, unsigned cls);
/* Give the blocks heap's proxies hold back to their pages (the heap's
 * counts are exact again); sampling goes on. */
void tl_profile_heap_settle(tl_heap *heap);
/* The heap stops sampling (its thread exits, or profiling is off). */
void tl_profile_heap_detach(tl_heap *heap);
/* Whether block, marked free, is held by one of heap's proxies (free's
 * double-free check). */
bool tl_profile_holds(const tl_heap *heap, const tl_block *block);

/* free of a block of a page of tl_profile_blocks (its leader). */
void tl_profile_free(tl_page *page, void *p) TL_NOINLINE;
void tl_profile_huge_forget(void *p) TL_NOINLINE;
void tl_profile_huge_moved_slow(void *from, void *to) TL_NOINLINE;

static inline void tl_profile_huge_freed(void *p)
{
	if (tl_unlikely(tl_u32_load_relaxed(&tl_profile_huge_live) != 0))
		tl_profile_huge_forget(p);
}

static inline void tl_profile_huge_moved(void *from, void *to)
{
	if (tl_unlikely(tl_u32_load_relaxed(&tl_profile_huge_live) != 0))
		tl_profile_huge_moved_slow(from, to);
}

/* Frames tl_profile_stack writes at most (profile_stack.c). */
#define TL_PROFILE_STACK_MAX 32
/* The calling allocation's stack, innermost first, tlmalloc's own frames
 * left out (return addresses; 0 frames where the build has no unwinder):
 * also for guarded sampling's reports. */
unsigned tl_profile_stack(uintptr_t *pc) TL_NOINLINE;
/* Append pc as "function+0xoff (object)" (dladdr), or its address, to
 * buf holding n of cap bytes; the new length. */
size_t tl_profile_append_frame(char *buf, size_t n, size_t cap, uintptr_t pc);

/* What the profiler holds, for the statistics (docs/stats.md). */
struct tl_profile_stats {
	uint64_t samples;	/* sampled blocks live */
	uint64_t samples_total;	/* blocks sampled since the start */
	uint64_t dropped;	/* samples not kept: a table was full */
	uint64_t held;		/* bytes mapped for its tables and states */
};
void tl_profile_stats_get(struct tl_profile_stats *out);

/* The exit dump and leak report (atexit, from init.c). */
void tl_profile_at_exit(void);

void tl_profile_fork_prepare(void);
void tl_profile_fork_parent(void);
void tl_profile_fork_child(void);

#endif /* TLMALLOC_PROFILE_H */
