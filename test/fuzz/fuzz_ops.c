/*
 * fuzz_ops.c - the libFuzzer entry point of the tlmalloc fuzz harness.
 *
 * The input is a program: each operation is an opcode byte followed by
 * its argument bytes (a slot, a size selector, an alignment selector, a
 * mode), and a missing byte reads as 0, so every input is a valid
 * program.  Each operation calls the tl_ API, checks the result against
 * the model (fuzz_model.c) and the errno contract, and after every step
 * the edges of every live block are checked.  At the end of the input
 * every block is verified and freed and the options are put back.
 *
 * FUZZ_TLMALLOC_TRACE=1 in the environment prints each step to stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "tlmalloc.h"

#define IMPOSSIBLE ((size_t)1 << 62)	/* no size from here on can be had */
#define HUGE_ALIGN ((size_t)1 << 30)	/* an alignment this big may fail */
#define CLASSES 48

struct reader {
	const uint8_t *p;
	size_t n;
};

enum expect {
	EXPECT_OK,	/* must succeed */
	EXPECT_MAYBE,	/* may fail with ENOMEM (fault armed, huge alignment) */
	EXPECT_FAIL,	/* must fail with the errno given */
	EXPECT_SKIP,	/* would break the live-bytes cap: not called */
};

static size_t class_sizes[CLASSES];
static size_t page_size;
static long purge_delay_default;
static bool trace;

#define TRACE(...) \
	do { \
		if (trace) \
			fprintf(stderr, __VA_ARGS__); \
	} while (0)

/* ---- reading the program ---- */
static unsigned get8(struct reader *r)
{
	if (r->n == 0)
		return 0;
	r->n--;
	return *r->p++;
}

static unsigned get16(struct reader *r)
{
	unsigned lo = get8(r);
	return lo | get8(r) << 8;
}

static uint32_t get24(struct reader *r)
{
	uint32_t lo = get16(r);
	return lo | (uint32_t)get8(r) << 16;
}

/* Single operations name the first FZ_HAND slots; bursts fill the rest. */
static int get_slot(struct reader *r)
{
	return (int)(get8(r) % FZ_HAND);
}

/* ---- sizes: 0, tiny, every class boundary, medium, large, impossible ---- */
static void init_classes(void)
{
	int n = 0;
	for (size_t s = 16; s <= 128; s += 16)
		class_sizes[n++] = s;
	for (int b = 7; b <= 16; b++)
		for (size_t k = 1; k <= 4; k++)
			class_sizes[n++] = ((size_t)1 << b) + (k << (b - 2));
}

static size_t impossible_size(struct reader *r)
{
	switch (get8(r) % 6) {
	case 0:
		return SIZE_MAX - get16(r);
	case 1:
		return SIZE_MAX - ((size_t)get8(r) << 20);
	case 2:
		return ((size_t)1 << 63) + get16(r);
	case 3:
		return (SIZE_MAX >> 1) - get16(r);	/* PTRDIFF_MAX - k */
	case 4:
		return (size_t)1 << (62 + get8(r) % 2);
	default:	/* where adding a header or a segment wraps */
		return SIZE_MAX - ((size_t)4 << 20) - ((size_t)64 << 10) +
		       get24(r);
	}
}

static size_t big_size(struct reader *r)
{
	static const size_t sizes[] = {
		(128 << 10) + 1, 256 << 10, (1 << 20) - 1, 1 << 20,
		(4 << 20) - (64 << 10), (4 << 20) - (64 << 10) + 1,
		(4 << 20) - 1, 4 << 20, (4 << 20) + 1, 8 << 20,
		(12 << 20) + 7, 16 << 20, 32 << 20, 60 << 20,
	};
	return sizes[get8(r) % (sizeof(sizes) / sizeof(sizes[0]))];
}

/* n +- 1, from the next byte */
static size_t nudge(struct reader *r, size_t n)
{
	return n + (size_t)(get8(r) % 3) - 1;
}

