/*
 * young.c - a young heap's class groups (docs/design.md, "Young groups"):
 * a new thread's first small blocks of the four classes of a group share
 * the page of the group's largest class, and the group grows up once that
 * page's first carve is used.  Each case runs in a new thread (a new heap).
 *   young_pages_not_shared  the first blocks of 16, 32, 48 and 64 bytes, or
 *                           of 640..1024, do not share one page
 *   young_waste_unbounded   after many blocks of one size, the bytes beyond
 *                           that size's own class exceed one carve (4 KiB)
 *                           per group, or blocks stay oversized
 *   young_alignment_lost    aligned requests served from a shared page are
 *                           not aligned, or blocks overlap
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void in_new_thread(void *(*fn)(void *))
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, fn, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
}

/* The 64 KiB slice a block lies in: a page of small blocks is one slice. */
static uintptr_t slice_of(const void *p)
{
	return (uintptr_t)p >> 16;
}

static void *shared_body(void *arg)
{
	static const size_t groups[][4] = {
		{ 16, 32, 48, 64 },
		{ 640, 768, 896, 1024 },
	};
	(void)arg;
	for (size_t g = 0; g < 2; g++) {
		void *p[4];
		for (int i = 0; i < 4; i++) {
			p[i] = malloc(groups[g][i]);
			CHECK(p[i] != NULL);
			memset(p[i], 0x5a, groups[g][i]);
		}
		for (int i = 1; i < 4; i++)
			CHECKF(slice_of(p[i]) == slice_of(p[0]),
			       "%zu and %zu bytes in pages %p and %p",
			       groups[g][0], groups[g][i], p[0], p[i]);
		for (int i = 0; i < 4; i++)
			free(p[i]);
	}
	return NULL;
}

static void young_pages_not_shared(void)
{
	in_new_thread(shared_body);
}

enum { MANY = 4000 };

static void *waste_body(void *arg)
{
	static const size_t sizes[] = { 16, 100, 200, 300, 700 };
	static void *p[MANY];
	(void)arg;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		/* The usable size of a grown-up block: its own class. */
		size_t exact = SIZE_MAX, waste = 0;
		for (int i = 0; i < MANY; i++) {
			CHECK((p[i] = malloc(n)) != NULL);
			size_t u = malloc_usable_size(p[i]);
			CHECK(u >= n);
			if (u < exact)
				exact = u;
		}
		for (int i = 0; i < MANY; i++)
			waste += malloc_usable_size(p[i]) - exact;
		CHECKF(waste <= 4096, "%zu bytes: %zu bytes beyond its class",
		       n, waste);
		/* The last blocks come from the exact class. */
		CHECK(malloc_usable_size(p[MANY - 1]) == exact);
		for (int i = 0; i < MANY; i++)
			free(p[i]);
	}
	return NULL;
}

static void young_waste_unbounded(void)
{
	in_new_thread(waste_body);
}

static void *alignment_body(void *arg)
{
	enum { PER = 8 };
	void *p[11][PER];
	size_t size[11];
	(void)arg;
	/* Alignments 16..1024 at sizes of the young groups, fresh heap. */
	for (int a = 4; a <= 10; a++) {
		size_t al = (size_t)1 << a;
		size[a] = al / 2 + 8;
		for (int i = 0; i < PER; i++) {
			CHECK(posix_memalign(&p[a][i], al, size[a]) == 0);
			CHECKF(is_aligned(p[a][i], al), "%p at %zu", p[a][i], al);
			memset(p[a][i], a, size[a]);
		}
	}
	for (int a = 4; a <= 10; a++)
		for (int i = 0; i < PER; i++) {
			unsigned char *q = p[a][i];
			for (size_t k = 0; k < size[a]; k++)
				CHECKF(q[k] == a, "block %p overwritten",
				       (void *)q);
			free(q);
		}
	return NULL;
}

static void young_alignment_lost(void)
{
	in_new_thread(alignment_body);
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		TEST_CASE(young_pages_not_shared),
		TEST_CASE(young_waste_unbounded),
		TEST_CASE(young_alignment_lost),
	};
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
