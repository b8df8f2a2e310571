/*
 * trust.c - options, out-of-memory, and misuse reported clearly (huge
 * blocks' reuse, cut, gathered and grown: huge.c).
 *
 * Each case is named after the failure it catches:
 *   option_get_set_broken      tl_option_get/tl_option_set round trip, range
 *                              checks and unknown names
 *   bad_option_value_silent    TLMALLOC_PURGE_DELAY=abc must print one
 *                              warning naming it and keep the default
 *   fault_injection_crashes    with the fault_map option the Nth mapping
 *                              fails (with fault_oom, every one from the
 *                              Nth): malloc returns NULL with ENOMEM, and
 *                              the heap works again afterwards
 *   rlimit_oom_crashes         under RLIMIT_AS: every failing call returns
 *                              NULL with ENOMEM, the blocks obtained are
 *                              usable, and after freeing, allocation works
 *   foreign_realloc_silent     realloc/malloc_usable_size/free of pointers
 *   foreign_usable_size_silent tlmalloc never returned: one line on stderr
 *   foreign_free_silent        naming the call and the pointer, then abort
 *   static_free_faults         free of a static array or a string literal
 *   literal_free_faults        of the executable: the same line, not a
 *                              segfault in the fast path's read
 *   abandoned_free_blocks_resident  a thread exits with one live block
 *                              of a medium page and many freed ones: at a
 *                              purge, the freed blocks' memory goes back
 *                              to the OS (mincore) and leaves the
 *                              statistics' held bytes, the live block
 *                              keeps its contents
 *   abandoned_blocks_purged_at_exit  the same page is given back at the
 *                              exit already, so a thread that adopts it
 *                              within the purge delay pays page faults to
 *                              refill its blocks (they must come back as
 *                              they were)
 *   abandoned_blocks_kept_idle the same page with a purge delay of 1 ms:
 *                              the purger gives the freed blocks back with
 *                              no call from the program
 *   abandoned_purge_uncounted  a thread exits with more medium pages half
 *                              free than may wait for the purge delay: the
 *                              others' free blocks are given back at the
 *                              exit, and the statistics' purged counts them
 *   abandoned_memory_kept      blocks of an exited thread, all freed later by
 *                              another: the memory is given back (trim)
 *   abandoned_empty_pages_kept a thread frees all its blocks and exits: its
 *                              pages, left uncounted, are given back at a
 *                              trim all the same
 *   zero_aligned_outside_mapping  aligned_alloc(4 MiB, 0) and friends: the
 *                              block lies in tlmalloc's memory (a usable
 *                              byte at least), not just past a mapping
 *   double_free_hangs          a block of a full page freed twice (the
 *                              generic path's free): reported as a double
 *                              free at the second free, not a list that
 *                              loops when counted (misuse.c has the rest)
 * The death cases run the misuse in a child process (this program, exec'd
 * with the case name and "child") and check its signal and stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#if !defined(__GLIBC__)
int malloc_trim(size_t pad);	/* glibc's; musl does not declare it */
#endif
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <pthread.h>
#include <unistd.h>

#include "ts_malloc.h"

#include "tlmalloc.h"
#include "check.h"
#include "child.h"

