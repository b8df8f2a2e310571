/*
 * sizeclass.c - the size classes.
 *
 * 16 to 128 bytes by steps of 16, then four classes per doubling up to
 * TL_MEDIUM_MAX (160, 192, 224, 256, 320, ...).  The worst rounding is
 * 1 - 129/160 (19%) just above a power of two; every class is a multiple
 * of 16 (so every block is 16-aligned), and a class of 2^k * 5, 6, 7 or 8
 * is a multiple of 2^k, which the aligned family uses to find a class
 * whose blocks all fall on the alignment asked for.
 * Classes up to TL_SMALL_MAX live in 64 KiB pages, the rest in 1 MiB pages.
 */
#include "tlmalloc/internal.h"

#define GROUP(b) \
	(1u << (b)) + (1u << ((b) - 2)), (1u << (b)) + (2u << ((b) - 2)), \
	(1u << (b)) + (3u << ((b) - 2)), (2u << (b))

const uint32_t tl_class_size[TL_CLASSES] = {
	0, 16, 32, 48, 64, 80, 96, 112, 128,
	GROUP(7), GROUP(8), GROUP(9), GROUP(10), GROUP(11),
	GROUP(12), GROUP(13), GROUP(14), GROUP(15), GROUP(16),
};

_Static_assert(TL_MEDIUM_MAX == (2u << 16), "last class is TL_MEDIUM_MAX");

/* tl_size_to_class is inline, in internal.h. */
