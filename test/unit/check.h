/*
 * check.h - assertions and a tiny test runner shared by the unit and stress
 * tests.
 *
 * CHECK() stays on in release builds (unlike assert) and prints the file,
 * line and failed condition before exiting with status 1, so ctest records a
 * failure.  A test program holds a table of cases named after the failure
 * each one catches, one TEST_CASE(name) row a case (child.h adds rows for
 * cases that run a child); `prog NAME` runs one case (that is how ctest
 * calls it), `prog` alone runs them all.  CMake registers the cases from
 * these rows (cmake/test-cases.cmake reads them from the source), so a
 * case is declared once; an unknown name is still a failure.
 */
#ifndef TL_TEST_CHECK_H
#define TL_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Whether the program runs under a cross build's emulator
 * (cmake/qemu-run.sh sets TL_TEST_EMULATOR): there every instruction, and
 * every thread, costs far more, so the stress tests run fewer rounds.
 */
static inline int test_emulated(void)
{
	return getenv("TL_TEST_EMULATOR") != NULL;
}

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			check_fail(__FILE__, __LINE__, #cond, ""); \
	} while (0)

/* CHECK with a printf-style explanation of the values involved. */
#define CHECKF(cond, ...) \
	do { \
		if (!(cond)) { \
			char check_msg[256]; \
			snprintf(check_msg, sizeof(check_msg), __VA_ARGS__); \
			check_fail(__FILE__, __LINE__, #cond, check_msg); \
		} \
	} while (0)

static inline void check_fail(const char *file, int line, const char *cond,
			      const char *msg)
{
	fprintf(stderr, "%s:%d: check failed: %s %s\n", file, line, cond, msg);
	fflush(stderr);
	exit(1);
}

static inline int is_aligned(const void *p, size_t alignment)
{
	return ((uintptr_t)p & (alignment - 1)) == 0;
}

/*
 * A case: run in the test's process; child, call and message belong to the
 * cases that run the program again as a child (child.h).
 */
struct test_case {
	const char *name;
	void (*run)(void);
	void (*child)(void);	/* what `prog NAME child` runs, or NULL */
	const char *call;	/* a death case: the call its line names */
	const char *message;	/* and what that line says */
};

/* A case whose function has the case's name. */
#define TEST_CASE(name) { #name, name, NULL, NULL, NULL }

#define TEST_COUNT(table) (sizeof(table) / sizeof((table)[0]))

/* The case running now (run_tests), for a case that needs its own name. */
static const struct test_case *test_current;

static inline const char *test_name(void)
{
	return test_current->name;
}

/*
 * Run the case argv[1] (all of them without it); as `prog NAME child`, the
 * child part of that case instead.
 */
static inline int run_tests(const struct test_case *t, size_t n, int argc,
			    char **argv)
{
	size_t i;
	int found = 0;
	int child = argc > 2 && strcmp(argv[2], "child") == 0;

	for (i = 0; i < n; i++) {
		if (argc > 1 && strcmp(argv[1], t[i].name) != 0)
			continue;
		if (child ? t[i].child == NULL : t[i].run == NULL)
			continue;	/* a row that is only another's child */
		found = 1;
		test_current = &t[i];
		if (child)
			t[i].child();
		else
			t[i].run();
		printf("ok %s\n", t[i].name);
	}
	if (!found) {
		fprintf(stderr, "no test case named %s\n", argv[1]);
		return 2;
	}
	return 0;
}

/* xorshift64*: a small per-thread random generator (no shared state). */
static inline uint64_t rng_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/*
 * Fill [p, p+n) with a pattern derived from tag, a word at a time (the
 * byte at offset i is byte i % 8 of pattern_word(tag, i - i % 8)); check
 * it back.  The tests build with -fno-builtin (so that calls to the
 * allocator are never optimised away); the explicit builtins keep these
 * word copies inline.
 */
static inline uint64_t pattern_word(uint64_t tag, size_t i)
{
	return (tag * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)i * 0x100000001B3ULL);
}

static inline void pattern_fill(void *p, size_t n, uint64_t tag)
{
	unsigned char *b = (unsigned char *)p;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t w = pattern_word(tag, i);

		__builtin_memcpy(b + i, &w, 8);
	}
	if (i < n) {
		uint64_t w = pattern_word(tag, i);

		__builtin_memcpy(b + i, &w, n - i);
	}
}

/* Index of the first byte that differs from the pattern, or n if none. */
static inline size_t pattern_find_damage(const void *p, size_t n, uint64_t tag)
{
	const unsigned char *b = (const unsigned char *)p;
	size_t i, k;

	for (i = 0; i < n; i += 8) {
		uint64_t w = pattern_word(tag, i), got = w;
		size_t len = n - i < 8 ? n - i : 8;

		if (len == 8)
			__builtin_memcpy(&got, b + i, 8);
		else
			got = ~w;
		if (got == w)
			continue;
		for (k = 0; k < len; k++)
			if (b[i + k] != ((const unsigned char *)&w)[k])
				return i + k;
	}
	return n;
}

#endif /* TL_TEST_CHECK_H */
