/*
 * huge_quarantine.c - the secure variant's quarantine of freed huge
 * blocks' addresses (docs/secure.md, "Huge blocks' addresses held").
 *
 * With secure_huge_unmap a freed huge block (above TL_MEDIUM_MAX) is
 * unmapped, so a use after free of it faults, until the kernel hands the
 * same addresses to a later mapping: often the very next large malloc,
 * which then receives the dangling pointer's target.  With the option
 * secure_huge_quarantine at N > 0, a huge block that free would unmap
 * is replaced instead by a mapping of the same addresses that cannot be
 * accessed (PROT_NONE, no memory behind it, nothing committed) and kept
 * so for the next N such frees of the process, at most
 * TL_HUGE_QUARANTINE_BYTES of addresses in all; the oldest is then
 * unmapped.  A read or write through the old pointer faults all that
 * time, whatever was allocated since; a free, realloc or
 * malloc_usable_size of it is reported as before (its 4 MiB-aligned base
 * is no segment of tlmalloc's).
 *
 * Locking rule: the ring is under tl_pool.lock (pool.h), taken after the
 * segment left the pool; the unmapping of the oldest is done after the
 * lock is released.
 */
#include "tlmalloc/internal.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"
#include "tlmalloc/pool.h"

#if TL_SECURE
#define TL_HUGE_QUARANTINE_BYTES ((size_t)1 << 30)

typedef struct held_range {
	void *addr;
	size_t size;
} held_range;

/* Under tl_pool.lock: the ring, its next slot, the bytes it holds. */
static held_range held[TL_HUGE_QUARANTINE_MAX];
static uint32_t held_at;
static size_t held_bytes;

bool tl_huge_quarantine_hold(tl_segment *seg)
{
	uint32_t n = (uint32_t)tl_option(TL_OPT_secure_huge_quarantine);
	if (n == 0 || seg->map_size > TL_HUGE_QUARANTINE_BYTES)
		return false;
	void *addr = seg;
	size_t size = seg->map_size;
	tl_pool_unregister_segment(seg);
	if (!tl_segment_retire(seg))
		return true;	/* unmapped: not held, but freed */
	held_range out[TL_HUGE_QUARANTINE_MAX];
	uint32_t evicted = 0;
	tl_lock_acquire(&tl_pool.lock);
	uint32_t at = held_at < n ? held_at : 0;	/* n may be lowered */
	/* the slot's occupant leaves, then the oldest after it while the
	 * bytes held are over */
	for (uint32_t k = 0, i = at; k < n; k++, i = i + 1 < n ? i + 1 : 0) {
		if (k > 0 && held_bytes + size <= TL_HUGE_QUARANTINE_BYTES)
			break;
		if (held[i].addr != NULL) {
			out[evicted++] = held[i];
			held_bytes -= held[i].size;
			held[i].addr = NULL;
		}
	}
	held[at] = (held_range){ addr, size };
	held_bytes += size;
	held_at = at + 1;
	tl_lock_release(&tl_pool.lock);
	for (uint32_t i = 0; i < evicted; i++)
		tl_os_unmap(out[i].addr, out[i].size);
	return true;
}
#endif
