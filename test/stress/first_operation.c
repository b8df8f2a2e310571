/*
 * first_operation.c - every API call as the very first call of a thread.
 *
 * A thread that has never allocated sees tlmalloc's static empty heap; its
 * first call, whichever it is, must set the thread up (or work without
 * doing so) and then leave the thread a working heap.  For each call of the
 * API (the allocation functions, the frees of a block another thread
 * allocated, the queries, the ts_ API and, outside the ThreadSanitizer
 * build, every operator new/delete form from first_operation_ops.cc)
 * RACERS fresh threads are released together from a barrier and make that
 * call first; once all have made it, they allocate, check and free a mixed
 * batch.  Fails on a
 * crash, a wrong result of the first call, or damage afterwards.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include "alloc_api.h"
#include "check.h"
#include "first_operation_ops.h"

#define RACERS 4
#define FOREIGN 300
#define FOREIGN_TAG 4242
#define MIB ((size_t)1 << 20)

struct op {
	const char *name;
	void *(*prepare)(void);	/* run by the main thread, or NULL */
	void (*first)(void *);	/* the new thread's first call */
};

/* Blocks that the main thread allocates for the new threads to free. */
static void *fill_foreign(void *p)
{
	CHECK(p != NULL);
	pattern_fill(p, FOREIGN, FOREIGN_TAG);
	return p;
}

static void check_foreign(const void *p)
{
	CHECK(pattern_find_damage(p, FOREIGN, FOREIGN_TAG) == FOREIGN);
}

static void *prep_malloc(void)
{
	return fill_foreign(T_MALLOC(FOREIGN));
}

static void *prep_aligned(void)
{
	return fill_foreign(T_ALIGNED_ALLOC(256, FOREIGN));
}

static void *prep_ts_lock(void)
{
	return fill_foreign(ts_malloc_lock(FOREIGN));
}

static void *prep_ts_nolock(void)
{
	return fill_foreign(ts_malloc_nolock(FOREIGN));
}

static void use_block(void *p, size_t n, size_t alignment)
{
	CHECKF(p != NULL && is_aligned(p, alignment), "%p size %zu", p, n);
	CHECKF(T_USABLE_SIZE(p) >= n, "usable %zu < %zu", T_USABLE_SIZE(p), n);
	pattern_fill(p, n, n);
	CHECK(pattern_find_damage(p, n, n) == n);
}

static void first_malloc(void *arg)
{
	void *p = T_MALLOC(100);

	use_block(p, 100, 16);
	T_FREE(p);
}

static void first_malloc_large(void *arg)
{
	void *p = T_MALLOC(3 * MIB);

	use_block(p, 3 * MIB, 16);
	T_FREE(p);
}

static void first_malloc_enomem(void *arg)
{
	void *p;

	errno = 0;
	p = T_MALLOC(SIZE_MAX);
	CHECKF(p == NULL && errno == ENOMEM, "%p errno %d", p, errno);
}

static void first_calloc(void *arg)
{
	unsigned char *p = T_CALLOC(10, 30);
	int i;

	CHECK(p != NULL);
	for (i = 0; i < 300; i++)
		CHECK(p[i] == 0);
	use_block(p, 300, 16);
	T_FREE(p);
}

static void first_realloc_null(void *arg)
{
	void *p = T_REALLOC(NULL, 50);

	use_block(p, 50, 16);
	T_FREE(p);
}

static void first_realloc_foreign(void *arg)
{
	void *p = T_REALLOC(arg, 5000);

	CHECK(p != NULL);
	check_foreign(p);
	use_block(p, 5000, 16);
	T_FREE(p);
}

static void first_reallocarray(void *arg)
{
	void *p = T_REALLOCARRAY(NULL, 4, 25);

	use_block(p, 100, 16);
	T_FREE(p);
}

static void first_free_foreign(void *arg)
{
	check_foreign(arg);
	T_FREE(arg);
}

static void first_free_null(void *arg)
{
	T_FREE(NULL);
}

static void first_free_sized_foreign(void *arg)
{
	check_foreign(arg);
	T_FREE_SIZED(arg, FOREIGN);
}

