/*
 * secure.c - the secure variant (libtlmalloc-secure) catches heap misuse
 * that the default library lets through.
 *
 * Each case runs the misuse in a child process (this program, exec'd with
 * the case name and "child") and expects it to die by SIGABRT after one
 * line `tlmalloc: CALL(0x...): WHAT` on stderr:
 *   double_free_missed           free(p); free(p)
 *   double_free_late_missed      free(p), other frees, then free(p) again
 *   remote_double_free_missed    the second free comes from another thread
 *   overrun_into_link_missed     a write just past the end of a block lands
 *                                on the next (free) block's link; the mallocs
 *                                that follow must not hand out the forged
 *                                pointer
 *   use_after_free_link_missed   a write into a freed block's link (found
 *                                at the thread's next malloc, malloc(0x...):
 *                                freed block modified (write after free);
 *                                with secure_recheck 0, when it leaves the
 *                                quarantine; without the quarantine, when
 *                                malloc pops it)
 *   interior_free_missed         free of a pointer into the middle of a block
 *   write_after_free_missed      a byte written into a freed block past its
 *                                first two words: in its first 64 bytes
 *                                (a block of 48), found at the thread's
 *                                next malloc; further in (the last byte of
 *                                a 64 KiB block, the fill's limit), or with
 *                                secure_recheck 0, when it leaves the
 *                                quarantine (free(0x...): quarantined block
 *                                modified (write after free)); without the
 *                                quarantine, when malloc reuses it
 *                                (malloc(0x...): free block modified ...)
 *   write_after_free_unreused_missed  the same write into a block that no
 *                                malloc reuses afterwards: found at the
 *                                thread's next malloc (with secure_recheck
 *                                0, when it leaves the quarantine)
 *   recheck_at_free_missed       a write into the block freed last, then a
 *                                free: found there (free(0x...): freed
 *                                block modified (write after free))
 *   canary_overflow_missed       one byte written past a 24-byte block (a
 *                                32-byte class: in the slack), then free;
 *                                also 8 bytes past a 100-byte block, one
 *                                past an 8-byte block (a 0: with
 *                                secure_canary_nul 0), the 8th byte past
 *                                blocks of 8 and 100 bytes alone, and
 *                                realloc after an overflow, and one byte
 *                                past a 100-byte block aligned to 64
 *                                (CALL(0x...): canary overwritten (buffer
 *                                overflow))
 *   double_free_after_reuse_missed  free(p), mallocs of its size, free(p):
 *                                the quarantine still holds p (without it,
 *                                checked too, p was handed out again and
 *                                the second free goes through)
 *   object_size_quarantined_missed  malloc_object_size into a freed block
 *                                the quarantine holds (CALL(0x...): block
 *                                already freed)
 *   sized_free_larger_missed     free_sized with one byte more than malloc
 *                                was asked for, in the same class
 *   sized_free_smaller_missed    a sized free of less than was asked for,
 *                                in the same class: free_sized(malloc(20),
 *                                19), a `new char[8]` deleted with
 *                                `delete` (size 1), an aligned block of
 *                                100 bytes freed as 99 (CALL(0x...): size
 *                                N does not match the block (M bytes))
 *   underflow_live_missed        one byte written before a block whose
 *                                page neighbour before it is live (its
 *                                canary), then the block freed (free(0x...):
 *                                the bytes before the block were
 *                                overwritten (buffer underflow)); also 32
 *                                bytes before it
 *   underflow_freed_missed       the same with that neighbour freed (its
 *                                fill's tail), with and without fill
 *   underflow_fresh_missed       the same with that neighbour never handed
 *                                out (the tail its carve wrote)
 *                                (where the C library has no
 *                                __libc_single_threaded, musl, these three
 *                                expect the underflow unreported)
 * and, living cases:
 *   quarantine_reuses_early      a freed block is not handed out again in
 *                                the next 63 mallocs and frees of its size
 *                                (secure_quarantine 64); with 0, at once
 *   underflow_seen_with_threads  once a thread was created, that underflow
 *                                goes unreported (the neighbour may change
 *                                under the check: docs/secure.md); so it
 *                                does with secure_underflow 0
 *   canary_usable_size_wrong     malloc_usable_size says the requested size
 *                                (up to 64 KiB - 8); every one of those
 *                                bytes may be written; realloc in place
 *                                moves the canary; so do aligned blocks
 *                                (the size asked for, not their class's)
 *   canary_nul_missing           the byte after a block's requested size
 *                                is 0: a string filling the block ends
 *                                there, and a 0 written there (an
 *                                off-by-one terminator) is harmless
 *   canary_first_byte_zero       with secure_canary_nul 0 no canary's
 *                                first byte is 0 (2^20 blocks read), so
 *                                the off-by-one terminator is always
 *                                reported (overflow_full's 0 at p[8])
 *   canary_option_ignored        with TLMALLOC_SECURE_CANARY=0 the overflow
 *                                goes unreported (and usable sizes are the
 *                                blocks'); tl_option_set changes nothing
 *                                after the first malloc
 *   quarantine_check_option_ignored  with secure_quarantine_check and
 *                                secure_recheck 0 that write into a block
 *                                not reused goes unreported
 *   fill_check_option_ignored    with secure_fill_check,
 *                                secure_quarantine_check and secure_recheck
 *                                0 the same write
 *                                goes unreported; fresh blocks and blocks
 *                                freed with secure_fill 0 are not checked
 *   fill_missing                 a freed block (up to 64 KiB) is filled
 *                                with 0xdf beyond its first two words
 *   fill_option_ignored          with secure_fill 0 (TLMALLOC_SECURE_FILL
 *                                or tl_option_set) a freed block keeps its
 *                                bytes; set to 1 again, it is filled
 *   kept_option_taken            kept_bytes is accepted: the quarantine's
 *                                blocks would be handed out again
 *   order_not_shuffled           fresh blocks do not come in address order
 *   guard_page_missing           the page after a huge block, the last page
 *                                of a 4 MiB segment and the page before its
 *                                first page are mapped and fault
 *   huge_guard_lost_on_realloc   after a huge block grows, the byte after
 *                                it still faults, contents kept
 *   huge_use_after_free_unseen   a freed block of 256 KiB is unmapped
 *                                (reads fault); with secure_huge_unmap 0,
 *                                cached (they do not)
 *   huge_addresses_reused        a freed 256 KiB block's addresses stay
 *                                reserved (reads fault) while later
 *                                mallocs of its size are served elsewhere;
 *                                the oldest of N (secure_huge_quarantine)
 *                                is unmapped; with 0, at once
 *   zero_missing                 every byte of a block malloc hands out (up
 *                                to 64 KiB: fresh, reused after a free,
 *                                after the quarantine) is 0; with
 *                                secure_zero 0 a reused block holds 0xdf
 *   zero_size_accessible         malloc(0) and calloc(0, n) give distinct
 *                                pointers whose first byte faults;
 *                                malloc_usable_size says 0, realloc to 10
 *                                bytes and free_sized of 0 work; with
 *                                secure_zero_size 0 the byte can be read
 *   zero_size_double_free_missed free(malloc(0)) twice (free(0x...):
 *                                double free)
 *   late_sized_free_refused      blocks of 1..512 bytes malloc'd in a key
 *                                destructor after the thread's heap is
 *                                gone (the shared heap serves them) take a
 *                                sized free of their size: the canary's
 *                                tail counted once, not twice
 *   not_secure_library           malloc and free resolve to
 *                                libtlmalloc-secure
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tlmalloc.h"
#include "check.h"
#include "child.h"

enum { SIZE = 80, MANY = 400 };

static void double_free_child(void)
{
	char *p = malloc(SIZE);
	CHECK(p != NULL);
	free(p);
	free(p);
	printf("not detected\n");
}

static void double_free_late_child(void)
{
	static void *b[MANY];
	for (int i = 0; i < MANY; i++)
		b[i] = malloc(SIZE);
	free(b[7]);
	for (int i = 100; i < 300; i++)
		free(b[i]);
	for (int i = 0; i < 50; i++)
		CHECK(malloc(SIZE) != NULL);
	free(b[7]);
	printf("not detected\n");
}

static void *free_it(void *p)
{
	free(p);
	return NULL;
}

static void remote_double_free_child(void)
{
	char *p = malloc(SIZE);
	CHECK(p != NULL && malloc(SIZE) != NULL);
	free(p);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, free_it, p) == 0);
	pthread_join(t, NULL);
	printf("not detected\n");
}

/*
 * Of some blocks of one fresh page, one whose right-hand neighbour is
 * carved (it lies in the page's first 4 KiB, carved first) and still free
 * (not one of ours): write a forged pointer over that neighbour's link.
 */
