/*
 * huge_pages.c - the option huge_pages: tlmalloc's mappings advised
 * MADV_HUGEPAGE (the "hg" flag of their mapping in /proc/self/smaps), and
 * only when it is on.  Where the kernel has no transparent huge pages
 * (no /sys/kernel/mm/transparent_hugepage) the advice fails and no mapping
 * is flagged: the cases expect that instead, and the blocks work all the
 * same.
 *   advice_missing       set to 1 at run time, a huge block mapped after
 *                        it is flagged, and written from end to end;
 *                        3 is refused
 *   advice_unasked       with the option 0 (the default) neither a
 *                        segment nor a huge block is flagged
 *   env_advice_missing   TLMALLOC_HUGE_PAGES=2 in the environment (a
 *                        child): the first segment, mapped for the first
 *                        malloc, is flagged, and so is a huge block
 *   env_segments_advised TLMALLOC_HUGE_PAGES=1: a huge block is flagged,
 *                        the first segment is not
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlmalloc.h"
#include "check.h"
#include "child.h"

/* Whether the kernel has transparent huge pages at all. */
static int kernel_has_thp(void)
{
	return access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0;
}

/*
 * The VmFlags of the mapping that holds p: 1 if they include "hg"
 * (advised MADV_HUGEPAGE), 0 if not; fails if no mapping holds p.
 */
static int advised_huge(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	CHECK(f != NULL);
	char line[512];
	int inside = 0, found = -1;
	while (found < 0 && fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;
		char dash;
		if (sscanf(line, "%lx%c%lx ", &lo, &dash, &hi) == 3 &&
		    dash == '-') {
			inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (inside && strncmp(line, "VmFlags:", 8) == 0)
			found = strstr(line, " hg") != NULL;
	}
	fclose(f);
	CHECKF(found >= 0, "no mapping in /proc/self/smaps holds %p", p);
	return found;
}

enum { HUGE_BLOCK = 8 << 20 };

static void huge_block_flagged(int want)
{
	char *p = malloc(HUGE_BLOCK);
	CHECK(p != NULL);
	memset(p, 'h', HUGE_BLOCK);
	CHECKF(advised_huge(p) == want, "huge block %p: hg %d, expected %d",
	       (void *)p, !want, want);
	CHECK(p[0] == 'h' && p[HUGE_BLOCK - 1] == 'h');
	free(p);
}

static void advice_missing(void)
{
	long v = -1;
	CHECK(tl_option_get("huge_pages", &v) == 0 && v == 0);
	CHECK(tl_option_set("huge_pages", 1) == 0);
	huge_block_flagged(kernel_has_thp());
	CHECK(tl_option_set("huge_pages", 0) == 0);
	CHECK(tl_option_set("huge_pages", 3) != 0);
}

static void advice_unasked(void)
{
	char *small = malloc(64);
	CHECK(small != NULL);
	CHECK(!advised_huge(small));
	free(small);
	huge_block_flagged(0);
}

static void env_child(void)
{
	char *small = malloc(64);
	CHECK(small != NULL);
	printf("segment %d\n", advised_huge(small));
	free(small);
	huge_block_flagged(kernel_has_thp());
}

/* The child of test_name() with TLMALLOC_HUGE_PAGES=level printed that
 * its first segment is flagged or not (segment), and found its huge block
 * flagged where the kernel can. */
static void env_expect(const char *level, int segment)
{
	char env[64], out[256], err[1024], want[32];
	snprintf(env, sizeof(env), "TLMALLOC_HUGE_PAGES=%s", level);
	int st = child_run(test_name(), env, out, sizeof(out), err,
			   sizeof(err));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, err);
	snprintf(want, sizeof(want), "segment %d\n", segment);
	CHECKF(strstr(out, want) != NULL, "child printed: %s", out);
}

static void env_advice_missing(void)
{
	env_expect("2", kernel_has_thp());
}

static void env_segments_advised(void)
{
	env_expect("1", 0);
}

static const struct test_case cases[] = {
	TEST_CASE(advice_missing),
	TEST_CASE(advice_unasked),
	TEST_CHILD(env_advice_missing, env_child),
	TEST_CHILD(env_segments_advised, env_child),
};

int main(int argc, char **argv)
{
	return child_main(argc, argv, cases, TEST_COUNT(cases));
}
