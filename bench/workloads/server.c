/*
 * server.c - a server's allocation pattern, larson-style: a table of
 * --slots blocks per thread (default 1000), filled by the main thread, and
 * --threads threads (default 8) that each --iters times (default 5e6, quick
 * 5e5) allocate an object of 8..1000 bytes, swap it into a slot and free the
 * object it replaces.  A thread mostly picks slots of its own part of the
 * table, but --remote percent of the time (default 25) any slot, so many
 * objects are freed by a thread other than the one that allocated them.
 *
 * The swap is an atomic exchange: each object has one owner at a time.
 * Every object carries its size and a tag made from its address and size
 * in its first 8 bytes, and the tag's byte in its last byte.
 *
 * Checks: every object replaced, and every object left in the table at the
 * end, still holds its size and tags; the table ends full.
 * Metrics: seconds, ops_per_sec (replacements: one malloc + one free each).
 */
#include <stdatomic.h>

#include "common.h"

#define MIN_SIZE 8
#define MAX_SIZE 1000

struct head {
	uint32_t size;
	uint32_t tag;
};

struct worker {
	_Atomic(char *) *table;
	long slots;		/* in the whole table */
	long first, count;	/* this thread's own part */
	long iters;
	long remote;		/* percent */
	long done;
	uint32_t id;
};

static uint32_t tag_of(const char *p, uint32_t size)
{
	uint64_t x = (uintptr_t)p ^ (uint64_t)size << 48;

	return (uint32_t)(x * 0x9E3779B97F4A7C15ULL >> 32);
}

static char *make_object(uint64_t *rng)
{
	struct head h;
	char *p;

	h.size = (uint32_t)bench_between(rng, MIN_SIZE, MAX_SIZE);
	p = (char *)bench_malloc(h.size);
	h.tag = tag_of(p, h.size);
	memcpy(p, &h, sizeof(h));
	if (h.size > sizeof(h))
		p[h.size - 1] = (char)bench_tag_byte(h.tag);
	return p;
}

static void check_and_free(char *p)
{
	struct head h;

	if (!p)
		bench_fail("a slot of the table was empty");
	memcpy(&h, p, sizeof(h));
	if (h.size < MIN_SIZE || h.size > MAX_SIZE ||
	    h.tag != tag_of(p, h.size) ||
	    (h.size > sizeof(h) &&
	     p[h.size - 1] != (char)bench_tag_byte(h.tag)))
		bench_fail("object %p was overwritten", (void *)p);
	free(p);
}

static long pick_slot(const struct worker *w, uint64_t *rng)
{
	if ((long)(bench_rand(rng) % 100) < w->remote)
		return (long)(bench_rand(rng) % (uint64_t)w->slots);
	return w->first + (long)(bench_rand(rng) % (uint64_t)w->count);
}

static void *run(void *arg)
{
	struct worker *w = (struct worker *)arg;
	uint64_t rng = bench_seed(w->id);
	long done = 0;

	for (long i = 0; i < w->iters; i++) {
		char *fresh = make_object(&rng);
		long s = pick_slot(w, &rng);

		check_and_free(atomic_exchange(&w->table[s], fresh));
		done++;
	}
	w->done = done;	/* once: the workers' records share cache lines */
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = BENCH_UNSET, iters = BENCH_UNSET, per = BENCH_UNSET;
	long remote = BENCH_UNSET, slots, done = 0;
	const struct bench_opt opts[] = {
		{ "--threads", "threads (default 8)", &threads, NULL },
		{ "--iters", "replacements per thread (default 5e6, quick "
			     "5e5)", &iters, NULL },
		{ "--slots", "table slots per thread (default 1000)", &per,
		  NULL },
		{ "--remote", "percent of picks anywhere in the table "
			      "(default 25)", &remote, NULL },
		{ NULL, NULL, NULL, NULL },
	};
	_Atomic(char *) *table;
	struct worker *w;
	double t0, secs;
	uint64_t rng = bench_seed(~0u);

	bench_parse(argc, argv, "Threads replace objects of 8..1000 bytes in "
		    "a shared table (larson-style).", opts);
	bench_pick(&threads, 8, 8);
	bench_pick(&iters, 5000000, 500000);
	bench_pick(&per, 1000, 1000);
	bench_pick(&remote, 25, 25);
	bench_require(threads >= 1 && iters >= 1 && per >= 1, argv[0],
		      "--threads, --iters and --slots must be >= 1");
	bench_require(remote <= 100, argv[0], "--remote is a percentage");
	slots = threads * per;

	table = (_Atomic(char *) *)calloc((size_t)slots, sizeof(*table));
	w = (struct worker *)calloc((size_t)threads, sizeof(*w));
	if (!table || !w)
		bench_fail("calloc returned NULL");
	for (long s = 0; s < slots; s++)
		atomic_init(&table[s], make_object(&rng));
	for (long t = 0; t < threads; t++)
		w[t] = (struct worker){ table, slots, t * per, per, iters,
					remote, 0, (uint32_t)t };

	t0 = bench_now();
	bench_run_threads(threads, run, w, sizeof(*w));
	secs = bench_now() - t0;

	for (long t = 0; t < threads; t++)
		done += w[t].done;
	if (done != threads * iters)
		bench_fail("%ld of %ld replacements done", done,
			   threads * iters);
	for (long s = 0; s < slots; s++)
		check_and_free(atomic_load(&table[s]));
	free(table);
	free(w);
	bench_metric("seconds", secs, "s");
	bench_metric("ops_per_sec", done / secs, "ops/s");
	return bench_check_ok();
}
