/*
 * api_contract.c - the C allocation API's contract, one case per failure.
 *
 * Built twice: once calling the standard names (malloc, free, ... resolved
 * to tlmalloc by linking the library) and once, with TL_TEST_TL_NAMES, the
 * tl_ names.  The semantics checked are glibc's: 16-byte alignment from
 * malloc, the requested alignment from the aligned family, zeroed calloc
 * memory, ENOMEM on impossible sizes, EINVAL for bad alignments, free(NULL)
 * a no-op, free preserving errno, realloc(p, 0) freeing p and returning NULL.
 *
 * Whether memory was really released is judged from get_data_segment_size()
 * (bytes held from the OS): a loop that leaked would make it grow by far
 * more than the slack allowed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
#include "alloc_api.h"
#include "check.h"

#define MIB ((size_t)1 << 20)
#define MALLOC_ALIGN 16
/* Largest alignment tried for the aligned family (at least 1 MiB). */
#define MAX_ALIGN (4 * MIB)
/* A loop that leaks would hold far more than this. */
#define LEAK_SLACK (64 * MIB)
#define LEAK_ROUNDS 100000

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Sizes across the small classes, the medium range and large blocks. */
static size_t size_at(size_t i)
{
	if (i < 1100)
		return i;
	if (i < 1200)
		return (i - 1100) * 997 + 1024;
	return (i - 1200) * 123457 + 100000;
}

#define SIZE_POINTS 1300

static void check_block(void *p, size_t n, size_t alignment)
{
	CHECKF(p != NULL, "size %zu alignment %zu", n, alignment);
	CHECKF(is_aligned(p, alignment), "%p size %zu alignment %zu", p, n,
	       alignment);
	CHECKF(T_USABLE_SIZE(p) >= n, "usable %zu < size %zu",
	       T_USABLE_SIZE(p), n);
}

static void malloc_misaligned(void)
{
	size_t i;

	for (i = 0; i < SIZE_POINTS; i++) {
		size_t n = size_at(i);
		void *p = T_MALLOC(n);

		check_block(p, n, MALLOC_ALIGN);
		memset(p, 0xa5, n);
		T_FREE(p);
	}
}

/* glibc returns a unique, freeable block for malloc(0). */
static void malloc_zero_not_unique(void)
{
	void *a = T_MALLOC(0);
	void *b = T_MALLOC(0);

	CHECK(a != NULL && b != NULL);
	CHECK(a != b);
	CHECK(is_aligned(a, MALLOC_ALIGN) && is_aligned(b, MALLOC_ALIGN));
	T_FREE(a);
	T_FREE(b);
}

#define ALIGNED_LIVE 6

static size_t aligned_size(size_t alignment, int k)
{
	size_t sizes[ALIGNED_LIVE] = { 1, alignment - 1, alignment,
				       alignment + 1, 3 * alignment, 100 };

	return sizes[k] ? sizes[k] : 1;
}

/* Allocate a few blocks at one alignment, write them all, check them all. */
static void aligned_round(size_t a, int which)
{
	void *p[ALIGNED_LIVE];
	size_t n[ALIGNED_LIVE];
	int k;

	for (k = 0; k < ALIGNED_LIVE; k++) {
		n[k] = aligned_size(a, k);
		if (which == 0)
			p[k] = T_ALIGNED_ALLOC(a, n[k]);
		else if (which == 1)
			p[k] = T_MEMALIGN(a, n[k]);
		else
			CHECK(T_POSIX_MEMALIGN(&p[k], a, n[k]) == 0);
		check_block(p[k], n[k], a);
		pattern_fill(p[k], n[k], a + (size_t)k);
	}
	for (k = 0; k < ALIGNED_LIVE; k++) {
		CHECKF(pattern_find_damage(p[k], n[k], a + (size_t)k) == n[k],
		       "alignment %zu block %d overwritten", a, k);
		if (k & 1)
			T_FREE_ALIGNED_SIZED(p[k], a, n[k]);
		else
			T_FREE(p[k]);
	}
}

static void aligned_family_misaligned(void)
{
	size_t a;
	int which;

	for (which = 0; which < 3; which++) {
		for (a = 1; a <= MAX_ALIGN; a *= 2) {
			if (which == 2 && a < sizeof(void *))
				continue;
			aligned_round(a, which);
		}
	}
}

/* glibc rounds a memalign alignment that is not a power of two up to one. */
static void memalign_odd_alignment_misaligned(void)
{
	size_t odd[] = { 3, 24, 48, 100, 1000, 3000 };
	size_t i;

	for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		size_t a = 1;
		void *p = T_MEMALIGN(odd[i], 200);

		while (a < odd[i])
			a *= 2;
		check_block(p, 200, a);
		T_FREE(p);
	}
}

