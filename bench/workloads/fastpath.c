/*
 * fastpath.c - the allocator's fast path alone: one thread, --iters
 * malloc/free pairs (default 1e7, quick 1e6) of 64 bytes (--mix fixed) or of
 * 8 * ((i % 64) + 1) bytes (--mix mix, the default); or C++ operator new of
 * 64 bytes with operator delete (--mix new) or the sized operator delete
 * (--mix sized), called by their mangled names (the preloaded allocator's,
 * else libstdc++'s, which the program links).  bench/fastpath.sh runs
 * it under callgrind at two lengths and divides the difference in
 * instructions by the difference in pairs: instructions per pair, with the
 * start-up cost cancelled out.
 *
 * The timed loop is the pair and nothing else (a NULL check, and a compiler
 * barrier so the pair is not optimised away): what the count measures is
 * the allocator, plus the few instructions of the loop itself, the same
 * for every allocator.  Separate loops for the two mixes keep the choice out.
 *
 * Checks: no block is NULL; afterwards, blocks of every size of the mix keep
 * a pattern written into them.
 * Metrics: seconds, ns_per_pair.
 */
#include "common.h"

static void run_fixed(long iters)
{
	for (long i = 0; i < iters; i++) {
		void *p = malloc(64);

		if (p == NULL)
			bench_fail("malloc(64) returned NULL");
		bench_escape(p);
		free(p);
	}
}

static void run_mix(long iters)
{
	for (long i = 0; i < iters; i++) {
		size_t n = 8 * ((i % 64) + 1);
		void *p = malloc(n);

		if (p == NULL)
			bench_fail("malloc(%zu) returned NULL", n);
		bench_escape(p);
		free(p);
	}
}

void *_Znwm(size_t n);
void _ZdlPv(void *p);
void _ZdlPvm(void *p, size_t n);

static void run_new(long iters)
{
	for (long i = 0; i < iters; i++) {
		void *p = _Znwm(64);

		bench_escape(p);
		_ZdlPv(p);
	}
}

static void run_sized(long iters)
{
	for (long i = 0; i < iters; i++) {
		void *p = _Znwm(64);

		bench_escape(p);
		_ZdlPvm(p, 64);
	}
}

/* Blocks of every size of the mix, live at once, keep their contents. */
static void check_blocks(void)
{
	char *p[64];

	for (int i = 0; i < 64; i++) {
		p[i] = (char *)bench_malloc(8 * (i + 1));
		memset(p[i], i, 8 * (i + 1));
	}
	for (int i = 0; i < 64; i++) {
		for (int k = 0; k < 8 * (i + 1); k++)
			if (p[i][k] != (char)i)
				bench_fail("block %p of %d bytes lost its "
					   "contents", (void *)p[i], 8 * (i + 1));
		free(p[i]);
	}
}

int main(int argc, char **argv)
{
	long iters = BENCH_UNSET;
	const char *mix = "mix";
	const struct bench_opt opts[] = {
		{ "--iters", "malloc/free pairs (default 1e7, quick 1e6)",
		  &iters, NULL },
		{ "--mix", "fixed (64 bytes), mix (8..512 bytes), new or "
			   "sized (C++ new and delete of 64 bytes); default "
			   "mix", NULL, &mix },
		{ NULL, NULL, NULL, NULL },
	};
	double t0, secs;

	bench_parse(argc, argv, "Single-threaded malloc/free pairs, for "
		    "counting the fast path's instructions.", opts);
	bench_pick(&iters, 10000000, 1000000);
	bench_require(!strcmp(mix, "fixed") || !strcmp(mix, "mix") ||
		      !strcmp(mix, "new") || !strcmp(mix, "sized"), argv[0],
		      "--mix: fixed, mix, new or sized");
	bench_require(iters >= 1, argv[0], "--iters must be >= 1");

	t0 = bench_now();
	if (!strcmp(mix, "fixed"))
		run_fixed(iters);
	else if (!strcmp(mix, "new"))
		run_new(iters);
	else if (!strcmp(mix, "sized"))
		run_sized(iters);
	else
		run_mix(iters);
	secs = bench_now() - t0;
	check_blocks();
	bench_metric("seconds", secs, "s");
	bench_metric("ns_per_pair", secs * 1e9 / iters, "ns");
	return bench_check_ok();
}
