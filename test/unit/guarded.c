/*
 * guarded.c - guarded sampling (src/guarded.c, option guarded_rate): the
 * misuse of a sampled block faults and is reported on one line, then
 * abort; normal use with the option on works.  Each case runs in a child
 * (this program, exec'd with the case name and "child") with
 * TLMALLOC_GUARDED_RATE=1 unless it says otherwise, so every allocation
 * that leaves the inline path is a sample while a slot is free:
 *   overflow_silent           malloc(32), write p[32]: "heap overflow",
 *                             byte 32 of the 32-byte block, with the
 *                             allocation's stack
 *   overflow_slack_rule       malloc(24): usable size 32, p[24..31] are
 *                             slack and do not fault, p[32] does
 *   underflow_silent          malloc(page), write p[-1]: "heap underflow"
 *   underflow_rule            malloc(32): p[-(page - 32)] is in the
 *                             block's page and does not fault, one byte
 *                             further does
 *   use_after_free_silent     free(p), read p[0]: "use after free"
 *   use_after_free_busy_pool  TLMALLOC_GUARDED_SLOTS=4: three blocks live,
 *                             p freed, another malloc: p's slot is in
 *                             quarantine, so it is not reused and p[0]
 *                             still faults
 *   double_free_silent        free(p) twice: "free(p): double free"
 *   interior_free_silent      free(p + 16): not the start of a block
 *   usable_freed_silent       malloc_usable_size of a freed block
 *   object_size_rule          malloc_object_size inside a live block: to
 *                             its usable end; the fast one the same, 0
 *                             once the block is freed
 *   object_size_freed_silent  malloc_object_size into a freed block
 *   own_fault_not_reported    a fault of the program's own, outside the
 *                             pool, is still a SIGSEGV with no line
 *   pool_bounded              TLMALLOC_GUARDED_SLOTS=4: never more than 4
 *                             guarded blocks live; the rest are served
 *                             unguarded, and the statistics say so
 *   threads_corrupt_rate1     four threads allocate (malloc, calloc,
 *   threads_corrupt_rate3     realloc, the aligned family), check and free
 *                             each other's blocks, at rates 1 and 3: every
 *                             block keeps its contents, alignment, usable
 *                             size and calloc's zeros, blocks were
 *                             guarded, and none is left live but what
 *                             the C library keeps of exited threads
 *   bad_rate_silent           TLMALLOC_GUARDED_RATE=-1: one line, the
 *                             default kept (no pool)
 *   bad_slots_silent          TLMALLOC_GUARDED_SLOTS=0 and =257: the same
 *   off_by_default            without the option: no pool, nothing guarded
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlmalloc.h"

#include "check.h"
#include "child.h"

#define RATE1 "TLMALLOC_GUARDED_RATE=1"

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static struct tl_stats stats(void)
{
	struct tl_stats st;
	CHECK(tl_stats_get(&st, sizeof(st)) == sizeof(st));
	CHECK(st.version >= 5);
	return st;
}

/*
 * Run the child case with env; it must die by abort after exactly one
 * line on stderr that starts with head and holds each of the words.
 */
static void expect_report(const char *name, const char *env,
			  const char *head, const char *const *words)
{
	char out[512], err[2048];
	alarm(60);
	int st = child_run(name, env, out, sizeof(out), err, sizeof(err));
	alarm(0);
	child_drop_emulator_line(err);
	CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
	       "status %d, stdout: %s stderr: %s", st, out, err);
	CHECKF(strncmp(err, head, strlen(head)) == 0, "stderr: %s", err);
	for (; *words != NULL; words++)
		CHECKF(strstr(err, *words) != NULL, "no '%s' in: %s", *words,
		       err);
	char *nl = strchr(err, '\n');
	CHECKF(nl != NULL && nl[1] == '\0', "not one line: %s", err);
}

/* The child case runs to its end (exit 0, empty stderr). */
static void expect_clean(const char *name, const char *env)
{
	char out[512], err[2048];
	alarm(120);
	int st = child_run(name, env, out, sizeof(out), err, sizeof(err));
	alarm(0);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "status %d, stdout: %s stderr: %s", st, out, err);
	CHECKF(err[0] == '\0', "stderr: %s", err);
}

/* ---- overflow, underflow, use after free ---- */

static void overflow_child(void)
{
	volatile char *volatile p = malloc(32);
	CHECK(malloc_usable_size((void *)p) == 32);
	p[31] = 1;
	p[32] = 1;
	CHECKF(0, "the overflow did not fault");
}

static void overflow_silent(void)
{
	const char *words[] = { "byte 32 of the 32-byte block 0x",
				"(guarded sample); allocated at ", NULL };
	expect_report(test_name(), RATE1, "tlmalloc: heap overflow at 0x",
		      words);
}

