/*
 * fuzz.h - what the parts of the tlmalloc fuzz harness share: the model of
 * live blocks (fuzz_model.c), the worker thread that frees and allocates
 * blocks handed to it (fuzz_worker.c), and the program interpreter that
 * libFuzzer calls (fuzz_ops.c).
 *
 * The harness links the allocator built with TL_NO_OVERRIDE: the code under
 * test is reached through the tl_ names only, and the fuzzer's own
 * allocations (and this harness's bookkeeping) stay with the C library.
 */
#ifndef TL_FUZZ_H
#define TL_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FZ_SLOTS 1024			/* blocks the model tracks at once */
#define FZ_HAND 256			/* slots single operations name */
#define FZ_LIVE_CAP ((size_t)64 << 20)	/* most usable bytes live at once */
#define FZ_MIN_ALIGN 16			/* every block tlmalloc returns */
#define FZ_ERRNO_MARK 4242		/* errno before every call */

enum fz_state {
	FZ_EMPTY,	/* no block */
	FZ_LIVE,	/* the main thread's to use */
	FZ_AWAY,	/* handed to the worker; it frees it */
};

struct fz_block {
	uint8_t *p;
	size_t req;	/* bytes asked for */
	size_t usable;	/* tl_usable_size when made: the pattern's extent */
	size_t align;	/* alignment it must have */
	uint64_t tag;	/* selects its pattern */
	enum fz_state state;
	const char *how;	/* the call that made it */
};

extern struct fz_block fz_blocks[FZ_SLOTS];
extern size_t fz_live_bytes;

/* Context for failure messages: the step and call being checked. */
extern unsigned fz_step;
extern const char *fz_call;

/* Print "CHECK FAILED" with the context and the message, then trap. */
void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2),
						  noreturn));

/* ---- patterns (a pure function of tag and offset) ---- */
enum fz_probe_mode { FZ_FILL, FZ_VERIFY, FZ_ZERO };

/*
 * Apply mode to the probe set of a len-byte block (every byte up to
 * 256 KiB; above, 4 KiB at each end and 8 bytes in every 64 KiB), clipped
 * to [0, limit).  Returns the first offset that does not match, or
 * SIZE_MAX.
 */
size_t fz_probe(uint8_t *p, size_t len, size_t limit, uint64_t tag,
		enum fz_probe_mode mode);
uint8_t fz_pattern_byte(uint64_t tag, size_t off);

/* Verify a block's whole probe set (limit bytes of it); fail if broken. */
void fz_verify_block(const struct fz_block *b, size_t limit,
		     const char *where);

/* ---- the model ---- */
/*
 * Check a new block (alignment to max(align, 16), usable size >= req, no
 * overlap with any block the model holds), fill it with a new pattern and
 * record it in slot, which must be empty.
 */
void fz_model_add(int slot, void *p, size_t req, size_t align,
		  const char *how);
/* The same, and the block must read as zero first (calloc). */
void fz_model_add_zeroed(int slot, void *p, size_t req, size_t align,
			 const char *how);
/* The same for realloc's result: it must hold prev's first min(old, new)
 * bytes; it keeps prev's pattern. */
void fz_model_add_moved(int slot, void *p, size_t req,
			const struct fz_block *prev, const char *how);
/* Forget slot's block (after the allocator freed or moved it). */
void fz_model_remove(int slot);
/* Per-step checks of every live block: edges of its pattern intact. */
void fz_model_check_all(void);
/* Blocks the worker has freed since the last call leave the model. */
void fz_model_collect_away(void);
/* Would a block of size bytes stay under FZ_LIVE_CAP? */
bool fz_model_fits(size_t size);

/* ---- the worker thread ---- */
enum fz_job_kind { FZ_JOB_FREE, FZ_JOB_ALLOC, FZ_JOB_EXIT };

struct fz_job {
	enum fz_job_kind kind;
	int mode;		/* which call: see fuzz_worker.c */
	int slot;
	struct fz_block block;	/* FREE: the block to verify and free */
	size_t size;		/* ALLOC: bytes */
	void *out;		/* ALLOC: the result */
	int err;		/* ALLOC: errno after the call */
};

void fz_worker_start(void);
/* Queue a job; returns its ticket. */
unsigned fz_worker_submit(const struct fz_job *job);
/* Wait until the job with ticket is done and copy it to *job. */
void fz_worker_wait(unsigned ticket, struct fz_job *job);
/* Wait until every queued job is done. */
void fz_worker_sync(void);
/* Finished FREE jobs since the last call: their slots, into slots[]. */
int fz_worker_done_frees(int *slots, int max);
/* Stop the worker (its heap goes away) and start a new one. */
void fz_worker_restart(void);

#endif /* TL_FUZZ_H */