static size_t pick_size(struct reader *r)
{
	switch (get8(r) % 16) {
	case 0:
		return 0;
	case 1:
	case 2:
		return 1 + get8(r) % 64;
	case 3:
	case 4:
	case 5:
	case 6:
		return nudge(r, class_sizes[get8(r) % CLASSES]);
	case 7:
	case 8:
		return 1 + get16(r) % 1024;
	case 9:
	case 10:
		return 1 + get24(r) % (128 << 10);
	case 11:
		return nudge(r, page_size * (1 + get8(r) % 64));
	case 12:
		return (128 << 10) + get24(r) % (4 << 20);
	case 13:
		return big_size(r);
	case 14:
		return impossible_size(r);
	default:
		return nudge(r, ((size_t)64 << 10) * (1 + get8(r) % 64));
	}
}

/* 1 .. 1 MiB mostly; also 0, not powers of two, and huge ones. */
static size_t pick_alignment(struct reader *r)
{
	unsigned k = get8(r) % 8;
	unsigned s = get8(r);
	if (k < 5)
		return (size_t)1 << (s % 21);
	if (k == 5)
		return ((size_t)1 << (s % 24)) * 3 + (s & 1);
	if (k == 6)
		return s % 2 ? 0 : SIZE_MAX - (s >> 1);
	return (size_t)1 << (21 + s % 43);
}

/* ---- expectations and outcomes ---- */
static bool fault_armed(void)
{
	long v = 0;
	tl_option_get("fault_map", &v);
	return v != 0;
}

static enum expect size_expect(size_t size)
{
	if (size >= IMPOSSIBLE)
		return EXPECT_FAIL;
	if (!fz_model_fits(size))
		return EXPECT_SKIP;
	return fault_armed() ? EXPECT_MAYBE : EXPECT_OK;
}

/*
 * Check a call's result: p and errno (err) against e (want_err for
 * EXPECT_FAIL).  True if p is a new block for the model.
 */
static bool outcome(void *p, int err, enum expect e, int want_err)
{
	TRACE("  -> %p errno %d\n", p, err == FZ_ERRNO_MARK ? 0 : err);
	if (e == EXPECT_FAIL) {
		if (p != NULL)
			fz_fail("returned %p, expected NULL and errno %d", p,
				want_err);
		if (err != want_err)
			fz_fail("returned NULL with errno %d, expected %d",
				err, want_err);
		return false;
	}
	if (p == NULL) {
		if (e == EXPECT_OK)
			fz_fail("returned NULL (errno %d) with nothing to "
				"make it fail", err);
		if (err != ENOMEM)
			fz_fail("returned NULL with errno %d, expected "
				"ENOMEM", err);
		return false;
	}
	if (err != FZ_ERRNO_MARK)
		fz_fail("succeeded (%p) but set errno to %d", p, err);
	return true;
}

/* ---- slots ---- */
static void collect(void)
{
	fz_model_collect_away();
}

static void free_block(int slot)
{
	struct fz_block *b = &fz_blocks[slot];
	fz_verify_block(b, b->usable, "before free");
	errno = FZ_ERRNO_MARK;
	tl_free(b->p);
	if (errno != FZ_ERRNO_MARK)
		fz_fail("tl_free(%p) changed errno to %d", (void *)b->p, errno);
	fz_model_remove(slot);
}

/* Make slot empty: wait for the worker if it has it, free a live block. */
static void clear_slot(int slot)
{
	if (fz_blocks[slot].state == FZ_AWAY) {
		fz_worker_sync();
		collect();
	}
	if (fz_blocks[slot].state == FZ_LIVE)
		free_block(slot);
}

/* ---- the operations ---- */
static void op_malloc(struct reader *r)
{
	int slot = get_slot(r);
	size_t size = pick_size(r);
	enum expect e = size_expect(size);
	if (e == EXPECT_SKIP)
		return;
	clear_slot(slot);
	fz_call = "tl_malloc";
	TRACE("step %u: [%d] = tl_malloc(%zu)\n", fz_step, slot, size);
	errno = FZ_ERRNO_MARK;
	void *p = tl_malloc(size);
	if (outcome(p, errno, e, ENOMEM))
		fz_model_add(slot, p, size, FZ_MIN_ALIGN, "tl_malloc");
}

