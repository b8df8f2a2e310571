/*
 * oom.c - out of memory with free memory inside: when the OS refuses a
 * mapping, malloc uses what tlmalloc holds before it returns NULL
 * (heap.c, "out of memory").
 *
 * The program of each case allocates blocks of 4-10 KiB until malloc
 * returns NULL, frees every other block, and then asks for 1000 blocks of
 * 2 KiB: all 1000 must come (from the free blocks of the larger classes),
 * hold their contents, and free (half of them with free_sized) without a
 * report.  The OS refuses either through RLIMIT_AS (512 MiB) or through
 * the fault_oom option (every mapping from the 40th on fails).  Each case
 * runs in a child process (fork), so the limits stay there.
 *
 * Each case is named after the failure it catches:
 *   rlimit_free_memory_unused          one thread, RLIMIT_AS
 *   rlimit_threads_free_memory_unused  four threads at once, each with
 *                                      its own blocks, RLIMIT_AS
 *   fault_free_memory_unused           one thread, fault_oom
 *   fault_threads_free_memory_unused   four threads, fault_oom
 *   fault_abandoned_memory_unused      a thread exhausts the memory, frees
 *                                      every other block and exits; the
 *                                      main thread's 2 KiB blocks come from
 *                                      the pages it abandoned
 *   fault_other_kind_unused            free 1 MiB pages (medium blocks,
 *                                      all freed) hold 2 KiB blocks when
 *                                      no other page is left: none stays
 *                                      free at NULL
 *   fault_surplus_unused               another thread's cached empty pages
 *                                      reach the pool once it looks for a
 *                                      page after the first NULL
 *   fault_huge_not_retried             a huge block whose mapping fails
 *                                      while a segment of freed blocks is
 *                                      mapped: the segment is unmapped and
 *                                      the mapping tried again
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tlmalloc.h"
#include "check.h"

void free_sized(void *p, size_t size);

enum { THREADS = 4, SMALL = 2048, WANTED = 1000 };

/* Set up the refusal in the child: RLIMIT_AS, or fault_oom. */
static void refuse(bool rlimit)
{
	if (rlimit) {
		struct rlimit rl = { 512u << 20, 512u << 20 };
		CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
	} else {
		CHECK(tl_option_set("fault_oom", 40) == 0);
	}
}

/* A list of blocks, kept in the program's own memory (not in the heap
 * being exhausted). */
enum { LIST_MAX = 1 << 18 };
struct blocks {
	char **p;
	size_t n;
};

static void blocks_push(struct blocks *b, char *p)
{
	static char *storage[THREADS + 2][LIST_MAX];
	static int used;
	if (b->p == NULL) {
		int slot = __atomic_fetch_add(&used, 1, __ATOMIC_RELAXED);
		CHECK(slot < THREADS + 2);
		b->p = storage[slot];
	}
	CHECKF(b->n < LIST_MAX, "%zu blocks: the memory never ran out", b->n);
	b->p[b->n++] = p;
}

/* Blocks of 4-10 KiB until malloc says no; each one's first byte is its
 * index's low byte. */
static void exhaust(struct blocks *b, uint64_t seed)
{
	uint64_t rng = seed | 1;
	for (;;) {
		size_t size = 4096 + rng_next(&rng) % (6 * 1024 + 1);
		errno = 0;
		char *p = malloc(size);
		if (p == NULL) {
			CHECKF(errno == ENOMEM, "errno %d", errno);
			break;
		}
		p[0] = (char)b->n;
		blocks_push(b, p);
	}
	CHECKF(b->n > 100, "only %zu blocks before NULL", b->n);
}

static void free_every_other(struct blocks *b)
{
	for (size_t i = 0; i < b->n; i += 2) {
		CHECK(b->p[i][0] == (char)i);
		free(b->p[i]);
		b->p[i] = NULL;
	}
}

