/*
 * profile_stack.c - the stack of a sampled allocation (profile.c) or a
 * guarded sample (guarded.c): its return addresses, innermost first, from
 * the first frame that is not tlmalloc's.
 *
 * libgcc's unwinder (_Unwind_Backtrace) reads the .eh_frame tables that
 * x86-64 code carries whether or not it keeps frame pointers (Debian's
 * libraries do not), does not allocate, and takes no lock but the dynamic
 * loader's, which is recursive.  It is also most of a sample's cost: about
 * 1,800 instructions a frame (finding the function's table, running its
 * call-frame program), with cold data and indirect branches.
 *
 * On x86-64 the frames it has walked are remembered, so that the next walk
 * through the same call sites is a load a frame: at a return address ip,
 * a function's canonical frame address (CFA: the stack pointer before the
 * call that entered it) is the stack pointer plus a constant, k(ip),
 * wherever the function keeps no frame of a size decided at run time; the
 * return address into its caller is the word at CFA - 8, and the caller's
 * stack pointer is the CFA.  A walk with libgcc learns k for each return
 * address it passes (the difference of two frames' CFAs) and stores it in
 * a table shared by the threads; the next walks read the table, frame by
 * frame, and fall back to libgcc at the first return address it does not
 * hold (which libgcc then learns).
 *
 * What keeps a remembered walk right, or stops it:
 *   - a frame whose CFA is its frame pointer's (rbp + 16) is marked
 *     variable and always walked by libgcc: compilers keep a frame
 *     pointer in every function whose frame's size is decided at run time
 *     (alloca, a variable-length array), and in every function of a
 *     program built with frame pointers, whose walks stay libgcc's;
 *   - so is a return address whose frames disagree (two different k) or
 *     whose caller's address is not at CFA - 8 (a signal frame: libgcc
 *     takes the caller from the signal context);
 *   - one sample in WALK_RELEARN per thread is walked by libgcc anyway,
 *     which finds a variable frame seen with one k so far;
 *   - every word read lies between the walk's stack pointer and the
 *     highest CFA libgcc reached on this thread (the outermost frame's,
 *     which sits under the stack's top), so a wrong k reads the thread's
 *     stack: the worst a frame not yet known as variable can do is give
 *     its sample a wrong stack (a program running on stacks of its own
 *     below the thread's is the exception: docs/profiling.md);
 *   - a return address must be in the table to be followed.
 * The table: WALK_SLOTS words (32 KiB, static), each a return address with
 * its k and two flags, written with one atomic store, read with relaxed
 * loads.  A full neighbourhood (8 probes) leaves an address out: its walks
 * stay libgcc's.  Elsewhere (arm64, the sanitizer builds), every walk is
 * libgcc's.
 */
#include <stdint.h>

#include "tlmalloc.h"
#include "tlmalloc/guarded.h"
#include "tlmalloc/profiler.h"
#if TL_HAVE_UNWIND
#include <unwind.h>
#endif

#if TL_HAVE_UNWIND
#ifndef TL_NO_OVERRIDE
/* Weak: from the static archive, a C program links no operator new (its
 * object needs the C++ runtime, new_delete.c), and these are NULL there. */
void *_Znwm(size_t n) __attribute__((weak));
void *_Znam(size_t n) __attribute__((weak));
void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag) __attribute__((weak));
void *_ZnamRKSt9nothrow_t(size_t n, const void *tag) __attribute__((weak));
#endif

/* Whether a frame's function is tlmalloc's, on the way from the caller's
 * allocation to here: those frames are left out of the stack. */
static bool frame_is_ours(uintptr_t fn)
{
	const uintptr_t ours[] = {
		(uintptr_t)tl_profile_sample_malloc, (uintptr_t)tl_profile_malloc,
		(uintptr_t)tl_malloc_generic,
		(uintptr_t)tl_malloc_slow, (uintptr_t)tl_heap_alloc,
		(uintptr_t)tl_malloc, (uintptr_t)tl_calloc,
		(uintptr_t)tl_realloc, (uintptr_t)tl_reallocarray,
		(uintptr_t)tl_aligned_alloc, (uintptr_t)tl_posix_memalign,
		(uintptr_t)tl_memalign, (uintptr_t)tl_valloc,
		(uintptr_t)tl_pvalloc, (uintptr_t)tl_alloc_aligned,
		(uintptr_t)tl_calloc_impl, (uintptr_t)tl_realloc_impl,
		(uintptr_t)tl_large_alloc, (uintptr_t)tl_guarded_malloc,
		(uintptr_t)tl_guarded_realloc, (uintptr_t)tl_profile_stack,
#ifndef TL_NO_OVERRIDE
		(uintptr_t)_Znwm, (uintptr_t)_Znam,
		(uintptr_t)_ZnwmRKSt9nothrow_t, (uintptr_t)_ZnamRKSt9nothrow_t,
#endif
	};
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (fn == ours[i])
			return true;
	return false;
}

