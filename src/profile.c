/*
 * profile.c - sampled heap profiling: which allocations are sampled, and
 * taking a sample (docs/profiling.md).  The profiler's other files
 * (profiler.h) keep the tables, write the profile and the leak report,
 * and decide when.
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
 * and, when the chain is done, finds both lists empty and calls
 * tl_malloc_slow, which jumps here: that allocation is the sample, or the
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
 * Stacks are taken by tl_profile_stack (profile_stack.c: libgcc's unwinder,
 * and on x86-64 the frames it walked remembered), before any lock of ours
 * is held.  A thread inside the profiler does not sample (a re-entry from
 * the unwinder allocates plainly).
 *
 * Memory: one state per sampling thread, reused (tl_prof.free_states,
 * under tl_prof.lock); a heap's state (tl_heap.prof) is its thread's
 * alone.
 */
#include <string.h>

#include "tlmalloc.h"
#include "tlmalloc/fastpath.h"
#include "tlmalloc/guarded.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"
#include "tlmalloc/profiler.h"

#define PROXIES 21			/* classes 1..20: sizes to TL_DIRECT_MAX */
/* A chain shorter than the countdown makes its page carve blocks up to
 * this many first (proxy_refill). */
#define PROF_CHAIN_MIN 32

tl_page_list tl_profile_no_queue[TL_CLASSES];
tl_heap tl_profile_blocks;
tl_atomic_u32 tl_profile_huge_live;

struct tl_profile_heap {
	/* Proxy of class c: the direct slots of c point here. */
	tl_page proxy[PROXIES];
	tl_page *source[PROXIES];	/* the page the chain was cut from */
	uint64_t left[PROXIES];		/* allocations before the sample */
	uint32_t given[PROXIES];	/* blocks in the chain when cut */
	uint64_t bytes_left;		/* other sizes: bytes before it */
	uint64_t rng;
	double rate;
	struct tl_profile_heap *next_free;	/* tl_prof.lock: unused states */
};

static __thread bool in_profiler TL_TLS;

/* ---- numbers, without libm ---- */

