/*
 * stats.c - the statistics: tl_stats_get, tl_stats_json, tl_stats_print
 * at exit, and glibc's mallinfo2, mallinfo, malloc_info and malloc_stats.
 *
 * Each case is named after the failure it catches:
 *   live_not_counted     blocks handed out do not show in live and in their
 *                        class's live blocks, or freed ones stay there
 *   version_ignored      a caller's smaller struct is overrun, or the
 *                        version is not set
 *   remote_freed_pages_not_reused  a heap far from its next sweep takes
 *                        new pages instead of its full pages that another
 *                        thread freed
 *   remote_frees_not_counted  blocks freed by another thread are not
 *                        counted (before and after their owner collects
 *                        them), counted twice, or the owner's own frees are
 *   class_ops_miscounted allocations and frees of a class are not counted
 *                        exactly (blocks handed out once each, freed
 *                        blocks, live ones), or not at all
 *   class_ops_lost       a thread's counts are lost when it exits and its
 *                        pages are formatted for another class
 *   json_malformed       tl_stats_json writes text that does not parse as
 *                        JSON, lacks a figure, or breaks the snprintf
 *                        contract on a small buffer
 *   mallinfo2_wrong      mallinfo2/mallinfo do not follow allocations
 *                        (small blocks in uordblks, huge ones in hblkhd),
 *                        or mallinfo wraps instead of saturating
 *   malloc_info_broken   malloc_info writes no <malloc version=...> XML or
 *                        accepts options it does not know
 *   malloc_stats_silent  malloc_stats prints nothing (or not glibc's lines)
 *   show_stats_silent    TLMALLOC_SHOW_STATS=1 prints nothing at exit (or
 *                        no class's allocations and frees), or the
 *                        statistics are printed without it
 * The printing cases run this program again as a child (`self CASE child`)
 * and read its stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tlmalloc.h"
#include "check.h"
#include "child.h"

static struct tl_stats snap(void)
{
	struct tl_stats st;
	CHECK(tl_stats_get(&st, sizeof(st)) == sizeof(st));
	CHECK(st.version == TL_STATS_VERSION);
	CHECK(st.class_count == TL_STATS_CLASSES);
	return st;
}

/* The entry of the class whose blocks are block_size bytes. */
static const struct tl_stats_class *class_of(const struct tl_stats *st,
					     size_t block_size)
{
	for (unsigned i = 0; i < st->class_count; i++)
		if (st->classes[i].block_size == block_size)
			return &st->classes[i];
	CHECKF(0, "no class of %zu bytes", block_size);
	return NULL;
}

enum { N = 3000, SIZE = 200 };
static void *blocks[N];

/* The block sizes of blocks[] and how many blocks have each (a young
 * heap serves its first blocks of a size from a larger class). */
struct tally {
	size_t bs;
	uint64_t n;
};
enum { TALLY_MAX = 4 };

static unsigned tally_blocks(struct tally *t, size_t *bytes)
{
	unsigned k = 0;
	*bytes = 0;
	for (int i = 0; i < N; i++) {
		size_t bs = malloc_usable_size(blocks[i]);
		CHECK(bs >= SIZE);
		*bytes += bs;
		unsigned j = 0;
		while (j < k && t[j].bs != bs)
			j++;
		if (j == k) {
			CHECKF(k < TALLY_MAX, "blocks of %u sizes", k + 1);
			t[k++] = (struct tally){ bs, 0 };
		}
		t[j].n++;
	}
	return k;
}

