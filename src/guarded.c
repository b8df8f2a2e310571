/*
 * guarded.c - guarded sampling: one allocation in N on an OS page of its
 * own, so an overflow, an underflow or a use after free of it faults at
 * once (docs/secure.md, "Guarded sampling"; the idea of GWP-ASan).
 *
 * The pool, mapped once when the option guarded_rate is on: one 4 MiB
 * segment-aligned mapping, its first TL_SEGMENT_HEADER bytes left zero (a
 * segment header whose descriptors are all free, which free's fast path
 * reads and leaves for its slow path), then per slot a guard page and a
 * data page, then a last guard page:
 *
 *   | header | guard | data 0 | guard | data 1 | ... | data n-1 | guard |
 *
 * Guard pages are always PROT_NONE; a slot's data page is read-write only
 * while its block is live.  A block is right-aligned in its data page:
 * it starts at the page's end minus its usable size, size rounded up to
 * 16 bytes (malloc's alignment; 16 for size 0), and malloc_usable_size
 * says so.  So the byte at p + usable faults: an overflow by one byte
 * faults when size is a multiple of 16, and otherwise only past the
 * slack (usable - size < 16 bytes).  An underflow faults once it leaves
 * the data page: p - k for k > page size - usable (at once for a block
 * of a whole page).
 *
 * Which allocations: those that leave malloc's inline path and would go
 * to the generic path (tl_malloc_slow, alloc.c), one in guarded_rate of
 * them, counted over the process, and only for sizes up to one OS page.
 * Nothing is added to the fast paths, and the sampling is biased: an
 * allocation reaches that path when its page's free lists are empty (the
 * first allocation of a class, a page's refill), or for sizes above the
 * direct table (1 KiB) when its class's current page is empty too.  A
 * program cycling blocks of one size through a hot page samples none of
 * them after the first; one that keeps more live, or allocates many
 * sizes, samples more.  At rate 1 every such allocation takes a slot
 * while one is free, and a sampled allocation gives its heap no page, so
 * the next one of the class is a candidate again.
 *
 * Quarantine: a freed slot's data page goes back to PROT_NONE and its
 * memory to the OS (madvise), and the slot is not reused before half as
 * many allocations as the pool has slots have been sampled after its free
 * (guarded or not: the clock runs on when every slot waits); until then a
 * use after free of its block faults.  A sample that finds no slot ready is
 * counted (missed) and the allocation goes on unguarded.
 *
 * Locking: none.  A slot's state goes FREE -> TAKING -> LIVE -> FREEING
 * -> FREE by compare-and-swap, so exactly one thread takes or frees it;
 * its block, size and stack are written by that thread before the
 * release store of LIVE, and stay after its free for the reports.  A
 * fork leaves a slot another thread held mid-change unusable in the
 * child (at most one per such thread).  The fault handler reads the slots
 * as they are: a report races only with a concurrent change of the slot
 * it names.
 *
 * Reports: one line on stderr naming the misuse, the address, the block
 * and its size, and the stack that allocated it (the heap profiler's
 * unwinder, symbolised with dladdr), then abort.
 */
#include <stdlib.h>
#include <string.h>

#include "tlmalloc/fastpath.h"
#include "tlmalloc/guarded.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"
#include "tlmalloc/profile.h"

#define GUARDED_SLOTS_MAX 256		/* guarded_slots' greatest value */
#define GUARDED_DEPTH 8			/* frames kept per block */

enum slot_state { SLOT_FREE, SLOT_TAKING, SLOT_LIVE, SLOT_FREEING };

struct slot {
	tl_atomic_u32 state;	/* enum slot_state, by CAS */
	uint32_t depth;		/* frames in pc */
	uintptr_t block;	/* the block's address; 0 if never used */
	size_t size;		/* the size asked for */
	uint64_t freed_at;	/* samples before its free (quarantine) */
	uintptr_t pc[GUARDED_DEPTH];	/* allocation stack, innermost first */
};