static void first_free_aligned_sized_foreign(void *arg)
{
	check_foreign(arg);
	T_FREE_ALIGNED_SIZED(arg, 256, FOREIGN);
}

static void first_cfree_foreign(void *arg)
{
	check_foreign(arg);
	T_CFREE(arg);
}

static void first_aligned_alloc(void *arg)
{
	void *p = T_ALIGNED_ALLOC(4096, 100);

	use_block(p, 100, 4096);
	T_FREE(p);
}

static void first_posix_memalign(void *arg)
{
	void *p = NULL;

	CHECK(T_POSIX_MEMALIGN(&p, 64, 1000) == 0);
	use_block(p, 1000, 64);
	T_FREE(p);
}

static void first_posix_memalign_einval(void *arg)
{
	void *p = NULL;

	CHECK(T_POSIX_MEMALIGN(&p, 24, 1000) == EINVAL);
}

static void first_memalign(void *arg)
{
	void *p = T_MEMALIGN(MIB, 10);

	use_block(p, 10, MIB);
	T_FREE(p);
}

static void first_valloc(void *arg)
{
	void *p = T_VALLOC(10);

	use_block(p, 10, 4096);
	T_FREE(p);
}

static void first_pvalloc(void *arg)
{
	void *p = T_PVALLOC(10);

	use_block(p, 4096, 4096);
	T_FREE(p);
}

static void first_usable_size_foreign(void *arg)
{
	CHECK(T_USABLE_SIZE(arg) >= FOREIGN);
	T_FREE(arg);
}

static void first_usable_size_null(void *arg)
{
	CHECK(T_USABLE_SIZE(NULL) == 0);
}

static void first_trim(void *arg)
{
	int r = tl_trim();

	CHECK(r == 0 || r == 1);
}

static void first_version(void *arg)
{
	CHECK(tl_version() != NULL && tl_version()[0] != '\0');
}

static void first_ts_malloc_lock(void *arg)
{
	void *p = ts_malloc_lock(200);

	CHECK(p != NULL);
	pattern_fill(p, 200, 1);
	ts_free_lock(p);
}

static void first_ts_free_lock_foreign(void *arg)
{
	check_foreign(arg);
	ts_free_lock(arg);
}

static void first_ts_malloc_nolock(void *arg)
{
	void *p = ts_malloc_nolock(200);

	CHECK(p != NULL);
	pattern_fill(p, 200, 1);
	ts_free_nolock(p);
}

static void first_ts_free_nolock_foreign(void *arg)
{
	check_foreign(arg);
	ts_free_nolock(arg);
}

static void first_data_segment_size(void *arg)
{
	CHECK(get_data_segment_size() >= get_data_segment_free_space_size());
}

