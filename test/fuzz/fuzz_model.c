/*
 * fuzz_model.c - the model the fuzz harness checks tlmalloc against.
 *
 * Each live block has a slot with what was asked (size, alignment), its
 * usable size, and a tag; its usable bytes hold a pattern that is a pure
 * function of tag and offset, so any byte can be checked without a copy.
 * A sorted array of the live blocks' extents [p, p + usable) proves that no
 * two of them overlap.  Any violation ends in fz_fail: a message on stderr
 * and __builtin_trap(), which libFuzzer reports as a crash.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "tlmalloc.h"

#define FZ_FULL_MAX ((size_t)256 << 10)	/* blocks up to here: every byte */
#define FZ_EDGE 4096			/* above: both ends ... */
#define FZ_STRIDE ((size_t)64 << 10)	/* ... and 8 bytes in every 64 KiB */

struct fz_block fz_blocks[FZ_SLOTS];
size_t fz_live_bytes;
unsigned fz_step;
const char *fz_call = "(none)";

struct fz_extent {
	uintptr_t lo, hi;
	int slot;
};

static struct fz_extent extents[FZ_SLOTS];
static int extent_count;

void fz_fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fuzz_tlmalloc: CHECK FAILED at step %u (%s): ",
		fz_step, fz_call);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	__builtin_trap();
}

static uint64_t pattern_word(uint64_t tag, size_t word)
{
	uint64_t x = (tag + 1) * 0x9E3779B97F4A7C15ull;
	x ^= (uint64_t)word * 0xBF58476D1CE4E5B9ull;
	return x ^ (x >> 29);
}

uint8_t fz_pattern_byte(uint64_t tag, size_t off)
{
	return (uint8_t)(pattern_word(tag, off >> 3) >> ((off & 7) * 8));
}

static uint8_t expected_byte(uint64_t tag, size_t off,
			     enum fz_probe_mode mode)
{
	return mode == FZ_ZERO ? 0 : fz_pattern_byte(tag, off);
}

/* One byte: write it or compare it.  Returns false on a mismatch. */
static bool byte_op(uint8_t *p, size_t off, uint64_t tag,
		    enum fz_probe_mode mode)
{
	uint8_t want = expected_byte(tag, off, mode);
	if (mode == FZ_FILL) {
		p[off] = want;
		return true;
	}
	return p[off] == want;
}

/* Eight aligned bytes at a time (off % 8 == 0); little-endian words. */
static bool word_op(uint8_t *p, size_t off, uint64_t tag,
		    enum fz_probe_mode mode)
{
	uint64_t want = mode == FZ_ZERO ? 0 : pattern_word(tag, off >> 3);
	uint64_t have;
	if (mode == FZ_FILL) {
		memcpy(p + off, &want, 8);
		return true;
	}
	memcpy(&have, p + off, 8);
	return have == want;
}

/* Apply mode to the bytes [a, b); the first mismatch or SIZE_MAX. */
static size_t span_op(uint8_t *p, size_t a, size_t b, uint64_t tag,
		      enum fz_probe_mode mode)
{
	size_t off = a;
	for (; off < b && (off & 7) != 0; off++)
		if (!byte_op(p, off, tag, mode))
			return off;
	for (; off + 8 <= b; off += 8)
		if (!word_op(p, off, tag, mode))
			break;	/* the byte loop finds which byte */
	for (; off < b; off++)
		if (!byte_op(p, off, tag, mode))
			return off;
	return SIZE_MAX;
}

static size_t clipped_span(uint8_t *p, size_t a, size_t b, size_t limit,
			   uint64_t tag, enum fz_probe_mode mode)
{
	if (b > limit)
		b = limit;
	return a < b ? span_op(p, a, b, tag, mode) : SIZE_MAX;
}

