/*
 * block_start.c - the free fast path's test of a block start (internal.h,
 * tl_slice_offset_starts with tl_page.slice_magic) agrees with a division,
 * for every size class and every offset in a 64 KiB slice: a wrong answer
 * would let an interior pointer through (or reject a real block).
 */
#include <stdio.h>

#include "tlmalloc/internal.h"

int main(void)
{
	unsigned long wrong = 0, tried = 0;
	for (unsigned cls = 1; cls < TL_CLASSES; cls++) {
		uint32_t bs = tl_class_size[cls];
		uint32_t magic = tl_slice_magic(bs);
		for (uint32_t off = 0; off < TL_SLICE_SIZE; off++, tried++) {
			if (tl_slice_offset_starts(off, magic) == (off % bs == 0))
				continue;
			if (wrong++ < 10)
				fprintf(stderr, "class %u (%u bytes): offset "
					"%u answered wrong\n", cls, bs, off);
		}
	}
	printf("%lu offsets tried, %lu answered wrong\n", tried, wrong);
	return wrong == 0 ? 0 : 1;
}