static void pick_calloc_args(struct reader *r, size_t *count, size_t *size)
{
	switch (get8(r) % 4) {
	case 0:
	case 1:
		*count = get8(r);
		*size = pick_size(r);
		break;
	case 2:
		*count = pick_size(r);
		*size = 1 + get8(r) % 32;
		break;
	default:	/* products that wrap */
		*count = ((size_t)1 << (32 + get8(r) % 32)) + get8(r);
		*size = ((size_t)1 << (32 + get8(r) % 32)) + get8(r);
		break;
	}
}

static enum expect product_expect(size_t count, size_t size, size_t *total)
{
	if (__builtin_mul_overflow(count, size, total))
		return EXPECT_FAIL;
	return size_expect(*total);
}

static void op_calloc(struct reader *r)
{
	int slot = get_slot(r);
	size_t count, size, total;
	pick_calloc_args(r, &count, &size);
	enum expect e = product_expect(count, size, &total);
	if (e == EXPECT_SKIP)
		return;
	clear_slot(slot);
	fz_call = "tl_calloc";
	TRACE("step %u: [%d] = tl_calloc(%zu, %zu)\n", fz_step, slot, count,
	      size);
	errno = FZ_ERRNO_MARK;
	void *p = tl_calloc(count, size);
	if (outcome(p, errno, e, ENOMEM))
		fz_model_add_zeroed(slot, p, total, FZ_MIN_ALIGN,
				    "tl_calloc");
}

/* realloc, or reallocarray (array), of whatever slot holds. */
static void realloc_slot(int slot, bool array, size_t count, size_t size)
{
	size_t total = size;
	enum expect e = array ? product_expect(count, size, &total)
			      : size_expect(size);
	if (e == EXPECT_SKIP)
		return;
	if (fz_blocks[slot].state == FZ_AWAY) {
		fz_worker_sync();
		collect();
	}
	struct fz_block old = fz_blocks[slot];
	bool live = old.state == FZ_LIVE;
	if (live)
		fz_verify_block(&old, old.usable, "before realloc");
	fz_call = array ? "tl_reallocarray" : "tl_realloc";
	TRACE("step %u: [%d] = %s(%p, %zu, %zu)\n", fz_step, slot, fz_call,
	      (void *)old.p, count, size);
	errno = FZ_ERRNO_MARK;
	void *p = array ? tl_reallocarray(old.p, count, size)
			: tl_realloc(old.p, size);
	int err = errno;
	if (live && total == 0 && e != EXPECT_FAIL) {
		/* glibc: realloc(p, 0) frees p and returns NULL */
		TRACE("  -> %p errno %d\n", p, err == FZ_ERRNO_MARK ? 0 : err);
		if (p != NULL)
			fz_fail("realloc(%p, 0) returned %p, not NULL",
				(void *)old.p, p);
		if (err != FZ_ERRNO_MARK)
			fz_fail("realloc(%p, 0) changed errno to %d",
				(void *)old.p, err);
		fz_model_remove(slot);
		return;
	}
	if (!outcome(p, err, e, ENOMEM)) {
		if (live)	/* a failed realloc leaves the block alone */
			fz_verify_block(&old, old.usable, "after failed realloc");
		return;
	}
	if (!live) {
		fz_model_add(slot, p, total, FZ_MIN_ALIGN, fz_call);
		return;
	}
	fz_model_remove(slot);
	fz_model_add_moved(slot, p, total, &old, fz_call);
}

static void op_realloc(struct reader *r)
{
	int slot = get_slot(r);
	realloc_slot(slot, false, 0, get8(r) % 8 == 0 ? 0 : pick_size(r));
}