static void check_zero(const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		CHECKF(p[i] == 0, "byte %zu of %zu is %#x", i, n, p[i]);
}

#define DIRTY_BLOCKS 64

/*
 * Dirty blocks of size n, free them, then calloc the same size back (fewer
 * blocks when they are large: reuse, not volume, is what is tested).
 */
static void calloc_after_dirty(size_t count, size_t size)
{
	void *dirty[DIRTY_BLOCKS];
	size_t n = count * size;
	int blocks = n > MIB ? 4 : DIRTY_BLOCKS;
	int k;

	for (k = 0; k < blocks; k++) {
		dirty[k] = T_MALLOC(n);
		CHECK(dirty[k] != NULL);
		memset(dirty[k], 0xdb, T_USABLE_SIZE(dirty[k]));
	}
	for (k = 0; k < blocks; k++)
		T_FREE(dirty[k]);
	for (k = 0; k < blocks; k++) {
		dirty[k] = T_CALLOC(count, size);
		check_block(dirty[k], n, MALLOC_ALIGN);
		check_zero(dirty[k], n);
		memset(dirty[k], 0xdb, n);
	}
	for (k = 0; k < blocks; k++)
		T_FREE(dirty[k]);
}

static void calloc_not_zeroed(void)
{
	size_t i;

	for (i = 0; i < 1100; i += 7)
		calloc_after_dirty(1, i);
	for (i = 1; i < 5000; i = i * 3 + 1)
		calloc_after_dirty(i, 24);
	calloc_after_dirty(1, 70000);
	calloc_after_dirty(3, MIB);
	calloc_after_dirty(1, 9 * MIB + 123);
}

#define NEIGHBOURS 200

/* Write every usable byte of many neighbours; none may reach another. */
static void usable_size_too_small(void)
{
	void *p[NEIGHBOURS];
	size_t i, round;

	CHECK(T_USABLE_SIZE(NULL) == 0);
	for (round = 0; round < 12; round++) {
		for (i = 0; i < NEIGHBOURS; i++) {
			size_t n = (i * 37 + round * 501) % (2048 << round);

			p[i] = T_MALLOC(n);
			check_block(p[i], n, MALLOC_ALIGN);
			pattern_fill(p[i], T_USABLE_SIZE(p[i]), i);
		}
		for (i = 0; i < NEIGHBOURS; i++) {
			size_t u = T_USABLE_SIZE(p[i]);

			CHECKF(pattern_find_damage(p[i], u, i) == u,
			       "block %zu overwritten by a neighbour", i);
			T_FREE(p[i]);
		}
	}
}

#define CHECK_ENOMEM(expr) \
	do { \
		void *enomem_p; \
		errno = 0; \
		enomem_p = (expr); \
		CHECKF(enomem_p == NULL && errno == ENOMEM, \
		       "returned %p errno %d", enomem_p, errno); \
	} while (0)

static void enomem_not_reported_malloc(void)
{
	size_t impossible[] = { SIZE_MAX, SIZE_MAX - 4095, SIZE_MAX / 2 + 1,
				(size_t)PTRDIFF_MAX, (size_t)PTRDIFF_MAX + 1 };
	size_t i;

	for (i = 0; i < sizeof(impossible) / sizeof(impossible[0]); i++) {
		size_t n = impossible[i];
		void *q = NULL;

		CHECK_ENOMEM(T_MALLOC(n));
		CHECK_ENOMEM(T_CALLOC(1, n));
		CHECK_ENOMEM(T_REALLOC(NULL, n));
		CHECK_ENOMEM(T_ALIGNED_ALLOC(64, n));
		CHECK_ENOMEM(T_MEMALIGN(4096, n));
		CHECK_ENOMEM(T_VALLOC(n));
		CHECK_ENOMEM(T_PVALLOC(n));
		CHECKF(T_POSIX_MEMALIGN(&q, 64, n) == ENOMEM, "size %zu", n);
	}
}

static void enomem_not_reported_overflow(void)
{
	size_t half = SIZE_MAX / 2 + 1;

	CHECK_ENOMEM(T_CALLOC(half, 2));
	CHECK_ENOMEM(T_CALLOC(2, half));
	CHECK_ENOMEM(T_CALLOC(SIZE_MAX, SIZE_MAX));
	CHECK_ENOMEM(T_CALLOC((size_t)1 << 32, (size_t)1 << 32));
	CHECK_ENOMEM(T_REALLOCARRAY(NULL, half, 2));
	CHECK_ENOMEM(T_REALLOCARRAY(NULL, (size_t)1 << 33, (size_t)1 << 31));
}

