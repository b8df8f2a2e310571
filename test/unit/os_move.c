/*
 * os_move.c - tl_os_move_pages, the mremap move that huge segments are
 * cut and gathered with (segment.c), over ranges of several mappings.
 * Kernels before 6.17 move one mapping a call (EFAULT for a range over
 * more); later ones move several at once.  The *_one_a_call cases make
 * this program's mremap behave as the older kernels do (the static
 * library's call resolves to it), so both paths run on any kernel:
 *   several_mappings        three mappings of different protections, side
 *                           by side, move as one range: every page arrives
 *                           with its contents and protection, the source
 *                           is gone
 *   several_one_a_call      the same, one mapping a call (in halves)
 *   hole_one_a_call         one mapping a call, a range with an unmapped
 *                           page in its middle cannot move: false, every
 *                           page is where it was, with its contents (the
 *                           halves that had moved came back), and the
 *                           destination is mapped, fresh (zero)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tlmalloc/internal.h"
#include "tlmalloc/os.h"
#include "check.h"

enum { PIECE = 8 };	/* pages a mapping */

static size_t ps;

/* The older kernels' rule, for ranges laid out by this program: one call
 * moves pages of one mapping (PIECE pages from a layout's base), all
 * mapped. */
static bool one_a_call;
static uintptr_t bases[2];

static bool within_one_mapping(uintptr_t a, size_t n)
{
	unsigned char v;
	for (size_t off = 0; off < n; off += ps)
		if (mincore((void *)(a + off), ps, &v) != 0)
			return false;
	for (int i = 0; i < 2; i++) {
		uintptr_t lo = bases[i], hi = lo + 3 * PIECE * ps;
		if (a >= lo && a < hi)
			return (a - lo) / (PIECE * ps) ==
			       (a + n - 1 - lo) / (PIECE * ps);
	}
	return true;
}

void *mremap(void *old, size_t old_size, size_t new_size, int flags, ...)
{
	void *to = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		to = va_arg(ap, void *);
		va_end(ap);
	}
	if (one_a_call && !within_one_mapping((uintptr_t)old, old_size)) {
		errno = EFAULT;
		return MAP_FAILED;
	}
	long r = syscall(SYS_mremap, old, old_size, new_size, flags, to);
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return MAP_FAILED;
	}
	return (void *)r;
}

/* Three mappings of PIECE pages each, adjacent, each page filled with
 * its number; the middle one read-only. */
static unsigned char *three_mappings(void)
{
	size_t n = 3 * PIECE * ps;
	unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	bases[0] = (uintptr_t)p;
	for (size_t i = 0; i < 3 * PIECE; i++)
		memset(p + i * ps, (int)(i + 1), ps);
	CHECK(mprotect(p + PIECE * ps, PIECE * ps, PROT_READ) == 0);
	return p;
}

static size_t pages_holding_own_number(const unsigned char *p, size_t first,
				       size_t count)
{
	size_t good = 0;
	for (size_t i = first; i < first + count; i++) {
		size_t j = 0;
		while (j < ps && p[i * ps + j] == (unsigned char)(i + 1))
			j++;
		good += j == ps;
	}
	return good;
}

static bool mapped(const void *p)
{
	unsigned char v;
	return mincore((void *)((uintptr_t)p & ~(ps - 1)), 1, &v) == 0;
}

static unsigned char *destination(size_t n)
{
	unsigned char *to = mmap(NULL, n, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(to != MAP_FAILED);
	bases[1] = (uintptr_t)to;
	return to;
}

static void several_mappings(void)
{
	size_t n = 3 * PIECE * ps;
	unsigned char *p = three_mappings(), *to = destination(n);
	CHECK(tl_os_move_pages(p, n, to));
	CHECKF(pages_holding_own_number(to, 0, 3 * PIECE) == 3 * PIECE,
	       "the moved pages lost their contents");
	CHECK(!mapped(p) && !mapped(p + n - 1));
	/* The protections came along: the middle mapping is read-only. */
	CHECK(mprotect(to + PIECE * ps, PIECE * ps, PROT_READ | PROT_WRITE) ==
	      0);
	to[0] = 0xee;
	to[n - 1] = 0xee;
	to[PIECE * ps] = 0xee;
	CHECK(munmap(to, n) == 0);
}

static void several_one_a_call(void)
{
	one_a_call = true;
	several_mappings();
}

static void hole_one_a_call(void)
{
	one_a_call = true;
	size_t n = 3 * PIECE * ps;
	unsigned char *p = three_mappings(), *to = destination(n);
	memset(to, 0x5a, n);
	size_t hole = PIECE + PIECE / 2;	/* a page of the middle one */
	CHECK(munmap(p + hole * ps, ps) == 0);
	CHECKF(!tl_os_move_pages(p, n, to), "a range with a hole moved");
	CHECKF(pages_holding_own_number(p, 0, hole) == hole &&
	       pages_holding_own_number(p, hole + 1, 3 * PIECE - hole - 1) ==
		       3 * PIECE - hole - 1,
	       "a refused move left pages moved or lost");
	for (size_t i = 0; i < n; i++)
		CHECKF(to[i] == 0, "the destination is not fresh at byte %zu",
		       i);
	CHECK(munmap(p, n) == 0 && munmap(to, n) == 0);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		TEST_CASE(several_mappings),
		TEST_CASE(several_one_a_call),
		TEST_CASE(hole_one_a_call),
	};
	ps = (size_t)sysconf(_SC_PAGESIZE);
	return run_tests(cases, TEST_COUNT(cases), argc, argv);
}
