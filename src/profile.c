/*
 * profile.c - sampled heap profiling: which call stacks hold the heap, in a
 * profile that pprof reads, and a leak report at exit (docs/profiling.md).
 *
 * Sampling.  Bytes allocated by a thread are a line on which samples fall
 * as a Poisson process of mean spacing R (the profile_rate option): an
 * allocation of s bytes is sampled when a point falls inside it, which
 * happens with probability p(s) = 1 - exp(-s / R), independently of every
 * other allocation.  A sample then stands for 1 / p(s) allocations and
 * the bytes it asked for times that, so the sums over samples are
 * unbiased estimates of the true counts and bytes, per stack, live or
 * since the start (tcmalloc and jemalloc weight their samples the same
 * way).  The process is kept per
 * stream: one per class of the direct table (its countdown counts blocks,
 * all of one size) and one for every other size (its countdown counts
 * bytes); the union of independent Poisson processes of one rate is one
 * process of that rate, so every allocation still has probability p(s).
 *
 * Without touching the fast paths.  A heap that samples points its direct
 * table at its proxies: per class, a page descriptor holding a chain cut
 * from the class's head page, exactly as many blocks as come before the
 * class's next sample, and no local_free; the inline fast path pops those
 * and, when the chain is done, finds both lists empty and calls the
 * generic path, which lands here: that allocation is the sample, or the
 * chain ran short of the countdown (the head page had fewer blocks) and
 * is cut again.  Sizes above the direct table find every class queue empty
 * (tl_profile_no_queue) and come here each time.  With profiling off none
 * of this exists: the fast paths run the same instructions as before.
 *
 * A sampled block comes from the profiler's heap, tl_profile_blocks, under
 * its lock: its page's owner is no thread, so its free misses the fast path
 * and free.c hands it here, where the sample is dropped from the live set.
 * A sampled huge block is a huge segment like any other, found by address
 * when freed (tl_profile_huge_live counts them).
 *
 * Stacks are taken with libgcc's _Unwind_Backtrace, before any lock of
 * ours is held: it reads the .eh_frame tables that x86-64 code carries
 * whether or not it keeps frame pointers (Debian's libraries do not), does
 * not allocate, and takes no lock but the dynamic loader's, which is
 * recursive.  A thread inside the profiler does not sample (a re-entry from
 * the unwinder allocates plainly).
 *
 * Memory: two tables mapped once (stacks, live samples), fixed sizes, and
 * one state per sampling thread, reused; what does not fit is counted as
 * dropped.  All of it is in the statistics (profile_held).
 *
 * Locking: prof.lock guards the tables, tl_profile_blocks and the free
 * states; it is taken before the pool lock, never after it.  A heap's
 * state (tl_heap.prof) is its thread's alone.
 */
#define _GNU_SOURCE	/* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#ifndef TL_HAVE_UNWIND
#define TL_HAVE_UNWIND 1
#endif
#if TL_HAVE_UNWIND
#include <unwind.h>
#endif

#include "tlmalloc.h"
#include "tlmalloc/fastpath.h"
#include "tlmalloc/guarded.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"
#include "tlmalloc/profile.h"

#define PROF_DEPTH TL_PROFILE_STACK_MAX	/* frames kept per stack */
#define PROF_STACKS 4096		/* distinct stacks */
#define PROF_SAMPLES 65536		/* live samples */
#define PROF_PATH_MAX 4096
#define PROXIES 21			/* classes 1..20: sizes to TL_DIRECT_MAX */
/* A chain shorter than the countdown makes its page carve blocks up to
 * this many first (proxy_refill). */
#define PROF_CHAIN_MIN 32

tl_page_list tl_profile_no_queue[TL_CLASSES];
tl_heap tl_profile_blocks;
tl_atomic_u32 tl_profile_huge_live;
static tl_page *blocks_direct[TL_DIRECT_SLOTS];

struct tl_profile_heap {
	/* Proxy of class c: the direct slots of c point here. */
	tl_page proxy[PROXIES];
	tl_page *source[PROXIES];	/* the page the chain was cut from */
	uint64_t left[PROXIES];		/* allocations before the sample */
	uint32_t given[PROXIES];	/* blocks in the chain when cut */
	uint64_t bytes_left;		/* other sizes: bytes before it */
	uint64_t rng;
	double rate;
	struct tl_profile_heap *next_free;	/* prof.lock: unused states */
};

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

static struct {
	tl_lock lock;
	bool setup;			/* tried (prof.lock); ready if tables */
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
} prof = { .lock = TL_LOCK_INIT };

static tl_atomic_u32 dump_pending;	/* a signal asked for a dump */
static __thread bool in_profiler TL_TLS;

/* ---- numbers, without libm ---- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Uniform in (0, 1]. */
static double uniform(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return (double)((mix64(*state) >> 11) + 1) * 0x1.0p-53;
}

/* ln(x) for x in (0, 1]: x = m 2^e, ln m = 2 atanh((m - 1) / (m + 1)). */
static double ln(double x)
{
	int e = 0;
	while (x < 1.0) {
		x *= 2.0;
		e--;
	}
	double t = (x - 1.0) / (x + 1.0), t2 = t * t, sum = 0.0, term = t;
	for (int k = 1; k < 40; k += 2) {
		sum += term / k;
		term *= t2;
	}
	return 2.0 * sum + e * 0.69314718055994530942;
}

