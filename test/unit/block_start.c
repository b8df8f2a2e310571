/*
 * block_start.c - the free fast path's test of a block start (internal.h,
 * tl_slice_offset_starts with tl_page.slice_magic and slice_limit) agrees
 * with a division, for every size class, every offset in a 64 KiB slice,
 * and carved parts of several lengths: a wrong answer would let an
 * interior pointer, or a block start past the carved part, through (or
 * reject a real block).  And tl_size_to_class gives every size up to
 * TL_MEDIUM_MAX the smallest class that holds it (malloc's generic path
 * and the class queues' path).  And another thread's sized free tests a
 * size against a page as the owner's does (tl_page_holds_size_remote).
 */
#include <stdio.h>

#include "tlmalloc/internal.h"

int main(void)
{
	unsigned long wrong = 0, tried = 0;
	for (unsigned cls = 1; cls < TL_CLASSES; cls++) {
		uint32_t bs = tl_class_size[cls];
		uint32_t magic = tl_slice_magic(bs);
		uint32_t in_slice = (uint32_t)((TL_SLICE_SIZE + bs - 1) / bs);
		/* carved: none, one, two, half the slice, all but the last
		 * block of the slice, the slice, and a whole medium page */
		uint32_t caps[] = { 0, 1, 2, in_slice / 2, in_slice - 1,
				    in_slice, (1u << 20) / bs };
		for (unsigned c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
			uint32_t cap = caps[c];
			uint32_t limit = tl_slice_limit(magic, bs, cap);
			for (uint32_t off = 0; off < TL_SLICE_SIZE;
			     off++, tried++) {
				bool want = off % bs == 0 && off / bs < cap;
				if (tl_slice_offset_starts(off, magic, limit) ==
				    want)
					continue;
				if (wrong++ < 10)
					fprintf(stderr, "class %u (%u bytes), "
						"%u carved: offset %u answered "
						"wrong\n", cls, bs, cap, off);
			}
		}
	}
	printf("%lu offsets tried, %lu answered wrong\n", tried, wrong);
	unsigned long misclassed = 0;
	for (size_t size = 0; size <= TL_MEDIUM_MAX; size++) {
		unsigned cls = tl_size_to_class(size);
		if (cls >= 1 && cls < TL_CLASSES && tl_class_size[cls] >= size &&
		    (cls == 1 || tl_class_size[cls - 1] < size))
			continue;
		if (misclassed++ < 10)
			fprintf(stderr, "size %zu: class %u\n", size, cls);
	}
	printf("%d sizes classed, %lu wrong\n", TL_MEDIUM_MAX + 1, misclassed);
	/* Another thread's sized free tests the size without block_size
	 * (tl_page_holds_size_remote): the same answer for every class, at
	 * every size up to twice the block, and sized_min anywhere. */
	unsigned long unequal = 0;
	for (unsigned cls = 1; cls < TL_CLASSES; cls++) {
		tl_page page = { 0 };
		page.block_size = tl_class_size[cls];
		page.div_magic = UINT64_MAX / page.block_size + 1;
		uint32_t mins[] = { 1, tl_class_min(cls), page.block_size };
		for (unsigned m = 0; m < 3; m++) {
			page.sized_min = mins[m];
			for (size_t size = 1; size <= 2 * page.block_size;
			     size++) {
				if (tl_page_holds_size_remote(&page, size) ==
				    tl_page_holds_size(&page, size))
					continue;
				if (unequal++ < 10)
					fprintf(stderr, "class %u, min %u: size "
						"%zu answered wrong\n", cls,
						mins[m], size);
			}
		}
	}
	printf("sizes against every class, %lu answered wrong\n", unequal);
	return wrong == 0 && misclassed == 0 && unequal == 0 ? 0 : 1;
}
