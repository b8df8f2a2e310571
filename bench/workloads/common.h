/*
 * common.h - what every benchmark workload shares.
 *
 * - Command line: --threads, --iters, --quick, --help and the workload's own
 *   options, from one table of struct bench_opt.  Numbers are whole and
 *   non-negative ("1000000" or "1e6"); an unset number stays BENCH_UNSET
 *   until bench_pick() gives it its full or quick default.  A bad option
 *   prints a message on stderr and exits 2.
 * - Output in the harness's format (docs: bench-interface): one
 *   "metric <key> <value> <unit>" line per fact, then "check ok", or
 *   "check FAILED: <reason>" and exit 1 (callable from any thread).
 * - A monotonic clock, a small per-thread random generator, block patterns
 *   that show when a block was overwritten (bench_stamp: blocks that also
 *   carry their own size), and the process RSS read from /proc/self/statm
 *   without calling the allocator.
 *
 * Header-only (static inline), valid C11 and C++17, so that each workload is
 * one source file that also builds alone with musl-gcc.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_UNSET (-1L)

/* One option of the command line: a number (num) or a word (word). */
struct bench_opt {
	const char *name;		/* "--pairs" */
	const char *help;		/* one line, with the defaults */
	long *num;			/* where a number goes, or NULL */
	const char **word;		/* where a word goes, or NULL */
};

/* Set by --quick: the small sizes of the harness's quick mode. */
static int bench_quick;

static inline void bench_usage(FILE *f, const char *prog, const char *what,
			       const struct bench_opt *opts)
{
	fprintf(f, "usage: %s [options]\n%s\noptions:\n", prog, what);
	for (; opts->name; opts++)
		fprintf(f, "  %-14s %s\n", opts->name, opts->help);
	fprintf(f, "  %-14s %s\n", "--quick", "small sizes (the quick mode)");
	fprintf(f, "  %-14s %s\n", "--help", "print this text");
}

/* A command-line error: say so on stderr and exit 2. */
static inline void bench_usage_error(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try --help)\n");
	exit(2);
}

/* "1000000", "1e6": a whole number >= 0, else -1. */
static inline long bench_number(const char *text)
{
	char *end;
	double v = strtod(text, &end);

	if (end == text || *end || !(v >= 0) || v > 1e15)
		return -1;
	if (v != (double)(long)v)
		return -1;
	return (long)v;
}

static inline const struct bench_opt *bench_find(const struct bench_opt *opts,
						 const char *name, size_t len)
{
	for (; opts->name; opts++)
		if (strlen(opts->name) == len &&
		    !strncmp(opts->name, name, len))
			return opts;
	return NULL;
}

/* Parse "--name value" and "--name=value" into the table; see above. */
static inline void bench_parse(int argc, char **argv, const char *what,
			       const struct bench_opt *opts)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *eq = strchr(arg, '=');
		size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
		const struct bench_opt *o;
		const char *value;

		if (!strcmp(arg, "--help")) {
			bench_usage(stdout, argv[0], what, opts);
			exit(0);
		}
		if (!strcmp(arg, "--quick")) {
			bench_quick = 1;
			continue;
		}
		o = bench_find(opts, arg, len);
		if (!o)
			bench_usage_error(argv[0], "unknown option '%s'", arg);
		value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
		if (!value)
			bench_usage_error(argv[0], "%s needs a value", o->name);
		if (o->word) {
			*o->word = value;
			continue;
		}
		*o->num = bench_number(value);
		if (*o->num < 0)
			bench_usage_error(argv[0], "%s: '%s' is not a "
					  "whole number", o->name, value);
	}
}

/* Give an option left unset its full or its quick default. */
static inline void bench_pick(long *v, long full, long quick)
{
	if (*v == BENCH_UNSET)
		*v = bench_quick ? quick : full;
}

/* Options out of range: exit 2 with the message. */
static inline void bench_require(int ok, const char *prog, const char *msg)
{
	if (!ok)
		bench_usage_error(prog, "%s", msg);
}

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void bench_metric(const char *key, double value, const char *unit)
{
	printf("metric %s %.6g %s\n", key, value, unit);
}

static inline int bench_check_ok(void)
{
	printf("check ok\n");
	return 0;
}

