/*
 * huge.c - blocks above TL_MEDIUM_MAX, each a huge segment of its own
 * (docs/design.md, "Huge segment"): kept in the pool's cache once freed,
 * cut, gathered from pieces and grown by realloc without a copy, and the
 * cache never larger than the blocks once were.
 *
 * Each case is named after the failure it catches:
 *   realloc_move_loses_contents  a huge block that cannot grow in place
 *                              moves its pages: contents kept, neighbours
 *                              untouched, still freeable and ours
 *   huge_tail_not_reused       a freed huge block cut for a smaller one: its
 *                              tail serves the next block with no mapping
 *                              (fault_map armed), and a block in such a
 *                              tail grows by realloc with its contents
 *   huge_cache_too_small       64 huge blocks of 200 KiB freed: all 64 are
 *                              kept, so as many come back with every
 *                              mapping refused (threads that free and
 *                              allocate such blocks at random keep tens
 *                              of them changing hands)
 *   largest_block_not_kept     a freed block of 64 MiB, the largest size
 *                              the cache takes, comes back from it with
 *                              every mapping refused, its bytes as they
 *                              were (its mapping, with the header, is
 *                              more than 64 MiB: it was unmapped)
 *   huge_pieces_not_gathered   huge blocks of 3 MiB freed, then one of 8
 *                              MiB: it is made of their pages (it holds
 *                              their bytes, no fresh zero pages), calloc
 *                              of such a block is zero all the same, and
 *                              it grows by realloc with its contents
 *   realloc_growth_not_gathered  the same pieces, and a block of 1 MiB
 *                              grown to 8 MiB by realloc: the growth is
 *                              made of their pages too, the block keeps
 *                              its contents
 *   cache_over_peak            a freed block of 16 MiB kept, then a block
 *                              as large that the cache cannot serve (its
 *                              alignment): the cache gives back what the
 *                              new block took fresh, so the process holds
 *                              no more than its blocks once did
 *   growth_splits_mappings     a block made of pieces (several mappings)
 *                              grown by realloc 1/8 at a time to 64 MiB:
 *                              its contents kept at every step, and the
 *                              process's mappings stay few (it grows
 *                              where it stands, its last mapping longer
 *                              or one more after it, instead of its pages
 *                              moving to a new place a step)
 *   huge_mappings_unbounded    huge blocks replaced thousands of times at
 *                              random sizes: the OS mappings of the
 *                              process stay under the bound segment.c
 *                              sets (pieces moved between blocks split
 *                              them)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#if !defined(__GLIBC__)
int malloc_trim(size_t pad);	/* glibc's; musl does not declare it */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlmalloc.h"
#include "check.h"

static void realloc_move_loses_contents(void)
{
	/* Many neighbours, so that most blocks cannot grow where they are. */
	enum { N = 8 };
	size_t small = 6 << 20, big = 40 << 20;
	unsigned char *b[N];
	for (int i = 0; i < N; i++) {
		b[i] = malloc(small);
		CHECK(b[i] != NULL);
		pattern_fill(b[i], small, (uint64_t)i);
	}
	for (int i = 0; i < N; i += 2) {
		unsigned char *q = realloc(b[i], big);
		CHECK(q != NULL);
		CHECK(((uintptr_t)q & 15) == 0);
		CHECKF(pattern_find_damage(q, small, (uint64_t)i) == small,
		       "block %d lost its contents", i);
		CHECK(malloc_usable_size(q) >= big);
		memset(q + small, 0x5a, big - small);
		b[i] = q;
	}
	for (int i = 1; i < N; i += 2)
		CHECKF(pattern_find_damage(b[i], small, (uint64_t)i) == small,
		       "neighbour %d damaged", i);
	for (int i = 0; i < N; i++)
		free(b[i]);
}

static void huge_tail_not_reused(void)
{
	malloc_trim(0);			/* an empty huge cache */
	unsigned char *big = malloc(24 << 20);
	CHECK(big != NULL);
	memset(big, 1, 24 << 20);
	free(big);
	/* Cut to 4 MiB: the 20 MiB after it stay resident, cached. */
	unsigned char *a = malloc(4 << 20);
	CHECK(a != NULL);
	pattern_fill(a, 4 << 20, 1);
	/* With every mapping refused, 11 MiB still come from that tail (the
	 * whole 24 MiB would waste more than half). */
	CHECK(tl_option_set("fault_map", 1) == 0);
	errno = 0;
	unsigned char *b = malloc(11 << 20);
	long left = -1;
	CHECK(tl_option_get("fault_map", &left) == 0);
	CHECK(tl_option_set("fault_map", 0) == 0);
	CHECKF(b != NULL && left == 1, "b %p, mappings refused %ld", b,
	       1 - left);
	pattern_fill(b, 11 << 20, 2);
	/* The tail is two mappings (header, moved pages): it grows all the
	 * same, its pages moved, contents kept, the first block untouched. */
	unsigned char *c = realloc(b, 40 << 20);
	CHECK(c != NULL);
	CHECKF(pattern_find_damage(c, 11 << 20, 2) == (size_t)11 << 20,
	       "grown block lost its contents");
	CHECK(malloc_usable_size(c) >= (size_t)40 << 20);
	memset(c + (11 << 20), 3, 29 << 20);
	CHECKF(pattern_find_damage(a, 4 << 20, 1) == (size_t)4 << 20,
	       "the cut block was damaged");
	free(a);
	free(c);
}