/* WANTED blocks of SMALL bytes must come; then everything is freed. */
static void reuse(struct blocks *b, uint64_t tag)
{
	static __thread char *got[WANTED];
	for (int i = 0; i < WANTED; i++) {
		got[i] = malloc(SMALL);
		CHECKF(got[i] != NULL, "malloc(%d) number %d of %d returned "
		       "NULL with half the memory free", SMALL, i + 1, WANTED);
		pattern_fill(got[i], SMALL, tag + (uint64_t)i);
	}
	for (int i = 0; i < WANTED; i++) {
		CHECKF(pattern_find_damage(got[i], SMALL, tag + (uint64_t)i) ==
		       SMALL, "2 KiB block %d overwritten", i);
		if (i % 2)
			free_sized(got[i], SMALL);
		else
			free(got[i]);
	}
	for (size_t i = 1; i < b->n; i += 2) {
		CHECK(b->p[i][0] == (char)i);
		free(b->p[i]);
	}
	b->n = 0;
}

static pthread_barrier_t barrier;

static void *worker(void *arg)
{
	struct blocks b = { 0 };
	uintptr_t id = (uintptr_t)arg;
	pthread_barrier_wait(&barrier);
	exhaust(&b, 0x9e3779b97f4a7c15ull * (id + 1));
	pthread_barrier_wait(&barrier);	/* all have seen NULL */
	free_every_other(&b);
	pthread_barrier_wait(&barrier);
	reuse(&b, id << 32);
	return NULL;
}

/* Run fn in a child process; it must exit 0. */
static void in_child(void (*fn)(bool), bool rlimit)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(120);	/* a hang fails the case */
		fn(rlimit);
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
}

static double seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void one_thread(bool rlimit)
{
	struct blocks b = { 0 };
	refuse(rlimit);
	exhaust(&b, 1);
	free_every_other(&b);
	size_t n = b.n;
	double t0 = seconds();
	reuse(&b, 7);
	/* for docs/design.md; not checked */
	printf("%zu blocks before NULL; %d blocks of %d bytes, then everything "
	       "freed, in %.3f s\n", n, WANTED, SMALL, seconds() - t0);
	fflush(stdout);
	CHECK(tl_option_set("fault_oom", 0) == 0);
	void *p = malloc(SMALL);	/* still works */
	CHECK(p != NULL);
	free(p);
}

static void four_threads(bool rlimit)
{
	pthread_t t[THREADS];
	CHECK(pthread_barrier_init(&barrier, NULL, THREADS) == 0);
	/* the threads (and their stacks) exist before memory runs out */
	for (uintptr_t i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
	refuse(rlimit);
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
}

static void rlimit_free_memory_unused(void)
{
	in_child(one_thread, true);
}

static void rlimit_threads_free_memory_unused(void)
{
	in_child(four_threads, true);
}

static void fault_free_memory_unused(void)
{
	in_child(one_thread, false);
}

static void fault_threads_free_memory_unused(void)
{
	in_child(four_threads, false);
}

static struct blocks abandoned;

static void *exhaust_and_exit(void *arg)
{
	(void)arg;
	exhaust(&abandoned, 3);
	free_every_other(&abandoned);
	return NULL;
}

static void abandoned_child(bool rlimit)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, exhaust_and_exit, NULL) == 0);
	refuse(rlimit);
	CHECK(pthread_join(t, NULL) == 0);
	reuse(&abandoned, 11);
}

static void fault_abandoned_memory_unused(void)
{
	in_child(abandoned_child, false);
}

static void other_kind_child(bool rlimit)
{
	(void)rlimit;
	/* 16 MiB of 20 KiB blocks in 1 MiB pages, all freed and handed to
	 * the pool (malloc_trim would purge: purge_delay keeps them) */
	enum { MEDIUM = 800 };
	static char *m[MEDIUM];
	CHECK(tl_option_set("purge_delay", 3600000) == 0);
	for (int i = 0; i < MEDIUM; i++)
		CHECK((m[i] = malloc(20 << 10)) != NULL);
	for (int i = 0; i < MEDIUM; i++)
		free(m[i]);
	CHECK(tl_option_set("fault_oom", 1) == 0);	/* no mapping from now */
	struct blocks b = { 0 };
	for (;;) {
		char *p = malloc(SMALL);
		if (p == NULL)
			break;
		blocks_push(&b, p);
	}
	struct tl_stats st;
	tl_stats_get(&st, sizeof(st));
	CHECKF(st.pages_free == 0, "NULL after %zu blocks of 2 KiB with %llu "
	       "free pages", b.n, (unsigned long long)st.pages_free);
	CHECKF(b.n * SMALL > MEDIUM * (20u << 10) / 2,
	       "only %zu blocks of 2 KiB", b.n);
	for (size_t i = 0; i < b.n; i++)
		free(b.p[i]);
}