/* A failed self-check, from any thread: report it once and exit 1. */
static inline void bench_fail(const char *fmt, ...)
{
	static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
	va_list ap;

	/* Never unlocked: one report, one exit. */
	pthread_mutex_lock(&once);
	fflush(stdout);
	printf("check FAILED: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

/* malloc that fails the check on NULL. */
static inline void *bench_malloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		bench_fail("malloc(%zu) returned NULL", n);
	return p;
}

/*
 * Tell the compiler that p is used: it may not pair up a malloc with its
 * free and delete both, and must really store into and load from *p.
 */
static inline void bench_escape(void *p)
{
	__asm__ volatile("" : : "g"(p) : "memory");
}

/* xorshift64*: a small, fast generator, one state per thread. */
static inline uint64_t bench_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* A seed for thread i (never 0). */
static inline uint64_t bench_seed(uint64_t i)
{
	return (i + 1) * 0x9E3779B97F4A7C15ULL;
}

/* Uniform in [lo, hi]. */
static inline size_t bench_between(uint64_t *state, size_t lo, size_t hi)
{
	return lo + (size_t)(bench_rand(state) % (hi - lo + 1));
}

static inline unsigned char bench_tag_byte(uint32_t tag)
{
	return (unsigned char)((tag * 2654435761u) >> 24);
}

/*
 * Mark a block of n >= 1 bytes with tag: the tag in its first four bytes
 * (when n >= 4) and a byte derived from it in its middle and last bytes
 * (those not inside the first four).  Touches at most three cache lines,
 * so it costs little beside malloc.
 */
static inline void bench_fill(void *p, size_t n, uint32_t tag)
{
	unsigned char *b = (unsigned char *)p;
	unsigned char t = bench_tag_byte(tag);
	size_t first = n >= 4 ? 4 : 0;

	if (first)
		memcpy(b, &tag, 4);
	else
		b[0] = t;
	if (n / 2 >= first)
		b[n / 2] = t;
	if (n - 1 >= first)
		b[n - 1] = t;
}

/* Does the block still hold what bench_fill(p, n, tag) wrote? */
static inline int bench_intact(const void *p, size_t n, uint32_t tag)
{
	const unsigned char *b = (const unsigned char *)p;
	unsigned char t = bench_tag_byte(tag);
	size_t first = n >= 4 ? 4 : 0;
	uint32_t head;

	if (first) {
		memcpy(&head, b, 4);
		if (head != tag)
			return 0;
	} else if (b[0] != t) {
		return 0;
	}
	if (n / 2 >= first && b[n / 2] != t)
		return 0;
	return n - 1 < first || b[n - 1] == t;
}

/*
 * A block that describes itself, for blocks of n >= 8 bytes whose size the
 * code that frees them does not know: the size and a tag made from the
 * address and size in its first 8 bytes, the tag's byte in its middle and
 * last bytes.  bench_stamped() gives the size back, or 0 when any of it
 * was overwritten.
 */
struct bench_stamp_head {
	uint32_t size;
	uint32_t tag;
};

static inline uint32_t bench_stamp_tag(const void *p, uint32_t n)
{
	uint64_t x = (uintptr_t)p ^ (uint64_t)n << 40;

	return (uint32_t)(x * 0x9E3779B97F4A7C15ULL >> 32);
}

static inline void bench_stamp(void *p, size_t n)
{
	struct bench_stamp_head h;
	unsigned char *b = (unsigned char *)p;

	h.size = (uint32_t)n;
	h.tag = bench_stamp_tag(p, h.size);
	memcpy(b, &h, sizeof(h));
	if (n > sizeof(h)) {
		b[n / 2 > sizeof(h) ? n / 2 : n - 1] = bench_tag_byte(h.tag);
		b[n - 1] = bench_tag_byte(h.tag);
	}
}

static inline size_t bench_stamped(const void *p)
{
	struct bench_stamp_head h;
	const unsigned char *b = (const unsigned char *)p;
	unsigned char t;

	memcpy(&h, b, sizeof(h));
	if (h.size < sizeof(h) || h.tag != bench_stamp_tag(p, h.size))
		return 0;
	t = bench_tag_byte(h.tag);
	if (h.size > sizeof(h) &&
	    (b[h.size / 2 > sizeof(h) ? h.size / 2 : h.size - 1] != t ||
	     b[h.size - 1] != t))
		return 0;
	return h.size;
}

/* A block of min..max bytes (bench_between), stamped. */
static inline char *bench_stamped_block(uint64_t *rng, size_t min, size_t max)
{
	size_t n = bench_between(rng, min, max);
	char *p = (char *)bench_malloc(n);

	bench_stamp(p, n);
	return p;
}

/* The size of p, a block stamped with min..max bytes; fails the run when
 * its stamp was overwritten. */
static inline size_t bench_stamp_checked(const void *p, size_t min,
					 size_t max)
{
	size_t n = bench_stamped(p);

	if (n < min || n > max)
		bench_fail("block %p was overwritten", p);
	return n;
}

/* Resident set size of this process in KiB; open/read only, no malloc. */
static inline long bench_rss_kb(void)
{
	char buf[128];
	ssize_t len;
	char *end;
	int fd = open("/proc/self/statm", O_RDONLY);

	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = 0;
	strtol(buf, &end, 10);			/* total size: skipped */
	return strtol(end, NULL, 10) * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Run fn on n threads, thread i getting (char *)args + i * size; join all. */
static inline void bench_run_threads(long n, void *(*fn)(void *), void *args,
				     size_t size)
{
	pthread_t *tid = (pthread_t *)calloc((size_t)n, sizeof(*tid));

	if (!tid)
		bench_fail("calloc of %ld thread ids returned NULL", n);
	for (long i = 0; i < n; i++)
		if (pthread_create(&tid[i], NULL, fn, (char *)args + i * size))
			bench_fail("pthread_create failed for thread %ld", i);
	for (long i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	free(tid);
}

#endif /* BENCH_COMMON_H */
