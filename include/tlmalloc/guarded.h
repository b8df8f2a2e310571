/*
 * guarded.h - what the rest of tlmalloc calls of guarded sampling
 * (guarded.c; docs/secure.md, "Guarded sampling").
 *
 * With the option guarded_rate on, a pool of guarded slots is mapped once
 * at start-up, at a 4 MiB-aligned address whose first 64 KiB look like a
 * segment's header with every descriptor free (owner 0): free's fast path
 * reads the owner word there as for any pointer and goes to its slow path,
 * which asks tl_guarded_holds first.  The pool's bounds are written once,
 * at start-up; with the option off they stay 0 and every test below is
 * false, on slow paths only.
 */
#ifndef TLMALLOC_GUARDED_H
#define TLMALLOC_GUARDED_H

#include "tlmalloc/internal.h"

/* The pool: [tl_guarded_base, tl_guarded_base + tl_guarded_span); both 0
 * while guarded sampling is off.  Written by tl_guarded_init only, the
 * span last with release: a thread whose malloc runs while another
 * initialises (init.c lets it) and sees the span sees the pool's fields
 * too (the acquire loads below; ThreadSanitizer found the plain ones). */
extern uintptr_t tl_guarded_base;
extern tl_atomic_uptr tl_guarded_span;

static inline bool tl_guarded_on(void)
{
	return tl_uptr_load_acquire(&tl_guarded_span) != 0;
}

static inline bool tl_guarded_holds(const void *p)
{
	uintptr_t span = tl_uptr_load_acquire(&tl_guarded_span);
	return (uintptr_t)p - tl_guarded_base < span;
}

/* At start-up, after the options: map the pool if guarded_rate is on. */
void tl_guarded_init(void);
/* malloc's slow path: a guarded block for size bytes if this allocation
 * is a sample and a slot is free, else NULL (the caller goes on). */
void *tl_guarded_malloc(size_t size) TL_NOINLINE;
/* free, realloc and malloc_usable_size of a pointer into the pool; call
 * names it in a report (a freed block, a pointer not a block's start). */
void tl_guarded_free(const char *call, void *p) TL_NOINLINE;
void *tl_guarded_realloc(void *p, size_t size) TL_NOINLINE;
size_t tl_guarded_usable(const char *call, const void *p) TL_NOINLINE;
/* malloc_object_size of p, any pointer into the pool (api.c,
 * tl_object_size): the bytes from p to its live block's end; where no live
 * block holds p, a report naming call with check, else 0. */
size_t tl_guarded_object_size(const char *call, const void *p, bool check)
	TL_NOINLINE;
/* From the SIGSEGV handler: a fault at addr inside the pool is reported
 * (overflow, underflow, use after free) and aborts; otherwise returns. */
void tl_guarded_fault(const void *addr);

/* The pool, for the statistics (docs/stats.md). */
struct tl_guarded_stats {
	uint64_t live;		/* guarded blocks live now */
	uint64_t total;		/* blocks guarded since the start */
	uint64_t missed;	/* samples with no slot ready (all busy) */
	uint64_t mapped;	/* bytes the pool maps: 4 MiB when on */
};
void tl_guarded_stats_get(struct tl_guarded_stats *out);

#endif /* TLMALLOC_GUARDED_H */