enum { CACHED_HUGE = 64, CACHED_SIZE = 200 << 10 };

static void huge_cache_too_small(void)
{
	static unsigned char *b[CACHED_HUGE];
	CHECK(tl_option_set("purge_delay", 3600000) == 0);
	malloc_trim(0);			/* an empty huge cache */
	for (int i = 0; i < CACHED_HUGE; i++) {
		CHECK((b[i] = malloc(CACHED_SIZE)) != NULL);
		b[i][CACHED_SIZE - 1] = (unsigned char)i;
	}
	for (int i = 0; i < CACHED_HUGE; i++)
		free(b[i]);
	/* Each comes back from the cache, with every mapping refused. */
	CHECK(tl_option_set("fault_oom", 1) == 0);
	int got = 0;
	for (int i = 0; i < CACHED_HUGE; i++)
		got += (b[i] = malloc(CACHED_SIZE)) != NULL;
	CHECK(tl_option_set("fault_oom", 0) == 0);
	CHECKF(got == CACHED_HUGE, "%d of %d freed huge blocks reused from "
	       "the cache", got, CACHED_HUGE);
	for (int i = 0; i < CACHED_HUGE; i++)
		free(b[i]);
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

static void largest_block_not_kept(void)
{
	size_t n = (size_t)64 << 20, changed = 0;
	CHECK(tl_option_set("purge_delay", 3600000) == 0);
	malloc_trim(0);			/* an empty huge cache */
	unsigned char *p = malloc(n);
	CHECK(p != NULL);
	memset(p, 7, n);
	free(p);
	CHECK(tl_option_set("fault_oom", 1) == 0);
	unsigned char *q = malloc(n);
	CHECK(tl_option_set("fault_oom", 0) == 0);
	CHECKF(q != NULL, "a freed block of 64 MiB did not come back from "
	       "the cache");
	for (size_t i = 0; i < n; i += 4096)
		changed += q[i] != 7;
	CHECKF(changed == 0, "%zu pages of the block are not the freed "
	       "block's", changed);
	free(q);
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

/* Free three blocks of 3 MiB, each filled with its own byte (1, 2, 3),
 * with the huge cache empty before and kept after. */
static void free_three_pieces(void)
{
	malloc_trim(0);
	CHECK(tl_option_set("purge_delay", 3600000) == 0);
	unsigned char *piece[3];
	for (int i = 0; i < 3; i++) {
		CHECK((piece[i] = malloc(3 << 20)) != NULL);
		memset(piece[i], i + 1, 3 << 20);
	}
	for (int i = 0; i < 3; i++)
		free(piece[i]);
}

static void huge_pieces_not_gathered(void)
{
	size_t n = (size_t)8 << 20, old = 0;
	free_three_pieces();
	unsigned char *p = malloc(n);
	CHECK(p != NULL);
	for (size_t i = 0; i < n; i++)
		old += p[i] >= 1 && p[i] <= 3;
	/* All but what is left under a 1 MiB piece comes from the three. */
	CHECKF(old >= n - (1 << 20), "%zu KiB of 8 MiB came from the freed "
	       "blocks", old >> 10);
	pattern_fill(p, n, 4);
	unsigned char *q = realloc(p, 20 << 20);
	CHECK(q != NULL);
	CHECKF(pattern_find_damage(q, n, 4) == n, "grown block lost its "
	       "contents");
	memset(q + n, 5, (20 << 20) - n);
	free(q);
	free_three_pieces();
	unsigned char *z = calloc(1, n);
	CHECK(z != NULL);
	for (size_t i = 0; i < n; i++)
		CHECKF(z[i] == 0, "calloc'd byte %zu is %u", i, z[i]);
	free(z);
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

static size_t mappings_now(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL);
	size_t lines = 0;
	for (int c; (c = fgetc(f)) != EOF;)
		lines += c == '\n';
	fclose(f);
	return lines;
}

enum { CHURN_LIVE = 128, CHURN_ROUNDS = 10000 };

static void huge_mappings_unbounded(void)
{
	static unsigned char *live[CHURN_LIVE];
	static size_t sizes[CHURN_LIVE];
	uint64_t rng = 12345;
	size_t most = 0, step = (size_t)1 << 20;	/* one byte a MiB */
	malloc_trim(0);
	CHECK(tl_option_set("purge_delay", 3600000) == 0);
	size_t before = mappings_now();
	for (int r = 0; r < CHURN_ROUNDS; r++) {
		unsigned k = (unsigned)(rng_next(&rng) % CHURN_LIVE);
		free(live[k]);
		size_t n = ((size_t)1 << 20) + rng_next(&rng) % (5 << 20);
		CHECK((live[k] = malloc(n)) != NULL);
		sizes[k] = n;
		for (size_t off = 0; off < n; off += step)
			live[k][off] = (unsigned char)(k + 1);
		live[k][n - 1] = (unsigned char)(k + 1);
		if (r % 100 == 0) {
			size_t now = mappings_now();
			most = now > most ? now : most;
		}
	}
	for (unsigned k = 0; k < CHURN_LIVE; k++) {
		for (size_t off = 0; off < sizes[k]; off += step)
			CHECKF(live[k][off] == (unsigned char)(k + 1),
			       "block %u lost its byte at %zu", k, off);
		CHECK(live[k][sizes[k] - 1] == (unsigned char)(k + 1));
		free(live[k]);
	}
	/* One mapping a live block and a cached one (64), 512 for the
	 * pieces in all (segment.c), a few the program makes meanwhile.
	 * Without that bound this run makes about 950. */
	size_t bound = before + CHURN_LIVE + 64 + 512 + 16;
	CHECKF(most <= bound, "%zu mappings at most (%zu before, bound %zu)",
	       most, before, bound);
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

/* Bytes of p[from..to) that hold a piece's byte (1, 2 or 3). */
static size_t piece_bytes(const unsigned char *p, size_t from, size_t to)
{
	size_t n = 0;
	for (size_t i = from; i < to; i++)
		n += p[i] >= 1 && p[i] <= 3;
	return n;
}

static void realloc_growth_not_gathered(void)
{
	size_t n = (size_t)1 << 20, grown = (size_t)8 << 20;
	free_three_pieces();
	unsigned char *p = malloc(n);
	CHECK(p != NULL);
	pattern_fill(p, n, 9);
	unsigned char *q = realloc(p, grown);
	CHECK(q != NULL);
	CHECKF(pattern_find_damage(q, n, 9) == n, "grown block lost its "
	       "contents");
	/* All but what is left under a 1 MiB piece comes from the three. */
	size_t old = piece_bytes(q, n, grown);
	CHECKF(old >= grown - n - (1 << 20), "%zu KiB of the 7 MiB growth "
	       "came from the freed blocks", old >> 10);
	free(q);
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

static uint64_t huge_cached(void)
{
	struct tl_stats st;
	CHECK(tl_stats_get(&st, sizeof(st)) == sizeof(st));
	return st.huge_cached;
}

static void cache_over_peak(void)
{
	size_t n = (size_t)16 << 20;
	CHECK(tl_option_set("purge_delay", 3600000) == 0);
	malloc_trim(0);
	unsigned char *a = malloc(n);
	CHECK(a != NULL);
	memset(a, 1, n);
	free(a);
	CHECKF(huge_cached() >= n, "the freed block was not kept (%" PRIu64
	       " bytes cached)", huge_cached());
	void *b = NULL;
	CHECK(posix_memalign(&b, (size_t)8 << 20, n) == 0);
	memset(b, 2, n);
	/* What is left: the headers' allowance, nothing like 16 MiB. */
	CHECKF(huge_cached() <= (1 << 20), "%" PRIu64 " bytes cached beside "
	       "a fresh block as large as the most the program held",
	       huge_cached());
	free(b);
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

static void growth_splits_mappings(void)
{
	size_t n = (size_t)8 << 20, most = 0;
	free_three_pieces();
	size_t before = mappings_now();
	unsigned char *p = malloc(n);	/* made of the three pieces */
	CHECK(p != NULL);
	pattern_fill(p, n, 5);
	while (n < ((size_t)64 << 20)) {
		size_t m = n + n / 8;
		unsigned char *q = realloc(p, m);
		CHECK(q != NULL);
		CHECKF(pattern_find_damage(q, n, 5) == n, "block grown to "
		       "%zu bytes lost its contents", m);
		pattern_fill(q, m, 5);
		p = q;
		n = m;
		size_t now = mappings_now();
		most = now > most ? now : most;
	}
	free(p);
	/* The pieces' mappings and the growth's: 6 more here.  Moving the
	 * block's pages to a new place at each step, as realloc did for a
	 * block of several mappings, left 21 more. */
	CHECKF(most <= before + 8, "%zu mappings at most, %zu before", most,
	       before);
	CHECK(tl_option_set("purge_delay", 100) == 0);
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		TEST_CASE(realloc_move_loses_contents),
		TEST_CASE(huge_tail_not_reused),
		TEST_CASE(huge_cache_too_small),
		TEST_CASE(largest_block_not_kept),
		TEST_CASE(huge_pieces_not_gathered),
		TEST_CASE(realloc_growth_not_gathered),
		TEST_CASE(cache_over_peak),
		TEST_CASE(growth_splits_mappings),
		TEST_CASE(huge_mappings_unbounded),
	};
	return run_tests(tests, TEST_COUNT(tests), argc, argv);
}