uintptr_t tl_guarded_base;
tl_atomic_uptr tl_guarded_span;

static struct slot slots[GUARDED_SLOTS_MAX];
static uint32_t slot_count;
static size_t page;			/* the OS page */
static uint8_t *first;			/* slot 0's guard page */
static tl_atomic_u64 candidates;	/* allocations offered, for the rate */
static tl_atomic_u64 samples;		/* allocations sampled, guarded or not */
static tl_atomic_u64 cursor;		/* where the next search starts */
static tl_atomic_u64 taken;		/* blocks guarded, in all */
static tl_atomic_u64 freed;
static tl_atomic_u64 missed;

static uint8_t *slot_data(uint32_t i)
{
	return first + (size_t)i * 2 * page + page;
}

static size_t usable_of(size_t size)
{
	return size == 0 ? TL_MIN_ALIGN
			 : (size + TL_MIN_ALIGN - 1) & ~(size_t)(TL_MIN_ALIGN - 1);
}

TL_EVERY_PROCESS void tl_guarded_init(void)
{
	if (tl_option(TL_OPT_guarded_rate) == 0)
		return;
	page = tl_os_page_size();
	size_t room = (TL_SEGMENT_SIZE - TL_SEGMENT_HEADER - page) / (2 * page);
	size_t n = (size_t)tl_option(TL_OPT_guarded_slots);
	if (room > GUARDED_SLOTS_MAX)	/* the option's greatest value */
		room = GUARDED_SLOTS_MAX;
	slot_count = (uint32_t)(n < room ? n : room);
	uint8_t *base = tl_os_map_aligned(TL_SEGMENT_SIZE, TL_SEGMENT_SIZE, 0);
	if (base == NULL)
		return;		/* stays off; the mapping's failure is reported
				 * with the option verbose */
	first = base + TL_SEGMENT_HEADER;
	if (!tl_os_guard(first, TL_SEGMENT_SIZE - TL_SEGMENT_HEADER)) {
		tl_os_unmap(base, TL_SEGMENT_SIZE);
		return;
	}
	tl_guarded_base = (uintptr_t)base;
	tl_uptr_store_release(&tl_guarded_span, TL_SEGMENT_SIZE);
}

/* A FREE slot out of quarantine, now TAKING; NULL if none. */
static struct slot *take_slot(void)
{
	uint64_t now = atomic_fetch_add_explicit(&samples.v, 1,
						 memory_order_relaxed);
	uint64_t quarantine = slot_count / 2;
	for (uint32_t k = 0; k < slot_count; k++) {
		uint64_t i = atomic_fetch_add_explicit(&cursor.v, 1,
						       memory_order_relaxed) %
			     slot_count;
		struct slot *s = &slots[i];
		uint32_t state = SLOT_FREE;
		if (tl_u32_load_relaxed(&s->state) != SLOT_FREE ||
		    !tl_u32_cas_strong_acquire(&s->state, &state, SLOT_TAKING))
			continue;
		/* Its fields are ours now (the acquire pairs with the release
		 * of its last free): read before the CAS, another thread's
		 * writes to them raced with the read (ThreadSanitizer). */
		if (s->block != 0 && now - s->freed_at < quarantine) {
			tl_u32_store_release(&s->state, SLOT_FREE);
			continue;
		}
		return s;
	}
	return NULL;
}

