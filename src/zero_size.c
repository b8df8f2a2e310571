/*
 * zero_size.c - the secure variant's zero-size blocks (docs/secure.md,
 * "Zero-size blocks").
 *
 * With the option secure_zero_size on (the secure variant's default), a
 * malloc of 0 bytes (calloc, realloc of NULL, aligned requests up to 16
 * bytes, operator new of 0) gets a pointer that no access may use: a slot
 * of 16 bytes in a pool of addresses mapped PROT_NONE, so a read or write
 * through it faults at the instruction (SIGSEGV) where it would otherwise
 * touch a real block's bytes or its canary.  Every pointer is still
 * distinct, and free, realloc, malloc_usable_size (0) and sized frees (of
 * 0) of it work as for any block; a second free, or a pointer into the
 * pool that is not a live slot's start, is reported as any invalid free.
 *
 * The pool is one 4 MiB segment-aligned mapping, made at the first
 * zero-size malloc: its first TL_SEGMENT_HEADER bytes are zeros (read
 * only: a segment header whose descriptors are all free, so that free's
 * fast path reads an owner there as for any pointer and goes to its slow
 * path, which asks tl_zero_holds first), the rest PROT_NONE, cut into
 * slots of 16 bytes: 258,048.  A bitmap says which are live.  The slots
 * are taken round-robin, a 64-slot word of the bitmap at a time, so a
 * freed slot is not handed out again before every word has been visited
 * (4,032 zero-size mallocs at least): a dangling zero-size pointer is not
 * soon a live one.  When the mapping is refused or every slot is live, a
 * zero-size malloc is served as before (a block for 0 bytes, its canary
 * at its first byte).
 */
#include "tlmalloc/fastpath.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"

#if TL_SECURE
#define SLOT 16
#define SLOTS ((TL_SEGMENT_SIZE - TL_SEGMENT_HEADER) / SLOT)
#define WORDS (SLOTS / 64)

/* The pool's base once it is mapped (0 before): tl_zero_holds reads it. */
tl_atomic_uptr tl_zero_base;

enum { POOL_NONE, POOL_MAPPING, POOL_READY, POOL_FAILED };
static tl_atomic_u32 pool_state;
static tl_atomic_u64 live[WORDS];  /* bit i of word w: slot 64 w + i live */
static tl_atomic_u32 cursor;	    /* the next word to look at */
static uintptr_t first;		    /* the first slot (once READY) */

/* The pool, mapped by the first caller; false if it is not there. */
static bool pool_ready(void)
{
	uint32_t state = tl_u32_load_acquire(&pool_state);
	if (tl_likely(state == POOL_READY))
		return true;
	if (state != POOL_NONE ||
	    !tl_u32_cas_strong_acquire(&pool_state, &state, POOL_MAPPING))
		return false;	/* another thread maps it, or it failed */
	uint8_t *base = tl_os_map_aligned(TL_SEGMENT_SIZE, TL_SEGMENT_SIZE, 0);
	if (base != NULL &&
	    (!tl_os_guard(base + TL_SEGMENT_HEADER,
			  TL_SEGMENT_SIZE - TL_SEGMENT_HEADER) ||
	     !tl_os_read_only(base, TL_SEGMENT_HEADER))) {
		tl_os_unmap(base, TL_SEGMENT_SIZE);
		base = NULL;
	}
	if (base == NULL) {
		tl_u32_store_release(&pool_state, POOL_FAILED);
		return false;
	}
	first = (uintptr_t)base + TL_SEGMENT_HEADER;
	tl_uptr_store_release(&tl_zero_base, (uintptr_t)base);
	tl_u32_store_release(&pool_state, POOL_READY);
	return true;
}

void *tl_zero_malloc(void)
{
	if (tl_option(TL_OPT_secure_zero_size) && pool_ready()) {
		for (uint32_t n = 0; n < WORDS; n++) {
			uint32_t w = tl_u32_fetch_add_relaxed(&cursor, 1) %
				     WORDS;
			uint64_t bits = tl_u64_load_relaxed(&live[w]);
			while (bits != ~(uint64_t)0) {
				unsigned i = (unsigned)__builtin_ctzll(~bits);
				if (tl_u64_cas_weak_relaxed(
					    &live[w], &bits,
					    bits | (uint64_t)1 << i))
					return (void *)(first +
							SLOT * (64 * w + i));
			}
		}
	}
	return tl_malloc_canary(0);	/* off, no pool, or every slot live */
}

/* p's slot: its word and bit (aborts naming call unless p is a slot's
 * start). */
static tl_atomic_u64 *slot_of(const char *call, const void *p,
			      uint64_t *bit)
{
	uintptr_t off = (uintptr_t)p - tl_uptr_load_relaxed(&tl_zero_base);
	if (off < TL_SEGMENT_HEADER || off % SLOT != 0)
		tl_fatal(call, p, "not the start of a block (interior or "
				  "stray pointer)");
	size_t i = (off - TL_SEGMENT_HEADER) / SLOT;
	*bit = (uint64_t)1 << (i % 64);
	return &live[i / 64];
}

void tl_zero_check(const char *call, const void *p)
{
	uint64_t bit;
	tl_atomic_u64 *word = slot_of(call, p, &bit);
	if (!(tl_u64_load_relaxed(word) & bit))
		tl_fatal(call, p, "zero-size block freed already");
}

void tl_zero_free(const char *call, void *p)
{
	uint64_t bit;
	tl_atomic_u64 *word = slot_of(call, p, &bit);
	if (!(tl_u64_fetch_and_relaxed(word, ~bit) & bit))
		tl_fatal(call, p, "double free");
}

void *tl_zero_realloc(void *p, size_t size)
{
	tl_zero_check("realloc", p);
	if (size == 0) {	/* as for any block: free and return NULL */
		tl_zero_free("realloc", p);
		return NULL;
	}
	void *q = tl_malloc_local(size);
	if (q != NULL)
		tl_zero_free("realloc", p);
	return q;
}
#endif
