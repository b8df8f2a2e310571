/*
 * rptest.c - random sizes over a working set with cross-thread frees, after
 * rpmalloc's benchmark: --threads threads (default 4) each keep a working
 * set of --set blocks (default 2000) of random sizes, uniform in 8 bytes ..
 * --max bytes (default 16 KiB), filled at the start.  A thread then makes
 * --iters replacements (default 5e6, quick 5e5): a random entry of its set
 * gets a new block, and the old one is freed, or, --cross percent of the
 * time (default 15), handed to the next thread, which frees it.  Handing
 * goes in batches of 32 through that thread's inbox (a mutex-protected
 * ring of 16384 pointers); a thread empties its own inbox every 64
 * replacements, and frees a batch itself when the inbox is full.
 *
 * Checks: every block carries its size and tags (common.h's stamp) and is
 * verified when it is freed, by its owner or by the thread it was handed
 * to; blocks allocated == blocks freed.
 * Metrics: seconds, ops_per_sec (replacements: one malloc + one free,
 * local or remote, each), cross_freed_pct (share of frees done by another
 * thread), live_max_kb and peak_over_live.  Each thread counts the bytes
 * it allocated less those it freed (the sizes asked for); every
 * DRAIN_EVERY replacements it adds up all threads' counts and keeps the
 * most: the program's own live data (working sets, batches and inboxes),
 * within a few DRAIN_EVERY replacements a thread.  How full the inboxes
 * get is the scheduler's choice as much as the allocator's (a thread that
 * is not running does not drain its own), so the peak RSS is read against
 * it.
 */
#include <stdatomic.h>
#include <sys/resource.h>

#include "common.h"

#define BATCH 32
#define INBOX 16384
#define DRAIN_EVERY 64

struct inbox {
	pthread_mutex_t lock;
	void *ring[INBOX];
	long head, count;
};

struct worker {
	struct inbox *in;	/* this thread's */
	struct inbox *next;	/* the next thread's */
	long set, iters, cross, max;
	uint32_t id;
	long allocated, freed, remote;	/* remote: frees of handed blocks */
	atomic_long live;	/* bytes this thread allocated less freed */
	long live_max;		/* the most all threads' counts came to */
	char pad[64];
};

static pthread_barrier_t all_done;
static struct worker *workers;
static long nworkers;

static void check_and_free(struct worker *w, void *p)
{
	size_t n = bench_stamp_checked(p, 8, (size_t)w->max);

	free(p);
	atomic_store_explicit(&w->live, atomic_load_explicit(&w->live,
			      memory_order_relaxed) - (long)n,
			      memory_order_relaxed);
}

static char *make_block(struct worker *w, uint64_t *rng)
{
	char *p = bench_stamped_block(rng, 8, (size_t)w->max);

	atomic_store_explicit(&w->live, atomic_load_explicit(&w->live,
			      memory_order_relaxed) +
			      (long)bench_stamped(p), memory_order_relaxed);
	return p;
}

/* All threads' live bytes now; w keeps the most it saw. */
static void note_live(struct worker *w)
{
	long sum = 0;

	for (long t = 0; t < nworkers; t++)
		sum += atomic_load_explicit(&workers[t].live,
					    memory_order_relaxed);
	if (sum > w->live_max)
		w->live_max = sum;
}

/* Hand n blocks to the next thread; 0 when its inbox had no room. */
static int hand(struct inbox *to, void **batch, long n)
{
	int ok;

	pthread_mutex_lock(&to->lock);
	ok = to->count + n <= INBOX;
	if (ok) {
		for (long i = 0; i < n; i++)
			to->ring[(to->head + to->count + i) % INBOX] = batch[i];
		to->count += n;
	}
	pthread_mutex_unlock(&to->lock);
	return ok;
}

/* Free what was handed to this thread. */
static void drain(struct worker *w)
{
	void *got[256];
	long n;

	do {
		pthread_mutex_lock(&w->in->lock);
		n = w->in->count < 256 ? w->in->count : 256;
		for (long i = 0; i < n; i++)
			got[i] = w->in->ring[(w->in->head + i) % INBOX];
		w->in->head = (w->in->head + n) % INBOX;
		w->in->count -= n;
		pthread_mutex_unlock(&w->in->lock);
		for (long i = 0; i < n; i++)
			check_and_free(w, got[i]);
		w->freed += n;
		w->remote += n;
	} while (n == 256);
}

