/*
 * teardown.c - allocation while threads and the process are going away.
 *
 * dtor_allocates_after_teardown: threads whose pthread keys have
 * destructors that malloc, realloc and free.  The destructors re-arm their
 * key, so they run in every round of thread-exit destructors, also after
 * tlmalloc's own destructor has handed the thread's heap back; each round
 * leaves a block behind that the main thread checks and frees later.  Many
 * such threads run WINDOW at a time; fails on a crash, on damage, or when
 * the memory held keeps growing (a heap set up again after the thread's
 * teardown and never handed back).
 *
 * freed_after_owner_exit: a thread fills blocks of many size classes
 * (partly filled pages), frees some and exits; another thread checks and
 * frees the rest while allocating (adopting the dead thread's pages), and
 * the main thread frees what that thread leaves.
 *
 * exit_while_allocating: exit() (atexit handlers and destructors that
 * allocate) while other threads keep allocating; the process must exit 0.
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>
#include "alloc_api.h"
#include "check.h"
#include "held.h"

#define MIB ((unsigned long)1 << 20)
#define WINDOW 4
#define SAMPLE_EVERY 250
#define BASELINE_AT 500
#define SLACK (16 * MIB)
#define KEEP_MAX 64

#ifdef TL_TEST_TSAN
#define DTOR_THREADS 800
#else
#define DTOR_THREADS 2000
#endif

/* Blocks left behind by destructors, freed by the main thread. */
struct kept {
	void *p;
	size_t n;
	uint64_t tag;
};

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept kept[KEEP_MAX * WINDOW * 8];
static size_t kept_len;

static void keep(void *p, size_t n, uint64_t tag)
{
	pthread_mutex_lock(&kept_lock);
	CHECK(kept_len < sizeof(kept) / sizeof(kept[0]));
	kept[kept_len].p = p;
	kept[kept_len].n = n;
	kept[kept_len].tag = tag;
	kept_len++;
	pthread_mutex_unlock(&kept_lock);
}

static void free_kept(void)
{
	size_t i;

	pthread_mutex_lock(&kept_lock);
	for (i = 0; i < kept_len; i++) {
		CHECKF(pattern_find_damage(kept[i].p, kept[i].n, kept[i].tag) ==
		       kept[i].n, "block of %zu bytes left by a destructor "
		       "damaged", kept[i].n);
		T_FREE(kept[i].p);
	}
	kept_len = 0;
	pthread_mutex_unlock(&kept_lock);
}

static pthread_key_t early_key, late_key;

/* malloc, realloc, calloc and free; leave one block for the main thread. */
static void dtor_work(uintptr_t round)
{
	size_t n = 24 + round * 1000;
	unsigned char *p = T_MALLOC(n);
	void *q = T_CALLOC(round + 1, 512);
	void *big = T_MALLOC(100000);

	CHECK(p != NULL && q != NULL && big != NULL);
	pattern_fill(p, n, round);
	p = T_REALLOC(p, n * 4);
	CHECK(p != NULL && pattern_find_damage(p, n, round) == n);
	pattern_fill(p, n * 4, round + 7);
	T_FREE(q);
	T_FREE(big);
	keep(p, n * 4, round + 7);
}

/*
 * ThreadSanitizer finalises a thread in the last round of destructors, and
 * a destructor that runs after that crashes inside the sanitizer: under
 * TSan the destructors stop one round early (still after tlmalloc's own).
 */
#ifdef TL_TEST_TSAN
#define DTOR_ROUNDS (PTHREAD_DESTRUCTOR_ITERATIONS - 1)
#else
#define DTOR_ROUNDS PTHREAD_DESTRUCTOR_ITERATIONS
#endif

static void dtor(pthread_key_t key, void *value)
{
	uintptr_t round = (uintptr_t)value;

	dtor_work(round);
	if (round < DTOR_ROUNDS)
		CHECK(pthread_setspecific(key, (void *)(round + 1)) == 0);
}

static void early_dtor(void *value)
{
	dtor(early_key, value);
}

static void late_dtor(void *value)
{
	dtor(late_key, value);
}

/* Created before main: possibly before tlmalloc creates its own key. */
__attribute__((constructor(101))) static void make_early_key(void)
{
	CHECK(pthread_key_create(&early_key, early_dtor) == 0);
}

static void *dtor_thread(void *arg)
{
	void *p = T_MALLOC(64);

	CHECK(p != NULL);
	T_FREE(p);
	CHECK(pthread_setspecific(early_key, (void *)1) == 0);
	CHECK(pthread_setspecific(late_key, (void *)1) == 0);
	return arg;
}