/* p(s) = 1 - exp(-x), x = s / R >= 0, without cancellation. */
static double sample_probability(double x)
{
	if (x > 40.0)
		return 1.0;
	if (x < 0.5) {	/* x - x^2/2 + x^3/6 - ... */
		double sum = 0.0, term = x;
		for (int k = 1; k < 20; k++) {
			sum += term;
			term *= -x / (k + 1);
		}
		return sum;
	}
	double e = 1.0, term = 1.0;	/* exp(-x) = 1 / exp(x) */
	for (int k = 1; k < 80; k++) {
		term *= x / k;
		e += term;
	}
	return 1.0 - 1.0 / e;
}

/* Bytes to the next point of the process: exponential of mean R. */
static double draw(struct tl_profile_heap *ph)
{
	double x = -ph->rate * ln(uniform(&ph->rng));
	return x < 0x1.0p52 ? x : 0x1.0p52;
}

/* ---- per heap: proxies ---- */

static unsigned slot_class(const tl_heap *heap, size_t size)
{
	return (unsigned)(heap->direct[(size + 15) >> 4] - heap->prof->proxy);
}

tl_page *tl_profile_proxy(tl_heap *heap, unsigned cls)
{
	tl_assert(cls < PROXIES);
	return &heap->prof->proxy[cls];
}

/*
 * The chain of class cls is done with: count what the fast path took from
 * it against the countdown (and in its page's statistics), and give back
 * what is left, onto its page's local_free, as the owner's frees go.
 */
static void proxy_settle(tl_heap *heap, struct tl_profile_heap *ph,
			 unsigned cls)
{
	tl_page *px = &ph->proxy[cls], *src = ph->source[cls];
	if (src == NULL)
		return;
	uint32_t rest = 0;
	tl_block *first = px->free;
	if (first != NULL) {
		tl_block *last = first, *next;
		rest = 1;
		while ((next = tl_link_decode(px, last, last->next)) != NULL) {
			last = next;
			rest++;
		}
		last->next = tl_link_encode(src, last, src->local_free);
		tl_fork_order();
		src->local_free = first;
		px->free = NULL;
		if (tl_uptr_load_relaxed(&src->owner) & TL_OWNER_FULL)
			tl_heap_page_unfull(heap, src);
	}
#if TL_COUNTS
	uint64_t served = px->allocs;
	src->allocs += served;
	px->allocs = 0;
#else
	uint64_t served = ph->given[cls] - rest;
#endif
	ph->left[cls] -= served < ph->left[cls] ? served : ph->left[cls];
	ph->source[cls] = NULL;
}

/*
 * Cut the chain of class cls from its head page: the blocks before its
 * next sample, or all the page's free list when that is shorter.  With
 * counts (TL_COUNTS) the proxy counts its pops, so a whole list is taken
 * without a walk; else the chain is walked to know its length.
 *
 * A page's free list can be short for good: on a malloc/free loop it
 * holds the few blocks carved so far, and the chain would run out every
 * few allocations.  So a page that has carved fewer than PROF_CHAIN_MIN
 * blocks (and the countdown is longer) carves more first, as far as its
 * room goes: one slow path per 32 allocations at most.  More blocks
 * cycle through the chain than the fast path would reuse, so the bound
 * trades slow paths against cache misses (measurements.md: 16, 32 and 64
 * measured).
 */
static void proxy_refill(tl_heap *heap, struct tl_profile_heap *ph,
			 unsigned cls)
{
	tl_page *px = &ph->proxy[cls], *src = heap->queue[cls].first;
	uint64_t n = ph->left[cls];
	if (src == NULL || n == 0 || px->free != NULL)
		return;
	while (src->capacity < PROF_CHAIN_MIN && src->capacity < n &&
	       tl_page_extend(src))
		;
	if (src->free == NULL)
		return;
	px->start = src->start;
	px->capacity = src->capacity;
	px->block_size = src->block_size;
	px->div_magic = src->div_magic;
#if TL_SECURE
	px->key = src->key;
#endif
	tl_block *first = src->free;
	uint32_t k = 0;
	if (!TL_COUNTS || n < src->capacity) {
		tl_block *last = first, *next;
		k = 1;
		while (k < n &&
		       (next = tl_link_decode(src, last, last->next)) != NULL) {
			last = next;
			k++;
		}
		src->free = tl_link_decode(src, last, last->next);
		last->next = tl_link_encode(src, last, NULL);
	} else {
		src->free = NULL;
	}
	px->free = first;
	ph->given[cls] = k;
	ph->source[cls] = src;
}

/*
 * The usual end of a chain, in fewer steps than settle, pop and refill: the
 * chain was used up, the class's head page is still the one it was cut
 * from, has carved PROF_CHAIN_MIN blocks or more, and holds nothing but
 * its owner's frees (local_free), and the countdown goes on past all the
 * page can hold.  The first of those frees is this allocation and the rest
 * are the next chain, the swap the fast path does itself with profiling
 * off.  Every allocation is still counted against the countdown, so the
 * sampling is the same (the allocation that ends the countdown always
 * takes malloc_direct).  Only with counts (TL_COUNTS): the proxy counted
 * what it served, so no list is walked; NULL when the case is another.
 */