static void overrun_into_link_child(void)
{
	enum { N = 8 };
	char *b[N];
	for (int i = 0; i < N; i++)
		b[i] = malloc(SIZE);
	char *victim = NULL;
	size_t bs = 0;
	for (int i = 0; i < N && victim == NULL; i++) {
		bs = malloc_usable_size(b[i]);	/* the block's whole size */
		char *next = b[i] + bs;
		uintptr_t in_page = (uintptr_t)next & 0xffff;
		int taken = 0;
		for (int j = 0; j < N; j++)
			taken |= b[j] == next;
		if (!taken && in_page + bs <= 4096)
			victim = b[i];
	}
	CHECK(victim != NULL);
	static char target[64];
	char *forged = target;
	memcpy(victim + bs, &forged, sizeof(forged));	/* one past the end */
	for (int i = 0; i < MANY; i++) {
		char *q = malloc(SIZE);
		CHECKF(q != target, "malloc returned the forged pointer");
	}
	printf("not detected\n");
}

/* Enough frees of another size to push every block out of the calling
 * thread's quarantine (secure_quarantine, at most 256). */
static void push_out_quarantine(void)
{
	static void *q[300];
	for (int i = 0; i < 300; i++)
		CHECK((q[i] = malloc(16)) != NULL);
	for (int i = 0; i < 300; i++)
		free(q[i]);
}

static void use_after_free_link_child(void)
{
	char *p = malloc(SIZE);
	CHECK(p != NULL);
	free(p);
	memset(p, 0x41, sizeof(void *));	/* the freed block's link */
	push_out_quarantine();
	for (int i = 0; i < MANY; i++)
		CHECK(malloc(SIZE) != NULL);
	printf("not detected\n");
}

static void interior_free_child(void)
{
	char *p = malloc(SIZE);
	CHECK(p != NULL);
	free(p + 16);
	printf("not detected\n");
}

/* A byte written into a freed block of n bytes, past its link and mark,
 * then mallocs of n until the block is handed out again. */
static void write_after_free(size_t n)
{
	unsigned char *p = malloc(n);
	CHECK(p != NULL);
	void *keep = malloc(n);	/* the page stays formatted */
	free(p);
	p[n - 1] = 0;
	push_out_quarantine();
	for (int i = 0; i < MANY; i++)
		CHECK(malloc(n) != NULL);
	free(keep);
}

static void write_after_free_child(void)
{
	write_after_free(48);
	printf("not detected\n");
}

static void write_after_free_large_child(void)
{
	write_after_free(65536 - 8);	/* a 64 KiB block, with the tail */
	printf("not detected\n");
}

/* A write after free into a block of a size no later malloc asks for. */
static void write_after_free_unreused_child(void)
{
	char *volatile p = malloc(128);
	CHECK(p != NULL);
	free(p);
	p[40] = 'a';	/* in its first 64 bytes: the recheck's */
	push_out_quarantine();	/* of 16-byte blocks */
	printf("not detected\n");
}