static void overflow_slack_child(void)
{
	volatile char *volatile p = malloc(24);
	CHECK(malloc_usable_size((void *)p) == 32);
	for (int i = 24; i < 32; i++)	/* the slack: no fault */
		p[i] = 1;
	p[32] = 1;
	CHECKF(0, "the overflow did not fault");
}

static void overflow_slack_rule(void)
{
	const char *words[] = { "byte 32 of the 24-byte block", NULL };
	expect_report(test_name(), RATE1,
		      "tlmalloc: heap overflow at 0x", words);
}

static void underflow_child(void)
{
	volatile char *volatile p = malloc(page_size());
	p[0] = 1;
	p[-1] = 1;
	CHECKF(0, "the underflow did not fault");
}

static void underflow_silent(void)
{
	char block[64];
	snprintf(block, sizeof(block), "1 byte before the %zu-byte block",
		 page_size());
	const char *words[] = { block, NULL };
	expect_report(test_name(), RATE1,
		      "tlmalloc: heap underflow at 0x", words);
}

static void underflow_rule_child(void)
{
	volatile char *volatile p = malloc(32);
	size_t room = page_size() - 32;	/* the block's page before it */
	p[-(ptrdiff_t)room] = 1;
	p[-(ptrdiff_t)room - 1] = 1;
	CHECKF(0, "the underflow did not fault");
}

static void underflow_rule(void)
{
	char block[64];
	snprintf(block, sizeof(block), "%zu bytes before the 32-byte block",
		 page_size() - 31);
	const char *words[] = { block, NULL };
	expect_report(test_name(), RATE1, "tlmalloc: heap underflow at 0x",
		      words);
}

static void use_after_free_child(void)
{
	volatile char *volatile p = malloc(32);
	p[5] = 7;
	free((void *)p);
	CHECKF(p[5] == 0, "the use after free did not fault");
}

static void use_after_free_silent(void)
{
	const char *words[] = { "byte 5 of the freed 32-byte block", NULL };
	expect_report(test_name(), RATE1,
		      "tlmalloc: use after free at 0x", words);
}

static void use_after_free_busy_child(void)
{
	void *live[3];
	for (int i = 0; i < 3; i++)
		live[i] = malloc(32);
	volatile char *volatile p = malloc(32);
	free((void *)p);
	void *q = malloc(32);	/* the only free slot is p's, quarantined */
	struct tl_stats st = stats();
	CHECKF(st.guarded_total == 4 && st.guarded_live == 3,
	       "guarded %llu, live %llu", (unsigned long long)st.guarded_total,
	       (unsigned long long)st.guarded_live);
	(void)q;
	(void)live;
	CHECKF(p[0] == 0, "the use after free did not fault");
}

static void use_after_free_busy_pool(void)
{
	const char *words[] = { "byte 0 of the freed 32-byte block", NULL };
	setenv("TLMALLOC_GUARDED_SLOTS", "4", 1);
	expect_report(test_name(), RATE1,
		      "tlmalloc: use after free at 0x", words);
	unsetenv("TLMALLOC_GUARDED_SLOTS");
}

/* ---- invalid calls on guarded blocks ---- */

static void double_free_child(void)
{
	void *volatile p = malloc(32);
	free((void *)p);
	free((void *)p);
}

static void double_free_silent(void)
{
	const char *words[] = { "): double free", NULL };
	expect_report(test_name(), RATE1, "tlmalloc: free(0x", words);
}

static void interior_free_child(void)
{
	volatile char *volatile p = malloc(64);
	free((void *)(p + 16));
}

static void interior_free_silent(void)
{
	const char *words[] = { "not the start of a block", NULL };
	expect_report(test_name(), RATE1, "tlmalloc: free(0x",
		      words);
}

static void usable_freed_child(void)
{
	void *volatile p = malloc(64);
	free((void *)p);
	malloc_usable_size(p);
}

static void usable_freed_silent(void)
{
	const char *words[] = { "block already freed", NULL };
	expect_report(test_name(), RATE1,
		      "tlmalloc: malloc_usable_size(0x", words);
}

size_t malloc_object_size(void *ptr);	/* hardened_malloc's extension */
size_t malloc_object_size_fast(void *ptr);

static void object_size_child(void)
{
	char *p = malloc(24);
	CHECK(malloc_usable_size(p) == 32);	/* guarded: right-aligned */
	CHECK(malloc_object_size(p) == 32 && malloc_object_size(p + 31) == 1);
	CHECK(malloc_object_size_fast(p + 5) == 27);
	free(p);
	CHECK(malloc_object_size_fast(p + 5) == 0);
}

