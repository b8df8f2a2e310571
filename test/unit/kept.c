/*
 * kept.c - kept blocks (include/tlmalloc/kept.h, the option kept_bytes):
 * a thread keeps the blocks of other threads' pages it frees for its own
 * next mallocs of their class, and gives them back to their pages when it
 * exits or trims; a second free of a kept block, by anyone, is a double
 * free.  The option is set here at start (tl_option_set), before the
 * threads whose heaps keep are made; the main thread owns the blocks.
 *
 * Each case is named after the failure it catches:
 *   kept_not_reused          a thread that freed the main thread's blocks
 *                            does not get them back, newest first, at its
 *                            next mallocs of their size
 *   kept_without_option      with kept_bytes 0 it does (nothing is kept)
 *   kept_medium_carved       ... or, for a class above 1 KiB, its own head
 *                            page carves a fresh block instead (the slow
 *                            path's carve of a dry medium head, alloc.c)
 *   kept_past_limit          it keeps more than kept_bytes of a class
 *                            (1024 bytes: 16 blocks of 64), or the blocks
 *                            past it do not go back to their page
 *   kept_lost_at_exit        the blocks a thread kept do not go back to
 *                            their page when it exits: the owner's
 *                            statistics still count them live
 *   kept_lost_at_trim        ... or when it calls tl_trim
 *   kept_fork_broken         a fork while another thread keeps blocks
 *                            leaves a child that cannot allocate and free
 *   kept_double_free_owner_silent   the owner frees a block another
 *                            thread keeps: "double free"
 *   kept_double_free_third_silent   a third thread frees it
 *   kept_double_free_keeper_silent  the keeper frees it again
 *   kept_realloc_silent      realloc of a kept block: "block already
 *                            freed"
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tlmalloc.h"
#include "check.h"
#include "child.h"

#define N 16
#define SIZE 64

static void set_kept(long bytes)
{
	CHECK(tl_option_set("kept_bytes", bytes) == 0);
}

/* The main thread's blocks of SIZE bytes, filled. */
static void make_blocks(char **p, int n)
{
	for (int i = 0; i < n; i++) {
		p[i] = malloc(SIZE);
		CHECK(p[i] != NULL);
		memset(p[i], 0x5a, SIZE);
	}
}

/* A thread keeps nothing before it has a heap, made at its first malloc:
 * each thread here makes its own first (a class no case uses). */
static void own_heap(void)
{
	free(malloc(1000));
}

struct job {
	char **freed;		/* blocks the thread frees, in this order */
	int nfreed;
	char **got;		/* what its mallocs return */
	int ngot;
	int trim;		/* 1: tl_trim after the frees */
};

static void *keeper(void *arg)
{
	struct job *j = arg;
	own_heap();
	for (int i = 0; i < j->nfreed; i++)
		free(j->freed[i]);
	if (j->trim)
		tl_trim();
	for (int i = 0; i < j->ngot; i++) {
		j->got[i] = malloc(SIZE);
		CHECK(j->got[i] != NULL);
	}
	return NULL;
}

static void run_job(struct job *j)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, keeper, j) == 0);
	CHECK(pthread_join(t, NULL) == 0);
}

static int index_of(char *const *p, int n, const char *q)
{
	for (int i = 0; i < n; i++)
		if (p[i] == q)
			return i;
	return -1;
}

/* With kept_bytes kept: n blocks of the main thread, p, freed by another
 * thread, which then mallocs n of the size, q. */
static void free_then_take(long kept, char **p, char **q, int n)
{
	set_kept(kept);
	make_blocks(p, n);
	struct job j = { p, n, q, n, 0 };
	run_job(&j);
}

static void kept_not_reused(void)
{
	char *p[N], *q[N];
	free_then_take(32768, p, q, N);
	for (int i = 0; i < N; i++)
		CHECKF(q[i] == p[N - 1 - i], "malloc %d returned %p, not %p",
		       i, (void *)q[i], (void *)p[N - 1 - i]);
	/* the owner frees them again: blocks of its pages, in use */
	for (int i = 0; i < N; i++)
		free(q[i]);
}