/* A write into the block freed last, then a free of another block. */
static void recheck_at_free_child(void)
{
	char *volatile p = malloc(100);
	char *q = malloc(100);
	CHECK(p != NULL && q != NULL);
	free(p);
	p[20] = 'a';
	free(q);
	printf("not detected\n");
}

/* UNDER_N blocks of UNDER_SIZE bytes, of one page: a young group's first
 * carve of 32 (design.md, "Young groups"), so some are neighbours and
 * some follow a block never handed out; returns the block size. */
enum { UNDER_SIZE = 100, UNDER_N = 24 };
static char *under[UNDER_N];

static size_t under_blocks(void)
{
	size_t bs = SIZE_MAX;
	for (int i = 0; i < UNDER_N; i++)
		CHECK((under[i] = malloc(UNDER_SIZE)) != NULL);
	for (int i = 0; i < UNDER_N; i++)
		for (int j = 0; j < UNDER_N; j++)
			if (under[j] > under[i] &&
			    (size_t)(under[j] - under[i]) < bs)
				bs = (size_t)(under[j] - under[i]);
	CHECK(bs >= UNDER_SIZE && bs < 2 * UNDER_SIZE);
	return bs;
}

/* One of under[] whose neighbour before it is (taken 1) or is not (0)
 * one of under[], in the same 64 KiB page. */
static char *under_after(size_t bs, int taken)
{
	for (int i = 0; i < UNDER_N; i++) {
		char *q = under[i];
		int found = 0;
		if (((uintptr_t)q & 0xffff) < bs)
			continue;	/* the page's first block */
		for (int j = 0; j < UNDER_N; j++)
			found |= under[j] == q - bs;
		if (found == taken)
			return q;
	}
	CHECKF(0, "no block with its neighbour %s", taken ? "taken" : "fresh");
	return NULL;
}

static void underflow_live_child(void)
{
	char *q = under_after(under_blocks(), 1);
	q[-1] = 'x';
	free(q);
	printf("not detected\n");
}

static void underflow_live_32_child(void)
{
	char *q = under_after(under_blocks(), 1);
	memset(q - 32, 'x', 32);
	free(q);
	printf("not detected\n");
}

static void underflow_freed_child(void)
{
	size_t bs = under_blocks();
	char *q = under_after(bs, 1);
	free(q - bs);
	q[-1] = 'x';
	free(q);
	printf("not detected\n");
}

static void underflow_fresh_child(void)
{
	char *q = under_after(under_blocks(), 0);
	q[-1] = 'x';
	free(q);
	printf("not detected\n");
}

static void *nothing(void *arg)
{
	return arg;
}

static void underflow_threads_child(void)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, nothing, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	char *q = under_after(under_blocks(), 1);
	q[-1] = 'x';
	free(q);
	printf("not detected\n");
}

#define UNDERFLOW "the bytes before the block were overwritten (buffer " \
		  "underflow)"

/* The C library's flag that the check reads (canary.c): where there is
 * none (musl), underflows go unreported, as docs/secure.md says. */
extern char __libc_single_threaded __attribute__((weak));

/* Child name run with env (or NULL) must go through unreported. */
static void expect_unreported(const char *name, const char *env)
{
	char out[256], err[256];
	int st = child_run(name, env, out, sizeof(out), err, sizeof(err));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
	       strstr(out, "not detected") != NULL,
	       "%s %s: status %d, stderr: %s", name, env ? env : "", st, err);
}

/* Child name's underflow reported at its free, where the check runs. */
static void expect_underflow(const char *name, const char *env)
{
	if (&__libc_single_threaded == NULL)
		expect_unreported(name, env);
	else
		child_expect_abort_env(name, env, "free", UNDERFLOW);
}

static void underflow_live_missed(void)
{
	expect_underflow("underflow_live", NULL);
	expect_underflow("underflow_live_32", NULL);
}

static void underflow_freed_missed(void)
{
	expect_underflow("underflow_freed", NULL);
	expect_underflow("underflow_freed", "TLMALLOC_SECURE_FILL=0");
}

static void underflow_fresh_missed(void)
{
	expect_underflow("underflow_fresh", NULL);
}

static void underflow_seen_with_threads(void)
{
	expect_unreported("underflow_threads", NULL);
	long v = -1;
	CHECK(tl_option_get("secure_underflow", &v) == 0 && v == 1);
	expect_unreported("underflow_live", "TLMALLOC_SECURE_UNDERFLOW=0");
}

static void overflow_child(void)
{
	char *volatile p = malloc(24);
	CHECK(p != NULL);
	p[24] = 'x';
	free(p);
	printf("not detected\n");
}

static void overflow_8_child(void)
{
	char *volatile p = malloc(100);
	CHECK(p != NULL);
	memset(p + 100, 0, 8);
	free(p);
	printf("not detected\n");
}

/* The 8th byte past the n bytes asked for, alone (the others intact). */
static void overflow_last(size_t n)
{
	char *volatile p = malloc(n);
	CHECK(p != NULL);
	p[n + 7] ^= 1;
	free(p);
	printf("not detected\n");
}

static void overflow_last_8_child(void)
{
	overflow_last(8);
}

static void overflow_last_100_child(void)
{
	overflow_last(100);
}

static void overflow_aligned_child(void)
{
	char *volatile p = aligned_alloc(64, 100);
	CHECK(p != NULL);
	p[100] = 'x';
	free(p);
	printf("not detected\n");
}

static void overflow_full_child(void)
{
	char *volatile p = malloc(8);
	CHECK(p != NULL);
	p[8] = 0;
	free(p);
	printf("not detected\n");
}

