/*
 * fill.c - the secure variant's fill of freed blocks and its checks
 * (docs/secure.md, "Freed memory filled", "Fill checked on reuse").
 *
 * free fills a block up to TL_SECURE_FILL_MAX with TL_SECURE_FILL past its
 * link and mark (free.c, fill_freed); malloc checks that the fill is still
 * there when it hands the block out again, zeroing it in the same pass
 * with secure_zero (tl_secure_take_filled); the quarantine checks it when
 * a block leaves its ring and, for the block freed last, at the thread's
 * next call (quarantine.c).  And the reports of a free list or a free block
 * found modified.
 */
#include <string.h>

#include "tlmalloc/internal.h"
#include "tlmalloc/options.h"

#if TL_SECURE

void tl_secure_corrupt(const void *block)
{
	tl_fatal("malloc", block,
		 "free list corrupted (buffer overrun or use after free)");
}

void tl_secure_modified(const void *block)
{
	tl_fatal("malloc", block,
		 "free block modified (buffer overrun or use after free)");
}

/* A block marked filled must still hold its fill when malloc takes it;
 * with secure_zero its bytes are zeroed in the same pass. */
void tl_secure_take_filled(const tl_page *page, tl_block *block)
{
	if (!tl_option(TL_OPT_secure_zero)) {
		if (tl_unlikely(!tl_secure_fill_intact(page, block,
						       page->block_size)))
			tl_fatal("malloc", block,
				 "free block modified (write after free)");
		return;
	}
	const tl_fill_chunk fill = { TL_SECURE_FILL_WORD, TL_SECURE_FILL_WORD };
	const tl_fill_chunk zero = { 0, 0 };
	tl_fill_chunk *c = (tl_fill_chunk *)(block + 1);
	tl_fill_chunk *end =
		(tl_fill_chunk *)((uint8_t *)block + page->block_size);
	tl_fill_chunk diff = { 0, 0 };
	for (; c < end; c++) {
		diff |= *c ^ fill;
		*c = zero;
	}
	if (tl_unlikely((diff[0] | diff[1]) != 0) &&
	    tl_option(TL_OPT_secure_fill_check))
		tl_fatal("malloc", block,
			 "free block modified (write after free)");
	block->next = NULL;
}

void tl_secure_zero(const tl_page *page, tl_block *block)
{
	if (page->block_size <= TL_SECURE_FILL_MAX)
		memset(block, 0, page->block_size);
}
#endif
