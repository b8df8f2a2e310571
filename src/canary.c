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
 * takes the 8 bytes after n where the block has them (else the 6 up to
 * n's own 2, which an overflow then changes too), so each of the 8 bytes
 * past n is checked.  Its first byte is 0 (option secure_canary_nul): a
 * string the program did not terminate ends there, so a read past it
 * (strlen, printf's %s) stops before the next block's data, and a 0
 * written there (an off-by-one terminator) corrupts nothing.  Its other
 * bytes are keyed by the page's secret and the block's address: they
 * cannot be read off another block, nor written back by an overflow that
 * does not know them.  n sits at
 * the block's end, where free finds it.  free
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
	/* Threads racing here all read the same option. */
	__atomic_store_n(&tl_canary_state, tail, __ATOMIC_RELAXED);
	return (size_t)tail;
}

/* Whether the canary's first byte is 0 (option secure_canary_nul, read
 * once, at the first canary: -1 until then). */
static int canary_nul = -1;

static bool nul_first(void)
{
	int nul = __atomic_load_n(&canary_nul, __ATOMIC_RELAXED);
	if (tl_unlikely(nul < 0)) {
		tl_options_init();
		nul = tl_option(TL_OPT_secure_canary_nul) != 0;
		/* threads racing here all read the same option */
		__atomic_store_n(&canary_nul, nul, __ATOMIC_RELAXED);
	}
	return nul != 0;
}

/* The canary of the block p of page for a request of n bytes: its
 * length (6 to 8), its bytes in out. */
static size_t canary_of(const tl_page *page, const void *p, size_t n,
			uint8_t out[TL_CANARY_MAX])
{
	uint64_t key = (uint64_t)(page->key ^ (uintptr_t)p) *
		       0x9e3779b97f4a7c15ull;
	size_t room = page->block_size - sizeof(uint16_t) - n;
	size_t len = room < TL_CANARY_MAX ? room : TL_CANARY_MAX;
	size_t first = nul_first() ? 1 : 0;
	if (first)
		out[0] = 0;
	for (size_t i = first; i < len; i++)
		out[i] = (uint8_t)(key >> (56 - 8 * i));
	return len;
}

void *tl_canary_set(void *p, size_t n, size_t tail)
{
	if (p == NULL || tail == 0 || tl_guarded_holds(p))
		return p;
	const tl_page *page = tl_page_of(tl_segment_of(p), p);
	if (!tl_canary_page(page))
		return p;
	uint8_t *b = p, canary[TL_CANARY_MAX];
	uint16_t size = (uint16_t)n;
	tl_assert(n + TL_CANARY_TAIL <= page->block_size);
	memcpy(b + n, canary, canary_of(page, p, n, canary));
	memcpy(b + page->block_size - sizeof(size), &size, sizeof(size));
	return p;
}

size_t tl_canary_check(const char *call, const tl_page *page, const void *p)
{
	const uint8_t *b = p;
	uint8_t canary[TL_CANARY_MAX];
	uint16_t size;
	memcpy(&size, b + page->block_size - sizeof(size), sizeof(size));
	if (tl_unlikely(size > page->block_size - TL_CANARY_TAIL ||
			memcmp(b + size, canary,
			       canary_of(page, p, size, canary)) != 0))
		tl_fatal(call, p, "canary overwritten (buffer overflow)");
	return size;
}
#endif