static void live_not_counted(void)
{
	struct tl_stats before = snap();
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(SIZE);
		CHECK(blocks[i] != NULL);
		memset(blocks[i], i, SIZE);
	}
	struct tally t[TALLY_MAX];
	size_t bytes;
	unsigned k = tally_blocks(t, &bytes);
	struct tl_stats mid = snap();
	for (unsigned j = 0; j < k; j++) {
		uint64_t c0 = class_of(&before, t[j].bs)->blocks_live;
		uint64_t c1 = class_of(&mid, t[j].bs)->blocks_live;
		CHECKF(c1 >= c0 + t[j].n, "class %zu: %" PRIu64 " -> %" PRIu64
		       " (%" PRIu64 " blocks)", t[j].bs, c0, c1, t[j].n);
		CHECK(class_of(&mid, t[j].bs)->pages * 65536 >= t[j].n * t[j].bs);
		CHECK(class_of(&mid, t[j].bs)->blocks_carved >= c1);
	}
	CHECKF(mid.live >= before.live + bytes,
	       "live %" PRIu64 " -> %" PRIu64, before.live, mid.live);
	CHECK(mid.held >= mid.live && mid.mapped >= mid.held);

	for (int i = 0; i < N; i++)
		free(blocks[i]);
	tl_trim();
	struct tl_stats after = snap();
	for (unsigned j = 0; j < k; j++) {
		uint64_t c1 = class_of(&mid, t[j].bs)->blocks_live;
		uint64_t c2 = class_of(&after, t[j].bs)->blocks_live;
		CHECKF(c2 + t[j].n <= c1, "class %zu after free: %" PRIu64,
		       t[j].bs, c2);
	}
	CHECKF(after.live + bytes <= mid.live,
	       "live after free %" PRIu64 " (was %" PRIu64 ")", after.live,
	       mid.live);
	/* tl_trim gave the pages back (purged, or their segment unmapped). */
	CHECKF(after.held + bytes <= mid.held,
	       "held after trim %" PRIu64 " (was %" PRIu64 ")", after.held,
	       mid.held);
	CHECK(after.purged > mid.purged ||
	      after.segments_unmapped > mid.segments_unmapped);
}

/* Blocks of main freed by another thread, then main's own frees. */
enum { REMOTE = 5000 };
static void *remote_blocks[REMOTE];

static void *free_remote_blocks(void *arg)
{
	(void)arg;
	for (int i = 0; i < REMOTE; i++)
		free(remote_blocks[i]);
	return NULL;
}

static void remote_frees_not_counted(void)
{
	for (int i = 0; i < REMOTE; i++)
		CHECK((remote_blocks[i] = malloc(24 + i % 200)) != NULL);
	struct tl_stats before = snap();
	pthread_t t;
	CHECK(pthread_create(&t, NULL, free_remote_blocks, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	/* Counted whether main has collected them yet or not. */
	struct tl_stats mid = snap();
	CHECKF(mid.remote_frees >= before.remote_frees + REMOTE,
	       "%" PRIu64 " -> %" PRIu64, before.remote_frees,
	       mid.remote_frees);
	/* Collected by main (its blocks come back), still counted once. */
	for (int i = 0; i < REMOTE; i++)
		CHECK((remote_blocks[i] = malloc(24 + i % 200)) != NULL);
	tl_trim();
	struct tl_stats after = snap();
	CHECKF(after.remote_frees == mid.remote_frees,
	       "%" PRIu64 " -> %" PRIu64, mid.remote_frees,
	       after.remote_frees);
	/* The owner's own frees are not remote. */
	for (int i = 0; i < REMOTE; i++)
		free(remote_blocks[i]);
	tl_trim();
	struct tl_stats own = snap();
	CHECKF(own.remote_frees == after.remote_frees,
	       "own frees counted as remote: %" PRIu64 " -> %" PRIu64,
	       after.remote_frees, own.remote_frees);
	CHECK(tl_stats_get(&own, offsetof(struct tl_stats, remote_frees)) ==
	      offsetof(struct tl_stats, remote_frees));
}

/*
 * A heap holding many pages (so its sweep is far off) fills pages of one
 * class, another thread frees them all, and the heap allocates as much
 * again: it must take the freed pages back, not new ones.
 */
enum { KEPT = 4000, KEPT_SIZE = 1000, ROUND_SIZE = 200, ROUNDS = 4 };
static void *kept[KEPT];

static void remote_freed_pages_not_reused(void)
{
	for (int i = 0; i < KEPT; i++)
		CHECK((kept[i] = malloc(KEPT_SIZE)) != NULL);
	uint64_t held_first = 0;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < REMOTE; i++)
			CHECK((remote_blocks[i] = malloc(ROUND_SIZE)) != NULL);
		struct tl_stats st;
		CHECK(tl_stats_get(&st, sizeof(st)) == sizeof(st));
		if (r == 0)
			held_first = st.held;
		CHECKF(st.held <= held_first + (256 << 10), "round %d: held "
		       "%" PRIu64 " KiB, %" PRIu64 " KiB after the first", r,
		       st.held >> 10, held_first >> 10);
		pthread_t t;
		CHECK(pthread_create(&t, NULL, free_remote_blocks, NULL) == 0);
		CHECK(pthread_join(t, NULL) == 0);
	}
	for (int i = 0; i < KEPT; i++)
		free(kept[i]);
}