static void kept_without_option(void)
{
	char *p[N], *q[N];
	free_then_take(0, p, q, N);
	for (int i = 0; i < N; i++)
		CHECKF(index_of(p, N, q[i]) < 0, "malloc %d returned a block "
		       "another thread freed (%p)", i, (void *)q[i]);
	for (int i = 0; i < N; i++)
		free(q[i]);
}

#define MEDIUM 8192

struct medium_job {
	char *freed[2];
	char *got[2];
};

/* Its own medium head first, dry (its one block carved and taken), then
 * the main thread's two blocks freed (kept), then two mallocs. */
static void *medium_keeper(void *arg)
{
	struct medium_job *j = arg;
	own_heap();
	char *mine = malloc(MEDIUM);
	CHECK(mine != NULL);
	free(j->freed[0]);
	free(j->freed[1]);
	j->got[0] = malloc(MEDIUM);
	j->got[1] = malloc(MEDIUM);
	free(mine);
	return NULL;
}

static void kept_medium_carved(void)
{
	set_kept(32768);
	struct medium_job j;
	for (int i = 0; i < 2; i++) {
		j.freed[i] = malloc(MEDIUM);
		CHECK(j.freed[i] != NULL);
		memset(j.freed[i], 0x5a, MEDIUM);
	}
	pthread_t t;
	CHECK(pthread_create(&t, NULL, medium_keeper, &j) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECKF(j.got[0] == j.freed[1] && j.got[1] == j.freed[0],
	       "mallocs returned %p and %p, not the kept %p and %p",
	       (void *)j.got[0], (void *)j.got[1], (void *)j.freed[1],
	       (void *)j.freed[0]);
	free(j.got[0]);
	free(j.got[1]);
}

static void kept_past_limit(void)
{
	enum { M = 64, KEPT = 1024 / SIZE };
	char *p[M], *q[M];
	free_then_take(1024, p, q, M);
	/* the first KEPT frees were kept, newest first; the others went
	 * back to their page, which the thread does not own */
	for (int i = 0; i < KEPT; i++)
		CHECKF(q[i] == p[KEPT - 1 - i], "malloc %d returned %p, not %p",
		       i, (void *)q[i], (void *)p[KEPT - 1 - i]);
	for (int i = KEPT; i < M; i++)
		CHECKF(index_of(p, M, q[i]) < 0, "malloc %d returned %p, a "
		       "block past the limit", i, (void *)q[i]);
	/* and the owner gets those back, after the blocks its page had
	 * carved and not handed out yet (at most a carve's 4 KiB) */
	enum { R = M - KEPT + 4096 / SIZE };
	char *r[R];
	int back = 0;
	for (int i = 0; i < R; i++) {
		r[i] = malloc(SIZE);
		back += index_of(p + KEPT, M - KEPT, r[i]) >= 0;
	}
	CHECKF(back == M - KEPT, "%d of %d blocks back in the owner's page",
	       back, M - KEPT);
	for (int i = 0; i < M; i++)
		free(q[i]);
	for (int i = 0; i < R; i++)
		free(r[i]);
}

/* The live blocks of SIZE's class, counted by the calling thread (its
 * own frees and other threads' collected first). */
static uint64_t live_of_size(void)
{
	struct tl_stats st;
	CHECK(tl_stats_get(&st, sizeof(st)) == sizeof(st));
	for (size_t i = 0; i < st.class_count; i++)
		if (st.classes[i].block_size == SIZE)
			return st.classes[i].blocks_live;
	CHECK(!"no class of SIZE bytes");
	return 0;
}

static void given_back(int trim)
{
	set_kept(32768);
	uint64_t before = live_of_size();
	char *p[N];
	make_blocks(p, N);
	CHECK(live_of_size() == before + N);
	struct job j = { p, N, NULL, 0, trim };
	run_job(&j);
	/* the keeper has exited (or trimmed): the blocks are back on their
	 * pages, where the owner's count finds them free */
	uint64_t now = live_of_size();
	CHECKF(now == before, "%llu blocks of %d bytes live, %llu before",
	       (unsigned long long)now, SIZE, (unsigned long long)before);
}

static void kept_lost_at_exit(void)
{
	given_back(0);
}

/* The trim, not the exit: the keeper stays alive, blocked, while the
 * owner counts. */
static atomic_int trim_stage;

static void *trim_then_wait(void *arg)
{
	char **p = arg;
	own_heap();
	for (int i = 0; i < N; i++)
		free(p[i]);
	tl_trim();
	atomic_store(&trim_stage, 1);
	while (atomic_load(&trim_stage) != 2)
		usleep(1000);
	return NULL;
}

static void kept_lost_at_trim(void)
{
	set_kept(32768);
	uint64_t before = live_of_size();
	char *p[N];
	make_blocks(p, N);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, trim_then_wait, p) == 0);
	while (atomic_load(&trim_stage) != 1)
		usleep(1000);
	uint64_t now = live_of_size();
	atomic_store(&trim_stage, 2);
	CHECK(pthread_join(t, NULL) == 0);
	CHECKF(now == before, "%llu blocks of %d bytes live, %llu before",
	       (unsigned long long)now, SIZE, (unsigned long long)before);
}