/* Reads the canary's first byte of 2^20 blocks of 8 bytes (p[8], in the
 * block's own slack), over 256 pages with keys of their own: how many are
 * 0.  Where a first byte may be 0, one page in about 16 has such blocks
 * (by its key's low byte), so this many pages find them all but always. */
static void first_bytes_child(void)
{
	enum { N = 1 << 20 };
	static char *p[N];
	int zero = 0;
	for (int i = 0; i < N; i++) {
		char *volatile q = malloc(8);
		CHECK(q != NULL);
		zero += q[8] == 0;
		p[i] = q;
	}
	for (int i = 0; i < N; i++)
		free(p[i]);
	printf("zero first bytes: %d\n", zero);
}

static void overflow_realloc_child(void)
{
	char *volatile p = malloc(40);
	CHECK(p != NULL);
	p[40] = 'x';
	p = realloc(p, 41);
	printf("not detected\n");
}

static void sized_free_larger_child(void)
{
	char *p = malloc(20);
	CHECK(p != NULL);
	tl_free_sized(p, 21);
	printf("not detected\n");
}

/* The C++ sized deletes and new[], by their mangled names. */
void *_Znam(size_t n);
void _ZdlPvm(void *p, size_t n);

static void sized_free_smaller_child(void)
{
	char *p = malloc(20);
	CHECK(p != NULL);
	tl_free_sized(p, 19);
	printf("not detected\n");
}

/* new char[8] released with delete, not delete[]: the size is 1. */
static void delete_array_child(void)
{
	char *p = _Znam(8);
	CHECK(p != NULL);
	memset(p, 'b', 8);
	_ZdlPvm(p, 1);
	printf("not detected\n");
}

static void aligned_sized_smaller_child(void)
{
	void *p = aligned_alloc(64, 100);
	CHECK(p != NULL);
	tl_free_aligned_sized(p, 64, 99);
	printf("not detected\n");
}

static void sized_free_smaller_missed(void)
{
	child_expect_abort("sized_free_smaller", "free_sized",
			   "size 19 does not match the block (20 bytes)");
	child_expect_abort("delete_array", "operator delete",
			   "size 1 does not match the block (8 bytes)");
	child_expect_abort("aligned_sized_smaller", "free_aligned_sized",
			   "size 99 does not match the block (100 bytes)");
}

static void overrun_into_link_missed(void)
{
	/* canaries off: the test finds blocks by malloc_usable_size */
	child_expect_abort_env("overrun_into_link_missed",
			       "TLMALLOC_SECURE_CANARY=0", "malloc",
			       "free list corrupted");
}

static void use_after_free_link_missed(void)
{
	/* in the quarantine, the link is checked at the next malloc, or
	 * when the block leaves it */
	child_expect_abort("use_after_free_link_missed", "malloc",
			   "freed block modified (write after free)");
	child_expect_abort_env("use_after_free_link_missed",
			       "TLMALLOC_SECURE_RECHECK=0", "free",
			       "quarantined block modified (write after free)");
	child_expect_abort_env("use_after_free_link_missed",
			       "TLMALLOC_SECURE_QUARANTINE=0", "malloc",
			       "free list corrupted");
}

static void write_after_free_missed(void)
{
	child_expect_abort("write_after_free_missed", "malloc",
			   "freed block modified (write after free)");
	child_expect_abort_env("write_after_free_missed",
			       "TLMALLOC_SECURE_RECHECK=0", "free",
			       "quarantined block modified (write after free)");
	/* past the first 64 bytes: when it leaves the quarantine */
	child_expect_abort("write_after_free_large_missed", "free",
			   "quarantined block modified (write after free)");
	child_expect_abort_env("write_after_free_missed",
			       "TLMALLOC_SECURE_QUARANTINE=0", "malloc",
			       "free block modified (write after free)");
}

/* Whether malloc(SIZE) hands out p within `tries` calls (no frees). */
static int comes_back(const char *p, int tries)
{
	for (int i = 0; i < tries; i++)
		if (malloc(SIZE) == p)
			return 1;
	return 0;
}

static void double_free_after_reuse_child(void)
{
	char *p = malloc(SIZE);
	CHECK(p != NULL);
	free(p);
	comes_back(p, 2000);	/* without a quarantine, it does */
	free(p);
	printf("not detected\n");
}

static void double_free_after_reuse_missed(void)
{
	child_expect_abort("double_free_after_reuse_missed", "free",
			   "double free");
	/* and without the quarantine it goes through: the test's premise */
	char out[256], err[256];
	int st = child_run("double_free_after_reuse_missed",
			   "TLMALLOC_SECURE_QUARANTINE=0", out, sizeof(out),
			   err, sizeof(err));
	CHECKF(WIFEXITED(st) && strstr(out, "not detected") != NULL,
	       "status %d, stderr: %s", st, err);
}

/* A freed block is not handed out again before N more frees of the
 * thread (secure_quarantine N); with 0, at once. */
static void quarantine_reuses_early(void)
{
	long n = -1;
	CHECK(tl_option_get("secure_quarantine", &n) == 0 && n == 64);
	static void *x[64];
	for (int i = 0; i < 64; i++)
		CHECK((x[i] = malloc(SIZE)) != NULL);
	char *p = malloc(SIZE);
	free(p);
	for (int i = 0; i < 63; i++)
		free(x[i]);
	CHECKF(!comes_back(p, 2000), "reused after 63 more frees");
	free(x[63]);	/* the 64th pushes p out */
	CHECKF(comes_back(p, 2000), "not reused after 64 more frees");
	CHECK(tl_option_set("secure_quarantine", 0) == 0);
	p = malloc(SIZE);
	free(p);
	CHECKF(comes_back(p, 2000), "not reused with secure_quarantine 0");
	CHECK(tl_option_set("secure_quarantine", 64) == 0);
	CHECK(tl_option_set("secure_quarantine", 257) == EINVAL);
}