/* The entry of the class ops of the class whose blocks are bs bytes. */
static struct tl_stats_class_ops ops_of(const struct tl_stats *st, size_t bs)
{
	const struct tl_stats_class *c = class_of(st, bs);
	CHECK(st->class_ops_counted == 1);
	return st->class_ops[c - st->classes];
}

/* 5000-byte requests: the 5120-byte class, which nothing else here uses. */
enum { OPS_SIZE = 5000, OPS_CLASS = 5120, OPS_N = 700, OPS_FREED = 300 };
static void *ops_blocks[OPS_N];

static void class_ops_miscounted(void)
{
	struct tl_stats st = snap();
	struct tl_stats_class_ops before = ops_of(&st, OPS_CLASS);
	for (int i = 0; i < OPS_N; i++) {
		ops_blocks[i] = malloc(OPS_SIZE);
		CHECK(ops_blocks[i] != NULL);
		CHECK(malloc_usable_size(ops_blocks[i]) == OPS_CLASS);
	}
	for (int i = 0; i < OPS_FREED; i++)
		free(ops_blocks[i]);
	st = snap();
	struct tl_stats_class_ops now = ops_of(&st, OPS_CLASS);
	CHECKF(now.allocs - before.allocs == OPS_N, "allocs +%" PRIu64,
	       now.allocs - before.allocs);
	CHECKF(now.frees - before.frees == OPS_FREED, "frees +%" PRIu64,
	       now.frees - before.frees);
	CHECK(now.allocs - now.frees == class_of(&st, OPS_CLASS)->blocks_live);
	/* freed blocks handed out again count again */
	for (int i = 0; i < OPS_FREED; i++)
		ops_blocks[i] = malloc(OPS_SIZE);
	for (int i = 0; i < OPS_N; i++)
		free(ops_blocks[i]);
	st = snap();
	now = ops_of(&st, OPS_CLASS);
	CHECK(now.allocs - before.allocs == OPS_N + OPS_FREED);
	CHECK(now.frees - before.frees == OPS_N + OPS_FREED);
}

static void *alloc_ops_and_exit(void *arg)
{
	(void)arg;
	for (int i = 0; i < OPS_N; i++)
		ops_blocks[i] = malloc(OPS_SIZE);
	for (int i = 0; i < OPS_N; i++)
		free(ops_blocks[i]);
	return NULL;
}

static void class_ops_lost(void)
{
	struct tl_stats st = snap();
	struct tl_stats_class_ops before = ops_of(&st, OPS_CLASS);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, alloc_ops_and_exit, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	/* the exited thread's empty pages go to the pool and are formatted
	 * again for this thread's blocks of other classes */
	static void *other[4000];
	for (int i = 0; i < 4000; i++)
		other[i] = malloc(3000 + (i % 3) * 512);	/* not 5120 */
	tl_trim();
	st = snap();
	struct tl_stats_class_ops now = ops_of(&st, OPS_CLASS);
	CHECKF(now.allocs - before.allocs == OPS_N, "allocs +%" PRIu64,
	       now.allocs - before.allocs);
	CHECK(now.frees - before.frees == OPS_N);
	for (int i = 0; i < 4000; i++)
		free(other[i]);
}

static void version_ignored(void)
{
	void *p = malloc(100);
	CHECK(p != NULL);
	struct tl_stats st;
	memset(&st, 0xab, sizeof(st));
	size_t prefix = offsetof(struct tl_stats, held);
	CHECK(tl_stats_get(&st, prefix) == prefix);
	CHECK(st.version == TL_STATS_VERSION);
	CHECK(st.mapped != 0 && st.mapped != 0xababababababababull);
	const unsigned char *bytes = (const unsigned char *)&st;
	for (size_t i = prefix; i < sizeof(st); i++)
		CHECKF(bytes[i] == 0xab, "byte %zu of %zu written", i, prefix);

	/* Too small for the version, or no struct: nothing written. */
	memset(&st, 0xab, sizeof(st));
	CHECK(tl_stats_get(&st, sizeof(st.version) - 1) == 0);
	CHECK(bytes[0] == 0xab);
	CHECK(tl_stats_get(NULL, sizeof(st)) == 0);
	/* A larger struct than ours (a newer caller): only ours is filled. */
	_Alignas(struct tl_stats) unsigned char big[sizeof(st) + 64];
	memset(big, 0xcd, sizeof(big));
	CHECK(tl_stats_get((struct tl_stats *)(void *)big, sizeof(big)) ==
	      sizeof(st));
	CHECK(big[sizeof(st)] == 0xcd && big[sizeof(big) - 1] == 0xcd);
	free(p);
}

