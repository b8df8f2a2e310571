/*
 * canary.c - the secure variant's canaries after small blocks
 * (docs/secure.md, "Canaries").
 *
 * With the option secure_canary on (read at the first malloc only: a block
 * must not be checked for a canary it was not given), a malloc of n bytes
 * up to TL_SECURE_FILL_MAX asks for TL_CANARY_TAIL bytes more.  A block of
 * a small or medium page up to TL_SECURE_FILL_MAX then holds:
 *
 *   [ n bytes of the program | canary, 6 to 8 bytes | ... | n, 2 bytes ]
 *
 * The canary sits right after the requested size, so an overflow of one
 * byte past n changes it, whatever the slack of the block's class; it
 * takes the 8 bytes after n where the block has them (else the 6 or 7 up
 * to n's own 2, which an overflow then changes too), so each of the 8
 * bytes past n is checked.  Its first byte is 0 with the option
 * secure_canary_nul (on by default): a string the program did not
 * terminate ends there, so a read past it (strlen, printf's %s) stops
 * before the next block's data, and a 0 written there (an off-by-one
 * terminator) corrupts nothing.  Its other bytes are keyed by the page's
 * secret and the block's address: they cannot be read off another block,
 * nor written back by an overflow that does not know them.  n sits at the
 * block's end, where free finds it.  free
 * checks it (before the fill), realloc and malloc_usable_size too;
 * malloc_usable_size says n, so a program that uses every usable byte
 * never touches the canary, and a sized free (free_sized, C++'s sized
 * delete) of more than n is caught.  Blocks above TL_SECURE_FILL_MAX and
 * huge blocks have none (those of requests of 64 KiB - 7 .. 64 KiB lose
 * their canary to the tail that moves them to the next class).
 */
#include <string.h>

#include "tlmalloc/guarded.h"
#include "tlmalloc/internal.h"
#include "tlmalloc/options.h"

#if TL_SECURE
int tl_canary_state = -1;

size_t tl_canary_start(void)
{
	tl_options_init();
	int tail = tl_option(TL_OPT_secure_canary) ? (int)TL_CANARY_TAIL : 0;
	int nul = tl_option(TL_OPT_secure_canary_nul) ? TL_CANARY_NUL : 0;
	/* Threads racing here all read the same options. */
	__atomic_store_n(&tl_canary_state, tail | nul, __ATOMIC_RELAXED);
	return (size_t)tail;
}

/* 8 bytes as they lie in memory: byte i is bits 8 i .. 8 i + 7. */
static inline uint64_t in_memory_order(uint64_t x)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return __builtin_bswap64(x);
#else
	return x;
#endif
}

/* The 8 bytes of the canary of block p of page, in memory order: the
 * first one 0 with secure_canary_nul, else never 0, so the off-by-one
 * terminator (a 0 written at p[n]) is always reported. */
static uint64_t canary_of(const tl_page *page, const void *p)
{
	uint64_t key = (uint64_t)(page->key ^ (uintptr_t)p) *
		       0x9e3779b97f4a7c15ull;
	int state = __atomic_load_n(&tl_canary_state, __ATOMIC_RELAXED);
	if (state & TL_CANARY_NUL)
		return key & ~(uint64_t)0xff;
	return key | ((key & 0xff) == 0);
}

/*
 * The canary is written as 8 bytes at n, then n at the block's end: where
 * the block has less than 8 bytes between them, n's 2 bytes take the
 * canary's last ones, and a check compares the canary's bytes before them
 * (n itself is checked by being where the canary is).
 */
void *tl_canary_set(void *p, size_t n, size_t tail)
{
	if (p == NULL || tail == 0 || tl_guarded_holds(p))
		return p;
	const tl_page *page = tl_page_of(tl_segment_of(p), p);
	if (!tl_canary_page(page))
		return p;
	uint8_t *b = p;
	uint64_t canary = in_memory_order(canary_of(page, p));
	uint16_t size = (uint16_t)n;
	tl_assert(n + TL_CANARY_TAIL <= page->block_size);
	memcpy(b + n, &canary, sizeof(canary));
	memcpy(b + page->block_size - sizeof(size), &size, sizeof(size));
	return p;
}

/* Whether live block p's size and canary are intact; its size in *n. */
static bool canary_intact(const tl_page *page, const void *p, size_t *n)
{
	const uint8_t *b = p;
	uint16_t size;
	uint64_t found;
	memcpy(&size, b + page->block_size - sizeof(size), sizeof(size));
	if (size > page->block_size - TL_CANARY_TAIL)
		return false;
	memcpy(&found, b + size, sizeof(found));
	size_t room = page->block_size - sizeof(size) - size;
	uint64_t mask = room >= TL_CANARY_MAX ? ~(uint64_t)0
					      : ((uint64_t)1 << (8 * room)) - 1;
	*n = size;
	return ((in_memory_order(found) ^ canary_of(page, p)) & mask) == 0;
}

size_t tl_canary_check(const char *call, const tl_page *page, const void *p)
{
	size_t n;
	if (tl_unlikely(!canary_intact(page, p, &n)))
		tl_fatal(call, p, "canary overwritten (buffer overflow)");
	return n;
}

/*
 * An underflow of a block (a write before its start) lands in the last
 * bytes of the block before it in the page: a live one's size and canary,
 * or a free one's tail of fill (TL_SECURE_TAIL bytes, which every free
 * block of 32 bytes or more holds: internal.h, tl_secure_fill_tail; a
 * 16-byte block's last bytes are its mark, whose change makes it look
 * live, and its canary then fails).  With the option secure_underflow on,
 * free looks at them (free.c, fill_freed), while the process has one
 * thread: glibc's __libc_single_threaded, cleared for good by the first
 * pthread_create (and never looked at where the C library has no such
 * flag: musl, a static program that does not link it).  With threads, the
 * block before may be freed, handed out or reallocated by another thread
 * as it is read, and a half-written tail must never be taken for an
 * underflow.
 */
extern char __libc_single_threaded __attribute__((weak));

void tl_canary_check_before(const char *call, const tl_page *page,
			    const void *p)
{
	if (&__libc_single_threaded == NULL || !__libc_single_threaded)
		return;
	size_t bs = page->block_size;
	if ((uintptr_t)p - (uintptr_t)page->start < bs)
		return;		/* the page's first block */
	const tl_block *before = (const tl_block *)((const uint8_t *)p - bs);
	uintptr_t d = before->mark ^ tl_free_mark(page, before);
	bool intact;
	if (d <= (TL_SECURE_QUARANTINED | TL_SECURE_UNFILLED)) {
		/* free: its tail of fill */
		if (!tl_secure_tailed(bs))
			return;
		uint64_t last[TL_SECURE_TAIL / sizeof(uint64_t)];
		memcpy(last, (const uint8_t *)before + bs - TL_SECURE_TAIL,
		       TL_SECURE_TAIL);
		intact = last[0] == TL_SECURE_FILL_WORD &&
			 last[1] == TL_SECURE_FILL_WORD;
	} else {
		size_t n;
		intact = canary_intact(page, before, &n);
	}
	if (tl_unlikely(!intact))
		tl_fatal(call, p, "the bytes before the block were overwritten "
				  "(buffer underflow)");
}
#endif