/* A failed realloc/reallocarray must leave the block alive and intact. */
static void failed_realloc_loses_block(void)
{
	size_t sizes[] = { 10, 700, 50000, 3 * MIB };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		void *p = T_MALLOC(n);

		CHECK(p != NULL);
		pattern_fill(p, n, n);
		CHECK_ENOMEM(T_REALLOC(p, SIZE_MAX));
		CHECK_ENOMEM(T_REALLOC(p, (size_t)PTRDIFF_MAX + 1));
		CHECK_ENOMEM(T_REALLOCARRAY(p, SIZE_MAX / 2 + 1, 2));
		CHECK_ENOMEM(T_REALLOCARRAY(p, SIZE_MAX / 8, 7));
		CHECKF(pattern_find_damage(p, n, n) == n, "size %zu", n);
		T_FREE(p);
	}
}

/* Alignments that are powers of two but too big for any real mapping. */
static void huge_alignment_returns_block(void)
{
	size_t a;

	for (a = (size_t)1 << 50; a != 0; a <<= 1) {
		void *p;

		errno = 0;
		p = T_ALIGNED_ALLOC(a, 16);
		CHECKF(p == NULL && (errno == ENOMEM || errno == EINVAL),
		       "alignment %zu: %p errno %d", a, p, errno);
		errno = 0;
		p = T_MEMALIGN(a, 16);
		CHECKF(p == NULL && (errno == ENOMEM || errno == EINVAL),
		       "alignment %zu: %p errno %d", a, p, errno);
	}
}

#define ERRNO_SENTINEL 12345

static void posix_memalign_bad_alignment_accepted(void)
{
	size_t bad[] = { 0, 1, 2, 4, sizeof(void *) - 1, sizeof(void *) + 1,
			 3, 24, 48, 100, 4095, 4097, SIZE_MAX,
			 SIZE_MAX / 2 + 2 };
	void *const untouched = (void *)&bad;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		void *out = untouched;
		int rc;

		errno = ERRNO_SENTINEL;
		rc = T_POSIX_MEMALIGN(&out, bad[i], 64);
		CHECKF(rc == EINVAL, "alignment %zu returned %d", bad[i], rc);
		CHECKF(errno == ERRNO_SENTINEL, "alignment %zu errno %d",
		       bad[i], errno);
		CHECKF(out == untouched, "alignment %zu wrote %p", bad[i], out);
	}
}

/* posix_memalign(&p, a, 0) succeeds with a freeable block, like malloc(0). */
static void posix_memalign_zero_fails(void)
{
	void *p = NULL;

	CHECK(T_POSIX_MEMALIGN(&p, sizeof(void *), 0) == 0);
	CHECK(p != NULL && is_aligned(p, sizeof(void *)));
	T_FREE(p);
	CHECK(T_POSIX_MEMALIGN(&p, 4096, 0) == 0);
	CHECK(p != NULL && is_aligned(p, 4096));
	T_FREE(p);
}

static void aligned_alloc_bad_alignment_accepted(void)
{
	size_t bad[] = { 3, 24, 48, 100, 4095, 4097, SIZE_MAX,
			 SIZE_MAX / 2 + 2 };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		void *p;

		errno = 0;
		p = T_ALIGNED_ALLOC(bad[i], 64);
		CHECKF(p == NULL && errno == EINVAL,
		       "alignment %zu: %p errno %d", bad[i], p, errno);
	}
}

static void free_null_crashes(void)
{
	errno = ERRNO_SENTINEL;
	T_FREE(NULL);
	T_FREE_SIZED(NULL, 0);
	T_FREE_SIZED(NULL, 100);
	T_FREE_ALIGNED_SIZED(NULL, 64, 0);
	T_CFREE(NULL);
	CHECK(errno == ERRNO_SENTINEL);
}

#define ERRNO_BLOCKS 4000

static size_t errno_size(size_t k)
{
	if (k % 500 == 0)
		return 2 * MIB + k;
	if (k % 50 == 0)
		return 40000 + k * 8;
	return k % 1500;
}