size_t fz_probe(uint8_t *p, size_t len, size_t limit, uint64_t tag,
		enum fz_probe_mode mode)
{
	size_t bad, off;
	if (limit > len)
		limit = len;
	if (len <= FZ_FULL_MAX)
		return clipped_span(p, 0, len, limit, tag, mode);
	bad = clipped_span(p, 0, FZ_EDGE, limit, tag, mode);
	size_t shift = (size_t)(tag % (FZ_STRIDE / 8)) * 8;
	for (off = FZ_STRIDE + shift; bad == SIZE_MAX && off + 8 <= len - FZ_EDGE;
	     off += FZ_STRIDE)
		bad = clipped_span(p, off, off + 8, limit, tag, mode);
	if (bad == SIZE_MAX)
		bad = clipped_span(p, len - FZ_EDGE, len, limit, tag, mode);
	return bad;
}

void fz_verify_block(const struct fz_block *b, size_t limit,
		     const char *where)
{
	size_t bad = fz_probe(b->p, b->usable, limit, b->tag, FZ_VERIFY);
	if (bad == SIZE_MAX)
		return;
	fz_fail("%s: block %p (%zu bytes asked, %zu usable, from %s) "
		"changed at offset %zu: 0x%02x, expected 0x%02x",
		where, (void *)b->p, b->req, b->usable, b->how, bad,
		b->p[bad], fz_pattern_byte(b->tag, bad));
}