/* A keeper that frees p (and, with twice, again), then waits for the
 * process to end: its kept list holds p meanwhile. */
static atomic_int kept_stage;

static void *keep_and_wait(void *arg)
{
	own_heap();
	free(arg);
	atomic_store(&kept_stage, 1);
	for (;;)
		pause();
	return NULL;
}

/* p, kept by a thread that lives on. */
static char *kept_block(void)
{
	set_kept(32768);
	char *p[2];
	make_blocks(p, 2);	/* p[0] is not its page's first */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, keep_and_wait, p[1]) == 0);
	while (atomic_load(&kept_stage) != 1)
		usleep(1000);
	return p[1];
}

static void kept_fork_broken(void)
{
	kept_block();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char *q[256];
		for (int round = 0; round < 4; round++) {
			for (int i = 0; i < 256; i++) {
				q[i] = malloc(SIZE + 16 * (i % 8));
				if (q[i] == NULL)
					_exit(2);
				memset(q[i], i, SIZE);
			}
			for (int i = 0; i < 256; i++)
				free(q[i]);
		}
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
}

static void kept_double_free_owner_child(void)
{
	free(kept_block());
}

static void *free_it(void *p)
{
	free(p);
	return NULL;
}

static void kept_double_free_third_child(void)
{
	char *p = kept_block();
	pthread_t t;
	CHECK(pthread_create(&t, NULL, free_it, p) == 0);
	CHECK(pthread_join(t, NULL) == 0);
}

static void *free_twice(void *arg)
{
	own_heap();
	free(arg);
	free(arg);
	return NULL;
}

static void kept_double_free_keeper_child(void)
{
	set_kept(32768);
	char *p[2];
	make_blocks(p, 2);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, free_twice, p[1]) == 0);
	CHECK(pthread_join(t, NULL) == 0);
}

static void kept_realloc_child(void)
{
	char *p = kept_block();
	printf("%p\n", realloc(p, 2 * SIZE));
}

static const struct test_case cases[] = {
	TEST_CASE(kept_not_reused),
	TEST_CASE(kept_without_option),
	TEST_CASE(kept_medium_carved),
	TEST_CASE(kept_past_limit),
	TEST_CASE(kept_lost_at_exit),
	TEST_CASE(kept_lost_at_trim),
	TEST_CASE(kept_fork_broken),
	TEST_DEATH(kept_double_free_owner_silent, kept_double_free_owner_child,
		   "free", "double free"),
	TEST_DEATH(kept_double_free_third_silent, kept_double_free_third_child,
		   "free", "double free"),
	TEST_DEATH(kept_double_free_keeper_silent,
		   kept_double_free_keeper_child, "free", "double free"),
	TEST_DEATH(kept_realloc_silent, kept_realloc_child, "realloc",
		   "block already freed"),
};

int main(int argc, char **argv)
{
	return child_main(argc, argv, cases, TEST_COUNT(cases));
}