/* Free enough (small, medium, large) that pages and mappings go back. */
static void free_clobbers_errno(void)
{
	static void *p[ERRNO_BLOCKS];
	int round;
	size_t k;

	for (round = 0; round < 4; round++) {
		for (k = 0; k < ERRNO_BLOCKS; k++) {
			p[k] = T_MALLOC(errno_size(k));
			CHECK(p[k] != NULL);
		}
		for (k = 0; k < ERRNO_BLOCKS; k++) {
			int e = round & 1 ? 0 : ERRNO_SENTINEL;

			errno = e;
			if (round == 2)
				T_FREE_SIZED(p[k], errno_size(k));
			else if (round == 3)
				T_CFREE(p[k]);
			else
				T_FREE(p[k]);
			CHECKF(errno == e, "free of block %zu (size %zu) set "
			       "errno %d", k, errno_size(k), errno);
		}
	}
}

/* Sizes that climb through the classes into large blocks and back. */
static size_t grow(size_t n)
{
	return n + n / 3 + 1;
}

#define REALLOC_TOP (12 * MIB)

static void check_prefix(const unsigned char *p, size_t n, size_t from)
{
	size_t i;

	for (i = 0; i < n; i++)
		CHECKF(p[i] == (unsigned char)(i * 31 + 7),
		       "byte %zu lost after realloc from %zu", i, from);
}

static void fill_from(unsigned char *p, size_t old, size_t n)
{
	size_t i;

	for (i = old; i < n; i++)
		p[i] = (unsigned char)(i * 31 + 7);
}

static void realloc_loses_contents(void)
{
	void *noise[64];
	unsigned char *p = T_MALLOC(1);
	size_t n = 1, next;
	int k = 0;

	CHECK(p != NULL);
	fill_from(p, 0, 1);
	for (next = grow(n); next <= REALLOC_TOP; n = next, next = grow(n)) {
		p = T_REALLOC(p, next);
		check_block(p, next, MALLOC_ALIGN);
		check_prefix(p, n, n);
		fill_from(p, n, next);
		noise[k++ % 64] = T_MALLOC(next % 2000);
	}
	for (next = n * 2 / 3; next > 0; n = next, next = next * 2 / 3) {
		p = T_REALLOC(p, next);
		check_block(p, next, MALLOC_ALIGN);
		check_prefix(p, next, n);
	}
	p = T_REALLOCARRAY(p, 1000, 3);
	check_block(p, 3000, MALLOC_ALIGN);
	check_prefix(p, n, n);
	T_FREE(p);
	for (k = k < 64 ? k : 64; k > 0; k--)
		T_FREE(noise[k - 1]);
}

/* Same size, and a block from the aligned family, through realloc. */
static void realloc_aligned_loses_contents(void)
{
	unsigned char *p = T_MEMALIGN(4096, 5000);
	size_t n = 5000;

	CHECK(p != NULL);
	fill_from(p, 0, n);
	p = T_REALLOC(p, n);
	check_block(p, n, MALLOC_ALIGN);
	check_prefix(p, n, n);
	p = T_REALLOC(p, 3 * MIB);
	check_block(p, 3 * MIB, MALLOC_ALIGN);
	check_prefix(p, n, n);
	p = T_REALLOC(p, 100);
	check_block(p, 100, MALLOC_ALIGN);
	check_prefix(p, 100, n);
	T_FREE(p);
}

static void realloc_null_not_malloc(void)
{
	size_t i;

	for (i = 0; i < SIZE_POINTS; i += 13) {
		size_t n = size_at(i);
		void *p = T_REALLOC(NULL, n);

		check_block(p, n, MALLOC_ALIGN);
		memset(p, 1, n);
		T_FREE(p);
		p = T_REALLOCARRAY(NULL, n, 1);
		check_block(p, n, MALLOC_ALIGN);
		memset(p, 2, n);
		T_FREE(p);
	}
}

/* realloc(NULL, 0) is malloc(0): a freeable block, not NULL. */
static void realloc_null_zero_returns_null(void)
{
	void *p = T_REALLOC(NULL, 0);

	CHECK(p != NULL);
	T_FREE(p);
}

static unsigned long held(void)
{
	return get_data_segment_size();
}

static void check_no_growth(unsigned long before, const char *what)
{
	unsigned long after = held();

	CHECKF(after <= before + LEAK_SLACK, "%s: held %lu bytes before, "
	       "%lu after %d rounds", what, before, after, LEAK_ROUNDS);
}

/* glibc: realloc(p, 0) frees p and returns NULL. */
static void realloc_zero_keeps_block(void)
{
	unsigned long before;
	int i;

	for (i = 0; i < 100; i++) {
		void *p = T_MALLOC(1000);

		CHECK(p != NULL);
		CHECK(T_REALLOC(p, 0) == NULL);
	}
	before = held();
	for (i = 0; i < LEAK_ROUNDS; i++) {
		void *p = T_MALLOC(1000 + (size_t)(i % 7) * 100);

		CHECK(p != NULL);
		memset(p, 0x5a, 1000);
		CHECK(T_REALLOC(p, 0) == NULL);
	}
	check_no_growth(before, "realloc(p, 0)");
}