static void *run(void *arg)
{
	struct worker *w = (struct worker *)arg;
	uint64_t rng = bench_seed(w->id);
	char **set = (char **)bench_malloc((size_t)w->set * sizeof(*set));
	void *batch[BATCH];
	long batched = 0;

	for (long i = 0; i < w->set; i++)
		set[i] = make_block(w, &rng);
	w->allocated += w->set;
	for (long i = 0; i < w->iters; i++) {
		long s = (long)(bench_rand(&rng) % (uint64_t)w->set);
		char *old = set[s];

		set[s] = make_block(w, &rng);
		w->allocated++;
		if ((long)(bench_rand(&rng) % 100) < w->cross) {
			batch[batched++] = old;
			if (batched == BATCH) {
				if (!hand(w->next, batch, batched)) {
					for (long b = 0; b < batched; b++)
						check_and_free(w, batch[b]);
					w->freed += batched;
				}
				batched = 0;
			}
		} else {
			check_and_free(w, old);
			w->freed++;
		}
		if (i % DRAIN_EVERY == 0) {
			note_live(w);
			drain(w);
		}
	}
	note_live(w);
	for (long b = 0; b < batched; b++)
		check_and_free(w, batch[b]);
	w->freed += batched;
	for (long i = 0; i < w->set; i++)
		check_and_free(w, set[i]);
	w->freed += w->set;
	free(set);
	/* Nothing is handed on after every thread got here. */
	pthread_barrier_wait(&all_done);
	drain(w);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, iters = BENCH_UNSET, set = BENCH_UNSET;
	long cross = BENCH_UNSET, max = BENCH_UNSET;
	long allocated = 0, freed = 0, remote = 0, live_max = 0;
	struct rusage ru;
	const struct bench_opt opts[] = {
		{ "--threads", "threads (default 4)", &threads, NULL },
		{ "--iters", "replacements per thread (default 5e6, quick "
			     "5e5)", &iters, NULL },
		{ "--set", "working-set blocks per thread (default 2000)", &set,
		  NULL },
		{ "--max", "largest block in bytes (default 16384)", &max,
		  NULL },
		{ "--cross", "percent of old blocks handed to the next thread "
			     "(default 15)", &cross, NULL },
		{ NULL, NULL, NULL, NULL },
	};
	struct inbox *boxes;
	struct worker *w;
	double t0, secs;

	bench_parse(argc, argv, "Threads replace random entries of working "
		    "sets of 8 B..16 KiB blocks, handing some to another "
		    "thread to free (rpmalloc's benchmark).", opts);
	bench_pick(&threads, 4, 4);
	bench_pick(&iters, 5000000, 500000);
	bench_pick(&set, 2000, 2000);
	bench_pick(&max, 16384, 16384);
	bench_pick(&cross, 15, 15);
	bench_require(threads >= 1 && iters >= 1 && set >= 1, argv[0],
		      "--threads, --iters and --set must be >= 1");
	bench_require(max >= 8 && max <= 1L << 30, argv[0],
		      "--max is 8 .. 2^30");
	bench_require(cross <= 100, argv[0], "--cross is a percentage");

	boxes = (struct inbox *)calloc((size_t)threads, sizeof(*boxes));
	w = (struct worker *)calloc((size_t)threads, sizeof(*w));
	if (!boxes || !w)
		bench_fail("calloc returned NULL");
	for (long t = 0; t < threads; t++) {
		pthread_mutex_init(&boxes[t].lock, NULL);
		w[t].in = &boxes[t];
		w[t].next = &boxes[(t + 1) % threads];
		w[t].set = set;
		w[t].iters = iters;
		w[t].cross = cross;
		w[t].max = max;
		w[t].id = (uint32_t)t;
		atomic_init(&w[t].live, 0);
	}
	workers = w;
	nworkers = threads;
	pthread_barrier_init(&all_done, NULL, (unsigned)threads);

	t0 = bench_now();
	bench_run_threads(threads, run, w, sizeof(*w));
	secs = bench_now() - t0;

	for (long t = 0; t < threads; t++) {
		allocated += w[t].allocated;
		freed += w[t].freed;
		remote += w[t].remote;
		if (w[t].live_max > live_max)
			live_max = w[t].live_max;
		if (boxes[t].count)
			bench_fail("inbox %ld not empty at the end", t);
	}
	if (allocated != threads * (iters + set) || freed != allocated)
		bench_fail("%ld blocks allocated and %ld freed, expected %ld",
			   allocated, freed, threads * (iters + set));
	pthread_barrier_destroy(&all_done);
	for (long t = 0; t < threads; t++)
		pthread_mutex_destroy(&boxes[t].lock);
	free(boxes);
	free(w);
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		bench_fail("getrusage failed");
	bench_metric("seconds", secs, "s");
	bench_metric("ops_per_sec", threads * iters / secs, "ops/s");
	bench_metric("cross_freed_pct", 100.0 * remote / freed, "%");
	bench_metric("live_max_kb", live_max / 1024.0, "KiB");
	bench_metric("peak_over_live",
		     (double)ru.ru_maxrss / (live_max / 1024.0), "x");
	return bench_check_ok();
}