#if defined(__x86_64__) && defined(__GNUC__) && \
	!defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define TL_WALK_TABLE 1
#else
#define TL_WALK_TABLE 0
#endif

#if TL_WALK_TABLE
#define WALK_SLOTS 4096			/* a power of two */
#define WALK_PROBES 8
#define WALK_RELEARN 16			/* a power of two */
#define WALK_LEARN_MAX 256		/* frames a learning walk follows */
#define WALK_IP_MASK (((uint64_t)1 << 47) - 1)	/* user-space addresses */
#define WALK_OURS ((uint64_t)1 << 47)
#define WALK_LAST ((uint64_t)1 << 48)	/* the outermost frame */
#define WALK_K_SHIFT 49			/* k / 8 in the top 15 bits */
#define WALK_K_MAX (((uint64_t)1 << 15) - 2)	/* frames below 256 KiB */
#define WALK_VARIABLE (((uint64_t)1 << 15) - 1)	/* k / 8: walk by libgcc */

static tl_atomic_u64 walk_table[WALK_SLOTS];
static tl_atomic_u32 walk_used;		/* a walk has learned a frame */
/* The highest CFA libgcc reached on this thread (0: none yet), and its
 * samples, for the WALK_RELEARN. */
static __thread uintptr_t walk_hi TL_TLS;
static __thread uint32_t walk_count TL_TLS;

static uint64_t walk_k8(uint64_t e)
{
	return e >> WALK_K_SHIFT;
}

static tl_atomic_u64 *walk_slot(uintptr_t ip, unsigned probe)
{
	uint64_t h = (uint64_t)ip * 0x9e3779b97f4a7c15ull;
	return &walk_table[((h >> 40) + probe) & (WALK_SLOTS - 1)];
}

/* ip's entry, or 0. */
static uint64_t walk_find(uintptr_t ip)
{
	for (unsigned i = 0; i < WALK_PROBES; i++) {
		uint64_t e = tl_u64_load_relaxed(walk_slot(ip, i));
		if (e == 0 || (e & WALK_IP_MASK) == ip)
			return e;
	}
	return 0;
}

/* Remember ip's k and flags; a second, different one makes ip variable. */
static void walk_learn(uintptr_t ip, uint64_t k, uint64_t flags)
{
	if ((ip & ~WALK_IP_MASK) != 0 || ip == 0)
		return;
	uint64_t k8 = k % 8 == 0 && k / 8 <= WALK_K_MAX && k != 0
			      ? k / 8 : WALK_VARIABLE;
	uint64_t want = ip | flags | k8 << WALK_K_SHIFT;
	if (tl_u32_load_relaxed(&walk_used) == 0)
		tl_u32_store_relaxed(&walk_used, 1);
	for (unsigned i = 0; i < WALK_PROBES; i++) {
		tl_atomic_u64 *slot = walk_slot(ip, i);
		uint64_t e = tl_u64_load_relaxed(slot);
		if (e == 0) {
			if (tl_u64_cas_weak_relaxed(slot, &e, want))
				return;
			if (e == 0)
				return;		/* spurious: learnt next time */
		}
		if ((e & WALK_IP_MASK) != ip)
			continue;
		if (e != want && walk_k8(e) != WALK_VARIABLE)
			tl_u64_store_relaxed(slot, ip | (e & (WALK_OURS | WALK_LAST)) |
						   WALK_VARIABLE << WALK_K_SHIFT);
		return;
	}
}

/*
 * A remembered walk from the frame whose return address is ip and whose
 * stack pointer is sp; false where it cannot go on (an address not in the
 * table, a variable frame, a CFA out of the thread's known stack).
 */
static bool walk_remembered(uintptr_t *pc, uintptr_t sp, uintptr_t ip,
			    unsigned *out)
{
	uintptr_t hi = walk_hi;
	unsigned depth = 0;
	bool in_caller = false;
	for (unsigned n = 0; n < WALK_LEARN_MAX; n++) {
		uint64_t e = walk_find(ip);
		if (e == 0 || walk_k8(e) == WALK_VARIABLE)
			return false;
		uintptr_t cfa = sp + walk_k8(e) * 8;
		if (cfa > hi)
			return false;
		if (in_caller || !(e & WALK_OURS)) {
			in_caller = true;
			pc[depth++] = ip;
		}
		if (depth == PROF_DEPTH || (e & WALK_LAST)) {
			*out = depth;
			return true;
		}
		ip = *(const uintptr_t *)(cfa - 8);
		sp = cfa;
	}
	return false;
}
#endif

struct unwind_state {
	uintptr_t *pc;
	unsigned depth;
	bool in_caller;
#if TL_WALK_TABLE
	/* learning: the walk's stack pointer at its start, the frame before
	 * (its return address, stack pointer, flags), the highest stack
	 * pointer reached, and whether the stack ended */
	uintptr_t start, ip, sp, rbp, hi;
	uint64_t flags;
	unsigned frames;
	bool ended;
#endif
};