/* free_sized, free_aligned_sized and cfree must really free. */
static void sized_free_leaks(void)
{
	unsigned long before = held();
	int i;

	for (i = 0; i < LEAK_ROUNDS; i++) {
		size_t n = 900 + (size_t)(i % 11) * 50;
		size_t a = (size_t)64 << (i % 6);
		void *p = T_MALLOC(n);
		void *q = T_ALIGNED_ALLOC(a, n);
		void *r = T_CALLOC(1, n);

		CHECK(p != NULL && q != NULL && r != NULL);
		memset(p, 1, n);
		memset(q, 2, n);
		T_FREE_SIZED(p, n);
		T_FREE_ALIGNED_SIZED(q, a, n);
		T_CFREE(r);
	}
	check_no_growth(before, "free_sized/free_aligned_sized/cfree");
}

static void valloc_not_page_aligned(void)
{
	size_t page = page_size();
	size_t sizes[] = { 1, 100, page - 1, page, page + 1, 3 * page + 5,
			   MIB + 1, 5 * MIB };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		void *p = T_VALLOC(n);

		check_block(p, n, page);
		memset(p, 3, n);
		T_FREE(p);
	}
}

/* pvalloc rounds the size up to whole pages: all of them are usable. */
static void pvalloc_not_rounded(void)
{
	size_t page = page_size();
	size_t sizes[] = { 1, 100, page - 1, page, page + 1, 3 * page + 5,
			   MIB + 1, 5 * MIB };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		size_t rounded = (n + page - 1) / page * page;
		void *p = T_PVALLOC(n);

		check_block(p, rounded, page);
		memset(p, 4, rounded);
		T_FREE(p);
	}
	{
		void *p = T_PVALLOC(0);

		CHECK(p != NULL && is_aligned(p, page));
		T_FREE(p);
	}
}

static int cmp_addr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a;
	uintptr_t y = (uintptr_t)*(void *const *)b;

	return x < y ? -1 : x > y;
}

#define LIVE_BLOCKS 20000

/* Many live blocks of mixed sizes: sorted, none may reach the next. */
static void live_blocks_overlap(void)
{
	static void *p[LIVE_BLOCKS];
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	size_t i;

	for (i = 0; i < LIVE_BLOCKS; i++) {
		uint64_t r = rng_next(&rng);
		size_t n = r % 64 == 0 ? r % 300000 : r % 2000;

		p[i] = i % 3 ? T_MALLOC(n) : T_ALIGNED_ALLOC(64, n);
		check_block(p[i], n, MALLOC_ALIGN);
		memset(p[i], 0x77, n);
	}
	qsort(p, LIVE_BLOCKS, sizeof(p[0]), cmp_addr);
	for (i = 0; i + 1 < LIVE_BLOCKS; i++) {
		uintptr_t end = (uintptr_t)p[i] + T_USABLE_SIZE(p[i]);

		CHECKF(end <= (uintptr_t)p[i + 1], "%p + %zu overlaps %p",
		       p[i], T_USABLE_SIZE(p[i]), p[i + 1]);
	}
	for (i = 0; i < LIVE_BLOCKS; i++)
		T_FREE(p[i]);
}

#define REUSE_SLOTS 256
#define REUSE_ROUNDS 40000

/*
 * Blocks above the direct table (1 KiB .. 128 KiB) replaced at random, so
 * the class queues' heads are popped, run dry and take back their own
 * frees many times: every block keeps its pattern until it is freed, and
 * none is handed out twice (a live block's pattern would be overwritten).
 */
static void medium_reuse_corrupts(void)
{
	static unsigned char *p[REUSE_SLOTS];
	static size_t n[REUSE_SLOTS];
	uint64_t rng = 0x2545f4914f6cdd1dULL;
	size_t i, j;

	for (i = 0; i < REUSE_ROUNDS; i++) {
		uint64_t r = rng_next(&rng);
		size_t k = r % REUSE_SLOTS;

		if (p[k] != NULL) {
			unsigned char tag = (unsigned char)(k + n[k]);
			for (j = 0; j < n[k]; j += 97)
				CHECKF(p[k][j] == tag, "block of %zu bytes "
				       "changed at %zu", n[k], j);
			CHECK(p[k][n[k] - 1] == tag);
			T_FREE(p[k]);
		}
		n[k] = 1025 + (r >> 16) % (128 * 1024 - 1024);
		p[k] = T_MALLOC(n[k]);
		check_block(p[k], n[k], MALLOC_ALIGN);
		memset(p[k], (unsigned char)(k + n[k]), n[k]);
	}
	for (i = 0; i < REUSE_SLOTS; i++)
		T_FREE(p[i]);
}