void *tl_guarded_malloc(size_t size)
{
	uint64_t rate = (uint64_t)tl_option(TL_OPT_guarded_rate);
	if (size > page || rate == 0)
		return NULL;
	if (atomic_fetch_add_explicit(&candidates.v, 1, memory_order_relaxed) %
	    rate != 0)
		return NULL;
	struct slot *s = take_slot();
	if (s == NULL) {
		tl_u64_add_relaxed(&missed, 1);
		return NULL;
	}
	uint8_t *data = slot_data((uint32_t)(s - slots));
	if (!tl_os_unguard(data, page)) {
		tl_u32_store_release(&s->state, SLOT_FREE);
		tl_u64_add_relaxed(&missed, 1);
		return NULL;
	}
	uintptr_t pc[TL_PROFILE_STACK_MAX];
	unsigned depth = tl_profile_stack(pc);
	if (depth > GUARDED_DEPTH)
		depth = GUARDED_DEPTH;
	memcpy(s->pc, pc, depth * sizeof(pc[0]));
	s->depth = depth;
	s->size = size;
	s->block = (uintptr_t)(data + page - usable_of(size));
	tl_u64_add_relaxed(&taken, 1);
	tl_u32_store_release(&s->state, SLOT_LIVE);
	return (void *)s->block;
}

/* The slot whose data page holds p; NULL where p is in a guard page or
 * outside the slots. */
static struct slot *slot_holding(const void *p)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)first;
	uint64_t i = off / (2 * page);
	if ((uintptr_t)p < (uintptr_t)first || i >= slot_count ||
	    off % (2 * page) < page)
		return NULL;
	return &slots[i];
}

/* The slot of a live block p (aborts naming call otherwise). */
static struct slot *live_slot(const char *call, const void *p)
{
	struct slot *s = slot_holding(p);
	if (s == NULL)
		tl_fatal(call, p, "not the start of a block (interior or "
				  "stray pointer)");
	uint32_t state = tl_u32_load_relaxed(&s->state);
	if (s->block != (uintptr_t)p || state == SLOT_TAKING)
		tl_fatal(call, p, "not the start of a block (interior or "
				  "stray pointer)");
	if (state != SLOT_LIVE)
		tl_fatal(call, p, call[0] == 'f' ? "double free"
						 : "block already freed");
	return s;
}

size_t tl_guarded_usable(const char *call, const void *p)
{
	return usable_of(live_slot(call, p)->size);
}

size_t tl_guarded_object_size(const char *call, const void *p, bool check)
{
	const char *what = "not inside a block malloc returned";
	const struct slot *s = slot_holding(p);
	if (s != NULL) {
		uint32_t state = tl_u32_load_acquire(&s->state);
		uintptr_t block = s->block;
		size_t usable = usable_of(s->size);
		if (block != 0 && (uintptr_t)p >= block &&
		    (uintptr_t)p - block < usable) {
			if (state == SLOT_LIVE)
				return usable - ((uintptr_t)p - block);
			what = "block already freed";
		}
	}
	if (check)
		tl_fatal(call, p, what);
	return 0;
}

void tl_guarded_free(const char *call, void *p)
{
	struct slot *s = live_slot(call, p);
	uint32_t state = SLOT_LIVE;
	if (!tl_u32_cas_strong_acquire(&s->state, &state, SLOT_FREEING))
		tl_fatal(call, p, "double free");
	uint8_t *data = slot_data((uint32_t)(s - slots));
	if (!tl_os_guard(data, page))
		tl_fatal(call, p, "guarded block: mprotect refused");
	tl_os_purge(data, page);
	s->freed_at = tl_u64_load_relaxed(&samples);
	tl_u64_add_relaxed(&freed, 1);
	tl_u32_store_release(&s->state, SLOT_FREE);
}

void *tl_guarded_realloc(void *p, size_t size)
{
	size_t usable = tl_guarded_usable("realloc", p);
	if (size == 0) {	/* glibc: free and return NULL */
		tl_guarded_free("realloc", p);
		return NULL;
	}
	void *q = tl_malloc_local(size);
	if (q == NULL)
		return NULL;
	memcpy(q, p, size < usable ? size : usable);
	tl_guarded_free("realloc", p);
	return q;
}

/* ---- the fault report ---- */