static inline void *proxy_rechain(tl_heap *heap, struct tl_profile_heap *ph,
				  unsigned cls)
{
#if TL_COUNTS
	tl_page *px = &ph->proxy[cls], *src = ph->source[cls];
	if (src == NULL || px->free != NULL || src != heap->queue[cls].first ||
	    src->free != NULL || src->capacity < PROF_CHAIN_MIN)
		return NULL;
	tl_block *first = src->local_free;
	uint64_t served = px->allocs;
	if (first == NULL || ph->left[cls] <= served + src->capacity)
		return NULL;
	ph->left[cls] -= served + 1;
	src->allocs += served;
	px->allocs = 0;
	src->local_free = NULL;
	tl_fork_order();
	px->free = tl_link_decode(src, first, first->next);
	px->capacity = src->capacity;
	tl_block_taken(src, first);
	return first;
#else
	(void)heap, (void)ph, (void)cls;
	return NULL;
#endif
}

void tl_profile_heap_settle(tl_heap *heap)
{
	for (unsigned cls = 1; cls < PROXIES; cls++)
		proxy_settle(heap, heap->prof, cls);
}

bool tl_profile_holds(const tl_heap *heap, const tl_block *block)
{
	const struct tl_profile_heap *ph = heap->prof;
	if (ph == NULL)
		return false;
	for (unsigned cls = 1; cls < PROXIES; cls++) {
		const tl_page *px = &ph->proxy[cls];
		uint32_t n = 0;
		for (const tl_block *b = px->free; b != NULL && n <= px->capacity;
		     b = tl_link_decode(px, b, b->next), n++)
			if (b == block)
				return true;
	}
	return false;
}

/* ---- set-up ---- */

/* One line on stderr: "tlmalloc: " a b c d. */
static void warn(const char *a, const char *b, const char *c, const char *d)
{
	char buf[PROF_PATH_MAX + 256];
	size_t n = 0;
	const char *parts[] = { "tlmalloc: ", a, b, c, d, "\n" };
	for (size_t i = 0; i < 6; i++) {
		size_t len = strlen(parts[i]);
		if (len > sizeof(buf) - n)
			len = sizeof(buf) - n;
		memcpy(buf + n, parts[i], len);
		n += len;
	}
	tl_os_write_stderr(buf, n);
}

/* Why a profile's file cannot be written, for the warning at set-up. */
static const char *error_text(int err)
{
	switch (err) {
	case EACCES: return "permission denied; heap profiling off";
	case ENOENT: return "no such directory; heap profiling off";
	case ENOTDIR: return "not a directory; heap profiling off";
	case EROFS: return "read-only file system; heap profiling off";
	case EISDIR: return "is a directory; heap profiling off";
	case ENOSPC: return "no space left; heap profiling off";
	case ENAMETOOLONG: return "name too long; heap profiling off";
	default: return "cannot be written; heap profiling off";
	}
}

static size_t put_decimal(char *out, uint64_t v)
{
	return tl_format_u64(out, v, 10);
}

/* The dump's path: prof.path with %p as the process id, then ".seq" for a
 * numbered dump (seq > 0).  False if it does not fit. */
static bool expand_path(char *out, uint32_t seq)
{
	size_t n = 0;
	for (const char *s = prof.path; *s != '\0'; s++) {
		if (n + 32 > PROF_PATH_MAX)
			return false;
		if (s[0] == '%' && s[1] == 'p') {
			n += put_decimal(out + n, (uint64_t)tl_os_getpid());
			s++;
		} else {
			out[n++] = *s;
		}
	}
	if (seq > 0) {
		out[n++] = '.';
		n += put_decimal(out + n, seq);
	}
	out[n] = '\0';
	return true;
}

extern char **environ;

static void read_path(void)
{
	static const char name[] = "TLMALLOC_PROFILE_FILE=";
	const char *value = "tlmalloc.%p.heap";
	for (char **e = environ; e != NULL && *e != NULL; e++)
		if (strncmp(*e, name, sizeof(name) - 1) == 0 &&
		    (*e)[sizeof(name) - 1] != '\0')
			value = *e + sizeof(name) - 1;
	size_t len = strlen(value);
	if (len + 32 >= PROF_PATH_MAX) {
		warn("TLMALLOC_PROFILE_FILE: ", "too long", "",
		     "; heap profiling off");
		prof.path[0] = '\0';
		return;
	}
	memcpy(prof.path, value, len + 1);
}

/* The exit dump's file can be written (it is created, empty, now). */
static bool path_writable(void)
{
	char path[PROF_PATH_MAX];
	if (prof.path[0] == '\0' || !expand_path(path, 0))
		return false;
	int fd = tl_os_open(path, true);
	if (fd < 0) {
		warn("heap profile '", path, "': ", error_text(-fd));
		return false;
	}
	tl_os_close(fd);
	return true;
}