static void canary_overflow_missed(void)
{
	static const char *const names[] = { "overflow_1", "overflow_8",
					     "overflow_last_8",
					     "overflow_last_100",
					     "overflow_aligned" };
	for (size_t i = 0; i < TEST_COUNT(names); i++)
		child_expect_abort(names[i], "free",
				   "canary overwritten (buffer overflow)");
	child_expect_abort_env("overflow_full", "TLMALLOC_SECURE_CANARY_NUL=0",
			       "free", "canary overwritten (buffer overflow)");
	child_expect_abort("overflow_realloc", "realloc",
			   "canary overwritten (buffer overflow)");
}

static void canary_usable_size_wrong(void)
{
	static const size_t sizes[] = { 0, 1, 8, 24, 100, 1000, 4096,
					65536 - 8 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		char *p = malloc(n);
		CHECK(p != NULL);
		CHECKF(malloc_usable_size(p) == n, "%zu for %zu",
		       malloc_usable_size(p), n);
		memset(p, 'u', n);
		free(p);
	}
	/* realloc in place: the canary moves with the size */
	char *p = malloc(20);
	char *q = realloc(p, 22);
	CHECK(q != NULL && malloc_usable_size(q) == 22);
	memset(q, 'v', 22);
	q = realloc(q, 3);
	CHECK(q != NULL && malloc_usable_size(q) == 3);
	memset(q, 'v', 3);
	free(q);
	/* aligned blocks: the size asked for too */
	static const size_t aligned[] = { 1, 64, 100, 1000, 4096 };
	for (size_t k = 0; k < sizeof(aligned) / sizeof(aligned[0]); k++) {
		void *a = NULL;
		CHECK(posix_memalign(&a, 64, aligned[k]) == 0);
		CHECKF(((uintptr_t)a & 63) == 0 &&
			       malloc_usable_size(a) == aligned[k],
		       "%zu for %zu", malloc_usable_size(a), aligned[k]);
		memset(a, 'w', aligned[k]);
		free(a);
	}
	/* above 64 KiB: no canary, the class's size */
	p = malloc(65536 + 1);
	CHECK(p != NULL && malloc_usable_size(p) > 65536 + 1);
	free(p);
}

/* The canary's first byte is 0 (secure_canary_nul, on by default). */
static void canary_nul_missing(void)
{
	long v = -1;
	CHECK(tl_option_get("secure_canary_nul", &v) == 0 && v == 1);
	static const size_t sizes[] = { 1, 8, 16, 24, 100, 1000, 4096 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		char *volatile p = malloc(n);
		CHECK(p != NULL);
		memset(p, 'a', n);
		CHECKF(strlen(p) == n, "%zu for %zu", strlen(p), n);
		p[n] = 0;	/* the terminator one past the end */
		free(p);
	}
}

static void canary_first_byte_zero(void)
{
	char out[256], err[256];
	int st = child_run("first_bytes", "TLMALLOC_SECURE_CANARY_NUL=0", out,
			   sizeof(out), err, sizeof(err));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
	       strstr(out, "zero first bytes: 0\n") != NULL,
	       "status %d, stdout: %s stderr: %s", st, out, err);
}

static pthread_key_t late_key;

/* Re-armed for every round of destructors: the later rounds run after
 * tlmalloc's own destructor took the thread's heap down. */
static void late_sized_dtor(void *value)
{
	uintptr_t round = (uintptr_t)value;
	for (size_t n = 1; n <= 512; n++) {
		unsigned char *p = malloc(n);
		CHECK(p != NULL);
		memset(p, 0x3c, n);
		tl_free_sized(p, n);
	}
	if (round < PTHREAD_DESTRUCTOR_ITERATIONS)
		CHECK(pthread_setspecific(late_key, (void *)(round + 1)) == 0);
}

static void *late_sized_thread(void *arg)
{
	free(malloc(16));	/* the thread's heap exists */
	CHECK(pthread_setspecific(late_key, (void *)1) == 0);
	return arg;
}

static void late_sized_free_refused(void)
{
	CHECK(pthread_key_create(&late_key, late_sized_dtor) == 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, late_sized_thread, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(pthread_key_delete(late_key) == 0);
}

static void canary_option_ignored(void)
{
	long v = -1;
	CHECK(tl_option_get("secure_canary", &v) == 0 && v == 1);
	free(malloc(1));	/* the first malloc decides */
	CHECK(tl_option_set("secure_canary", 0) == 0);	/* too late */
	char *p = malloc(24);
	CHECK(p != NULL && malloc_usable_size(p) == 24);
	free(p);
	CHECK(tl_option_set("secure_canary", 1) == 0);
	char out[256], err[256];
	int st = child_run("overflow_1", "TLMALLOC_SECURE_CANARY=0", out,
			   sizeof(out), err, sizeof(err));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
	       strstr(out, "not detected") != NULL,
	       "status %d, stderr: %s", st, err);
	st = child_run("usable_size_of_24", "TLMALLOC_SECURE_CANARY=0", out,
		       sizeof(out), err, sizeof(err));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
	       strtoul(out, NULL, 10) > 24, "status %d, stdout: %s", st, out);
}

static void usable_size_of_24_child(void)
{
	printf("%zu\n", malloc_usable_size(malloc(24)));
}

static void write_after_free_unreused_late_missed(void)
{
	/* with secure_recheck 0, when it leaves the quarantine */
	child_expect_abort_env("write_after_free_unreused_missed",
			       "TLMALLOC_SECURE_RECHECK=0", "free",
			       "quarantined block modified (write after free)");
}

