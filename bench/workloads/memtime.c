/*
 * memtime.c - memory over time: does RSS stay bounded under a long
 * producer/consumer run, and is it given back once the program goes idle?
 *
 * --pairs producer/consumer pairs (default 2; --threads N = N/2 pairs) pass
 * --iters blocks per pair (default 5e7, quick 2e6) through a ring of 10240
 * slots, 1024 at a time, as prodcons does.  The sizes change by quarter of
 * the run: 16..512 bytes, then 512..16384, then small, then large again, so
 * memory freed in one size range must be reused for the other.  A sampler
 * thread reads RSS from /proc every 100 ms.  Then all threads are joined and
 * the program idles --idle seconds (default 2, quick 1) calling nothing in
 * the allocator, and reads RSS once more.  Output is printed only at the
 * end, so that stdio allocates nothing while it is measured.
 *
 * Checks: every block holds its tag when freed; every pair moved all its
 * blocks; the sampler took at least one sample.
 * Metrics: seconds (busy phase), rss_max_kb, rss_last_busy_kb (the last
 * sample of the busy phase), rss_idle_kb, live_max_kb and peak_over_live
 * (pairs.h: the most the rings held, and the peak RSS over it); lines
 * "sample <s> <kb>" list the samples (not read by the harness).
 */
#include <stdatomic.h>

#include "pairs.h"

#define MAX_SAMPLES 100000
#define SAMPLE_NS 100000000L

static struct {
	atomic_int stop;
	long count;
	double t0;
	double when[MAX_SAMPLES];
	long kb[MAX_SAMPLES];
} samples;

/* Quarters 0 and 2 small blocks, 1 and 3 large ones. */
static size_t pick_size(struct pair *pr, long round, long j)
{
	(void)j;
	if (round * 4 / pr->rounds % 2 == 0)
		return bench_between(&pr->rng, 16, 512);
	return bench_between(&pr->rng, 512, 16384);
}

/* Every 100 ms until told to stop: RSS into samples; no allocator calls. */
static void *sampler(void *arg)
{
	struct timespec tick = { 0, SAMPLE_NS };

	(void)arg;
	while (!atomic_load(&samples.stop) && samples.count < MAX_SAMPLES) {
		samples.when[samples.count] = bench_now() - samples.t0;
		samples.kb[samples.count] = bench_rss_kb();
		samples.count++;
		nanosleep(&tick, NULL);
	}
	return NULL;
}

static void report(double secs, long idle_kb)
{
	long max_kb = 0;

	for (long i = 0; i < samples.count; i++) {
		printf("sample %.2f %ld\n", samples.when[i], samples.kb[i]);
		max_kb = samples.kb[i] > max_kb ? samples.kb[i] : max_kb;
	}
	bench_metric("seconds", secs, "s");
	bench_metric("rss_max_kb", (double)max_kb, "KiB");
	bench_metric("rss_last_busy_kb", (double)samples.kb[samples.count - 1],
		     "KiB");
	bench_metric("rss_idle_kb", (double)idle_kb, "KiB");
}

int main(int argc, char **argv)
{
	long npairs = BENCH_UNSET, threads = BENCH_UNSET, iters = BENCH_UNSET;
	long idle = BENCH_UNSET, rounds;
	const struct bench_opt opts[] = {
		{ "--pairs", "producer/consumer pairs (default 2)", &npairs,
		  NULL },
		{ "--threads", "threads, two per pair (default 4)", &threads,
		  NULL },
		{ "--iters", "allocations per pair (default 5e7, quick 2e6)",
		  &iters, NULL },
		{ "--idle", "seconds idle at the end (default 2, quick 1)",
		  &idle, NULL },
		{ NULL, NULL, NULL, NULL },
	};
	struct pair *pairs;
	pthread_t tid;
	double secs;

	bench_parse(argc, argv, "RSS over a long producer/consumer run, then "
		    "idle.", opts);
	if (npairs == BENCH_UNSET && threads != BENCH_UNSET)
		npairs = threads / 2;
	bench_pick(&npairs, 2, 2);
	bench_pick(&iters, 50000000, 2000000);
	bench_pick(&idle, 2, 1);
	bench_require(npairs >= 1, argv[0], "need at least one pair");
	bench_require(threads == BENCH_UNSET || threads == 2 * npairs, argv[0],
		      "--threads must be even and twice --pairs");
	bench_require(iters >= 4 * BATCH, argv[0], "--iters must be >= 4096");
	rounds = (iters + BATCH - 1) / BATCH;

	pairs = pairs_new(npairs, rounds, pick_size);

	samples.t0 = bench_now();
	if (pthread_create(&tid, NULL, sampler, NULL))
		bench_fail("pthread_create failed for the sampler");
	pairs_run(pairs, npairs);
	secs = bench_now() - samples.t0;
	atomic_store(&samples.stop, 1);
	pthread_join(tid, NULL);

	sleep((unsigned)idle);
	long idle_kb = bench_rss_kb();

	pairs_check(pairs, npairs);
	if (samples.count < 1)
		bench_fail("no RSS sample was taken");
	free(pairs);
	report(secs, idle_kb);
	pairs_report_live();
	return bench_check_ok();
}