/* ---- a small JSON checker: true if s[*i..] holds one value ---- */
static bool json_value(const char *s, size_t *i, int depth);

static void json_space(const char *s, size_t *i)
{
	while (s[*i] == ' ' || s[*i] == '\n' || s[*i] == '\t' || s[*i] == '\r')
		(*i)++;
}

static bool json_string(const char *s, size_t *i)
{
	if (s[*i] != '"')
		return false;
	for ((*i)++; s[*i] != '"'; (*i)++) {
		if (s[*i] == '\0' || (unsigned char)s[*i] < 0x20)
			return false;
		if (s[*i] == '\\' && s[++*i] == '\0')
			return false;
	}
	(*i)++;
	return true;
}

static bool json_number(const char *s, size_t *i)
{
	size_t start = *i;
	if (s[*i] == '-')
		(*i)++;
	while (s[*i] >= '0' && s[*i] <= '9')
		(*i)++;
	return *i > start && s[*i - 1] != '-';
}

/* Members of an object (pairs) or elements of an array, up to close. */
static bool json_members(const char *s, size_t *i, int depth, char close,
			 bool pairs)
{
	(*i)++;
	json_space(s, i);
	if (s[*i] == close) {
		(*i)++;
		return true;
	}
	for (;;) {
		if (pairs) {
			json_space(s, i);
			if (!json_string(s, i))
				return false;
			json_space(s, i);
			if (s[(*i)++] != ':')
				return false;
		}
		if (!json_value(s, i, depth + 1))
			return false;
		json_space(s, i);
		char c = s[(*i)++];
		if (c == close)
			return true;
		if (c != ',')
			return false;
	}
}

static bool json_value(const char *s, size_t *i, int depth)
{
	if (depth > 16)
		return false;
	json_space(s, i);
	switch (s[*i]) {
	case '{':
		return json_members(s, i, depth, '}', true);
	case '[':
		return json_members(s, i, depth, ']', false);
	case '"':
		return json_string(s, i);
	default:
		return json_number(s, i);
	}
}

static bool json_valid(const char *s)
{
	size_t i = 0;
	if (!json_value(s, &i, 0))
		return false;
	json_space(s, &i);
	return s[i] == '\0';
}

/* The number after "key": in s (the first one), or UINT64_MAX. */
static uint64_t json_get(const char *s, const char *key)
{
	char pattern[64];
	snprintf(pattern, sizeof(pattern), "\"%s\":", key);
	const char *at = strstr(s, pattern);
	if (at == NULL)
		return UINT64_MAX;
	return strtoull(at + strlen(pattern), NULL, 10);
}

static void json_malformed(void)
{
	static char buf[64 << 10];
	void *p = malloc(300);
	CHECK(p != NULL);
	size_t n = tl_stats_json(buf, sizeof(buf));
	CHECKF(n > 0 && n < sizeof(buf) && strlen(buf) == n, "n %zu", n);
	CHECKF(json_valid(buf), "not JSON: %s", buf);
	CHECK(!json_valid("{\"a\":1") && !json_valid("{\"a\":[1,]}"));
	const char *keys[] = {
		"version", "mapped", "held", "live", "purged", "segments",
		"segments_unmapped", "threads_seen", "threads_live",
		"lock_acquired", "lock_waited", "pages_abandoned",
		"pages_free", "huge_blocks", "huge_bytes", "huge_cached",
		"mapped_peak", "segments_peak", "remote_frees", "block_size",
		"pages",
		"blocks_carved", "blocks_live", "class_ops_counted", "allocs",
		"frees", "profile_samples", "profile_samples_total",
		"profile_dropped", "profile_held", "guarded_live",
		"guarded_total", "guarded_missed", "guarded_mapped",
		"pages_given_away",
	};
	for (size_t k = 0; k < TEST_COUNT(keys); k++)
		CHECKF(json_get(buf, keys[k]) != UINT64_MAX, "no %s in %s",
		       keys[k], buf);
	CHECK(json_get(buf, "version") == TL_STATS_VERSION);
	CHECK(json_get(buf, "live") >= malloc_usable_size(p));
	CHECK(strstr(buf, "\"classes\":[{") != NULL);
	char pattern[64];
	snprintf(pattern, sizeof(pattern), "{\"block_size\":%zu,",
		 malloc_usable_size(p));
	CHECKF(strstr(buf, pattern) != NULL, "no %s in %s", pattern, buf);

	/* Too small: the length needed, a NUL-terminated prefix. */
	char small[16];
	memset(small, 'x', sizeof(small));
	size_t r = tl_stats_json(small, sizeof(small));
	CHECKF(r + 8 >= n && r <= n + 8, "needed %zu, whole text %zu", r, n);
	CHECK(small[sizeof(small) - 1] == '\0');
	CHECK(memcmp(small, buf, sizeof(small) - 1) == 0);
	CHECK(tl_stats_json(small, 1) >= n - 8 && small[0] == '\0');
	r = tl_stats_json(NULL, 0);
	CHECKF(r + 8 >= n && r <= n + 8, "needed %zu, whole text %zu", r, n);
	free(p);
}

