/*
 * misuse.c - pointers tlmalloc never returned, or returned and freed
 * already, caught by the default build (the checks of free's fast path and
 * of tl_free_check) with one line on stderr, then abort.
 *
 * Each case is named after the failure it catches; each death case runs
 * the misuse in a child process (this program, exec'd with the case name
 * and "child") and checks the signal and the line:
 *   interior_free_silent        free of a pointer 16 bytes into a block
 *   interior_free_odd_silent    ... 8 bytes in (inside the first 16)
 *   interior_remote_silent      ... by another thread than the owner's
 *   interior_medium_silent      ... of a 20 KiB block, past its first slice
 *   interior_huge_silent        ... of a huge block
 *   interior_realloc_silent     realloc of a pointer into a block
 *   interior_usable_silent      malloc_usable_size of one
 *   double_free_silent          free(p); free(p)
 *   double_free_later_silent    free(p), other frees and mallocs of the
 *                               class, free(p) again
 *   double_free_remote_silent   another thread frees a block twice
 *   double_free_mixed_silent    another thread frees it, then the owner
 *   double_free_medium_silent   a 20 KiB block freed twice
 *   interior_full_silent        the owner frees a pointer into a block of
 *                               its page flagged full (8 KiB blocks, the
 *                               page's eight all handed out)
 *   double_free_full_silent     another thread frees a block of such a
 *                               page (it stays full), then the owner
 *   realloc_freed_silent        realloc of a freed block
 *   usable_freed_silent         malloc_usable_size of a freed block
 *   object_size_freed_silent    malloc_object_size of a pointer into a
 *                               freed block
 *   object_size_freed_medium_silent  ... into a freed 100 KiB block, past
 *                               its first slice
 *   object_size_past_carved_silent  malloc_object_size(malloc(16) + 16384)
 *   huge_underflow_silent       free of a huge block whose byte before it
 *                               was written
 *   huge_aligned_underflow_silent  realloc of a 1 MiB-aligned huge block
 *                               with 32 bytes before it written
 *   never_returned_silent       free of a block start malloc never returned
 *   foreign_unmapped_free_silent  free of a pointer into a mapping whose
 *                               4 MiB-aligned base is unmapped (free's
 *                               first read there faults: fault.c)
 *   past_carved_free_silent     free(malloc(16) + 16384): a block start of
 *                               the page past its carved blocks, on the
 *                               owner's fast path
 *   past_carved_small_silent    the same in a 3 KiB page
 *   past_carved_medium_silent   ... in the first slice of a 10 KiB page
 *   interior_remote_medium_silent  another thread frees a pointer into a
 *                               medium block at a 64 KiB slice boundary
 *   sized_delete_larger_silent  operator delete(p, 32) of a `new char`
 *   sized_delete_smaller_silent  operator delete[](p, 3000) of 4 KiB
 *   sized_delete_huge_silent    operator delete(p, 64 KiB) of 256 KiB
 *   free_sized_mismatch_silent  free_sized(malloc(100), 200)
 *   free_sized_remote_mismatch_silent  the same for a block another
 *                               thread allocated
 *   aligned_sized_mismatch_silent  aligned delete, size 300 for 100
 *   sized_free_false_alarm      (not a death case) every size freed with
 *                               the size it was asked for passes:
 *                               malloc, calloc, realloc in place and
 *                               moved, the aligned family, new and
 *                               aligned new, a young thread's pages
 * and, not death cases of that kind:
 *   segfault_swallowed          a fault of the program's own still kills
 *                               it with SIGSEGV, without a tlmalloc line
 *   raised_segv_swallowed       so does raise(SIGSEGV)
 *   catch_foreign_ignored       with TLMALLOC_CATCH_FOREIGN=0 the free of
 *                               foreign_unmapped_free_silent is a plain
 *                               SIGSEGV
 *   mark_lookalike_aborts       a live block whose second word equals the
 *                               free mark (its segment's address) is freed
 *                               normally, by its owner and by another thread
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "child.h"

/* The segment of p, which the default build stores in a free block's
 * second word (types.h: 4 MiB segments; (p - 1) rounded down). */
static uintptr_t segment_of(const void *p)
{
	return ((uintptr_t)p - 1) & ~(((uintptr_t)4 << 20) - 1);
}

static void *run_in_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	void *ret;
	CHECK(pthread_create(&t, NULL, fn, arg) == 0);
	CHECK(pthread_join(t, &ret) == 0);
	return ret;
}