static void version_mismatch(void)
{
	char expect[64];

	snprintf(expect, sizeof(expect), "%d.%d.%d", TLMALLOC_VERSION_MAJOR,
		 TLMALLOC_VERSION_MINOR, TLMALLOC_VERSION_PATCH);
	CHECK(tl_version() != NULL);
	CHECKF(strcmp(tl_version(), expect) == 0, "tl_version() \"%s\", "
	       "header \"%s\"", tl_version(), expect);
	CHECK(TLMALLOC_VERSION == TLMALLOC_VERSION_MAJOR * 10000 +
	      TLMALLOC_VERSION_MINOR * 100 + TLMALLOC_VERSION_PATCH);
}

/* Free memory goes back to the OS when asked for it. */
static void trim_releases_nothing(void)
{
	static void *p[65536];
	unsigned long peak, after;
	int r;
	size_t i;

	for (i = 0; i < 65536; i++) {
		p[i] = T_MALLOC(1024);
		CHECK(p[i] != NULL);
		memset(p[i], 9, 1024);
	}
	peak = held();
	for (i = 0; i < 65536; i++)
		T_FREE(p[i]);
	r = tl_trim();
	after = held();
	CHECKF(r == 0 || r == 1, "tl_trim returned %d", r);
	CHECKF(after <= peak / 2, "held %lu with 64 MiB live, %lu after "
	       "freeing it and tl_trim", peak, after);
}

/*
 * The C library's own allocations (strdup, getline's buffer) come from
 * tlmalloc: tl_usable_size takes their blocks (it aborts on one it did not
 * hand out) and the standard free frees them.  Under musl, a static
 * program's libc calls malloc through the same names as the program.
 */
static void libc_blocks_foreign(void)
{
	char *s = strdup("tlmalloc");
	CHECK(s != NULL);
	CHECKF(tl_usable_size(s) >= 9, "usable %zu", tl_usable_size(s));
	free(s);

	static char text[] = "a line\n";
	FILE *f = fmemopen(text, sizeof(text) - 1, "r");
	CHECK(f != NULL);
	char *line = NULL;
	size_t size = 0;
	CHECK(getline(&line, &size, f) == 7);
	CHECKF(tl_usable_size(line) >= size, "usable %zu, getline's %zu",
	       tl_usable_size(line), size);
	free(line);
	fclose(f);
}

/*
 * tl_object_size (hardened_malloc's malloc_object_size): from any pointer
 * inside a live block to the block's end, by what tl_usable_size says;
 * tl_object_size_fast an upper bound of it; 0 for NULL, SIZE_MAX for a
 * pointer tlmalloc does not manage.  Small, medium and huge blocks, far
 * into a huge block (past its segment's first 4 MiB), and blocks aligned
 * to 4 and 8 MiB (whose segment starts 4 MiB below them: the fuzzer's
 * find).
 */
static void object_size_wrong(void)
{
	int on_stack = 0;
	CHECK(tl_object_size(NULL) == 0 && tl_object_size_fast(NULL) == 0);
	CHECK(tl_object_size(&on_stack) == SIZE_MAX);
	CHECK(tl_object_size_fast(&on_stack) == SIZE_MAX);
	for (size_t i = 0; i < SIZE_POINTS + 40; i += 7) {
		size_t n = i < SIZE_POINTS ? size_at(i)
					   : (i - SIZE_POINTS + 1) * 1000003;
		char *p = T_MALLOC(n);
		CHECKF(p != NULL, "size %zu", n);
		size_t u = tl_usable_size(p);
		size_t at[] = { 0, 1, n / 2, u - 1 };
		for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
			size_t off = at[k] < u ? at[k] : 0;
			size_t got = tl_object_size(p + off);
			CHECKF(got == u - off, "malloc(%zu), usable %zu: "
			       "object size at +%zu is %zu", n, u, off, got);
			CHECKF(tl_object_size_fast(p + off) >= got,
			       "malloc(%zu): fast bound at +%zu is %zu < %zu",
			       n, off, tl_object_size_fast(p + off), got);
		}
#if !defined(TL_TEST_TL_NAMES)
		if (u > 1)	/* (a secure zero-size block has no byte) */
			CHECK(malloc_object_size(p + 1) == tl_object_size(p + 1));
		CHECK(malloc_object_size_fast(p) == tl_object_size_fast(p));
#endif
		T_FREE(p);
	}
	for (size_t a = 4 * MIB; a <= 8 * MIB; a *= 2) {
		size_t n = a == 4 * MIB ? 4096 : 100000;
		char *p = T_ALIGNED_ALLOC(a, n);
		CHECKF(p != NULL && (uintptr_t)p % a == 0, "aligned %zu", a);
		size_t u = tl_usable_size(p);
		for (size_t off = 0; off < u; off += 701)
			CHECKF(tl_object_size(p + off) == u - off &&
			       tl_object_size_fast(p + off) >= u - off,
			       "aligned to %zu, usable %zu: object size at "
			       "+%zu is %zu", a, u, off, tl_object_size(p + off));
		T_FREE(p);
	}
}