#if defined(__GLIBC__)
/* glibc's statistics calls (musl has none; src/api.c). */

/* mallinfo is deprecated in glibc's header, and what we test. */
static struct mallinfo mallinfo_int(void)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	return mallinfo();
#pragma GCC diagnostic pop
}

static void mallinfo2_wrong(void)
{
	struct mallinfo2 m0 = mallinfo2();
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(SIZE);
		CHECK(blocks[i] != NULL);
	}
	struct mallinfo2 m1 = mallinfo2();
	CHECKF(m1.uordblks >= m0.uordblks + (size_t)N * SIZE,
	       "uordblks %zu -> %zu", m0.uordblks, m1.uordblks);
	CHECK(m1.arena >= m1.uordblks);
	CHECK(m1.fordblks == m1.arena - m1.uordblks);
	CHECK(m1.keepcost == 0);

	/* A huge block is glibc's mmap part: hblks/hblkhd, not uordblks. */
	size_t huge = (size_t)8 << 20;
	char *h = malloc(huge);
	CHECK(h != NULL);
	memset(h, 1, huge);
	struct mallinfo2 m2 = mallinfo2();
	CHECKF(m2.hblks == m1.hblks + 1 && m2.hblkhd >= m1.hblkhd + huge,
	       "hblks %zu hblkhd %zu", m2.hblks, m2.hblkhd);
	CHECKF(m2.uordblks < m1.uordblks + huge, "uordblks %zu", m2.uordblks);
	struct mallinfo m = mallinfo_int();
	CHECK(m.hblks == (int)m2.hblks && (size_t)m.hblkhd == m2.hblkhd);
	CHECK((size_t)m.uordblks >= (size_t)N * SIZE);
	free(h);

	for (int i = 0; i < N; i++)
		free(blocks[i]);
	tl_trim();
	struct mallinfo2 m3 = mallinfo2();
	CHECKF(m3.uordblks + (size_t)N * SIZE <= m2.uordblks,
	       "uordblks after free %zu", m3.uordblks);
	CHECK(m3.hblks == m1.hblks);

	/* Above INT_MAX: mallinfo saturates (if the OS lends 3 GiB). */
	void *big = malloc((size_t)3 << 30);
	if (big != NULL) {
		struct mallinfo2 b2 = mallinfo2();
		struct mallinfo b = mallinfo_int();
		CHECK(b2.hblkhd >= ((size_t)3 << 30));
		CHECKF(b.hblkhd == INT_MAX, "hblkhd %d", b.hblkhd);
		free(big);
	}
}