static void object_size_rule(void)
{
	expect_clean(test_name(), RATE1);
}

static void object_size_freed_child(void)
{
	char *volatile p = malloc(64);
	free((void *)p);
	malloc_object_size(p + 8);
}

static void object_size_freed_silent(void)
{
	const char *words[] = { "block already freed", NULL };
	expect_report(test_name(), RATE1,
		      "tlmalloc: malloc_object_size(0x", words);
}

static void own_fault_child(void)
{
	int *volatile bad = (int *)(uintptr_t)16;
	free(malloc(10));
	*bad = 1;
}

static void own_fault_not_reported(void)
{
	char err[1024];
	alarm(60);
	int st = child_run(test_name(), RATE1, NULL, 0, err,
			   sizeof(err));
	alarm(0);
	CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %d: %s",
	       st, err);
	CHECKF(strstr(err, "tlmalloc") == NULL, "stderr: %s", err);
}

/* ---- normal use ---- */

static void pool_bounded_child(void)
{
	void *p[200];
	for (int i = 0; i < 200; i++) {
		p[i] = malloc((size_t)(i % 40) * 64);	/* many classes */
		CHECK(p[i] != NULL);
		memset(p[i], 1, (size_t)(i % 40) * 64);
		CHECK(stats().guarded_live <= 4);
	}
	struct tl_stats st = stats();
	CHECKF(st.guarded_live == 4 && st.guarded_missed > 0 &&
	       st.guarded_mapped == 4u << 20,
	       "live %llu missed %llu", (unsigned long long)st.guarded_live,
	       (unsigned long long)st.guarded_missed);
	for (int i = 0; i < 200; i++)
		free(p[i]);
	CHECK(stats().guarded_live == 0);
}

static void pool_bounded(void)
{
	setenv("TLMALLOC_GUARDED_SLOTS", "4", 1);
	expect_clean(test_name(), RATE1);
	unsetenv("TLMALLOC_GUARDED_SLOTS");
}

#define THREADS 4
#define ROUNDS 20000
#define MAILBOX 64

/* A block: its size and tag, then bytes 16.. (i * 7 + tag). */
struct head {
	size_t size;
	size_t tag;
};

static _Atomic(struct head *) mailbox[THREADS][MAILBOX];

static void fill(struct head *h, size_t from)
{
	uint8_t *b = (uint8_t *)h;
	for (size_t i = from; i < h->size; i++)
		b[i] = (uint8_t)(i * 7 + h->tag);
}

static void verify(const struct head *h, size_t upto)
{
	const uint8_t *b = (const uint8_t *)h;
	for (size_t i = sizeof(*h); i < upto; i++)
		CHECKF(b[i] == (uint8_t)(i * 7 + h->tag),
		       "block %p (%zu bytes) byte %zu", (void *)h, h->size, i);
}

static struct head *make(uint64_t *rng)
{
	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	uint64_t r = *rng >> 33;
	size_t size = 16 + r % 5000;
	struct head *h;
	switch (r % 5) {
	case 0: {
		h = calloc(1, size);
		CHECK(h != NULL);
		for (size_t i = 0; i < size; i++)
			CHECK(((uint8_t *)h)[i] == 0);
		break;
	}
	case 1: {
		size_t align = (size_t)16 << (r / 5 % 9);	/* 16..4096 */
		void *p;
		CHECK(posix_memalign(&p, align, size) == 0);
		CHECKF(is_aligned(p, align), "%p not aligned to %zu", p, align);
		h = p;
		break;
	}
	case 2: {
		size_t align = (size_t)32 << (r / 5 % 4);
		h = aligned_alloc(align, (size + align - 1) & ~(align - 1));
		CHECK(h != NULL && is_aligned(h, align));
		break;
	}
	default:
		h = malloc(size);
		CHECK(h != NULL && is_aligned(h, 16));
	}
	CHECK(malloc_usable_size(h) >= size);
	h->size = size;
	h->tag = (size_t)(r >> 8);
	fill(h, sizeof(*h));
	return h;
}

static struct head *grow(struct head *h, uint64_t *rng)
{
	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	size_t size = 16 + (*rng >> 33) % 6000;
	size_t kept = size < h->size ? size : h->size;
	h = realloc(h, size);
	CHECK(h != NULL);
	verify(h, kept);
	h->size = size;
	CHECK(malloc_usable_size(h) >= size);
	fill(h, kept);
	return h;
}

