/*
 * fastpath.c - the allocator's fast path alone: one thread, --iters
 * malloc/free pairs (default 1e7, quick 1e6) of 64 bytes (--mix fixed) or of
 * 8 * ((i % 64) + 1) bytes (--mix mix, the default).  bench/fastpath.sh runs
 * it under callgrind at two lengths and divides the difference in
 * instructions by the difference in pairs: instructions per pair, with the
 * start-up cost cancelled out.
 *
 * Checks: no block is NULL and each keeps the byte written into it.
 * Metrics: seconds, ns_per_pair.
 */
#include "common.h"

static size_t size_of(int fixed, long i)
{
	return fixed ? 64 : 8 * ((i % 64) + 1);
}

int main(int argc, char **argv)
{
	long iters = BENCH_UNSET;
	const char *mix = "mix";
	const struct bench_opt opts[] = {
		{ "--iters", "malloc/free pairs (default 1e7, quick 1e6)",
		  &iters, NULL },
		{ "--mix", "fixed (64 bytes) or mix (8..512 bytes); default "
			   "mix", NULL, &mix },
		{ NULL, NULL, NULL, NULL },
	};
	int fixed;
	double t0, secs;

	bench_parse(argc, argv, "Single-threaded malloc/free pairs, for "
		    "counting the fast path's instructions.", opts);
	bench_pick(&iters, 10000000, 1000000);
	bench_require(!strcmp(mix, "fixed") || !strcmp(mix, "mix"), argv[0],
		      "--mix: fixed or mix");
	bench_require(iters >= 1, argv[0], "--iters must be >= 1");
	fixed = !strcmp(mix, "fixed");

	t0 = bench_now();
	for (long i = 0; i < iters; i++) {
		size_t n = size_of(fixed, i);
		char *p = (char *)bench_malloc(n);

		p[0] = (char)i;
		bench_escape(p);
		if (p[0] != (char)i)
			bench_fail("block %p lost the byte written into it",
				   (void *)p);
		free(p);
	}
	secs = bench_now() - t0;
	bench_metric("seconds", secs, "s");
	bench_metric("ns_per_pair", secs * 1e9 / iters, "ns");
	return bench_check_ok();
}
