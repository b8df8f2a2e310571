/*
 * mlarge.c - large buffers, after Google's malloc-large benchmark: one
 * thread keeps --buffers buffers (default 20) and makes --iters
 * replacements (default 2000, quick 200): a random buffer is freed and
 * replaced by a new one of 5..25 MiB (uniform, any byte count).
 *
 * Each new buffer is used as a program would use a buffer it asked for:
 * one byte is written in every 4 KiB page, and its first and last bytes,
 * so every page of it becomes resident (a buffer nobody writes costs an
 * allocator nothing, which would measure only the bookkeeping).  Writing
 * one byte a page rather than all of it keeps the time on what the
 * allocator decides (fresh pages from the kernel, with their faults and
 * zeroing, or reused ones) instead of on memset.
 *
 * Checks: before it is freed, every buffer still holds its size and tags
 * (common.h's stamp) and the byte written in each of its pages.
 * Metrics: seconds, ops_per_sec (replacements), ns_per_page (per 4 KiB
 * page written).
 */
#include "common.h"

#define MIN_SIZE (5L << 20)
#define MAX_SIZE (25L << 20)
#define PAGE 4096

struct buffer {
	unsigned char *p;
	size_t n;
};

static unsigned char page_byte(const unsigned char *p, size_t page)
{
	return (unsigned char)(((uintptr_t)p >> 12) + page * 7 + 1);
}

static long make_buffer(struct buffer *b, uint64_t *rng)
{
	long pages = 0;

	b->n = bench_between(rng, MIN_SIZE, MAX_SIZE);
	b->p = (unsigned char *)bench_malloc(b->n);
	/* Page k's byte at offset 64 of it, clear of the stamp's bytes. */
	for (size_t off = 64; off < b->n - 1; off += PAGE, pages++)
		b->p[off] = page_byte(b->p, off / PAGE);
	bench_stamp(b->p, b->n);
	return pages;
}

static void check_and_free(struct buffer *b)
{
	if (bench_stamped(b->p) != b->n)
		bench_fail("buffer %p of %zu bytes was overwritten",
			   (void *)b->p, b->n);
	for (size_t off = 64; off < b->n - 1; off += PAGE)
		if (b->p[off] != page_byte(b->p, off / PAGE) &&
		    off != b->n / 2)
			bench_fail("page %zu of buffer %p was overwritten",
				   off / PAGE, (void *)b->p);
	free(b->p);
	b->p = NULL;
}

int main(int argc, char **argv)
{
	long iters = BENCH_UNSET, count = BENCH_UNSET, pages = 0;
	const struct bench_opt opts[] = {
		{ "--iters", "replacements (default 2000, quick 200)", &iters,
		  NULL },
		{ "--buffers", "buffers kept (default 20)", &count, NULL },
		{ NULL, NULL, NULL, NULL },
	};
	struct buffer *bufs;
	uint64_t rng = bench_seed(7);
	double t0, secs;

	bench_parse(argc, argv, "Buffers of 5..25 MiB, written once a page, "
		    "replaced at random (Google's malloc-large).", opts);
	bench_pick(&iters, 2000, 200);
	bench_pick(&count, 20, 20);
	bench_require(iters >= 1 && count >= 1, argv[0],
		      "--iters and --buffers must be >= 1");
	bufs = (struct buffer *)calloc((size_t)count, sizeof(*bufs));
	if (!bufs)
		bench_fail("calloc returned NULL");

	t0 = bench_now();
	for (long i = 0; i < count; i++)
		pages += make_buffer(&bufs[i], &rng);
	for (long i = 0; i < iters; i++) {
		struct buffer *b = &bufs[bench_rand(&rng) % (uint64_t)count];

		check_and_free(b);
		pages += make_buffer(b, &rng);
	}
	for (long i = 0; i < count; i++)
		check_and_free(&bufs[i]);
	secs = bench_now() - t0;

	free(bufs);
	bench_metric("seconds", secs, "s");
	bench_metric("ops_per_sec", iters / secs, "ops/s");
	bench_metric("ns_per_page", secs * 1e9 / pages, "ns");
	return bench_check_ok();
}