#if defined(__GLIBC__) && !defined(TL_TEST_TL_NAMES)
/*
 * glibc's own entry points (__libc_malloc and its family, which glibc
 * exports beside the standard names) are tlmalloc's too: a block from one
 * is released by the other family, in both directions, where the C
 * library's would be refused as foreign or would corrupt glibc's heap.
 */
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void __libc_free(void *ptr);
void *__libc_memalign(size_t alignment, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);

static void libc_entry_points_foreign(void)
{
	size_t page = page_size();
	char *p = __libc_malloc(100);
	CHECK(p != NULL && tl_usable_size(p) >= 100);
	memset(p, 7, 100);
	p = __libc_realloc(p, 5000);
	CHECK(p != NULL && tl_usable_size(p) >= 5000);
	for (int i = 0; i < 100; i++)
		CHECKF(p[i] == 7, "byte %d lost by __libc_realloc", i);
	free(p);

	unsigned char *z = __libc_calloc(300, 3);
	CHECK(z != NULL && tl_usable_size(z) >= 900);
	for (int i = 0; i < 900; i++)
		CHECKF(z[i] == 0, "__libc_calloc's byte %d is %d", i, z[i]);
	tl_free(z);

	void *a = __libc_memalign(4096, 100);
	check_block(a, 100, 4096);
	free(a);
	void *v = __libc_valloc(10);
	check_block(v, 10, page);
	free(v);
	void *w = __libc_pvalloc(page + 1);
	check_block(w, 2 * page, page);
	free(w);

	void *q = malloc(200);
	CHECK(q != NULL);
	__libc_free(q);
	__libc_free(NULL);
	q = tl_malloc(3 << 20);	/* a huge block */
	CHECK(q != NULL);
	__libc_free(q);
}
#endif

#if defined(TL_TEST_STATIC) && !defined(TL_TEST_TL_NAMES)
/*
 * Linked statically, each standard name is tlmalloc's function itself (an
 * alias of its tl_ name), not the C library's: one missing from the
 * library would silently link the C library's allocator and mix two heaps.
 */