static void *free_it(void *p)
{
	free(p);
	return NULL;
}

static void *free_twice(void *p)
{
	free(p);
	free(p);
	return NULL;
}

/* A block of size bytes, filled, that is not the first of its page (the
 * blocks before it are freed again). */
static char *block(size_t size)
{
	char *keep[8];
	for (int i = 0; i < 8; i++)
		keep[i] = malloc(size);
	char *p = malloc(size);
	CHECK(p != NULL);
	memset(p, 0x5a, size);
	for (int i = 0; i < 8; i++)
		free(keep[i]);
	return p;
}

static void interior_free_child(void)
{
	free(block(64) + 16);
}

static void interior_free_odd_child(void)
{
	free(block(48) + 8);
}

static void interior_remote_child(void)
{
	run_in_thread(free_it, block(96) + 32);
}

static void interior_medium_child(void)
{
	free(block(20 << 10) + (16 << 10) + 64);
}

static void interior_huge_child(void)
{
	free(block(8 << 20) + 4096);
}

static void interior_realloc_child(void)
{
	printf("%p\n", realloc(block(64) + 16, 32));
}

static void interior_usable_child(void)
{
	printf("%zu\n", malloc_usable_size(block(64) + 32));
}

static void double_free_child(void)
{
	char *p = block(64);
	free(p);
	free(p);
}

static void double_free_later_child(void)
{
	char *p = block(64);
	char *q[16];
	free(p);
	for (int i = 0; i < 16; i++)
		q[i] = malloc(64);
	/* p may have come back as one of q and been freed as such: either
	 * way it is free now */
	for (int i = 0; i < 16; i++)
		free(q[i]);
	free(p);
}

static void double_free_remote_child(void)
{
	run_in_thread(free_twice, block(128));
}

static void double_free_mixed_child(void)
{
	char *p = block(128);
	run_in_thread(free_it, p);
	free(p);
}

static void double_free_medium_child(void)
{
	char *p = block(20 << 10);
	free(p);
	free(p);
}

/* A block of a page of eight 8 KiB blocks, all handed out: the ninth
 * malloc found the page dry and sent it to its heap's full list. */
static char *full_page_block(void)
{
	char *b[9];
	for (int i = 0; i < 9; i++)
		CHECK((b[i] = malloc(8192)) != NULL);
	for (int i = 0; i < 8; i++)
		CHECK((uintptr_t)b[i] >> 16 == (uintptr_t)b[0] >> 16);
	return b[3];
}

static void interior_full_child(void)
{
	free(full_page_block() + 16);
}

static void double_free_full_child(void)
{
	char *p = full_page_block();
	run_in_thread(free_it, p);
	free(p);
}

static void realloc_freed_child(void)
{
	char *p = block(64);
	free(p);
	printf("%p\n", realloc(p, 48));
}

static void usable_freed_child(void)
{
	char *p = block(64);
	free(p);
	printf("%zu\n", malloc_usable_size(p));
}

size_t malloc_object_size(void *ptr);	/* hardened_malloc's extension */

static void huge_underflow_child(void)
{
	char *volatile p = malloc(300000);
	CHECK(p != NULL);
	p[-1] = 'x';
	free((void *)p);
	printf("not detected\n");
}

static void huge_aligned_underflow_child(void)
{
	void *q = NULL;
	CHECK(posix_memalign(&q, (size_t)1 << 20, 300000) == 0);
	char *volatile p = q;
	memset((void *)(p - 32), 'x', 32);
	printf("%p\n", realloc((void *)p, 600000));
}

static void object_size_freed_child(void)
{
	char *p = block(64);
	free(p);
	printf("%zu\n", malloc_object_size(p + 8));
}

static void object_size_freed_medium_child(void)
{
	char *p = block(100 << 10);
	char *inside = p + (64 << 10) - ((uintptr_t)p & 0xffff) + 16;
	CHECK(inside < p + (100 << 10));
	free(p);
	printf("%zu\n", malloc_object_size(inside));
}

static void object_size_past_carved_child(void)
{
	char *p = malloc(16);
	CHECK(p != NULL);
	printf("%zu\n", malloc_object_size(p + 16384));
}

/* The block after the last one malloc returned in a fresh page of its own
 * class: carved (or not yet) but never handed out. */