/* Uniform in (0, 1]. */
static double uniform(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return (double)((tl_prof_mix64(*state) >> 11) + 1) * 0x1.0p-53;
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
	tl_block *first = px->free, *last = first;
	if (first != NULL) {
		tl_block *next;
		rest = 1;
		while ((next = tl_link_decode(px, last, last->next)) != NULL) {
			last = next;
			rest++;
		}
	}
	/* src may have gone full, and been given away since (heap.c, "Full
	 * pages given away"): then it is another's, and what is left goes
	 * back as another thread's frees would */
	uintptr_t owner = tl_uptr_load_relaxed(&src->owner);
	bool held = owner == (heap->id | TL_OWNER_FULL) &&
		    tl_heap_full_hold(heap, src);
	bool ours = owner == heap->id || held;
	if (first != NULL && ours) {
		last->next = tl_link_encode(src, last, src->local_free);
		tl_fork_order();
		src->local_free = first;
	} else if (first != NULL) {
		tl_page_push_remote_chain(src, first, last, rest);
	}
	px->free = NULL;
#if TL_COUNTS
	uint64_t served = px->allocs;
	if (ours)
		src->allocs += served;
	else	/* its class's total, as a page that leaves its heap does */
		tl_u64_add_relaxed(&tl_class_allocs[src->size_class], served);
	px->allocs = 0;
#else
	uint64_t served = ph->given[cls] - rest;
#endif
	if (held && first != NULL)
		tl_heap_page_unfull(heap, src);	/* drops the lock */
	else if (held)
		tl_heap_full_release(heap);
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

/* ---- per heap: start and stop ---- */

static bool attach(tl_heap *heap)
{
	struct tl_profile_heap *ph = NULL;
	tl_lock_acquire(&tl_prof.lock);
	if (tl_prof_setup_locked()) {
		ph = tl_prof.free_states;
		if (ph != NULL) {
			tl_prof.free_states = ph->next_free;
		} else {
			size_t size = (sizeof(*ph) + 4095) & ~(size_t)4095;
			ph = tl_os_map(size);
			if (ph != NULL)
				tl_prof.held += size;
		}
	}
	uint64_t n = ++tl_prof.seed_count;
	tl_lock_release(&tl_prof.lock);
	if (ph == NULL)
		return false;
	memset(ph, 0, sizeof(*ph));
	uint64_t seed = (uint64_t)tl_option(TL_OPT_profile_seed);
	if (seed == 0)
		seed = tl_os_now_ms() ^ (uintptr_t)heap ^ (uintptr_t)&seed;
	ph->rng = tl_prof_mix64(seed) + n * 0x632be59bd9b4e019ull;
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
	tl_lock_acquire(&tl_prof.lock);
	ph->next_free = tl_prof.free_states;
	tl_prof.free_states = ph;
	tl_lock_release(&tl_prof.lock);
}

/* ---- allocation and free ---- */

/*
 * An allocation of size bytes is sampled, from a stream whose allocations
 * are s bytes each (the block size of its class, for the countdown): it
 * stands for 1 / p(s) allocations of size bytes.  Its block comes from
 * tl_profile_blocks; NULL if it cannot.  Inlined into
 * tl_profile_sample_malloc, so the stack starts at its frame: one frame
 * fewer to unwind.
 */
static TL_ALWAYS_INLINE void *sample(size_t size, double s,
				     struct tl_profile_heap *ph)
{
	uintptr_t pc[PROF_DEPTH];
	in_profiler = true;
	unsigned depth = tl_profile_stack(pc);
	double count = 1.0 / sample_probability(s / ph->rate);
	tl_lock_acquire(&tl_prof.lock);
	void *p = tl_heap_malloc_counted(&tl_profile_blocks, size);
	if (p != NULL)
		tl_prof_record_locked(p, (double)size, count, pc, depth);
	tl_lock_release(&tl_prof.lock);
	in_profiler = false;
	return p;
}

/* A dump a signal left pending (profile_trigger.c). */
static void dump_if_pending(void)
{
	if (tl_unlikely(tl_u32_load_relaxed(&tl_prof.dump_pending) != 0))
		tl_prof_dump_pending();
}

static TL_ALWAYS_INLINE void *malloc_direct(tl_heap *heap,
					     struct tl_profile_heap *ph,
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

static TL_ALWAYS_INLINE void *profile_malloc_steps(tl_heap *heap, size_t size)
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

/* tl_malloc_slow jumps to the profiler without polling the purger
 * (internal.h); every way but proxy_rechain's polls it here. */
TL_NOINLINE void *tl_profile_sample_malloc(tl_heap *heap, size_t size)
{
	void *p = profile_malloc_steps(heap, size);
	tl_purger_poll();
	return p;
}

/* The end of a chain, the usual case first (proxy_rechain), small enough
 * to save no registers; everything else in tl_profile_sample_malloc. */
void *tl_profile_malloc(tl_heap *heap, size_t size)
{
	struct tl_profile_heap *ph = heap->prof;
	if (ph != NULL && size <= TL_DIRECT_MAX && !in_profiler &&
	    tl_profile_wanted() &&
	    tl_u32_load_relaxed(&tl_prof.dump_pending) == 0) {
		void *p = proxy_rechain(heap, ph, slot_class(heap, size));
		if (p != NULL)
			return p;
	}
	return tl_profile_sample_malloc(heap, size);
}

void tl_profile_free(tl_page *page, void *p)
{
	tl_lock_acquire(&tl_prof.lock);
	tl_prof_forget_locked((uintptr_t)p);
	tl_free_generic(&tl_profile_blocks, page, p);
	tl_lock_release(&tl_prof.lock);
}

void tl_profile_huge_forget(void *p)
{
	tl_lock_acquire(&tl_prof.lock);
	if (tl_prof.samples != NULL)
		tl_prof_forget_locked((uintptr_t)p);
	tl_lock_release(&tl_prof.lock);
}

void tl_profile_huge_moved_slow(void *from, void *to)
{
	tl_lock_acquire(&tl_prof.lock);
	tl_prof_move_locked((uintptr_t)from, (uintptr_t)to);
	tl_lock_release(&tl_prof.lock);
}
