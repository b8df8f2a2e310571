/*
 * ts_api.c - the lock-versus-thread-local comparison API of ts_malloc.h.
 *
 * ts_malloc_lock/ts_free_lock and ts_malloc_nolock/ts_free_nolock must hand
 * out distinct, aligned, writable blocks, from one thread and from several;
 * get_data_segment_size() must count what is held once something is
 * allocated, and never be smaller than get_data_segment_free_space_size().
 */
#include <pthread.h>
#include <stdint.h>
#include "check.h"
#include "ts_malloc.h"

#define BLOCKS 4000
#define THREADS 4
#define ROUNDS 8
#define MALLOC_ALIGN 16

typedef void *(*alloc_fn)(size_t);
typedef void (*free_fn)(void *);

struct family {
	alloc_fn alloc;
	free_fn release;
};

static const struct family lock_family = { ts_malloc_lock, ts_free_lock };
static const struct family nolock_family = { ts_malloc_nolock,
					      ts_free_nolock };

static size_t block_size(size_t i, size_t round)
{
	size_t n = (i * 53 + round * 17) % 1024;

	return i % 97 == 0 ? n * 70 : n;
}

/* Allocate, pattern, check and free BLOCKS blocks of one family. */
static void family_round(const struct family *f, size_t round)
{
	static __thread void *p[BLOCKS];
	size_t i;

	for (i = 0; i < BLOCKS; i++) {
		size_t n = block_size(i, round);

		p[i] = f->alloc(n);
		CHECKF(p[i] != NULL, "size %zu", n);
		CHECKF(is_aligned(p[i], MALLOC_ALIGN), "%p", p[i]);
		pattern_fill(p[i], n, i + round * BLOCKS);
	}
	for (i = 0; i < BLOCKS; i++) {
		size_t n = block_size(i, round);

		CHECKF(pattern_find_damage(p[i], n, i + round * BLOCKS) == n,
		       "block %zu of size %zu overwritten", i, n);
		f->release(p[i]);
	}
}

static void ts_lock_blocks_overlap(void)
{
	family_round(&lock_family, 0);
	family_round(&lock_family, 1);
}

static void ts_nolock_blocks_overlap(void)
{
	family_round(&nolock_family, 0);
	family_round(&nolock_family, 1);
}

static void *family_thread(void *arg)
{
	const struct family *f = arg;
	size_t round;

	for (round = 0; round < ROUNDS; round++)
		family_round(f, round);
	return NULL;
}

static void run_threads(const struct family *f)
{
	pthread_t t[THREADS];
	int i;

	for (i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, family_thread,
				     (void *)f) == 0);
	for (i = 0; i < THREADS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
}

static void ts_lock_threads_corrupt(void)
{
	run_threads(&lock_family);
}

static void ts_nolock_threads_corrupt(void)
{
	run_threads(&nolock_family);
}

#define LIVE 1000
#define LIVE_SIZE 1000

static void check_sizes(const char *when)
{
	unsigned long size = get_data_segment_size();
	unsigned long free_space = get_data_segment_free_space_size();

	CHECKF(size >= free_space, "%s: size %lu < free space %lu", when,
	       size, free_space);
}

/*
 * With LIVE blocks of LIVE_SIZE bytes alive, at least that many held bytes
 * are not free; freeing them turns at least 90% of those bytes free or
 * returns them to the OS.
 */
static void data_segment_size_wrong(void)
{
	static void *p[LIVE];
	unsigned long used_live, used_after, live = LIVE * LIVE_SIZE;
	int i;

	check_sizes("at start");
	for (i = 0; i < LIVE; i++) {
		p[i] = i & 1 ? ts_malloc_lock(LIVE_SIZE)
			     : ts_malloc_nolock(LIVE_SIZE);
		CHECK(p[i] != NULL);
	}
	check_sizes("with blocks live");
	CHECK(get_data_segment_size() > 0);
	used_live = get_data_segment_size() -
		    get_data_segment_free_space_size();
	CHECKF(used_live >= live, "%lu bytes not free, %lu live", used_live,
	       live);
	for (i = 0; i < LIVE; i++) {
		if (i & 1)
			ts_free_lock(p[i]);
		else
			ts_free_nolock(p[i]);
	}
	check_sizes("after freeing");
	used_after = get_data_segment_size() -
		     get_data_segment_free_space_size();
	CHECKF(used_after + live / 10 * 9 <= used_live, "%lu bytes not free "
	       "with %lu live, %lu after freeing them", used_live, live,
	       used_after);
}

static const struct test_case tests[] = {
	TEST_CASE(ts_lock_blocks_overlap),
	TEST_CASE(ts_nolock_blocks_overlap),
	TEST_CASE(ts_lock_threads_corrupt),
	TEST_CASE(ts_nolock_threads_corrupt),
	TEST_CASE(data_segment_size_wrong),
};

int main(int argc, char **argv)
{
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