static void dtor_allocates_after_teardown(void)
{
	pthread_t t[WINDOW];
	unsigned long baseline = 0;
	size_t k;
	int i;

	CHECK(pthread_key_create(&late_key, late_dtor) == 0);
	for (k = 0; k < DTOR_THREADS; k += WINDOW) {
		for (i = 0; i < WINDOW; i++)
			CHECK(pthread_create(&t[i], NULL, dtor_thread,
					     NULL) == 0);
		for (i = 0; i < WINDOW; i++)
			CHECK(pthread_join(t[i], NULL) == 0);
		free_kept();
		if (k % SAMPLE_EVERY == 0)
			check_held(k, BASELINE_AT, SLACK, &baseline);
	}
	printf("held %lu bytes after %d threads, %lu after %d\n", baseline,
	       BASELINE_AT, get_data_segment_size(), DTOR_THREADS);
}

#define ORPHANS 3000

struct orphans {
	void *p[ORPHANS];
	size_t n[ORPHANS];
};

static size_t orphan_size(int i)
{
	return i % 100 == 0 ? 50000 + (size_t)i : (size_t)(i % 60) * 16 + 8;
}

static void *orphan_maker(void *arg)
{
	struct orphans *o = arg;
	int i;

	for (i = 0; i < ORPHANS; i++) {
		o->n[i] = orphan_size(i);
		o->p[i] = T_MALLOC(o->n[i]);
		CHECK(o->p[i] != NULL);
		pattern_fill(o->p[i], o->n[i], (uint64_t)i);
	}
	for (i = 0; i < ORPHANS; i += 3) {
		T_FREE(o->p[i]);
		o->p[i] = NULL;
	}
	return NULL;
}

/* Free the dead thread's blocks; allocate in between; leave some. */
static void *orphan_adopter(void *arg)
{
	struct orphans *o = arg;
	int i;

	for (i = 0; i < ORPHANS; i++) {
		void *mine = T_MALLOC(orphan_size(i));

		CHECK(mine != NULL);
		pattern_fill(mine, orphan_size(i), (uint64_t)i + 1);
		if (o->p[i] && i % 2 == 0) {
			CHECKF(pattern_find_damage(o->p[i], o->n[i], (uint64_t)i)
			       == o->n[i], "block %d of the dead thread "
			       "damaged", i);
			T_FREE(o->p[i]);
		}
		o->p[i] = o->p[i] && i % 2 == 0 ? NULL : o->p[i];
		if (!o->p[i]) {
			o->p[i] = mine;
			o->n[i] = orphan_size(i);
		} else {
			T_FREE(mine);
		}
	}
	return NULL;
}

static void freed_after_owner_exit(void)
{
	static struct orphans o;
	pthread_t t;
	int round, i;

	for (round = 0; round < 5; round++) {
		CHECK(pthread_create(&t, NULL, orphan_maker, &o) == 0);
		CHECK(pthread_join(t, NULL) == 0);
		CHECK(pthread_create(&t, NULL, orphan_adopter, &o) == 0);
		CHECK(pthread_join(t, NULL) == 0);
		for (i = 0; i < ORPHANS; i++) {
			uint64_t tag = (uint64_t)i + (i % 2 == 0 ||
						      i % 3 == 0);

			CHECKF(pattern_find_damage(o.p[i], o.n[i], tag) ==
			       o.n[i], "round %d block %d damaged", round, i);
			T_FREE(o.p[i]);
		}
	}
}

static void at_exit_allocates(void)
{
	int i;

	for (i = 0; i < 1000; i++) {
		void *p = T_MALLOC((size_t)i * 8);

		CHECK(p != NULL);
		pattern_fill(p, (size_t)i * 8, (uint64_t)i);
		T_FREE(p);
	}
}

__attribute__((destructor)) static void destructor_allocates(void)
{
	at_exit_allocates();
}

static void *allocate_forever(void *arg)
{
	uint64_t rng = (uint64_t)(uintptr_t)arg + 1;

	for (;;) {
		size_t n = rng_next(&rng) % 5000;
		void *p = T_MALLOC(n);

		CHECK(p != NULL);
		pattern_fill(p, n, n);
		T_FREE(p);
	}
	return NULL;
}

static void exit_while_allocating(void)
{
	pthread_t t;
	int i;

	CHECK(atexit(at_exit_allocates) == 0);
	for (i = 0; i < 4; i++)
		CHECK(pthread_create(&t, NULL, allocate_forever,
				     (void *)(uintptr_t)i) == 0);
	usleep(100000);
	printf("ok exit_while_allocating\n");
	fflush(stdout);
	exit(0);
}

static const struct test_case tests[] = {
	TEST_CASE(dtor_allocates_after_teardown),
	TEST_CASE(freed_after_owner_exit),
	TEST_CASE(exit_while_allocating),
};

int main(int argc, char **argv)
{
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