static void never_returned_child(void)
{
	/* 1280-byte blocks are carved three at a time: the next one is a
	 * carved block malloc has not returned */
	char *p = malloc(1200);
	CHECK(p != NULL);
	free(p + malloc_usable_size(p));
}

/* A pointer 1 MiB into a mapping that starts 64 KiB past an unmapped
 * 4 MiB boundary: its would-be descriptor is unmapped. */
static void foreign_unmapped_free_child(void)
{
	size_t seg = (size_t)4 << 20;
	char *m = mmap(NULL, 3 * seg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	char *base = (char *)(((uintptr_t)m + seg) & ~(uintptr_t)(seg - 1));
	CHECK(munmap(base, 64 << 10) == 0);
	printf("freeing\n");
	fflush(stdout);
	free(base + (1 << 20));
}

static void raised_segv_child(void)
{
	free(malloc(10));
	raise(SIGSEGV);
	printf("still running\n");
}

static void segfault_child(void)
{
	int *volatile bad = (int *)(uintptr_t)16;
	free(malloc(10));
	*bad = 1;
}

/* A block start of p's page past its carved part, in p's 64 KiB slice:
 * blocks of bs bytes, k blocks after p (a page carves 4 KiB or 4 blocks
 * at a time). */
static void free_past_carved(char *p, size_t bs, size_t k)
{
	CHECK(malloc_usable_size(p) == bs);
	char *q = p + k * bs;
	CHECKF(((uintptr_t)q >> 16) == ((uintptr_t)p >> 16),
	       "%p and %p in different slices", (void *)p, (void *)q);
	free(q);
}

static void past_carved_free_child(void)
{
	char *p = malloc(16);
	CHECK(p != NULL);
	free(p + 16384);
}

static void past_carved_small_child(void)
{
	free_past_carved(malloc(3000), 3072, 8);
}

/* The first medium page of a segment starts past its first slice, which
 * sends every free there to the generic path: fill it (960 KiB), so the
 * block freed is in the next page's first slice. */
static void past_carved_medium_child(void)
{
	char *p = NULL;
	for (int i = 0; i < 97; i++)
		p = malloc(10000);
	free_past_carved(p, 10240, 5);
}

static void interior_remote_medium_child(void)
{
	for (int i = 0; i < 200; i++) {
		char *p = malloc(20000);
		CHECK(p != NULL);
		char *edge = (char *)(((uintptr_t)p + 0xffff) & ~(uintptr_t)0xffff);
		if (edge > p && edge < p + 20000) {
			run_in_thread(free_it, edge);
			return;
		}
	}
	CHECKF(0, "no 20 KiB block across a slice boundary");
}

/* The C++ sized deletes, by their mangled names (new_delete.c). */
void *_Znwm(size_t n);
void *_Znam(size_t n);
void _ZdlPvm(void *p, size_t n);
void _ZdaPvm(void *p, size_t n);
void *_ZnwmSt11align_val_t(size_t n, size_t al);
void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al);
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t alignment, size_t size);

/* A thread's first small blocks share a page per group of classes (its
 * young groups: heap.c), where a sized free is checked against the group:
 * grow up every group first, so each class has pages of its own. */
static void grow_up(void)
{
	for (size_t size = 16; size <= 1024; size *= 2)
		for (int i = 0; i < 80; i++)
			CHECK(malloc(size) != NULL);	/* kept */
}

static void sized_delete_larger_child(void)
{
	grow_up();
	char *p = _Znwm(1);
	*p = 'x';
	_ZdlPvm(p, 32);	/* delete of a 32-byte struct through p */
}

static void sized_delete_smaller_child(void)
{
	char *p = _Znam(4096);
	_ZdaPvm(p, 3000);
}

static void sized_delete_huge_child(void)
{
	char *p = _Znwm(256 << 10);
	_ZdlPvm(p, 64 << 10);
}

static void free_sized_mismatch_child(void)
{
	grow_up();
	free_sized(malloc(100), 200);
}

static void *malloc_100(void *arg)
{
	(void)arg;
	return malloc(100);
}

/* Another thread's block (the common sized free, free.c's
 * free_sized_remote) with the wrong size. */
static void free_sized_remote_mismatch_child(void)
{
	free_sized(run_in_thread(malloc_100, NULL), 200);
}

static void aligned_sized_mismatch_child(void)
{
	grow_up();
	_ZdlPvmSt11align_val_t(_ZnwmSt11align_val_t(100, 64), 300, 64);
}