/* Map the tables (prof.lock held); false, with profiling off, if refused. */
static bool setup_locked(void)
{
	if (prof.setup)
		return prof.stacks != NULL;
	prof.setup = true;
	prof.pid = tl_os_getpid();
	if (!TL_HAVE_UNWIND) {
		warn("heap profile: ", "this build has no stack unwinder "
		     "(libgcc's _Unwind_Backtrace did not link)", "",
		     "; heap profiling off");
		goto off;
	}
	if (prof.path[0] == '\0')
		read_path();
	if (!path_writable())
		goto off;
	size_t ss = sizeof(struct prof_stack) * PROF_STACKS;
	size_t sa = sizeof(struct prof_sample) * PROF_SAMPLES;
	prof.stacks = tl_os_map(ss);
	prof.samples = tl_os_map(sa);
	if (prof.stacks == NULL || prof.samples == NULL) {
		warn("heap profile: ", "out of memory for its tables", "",
		     "; heap profiling off");
		if (prof.stacks != NULL)
			tl_os_unmap(prof.stacks, ss);
		if (prof.samples != NULL)
			tl_os_unmap(prof.samples, sa);
		prof.stacks = NULL;
		prof.samples = NULL;
		goto off;
	}
	prof.held = ss + sa;
	tl_heap_init(&tl_profile_blocks, blocks_direct,
		     (uintptr_t)&tl_profile_blocks);
	return true;
off:
	tl_option_set("profile", 0);
	return false;
}

static void on_signal(int sig);

void tl_profile_init(void)
{
	long sig = tl_option(TL_OPT_profile_signal);
	if (sig != 0 && !tl_os_catch_signal((int)sig, on_signal)) {
		char num[24];
		num[put_decimal(num, (uint64_t)sig)] = '\0';
		warn("TLMALLOC_PROFILE_SIGNAL=", num,
		     ": the signal has a handler already (or cannot have one)",
		     "; heap profiling off");
		tl_option_set("profile", 0);
		return;
	}
	if (!tl_profile_wanted())
		return;
	tl_lock_acquire(&prof.lock);
	setup_locked();
	tl_lock_release(&prof.lock);
}

/* ---- per heap: start and stop ---- */

static bool attach(tl_heap *heap)
{
	struct tl_profile_heap *ph = NULL;
	tl_lock_acquire(&prof.lock);
	if (setup_locked()) {
		ph = prof.free_states;
		if (ph != NULL) {
			prof.free_states = ph->next_free;
		} else {
			size_t size = (sizeof(*ph) + 4095) & ~(size_t)4095;
			ph = tl_os_map(size);
			if (ph != NULL)
				prof.held += size;
		}
	}
	uint64_t n = ++prof.seed_count;
	tl_lock_release(&prof.lock);
	if (ph == NULL)
		return false;
	memset(ph, 0, sizeof(*ph));
	uint64_t seed = (uint64_t)tl_option(TL_OPT_profile_seed);
	if (seed == 0)
		seed = tl_os_now_ms() ^ (uintptr_t)heap ^ (uintptr_t)&seed;
	ph->rng = mix64(seed) + n * 0x632be59bd9b4e019ull;
	ph->rate = (double)tl_option(TL_OPT_profile_rate);
	for (unsigned cls = 1; cls < PROXIES; cls++)
		ph->left[cls] = (uint64_t)(draw(ph) / tl_class_size[cls]);
	ph->bytes_left = (uint64_t)draw(ph);
	heap->prof = ph;
	tl_heap_set_direct_all(heap);
	if (tl_heap_local == heap)
		tl_heap_set_local(heap);
	return true;
}

void tl_profile_heap_detach(tl_heap *heap)
{
	struct tl_profile_heap *ph = heap->prof;
	tl_profile_heap_settle(heap);
	heap->prof = NULL;
	tl_heap_set_direct_all(heap);
	if (tl_heap_local == heap)
		tl_heap_set_local(heap);
	tl_lock_acquire(&prof.lock);
	ph->next_free = prof.free_states;
	prof.free_states = ph;
	tl_lock_release(&prof.lock);
}

/* ---- stacks ---- */

static void *sample(size_t size, double s, struct tl_profile_heap *ph);
static void *profile_malloc(tl_heap *heap, size_t size);

#if TL_HAVE_UNWIND
struct unwind_state {
	uintptr_t *pc;
	unsigned depth;
	bool in_caller;
};

#ifndef TL_NO_OVERRIDE
void *_Znwm(size_t n);
void *_Znam(size_t n);
void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag);
void *_ZnamRKSt9nothrow_t(size_t n, const void *tag);
#endif

/* Whether a frame's function is tlmalloc's, on the way from the caller's
 * allocation to here: those frames are left out of the stack. */