#define SAME_FUNCTION(std, tl) \
	CHECKF((uintptr_t)&std == (uintptr_t)&tl, #std " is not " #tl)

static void static_names_not_replaced(void)
{
	SAME_FUNCTION(malloc, tl_malloc);
	SAME_FUNCTION(calloc, tl_calloc);
	SAME_FUNCTION(realloc, tl_realloc);
	SAME_FUNCTION(reallocarray, tl_reallocarray);
	SAME_FUNCTION(free, tl_free);
	SAME_FUNCTION(free_sized, tl_free_sized);
	SAME_FUNCTION(free_aligned_sized, tl_free_aligned_sized);
	SAME_FUNCTION(cfree, tl_free);
	SAME_FUNCTION(aligned_alloc, tl_aligned_alloc);
	SAME_FUNCTION(posix_memalign, tl_posix_memalign);
	SAME_FUNCTION(memalign, tl_memalign);
	SAME_FUNCTION(valloc, tl_valloc);
	SAME_FUNCTION(pvalloc, tl_pvalloc);
#if defined(__GLIBC__)
	SAME_FUNCTION(__libc_malloc, tl_malloc);
	SAME_FUNCTION(__libc_calloc, tl_calloc);
	SAME_FUNCTION(__libc_realloc, tl_realloc);
	SAME_FUNCTION(__libc_free, tl_free);
	SAME_FUNCTION(__libc_memalign, tl_memalign);
	SAME_FUNCTION(__libc_valloc, tl_valloc);
	SAME_FUNCTION(__libc_pvalloc, tl_pvalloc);
#endif
	void *p = malloc(100);
	CHECK(p != NULL && malloc_usable_size(p) == tl_usable_size(p));
	free(p);
}
#endif

#if !defined(TL_TEST_TL_NAMES) && !defined(TL_TEST_STATIC)
/*
 * Linked against libtlmalloc, every standard name must resolve to it: a
 * name it failed to export would silently fall back to the C library's
 * allocator and mix two heaps.
 */
#define NAME_IN_TLMALLOC(fn) name_in_tlmalloc(#fn, (void *)(uintptr_t)&fn)

static void name_in_tlmalloc(const char *name, void *addr)
{
	Dl_info info;

	CHECKF(dladdr(addr, &info) != 0, "%s: no symbol", name);
	CHECKF(info.dli_fname && strstr(info.dli_fname, "libtlmalloc"),
	       "%s resolves to %s", name, info.dli_fname);
}

static void standard_names_not_replaced(void)
{
	NAME_IN_TLMALLOC(malloc);
	NAME_IN_TLMALLOC(calloc);
	NAME_IN_TLMALLOC(realloc);
	NAME_IN_TLMALLOC(reallocarray);
	NAME_IN_TLMALLOC(free);
	NAME_IN_TLMALLOC(free_sized);
	NAME_IN_TLMALLOC(free_aligned_sized);
	NAME_IN_TLMALLOC(cfree);
	NAME_IN_TLMALLOC(aligned_alloc);
	NAME_IN_TLMALLOC(posix_memalign);
	NAME_IN_TLMALLOC(memalign);
	NAME_IN_TLMALLOC(valloc);
	NAME_IN_TLMALLOC(pvalloc);
	NAME_IN_TLMALLOC(malloc_usable_size);
	NAME_IN_TLMALLOC(malloc_object_size);
	NAME_IN_TLMALLOC(malloc_object_size_fast);
#if defined(__GLIBC__)
	NAME_IN_TLMALLOC(__libc_malloc);
	NAME_IN_TLMALLOC(__libc_calloc);
	NAME_IN_TLMALLOC(__libc_realloc);
	NAME_IN_TLMALLOC(__libc_free);
	NAME_IN_TLMALLOC(__libc_memalign);
	NAME_IN_TLMALLOC(__libc_valloc);
	NAME_IN_TLMALLOC(__libc_pvalloc);
#endif
}
#endif

static const struct test_case tests[] = {
	TEST_CASE(malloc_misaligned),
	TEST_CASE(malloc_zero_not_unique),
	TEST_CASE(aligned_family_misaligned),
	TEST_CASE(memalign_odd_alignment_misaligned),
	TEST_CASE(calloc_not_zeroed),
	TEST_CASE(usable_size_too_small),
	TEST_CASE(enomem_not_reported_malloc),
	TEST_CASE(enomem_not_reported_overflow),
	TEST_CASE(failed_realloc_loses_block),
	TEST_CASE(huge_alignment_returns_block),
	TEST_CASE(posix_memalign_bad_alignment_accepted),
	TEST_CASE(posix_memalign_zero_fails),
	TEST_CASE(aligned_alloc_bad_alignment_accepted),
	TEST_CASE(free_null_crashes),
	TEST_CASE(free_clobbers_errno),
	TEST_CASE(realloc_loses_contents),
	TEST_CASE(realloc_aligned_loses_contents),
	TEST_CASE(realloc_null_not_malloc),
	TEST_CASE(realloc_null_zero_returns_null),
	TEST_CASE(realloc_zero_keeps_block),
	TEST_CASE(sized_free_leaks),
	TEST_CASE(valloc_not_page_aligned),
	TEST_CASE(pvalloc_not_rounded),
	TEST_CASE(live_blocks_overlap),
	TEST_CASE(medium_reuse_corrupts),
	TEST_CASE(version_mismatch),
	TEST_CASE(trim_releases_nothing),
	TEST_CASE(libc_blocks_foreign),
	TEST_CASE(object_size_wrong),
#if defined(TL_TEST_STATIC) && !defined(TL_TEST_TL_NAMES)
	TEST_CASE(static_names_not_replaced),
#endif
#if defined(__GLIBC__) && !defined(TL_TEST_TL_NAMES)
	TEST_CASE(libc_entry_points_foreign),
#endif
#if !defined(TL_TEST_TL_NAMES) && !defined(TL_TEST_STATIC)
	TEST_CASE(standard_names_not_replaced),
#endif
};

int main(int argc, char **argv)
{
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