static void option_get_set_broken(void)
{
	long v = -1;
	CHECK(tl_option_get("purge_delay", &v) == 0);
	CHECKF(v == 100, "default purge_delay %ld", v);
	/* the default build cannot fill freed blocks: 0 only */
	CHECK(tl_option_get("secure_fill", &v) == 0 && v == 0);
	CHECK(tl_option_set("secure_fill", 1) == EINVAL);
	CHECK(tl_option_get("secure_fill", &v) == 0 && v == 0);
	CHECK(tl_option_set("purge_delay", 250) == 0);
	CHECK(tl_option_get("purge_delay", &v) == 0 && v == 250);
	CHECK(tl_option_set("purge_delay", -1) == EINVAL);
	CHECK(tl_option_set("purge_delay", 3600001) == EINVAL);
	CHECK(tl_option_get("purge_delay", &v) == 0 && v == 250);
	CHECK(tl_option_set("no_such_option", 1) == EINVAL);
	CHECK(tl_option_get("no_such_option", &v) == EINVAL);
	CHECK(tl_option_get("verbose", NULL) == EINVAL);
	CHECK(tl_option_get(NULL, &v) == EINVAL);
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

static void print_purge_delay(void)
{
	long v = -1;
	CHECK(tl_option_get("purge_delay", &v) == 0);
	printf("purge_delay=%ld\n", v);
	fflush(stdout);
}

static void bad_option_value_silent(void)
{
	char out[256], err[1024];
	int st = child_run(test_name(),
			   "TLMALLOC_PURGE_DELAY=abc", out, sizeof(out), err,
			   sizeof(err));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	CHECKF(strstr(out, "purge_delay=100\n") != NULL, "child said: %s", out);
	CHECKF(strstr(err, "tlmalloc: TLMALLOC_PURGE_DELAY=abc: not a whole "
			   "number in range; keeping the default\n") != NULL,
	       "stderr: %s", err);

	st = child_run(test_name(), "TLMALLOC_PURGE_DELAY=250",
		       out, sizeof(out), err, sizeof(err));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECKF(strstr(out, "purge_delay=250\n") != NULL, "child said: %s", out);
	CHECKF(err[0] == '\0', "a good value warned: %s", err);
}

static void fault_injection_crashes(void)
{
	/* A huge block is a mapping of its own: the first to fail. */
	CHECK(tl_option_set("fault_map", 1) == 0);
	errno = 0;
	void *p = malloc(8 << 20);
	CHECKF(p == NULL && errno == ENOMEM, "p %p errno %d", p, errno);
	long left = -1;
	CHECK(tl_option_get("fault_map", &left) == 0 && left == 0);
	p = malloc(8 << 20);
	CHECK(p != NULL);
	memset(p, 1, 8 << 20);
	free(p);

	/* The first medium block needs a new segment: fail every mapping
	 * (fault_oom: malloc retries once it has given memory back) for a
	 * block above 64 KiB, which no free small page can hold (oom.c has
	 * the memory held used instead). */
	CHECK(tl_option_set("fault_oom", 1) == 0);
	errno = 0;
	p = malloc(100000);
	CHECKF(p == NULL && errno == ENOMEM, "p %p errno %d", p, errno);
	CHECK(tl_option_set("fault_oom", 0) == 0);
	p = malloc(100000);
	CHECK(p != NULL);
	memset(p, 2, 100000);
	free(p);

	/* calloc, realloc and the aligned family report it the same way
	 * (with the huge cache emptied: it would grow a freed 8 MiB block). */
	malloc_trim(0);
	CHECK(tl_option_set("fault_map", 1) == 0);
	errno = 0;
	CHECK(calloc(1, 16 << 20) == NULL && errno == ENOMEM);
	char *q = malloc(100);
	CHECK(q != NULL);
	memset(q, 7, 100);
	CHECK(tl_option_set("fault_map", 1) == 0);
	errno = 0;
	CHECK(realloc(q, 32 << 20) == NULL && errno == ENOMEM);
	CHECK(q[0] == 7 && q[99] == 7);	/* the old block is intact */
	free(q);
	/* (q's segment is free now: malloc would unmap it and map again) */
	CHECK(tl_option_set("fault_oom", 1) == 0);
	void *a = NULL;
	CHECK(posix_memalign(&a, 8 << 20, 100) == ENOMEM && a == NULL);
	CHECK(tl_option_set("fault_oom", 0) == 0);
	CHECK(posix_memalign(&a, 8 << 20, 100) == 0 && a != NULL);
	free(a);
}

static void rlimit_oom_crashes(void)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 512u << 20, 512u << 20 };
		CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
		enum { MAX = 4096 };
		static char *blocks[MAX];
		size_t n = 0, failures = 0;
		for (size_t i = 0; i < MAX && failures < 8; i++) {
			size_t size = (i % 2) ? (1u << 20) : 3000;
			errno = 0;
			char *p = malloc(size);
			if (p == NULL) {
				CHECKF(errno == ENOMEM, "errno %d", errno);
				failures++;
				continue;
			}
			p[0] = 1;
			p[size - 1] = 2;
			blocks[n++] = p;
		}
		CHECKF(failures > 0, "512 MiB never ran out (%zu blocks)", n);
		for (size_t i = 0; i < n; i += 2)
			free(blocks[i]);
		for (size_t i = 1; i < n; i += 2)
			free(blocks[i]);
		tl_trim();
		char *p = malloc(64 << 20);
		CHECK(p != NULL);
		memset(p, 3, 64 << 20);
		free(p);
		for (int i = 0; i < 1000; i++) {
			void *s = malloc(100);
			CHECK(s != NULL);
			free(s);
		}
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
}