static bool frame_is_ours(uintptr_t fn)
{
	const uintptr_t ours[] = {
		(uintptr_t)sample,
		(uintptr_t)profile_malloc, (uintptr_t)tl_profile_malloc,
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

static _Unwind_Reason_Code unwind_one(struct _Unwind_Context *ctx, void *arg)
{
	struct unwind_state *st = arg;
	uintptr_t ip = _Unwind_GetIP(ctx);
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

/* The caller's stack, innermost first (return addresses).  Inlined, so
 * its frame is its caller's: one frame fewer to unwind a sample (about
 * 1,500 instructions). */
static TL_ALWAYS_INLINE unsigned capture(uintptr_t *pc)
{
	struct unwind_state st = { .pc = pc };
	_Unwind_Backtrace(unwind_one, &st);
	return st.depth;
}
#else
/* No unwinder in this build: setup_locked keeps profiling off. */
static TL_ALWAYS_INLINE unsigned capture(uintptr_t *pc)
{
	pc[0] = 0;
	return 0;
}
#endif

unsigned tl_profile_stack(uintptr_t *pc)
{
	return capture(pc);
}

static uint64_t stack_hash(const uintptr_t *pc, unsigned depth)
{
	uint64_t h = depth;
	for (unsigned i = 0; i < depth; i++)
		h = mix64(h ^ pc[i]);
	return h | 1;
}

/* The stack's slot (prof.lock), added if new; -1 if the table is full. */
static int stack_find(const uintptr_t *pc, unsigned depth)
{
	uint64_t h = stack_hash(pc, depth);
	for (uint32_t i = (uint32_t)h % PROF_STACKS;; i = (i + 1) % PROF_STACKS) {
		struct prof_stack *st = &prof.stacks[i];
		if (st->hash == 0) {
			if (prof.stack_count >= PROF_STACKS * 3 / 4)
				return -1;
			st->hash = h;
			st->depth = depth;
			memcpy(st->pc, pc, depth * sizeof(pc[0]));
			prof.stack_count++;
			return (int)i;
		}
		if (st->hash == h && st->depth == depth &&
		    memcmp(st->pc, pc, depth * sizeof(pc[0])) == 0)
			return (int)i;
	}
}

/* ---- live samples: linear probing by address ---- */

static uint32_t sample_home(uintptr_t addr)
{
	return (uint32_t)(mix64(addr) % PROF_SAMPLES);
}

static struct prof_sample *sample_find(uintptr_t addr)
{
	for (uint32_t i = sample_home(addr);; i = (i + 1) % PROF_SAMPLES) {
		struct prof_sample *s = &prof.samples[i];
		if (s->addr == addr)
			return s;
		if (s->addr == 0)
			return NULL;
	}
}

/* Take s out, shifting back the entries after it that it displaced. */
static void sample_remove(struct prof_sample *s)
{
	uint32_t hole = (uint32_t)(s - prof.samples);
	for (uint32_t i = (hole + 1) % PROF_SAMPLES;; i = (i + 1) % PROF_SAMPLES) {
		struct prof_sample *e = &prof.samples[i];
		if (e->addr == 0)
			break;
		uint32_t home = sample_home(e->addr);
		/* e may fill the hole unless its home lies in (hole, i] */
		bool stays = hole < i ? (home > hole && home <= i)
				      : (home > hole || home <= i);
		if (!stays) {
			prof.samples[hole] = *e;
			hole = i;
		}
	}
	prof.samples[hole].addr = 0;
	prof.sample_count--;
}

static void forget_locked(uintptr_t addr)
{
	struct prof_sample *s = sample_find(addr);
	if (s == NULL)
		return;
	struct prof_stack *st = &prof.stacks[s->stack];
	st->live_count -= s->count;
	st->live_bytes -= s->bytes;
	prof.live_bytes -= s->bytes;
	if (s->huge)
		atomic_fetch_sub_explicit(&tl_profile_huge_live.v, 1,
					  memory_order_relaxed);
	sample_remove(s);
}

static bool dump_numbered_locked(void);

static void record_locked(void *p, double s, double count,
			  const uintptr_t *pc, unsigned depth)
{
	prof.samples_total++;
	int si = stack_find(pc, depth);
	if (si < 0 || prof.sample_count >= PROF_SAMPLES * 3 / 4) {
		prof.dropped++;
		return;
	}
	forget_locked((uintptr_t)p);	/* a huge block unmapped unseen */
	uint32_t i = sample_home((uintptr_t)p);
	while (prof.samples[i].addr != 0)
		i = (i + 1) % PROF_SAMPLES;
	bool huge = tl_page_of(tl_segment_of(p), p)->kind == TL_PAGE_HUGE;
	prof.samples[i] = (struct prof_sample){
		.addr = (uintptr_t)p, .stack = (uint32_t)si, .huge = huge,
		.count = count, .bytes = s * count,
	};
	prof.sample_count++;
	if (huge)
		atomic_fetch_add_explicit(&tl_profile_huge_live.v, 1,
					  memory_order_relaxed);
	struct prof_stack *st = &prof.stacks[si];
	st->live_count += count;
	st->live_bytes += s * count;
	st->alloc_count += count;
	st->alloc_bytes += s * count;
	prof.live_bytes += s * count;
	double growth = (double)tl_option(TL_OPT_profile_growth) * 1048576.0;
	if (growth > 0 && prof.live_bytes >= prof.growth_mark + growth) {
		prof.growth_mark = prof.live_bytes;
		dump_numbered_locked();
	}
}

/* ---- allocation and free ---- */

/*
 * An allocation of size bytes is sampled, from a stream whose allocations
 * are s bytes each (the block size of its class, for the countdown): it
 * stands for 1 / p(s) allocations of size bytes.  Its block comes from
 * tl_profile_blocks; NULL if it cannot.
 */
static TL_NOINLINE void *sample(size_t size, double s,
				struct tl_profile_heap *ph)
{
	uintptr_t pc[PROF_DEPTH];
	in_profiler = true;
	unsigned depth = capture(pc);
	double count = 1.0 / sample_probability(s / ph->rate);
	tl_lock_acquire(&prof.lock);
	void *p = tl_heap_malloc(&tl_profile_blocks, size);
	if (p != NULL)
		record_locked(p, (double)size, count, pc, depth);
	tl_lock_release(&prof.lock);
	in_profiler = false;
	return p;
}

static void dump_if_pending(void)
{
	if (tl_likely(tl_u32_load_relaxed(&dump_pending) == 0))
		return;
	tl_lock_acquire(&prof.lock);
	if (tl_u32_load_relaxed(&dump_pending) != 0)
		dump_numbered_locked();
	tl_lock_release(&prof.lock);
}

static void *malloc_direct(tl_heap *heap, struct tl_profile_heap *ph,
			   size_t size)
{
	unsigned cls = slot_class(heap, size);
	proxy_settle(heap, ph, cls);
	void *p = NULL;
	if (ph->left[cls] == 0) {
		ph->left[cls] = (uint64_t)(draw(ph) / tl_class_size[cls]);
		p = sample(size, tl_class_size[cls], ph);
	} else {
		/* Most often: the chain ran out, its head page has blocks
		 * again (the owner's frees); heap_scan_queue's first step. */
		tl_page *head = heap->queue[cls].first;
		ph->left[cls]--;
		if (head != NULL &&
		    (head->free != NULL || tl_page_collect_head(head)))
			p = tl_page_pop(head);
	}
	if (p == NULL)
		p = tl_heap_alloc(heap, size);
	proxy_refill(heap, ph, cls);
	unsigned now = slot_class(heap, size);	/* a young group grew up */
	if (now != cls)
		proxy_refill(heap, ph, now);
	return p;
}

static TL_NOINLINE void *profile_malloc(tl_heap *heap, size_t size)
{
	struct tl_profile_heap *ph = heap->prof;
	if (in_profiler)
		return tl_heap_alloc(heap, size);
	if (ph == NULL) {
		if (!tl_profile_wanted() || !attach(heap))
			return tl_heap_alloc(heap, size);
		ph = heap->prof;
	} else if (!tl_profile_wanted()) {
		tl_profile_heap_detach(heap);
		return tl_heap_alloc(heap, size);
	}
	dump_if_pending();
	if (size <= TL_DIRECT_MAX)
		return malloc_direct(heap, ph, size);
	uint64_t s = size <= TL_MEDIUM_MAX ? tl_class_size[tl_size_to_class(size)]
					   : size;
	if (s <= ph->bytes_left) {
		ph->bytes_left -= s;
		return tl_heap_alloc(heap, size);
	}
	ph->bytes_left = (uint64_t)draw(ph);
	void *p = sample(size, (double)s, ph);
	return p != NULL ? p : tl_heap_alloc(heap, size);
}

/* The end of a chain, the usual case first (proxy_rechain), small enough
 * to save no registers; everything else in profile_malloc. */
void *tl_profile_malloc(tl_heap *heap, size_t size)
{
	struct tl_profile_heap *ph = heap->prof;
	if (ph != NULL && size <= TL_DIRECT_MAX && !in_profiler &&
	    tl_profile_wanted() &&
	    tl_u32_load_relaxed(&dump_pending) == 0) {
		void *p = proxy_rechain(heap, ph, slot_class(heap, size));
		if (p != NULL)
			return p;
	}
	return profile_malloc(heap, size);
}

void tl_profile_free(tl_page *page, void *p)
{
	tl_lock_acquire(&prof.lock);
	forget_locked((uintptr_t)p);
	tl_free_generic(&tl_profile_blocks, page, p);
	tl_lock_release(&prof.lock);
}

void tl_profile_huge_forget(void *p)
{
	tl_lock_acquire(&prof.lock);
	if (prof.samples != NULL)
		forget_locked((uintptr_t)p);
	tl_lock_release(&prof.lock);
}

void tl_profile_huge_moved_slow(void *from, void *to)
{
	tl_lock_acquire(&prof.lock);
	struct prof_sample *s = prof.samples != NULL ?
				sample_find((uintptr_t)from) : NULL;
	if (s != NULL) {
		struct prof_sample moved = *s;
		sample_remove(s);
		moved.addr = (uintptr_t)to;
		uint32_t i = sample_home(moved.addr);
		while (prof.samples[i].addr != 0)
			i = (i + 1) % PROF_SAMPLES;
		prof.samples[i] = moved;
		prof.sample_count++;
	}
	tl_lock_release(&prof.lock);
}

/* ---- the profile: gperftools' heap-profile text, read by pprof ---- */

struct out {
	int fd;
	bool ok;
	size_t n;
	char buf[4096];
};

static void out_flush(struct out *o)
{
	if (o->n > 0 && o->ok)
		o->ok = tl_os_write_all(o->fd, o->buf, o->n);
	o->n = 0;
}

static void put(struct out *o, const char *s, size_t len)
{
	while (len > 0) {
		if (o->n == sizeof(o->buf))
			out_flush(o);
		size_t k = sizeof(o->buf) - o->n;
		if (k > len)
			k = len;
		memcpy(o->buf + o->n, s, k);
		o->n += k;
		s += k;
		len -= k;
	}
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void put_u64(struct out *o, uint64_t v)
{
	char tmp[24];
	put(o, tmp, put_decimal(tmp, v));
}

static void put_hex(struct out *o, uintptr_t v)
{
	char tmp[TL_FORMAT_MAX];
	put(o, "0x", 2);
	put(o, tmp, tl_format_u64(tmp, v, 16));
}

static uint64_t rounded(double v)
{
	return v > 0 ? (uint64_t)(v + 0.5) : 0;
}

/* "live count: live bytes [allocated count: allocated bytes]" */
static void put_counts(struct out *o, double lc, double lb, double ac,
		       double ab)
{
	put_u64(o, rounded(lc));
	puts_(o, ": ");
	put_u64(o, rounded(lb));
	puts_(o, " [");
	put_u64(o, rounded(ac));
	puts_(o, ": ");
	put_u64(o, rounded(ab));
	puts_(o, "]");
}

/* Write the profile to fd (prof.lock held): the sampled live heap and the
 * sampled allocations since the start, per stack, then the mappings. */
static bool write_profile(int fd)
{
	static struct out o;	/* under prof.lock: off the stack */
	o.fd = fd;
	o.ok = true;
	o.n = 0;
	double lc = 0, lb = 0, ac = 0, ab = 0;
	for (uint32_t i = 0; prof.stacks != NULL && i < PROF_STACKS; i++) {
		const struct prof_stack *st = &prof.stacks[i];
		if (st->hash == 0)
			continue;
		lc += st->live_count;
		lb += st->live_bytes;
		ac += st->alloc_count;
		ab += st->alloc_bytes;
	}
	puts_(&o, "heap profile: ");
	put_counts(&o, lc, lb, ac, ab);
	puts_(&o, " @ heapprofile\n");
	for (uint32_t i = 0; prof.stacks != NULL && i < PROF_STACKS; i++) {
		const struct prof_stack *st = &prof.stacks[i];
		if (st->hash == 0)
			continue;
		put_counts(&o, st->live_count, st->live_bytes, st->alloc_count,
			   st->alloc_bytes);
		puts_(&o, " @");
		for (unsigned k = 0; k < st->depth; k++) {
			puts_(&o, " ");
			put_hex(&o, st->pc[k]);
		}
		puts_(&o, "\n");
	}
	puts_(&o, "\nMAPPED_LIBRARIES:\n");
	int maps = tl_os_open("/proc/self/maps", false);
	if (maps >= 0) {
		char buf[1024];
		long n;
		while ((n = tl_os_read(maps, buf, sizeof(buf))) > 0)
			put(&o, buf, (size_t)n);
		tl_os_close(maps);
	}
	out_flush(&o);
	return o.ok;
}

static int dump_to_locked(const char *path)
{
	int fd = tl_os_open(path, true);
	if (fd < 0)
		return -fd;
	bool ok = write_profile(fd);
	ok &= tl_os_close(fd);
	return ok ? 0 : EIO;
}

/* FILE.N, for a signal or the heap's growth (prof.lock held). */
static bool dump_numbered_locked(void)
{
	char path[PROF_PATH_MAX];
	tl_u32_store_relaxed(&dump_pending, 0);
	if (!prof.setup || prof.stacks == NULL || !expand_path(path, ++prof.seq))
		return false;
	int err = dump_to_locked(path);
	if (err != 0)
		warn("heap profile '", path, "': not written", "");
	return err == 0;
}

/* A signal's dump: written now unless the lock is held (by the thread the
 * signal interrupted, maybe); then at the next sample or refill. */
static void on_signal(int sig)
{
	(void)sig;
	tl_u32_store_relaxed(&dump_pending, 1);
	uint32_t unlocked = 0;
	if (tl_u32_cas_strong_acquire(&prof.lock.state, &unlocked, 1)) {
		dump_numbered_locked();
		tl_lock_release(&prof.lock);
	}
}

int tl_profile_dump(const char *path)
{
	if (path == NULL)
		return EINVAL;
	tl_lock_acquire(&prof.lock);
	int err = dump_to_locked(path);
	tl_lock_release(&prof.lock);
	return err;
}

/* ---- the leak report ---- */

/* One frame as "function+0xoff (object)", or the address. */
size_t tl_profile_append_frame(char *buf, size_t n, size_t cap, uintptr_t pc)
{
	Dl_info info;
	if (dladdr((void *)(pc - 1), &info) != 0 && info.dli_fname != NULL) {
		const char *obj = strrchr(info.dli_fname, '/');
		obj = obj != NULL ? obj + 1 : info.dli_fname;
		if (info.dli_sname != NULL) {
			n = tl_append(buf, n, cap, info.dli_sname);
			n = tl_append(buf, n, cap, "+");
			n = tl_append_u64(buf, n, cap,
					  pc - (uintptr_t)info.dli_saddr, 16);
		} else {
			n = tl_append_u64(buf, n, cap,
					  pc - (uintptr_t)info.dli_fbase, 16);
		}
		n = tl_append(buf, n, cap, " (");
		n = tl_append(buf, n, cap, obj);
		return tl_append(buf, n, cap, ")");
	}
	return tl_append_u64(buf, n, cap, pc, 16);
}

#define LEAK_LINES 5
#define LEAK_FRAMES 6

static void leak_report_locked(const char *path)
{
	char buf[2048];
	size_t cap = sizeof(buf) - 1, n = 0;
	int top[LEAK_LINES];
	unsigned shown = 0, stacks = 0;
	double lc = 0, lb = 0;
	for (uint32_t i = 0; i < PROF_STACKS; i++) {
		const struct prof_stack *st = &prof.stacks[i];
		if (st->hash == 0 || rounded(st->live_bytes) == 0)
			continue;
		stacks++;
		lc += st->live_count;
		lb += st->live_bytes;
		/* keep the LEAK_LINES largest, largest first */
		unsigned at = shown < LEAK_LINES ? shown++ : LEAK_LINES;
		while (at > 0 && prof.stacks[top[at - 1]].live_bytes < st->live_bytes) {
			if (at < LEAK_LINES)
				top[at] = top[at - 1];
			at--;
		}
		if (at < LEAK_LINES)
			top[at] = (int)i;
	}
	n = tl_append(buf, n, cap, "tlmalloc: leak report: ");
	if (stacks == 0) {
		n = tl_append(buf, n, cap, "no sampled block is still allocated "
					"at exit");
	} else {
		n = tl_append(buf, n, cap, "about ");
		n = tl_append_u64(buf, n, cap, rounded(lb), 10);
		n = tl_append(buf, n, cap, " bytes in ");
		n = tl_append_u64(buf, n, cap, rounded(lc), 10);
		n = tl_append(buf, n, cap, " blocks still allocated at exit, from ");
		n = tl_append_u64(buf, n, cap, stacks, 10);
		n = tl_append(buf, n, cap, " stacks (estimates from samples, 1 per ");
		n = tl_append_u64(buf, n, cap,
				  (uint64_t)tl_option(TL_OPT_profile_rate), 10);
		n = tl_append(buf, n, cap, " bytes on average); probably leaked:");
	}
	buf[n++] = '\n';
	tl_os_write_stderr(buf, n);
	for (unsigned k = 0; k < shown; k++) {
		const struct prof_stack *st = &prof.stacks[top[k]];
		n = tl_append(buf, 0, cap, "tlmalloc:   about ");
		n = tl_append_u64(buf, n, cap, rounded(st->live_bytes), 10);
		n = tl_append(buf, n, cap, " bytes in ");
		n = tl_append_u64(buf, n, cap, rounded(st->live_count), 10);
		n = tl_append(buf, n, cap, " blocks at ");
		for (unsigned f = 0; f < st->depth && f < LEAK_FRAMES; f++) {
			if (f > 0)
				n = tl_append(buf, n, cap, " <- ");
			n = tl_profile_append_frame(buf, n, cap, st->pc[f]);
		}
		buf[n++] = '\n';
		tl_os_write_stderr(buf, n);
	}
	if (path != NULL) {
		n = tl_append(buf, 0, cap, "tlmalloc: heap profile written to ");
		n = tl_append(buf, n, cap, path);
		n = tl_append(buf, n, cap, " (pprof -inuse_space shows the live "
					"blocks by stack)");
		buf[n++] = '\n';
		tl_os_write_stderr(buf, n);
	}
}

/*
 * At exit: the profile to FILE and the leak report, in the process that
 * set the profiler up (a child of fork writes its own only when FILE has
 * %p).  Registered at start-up (init.c) whether or not profiling is on.
 */
void tl_profile_at_exit(void)
{
	char path[PROF_PATH_MAX];
	tl_lock_acquire(&prof.lock);
	if (prof.stacks != NULL &&
	    (prof.pid == tl_os_getpid() || strstr(prof.path, "%p") != NULL) &&
	    expand_path(path, 0)) {
		int err = dump_to_locked(path);
		if (err != 0)
			warn("heap profile '", path, "': not written", "");
		leak_report_locked(err == 0 ? path : NULL);
	}
	tl_lock_release(&prof.lock);
}

/* ---- statistics and fork ---- */

void tl_profile_stats_get(struct tl_profile_stats *out)
{
	tl_lock_acquire(&prof.lock);
	*out = (struct tl_profile_stats){
		.samples = prof.sample_count,
		.samples_total = prof.samples_total,
		.dropped = prof.dropped,
		.held = prof.held,
	};
	tl_lock_release(&prof.lock);
}

void tl_profile_fork_prepare(void)
{
	tl_lock_acquire(&prof.lock);
}

void tl_profile_fork_parent(void)
{
	tl_lock_release(&prof.lock);
}

void tl_profile_fork_child(void)
{
	tl_lock_reset(&prof.lock);
}