static const struct op ops[] = {
	{ "malloc", NULL, first_malloc },
	{ "malloc large", NULL, first_malloc_large },
	{ "malloc(SIZE_MAX)", NULL, first_malloc_enomem },
	{ "calloc", NULL, first_calloc },
	{ "realloc(NULL)", NULL, first_realloc_null },
	{ "realloc of a foreign block", prep_malloc, first_realloc_foreign },
	{ "reallocarray", NULL, first_reallocarray },
	{ "free of a foreign block", prep_malloc, first_free_foreign },
	{ "free(NULL)", NULL, first_free_null },
	{ "free_sized", prep_malloc, first_free_sized_foreign },
	{ "free_aligned_sized", prep_aligned,
	  first_free_aligned_sized_foreign },
	{ "cfree", prep_malloc, first_cfree_foreign },
	{ "aligned_alloc", NULL, first_aligned_alloc },
	{ "posix_memalign", NULL, first_posix_memalign },
	{ "posix_memalign(EINVAL)", NULL, first_posix_memalign_einval },
	{ "memalign", NULL, first_memalign },
	{ "valloc", NULL, first_valloc },
	{ "pvalloc", NULL, first_pvalloc },
	{ "usable size", prep_malloc, first_usable_size_foreign },
	{ "usable size of NULL", NULL, first_usable_size_null },
	{ "tl_trim", NULL, first_trim },
	{ "tl_version", NULL, first_version },
	{ "ts_malloc_lock", NULL, first_ts_malloc_lock },
	{ "ts_free_lock", prep_ts_lock, first_ts_free_lock_foreign },
	{ "ts_malloc_nolock", NULL, first_ts_malloc_nolock },
	{ "ts_free_nolock", prep_ts_nolock, first_ts_free_nolock_foreign },
	{ "get_data_segment_size", NULL, first_data_segment_size },
#ifndef TL_TEST_TSAN
	{ "operator new", NULL, cxx_first_new },
	{ "operator new[]", NULL, cxx_first_new_array },
	{ "operator new nothrow", NULL, cxx_first_new_nothrow },
	{ "operator new aligned", NULL, cxx_first_new_aligned },
	{ "operator new[] aligned", NULL, cxx_first_new_array_aligned },
	{ "operator new aligned nothrow", NULL,
	  cxx_first_new_aligned_nothrow },
	{ "operator new throwing bad_alloc", NULL, cxx_first_new_bad_alloc },
	{ "operator delete", cxx_prepare, cxx_first_delete },
	{ "operator delete sized", cxx_prepare, cxx_first_delete_sized },
	{ "operator delete[]", cxx_prepare_array, cxx_first_delete_array },
	{ "operator delete aligned", cxx_prepare_aligned,
	  cxx_first_delete_aligned },
	{ "operator delete sized aligned", cxx_prepare_aligned,
	  cxx_first_delete_sized_aligned },
#endif
};

#define OPS (sizeof(ops) / sizeof(ops[0]))
#define AFTER 64

/* With the thread set up by its first call, its heap must work. */
static void after_work(void)
{
	void *p[AFTER];
	int i;

	for (i = 0; i < AFTER; i++) {
		size_t n = (size_t)i * 97 + (i == 7 ? 2 * MIB : 0);

		p[i] = T_MALLOC(n);
		CHECK(p[i] != NULL);
		pattern_fill(p[i], n, (uint64_t)i);
	}
	for (i = AFTER - 1; i >= 0; i--) {
		size_t n = (size_t)i * 97 + (i == 7 ? 2 * MIB : 0);

		CHECK(pattern_find_damage(p[i], n, (uint64_t)i) == n);
		T_FREE(p[i]);
	}
}

struct racer {
	pthread_t thread;
	const struct op *op;
	void *arg;
};

static pthread_barrier_t start_line;

static void wait_for_racers(void)
{
	int rc = pthread_barrier_wait(&start_line);

	if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD)
		check_fail(__FILE__, __LINE__, "pthread_barrier_wait", "");
}

/*
 * The first calls race only with each other: get_data_segment_size() is a
 * snapshot to be taken while no other thread allocates (ts_malloc.h).
 */
static void *racer_main(void *arg)
{
	struct racer *r = arg;

	wait_for_racers();
	r->op->first(r->arg);
	wait_for_racers();
	after_work();
	return NULL;
}

static void race(const struct op *op)
{
	struct racer r[RACERS];
	int i;

	for (i = 0; i < RACERS; i++) {
		r[i].op = op;
		r[i].arg = op->prepare ? op->prepare() : NULL;
	}
	for (i = 0; i < RACERS; i++)
		CHECKF(pthread_create(&r[i].thread, NULL, racer_main,
				      &r[i]) == 0, "%s", op->name);
	for (i = 0; i < RACERS; i++)
		CHECK(pthread_join(r[i].thread, NULL) == 0);
}

static void first_operation(void)
{
	size_t i;

	CHECK(pthread_barrier_init(&start_line, NULL, RACERS) == 0);
	for (i = 0; i < OPS; i++) {
		race(&ops[i]);
		printf("first call %s: ok\n", ops[i].name);
	}
	pthread_barrier_destroy(&start_line);
}

static const struct test_case tests[] = {
	TEST_CASE(first_operation),
};

int main(int argc, char **argv)
{
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
