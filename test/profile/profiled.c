/*
 * profiled.c - the heap profiler's cases: allocation sites in known
 * proportions, freed blocks that must leave the live profile, a planted
 * leak, profiling switched on and off at run time, threads.
 *
 * Each case allocates through named sites (alloc_f, alloc_g, plant_leak:
 * exported, the program is linked with -rdynamic, so dladdr names them),
 * writes the profile with tl_profile_dump to $TLMALLOC_PROFILE_FILE.api,
 * reads it back and attributes every stack to the site of its first frame.
 *
 * The bounds (docs/profiling.md, "Tests"): the cases run with
 * TLMALLOC_PROFILE_RATE=16384 and a fixed TLMALLOC_PROFILE_SEED, so a run
 * samples the same blocks every time and cannot flake; the bounds are
 * also wide enough that any seed passes but with a negligible chance: a
 * share estimated from n samples has a standard deviation of about
 * sqrt(0.21 / n), and each bound is at least 4.5 of those.
 */
#define _GNU_SOURCE
#include <alloca.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tlmalloc.h"

static void sink(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* The sites: not inlined nor cloned (noipa), no tail call (the call to malloc stays one,
 * so the first frame of a sample is in the site). */
__attribute__((noipa)) void *alloc_f(size_t n)
{
	void *p = malloc(n);
	sink(p);
	return p;
}

__attribute__((noipa)) void *alloc_g(size_t n)
{
	void *p = malloc(n);
	sink(p);
	return p;
}

__attribute__((noipa)) void *plant_leak(size_t n)
{
	void *p = malloc(n);
	sink(p);
	return p;
}

/* Through recursion of known depths, and through a frame whose size is
 * decided at run time (alloca): the stacks of stack_frames_wrong. */
__attribute__((noipa)) void *alloc_h(size_t n)
{
	void *p = malloc(n);
	sink(p);
	return p;
}

__attribute__((noipa)) void *through_alloca(size_t n, size_t pad)
{
	char *buf = alloca(pad);
	buf[0] = 1;
	sink(buf);
	void *p = alloc_h(n);
	sink(p);
	return p;
}

__attribute__((noipa)) void *recurse(int depth, size_t n, size_t pad)
{
	void *p = depth > 1 ? recurse(depth - 1, n, pad)
	     : pad != 0 ? through_alloca(n, pad) : alloc_h(n);
	sink(p);
	return p;
}

#define STACK_DEPTHS 5

/* Round i's block: depth 1 to STACK_DEPTHS, one round in three through
 * alloca, of 11 sizes. */
__attribute__((noipa)) void *stack_round(int i)
{
	size_t pad = i % 3 == 0 ? 16 + (size_t)(i % 11) * 48 : 0;
	void *p = recurse(1 + i % STACK_DEPTHS, 200, pad);
	sink(p);
	return p;
}

enum { SITE_F, SITE_G, SITE_LEAK, SITE_OTHER, SITES };
static const char *const site_names[SITES] = { "alloc_f", "alloc_g",
					       "plant_leak", "other" };

struct site {
	double live_count, live_bytes, alloc_count, alloc_bytes;
};

static void dump_path(char *out, size_t size)
{
	const char *base = getenv("TLMALLOC_PROFILE_FILE");
	CHECK(base != NULL);
	snprintf(out, size, "%s.api", base);
}

/* Dump the profile with the API and open it, its header read and checked;
 * line is the caller's buffer. */
static FILE *dump_and_open(char *line, size_t size)
{
	char path[4096];
	dump_path(path, sizeof(path));
	CHECKF(tl_profile_dump(path) == 0, "dump to %s", path);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	CHECK(fgets(line, (int)size, f) != NULL);
	CHECKF(strncmp(line, "heap profile: ", 14) == 0, "header: %s", line);
	return f;
}

/* Dump the profile and add up its stacks by site. */
static void read_profile(struct site *sites)
{
	char line[8192];
	FILE *f = dump_and_open(line, sizeof(line));
	memset(sites, 0, sizeof(struct site) * SITES);
	while (fgets(line, sizeof(line), f) != NULL) {
		double lc, lb, ac, ab;
		int at = 0;
		if (strcmp(line, "\n") == 0)
			break;	/* the mappings follow */
		CHECKF(sscanf(line, "%lf: %lf [%lf: %lf] @%n", &lc, &lb, &ac,
			      &ab, &at) == 4 && at > 0, "line: %s", line);
		unsigned long pc = strtoul(line + at, NULL, 16);
		int s = SITE_OTHER;
		Dl_info info;
		if (dladdr((void *)(pc - 1), &info) != 0 && info.dli_sname != NULL)
			for (int k = 0; k < SITE_OTHER; k++)
				if (strcmp(info.dli_sname, site_names[k]) == 0)
					s = k;
		sites[s].live_count += lc;
		sites[s].live_bytes += lb;
		sites[s].alloc_count += ac;
		sites[s].alloc_bytes += ab;
	}
	fclose(f);
}

static void check_near(const char *what, double got, double want, double tol)
{
	CHECKF(got >= want * (1 - tol) && got <= want * (1 + tol),
	       "%s: estimated %.4g, true %.4g (bound +-%.0f%%)", what, got, want,
	       tol * 100);
}

#define ROUNDS 200000

/*
 * 70% of the bytes from alloc_f (700-byte blocks), 30% from alloc_g (300),
 * one of each a round; one block in ten of each kept: the same shares
 * live.  About 12,000 samples of the allocations (the share's deviation
 * 0.4%, bound 3%) and 1,200 of the live heap (1.3%, bound 6%).
 */
static void proportions_within_sampling_error(void)
{
	static void *kept[2 * ROUNDS / 10];
	size_t n = 0;
	for (int i = 0; i < ROUNDS; i++) {
		void *f = alloc_f(700), *g = alloc_g(300);
		if (i % 10 == 0) {
			kept[n++] = f;
			kept[n++] = g;
		} else {
			free(f);
			free(g);
		}
	}
	struct site s[SITES];
	read_profile(s);
	double alloc = s[SITE_F].alloc_bytes + s[SITE_G].alloc_bytes;
	double live = s[SITE_F].live_bytes + s[SITE_G].live_bytes;
	check_near("alloc_f's share of the bytes allocated",
		   s[SITE_F].alloc_bytes / alloc, 0.70, 0.03 / 0.70);
	check_near("alloc_f's share of the bytes live",
		   s[SITE_F].live_bytes / live, 0.70, 0.06 / 0.70);
	check_near("bytes allocated", alloc, 1000.0 * ROUNDS, 0.04);
	check_near("blocks allocated by alloc_f", s[SITE_F].alloc_count, ROUNDS,
		   0.05);
	check_near("bytes live", live, 1000.0 * ROUNDS / 10, 0.15);
	for (size_t i = 0; i < n; i++)
		free(kept[i]);
	read_profile(s);
	CHECKF(s[SITE_F].live_bytes == 0 && s[SITE_G].live_bytes == 0,
	       "all freed, still live: %.0f + %.0f bytes",
	       s[SITE_F].live_bytes, s[SITE_G].live_bytes);
}

/*
 * Blocks of every kind freed (small, medium, huge, some reallocated) leave
 * the live profile; the planted leak, 3 MB (about 180 samples), stays, at
 * plant_leak.  The leak report at exit is checked by profile.sh.
 */
static void freed_blocks_not_live(void)
{
	static const size_t sizes[] = { 24, 200, 1000, 3000, 40000, 300000 };
	for (int round = 0; round < 20000; round++) {
		size_t size = sizes[round % 6];
		void *p = alloc_f(size);
		if (round % 3 == 0)
			p = realloc(p, size * 2);
		free(p);
	}
	for (int i = 0; i < 600; i++)
		sink(plant_leak(5000));
	struct site s[SITES];
	read_profile(s);
	CHECKF(s[SITE_F].alloc_bytes > 0, "alloc_f never sampled");
	CHECKF(s[SITE_F].live_bytes == 0 && s[SITE_F].live_count == 0,
	       "freed blocks still live: %.0f bytes", s[SITE_F].live_bytes);
	check_near("planted leak", s[SITE_LEAK].live_bytes, 600.0 * 5000, 0.30);
}

/* Off at start: alloc_f is not sampled; switched on: alloc_g is (from the
 * thread's next refill); switched off: the heap stops sampling, and its
 * sampled blocks can still be freed. */
static void switched_at_run_time(void)
{
	static void *kept[3 * 20000];
	size_t n = 0;
	long on = -1;
	CHECK(tl_option_get("profile", &on) == 0 && on == 0);
	for (int i = 0; i < 20000; i++)
		kept[n++] = alloc_f(100);
	CHECK(tl_option_set("profile", 1) == 0);
	for (int i = 0; i < 20000; i++)
		kept[n++] = alloc_g(100);
	struct site s[SITES];
	read_profile(s);
	CHECKF(s[SITE_F].alloc_count == 0, "sampled while off");
	check_near("alloc_g's live bytes", s[SITE_G].live_bytes, 2000000.0,
		   0.5);
	CHECK(tl_option_set("profile", 0) == 0);
	for (int i = 0; i < 20000; i++)
		kept[n++] = alloc_f(100);
	for (size_t i = 0; i < n; i++)
		free(kept[i]);
	read_profile(s);
	CHECKF(s[SITE_G].live_bytes == 0, "freed, still live: %.0f",
	       s[SITE_G].live_bytes);
}

#define THREADS 4
#define PER_THREAD 50000

static void *handed[THREADS][PER_THREAD];

/* Each thread allocates; the next one frees them (a remote free). */
static void *producer(void *arg)
{
	void **out = arg;
	for (int i = 0; i < PER_THREAD; i++)
		out[i] = alloc_f(64 + (size_t)(i % 512));
	return NULL;
}

static void *consumer(void *arg)
{
	void **in = arg;
	for (int i = 0; i < PER_THREAD; i++)
		free(in[i]);
	return NULL;
}

static void threads_free_each_others_samples(void)
{
	pthread_t t[THREADS];
	for (int k = 0; k < THREADS; k++)
		CHECK(pthread_create(&t[k], NULL, producer, handed[k]) == 0);
	for (int k = 0; k < THREADS; k++)
		CHECK(pthread_join(t[k], NULL) == 0);
	struct site s[SITES];
	read_profile(s);
	check_near("live bytes of the threads' blocks", s[SITE_F].live_bytes,
		   THREADS * PER_THREAD * (64 + 255.5), 0.15);
	for (int k = 0; k < THREADS; k++)
		CHECK(pthread_create(&t[k], NULL, consumer,
				     handed[(k + 1) % THREADS]) == 0);
	for (int k = 0; k < THREADS; k++)
		CHECK(pthread_join(t[k], NULL) == 0);
	read_profile(s);
	CHECKF(s[SITE_F].live_bytes == 0, "freed, still live: %.0f",
	       s[SITE_F].live_bytes);
}

/* Whether $TLMALLOC_PROFILE_FILE.n exists and starts as a profile. */
static int numbered_dump_exists(int n)
{
	char path[4096], head[16] = "";
	snprintf(path, sizeof(path), "%s.%d", getenv("TLMALLOC_PROFILE_FILE"), n);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return 0;
	int ok = fgets(head, sizeof(head), f) != NULL &&
		 strncmp(head, "heap profile: ", 14) == 0;
	fclose(f);
	return ok;
}

/* Numbered dumps of an earlier run go first. */
static void remove_numbered_dumps(void)
{
	char path[4096];
	for (int n = 1; n < 10; n++) {
		snprintf(path, sizeof(path), "%s.%d",
			 getenv("TLMALLOC_PROFILE_FILE"), n);
		remove(path);
	}
}

/* TLMALLOC_PROFILE_SIGNAL=12 (SIGUSR2): each signal writes FILE.N. */
static void signal_writes_numbered_dumps(void)
{
	remove_numbered_dumps();
	for (int i = 0; i < 1000; i++)
		sink(plant_leak(1000));
	CHECK(!numbered_dump_exists(1));
	CHECK(raise(SIGUSR2) == 0);
	CHECKF(numbered_dump_exists(1), "no FILE.1 after the signal");
	CHECK(raise(SIGUSR2) == 0);
	CHECKF(numbered_dump_exists(2), "no FILE.2 after the second signal");
}

/* TLMALLOC_PROFILE_GROWTH=1: a dump each MiB the live heap grows; 4 MiB
 * kept makes about 4 (the live estimate itself is sampled). */
static void growth_writes_numbered_dumps(void)
{
	remove_numbered_dumps();
	for (int i = 0; i < 4000; i++)
		sink(plant_leak(1000));
	CHECKF(numbered_dump_exists(2), "fewer than 2 dumps for 4 MiB");
	CHECKF(!numbered_dump_exists(9), "9 dumps or more for 4 MiB");
}

/* The name of the function at return address pc, or "?". */
static const char *frame_name(unsigned long pc)
{
	Dl_info info;
	if (dladdr((void *)(pc - 1), &info) != 0 && info.dli_sname != NULL)
		return info.dli_sname;
	return "?";
}

/*
 * Every sampled stack of alloc_h reads alloc_h, [through_alloca,]
 * recurse (1 to STACK_DEPTHS times), stack_round: the walks the
 * profiler remembers (profile_stack.c) neither skip nor add a frame, at
 * any depth, and a frame of a size decided at run time (alloca, of 11
 * sizes) is walked right.  Every depth, with and without it, is seen
 * (200,000 blocks of 200 bytes at the rate of 16 KiB: about 2,500
 * samples, 10 stacks).
 */
/* Every stack of alloc_h in the profile is right, and every depth, with
 * and without alloca, is seen. */
static void check_stack_rounds(void)
{
	char line[8192];
	FILE *f = dump_and_open(line, sizeof(line));
	int seen[2][STACK_DEPTHS + 1] = { { 0 } };
	while (fgets(line, sizeof(line), f) != NULL && strcmp(line, "\n") != 0) {
		char *at = strchr(line, '@');
		CHECKF(at != NULL, "line: %s", line);
		const char *names[64];
		int n = 0;
		for (char *s = at + 1, *end; n < 64; s = end) {
			unsigned long pc = strtoul(s, &end, 16);
			if (end == s)
				break;
			names[n++] = frame_name(pc);
		}
		if (n == 0 || strcmp(names[0], "alloc_h") != 0)
			continue;
		int j = 1, alloca_frame = 0, depth = 0;
		if (j < n && strcmp(names[j], "through_alloca") == 0) {
			alloca_frame = 1;
			j++;
		}
		while (j < n && strcmp(names[j], "recurse") == 0) {
			depth++;
			j++;
		}
		CHECKF(depth >= 1 && depth <= STACK_DEPTHS && j < n &&
		       strcmp(names[j], "stack_round") == 0,
		       "stack of alloc_h: %s", at);
		seen[alloca_frame][depth]++;
	}
	fclose(f);
	for (int a = 0; a < 2; a++)
		for (int d = 1; d <= STACK_DEPTHS; d++)
			CHECKF(seen[a][d] > 0, "no stack of depth %d%s", d,
			       a ? " through alloca" : "");
}

static void stack_frames_wrong(void)
{
	for (int i = 0; i < ROUNDS; i++)
		free(stack_round(i));
	check_stack_rounds();
}

#define STACK_THREADS 4

static void *stack_rounds(void *arg)
{
	for (int i = (int)(intptr_t)arg; i < ROUNDS; i += STACK_THREADS)
		free(stack_round(i));
	return NULL;
}

/* The same in four threads at once: they learn the shared table of walked
 * frames together, each with its own bound of the stack. */
static void stack_frames_wrong_threads(void)
{
	pthread_t t[STACK_THREADS];
	for (int k = 0; k < STACK_THREADS; k++)
		CHECK(pthread_create(&t[k], NULL, stack_rounds,
				     (void *)(intptr_t)k) == 0);
	for (int k = 0; k < STACK_THREADS; k++)
		CHECK(pthread_join(t[k], NULL) == 0);
	check_stack_rounds();
}

/*
 * A new thread's heap is young (docs/design.md, "Young groups"): its first
 * blocks of the four classes of a group come from the page of the group's
 * largest class.  A sized free of the size asked for must pass there with
 * the profiler on as off (its direct slots lead to the profiler's proxy
 * pages, and the group's page must still take the group's sizes): before,
 * tl_free_sized(malloc(8), 8) aborted as a size mismatch, as did a C++
 * vector's first sized delete.  The same in the secure variant, whose
 * sampled blocks got the canary's tail added twice (a larger class than
 * the size, so the sized free aborted too): eight rounds of every size
 * take a few hundred samples at the tests' rate.
 */
static void *young_sized_body(void *arg)
{
	(void)arg;
	for (int round = 0; round < 8; round++)
		for (size_t n = 1; n <= 1024; n++) {
			void *p = malloc(n);
			CHECK(p != NULL);
			memset(p, 0x5a, n);
			tl_free_sized(p, n);
		}
	return NULL;
}

static void young_sized_frees_refused(void)
{
	long on = 0;
	CHECK(tl_option_get("profile", &on) == 0 && on == 1);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, young_sized_body, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
}

/*
 * fork with the profiler on: the profiler's own heap (its sampled blocks)
 * lives on in the child with its pages, as the forking thread's does.
 * Before, the child orphaned those pages as a dead thread's, and the next
 * heap to adopt one shared it with the profiler's heap: one page in two
 * lists, blocks handed out twice, then a sweep that never ended.  The
 * child here samples one allocation in 64 bytes (the case's setting) over
 * a working set of stamped blocks, checks every stamp it frees, and must
 * finish within the alarm.
 */
#define FORK_SET 4096

static unsigned char *fork_set[FORK_SET];
static size_t fork_len[FORK_SET];

/* rounds replacements in the set of stamped blocks, each freed block's
 * stamp checked. */
static void fork_churn(unsigned seed, unsigned rounds)
{
	for (unsigned i = 0; i < rounds; i++) {
		seed = seed * 1103515245u + 12345u;
		unsigned k = (seed >> 8) % FORK_SET;
		unsigned char *p = fork_set[k];
		if (p != NULL) {
			for (size_t j = 0; j < fork_len[k]; j++)
				CHECKF(p[j] == (unsigned char)(k + j),
				       "block %p (slot %u) overwritten at %zu",
				       (void *)p, k, j);
			free(p);
		}
		fork_len[k] = 8 + (seed >> 16) % 1500;
		p = fork_set[k] = malloc(fork_len[k]);
		CHECK(p != NULL);
		for (size_t j = 0; j < fork_len[k]; j++)
			p[j] = (unsigned char)(k + j);
	}
}

static void fork_free_all(void)
{
	for (unsigned k = 0; k < FORK_SET; k++) {
		free(fork_set[k]);
		fork_set[k] = NULL;
	}
}

static void fork_keeps_profiler_pages(void)
{
	long rate = 0;
	CHECK(tl_option_get("profile_rate", &rate) == 0 && rate <= 4096);
	/* the profiler's heap holds pages of many classes, some full */
	fork_churn(1, 100000);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(60);
		fork_churn(2, 400000);
		fork_free_all();
		fork_churn(3, 100000);
		fork_free_all();
		_exit(0);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "child: status %#x", (unsigned)status);
	fork_churn(4, 100000);
	fork_free_all();
}

static const struct test_case cases[] = {
	TEST_CASE(fork_keeps_profiler_pages),
	TEST_CASE(young_sized_frees_refused),
	TEST_CASE(stack_frames_wrong_threads),
	TEST_CASE(stack_frames_wrong),
	TEST_CASE(signal_writes_numbered_dumps),
	TEST_CASE(growth_writes_numbered_dumps),
	TEST_CASE(proportions_within_sampling_error),
	TEST_CASE(freed_blocks_not_live),
	TEST_CASE(switched_at_run_time),
	TEST_CASE(threads_free_each_others_samples),
};

int main(int argc, char **argv)
{
	return run_tests(cases, TEST_COUNT(cases), argc, argv);
}
