/*
 * diag.h - diagnostics, the bottom layer (docs/design.md, "Layers"): fatal
 * errors, the debug build's assertions, the one number formatter of
 * reports, and the write of a report to stderr.  It calls nothing of
 * tlmalloc's, so every file may report, the OS layer included.
 */
#ifndef TLMALLOC_DIAG_H
#define TLMALLOC_DIAG_H

#include <stddef.h>
#include <stdint.h>

/* Report a fatal misuse and abort: "tlmalloc: CALL(0xP): WHAT". */
__attribute__((noreturn)) void tl_fatal(const char *call, const void *p,
					const char *what);

/* Write a message to stderr without allocating; errno is kept.  The
 * system calls outside os.c: a report needs nothing above this layer.
 * When the program has closed its stderr (coreutils close it in an atexit
 * handler, which runs before tlmalloc's reports at exit), the message goes
 * to the copy tl_stderr_keep took, if it took one. */
void tl_write_stderr(const char *msg, size_t len);

/* Keep a copy of the stderr the process starts with (a descriptor from 200
 * up, closed at exec), for the reports due at its exit (the statistics,
 * the profiler's leaks): init.c calls it when an option asks for one. */
void tl_stderr_keep(void);

/*
 * Assertions, tiered by the debug level TL_DEBUG (0, the default and every
 * installed library: none of them; libtlmalloc-debug: 3):
 *   tl_assert(x)            1  cheap: O(1) preconditions, in a function's
 *                              first lines (a list entry is in its list,
 *                              a page given back is owned, ...)
 *   tl_assert_internal(x)   2  one object's invariants where it changes:
 *                              tl_page_check of a page after a collect,
 *                              O(its blocks)
 *   tl_assert_expensive(x)  3  whole structures on the slow paths:
 *                              tl_heap_check, tl_pool_check_locked
 * A failed assertion aborts with one line, "tlmalloc: FUNCTION(0x0):
 * assertion failed: x"; the checkers abort with their own line naming the
 * invariant and the page, heap or pool broken, and return true otherwise,
 * so they sit inside the assertions.
 */
#ifndef TL_DEBUG
#define TL_DEBUG 0
#endif
#if TL_DEBUG > 0
__attribute__((noreturn, noinline)) void tl_assert_fail(const char *func,
							 const char *what);
#define tl_assert(x) \
	((x) ? (void)0 : tl_assert_fail(__func__, "assertion failed: " #x))
#else
#define tl_assert(x) ((void)0)
#endif
#if TL_DEBUG > 1
#define tl_assert_internal(x) tl_assert(x)
#else
#define tl_assert_internal(x) ((void)0)
#endif
#if TL_DEBUG > 2
#define tl_assert_expensive(x) tl_assert(x)
#else
#define tl_assert_expensive(x) ((void)0)
#endif

/* ---- numbers in reports (no stdio: they are written in signal handlers
 * and on allocation paths) ---- */
/* Longest tl_format_u64 output: 2^64 - 1 in decimal. */
#define TL_FORMAT_MAX 20

/* v in base 10 or 16 (no prefix), most significant digit first, at out
 * (TL_FORMAT_MAX bytes); returns the digits written. */
static inline size_t tl_format_u64(char *out, uint64_t v, unsigned base)
{
	char tmp[TL_FORMAT_MAX];
	size_t n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v != 0);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

/* A report being built in buf[0..cap): s appended after its first n bytes,
 * cut at cap; returns the new length. */
static inline size_t tl_append(char *buf, size_t n, size_t cap, const char *s)
{
	size_t len = __builtin_strlen(s);
	if (len > cap - n)
		len = cap - n;
	__builtin_memcpy(buf + n, s, len);
	return n + len;
}

/* The same for v in base 10, or 16 with its "0x". */
static inline size_t tl_append_u64(char *buf, size_t n, size_t cap,
				   uint64_t v, unsigned base)
{
	char tmp[TL_FORMAT_MAX + 1];
	tmp[tl_format_u64(tmp, v, base)] = '\0';
	if (base == 16)
		n = tl_append(buf, n, cap, "0x");
	return tl_append(buf, n, cap, tmp);
}

#endif /* TLMALLOC_DIAG_H */