static void foreign_realloc_child(void)
{
	char on_stack[64];
	void *p = realloc(on_stack + 8, 100);
	printf("realloc returned %p\n", p);
}

static void foreign_usable_size_child(void)
{
	char on_stack[64];
	printf("usable %zu\n", malloc_usable_size(on_stack));
}

/* A pointer into memory mapped by someone else, on a segment boundary's
 * page: what tlmalloc would read there is not its own. */
static void foreign_free_child(void)
{
	size_t seg = (size_t)4 << 20;
	char *m = mmap(NULL, 3 * seg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	char *inside = (char *)(((uintptr_t)m + seg) & ~(uintptr_t)(seg - 1));
	free(inside + 4096);
}

/* A static array and a string literal of this executable: their 4 MiB
 * base is usually unmapped (the read of free's fast path faulted there). */
static char static_array[64];

static void static_free_child(void)
{
	free(static_array + 16);
}

static void literal_free_child(void)
{
	const char *volatile literal = "a string literal";
	free((void *)literal);
}

/* Fill two pages of one class, free a block of the first (full) page
 * twice (the second free must abort), then make tlmalloc count that page's
 * frees. */
static void double_free_child(void)
{
	enum { N = 8192 };
	static void *b[N];
	for (int i = 0; i < N; i++)
		b[i] = malloc(48);
	free(b[10]);
	free(b[10]);
	tl_trim();
	printf("not detected\n");
}

enum { MEDIUM_BLOCKS = 14, MEDIUM_SIZE = 64 << 10 };
static unsigned char *medium_blocks[MEDIUM_BLOCKS];
static uint64_t held_before_exit;

/* n blocks of MEDIUM_SIZE into b, each written whole with byte. */
static void medium_fill(unsigned char **b, int n, int byte)
{
	for (int i = 0; i < n; i++) {
		CHECK((b[i] = malloc(MEDIUM_SIZE)) != NULL);
		memset(b[i], byte, MEDIUM_SIZE);
	}
}

static void *medium_free_and_exit(void *arg)
{
	(void)arg;
	medium_fill(medium_blocks, MEDIUM_BLOCKS, 0x33);
	for (int i = 1; i < MEDIUM_BLOCKS; i++)
		free(medium_blocks[i]);
	struct tl_stats st;
	CHECK(tl_stats_get(&st, sizeof(st)) == sizeof(st));
	held_before_exit = st.held;
	return NULL;
}

/* OS pages of [lo, hi) that are resident (mincore: exact, no access). */
static size_t resident_pages(uintptr_t lo, uintptr_t hi)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char vec[MEDIUM_SIZE / 4096 + 1];
	size_t n = (hi - lo) / ps, count = 0;
	CHECK(n <= sizeof(vec));
	CHECK(mincore((void *)lo, hi - lo, vec) == 0);
	for (size_t i = 0; i < n; i++)
		count += vec[i] & 1;
	return count;
}

