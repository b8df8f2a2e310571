/*
 * containers.cc - C++ containers with random sizes: --threads threads
 * (default 4) share --iters vectors; each thread
 * builds std::vector<int>s of random length 1..--max (default 100) by
 * push_back, values and lengths drawn from
 *   --rand std    std::rand(), whose lock in glibc and musl serialises the
 *                 threads and can hide the allocator's cost, or
 *   --rand local  a thread-local generator, so the allocator's cost shows,
 * sums each one and drops it.  Built twice, as containers_O0 (-O0) and
 * containers_O3 (-O3): unoptimised code spends its time elsewhere.
 * --iters defaults to 2e6 (quick 2e5) with --rand std and to three times
 * that with --rand local, which runs that much faster.
 *
 * Checks: every vector has the length drawn and sums to the values pushed;
 * the threads built all the vectors.  Metrics: seconds, ops_per_sec
 * (vectors built and dropped per second).
 */
#include <cstdlib>
#include <random>
#include <vector>

#include "common.h"

struct worker {
	long vectors;
	long max_len;
	unsigned id;
	long built;
	long elements;
};

static bool use_std_rand;
static thread_local std::minstd_rand local_gen;

static long draw()
{
	return use_std_rand ? std::rand() : (long)local_gen();
}

/* Build one vector of random length, check it, drop it. */
static long one_vector(long max_len)
{
	long len = draw() % max_len + 1;
	long long sum = 0;
	std::vector<int> v;

	for (long k = 0; k < len; k++) {
		int x = (int)(draw() & 0xffff);

		v.push_back(x);
		sum += x;
	}
	long long got = 0;
	for (int x : v)
		got += x;
	if ((long)v.size() != len || got != sum)
		bench_fail("vector of %ld ints came back with %zu summing to "
			   "%lld, not %lld", len, v.size(), got, sum);
	return len;
}

static void *run(void *arg)
{
	worker *w = (worker *)arg;

	local_gen.seed(w->id + 1);
	for (long i = 0; i < w->vectors; i++) {
		w->elements += one_vector(w->max_len);
		w->built++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, iters = BENCH_UNSET, max_len = BENCH_UNSET;
	const char *rand_kind = "std";
	const bench_opt opts[] = {
		{ "--threads", "threads (default 4)", &threads, NULL },
		{ "--iters", "vectors in all (default 2e6, quick 2e5; three "
			     "times that with --rand local)", &iters, NULL },
		{ "--max", "longest vector (default 100)", &max_len, NULL },
		{ "--rand", "std (std::rand) or local (thread-local "
			    "generator); default std", NULL, &rand_kind },
		{ NULL, NULL, NULL, NULL },
	};

	bench_parse(argc, argv, "std::vector<int>s of random length built and "
		    "dropped in parallel.", opts);
	bench_require(!strcmp(rand_kind, "std") || !strcmp(rand_kind, "local"),
		      argv[0], "--rand: std or local");
	use_std_rand = !strcmp(rand_kind, "std");
	long scale = use_std_rand ? 1 : 3;
	bench_pick(&threads, 4, 4);
	bench_pick(&iters, 2000000 * scale, 200000 * scale);
	bench_pick(&max_len, 100, 100);
	bench_require(threads >= 1 && iters >= 1 && max_len >= 1, argv[0],
		      "--threads, --iters and --max must be >= 1");

	std::vector<worker> w(threads);
	for (long t = 0; t < threads; t++)
		w[t] = worker{ iters / threads + (t < iters % threads), max_len,
			       (unsigned)t, 0, 0 };

	double t0 = bench_now();
	bench_run_threads(threads, run, w.data(), sizeof(worker));
	double secs = bench_now() - t0;

	long built = 0, elements = 0;
	for (const worker &x : w) {
		built += x.built;
		elements += x.elements;
	}
	if (built != iters)
		bench_fail("%ld of %ld vectors built", built, iters);
	bench_metric("seconds", secs, "s");
	bench_metric("ops_per_sec", built / secs, "ops/s");
	bench_metric("elements", (double)elements, "ints");
	return bench_check_ok();
}