static void quarantine_check_option_ignored(void)
{
	long v = -1;
	CHECK(tl_option_get("secure_quarantine_check", &v) == 0 && v == 1);
	CHECK(tl_option_get("secure_recheck", &v) == 0 && v == 1);
	char out[256], err[256];
	int st = child_run("write_after_free_unreused_missed",
			   "TLMALLOC_SECURE_QUARANTINE_CHECK=0 "
			   "TLMALLOC_SECURE_RECHECK=0", out,
			   sizeof(out), err, sizeof(err));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
	       strstr(out, "not detected") != NULL,
	       "status %d, stderr: %s", st, err);
}

static void fill_check_option_ignored(void)
{
	long v = -1;
	CHECK(tl_option_get("secure_fill_check", &v) == 0 && v == 1);
	CHECK(tl_option_set("secure_fill_check", 0) == 0);
	CHECK(tl_option_set("secure_quarantine_check", 0) == 0);
	CHECK(tl_option_set("secure_recheck", 0) == 0);
	write_after_free(48);
	CHECK(tl_option_set("secure_fill_check", 1) == 0);
	/* fresh blocks hold no fill; nor do blocks freed unfilled */
	for (int i = 0; i < MANY; i++)
		CHECK(malloc(48) != NULL);
	CHECK(tl_option_set("secure_fill", 0) == 0);
	write_after_free(48);
	CHECK(tl_option_set("secure_fill", 1) == 0);
	CHECK(tl_option_set("secure_quarantine_check", 1) == 0);
	CHECK(tl_option_set("secure_recheck", 1) == 0);
	CHECK(tl_option_set("secure_fill_check", 2) == EINVAL);
}

/* Free a block of n bytes of 0x11 (its page kept from emptying, so its
 * memory stays as freed) and count the bytes past its first two words
 * that hold `byte` afterwards. */
static size_t bytes_after_free(size_t n, unsigned char byte)
{
	unsigned char *p = malloc(n);
	CHECK(p != NULL);
	memset(p, 0x11, n);
	void *keep = malloc(n);
	free(p);
	size_t count = 0;
	for (size_t i = 2 * sizeof(void *); i < n; i++)
		count += p[i] == byte;
	free(keep);
	return count;
}

static void fill_missing(void)
{
	/* the largest: 64 KiB blocks, with the canary's tail */
	static const size_t sizes[] = { 16, 48, 1000, 8192, 65536 - 8 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k], filled = bytes_after_free(n, 0xdf);
		CHECKF(filled == n - 2 * sizeof(void *), "%zu of %zu bytes "
		       "filled", filled, n);
	}
}

static void fill_option_ignored(void)
{
	long v = -1;
	CHECK(tl_option_get("secure_fill", &v) == 0 && v == 1);
	CHECK(tl_option_set("secure_fill", 0) == 0);
	CHECKF(bytes_after_free(1000, 0x11) == 1000 - 16,
	       "filled with secure_fill 0");
	CHECK(tl_option_set("secure_fill", 1) == 0);
	CHECKF(bytes_after_free(1000, 0xdf) == 1000 - 16,
	       "not filled with secure_fill 1");
	CHECK(tl_option_set("secure_fill", 2) == EINVAL);
}

/* Kept blocks (kept.h) would hand a freed block out again outside the
 * quarantine: the secure variant has none, and refuses the option. */
static void kept_option_taken(void)
{
	long v = -1;
	CHECK(tl_option_get("kept_bytes", &v) == 0 && v == 0);
	CHECK(tl_option_set("kept_bytes", 32768) == EINVAL);
	CHECK(tl_option_get("kept_bytes", &v) == 0 && v == 0);
}

static void order_not_shuffled(void)
{
	enum { N = 64 };
	char *b[N];
	int ascending = 0;
	for (int i = 0; i < N; i++) {
		b[i] = malloc(48);
		CHECK(b[i] != NULL);
		if (i > 0 && b[i] == b[i - 1] + 48)
			ascending++;
	}
	CHECKF(ascending < N / 2, "%d of %d blocks follow their predecessor",
	       ascending, N - 1);
	for (int i = 0; i < N; i++)
		free(b[i]);
}

static sigjmp_buf fault_jump;

static void on_fault(int sig)
{
	siglongjmp(fault_jump, sig);
}

/* Whether reading *p faults. */
static int faults(const volatile char *p)
{
	struct sigaction sa = { .sa_handler = on_fault }, old_segv, old_bus;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGBUS, &sa, &old_bus);
	volatile int faulted = 1;	/* kept across the longjmp */
	if (sigsetjmp(fault_jump, 1) == 0) {
		(void)*p;
		faulted = 0;
	}
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGBUS, &old_bus, NULL);
	return faulted;
}

/* A guard page: mapped (msync accepts it; an unmapped hole would fault
 * as well, but proves nothing), and reading it faults. */
static int is_guard(const char *p)
{
	size_t size = (size_t)sysconf(_SC_PAGESIZE);
	void *page = (void *)((uintptr_t)p & ~(uintptr_t)(size - 1));
	return msync(page, size, MS_ASYNC) == 0 && faults(p);
}

static void guard_page_missing(void)
{
	size_t n = (size_t)1 << 20;
	char *big = malloc(n);
	CHECK(big != NULL);
	size_t usable = malloc_usable_size(big);
	CHECK(usable >= n);
	memset(big, 1, usable);
	CHECKF(is_guard(big + usable), "no guard after a huge block");
	free(big);

	/* A small block's segment: its last OS page is a guard. */
	char *s = malloc(100);
	CHECK(s != NULL);
	uintptr_t seg = (uintptr_t)s & ~(((uintptr_t)4 << 20) - 1);
	CHECKF(is_guard((char *)seg + (4 << 20) - 1),
	       "the last page of a segment is no guard");
	/* The header's tail, up to the first page: none with 64 KiB pages. */
	if (sysconf(_SC_PAGESIZE) < (64 << 10))
		CHECKF(is_guard((char *)seg + (64 << 10) - 1),
		       "the page before a segment's first page is no guard");
	CHECK(!faults(s));
	free(s);
}