static void malloc_info_broken(void)
{
	void *p = malloc(1000);
	CHECK(p != NULL);
	FILE *f = tmpfile();
	CHECK(f != NULL);
	CHECK(malloc_info(0, f) == 0);
	static char text[64 << 10];
	rewind(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	CHECKF(strncmp(text, "<malloc version=\"1\">\n", 21) == 0, "%s", text);
	CHECKF(n > 9 && strcmp(text + n - 10, "</malloc>\n") == 0, "%s", text);
	CHECK(strstr(text, "<heap nr=\"0\">") && strstr(text, "</heap>"));
	const char *whole = strstr(text, "</heap>");
	const char *current = "<system type=\"current\" size=\"";
	const char *at = strstr(whole, current);
	CHECKF(at != NULL, "%s", text);
	uint64_t held = strtoull(at + strlen(current), NULL, 10);
	CHECKF(held >= malloc_usable_size(p), "%s", text);

	f = tmpfile();
	CHECK(f != NULL);
	CHECK(malloc_info(1, f) == EINVAL);
	CHECK(ftell(f) == 0);
	fclose(f);
	free(p);
}

/* stderr of the child holds `label = number` with number >= least. */
static void expect_figure(const char *err, const char *label, uint64_t least)
{
	const char *at = strstr(err, label);
	CHECKF(at != NULL, "no %s in: %s", label, err);
	at = strchr(at, '=');
	CHECKF(at != NULL, "no value of %s in: %s", label, err);
	uint64_t v = strtoull(at + 1, NULL, 10);
	CHECKF(v >= least, "%s %" PRIu64 " < %" PRIu64, label, v, least);
}

static void malloc_stats_child(void)
{
	for (int i = 0; i < N; i++)
		blocks[i] = malloc(SIZE);
	malloc_stats();
}

static void malloc_stats_silent(void)
{
	char err[4096];
	int st = child_run(test_name(), NULL, NULL, 0, err, sizeof(err));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	CHECKF(strncmp(err, "Arena 0:\n", 9) == 0, "stderr: %s", err);
	expect_figure(err, "system bytes", (uint64_t)N * SIZE);
	expect_figure(err, "in use bytes", (uint64_t)N * SIZE);
	CHECK(strstr(err, "Total (incl. mmap):\n") != NULL);
	expect_figure(err, "max mmap regions", 1);
	expect_figure(err, "max mmap bytes", 1);
}
#endif /* __GLIBC__ */

/* Exits with blocks of two classes live: the statistics print at exit. */
static void show_stats_child(void)
{
	for (int i = 0; i < 100; i++)
		blocks[i] = malloc(i < 10 ? 5000 : 48);
}

/* The start of the table row of a class: size, pages (stats.c's widths). */
static bool has_row(const char *table, unsigned size, const char *pages)
{
	char row[64];
	snprintf(row, sizeof(row), "\n  %10u%8s", size, pages);
	return strstr(table, row) != NULL;
}

static void show_stats_silent(void)
{
	char err[8192], line[64];
	int st = child_run(test_name(), "TLMALLOC_SHOW_STATS=1", NULL, 0, err,
			   sizeof(err));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	snprintf(line, sizeof(line), "tlmalloc %s statistics\n", tl_version());
	CHECKF(strstr(err, line) != NULL, "stderr: %s", err);
	const char *labels[] = { "held:", "live:", "purged:", "threads:",
				 "pool lock:", "size class" };
	for (size_t i = 0; i < TEST_COUNT(labels); i++)
		CHECKF(strstr(err, labels[i]) != NULL, "no %s in: %s",
		       labels[i], err);
	/* The table: a row for each class used, none for the others. */
	const char *table = strstr(err, "size class");
	CHECK(table != NULL);
	CHECKF(has_row(table, 48, "1"), "%s", table);
	CHECKF(has_row(table, 5120, "1"), "%s", table);
	CHECKF(!has_row(table, 98304, ""), "%s", table);
	/* 5120: pages, carved, live, allocs, frees */
	unsigned long v[5];
	const char *row = strstr(table, "\n        5120");
	CHECK(strstr(table, "allocs") != NULL && strstr(table, "frees") != NULL);
	CHECKF(row != NULL && sscanf(row + 13, "%lu %lu %lu %lu %lu", &v[0],
				     &v[1], &v[2], &v[3], &v[4]) == 5 &&
	       v[2] == 10 && v[3] == 10 && v[4] == 0, "%s", table);

	st = child_run(test_name(), NULL, NULL, 0, err, sizeof(err));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECKF(err[0] == '\0', "printed without the option: %s", err);
}

static const struct test_case cases[] = {
	TEST_CASE(live_not_counted),
	TEST_CASE(class_ops_miscounted),
	TEST_CASE(class_ops_lost),
	TEST_CASE(version_ignored),
	TEST_CASE(remote_frees_not_counted),
	TEST_CASE(remote_freed_pages_not_reused),
	TEST_CASE(json_malformed),
#if defined(__GLIBC__)
	TEST_CASE(mallinfo2_wrong),
	TEST_CASE(malloc_info_broken),
	TEST_CHILD(malloc_stats_silent, malloc_stats_child),
#endif
	TEST_CHILD(show_stats_silent, show_stats_child),
};

int main(int argc, char **argv)
{
	return child_main(argc, argv, cases, TEST_COUNT(cases));
}