static void op_reallocarray(struct reader *r)
{
	int slot = get_slot(r);
	size_t count, size;
	pick_calloc_args(r, &count, &size);
	realloc_slot(slot, true, count, size);
}

/* The aligned family: what each call accepts, and what it then aligns to. */
enum aligned_call { AL_ALIGNED_ALLOC, AL_POSIX_MEMALIGN, AL_MEMALIGN };

static bool power_of_two(size_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

static bool alignment_valid(enum aligned_call call, size_t align)
{
	if (call == AL_ALIGNED_ALLOC)
		return power_of_two(align);
	if (call == AL_POSIX_MEMALIGN)
		return power_of_two(align) && align >= sizeof(void *);
	return align <= ((size_t)1 << 63);
}

/* memalign rounds up to a power of two (as glibc does). */
static size_t effective_alignment(size_t align)
{
	if (align <= 1)
		return 1;
	if (power_of_two(align))
		return align;
	return (size_t)1 << (64 - __builtin_clzll(align - 1));
}

static enum expect aligned_expect(enum aligned_call call, size_t align,
				  size_t size)
{
	if (!alignment_valid(call, align))
		return EXPECT_FAIL;
	enum expect e = size_expect(size);
	if (e == EXPECT_OK && effective_alignment(align) >= HUGE_ALIGN)
		e = EXPECT_MAYBE;
	return e;
}

static void *call_aligned(enum aligned_call call, size_t align, size_t size,
			  int *err)
{
	void *p;
	errno = FZ_ERRNO_MARK;
	if (call == AL_ALIGNED_ALLOC) {
		p = tl_aligned_alloc(align, size);
	} else if (call == AL_MEMALIGN) {
		p = tl_memalign(align, size);
	} else {
		void *out = &p;	/* untouched on failure */
		int rc = tl_posix_memalign(&out, align, size);
		if (errno != FZ_ERRNO_MARK)
			fz_fail("tl_posix_memalign changed errno to %d", errno);
		if (rc != 0 && out != &p)
			fz_fail("tl_posix_memalign returned %d and wrote %p",
				rc, out);
		if (rc != 0 && rc != EINVAL && rc != ENOMEM)
			fz_fail("tl_posix_memalign returned %d", rc);
		*err = rc == 0 ? FZ_ERRNO_MARK : rc;
		return rc == 0 ? out : NULL;
	}
	*err = errno;
	return p;
}

static const char *const aligned_names[] = {
	"tl_aligned_alloc", "tl_posix_memalign", "tl_memalign",
};

static void op_aligned(struct reader *r, enum aligned_call call)
{
	int slot = get_slot(r);
	size_t align = pick_alignment(r);
	size_t size = pick_size(r);
	enum expect e = aligned_expect(call, align, size);
	int want = alignment_valid(call, align) ? ENOMEM : EINVAL;
	int err;
	if (e == EXPECT_SKIP)
		return;
	clear_slot(slot);
	fz_call = aligned_names[call];
	TRACE("step %u: [%d] = %s(%zu, %zu)\n", fz_step, slot, fz_call, align,
	      size);
	void *p = call_aligned(call, align, size, &err);
	if (outcome(p, err, e, want))
		fz_model_add(slot, p, size, effective_alignment(align),
			     fz_call);
}

static void op_valloc(struct reader *r, bool pvalloc)
{
	int slot = get_slot(r);
	size_t size = pick_size(r);
	size_t need = size;
	enum expect e = size_expect(size);
	if (pvalloc && e != EXPECT_FAIL)	/* whole pages, at least one */
		need = size == 0 ? page_size
				 : (size + page_size - 1) & ~(page_size - 1);
	if (e == EXPECT_SKIP)
		return;
	clear_slot(slot);
	fz_call = pvalloc ? "tl_pvalloc" : "tl_valloc";
	TRACE("step %u: [%d] = %s(%zu)\n", fz_step, slot, fz_call, size);
	errno = FZ_ERRNO_MARK;
	void *p = pvalloc ? tl_pvalloc(size) : tl_valloc(size);
	if (outcome(p, errno, e, ENOMEM))
		fz_model_add(slot, p, need, page_size, fz_call);
}

/* tl_free, tl_free_sized, tl_free_aligned_sized (of NULL, too). */
static void op_free(struct reader *r, int how)
{
	int slot = get_slot(r);
	struct fz_block *b = &fz_blocks[slot];
	static const char *const names[] = {
		"tl_free", "tl_free_sized", "tl_free_aligned_sized",
	};
	if (b->state == FZ_AWAY)
		return;
	/* free_sized is for malloc's blocks (C23), which the sized free
	 * checks: a block of the aligned family gives its alignment */
	if (how == 1 && b->align > FZ_MIN_ALIGN)
		how = 2;
	fz_call = names[how];
	TRACE("step %u: %s([%d] %p)\n", fz_step, fz_call, slot, (void *)b->p);
	if (b->state == FZ_LIVE)
		fz_verify_block(b, b->usable, "before free");
	errno = FZ_ERRNO_MARK;
	if (how == 0)
		tl_free(b->p);
	else if (how == 1 || b->align <= FZ_MIN_ALIGN)
		tl_free_sized(b->p, b->req);
	else	/* only for blocks of the aligned family */
		tl_free_aligned_sized(b->p, b->align, b->req);
	if (errno != FZ_ERRNO_MARK)
		fz_fail("changed errno to %d", errno);
	if (b->state == FZ_LIVE)
		fz_model_remove(slot);
}

static void op_usable(struct reader *r)
{
	const struct fz_block *b = &fz_blocks[get_slot(r)];
	fz_call = "tl_usable_size";
	if (b->state == FZ_AWAY)
		return;
	size_t u = tl_usable_size(b->p);
	TRACE("step %u: tl_usable_size(%p) = %zu\n", fz_step, (void *)b->p, u);
	if (b->state == FZ_EMPTY && u != 0)
		fz_fail("tl_usable_size(NULL) = %zu, not 0", u);
	if (b->state == FZ_LIVE && u != b->usable)
		fz_fail("tl_usable_size(%p) = %zu, was %zu when allocated "
			"(%zu asked)", (void *)b->p, u, b->usable, b->req);
	if (b->state != FZ_LIVE || u == 0)
		return;
	/* tl_object_size from a point inside it (from the step, so the
	 * program's bytes mean what they meant before this check) */
	fz_call = "tl_object_size";
	size_t off = (size_t)((fz_step * 2654435761u) % u);
	size_t o = tl_object_size((const char *)b->p + off);
	size_t of = tl_object_size_fast((const char *)b->p + off);
	TRACE("step %u: tl_object_size(%p + %zu) = %zu, fast %zu\n", fz_step,
	      (void *)b->p, off, o, of);
	if (o != u - off || of < o)
		fz_fail("tl_object_size(%p + %zu) = %zu (fast %zu), usable %zu",
			(void *)b->p, off, o, of, u);
}

/* Giving memory back must not touch a live block: verify them all. */
static void op_trim(void)
{
	fz_call = "tl_trim";
	TRACE("step %u: tl_trim()\n", fz_step);
	int rc = tl_trim();
	if (rc != 0 && rc != 1)
		fz_fail("returned %d", rc);
	for (int i = 0; i < FZ_SLOTS; i++)
		if (fz_blocks[i].state == FZ_LIVE)
			fz_verify_block(&fz_blocks[i], SIZE_MAX, "after trim");
}

/* Hand a block to the worker, which verifies and frees it. */
static void op_handoff(struct reader *r)
{
	int slot = get_slot(r);
	unsigned mode = get8(r);
	struct fz_block *b = &fz_blocks[slot];
	if (b->state != FZ_LIVE)
		return;
	fz_call = "hand to worker";
	TRACE("step %u: worker frees [%d] %p (mode %u)\n", fz_step, slot,
	      (void *)b->p, mode);
	b->state = FZ_AWAY;
	struct fz_job job = { .kind = FZ_JOB_FREE, .mode = (int)(mode & 3),
			      .slot = slot, .block = *b };
	fz_worker_submit(&job);
	if (mode & 0x80) {
		fz_worker_sync();
		collect();
	}
}

/* The worker allocates; the main thread uses and later frees the block. */
static void op_worker_alloc(struct reader *r)
{
	static const char *const names[] = {
		"worker tl_malloc", "worker tl_calloc",
		"worker tl_aligned_alloc(64)", "worker tl_realloc(NULL)",
	};
	int slot = get_slot(r);
	int mode = (int)(get8(r) % 4);
	size_t size = pick_size(r);
	enum expect e = size_expect(size);
	if (e == EXPECT_SKIP)
		return;
	clear_slot(slot);
	fz_call = names[mode];
	TRACE("step %u: [%d] = %s(%zu)\n", fz_step, slot, fz_call, size);
	struct fz_job job = { .kind = FZ_JOB_ALLOC, .mode = mode,
			      .size = size };
	fz_worker_wait(fz_worker_submit(&job), &job);
	if (!outcome(job.out, job.err, e, ENOMEM))
		return;
	if (mode == 1)
		fz_model_add_zeroed(slot, job.out, size, FZ_MIN_ALIGN, fz_call);
	else
		fz_model_add(slot, job.out, size,
			     mode == 2 ? 64 : FZ_MIN_ALIGN, fz_call);
}

static void op_options(struct reader *r)
{
	static const long delays[] = { 0, 1, 10 };
	unsigned k = get8(r) % 5;
	int rc;
	fz_call = "tl_option_set";
	if (k < 3) {
		TRACE("step %u: purge_delay = %ld\n", fz_step, delays[k]);
		rc = tl_option_set("purge_delay", delays[k]);
	} else if (k == 3) {
		TRACE("step %u: purge_delay = default\n", fz_step);
		rc = tl_option_set("purge_delay", purge_delay_default);
	} else {
		long n = 1 + get8(r) % 8;
		TRACE("step %u: fault_map = %ld\n", fz_step, n);
		rc = tl_option_set("fault_map", n);
	}
	if (rc != 0)
		fz_fail("returned %d", rc);
}

static void op_stats(void)
{
	struct tl_stats st;
	fz_call = "tl_stats_get";
	TRACE("step %u: tl_stats_get, tl_stats_json\n", fz_step);
	if (tl_stats_get(&st, sizeof(st)) != sizeof(st))
		fz_fail("did not fill the struct");
	if (st.version != TL_STATS_VERSION || st.class_count != CLASSES)
		fz_fail("version %u, %u classes", st.version, st.class_count);
	fz_call = "tl_stats_json";
	size_t n = tl_stats_json(NULL, 0);
	char *buf = malloc(n + 1);	/* the C library's */
	if (buf == NULL)
		return;
	/* a second snapshot: other threads may have changed a figure */
	size_t m = tl_stats_json(buf, n + 1);
	size_t len = strlen(buf);
	if (len != (m < n ? m : n) || len < 2 || buf[0] != '{' ||
	    (m <= n && buf[m - 1] != '}'))
		fz_fail("length %zu then %zu, text of %zu \"%.40s\"", n, m,
			len, buf);
	free(buf);
}

/*
 * Many blocks of one size at once, into the burst slots (after FZ_HAND),
 * round the ring from where the last burst stopped (freeing what is
 * there): enough blocks of a class to fill its pages, so pages go full,
 * come back, get swept and abandoned.
 */
static void op_burst_alloc(struct reader *r)
{
	static unsigned cursor;
	unsigned n = 1 + get16(r) % (FZ_SLOTS - FZ_HAND);
	bool zeroed = get8(r) & 1;
	size_t size = pick_size(r);
	enum expect e = size_expect(size);
	fz_call = zeroed ? "tl_calloc (burst)" : "tl_malloc (burst)";
	TRACE("step %u: %u x %s(%zu)\n", fz_step, n, fz_call, size);
	for (unsigned i = 0; i < n && e != EXPECT_SKIP; i++) {
		int slot = FZ_HAND + (int)(cursor++ % (FZ_SLOTS - FZ_HAND));
		clear_slot(slot);
		errno = FZ_ERRNO_MARK;
		void *p = zeroed ? tl_calloc(1, size) : tl_malloc(size);
		if (!outcome(p, errno, e, ENOMEM))
			break;
		if (zeroed)
			fz_model_add_zeroed(slot, p, size, FZ_MIN_ALIGN, fz_call);
		else
			fz_model_add(slot, p, size, FZ_MIN_ALIGN, fz_call);
		e = size_expect(size);
	}
}

/*
 * Free every stride-th live block of the burst slots, from phase: in this
 * thread, or handed to the worker (which frees them while this thread
 * goes on).
 */
static void op_burst_free(struct reader *r)
{
	unsigned stride = 1 + get8(r) % 8;
	unsigned phase = get8(r) % stride;
	unsigned mode = get8(r);
	bool away = mode & 1;
	fz_call = away ? "hand to worker (burst)" : "tl_free (burst)";
	TRACE("step %u: %s every %u from %u\n", fz_step, fz_call, stride,
	      phase);
	for (int i = FZ_HAND + (int)phase; i < FZ_SLOTS; i += (int)stride) {
		struct fz_block *b = &fz_blocks[i];
		if (b->state != FZ_LIVE)
			continue;
		if (!away) {
			free_block(i);
			continue;
		}
		b->state = FZ_AWAY;
		struct fz_job job = { .kind = FZ_JOB_FREE,
				      .mode = (int)(mode >> 1 & 3), .slot = i,
				      .block = *b };
		fz_worker_submit(&job);
	}
}

static void run_op(struct reader *r)
{
	unsigned op = get8(r) % 24;
	switch (op) {
	case 0: case 1: op_malloc(r); break;
	case 2: op_calloc(r); break;
	case 3: case 4: op_realloc(r); break;
	case 5: op_reallocarray(r); break;
	case 6: op_aligned(r, AL_ALIGNED_ALLOC); break;
	case 7: op_aligned(r, AL_POSIX_MEMALIGN); break;
	case 8: op_aligned(r, AL_MEMALIGN); break;
	case 9: op_valloc(r, false); break;
	case 10: op_valloc(r, true); break;
	case 11: case 12: op_free(r, 0); break;
	case 13: op_free(r, 1); break;
	case 14: op_free(r, 2); break;
	case 15: op_usable(r); break;
	case 16: op_trim(); break;
	case 17: case 18: op_handoff(r); break;
	case 19: op_worker_alloc(r); break;
	case 20:
		if (get8(r) % 4 == 0) {
			TRACE("step %u: restart worker\n", fz_step);
			fz_worker_restart();
		} else {
			op_options(r);
		}
		break;
	case 21: op_burst_alloc(r); break;
	case 22: op_burst_free(r); break;
	default: op_stats(); break;
	}
}

/* End of an input: every block verified and freed, options back. */
static void finish(void)
{
	fz_call = "end of input";
	fz_worker_sync();
	collect();
	for (int i = 0; i < FZ_SLOTS; i++)
		if (fz_blocks[i].state == FZ_LIVE)
			free_block(i);
	tl_option_set("fault_map", 0);
	tl_option_set("purge_delay", purge_delay_default);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *t = getenv("FUZZ_TLMALLOC_TRACE");
	trace = t != NULL && *t != '\0' && *t != '0';
	init_classes();
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	if (tl_option_get("purge_delay", &purge_delay_default) != 0)
		purge_delay_default = 100;
	fz_worker_start();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = { .p = data, .n = size };
	TRACE("input of %zu bytes\n", size);
	for (fz_step = 1; r.n > 0; fz_step++) {
		run_op(&r);
		collect();
		fz_model_check_all();
	}
	finish();
	return 0;
}