static _Unwind_Reason_Code unwind_one(struct _Unwind_Context *ctx, void *arg)
{
	struct unwind_state *st = arg;
	uintptr_t ip = _Unwind_GetIP(ctx);
#if TL_WALK_TABLE
	/* libgcc's "CFA" of a frame in this callback is its stack pointer
	 * (the CFA of the frame it called) */
	uintptr_t sp = _Unwind_GetCFA(ctx);
	if (st->start != 0) {
		if (st->ip == 0 && sp < st->start)
			return _URC_NO_REASON;	/* this file's own frames */
		if (st->ip != 0) {
			/* the frame before: its k is this stack pointer less
			 * its own (a k out of range marks it variable), and a
			 * walk may follow it only if ip sits just under */
			bool plain = ip == 0 ||
				     (sp > st->sp && sp != st->rbp + 16 &&
				      ip == *(const uintptr_t *)(sp - 8));
			walk_learn(st->ip, plain ? sp - st->sp : 1,
				   st->flags | (ip == 0 ? WALK_LAST : 0));
			st->hi = sp;
		}
		if (ip == 0) {
			st->ended = true;
			return _URC_END_OF_STACK;
		}
		st->ip = ip;
		st->sp = sp;
		st->rbp = _Unwind_GetGR(ctx, 6);	/* DWARF's rbp */
		st->flags = frame_is_ours(_Unwind_GetRegionStart(ctx))
				    ? WALK_OURS : 0;
		if (++st->frames > WALK_LEARN_MAX)
			return _URC_END_OF_STACK;
		if (!st->in_caller && st->flags)
			return _URC_NO_REASON;
		st->in_caller = true;
		if (st->depth < PROF_DEPTH)
			st->pc[st->depth++] = ip;
		return _URC_NO_REASON;	/* on to the end, to learn it */
	}
#endif
	if (ip == 0)
		return _URC_END_OF_STACK;
	if (!st->in_caller) {
		if (frame_is_ours(_Unwind_GetRegionStart(ctx)))
			return _URC_NO_REASON;
		st->in_caller = true;
	}
	st->pc[st->depth++] = ip;
	return st->depth < PROF_DEPTH ? _URC_NO_REASON : _URC_END_OF_STACK;
}

#if TL_WALK_TABLE
/*
 * The walk, from its entry below: sp and ip are the caller's stack pointer
 * and return address, as the entry found them.  A learning walk goes on
 * to the end of the stack (at most WALK_LEARN_MAX frames), so it learns
 * every frame and the thread's highest CFA.
 */
unsigned tl_profile_walk_from(uintptr_t *pc, uintptr_t sp, uintptr_t ip)
	TL_NOINLINE __attribute__((used));
unsigned tl_profile_walk_from(uintptr_t *pc, uintptr_t sp, uintptr_t ip)
{
	unsigned depth;
	if (walk_hi != 0 && (++walk_count & (WALK_RELEARN - 1)) != 0 &&
	    walk_remembered(pc, sp, ip, &depth))
		return depth;
	struct unwind_state st = { .pc = pc, .start = sp };
	_Unwind_Backtrace(unwind_one, &st);
	if (st.ip != 0 && st.frames <= WALK_LEARN_MAX) {
		/* the outermost frame, where libgcc found no caller: a walk
		 * stops there (its k only has to keep it under the top) */
		if (!st.ended) {
			walk_learn(st.ip, 8, st.flags | WALK_LAST);
			st.hi = st.sp + 8;
		}
		if (st.hi > walk_hi)
			walk_hi = st.hi;
	}
	return st.depth;
}

/* The entry: the stack pointer and return address of its caller, then
 * tl_profile_walk_from (a jump: no frame of its own). */
unsigned tl_profile_walk(uintptr_t *pc);
__asm__(".text\n"
	".p2align 4\n"
	".globl tl_profile_walk\n"
	".hidden tl_profile_walk\n"
	".type tl_profile_walk, @function\n"
	"tl_profile_walk:\n\t"
	"lea 8(%rsp), %rsi\n\t"
	"mov (%rsp), %rdx\n\t"
	"jmp tl_profile_walk_from\n"
	".size tl_profile_walk, .-tl_profile_walk\n");

unsigned tl_profile_stack(uintptr_t *pc)
{
	return tl_profile_walk(pc);
}

size_t tl_profile_stack_held(void)
{
	return tl_u32_load_relaxed(&walk_used) != 0 ? sizeof(walk_table) : 0;
}
#else
size_t tl_profile_stack_held(void)
{
	return 0;
}

unsigned tl_profile_stack(uintptr_t *pc)
{
	struct unwind_state st = { .pc = pc };
	_Unwind_Backtrace(unwind_one, &st);
	return st.depth;
}
#endif
#else
/* No unwinder in this build: setup_locked keeps profiling off. */
unsigned tl_profile_stack(uintptr_t *pc)
{
	pc[0] = 0;
	return 0;
}

size_t tl_profile_stack_held(void)
{
	return 0;
}
#endif
