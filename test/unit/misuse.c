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
 *   realloc_freed_silent        realloc of a freed block
 *   usable_freed_silent         malloc_usable_size of a freed block
 *   never_returned_silent       free of a block start malloc never returned
 *   foreign_unmapped_free_silent  free of a pointer into a mapping whose
 *                               4 MiB-aligned base is unmapped (free's
 *                               first read there faults: fault.c)
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

/* The block after the last one malloc returned in a fresh page of its own
 * class: carved (or not yet) but never handed out. */
static void never_returned_child(void)
{
	char *p = malloc(4000);
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
	expect_segv("segfault_swallowed", NULL, NULL);
}

static void raised_segv_swallowed(void)
{
	expect_segv("raised_segv_swallowed", NULL, NULL);
}

static void catch_foreign_ignored(void)
{
	expect_segv("catch_foreign_ignored", "TLMALLOC_CATCH_FOREIGN=0",
		    "freeing");
}

static void foreign_unmapped_free_silent(void)
{
	child_expect_abort("foreign_unmapped_free_silent", "free",
			   "not allocated by tlmalloc");
}

static void interior_free_silent(void)
{
	child_expect_abort("interior_free_silent", "free",
			   "not the start of a block");
}

static void interior_free_odd_silent(void)
{
	child_expect_abort("interior_free_odd_silent", "free",
			   "not the start of a block");
}

static void interior_remote_silent(void)
{
	child_expect_abort("interior_remote_silent", "free",
			   "not the start of a block");
}

static void interior_medium_silent(void)
{
	child_expect_abort("interior_medium_silent", "free",
			   "not the start of a block");
}

static void interior_huge_silent(void)
{
	child_expect_abort("interior_huge_silent", "free",
			   "not the start of a block");
}

static void interior_realloc_silent(void)
{
	child_expect_abort("interior_realloc_silent", "realloc",
			   "not the start of a block");
}

static void interior_usable_silent(void)
{
	child_expect_abort("interior_usable_silent", "malloc_usable_size",
			   "not the start of a block");
}

static void double_free_silent(void)
{
	child_expect_abort("double_free_silent", "free", "double free");
}

static void double_free_later_silent(void)
{
	child_expect_abort("double_free_later_silent", "free", "double free");
}

static void double_free_remote_silent(void)
{
	child_expect_abort("double_free_remote_silent", "free", "double free");
}

static void double_free_mixed_silent(void)
{
	child_expect_abort("double_free_mixed_silent", "free", "double free");
}

static void double_free_medium_silent(void)
{
	child_expect_abort("double_free_medium_silent", "free", "double free");
}

static void realloc_freed_silent(void)
{
	child_expect_abort("realloc_freed_silent", "realloc",
			   "block already freed");
}

static void usable_freed_silent(void)
{
	child_expect_abort("usable_freed_silent", "malloc_usable_size",
			   "block already freed");
}

static void never_returned_silent(void)
{
	child_expect_abort("never_returned_silent", "free", "double free");
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
	{ "interior_free_silent", interior_free_silent },
	{ "interior_free_odd_silent", interior_free_odd_silent },
	{ "interior_remote_silent", interior_remote_silent },
	{ "interior_medium_silent", interior_medium_silent },
	{ "interior_huge_silent", interior_huge_silent },
	{ "interior_realloc_silent", interior_realloc_silent },
	{ "interior_usable_silent", interior_usable_silent },
	{ "double_free_silent", double_free_silent },
	{ "double_free_later_silent", double_free_later_silent },
	{ "double_free_remote_silent", double_free_remote_silent },
	{ "double_free_mixed_silent", double_free_mixed_silent },
	{ "double_free_medium_silent", double_free_medium_silent },
	{ "realloc_freed_silent", realloc_freed_silent },
	{ "usable_freed_silent", usable_freed_silent },
	{ "never_returned_silent", never_returned_silent },
	{ "foreign_unmapped_free_silent", foreign_unmapped_free_silent },
	{ "segfault_swallowed", segfault_swallowed },
	{ "raised_segv_swallowed", raised_segv_swallowed },
	{ "catch_foreign_ignored", catch_foreign_ignored },
	{ "mark_lookalike_aborts", mark_lookalike_aborts },
};

static const struct test_case children[] = {
	{ "interior_free_silent", interior_free_child },
	{ "interior_free_odd_silent", interior_free_odd_child },
	{ "interior_remote_silent", interior_remote_child },
	{ "interior_medium_silent", interior_medium_child },
	{ "interior_huge_silent", interior_huge_child },
	{ "interior_realloc_silent", interior_realloc_child },
	{ "interior_usable_silent", interior_usable_child },
	{ "double_free_silent", double_free_child },
	{ "double_free_later_silent", double_free_later_child },
	{ "double_free_remote_silent", double_free_remote_child },
	{ "double_free_mixed_silent", double_free_mixed_child },
	{ "double_free_medium_silent", double_free_medium_child },
	{ "realloc_freed_silent", realloc_freed_child },
	{ "usable_freed_silent", usable_freed_child },
	{ "never_returned_silent", never_returned_child },
	{ "foreign_unmapped_free_silent", foreign_unmapped_free_child },
	{ "segfault_swallowed", segfault_child },
	{ "raised_segv_swallowed", raised_segv_child },
	{ "catch_foreign_ignored", foreign_unmapped_free_child },
};

int main(int argc, char **argv)
{
	return child_main(argc, argv, cases, TEST_COUNT(cases), children,
			  TEST_COUNT(children));
}