/* Index of the first extent with lo > key. */
static int extent_upper(uintptr_t key)
{
	int lo = 0, hi = extent_count;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (extents[mid].lo > key)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static void overlap_fail(const struct fz_extent *old, uintptr_t lo,
			 uintptr_t hi)
{
	const struct fz_block *b = &fz_blocks[old->slot];
	fz_fail("new block [%#lx, %#lx) overlaps %s block [%#lx, %#lx) "
		"(%zu bytes asked, from %s)", (unsigned long)lo,
		(unsigned long)hi,
		b->state == FZ_AWAY ? "worker's" : "live",
		(unsigned long)old->lo, (unsigned long)old->hi, b->req,
		b->how);
}

/* The extent overlapping [lo, hi) near position at, or NULL. */
static const struct fz_extent *extent_conflict(int at, uintptr_t lo,
					       uintptr_t hi)
{
	if (at > 0 && extents[at - 1].hi > lo)
		return &extents[at - 1];
	if (at < extent_count && extents[at].lo < hi)
		return &extents[at];
	return NULL;
}

/*
 * A block handed to the worker may be freed and its memory handed out
 * again before the worker reports it: on a conflict with one, wait for the
 * worker, forget what it freed, and look again.
 */
static void extent_insert(int slot, uintptr_t lo, uintptr_t hi)
{
	int at = extent_upper(lo);
	const struct fz_extent *old = extent_conflict(at, lo, hi);
	if (old != NULL && fz_blocks[old->slot].state == FZ_AWAY) {
		fz_worker_sync();
		fz_model_collect_away();
		at = extent_upper(lo);
		old = extent_conflict(at, lo, hi);
	}
	if (old != NULL)
		overlap_fail(old, lo, hi);
	memmove(&extents[at + 1], &extents[at],
		(size_t)(extent_count - at) * sizeof(extents[0]));
	extents[at] = (struct fz_extent){ .lo = lo, .hi = hi, .slot = slot };
	extent_count++;
}

static void extent_remove(uintptr_t lo)
{
	int at = extent_upper(lo) - 1;
	if (at < 0 || extents[at].lo != lo)
		fz_fail("model: extent %#lx missing", (unsigned long)lo);
	memmove(&extents[at], &extents[at + 1],
		(size_t)(extent_count - at - 1) * sizeof(extents[0]));
	extent_count--;
}

static void check_zero(const struct fz_block *b)
{
	size_t bad = fz_probe(b->p, b->req, b->req, 0, FZ_ZERO);
	if (bad != SIZE_MAX)
		fz_fail("%s block %p of %zu bytes not zero at offset %zu: "
			"0x%02x", b->how, (void *)b->p, b->req, bad, b->p[bad]);
}

/* realloc kept min(old, new) bytes (those of prev's probe set). */
static void check_kept(const struct fz_block *b, const struct fz_block *prev)
{
	size_t kept = prev->req < b->req ? prev->req : b->req;
	size_t bad = fz_probe(b->p, prev->usable, kept, prev->tag, FZ_VERIFY);
	if (bad != SIZE_MAX)
		fz_fail("block %p moved to %p (%zu -> %zu bytes) lost its "
			"contents at offset %zu: 0x%02x, expected 0x%02x",
			(void *)prev->p, (void *)b->p, prev->req, b->req, bad,
			b->p[bad], fz_pattern_byte(prev->tag, bad));
}

static void check_fresh(void *p, size_t req, size_t align, size_t usable)
{
	uintptr_t a = (uintptr_t)p;
	size_t need = align > FZ_MIN_ALIGN ? align : FZ_MIN_ALIGN;
	if (a % need != 0)
		fz_fail("block %p is not aligned to %zu (asked %zu bytes)", p,
			need, req);
	if (usable < req)
		fz_fail("block %p: usable size %zu < %zu asked", p, usable,
			req);
	if (a + usable < a)
		fz_fail("block %p: usable size %zu wraps", p, usable);
}

/*
 * What a new block must hold before it is filled: zeroed (calloc), or the
 * first min(old, new) bytes of prev (realloc).  A moved block keeps its
 * predecessor's tag.
 */
static void add_block(int slot, void *p, size_t req, size_t align,
		      const struct fz_block *prev, bool zeroed, const char *how)
{
	static uint64_t next_tag;
	struct fz_block *b = &fz_blocks[slot];
	size_t usable = tl_usable_size(p);
	check_fresh(p, req, align, usable);
	if (b->state != FZ_EMPTY)
		fz_fail("model: slot %d reused while busy", slot);
	/* a zero-sized block may have no usable byte, but its address is
	 * still its own */
	extent_insert(slot, (uintptr_t)p, (uintptr_t)p + (usable ? usable : 1));
	*b = (struct fz_block){ .p = p, .req = req, .usable = usable,
				.align = align, .tag = ++next_tag,
				.state = FZ_LIVE, .how = how };
	if (zeroed)
		check_zero(b);
	if (prev != NULL) {
		check_kept(b, prev);
		b->tag = prev->tag;
	}
	fz_probe(b->p, usable, usable, b->tag, FZ_FILL);
	fz_live_bytes += usable;
}

void fz_model_add(int slot, void *p, size_t req, size_t align,
		  const char *how)
{
	add_block(slot, p, req, align, NULL, false, how);
}

void fz_model_add_zeroed(int slot, void *p, size_t req, size_t align,
			 const char *how)
{
	add_block(slot, p, req, align, NULL, true, how);
}

void fz_model_add_moved(int slot, void *p, size_t req,
			const struct fz_block *prev, const char *how)
{
	add_block(slot, p, req, FZ_MIN_ALIGN, prev, false, how);
}

void fz_model_remove(int slot)
{
	struct fz_block *b = &fz_blocks[slot];
	extent_remove((uintptr_t)b->p);
	fz_live_bytes -= b->usable;
	b->state = FZ_EMPTY;
	b->p = NULL;
}

/* The first and last bytes of each live block: cheap, every step. */
static void check_edges(const struct fz_block *b)
{
	size_t n = b->usable < 8 ? b->usable : 8;
	if (n == 0)
		return;
	size_t bad = span_op(b->p, 0, n, b->tag, FZ_VERIFY);
	if (bad == SIZE_MAX)
		bad = span_op(b->p, b->usable - n, b->usable, b->tag,
			      FZ_VERIFY);
	if (bad != SIZE_MAX)
		fz_fail("live block %p (%zu bytes asked, %zu usable, from %s) "
			"changed at offset %zu: 0x%02x, expected 0x%02x",
			(void *)b->p, b->req, b->usable, b->how, bad,
			b->p[bad], fz_pattern_byte(b->tag, bad));
}

void fz_model_check_all(void)
{
	for (int i = 0; i < FZ_SLOTS; i++)
		if (fz_blocks[i].state == FZ_LIVE)
			check_edges(&fz_blocks[i]);
}

void fz_model_collect_away(void)
{
	int slots[FZ_SLOTS];
	int n = fz_worker_done_frees(slots, FZ_SLOTS);
	for (int i = 0; i < n; i++)
		fz_model_remove(slots[i]);
}

bool fz_model_fits(size_t size)
{
	return size <= FZ_LIVE_CAP && fz_live_bytes <= FZ_LIVE_CAP - size;
}