static void fault_other_kind_unused(void)
{
	in_child(other_kind_child, false);
}

/* The other thread: pages of 4 KiB blocks, freed; a block of another
 * class sweeps them (empty pages: 4 to its cache, the rest to the pool);
 * then, after the main thread's NULL, one more class: it looks for a
 * page. */
static void *keep_surplus(void *arg)
{
	(void)arg;
	static char *q[256];
	for (int i = 0; i < 256; i++)
		CHECK((q[i] = malloc(4096)) != NULL);
	for (int i = 0; i < 256; i++)
		free(q[i]);
	CHECK(malloc(3000) != NULL);
	pthread_barrier_wait(&barrier);
	pthread_barrier_wait(&barrier);	/* the main thread saw NULL */
	CHECK(malloc(6000) != NULL);
	pthread_barrier_wait(&barrier);
	pthread_barrier_wait(&barrier);	/* stay alive: pages stay owned */
	return NULL;
}

static void surplus_child(bool rlimit)
{
	(void)rlimit;
	pthread_t t;
	CHECK(pthread_barrier_init(&barrier, NULL, 2) == 0);
	CHECK(pthread_create(&t, NULL, keep_surplus, NULL) == 0);
	pthread_barrier_wait(&barrier);
	CHECK(tl_option_set("fault_oom", 1) == 0);	/* no mapping from now */
	struct blocks b = { 0 };
	char *p;
	while ((p = malloc(SMALL)) != NULL)
		blocks_push(&b, p);
	pthread_barrier_wait(&barrier);
	pthread_barrier_wait(&barrier);	/* it looked for a page */
	p = malloc(SMALL);
	CHECKF(p != NULL, "the other thread's cached empty pages not reused");
	free(p);
	pthread_barrier_wait(&barrier);
	CHECK(pthread_join(t, NULL) == 0);
	for (size_t i = 0; i < b.n; i++)
		free(b.p[i]);
}

static void fault_surplus_unused(void)
{
	in_child(surplus_child, false);
}

static void huge_retry_child(bool rlimit)
{
	(void)rlimit;
	/* a segment of 20 KiB blocks, all freed: wholly free */
	enum { MEDIUM = 100 };
	static char *m[MEDIUM];
	for (int i = 0; i < MEDIUM; i++)
		CHECK((m[i] = malloc(20 << 10)) != NULL);
	for (int i = 0; i < MEDIUM; i++)
		free(m[i]);
	CHECK(tl_option_set("fault_map", 1) == 0);	/* the next one fails */
	char *p = malloc(8 << 20);
	CHECKF(p != NULL, "no retry after the free segment was unmapped");
	p[0] = p[(8 << 20) - 1] = 1;
	free(p);
}

static void fault_huge_not_retried(void)
{
	in_child(huge_retry_child, false);
}

static const struct test_case cases[] = {
	TEST_CASE(rlimit_free_memory_unused),
	TEST_CASE(rlimit_threads_free_memory_unused),
	TEST_CASE(fault_free_memory_unused),
	TEST_CASE(fault_threads_free_memory_unused),
	TEST_CASE(fault_abandoned_memory_unused),
	TEST_CASE(fault_other_kind_unused),
	TEST_CASE(fault_surplus_unused),
	TEST_CASE(fault_huge_not_retried),
};

int main(int argc, char **argv)
{
	return run_tests(cases, TEST_COUNT(cases), argc, argv);
}
