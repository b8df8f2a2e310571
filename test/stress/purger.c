/*
 * purger.c - the purger thread of a threaded program: started when pages
 * are given back, without re-entering the heap that gave them.
 *   purger_start_reenters  a thread's sweep hands many empty pages back
 *                          (the first in the process, so the purger must
 *                          start): pthread_create allocates, and starting
 *                          it inside the sweep re-entered the half-swept
 *                          heap (a hang, or pages handed out twice).  The
 *                          blocks allocated around it must keep their
 *                          contents, and the case must end (alarm).
 *   purger_never_starts    after a thread exits, its empty pages must
 *                          leave the resident set within a few purge
 *                          delays, with no allocator call in between.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

enum { FIRST = 100, SECOND = 200, MB = 1 << 20 };

static void in_new_thread(void *(*fn)(void *))
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, fn, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
}

/* n blocks of size bytes, each filled with its index's low byte. */
static void **fill(size_t n, size_t size)
{
	void **p = malloc(n * sizeof(*p));
	CHECK(p != NULL);
	for (size_t i = 0; i < n; i++) {
		CHECK((p[i] = malloc(size)) != NULL);
		memset(p[i], (int)(i & 0xff), size);
	}
	return p;
}

static void check_and_free(void **p, size_t n, size_t size)
{
	for (size_t i = 0; i < n; i++) {
		const unsigned char *b = p[i];
		for (size_t k = 0; k < size; k++)
			CHECKF(b[k] == (i & 0xff), "block %zu of %zu bytes "
			       "overwritten at %zu", i, size, k);
		free(p[i]);
	}
	free(p);
}

static void *sweep_body(void *arg)
{
	(void)arg;
	/* A few pages of one class, all freed: the next sweep (due at once
	 * in so small a heap) hands them back. */
	size_t n1 = 4000;
	void **a = fill(n1, FIRST);
	check_and_free(a, n1, FIRST);
	/* Another class: no page yet, so a sweep, and in the middle of it
	 * the purger's pthread_create, whose allocations (of a class this
	 * heap has no page of either) would sweep again. */
	void **b = fill(n1, SECOND);
	void **c = fill(n1, FIRST);
	check_and_free(b, n1, SECOND);
	check_and_free(c, n1, FIRST);
	return NULL;
}

static void purger_start_reenters(void)
{
	alarm(60);	/* a hang ends the case with SIGALRM */
	in_new_thread(sweep_body);
}

/* The resident set, read without calling the allocator. */
static long resident_kib(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY);
	CHECK(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n > 0);
	buf[n] = '\0';
	const char *sp = strchr(buf, ' ');
	CHECK(sp != NULL);
	return strtol(sp + 1, NULL, 10) * (sysconf(_SC_PAGESIZE) / 1024);
}

static void *exit_body(void *arg)
{
	(void)arg;
	size_t n = 16 * MB / FIRST;
	void **a = fill(n, FIRST);
	check_and_free(a, n, FIRST);
	return NULL;
}

static void purger_never_starts(void)
{
	/* The default purge delay is 100 ms. */
	in_new_thread(exit_body);
	long before = resident_kib();
	long after = before;
	for (int i = 0; i < 50 && before - after < 8 * 1024; i++) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		after = resident_kib();
	}
	CHECKF(before - after >= 8 * 1024, "resident %ld KiB after the "
	       "thread exit, %ld KiB 5 s later", before, after);
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		TEST_CASE(purger_start_reenters),
		TEST_CASE(purger_never_starts),
	};
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