/* Freed blocks of medium_blocks (all but the first) still resident. */
static size_t freed_pages_resident(void)
{
	uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
	size_t count = 0;
	for (int i = 1; i < MEDIUM_BLOCKS; i++) {
		uintptr_t b = (uintptr_t)medium_blocks[i];
		uintptr_t lo = (b + 16 + ps - 1) & ~(ps - 1);
		uintptr_t hi = (b + MEDIUM_SIZE) & ~(ps - 1);
		count += resident_pages(lo, hi);
	}
	return count;
}

static void abandoned_free_blocks_resident(void)
{
	pthread_t t;
	/* given back at a purge (tl_trim here), not before */
	CHECK(tl_option_set("purge_delay", 3600000) == 0);
	CHECK(pthread_create(&t, NULL, medium_free_and_exit, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	/* The freed blocks, written whole before, are given back but for
	 * each one's first OS page (its link and mark): nothing to give back
	 * with OS pages of half a block or more (64 KiB pages on arm64). */
	uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
	if (ps * 2 > MEDIUM_SIZE) {
		printf("OS pages of %zu KiB: no whole page past a block's "
		       "first; contents checked only\n", (size_t)ps >> 10);
		goto contents;
	}
	tl_trim();
	size_t left = freed_pages_resident();
	CHECKF(left == 0, "freed blocks of an exited thread: %zu pages still "
	       "resident after a purge", left);
	/* The statistics do not count them as held any more (with a few OS
	 * pages of slack: the main thread may have carved a new class's
	 * first blocks meanwhile). */
	struct tl_stats st;
	CHECK(tl_stats_get(&st, sizeof(st)) == sizeof(st));
	uint64_t given = (MEDIUM_BLOCKS - 1) * (uint64_t)(MEDIUM_SIZE - ps);
	CHECKF(st.held + given <= held_before_exit + 4 * ps,
	       "held %" PRIu64 " KiB "
	       "before the exit, %" PRIu64 " KiB after", held_before_exit >> 10,
	       st.held >> 10);
contents:
	for (int i = 0; i < MEDIUM_SIZE; i++)
		CHECK(medium_blocks[0][i] == 0x33);
	free(medium_blocks[0]);
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

/* The freed blocks of an exited thread's page come back from malloc in a
 * new thread (which adopts the page) with the bytes they held. */
static void *medium_reuse(void *arg)
{
	int *same = arg;
	unsigned char *got[MEDIUM_BLOCKS];
	for (int i = 1; i < MEDIUM_BLOCKS; i++) {
		CHECK((got[i] = malloc(MEDIUM_SIZE)) != NULL);
		for (int j = 1; j < MEDIUM_BLOCKS; j++) {
			if (got[i] != medium_blocks[j])
				continue;
			/* past its link and mark, and its first OS page */
			size_t at = (size_t)sysconf(_SC_PAGESIZE) + 16;
			*same += at < MEDIUM_SIZE && got[i][at] == 0x33 &&
				 got[i][MEDIUM_SIZE - 1] == 0x33;
		}
	}
	for (int i = 1; i < MEDIUM_BLOCKS; i++)
		free(got[i]);
	return NULL;
}

static void abandoned_blocks_purged_at_exit(void)
{
	pthread_t t;
	int same = 0;
	CHECK(tl_option_set("purge_delay", 3600000) == 0);
	CHECK(pthread_create(&t, NULL, medium_free_and_exit, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	if (ps * 2 > MEDIUM_SIZE) {
		printf("OS pages of %zu KiB: nothing is given back inside a "
		       "block; not checked\n", ps >> 10);
		goto out;
	}
	/* Not given back before the purge delay: still resident... */
	size_t left = freed_pages_resident();
	size_t all = (MEDIUM_BLOCKS - 1) * (MEDIUM_SIZE / ps - 1);
	CHECKF(left == all, "%zu of %zu pages of the freed blocks resident "
	       "after the exit", left, all);
	/* ...and a thread that adopts the page gets them back as they were,
	 * with no page fault and no zeroing to refill them. */
	CHECK(pthread_create(&t, NULL, medium_reuse, &same) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECKF(same == MEDIUM_BLOCKS - 1, "%d of %d freed blocks came back "
	       "as they were", same, MEDIUM_BLOCKS - 1);
out:
	free(medium_blocks[0]);
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

/* With a short purge delay, an idle program gets the memory back with no
 * call of its own: the purger does it. */
static void abandoned_blocks_kept_idle(void)
{
	pthread_t t;
	CHECK(tl_option_set("purge_delay", 1) == 0);
	CHECK(pthread_create(&t, NULL, medium_free_and_exit, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), left = 0;
	if (ps * 2 > MEDIUM_SIZE) {
		printf("OS pages of %zu KiB: not checked\n", ps >> 10);
		goto out;
	}
	/* Wait for the event, not for a time: up to 20 s under load. */
	for (int tries = 0; tries < 2000; tries++) {
		if ((left = freed_pages_resident()) == 0)
			break;
		usleep(10000);
	}
	CHECKF(left == 0, "%zu pages of an exited thread's freed blocks still "
	       "resident after 20 s idle", left);
out:
	free(medium_blocks[0]);
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

/* More medium pages than may wait for the purge delay (16): 24 pages of
 * 64 KiB blocks (16 a page of 1 MiB), every eighth block left live and the
 * others freed, so each page is abandoned at least half free and 8 of them
 * give their free blocks back at the exit (abandoned.c). */
enum { PURGE_BLOCKS = 24 * 16, PURGE_LIVE_EVERY = 8 };
static unsigned char *purge_blocks[PURGE_BLOCKS];

static void *medium_pages_free_and_exit(void *arg)
{
	(void)arg;
	medium_fill(purge_blocks, PURGE_BLOCKS, 0x44);
	for (int i = 0; i < PURGE_BLOCKS; i++)
		if (i % PURGE_LIVE_EVERY != 0)
			free(purge_blocks[i]);
	return NULL;
}

static void abandoned_purge_uncounted(void)
{
	pthread_t t;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	struct tl_stats before, after;
	CHECK(tl_option_set("purge_delay", 3600000) == 0);
	CHECK(tl_stats_get(&before, sizeof(before)) == sizeof(before));
	CHECK(pthread_create(&t, NULL, medium_pages_free_and_exit, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(tl_stats_get(&after, sizeof(after)) == sizeof(after));
	if (ps * 2 > MEDIUM_SIZE) {
		printf("OS pages of %zu KiB: nothing is given back inside a "
		       "block; not checked\n", ps >> 10);
	} else {
		/* 8 pages past the 16 that wait, with 14 free blocks each
		 * (13 in a segment's first page, which has 15), given back
		 * but for each block's first OS page: 12 blocks a page, the
		 * least, whichever pages wait */
		uint64_t least = 8 * 12 * (uint64_t)(MEDIUM_SIZE - ps);
		CHECKF(after.purged >= before.purged + least,
		       "purged: %" PRIu64 " KiB before the exit, %" PRIu64
		       " KiB after; %" PRIu64 " KiB given back at the exit",
		       before.purged >> 10, after.purged >> 10, least >> 10);
	}
	for (int i = 0; i < PURGE_BLOCKS; i += PURGE_LIVE_EVERY) {
		for (int j = 0; j < MEDIUM_SIZE; j += 4096)
			CHECK(purge_blocks[i][j] == 0x44);
		free(purge_blocks[i]);
	}
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

enum { ABANDON_BLOCKS = 8192, ABANDON_SIZE = 1000 };

static void *allocate_and_exit(void *arg)
{
	void **blocks = arg;
	for (int i = 0; i < ABANDON_BLOCKS; i++) {
		blocks[i] = malloc(ABANDON_SIZE);
		CHECK(blocks[i] != NULL);
		memset(blocks[i], i, ABANDON_SIZE);
	}
	return NULL;
}

static void abandoned_memory_kept(void)
{
	static void *blocks[ABANDON_BLOCKS];
	pthread_t t;
	tl_trim();
	unsigned long before = get_data_segment_size();
	CHECK(pthread_create(&t, NULL, allocate_and_exit, blocks) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	unsigned long live = get_data_segment_size();
	CHECKF(live >= before + (unsigned long)ABANDON_BLOCKS * ABANDON_SIZE,
	       "held %lu before, %lu with the blocks", before, live);
	for (int i = 0; i < ABANDON_BLOCKS; i++)
		free(blocks[i]);
	tl_trim();
	unsigned long after = get_data_segment_size();
	CHECKF(after < before + (1ul << 20),
	       "held %lu before, %lu with 8 MB of blocks, %lu after freeing "
	       "them all and trimming", before, live, after);
}

static void *allocate_free_and_exit(void *arg)
{
	void **blocks = arg;
	for (int i = 0; i < ABANDON_BLOCKS; i++) {
		blocks[i] = malloc(ABANDON_SIZE);
		CHECK(blocks[i] != NULL);
		memset(blocks[i], i, ABANDON_SIZE);
	}
	for (int i = 0; i < ABANDON_BLOCKS; i++)
		free(blocks[i]);
	return NULL;
}

static void abandoned_empty_pages_kept(void)
{
	static void *blocks[ABANDON_BLOCKS];
	pthread_t t;
	tl_trim();
	unsigned long before = get_data_segment_size();
	/* Its pages are left at its exit without a count (abandoned.c):
	 * empty, with no frees from other threads to find them by. */
	CHECK(pthread_create(&t, NULL, allocate_free_and_exit, blocks) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	tl_trim();
	unsigned long after = get_data_segment_size();
	CHECKF(after < before + (1ul << 20),
	       "held %lu before, %lu after a thread freed its 8 MB of blocks, "
	       "exited, and a trim", before, after);
}

static void zero_aligned_outside_mapping(void)
{
	size_t aligns[] = { 128 << 10, 1 << 20, 4 << 20, 16 << 20 };
	for (size_t i = 0; i < TEST_COUNT(aligns); i++) {
		char *p = aligned_alloc(aligns[i], 0);
		CHECK(p != NULL && ((uintptr_t)p & (aligns[i] - 1)) == 0);
		size_t usable = malloc_usable_size(p);
		CHECKF(usable > 0, "alignment %zu: usable 0", aligns[i]);
		memset(p, 1, usable);	/* usable bytes are ours to write */
		void *q = NULL;
		CHECK(posix_memalign(&q, aligns[i], 0) == 0);
		CHECK(malloc_usable_size(q) > 0 && q != p);
		free(q);
		free(p);
	}
}

static const struct test_case cases[] = {
	TEST_CASE(option_get_set_broken),
	TEST_CHILD(bad_option_value_silent, print_purge_delay),
	TEST_CASE(fault_injection_crashes),
	TEST_CASE(rlimit_oom_crashes),
	TEST_DEATH(foreign_realloc_silent, foreign_realloc_child,
		   "realloc", "not allocated by tlmalloc"),
	TEST_DEATH(foreign_usable_size_silent, foreign_usable_size_child,
		   "malloc_usable_size", "not allocated by tlmalloc"),
	TEST_DEATH(foreign_free_silent, foreign_free_child,
		   "free", "not allocated by tlmalloc"),
	TEST_DEATH(static_free_faults, static_free_child,
		   "free", "not allocated by tlmalloc"),
	TEST_DEATH(literal_free_faults, literal_free_child,
		   "free", "not allocated by tlmalloc"),
	TEST_DEATH(double_free_hangs, double_free_child, "free", "double free"),
	TEST_CASE(abandoned_free_blocks_resident),
	TEST_CASE(abandoned_blocks_purged_at_exit),
	TEST_CASE(abandoned_blocks_kept_idle),
	TEST_CASE(abandoned_purge_uncounted),
	TEST_CASE(abandoned_memory_kept),
	TEST_CASE(abandoned_empty_pages_kept),
	TEST_CASE(zero_aligned_outside_mapping),
};

int main(int argc, char **argv)
{
	return child_main(argc, argv, cases, TEST_COUNT(cases));
}