static void *stress_thread(void *arg)
{
	uintptr_t t = (uintptr_t)arg;
	uint64_t rng = t + 1;
	for (int i = 0; i < ROUNDS; i++) {
		struct head *h = make(&rng);
		if (i % 7 == 0)
			h = grow(h, &rng);
		/* to the next thread's mailbox; free what was there */
		struct head *old = atomic_exchange(
			&mailbox[(t + 1) % THREADS][(unsigned)i % MAILBOX], h);
		if (old != NULL) {
			verify(old, old->size);
			free(old);
		}
	}
	return NULL;
}

static void threads_child(void)
{
	uint64_t live_before = stats().guarded_live;
	pthread_t th[THREADS];
	for (uintptr_t t = 0; t < THREADS; t++)
		CHECK(pthread_create(&th[t], NULL, stress_thread,
				     (void *)t) == 0);
	for (int t = 0; t < THREADS; t++)
		CHECK(pthread_join(th[t], NULL) == 0);
	for (int t = 0; t < THREADS; t++)
		for (int i = 0; i < MAILBOX; i++) {
			struct head *h = atomic_exchange(&mailbox[t][i], NULL);
			if (h != NULL) {
				verify(h, h->size);
				free(h);
			}
		}
	/* The C library keeps a few blocks for the threads it ran (the DTV
	 * of each cached stack, ...): a handful, not the thousands freed. */
	struct tl_stats st = stats();
	CHECKF(st.guarded_total > 20 &&
	       st.guarded_live <= live_before + 2 * THREADS,
	       "guarded %llu, live %llu (was %llu)",
	       (unsigned long long)st.guarded_total,
	       (unsigned long long)st.guarded_live,
	       (unsigned long long)live_before);
}

static void threads_corrupt_rate1(void)
{
	expect_clean(test_name(), RATE1);
}

static void threads_corrupt_rate3(void)
{
	expect_clean(test_name(), "TLMALLOC_GUARDED_RATE=3");
}

/* ---- the option ---- */

static void no_pool_child(void)
{
	free(malloc(32));
	struct tl_stats st = stats();
	CHECK(st.guarded_mapped == 0 && st.guarded_total == 0);
	long v = -1;
	CHECK(tl_option_get("guarded_rate", &v) == 0 && v == 0);
	CHECK(tl_option_get("guarded_slots", &v) == 0 && v == 128);
	printf("ok\n");
}

/* The child warns once on stderr, keeps the defaults and runs on. */
static void expect_warning(const char *name, const char *env)
{
	char out[256], err[1024], line[256];
	int st = child_run(name, env, out, sizeof(out), err, sizeof(err));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st,
	       err);
	snprintf(line, sizeof(line),
		 "tlmalloc: %s: not a whole number in range; keeping the "
		 "default\n", env);
	CHECKF(strcmp(err, line) == 0, "stderr: %s", err);
	CHECKF(strncmp(out, "ok\n", 3) == 0, "stdout: %s", out);
}

static void bad_rate_silent(void)
{
	expect_warning(test_name(), "TLMALLOC_GUARDED_RATE=-1");
}

static void bad_slots_silent(void)
{
	expect_warning(test_name(), "TLMALLOC_GUARDED_SLOTS=0");
	expect_warning(test_name(), "TLMALLOC_GUARDED_SLOTS=257");
}

static void off_by_default(void)
{
	char out[256], err[1024];
	int st = child_run(test_name(), NULL, out, sizeof(out), err,
			   sizeof(err));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0 && err[0] == '\0',
	       "status %d: %s", st, err);
}

static const struct test_case cases[] = {
	TEST_CHILD(overflow_silent, overflow_child),
	TEST_CHILD(overflow_slack_rule, overflow_slack_child),
	TEST_CHILD(underflow_silent, underflow_child),
	TEST_CHILD(underflow_rule, underflow_rule_child),
	TEST_CHILD(use_after_free_silent, use_after_free_child),
	TEST_CHILD(use_after_free_busy_pool, use_after_free_busy_child),
	TEST_CHILD(double_free_silent, double_free_child),
	TEST_CHILD(interior_free_silent, interior_free_child),
	TEST_CHILD(usable_freed_silent, usable_freed_child),
	TEST_CHILD(object_size_rule, object_size_child),
	TEST_CHILD(object_size_freed_silent, object_size_freed_child),
	TEST_CHILD(own_fault_not_reported, own_fault_child),
	TEST_CHILD(pool_bounded, pool_bounded_child),
	TEST_CHILD(threads_corrupt_rate1, threads_child),
	TEST_CHILD(threads_corrupt_rate3, threads_child),
	TEST_CHILD(bad_rate_silent, no_pool_child),
	TEST_CHILD(bad_slots_silent, no_pool_child),
	TEST_CHILD(off_by_default, no_pool_child),
};

int main(int argc, char **argv)
{
	return child_main(argc, argv, cases, TEST_COUNT(cases));
}
