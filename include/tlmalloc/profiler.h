/*
 * profiler.h - the heap profiler's shared state, private to its files
 * (docs/profiling.md): profile.c (sampling: the proxies, the countdowns,
 * taking a sample's stack), profile_table.c (the tables of stacks and of
 * live samples), profile_dump.c (the profile pprof reads),
 * profile_leak.c (the leak report at exit) and profile_trigger.c (set-up,
 * and when a profile is written: at exit, on a signal, on the heap's
 * growth).  The rest of tlmalloc calls the tl_profile_ functions of
 * profile.h and never sees these.
 *
 * Locking: tl_prof.lock guards every field of tl_prof, the tables and
 * tl_profile_blocks; it is taken before the pool lock, never after it.
 * Functions ending in _locked expect the caller to hold it.  A heap's
 * sampling state (tl_heap.prof) is its thread's alone.
 */
#ifndef TLMALLOC_PROFILER_H
#define TLMALLOC_PROFILER_H

#include "tlmalloc/profile.h"

/* Whether libgcc's _Unwind_Backtrace links (cmake/platform.cmake). */
#ifndef TL_HAVE_UNWIND
#define TL_HAVE_UNWIND 1
#endif

#define PROF_DEPTH TL_PROFILE_STACK_MAX	/* frames kept per stack */

/* A malloc the profiler takes over (profile.c): it samples or counts down;
 * its frame is left out of a sample's stack (profile_stack.c). */
void *tl_profile_sample_malloc(tl_heap *heap, size_t size) TL_NOINLINE;
/* Bytes of the table of walked frames (profile_stack.c) once a walk has
 * used it, else 0: static, touched only by the profiler. */
size_t tl_profile_stack_held(void);
#define PROF_STACKS 4096		/* distinct stacks */
#define PROF_SAMPLES 65536		/* live samples */
#define PROF_PATH_MAX 4096

struct prof_stack {
	uint64_t hash;			/* 0: a free slot */
	uint32_t depth;
	double live_count, live_bytes, alloc_count, alloc_bytes;
	uintptr_t pc[PROF_DEPTH];
};

struct prof_sample {
	uintptr_t addr;			/* 0: a free slot */
	uint32_t stack;
	uint32_t huge;
	double count, bytes;		/* what it stands for */
};

struct tl_profile_heap;

struct tl_prof {
	tl_lock lock;
	bool setup;			/* tried; ready if tables */
	struct prof_stack *stacks;
	struct prof_sample *samples;
	uint32_t stack_count, sample_count;
	uint64_t samples_total, dropped, held;
	double live_bytes, growth_mark;
	uint32_t seq;			/* numbered dumps written */
	int pid;			/* the process that set up */
	struct tl_profile_heap *free_states;
	uint64_t seed_count;
	char path[PROF_PATH_MAX];	/* the exit dump's, %p unexpanded */
	tl_atomic_u32 dump_pending;	/* a signal asked for a dump (no lock) */
};
extern struct tl_prof tl_prof;

static inline uint64_t tl_prof_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint64_t tl_prof_rounded(double v)
{
	return v > 0 ? (uint64_t)(v + 0.5) : 0;
}

/* profile_table.c */
/* A sample of block p, s bytes asked for, standing for count such
 * allocations, at the stack pc[0..depth); may write a numbered dump
 * (the growth option). */
void tl_prof_record_locked(void *p, double s, double count,
			   const uintptr_t *pc, unsigned depth);
/* The sample at addr, if any, leaves the live set. */
void tl_prof_forget_locked(uintptr_t addr);
/* The sample at from, if any, is now at to (a huge block moved). */
void tl_prof_move_locked(uintptr_t from, uintptr_t to);

/* profile_dump.c: the profile to path; 0 or an errno value. */
int tl_prof_dump_to_locked(const char *path);

/* profile_leak.c: the leak report on stderr; path: the profile written,
 * or NULL. */
void tl_prof_leak_report_locked(const char *path);

/* profile_trigger.c */
/* Map the tables; false, with profiling off, if refused. */
bool tl_prof_setup_locked(void);
/* FILE.N, for a signal or the heap's growth. */
bool tl_prof_dump_numbered_locked(void);
/* The dump a signal asked for and could not write (the lock was held). */
void tl_prof_dump_pending(void);

#endif /* TLMALLOC_PROFILER_H */
