/*
 * batches.c - batches freed in FIFO and LIFO order, after glibc's
 * bench-malloc-simple: for each batch length n of 25, 50, 100, 200, 400,
 * 800 and 1600 blocks of --size bytes (16, 32 or 64; default 32), a thread
 * allocates n blocks, writes every byte of each, then frees the first half
 * in allocation order and the rest in reverse order, and does that again
 * until it has made --iters blocks (default 5e6, quick 5e5) for this n.
 * The whole sequence runs in three phases: in the main thread before any
 * other thread exists, in a second thread, then in the main thread again
 * after that thread was joined (an allocator may switch to a slower
 * multi-threaded path for good once a second thread appeared).
 *
 * Checks: every block still holds its bytes (first, middle and last
 * checked) when it is freed; every phase made all its pairs.
 * Metrics: seconds (the three phases), and per phase ns per malloc+free
 * pair (writing the block included): ns_per_pair_main, ns_per_pair_thread,
 * ns_per_pair_main_after.
 */
#include "common.h"

#define MAX_BATCH 1600

static const long batch_lengths[] = { 25, 50, 100, 200, 400, 800, 1600 };
#define LENGTHS (sizeof(batch_lengths) / sizeof(batch_lengths[0]))

struct phase {
	size_t size;
	long iters;
	long pairs;
	double secs;
	unsigned char seed;
};

static void check_and_free(unsigned char *p, size_t size, unsigned char v)
{
	if (p[0] != v || p[size / 2] != v || p[size - 1] != v)
		bench_fail("block %p of a batch was overwritten", (void *)p);
	free(p);
}

static void *run(void *arg)
{
	struct phase *ph = (struct phase *)arg;
	unsigned char *blocks[MAX_BATCH];
	double t0 = bench_now();

	for (size_t l = 0; l < LENGTHS; l++) {
		long n = batch_lengths[l];

		for (long done = 0; done < ph->iters; done += n) {
			unsigned char v = (unsigned char)(ph->seed + done);

			for (long i = 0; i < n; i++) {
				blocks[i] = (unsigned char *)
					bench_malloc(ph->size);
				memset(blocks[i], v, ph->size);
			}
			bench_escape(blocks);
			for (long i = 0; i < n / 2; i++)
				check_and_free(blocks[i], ph->size, v);
			for (long i = n - 1; i >= n / 2; i--)
				check_and_free(blocks[i], ph->size, v);
			ph->pairs += n;
		}
	}
	ph->secs = bench_now() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	long size = BENCH_UNSET, iters = BENCH_UNSET;
	const struct bench_opt opts[] = {
		{ "--size", "block size, 16, 32 or 64 (default 32)", &size,
		  NULL },
		{ "--iters", "blocks per batch length and phase (default 5e6, "
			     "quick 5e5)", &iters, NULL },
		{ NULL, NULL, NULL, NULL },
	};
	const char *keys[3] = { "ns_per_pair_main", "ns_per_pair_thread",
				"ns_per_pair_main_after" };
	struct phase ph[3];
	long expected = 0;
	pthread_t tid;
	double secs = 0;

	bench_parse(argc, argv, "Batches of 25..1600 blocks freed half in "
		    "order, half in reverse, in the main thread, in a thread, "
		    "and in the main thread again (glibc's "
		    "bench-malloc-simple).", opts);
	bench_pick(&size, 32, 32);
	bench_pick(&iters, 5000000, 500000);
	bench_require(size == 16 || size == 32 || size == 64, argv[0],
		      "--size is 16, 32 or 64");
	bench_require(iters >= 1, argv[0], "--iters must be >= 1");
	for (size_t l = 0; l < LENGTHS; l++)
		expected += (iters + batch_lengths[l] - 1) / batch_lengths[l]
			    * batch_lengths[l];

	for (int i = 0; i < 3; i++)
		ph[i] = (struct phase){ (size_t)size, iters, 0, 0,
					(unsigned char)(i * 85 + 1) };
	run(&ph[0]);
	if (pthread_create(&tid, NULL, run, &ph[1]))
		bench_fail("pthread_create failed");
	pthread_join(tid, NULL);
	run(&ph[2]);

	for (int i = 0; i < 3; i++) {
		if (ph[i].pairs != expected)
			bench_fail("phase %d made %ld pairs, expected %ld", i,
				   ph[i].pairs, expected);
		secs += ph[i].secs;
	}
	bench_metric("seconds", secs, "s");
	for (int i = 0; i < 3; i++)
		bench_metric(keys[i], ph[i].secs * 1e9 / ph[i].pairs, "ns");
	return bench_check_ok();
}