static void huge_guard_lost_on_realloc(void)
{
	size_t n = (size_t)1 << 20;
	unsigned char *p = malloc(n);
	CHECK(p != NULL);
	pattern_fill(p, n, 5);
	for (int i = 0; i < 4; i++) {
		size_t m = n * 3;
		unsigned char *q = realloc(p, m);
		CHECK(q != NULL);
		CHECKF(pattern_find_damage(q, n, 5) == n, "contents lost");
		size_t usable = malloc_usable_size(q);
		CHECK(usable >= m);
		memset(q + n, 0x22, usable - n);
		CHECKF(is_guard((char *)q + usable),
		       "no guard after a grown huge block");
		/* and back down, contents kept */
		p = realloc(q, n);
		CHECK(p != NULL);
		CHECKF(pattern_find_damage(p, n, 5) == n, "contents lost");
		usable = malloc_usable_size(p);
		CHECKF(is_guard((char *)p + usable),
		       "no guard after a shrunk huge block");
	}
	free(p);
}

/* A freed huge block is unmapped: reading it faults; with
 * secure_huge_unmap 0 it is cached and reads do not. */
static void huge_use_after_free_unseen(void)
{
	long v = -1;
	CHECK(tl_option_get("secure_huge_unmap", &v) == 0 && v == 1);
	char *p = malloc(256 << 10);
	CHECK(p != NULL);
	memset(p, 'h', 256 << 10);
	free(p);
	CHECKF(faults(p) && faults(p + (128 << 10)),
	       "a freed huge block still mapped");
	CHECK(tl_option_set("secure_huge_unmap", 0) == 0);
	p = malloc(256 << 10);
	CHECK(p != NULL);
	free(p);
	CHECKF(!faults(p), "a cached huge block unmapped");
	CHECK(tl_option_set("secure_huge_unmap", 1) == 0);
}

static void not_secure_library(void)
{
	void *fns[] = { (void *)(uintptr_t)&malloc, (void *)(uintptr_t)&free };
	for (size_t i = 0; i < 2; i++) {
		Dl_info info;
		CHECK(dladdr(fns[i], &info) != 0);
		CHECKF(info.dli_fname != NULL &&
		       strstr(info.dli_fname, "libtlmalloc-secure") != NULL,
		       "resolves to %s", info.dli_fname);
	}
}

/* Whether the page at p is mapped (accessible or not). */
static int reserved(void *p)
{
	unsigned char vec;
	return mincore(p, 1, &vec) == 0;
}

static void huge_addresses_reused(void)
{
	long v = -1;
	CHECK(tl_option_get("secure_huge_quarantine", &v) == 0 && v == 256);
	size_t size = 256 << 10;
	char *p = malloc(size), *q[8];
	CHECK(p != NULL);
	free(p);
	for (int i = 0; i < 8; i++) {
		CHECK((q[i] = malloc(size)) != NULL);
		memset(q[i], 'q', size);
	}
	CHECKF(reserved(p) && faults(p) && faults(p + (64 << 10) + 1),
	       "a freed huge block's addresses given to a later malloc");
	for (int i = 0; i < 8; i++)
		free(q[i]);
	/* a ring of 2: the third free unmaps the first */
	CHECK(tl_option_set("secure_huge_quarantine", 2) == 0);
	for (int i = 0; i < 3; i++)
		CHECK((q[i] = malloc(size)) != NULL);
	for (int i = 0; i < 3; i++)
		free(q[i]);
	CHECKF(!reserved(q[0]) && reserved(q[1]) && reserved(q[2]),
	       "the ring of 2 holds %d %d %d", reserved(q[0]), reserved(q[1]),
	       reserved(q[2]));
	CHECK(tl_option_set("secure_huge_quarantine", 0) == 0);
	p = malloc(size);
	CHECK(p != NULL);
	free(p);
	CHECKF(!reserved(p), "held with secure_huge_quarantine 0");
	CHECK(tl_option_set("secure_huge_quarantine", 256) == 0);
	CHECK(tl_option_set("secure_huge_quarantine", 1025) == EINVAL);
}

/* The bytes of p[0..n) that are not 0. */
static size_t nonzero(const unsigned char *p, size_t n)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++)
		count += p[i] != 0;
	return count;
}

static void zero_missing(void)
{
	long v = -1;
	CHECK(tl_option_get("secure_zero", &v) == 0 && v == 1);
	static const size_t sizes[] = { 8, 48, 1000, 8192, 65536 - 8 };
	static unsigned char *keep[200];
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		/* fresh blocks, then the same blocks freed and reused (the
		 * quarantine of 64 lets them out after 64 frees) */
		for (int round = 0; round < 3; round++) {
			for (int i = 0; i < 200; i++) {
				keep[i] = malloc(n);
				CHECK(keep[i] != NULL);
				CHECKF(nonzero(keep[i], n) == 0,
				       "%zu of %zu bytes not 0 (round %d)",
				       nonzero(keep[i], n), n, round);
				memset(keep[i], 0x55, n);
			}
			for (int i = 0; i < 200; i++)
				free(keep[i]);
		}
	}
	/* the premise: without it, a reused block holds the fill */
	CHECK(tl_option_set("secure_zero", 0) == 0);
	CHECK(tl_option_set("secure_quarantine", 0) == 0);
	unsigned char *q = malloc(48);	/* one of the blocks freed above */
	CHECKF(q != NULL && q[40] == 0xdf, "byte %#x", q[40]);
	free(q);
	CHECK(tl_option_set("secure_quarantine", 64) == 0);
	CHECK(tl_option_set("secure_zero", 1) == 0);
}