/* Every way of getting a block, freed with its own size, passes. */
static void *sized_cases(void *arg)
{
	static const size_t sizes[] = {
		0, 1, 8, 15, 16, 17, 24, 33, 48, 63, 64, 65, 100, 128, 129,
		200, 256, 300, 500, 512, 640, 700, 1000, 1024, 1025, 2048,
		3000, 4096, 5000, 8192, 8193, 10000, 20000, 65536, 100000,
		131072, 131073, 200000, 1 << 20, 3 << 20,
	};
	size_t n = sizeof(sizes) / sizeof(sizes[0]);
	(void)arg;
	for (size_t i = 0; i < n; i++) {
		size_t a = sizes[i];
		free_sized(malloc(a), a);
		free_sized(calloc(1, a), a);
		_ZdlPvm(_Znwm(a), a);
		_ZdaPvm(_Znam(a), a);
		for (size_t al = 1; al <= (8u << 20); al *= 4) {
			if (a % al == 0 || al < 16) {
				void *q = aligned_alloc(al, a);
				CHECK(q != NULL);
				free_aligned_sized(q, al, a);
			}
			_ZdlPvmSt11align_val_t(_ZnwmSt11align_val_t(a, al), a,
					       al);
		}
		for (size_t j = 0; j < n; j++) {
			size_t b = sizes[j];
			char *p = malloc(a);
			CHECK(p != NULL);
			p = realloc(p, b);
			CHECK(b == 0 || p != NULL);
			if (p != NULL)
				free_sized(p, b);
		}
	}
	free_sized(NULL, 5);
	_ZdlPvm(NULL, 5);
	return NULL;
}

/* Blocks of every size made by another thread, each freed here with its
 * own size. */
static void *alloc_sizes(void *arg)
{
	void **blocks = arg;
	for (size_t i = 0; i < 64; i++)
		CHECK((blocks[i] = malloc(i * i * 37 + i)) != NULL);
	return NULL;
}

static void sized_free_false_alarm(void)
{
	run_in_thread(sized_cases, NULL);	/* young groups */
	grow_up();
	sized_cases(NULL);
	run_in_thread(sized_cases, NULL);
	void *blocks[64];
	run_in_thread(alloc_sizes, blocks);
	for (size_t i = 0; i < 64; i++)
		free_sized(blocks[i], i * i * 37 + i);
}

/* The child dies by SIGSEGV, with no tlmalloc line on stderr, after
 * printing `line` (if not NULL). */
static void expect_segv(const char *name, const char *env, const char *line)
{
	char out[256], err[4096];
	alarm(60);	/* a handler that swallowed the fault would loop */
	int st = child_run(name, env, out, sizeof(out), err, sizeof(err));
	alarm(0);
	CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %d: %s",
	       st, err);
	CHECKF(strstr(err, "tlmalloc") == NULL, "stderr: %s", err);
	CHECKF(line == NULL || strstr(out, line) != NULL, "stdout: %s", out);
}

static void segfault_swallowed(void)
{
	expect_segv(test_name(), NULL, NULL);
}

static void raised_segv_swallowed(void)
{
	expect_segv(test_name(), NULL, NULL);
}

static void catch_foreign_ignored(void)
{
	expect_segv(test_name(), "TLMALLOC_CATCH_FOREIGN=0",
		    "freeing");
}

/* A block whose words look free: the mark, and a NULL or foreign link. */
static char *lookalike(void *link)
{
	char *p = block(64);
	uintptr_t w[2] = { (uintptr_t)link, segment_of(p) };
	memcpy(p, w, sizeof(w));
	return p;
}

static void mark_lookalike_aborts(void)
{
	/* the owner: its lists say the block is not free */
	char *a = lookalike(NULL);
	free(a);
	/* another thread: the link is not a block of the page */
	static int elsewhere;
	char *b = lookalike(&elsewhere);
	run_in_thread(free_it, b);
	/* both blocks come back and work */
	char *c[64];
	for (int i = 0; i < 64; i++) {
		c[i] = malloc(64);
		CHECK(c[i] != NULL);
		memset(c[i], i, 64);
	}
	for (int i = 0; i < 64; i++) {
		CHECK(c[i][0] == (char)i && c[i][63] == (char)i);
		free(c[i]);
	}
}