/* Whether a slot holds or held a block (its figures are meaningful). */
static bool used(const struct slot *s)
{
	return s != NULL && s->block != 0 &&
	       tl_u32_load_relaxed(&s->state) != SLOT_TAKING;
}

static bool live(const struct slot *s)
{
	return used(s) && tl_u32_load_relaxed(&s->state) == SLOT_LIVE;
}

/*
 * The block a fault at a is about, and the misuse: in a data page, its
 * slot's (a freed block, or none); in a guard page, the block ending
 * before it (overflow) or the one starting after it (underflow), a live
 * one before a freed one, else the nearer.
 */
static const char *classify(uintptr_t a, const struct slot **out)
{
	uintptr_t off = a - (uintptr_t)first;
	uint64_t i = off / (2 * page);
	*out = NULL;
	if (off % (2 * page) >= page) {
		const struct slot *s = i < slot_count ? &slots[i] : NULL;
		if (!used(s))
			return NULL;
		*out = s;
		return "use after free";
	}
	const struct slot *before = i > 0 && i - 1 < slot_count
					    ? &slots[i - 1] : NULL;
	const struct slot *after = i < slot_count ? &slots[i] : NULL;
	bool b = used(before), f = used(after), over;
	if (b && f && live(before) != live(after))
		over = live(before);
	else if (b && f)
		over = a - (before->block + usable_of(before->size)) <=
		       after->block - a;
	else
		over = b;
	*out = over ? before : after;
	if (!used(*out))
		return NULL;
	if (!live(*out))
		return "use after free";
	return over ? "heap overflow" : "heap underflow";
}

void tl_guarded_fault(const void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	if (!tl_guarded_holds(addr) || a < (uintptr_t)first)
		return;
	const struct slot *s;
	const char *what = classify(a, &s);
	char buf[1024];
	size_t cap = sizeof(buf) - 1, n = 0;
	n = tl_append(buf, n, cap, "tlmalloc: ");
	if (what == NULL) {
		n = tl_append(buf, n, cap, "invalid access at ");
		n = tl_append_u64(buf, n, cap, a, 16);
		n = tl_append(buf, n, cap, ": guarded memory that holds no block");
	} else {
		uint64_t size = s->size;
		n = tl_append(buf, n, cap, what);
		n = tl_append(buf, n, cap, " at ");
		n = tl_append_u64(buf, n, cap, a, 16);
		n = tl_append(buf, n, cap, ": ");
		if (a < s->block) {
			n = tl_append_u64(buf, n, cap, s->block - a, 10);
			n = tl_append(buf, n, cap, s->block - a == 1
							? " byte before the "
							: " bytes before the ");
		} else {
			n = tl_append(buf, n, cap, "byte ");
			n = tl_append_u64(buf, n, cap, a - s->block, 10);
			n = tl_append(buf, n, cap, " of the ");
		}
		n = tl_append(buf, n, cap, live(s) ? "" : "freed ");
		n = tl_append_u64(buf, n, cap, size, 10);
		n = tl_append(buf, n, cap, "-byte block ");
		n = tl_append_u64(buf, n, cap, s->block, 16);
		n = tl_append(buf, n, cap, " (guarded sample)");
		for (uint32_t k = 0; k < s->depth && k < GUARDED_DEPTH; k++) {
			n = tl_append(buf, n, cap, k == 0 ? "; allocated at "
						       : " <- ");
			n = tl_profile_append_frame(buf, n, cap, s->pc[k]);
		}
	}
	buf[n++] = '\n';
	tl_write_stderr(buf, n);
	abort();
}

void tl_guarded_stats_get(struct tl_guarded_stats *out)
{
	uint64_t t = tl_u64_load_relaxed(&taken);
	uint64_t f = tl_u64_load_relaxed(&freed);
	out->live = t > f ? t - f : 0;
	out->total = t;
	out->missed = tl_u64_load_relaxed(&missed);
	out->mapped = tl_uptr_load_relaxed(&tl_guarded_span);
}