static void zero_size_accessible(void)
{
	long v = -1;
	CHECK(tl_option_get("secure_zero_size", &v) == 0 && v == 1);
	char *p = malloc(0), *q = malloc(0), *c = calloc(0, 8);
	CHECK(p != NULL && q != NULL && c != NULL);
	CHECK(p != q && p != c && q != c);
	CHECK(((uintptr_t)p & 15) == 0);
	CHECKF(faults(p) && faults(q) && faults(c),
	       "a zero-size block can be read");
	CHECK(malloc_usable_size(p) == 0);
	char *r = realloc(p, 10);
	CHECK(r != NULL && malloc_usable_size(r) == 10);
	memset(r, 'z', 10);
	free(r);
	tl_free_sized(q, 0);
	free(c);
	CHECK(tl_option_set("secure_zero_size", 0) == 0);
	p = malloc(0);
	CHECKF(p != NULL && !faults(p),
	       "a zero-size block faults with secure_zero_size 0");
	free(p);
	CHECK(tl_option_set("secure_zero_size", 1) == 0);
}

static void zero_size_double_free_child(void)
{
	char *p = malloc(0);
	free(p);
	free(p);
	printf("not detected\n");
}

size_t malloc_object_size(void *ptr);	/* hardened_malloc's extension */

static void object_size_quarantined_child(void)
{
	char *p = malloc(SIZE);
	CHECK(p != NULL);
	CHECK(malloc_object_size(p + 3) == SIZE - 3);
	free(p);
	printf("%zu\n", malloc_object_size(p + 3));
}

static const struct test_case cases[] = {
	TEST_CASE(not_secure_library),
	TEST_DEATH(double_free_missed, double_free_child,
		   "free", "double free"),
	TEST_DEATH(double_free_late_missed, double_free_late_child,
		   "free", "double free"),
	TEST_DEATH(remote_double_free_missed, remote_double_free_child,
		   "free", "double free"),
	TEST_CHILD(overrun_into_link_missed, overrun_into_link_child),
	TEST_CHILD(use_after_free_link_missed, use_after_free_link_child),
	TEST_DEATH(object_size_quarantined_missed, object_size_quarantined_child,
		   "malloc_object_size", "block already freed"),
	TEST_DEATH(interior_free_missed, interior_free_child,
		   "free", "not the start of a block"),
	TEST_CHILD(write_after_free_missed, write_after_free_child),
	TEST_DEATH(write_after_free_unreused_missed,
		   write_after_free_unreused_child, "malloc",
		   "freed block modified (write after free)"),
	TEST_CASE(write_after_free_unreused_late_missed),
	TEST_DEATH(recheck_at_free_missed, recheck_at_free_child, "free",
		   "freed block modified (write after free)"),
	TEST_CASE(quarantine_check_option_ignored),
	TEST_CASE(fill_check_option_ignored),
	TEST_CHILD(double_free_after_reuse_missed,
		   double_free_after_reuse_child),
	TEST_CASE(quarantine_reuses_early),
	TEST_CASE(canary_overflow_missed),
	TEST_DEATH(sized_free_larger_missed, sized_free_larger_child,
		   "free_sized", "size 21 does not match the block (20 bytes)"),
	TEST_CASE(sized_free_smaller_missed),
	TEST_CASE(underflow_live_missed),
	TEST_CASE(underflow_freed_missed),
	TEST_CASE(underflow_fresh_missed),
	TEST_CASE(underflow_seen_with_threads),
	TEST_CASE(canary_usable_size_wrong),
	TEST_CASE(canary_nul_missing),
	TEST_CASE(canary_first_byte_zero),
	TEST_CASE(canary_option_ignored),
	TEST_CASE(late_sized_free_refused),
	TEST_CASE(fill_missing),
	TEST_CASE(fill_option_ignored),
	TEST_CASE(kept_option_taken),
	TEST_CASE(order_not_shuffled),
	TEST_CASE(guard_page_missing),
	TEST_CASE(huge_guard_lost_on_realloc),
	TEST_CASE(huge_use_after_free_unseen),
	TEST_CASE(huge_addresses_reused),
	TEST_CASE(zero_missing),
	TEST_CASE(zero_size_accessible),
	TEST_DEATH(zero_size_double_free_missed, zero_size_double_free_child,
		   "free", "double free"),
	/* children that other cases run (no ctest case of their own) */
	{ "write_after_free_large_missed", NULL, write_after_free_large_child,
	  NULL, NULL },
	{ "overflow_1", NULL, overflow_child, NULL, NULL },
	{ "underflow_live", NULL, underflow_live_child, NULL, NULL },
	{ "underflow_live_32", NULL, underflow_live_32_child, NULL, NULL },
	{ "underflow_freed", NULL, underflow_freed_child, NULL, NULL },
	{ "underflow_fresh", NULL, underflow_fresh_child, NULL, NULL },
	{ "underflow_threads", NULL, underflow_threads_child, NULL, NULL },
	{ "overflow_8", NULL, overflow_8_child, NULL, NULL },
	{ "overflow_last_8", NULL, overflow_last_8_child, NULL, NULL },
	{ "overflow_last_100", NULL, overflow_last_100_child, NULL, NULL },
	{ "overflow_full", NULL, overflow_full_child, NULL, NULL },
	{ "overflow_aligned", NULL, overflow_aligned_child, NULL, NULL },
	{ "sized_free_smaller", NULL, sized_free_smaller_child, NULL, NULL },
	{ "delete_array", NULL, delete_array_child, NULL, NULL },
	{ "aligned_sized_smaller", NULL, aligned_sized_smaller_child, NULL,
	  NULL },
	{ "first_bytes", NULL, first_bytes_child, NULL, NULL },
	{ "overflow_realloc", NULL, overflow_realloc_child, NULL, NULL },
	{ "usable_size_of_24", NULL, usable_size_of_24_child, NULL, NULL },
};

int main(int argc, char **argv)
{
	return child_main(argc, argv, cases, TEST_COUNT(cases));
}