static const struct test_case cases[] = {
	TEST_DEATH(interior_free_silent, interior_free_child,
		   "free", "not the start of a block"),
	TEST_DEATH(interior_free_odd_silent, interior_free_odd_child,
		   "free", "not the start of a block"),
	TEST_DEATH(interior_remote_silent, interior_remote_child,
		   "free", "not the start of a block"),
	TEST_DEATH(interior_medium_silent, interior_medium_child,
		   "free", "not the start of a block"),
	TEST_DEATH(interior_huge_silent, interior_huge_child,
		   "free", "not the start of a block"),
	TEST_DEATH(interior_realloc_silent, interior_realloc_child,
		   "realloc", "not the start of a block"),
	TEST_DEATH(interior_usable_silent, interior_usable_child,
		   "malloc_usable_size", "not the start of a block"),
	TEST_DEATH(double_free_silent, double_free_child,
		   "free", "double free"),
	TEST_DEATH(double_free_later_silent, double_free_later_child,
		   "free", "double free"),
	TEST_DEATH(double_free_remote_silent, double_free_remote_child,
		   "free", "double free"),
	TEST_DEATH(double_free_mixed_silent, double_free_mixed_child,
		   "free", "double free"),
	TEST_DEATH(double_free_medium_silent, double_free_medium_child,
		   "free", "double free"),
	TEST_DEATH(interior_full_silent, interior_full_child,
		   "free", "not the start of a block"),
	TEST_DEATH(double_free_full_silent, double_free_full_child,
		   "free", "double free"),
	TEST_DEATH(realloc_freed_silent, realloc_freed_child,
		   "realloc", "block already freed"),
	TEST_DEATH(usable_freed_silent, usable_freed_child,
		   "malloc_usable_size", "block already freed"),
	TEST_DEATH(object_size_freed_silent, object_size_freed_child,
		   "malloc_object_size", "block already freed"),
	TEST_DEATH(object_size_freed_medium_silent,
		   object_size_freed_medium_child,
		   "malloc_object_size", "block already freed"),
	TEST_DEATH(object_size_past_carved_silent,
		   object_size_past_carved_child,
		   "malloc_object_size", "not inside a block malloc returned"),
	TEST_DEATH(huge_underflow_silent, huge_underflow_child,
		   "free", "buffer underflow"),
	TEST_DEATH(huge_aligned_underflow_silent, huge_aligned_underflow_child,
		   "realloc", "buffer underflow"),
	TEST_DEATH(never_returned_silent, never_returned_child,
		   "free", "double free"),
	TEST_DEATH(foreign_unmapped_free_silent, foreign_unmapped_free_child,
		   "free", "not allocated by tlmalloc"),
	TEST_CHILD(segfault_swallowed, segfault_child),
	TEST_CHILD(raised_segv_swallowed, raised_segv_child),
	TEST_CHILD(catch_foreign_ignored, foreign_unmapped_free_child),
	TEST_CASE(mark_lookalike_aborts),
	TEST_DEATH(past_carved_free_silent, past_carved_free_child,
		   "free", "not a block malloc returned"),
	TEST_DEATH(past_carved_small_silent, past_carved_small_child,
		   "free", "not a block malloc returned"),
	TEST_DEATH(past_carved_medium_silent, past_carved_medium_child,
		   "free", "not a block malloc returned"),
	TEST_DEATH(interior_remote_medium_silent, interior_remote_medium_child,
		   "free", "not the start of a block"),
	TEST_DEATH(sized_delete_larger_silent, sized_delete_larger_child,
		   "operator delete",
		   "size 32 does not match the block (16 bytes)"),
	TEST_DEATH(sized_delete_smaller_silent, sized_delete_smaller_child,
		   "operator delete[]",
		   "size 3000 does not match the block (4096 bytes)"),
	TEST_DEATH(sized_delete_huge_silent, sized_delete_huge_child,
		   "operator delete", "size 65536 does not match the block"),
	TEST_DEATH(free_sized_mismatch_silent, free_sized_mismatch_child,
		   "free_sized",
		   "size 200 does not match the block (112 bytes)"),
	TEST_DEATH(free_sized_remote_mismatch_silent,
		   free_sized_remote_mismatch_child, "free_sized",
		   "size 200 does not match the block"),
	TEST_DEATH(aligned_sized_mismatch_silent, aligned_sized_mismatch_child,
		   "operator delete",
		   "size 300 does not match the block (128 bytes)"),
	TEST_CASE(sized_free_false_alarm),
};

int main(int argc, char **argv)
{
	return child_main(argc, argv, cases, TEST_COUNT(cases));
}
