/*
 * large.c - large blocks and growth.  --threads threads (default 2) each
 * run --iters rounds (default 20, quick 2) of two phases:
 * - blocks: malloc a block of each size 64 KiB, 96 KiB, 128 KiB, 192 KiB,
 *   ... 48 MiB, 64 MiB in turn, write one byte in every 4 KiB page, check
 *   them, free it.  Allocators that map and unmap every large block pay
 *   the page faults every round; those that keep them pay in memory.
 * - realloc: grow one buffer from 1 KiB to 64 MiB by 1/8 at a time, writing
 *   every new page and checking the old ones after each move, then free it.
 *
 * Checks: blocks are 16-byte aligned, every byte written is read back,
 * realloc kept the contents, every round ran.
 * Metrics: seconds (both phases, all threads), blocks_seconds and
 * realloc_seconds (summed over threads).
 */
#include "common.h"

#define PAGE 4096
#define KIB 1024UL
#define MIB (1024UL * 1024)
#define SMALLEST (64 * KIB)
#define LARGEST (64 * MIB)

struct worker {
	long rounds;
	long done;
	double blocks_secs, realloc_secs;
};

static unsigned char pattern(size_t i)
{
	return (unsigned char)(((i / PAGE) * 2654435761u) >> 24) ^ (i & 0xff);
}

static size_t page_up(size_t i)
{
	return (i + PAGE - 1) / PAGE * PAGE;
}

/* Write the first byte of every page in p[from..to), and byte to - 1. */
static void touch(unsigned char *p, size_t from, size_t to)
{
	for (size_t i = page_up(from); i < to; i += PAGE)
		p[i] = pattern(i);
	p[to - 1] = pattern(to - 1);
}

/* Check what touch(p, from, to) wrote. */
static void verify(const unsigned char *p, size_t from, size_t to)
{
	for (size_t i = page_up(from); i < to; i += PAGE)
		if (p[i] != pattern(i))
			bench_fail("block %p: byte %zu changed", (void *)p, i);
	if (p[to - 1] != pattern(to - 1))
		bench_fail("block %p: byte %zu changed", (void *)p, to - 1);
}

static unsigned char *checked_alloc(void *old, size_t n)
{
	unsigned char *p = (unsigned char *)realloc(old, n);

	if (!p)
		bench_fail("realloc(%p, %zu) returned NULL", old, n);
	if ((uintptr_t)p % 16)
		bench_fail("block %p of %zu bytes is not 16-byte aligned",
			   (void *)p, n);
	return p;
}

static void blocks_phase(void)
{
	for (size_t n = SMALLEST; n <= LARGEST; n *= 2) {
		size_t sizes[2] = { n, n + n / 2 };

		for (int k = 0; k < 2 && sizes[k] <= LARGEST; k++) {
			unsigned char *p = checked_alloc(NULL, sizes[k]);

			touch(p, 0, sizes[k]);
			verify(p, 0, sizes[k]);
			free(p);
		}
	}
}

static void realloc_phase(void)
{
	size_t n = KIB;
	unsigned char *p = checked_alloc(NULL, n);

	touch(p, 0, n);
	while (n < LARGEST) {
		size_t m = n + n / 8 < LARGEST ? n + n / 8 : LARGEST;

		p = checked_alloc(p, m);
		verify(p, 0, n);
		touch(p, n, m);
		n = m;
	}
	verify(p, 0, n);
	free(p);
}

static void *run(void *arg)
{
	struct worker *w = (struct worker *)arg;

	for (long r = 0; r < w->rounds; r++) {
		double t0 = bench_now();

		blocks_phase();
		w->blocks_secs += bench_now() - t0;
		t0 = bench_now();
		realloc_phase();
		w->realloc_secs += bench_now() - t0;
		w->done++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, iters = BENCH_UNSET;
	const struct bench_opt opts[] = {
		{ "--threads", "threads (default 2)", &threads, NULL },
		{ "--iters", "rounds per thread (default 20, quick 2)", &iters,
		  NULL },
		{ NULL, NULL, NULL, NULL },
	};
	struct worker *w;
	double t0, secs, blocks = 0, grow = 0;

	bench_parse(argc, argv, "Large blocks (64 KiB .. 64 MiB) and realloc "
		    "growing a buffer.", opts);
	bench_pick(&threads, 2, 2);
	bench_pick(&iters, 20, 2);
	bench_require(threads >= 1 && iters >= 1, argv[0],
		      "--threads and --iters must be >= 1");

	w = (struct worker *)calloc((size_t)threads, sizeof(*w));
	if (!w)
		bench_fail("calloc returned NULL");
	for (long t = 0; t < threads; t++)
		w[t].rounds = iters;

	t0 = bench_now();
	bench_run_threads(threads, run, w, sizeof(*w));
	secs = bench_now() - t0;

	for (long t = 0; t < threads; t++) {
		if (w[t].done != iters)
			bench_fail("thread %ld did %ld of %ld rounds", t,
				   w[t].done, iters);
		blocks += w[t].blocks_secs;
		grow += w[t].realloc_secs;
	}
	free(w);
	bench_metric("seconds", secs, "s");
	bench_metric("blocks_seconds", blocks, "s");
	bench_metric("realloc_seconds", grow, "s");
	return bench_check_ok();
}
