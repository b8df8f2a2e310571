/*
 * fastpath.h - the inline fast paths of malloc and free, and what they are
 * made of.
 *
 * The fast paths take no lock and do no atomic read-modify-write: malloc
 * pops the first block of the heap's page for the size, free pushes a block
 * on its page's local list when the caller's heap owns the page.  Anything
 * else (empty list, other owner, full page, large block, a failed check)
 * goes to one noinline generic function (alloc.c, free.c).
 *
 *   tl_malloc_local   the calling thread's malloc: the direct table in TLS,
 *                     pop local_free (the latest frees), else free;
 *                     else tl_malloc_slow
 *   tl_free_local     the calling thread's free: segment and slice of p by
 *                     mask and shift, owner word against the thread
 *                     pointer, the checks, push on local_free; else
 *                     tl_free_slow.  In x86-64 asm by default (TL_FREE_ASM),
 *                     each asm step preceded by its C meaning
 *   tl_heap_malloc,   the same for a heap given by pointer (the lock
 *   tl_heap_free      baseline's shared heap, ts.c)
 *
 * How many instructions each takes is measured, not written here: the
 * disassembly of the built libraries, counted by test/fastpath against
 * test/fastpath/budget.txt (the one place those numbers live).
 *
 * Included by the files that run a fast path or one of its steps: api.c,
 * alloc.c, free.c, new_delete.c (the sized free), fault.c (the probe), ts.c,
 * profile.c (the sampled allocation).
 */
#ifndef TLMALLOC_FASTPATH_H
#define TLMALLOC_FASTPATH_H

#include "tlmalloc/internal.h"

/*
 * owner is written by other threads (atomically) only to values that are
 * never the reader's heap, so the fast path may read it plainly and compare
 * in one instruction; ThreadSanitizer builds read it atomically.
 */
static inline uintptr_t tl_page_owner_fast(const tl_page *page)
{
#if defined(__SANITIZE_THREAD__)
	return tl_uptr_load_relaxed(&page->owner);
#else
	return *(const uintptr_t *)&page->owner;
#endif
}

/*
 * Free's first read at a pointer's would-be descriptor, the owner word, is
 * a probe: the instruction's address goes into the section tl_free_probes
 * (as an offset from the entry, so the section needs no relocation) and
 * the pointer is in a fixed register while it runs (rdi on x86-64, x0 on
 * arm64).  A fault there is a free of a pointer whose 4 MiB-aligned base
 * is unmapped, which fault.c reports.  On other machines, and under
 * ThreadSanitizer, the read is plain and such a free is a SIGSEGV.
 *
 * The section is marked retained ("R", SHF_GNU_RETAIN) where the assembler
 * knows the flag (TL_SECTION_RETAIN, cmake/platform.cmake): nothing refers
 * to it but fault.c's __start_/__stop_ symbols, which keep no section
 * under lld's --gc-sections (its -z start-stop-gc, zig's default), so a
 * static link there would drop it and fail on those symbols.
 */
#if (defined(__x86_64__) || defined(__aarch64__)) && defined(__GNUC__) && \
	!defined(__SANITIZE_THREAD__)
#define TL_FREE_PROBES 1
#if !defined(TL_SECTION_RETAIN) || TL_SECTION_RETAIN
#define TL_FREE_PROBE_FLAGS "\"aR\""
#else
#define TL_FREE_PROBE_FLAGS "\"a\""
#endif
#define TL_FREE_PROBE_RECORD \
		".pushsection tl_free_probes," TL_FREE_PROBE_FLAGS "\n\t" \
		".balign 4\n\t" \
		".long 1b - .\n\t" \
		".popsection\n\t"
#else
#define TL_FREE_PROBES 0
#endif

/* page's owner word, read as free's probe of p (see above). */
static inline uintptr_t tl_page_owner_probe(const tl_page *page, const void *p)
{
#if TL_FREE_PROBES && defined(__x86_64__)
	uintptr_t owner;
	__asm__("1:\n\t"
		"mov %1, %0\n\t"
		TL_FREE_PROBE_RECORD
		: "=r"(owner)
		: "m"(*(const uintptr_t *)&page->owner), "D"(p));
	return owner;
#elif TL_FREE_PROBES
	/* arm64: the same load, with p held in x0. */
	uintptr_t owner;
	register const void *x0 __asm__("x0") = p;
	__asm__("1:\n\t"
		"ldr %0, %1\n\t"
		TL_FREE_PROBE_RECORD
		: "=r"(owner)
		: "m"(*(const uintptr_t *)&page->owner), "r"(x0));
	return owner;
#else
	(void)p;
	return tl_page_owner_fast(page);
#endif
}

/* block, the head of page->free, leaves it for malloc: the one pop of
 * every malloc path.  The next block is fetched for writing now: free's
 * blocks are the page's old ones or other threads' frees, rarely in this
 * core's cache (design.md, "Fast paths", point 5); a NULL one is a
 * harmless prefetch. */
static inline void tl_page_take_head(tl_page *page, tl_block *block)
{
	tl_block *next = tl_link_decode(page, block, block->next);
	page->free = next;
	__builtin_prefetch(next, 1);
	tl_block_taken(page, block);
}

/* The same for the first block of local_free, the owner's latest free:
 * malloc takes it before free's, while it is still in the cache. */
static inline void tl_page_take_local(tl_page *page, tl_block *block)
{
	page->local_free = tl_link_decode(page, block, block->next);
	tl_block_taken(page, block);
}

static inline tl_block *tl_page_pop(tl_page *page)
{
	tl_block *block = page->free;
	if (tl_likely(block != NULL)) {
		tl_page_take_head(page, block);
	}
	return block;
}

#if TL_SECURE
/* The secure build's tl_heap_malloc and tl_malloc_local (below) add the
 * canary's tail around these, their inner versions (canary.c). */
#define tl_heap_malloc tl_heap_malloc_inner
#define tl_malloc_local tl_malloc_local_inner
#endif

static inline void *tl_heap_malloc(tl_heap *heap, size_t size)
{
	if (tl_likely(size <= TL_DIRECT_MAX)) {
		tl_block *block = tl_page_pop(heap->direct[(size + 15) >> 4]);
		if (tl_likely(block != NULL))
			return block;
	}
	return tl_malloc_generic(heap, size);
}

/* A heap's malloc of size bytes as the generic path counts them, for the
 * heaps it hands a request to (the shared heap, the profiler's): the
 * secure build's tail is in size already, so this is the inner version
 * there (defined here, where tl_heap_malloc names it in every build). */
static inline void *tl_heap_malloc_counted(tl_heap *heap, size_t size)
{
	return tl_heap_malloc(heap, size);
}

/*
 * Pop a block of a heap's current page for its size: the owner's latest
 * free first (local_free), else free; NULL when both are empty
 * (tl_malloc_local below does the same for the direct table's sizes).
 */
static inline tl_block *tl_page_pop_recent(tl_page *page)
{
	tl_block *block = page->local_free;
	if (tl_likely(block != NULL)) {
		tl_page_take_local(page, block);
		return block;
	}
	return tl_page_pop(page);
}

/*
 * The calling thread's malloc: its direct table sits in TLS.  The page's
 * latest frees come first (local_free, still in the cache), then free, so
 * a hot page cycles without leaving the inline path.
 */
static inline void *tl_malloc_local(size_t size)
{
	if (tl_likely(size <= TL_DIRECT_MAX)) {
		tl_block *block =
			tl_page_pop_recent(tl_direct_local[(size + 15) >> 4]);
		if (tl_likely(block != NULL))
			return block;
	}
	return tl_malloc_slow(size);
}

#if TL_SECURE
#undef tl_heap_malloc
#undef tl_malloc_local
/* The block the thread freed last, checked again before its next malloc
 * (option secure_recheck, quarantine.c). */
static inline void tl_malloc_recheck(void)
{
	tl_heap *local = tl_heap_local;
	if (tl_unlikely(local->quarantine_newest != NULL))
		tl_quarantine_recheck(local, "malloc");
}

static inline void *tl_heap_malloc(tl_heap *heap, size_t size)
{
	tl_malloc_recheck();
	size_t tail = tl_canary_tail();
	if (tail == 0)
		return tl_heap_malloc_inner(heap, size);
	return tl_canary_set(tl_heap_malloc_inner(heap, tl_canary_ask(size, tail)),
			     size, tail);
}

/* The secure build's malloc of size bytes with its canary, if any. */
static inline void *tl_malloc_canary(size_t size)
{
	tl_malloc_recheck();
	size_t tail = tl_canary_tail();
	if (tail == 0)
		return tl_malloc_local_inner(size);
	return tl_canary_set(tl_malloc_local_inner(tl_canary_ask(size, tail)),
			     size, tail);
}

/* ... and a malloc of 0 bytes gets a zero-size block (zero_size.c). */
static inline void *tl_malloc_local(size_t size)
{
	if (tl_unlikely(size == 0))
		return tl_zero_malloc();
	return tl_malloc_canary(size);
}
#endif

/*
 * Whether a block freed into a page passes the fast path's checks: it
 * starts a carved block (its offset in its slice, which is the page's
 * first, is a multiple of the block size below the carved part:
 * tl_page.slice_magic and limit, the page's slice_limit) and does not
 * carry the free mark.  Only for a block in its page's first slice (the
 * owner's fast path reaches no other).  The secure build checks every free
 * in full (free.c), the fast variant none.
 */
static inline bool tl_free_checks_pass(const tl_page *page,
				       const tl_block *block, uintptr_t mark,
				       uint32_t limit)
{
	if (TL_SECURE)
		return false;
	if (!TL_CHECKS)
		return true;
	uint32_t off = (uint32_t)(uintptr_t)block & (uint32_t)(TL_SLICE_SIZE - 1);
	return tl_slice_offset_starts(off, page->slice_magic, limit) &&
	       block->mark != mark;
}

/* The same in the owner's free: slice_limit is the owner's to write, so
 * its plain read is no race (another thread's free reads it relaxed). */
static inline bool tl_free_fast_ok(const tl_page *page, const tl_block *block,
				   uintptr_t mark)
{
	return tl_free_checks_pass(page, block, mark, page->slice_limit);
}

/* Push a checked block on the local_free of a page the caller owns. */
static inline void tl_page_push_local(tl_page *page, tl_block *block,
				      uintptr_t mark)
{
	block->next = tl_link_encode(page, block, page->local_free);
	if (TL_CHECKS)
		block->mark = mark;
	tl_fork_order();
	page->local_free = block;
}

static inline void tl_heap_free(tl_heap *heap, void *p)
{
	if (tl_unlikely(p == NULL))
		return;
	tl_page *page = tl_slice_of(tl_segment_of(p), p);
	if (tl_likely(tl_page_owner_probe(page, p) == heap->id)) {
		uintptr_t mark = tl_free_mark(page, p);
		if (tl_likely(tl_free_fast_ok(page, p, mark))) {
			tl_page_push_local(page, p, mark);
			return;
		}
	}
	tl_free_generic(heap, page, p);
}

/*
 * The calling thread's free: compares with the thread pointer.  NULL needs
 * no test of its own: (NULL - 1) rounded down to a segment is negative, as
 * is every address outside user space, and the sign falls out of the mask.
 * Then the two checks of tl_free_fast_ok; anything else (another owner, a
 * flag, a failed check) goes to the generic path, which decides.
 *
 * TL_FREE_ASM: the same steps written out in x86-64 asm (1), or the C
 * version only (0).  Compilers put the slice's address in a register of
 * its own, an instruction more than addressing segment + index each time
 * (test/fastpath/budget.txt has both counts).  The C version is the
 * definition: the ThreadSanitizer build, the secure build and other
 * machines use it, and libtlmalloc-cfree, which the test suite runs the
 * contract and misuse tests against.  The CMake option TLMALLOC_ASM_FREE
 * (ON) builds the default library with the asm.
 */
#if defined(__x86_64__) && defined(__GNUC__) && \
	!defined(__SANITIZE_THREAD__) && !TL_SECURE
#define TL_FREE_ASM_POSSIBLE 1
#else
#define TL_FREE_ASM_POSSIBLE 0
#endif
#ifndef TL_FREE_ASM
#define TL_FREE_ASM TL_FREE_ASM_POSSIBLE
#endif
#if TL_FREE_ASM && !TL_FREE_ASM_POSSIBLE
#error "TL_FREE_ASM=1 needs x86-64, GCC or clang, no TSan, no TL_SECURE"
#endif

#if TL_FREE_ASM
#if TL_CHECKS
/*
 * tl_free_fast_ok(page, block, seg), then the mark kept for the push:
 *
 *	off = (uint16_t)(uintptr_t)p;			offset in its slice
 *	if (off * page->slice_magic >= page->slice_limit)	(32 bits)
 *		goto slow;				not a carved block's start
 *	if (block->mark == (uintptr_t)seg)
 *		goto slow;				marked free already
 */
#define TL_FREE_CHECKS_X86 \
		"movzwl %w[p], %%ecx\n\t" \
		"imul %c[magic](%%rax,%%rdx), %%ecx\n\t" \
		"cmp %c[limit](%%rax,%%rdx), %%ecx\n\t" \
		"jae %l[slow]\n\t" \
		"cmp %%rax, 8(%[p])\n\t" \
		"je %l[slow]\n\t"
/*	block->mark = (uintptr_t)seg;			tl_free_mark */
#define TL_FREE_MARK_X86 \
		"mov %%rax, 8(%[p])\n\t"
#else
#define TL_FREE_CHECKS_X86
#define TL_FREE_MARK_X86
#endif
/*
 * Free's steps up to the owner's test (rax: seg, rdx: the slice's offset
 * in seg->slices, rcx: scratch):
 *
 *	seg = tl_segment_of(p);
 *	if ((intptr_t)seg < 0) goto slow;		NULL, not user space
 *	slice = (p >> 16) % 64 * sizeof(tl_page);
 *	page = (tl_page *)((char *)seg->slices + slice);	tl_slice_of
 *	if (page->owner != tl_thread_id()) goto slow;	the read is the probe
 */
#define TL_FREE_HEAD_X86 \
		"lea -1(%[p]), %%rax\n\t" \
		"and %[segmask], %%rax\n\t" \
		"js %l[slow]\n\t" \
		"mov %[p], %%rdx\n\t" \
		"shr %[shift], %%rdx\n\t" \
		"and %[index], %%edx\n\t" \
		"1:\n\t" \
		"mov %c[owner](%%rax,%%rdx), %%rcx\n\t" \
		TL_FREE_PROBE_RECORD \
		"cmp %%rcx, %%fs:0\n\t" \
		"jne %l[slow]\n\t"
/*
 * Then the checks, and the push (tl_page_push_local):
 *
 *	block->next = page->local_free;
 *	block->mark = (uintptr_t)seg;			TL_CHECKS
 *	page->local_free = block;
 */
#define TL_FREE_TAIL_X86 \
		TL_FREE_CHECKS_X86 \
		"mov %c[local](%%rax,%%rdx), %%rcx\n\t" \
		"mov %%rcx, (%[p])\n\t" \
		TL_FREE_MARK_X86 \
		"mov %[p], %c[local](%%rax,%%rdx)"
#define TL_FREE_OPERANDS_X86 \
		  [segmask] "i"(~(intptr_t)TL_SEGMENT_MASK), \
		  [shift] "i"(TL_SLICE_SHIFT - TL_PAGE_DESC_SHIFT), \
		  [index] "i"((TL_SLICES - 1) << TL_PAGE_DESC_SHIFT), \
		  [owner] "i"(offsetof(tl_segment, slices) + \
			      offsetof(tl_page, owner)), \
		  [magic] "i"(offsetof(tl_segment, slices) + \
			      offsetof(tl_page, slice_magic)), \
		  [limit] "i"(offsetof(tl_segment, slices) + \
			      offsetof(tl_page, slice_limit)), \
		  [local] "i"(offsetof(tl_segment, slices) + \
			      offsetof(tl_page, local_free))

static inline void tl_free_local(void *p)
{
	__asm__ goto(
		TL_FREE_HEAD_X86
		TL_FREE_TAIL_X86
		:
		: [p] "D"(p), TL_FREE_OPERANDS_X86
		: "rax", "rcx", "rdx", "memory", "cc"
		: slow);
	return;
slow:
	tl_free_slow(p);
}

#if TL_CHECKS
/*
 * The sized free (below), written out the same way: free's steps with
 * tl_page_holds_size between the owner's test and the checks:
 *
 *	if (size > page->block_size) goto slow;		larger than the block
 *	if (size < page->sized_min) goto slow;		of a smaller class
 */
static inline void tl_free_sized_local(const char *call, void *p, size_t size)
{
	__asm__ goto(
		TL_FREE_HEAD_X86
		"mov %c[bsize](%%rax,%%rdx), %%ecx\n\t"
		"cmp %%rcx, %[size]\n\t"
		"ja %l[slow]\n\t"
		"mov %c[smin](%%rax,%%rdx), %%ecx\n\t"
		"cmp %%rcx, %[size]\n\t"
		"jb %l[slow]\n\t"
		TL_FREE_TAIL_X86
		:
		: [p] "D"(p), [size] "S"(size), TL_FREE_OPERANDS_X86,
		  [bsize] "i"(offsetof(tl_segment, slices) +
			      offsetof(tl_page, block_size)),
		  [smin] "i"(offsetof(tl_segment, slices) +
			     offsetof(tl_page, sized_min))
		: "rax", "rcx", "rdx", "memory", "cc"
		: slow);
	return;
slow:
	tl_free_sized_slow(call, p, size, 0);
}
#define TL_FREE_SIZED_WRITTEN_OUT 1
#endif
#else
static inline void tl_free_local(void *p)
{
	tl_segment *seg = tl_segment_of(p);
	if (tl_unlikely((intptr_t)seg < 0)) {
		tl_free_slow(p);
		return;
	}
	tl_page *page = tl_slice_of(seg, p);
	if (tl_likely(tl_page_owner_probe(page, p) == tl_thread_id())) {
		uintptr_t mark = tl_free_mark(page, p);
		if (tl_likely(tl_free_fast_ok(page, p, mark)))
			tl_page_push_local(page, p, mark);
		else
			tl_free_owned(page, p);
		return;
	}
	tl_free_slow(p);
}
#endif

/*
 * The calling thread's sized free; call names it in a report.  The fast
 * path is free's (tl_free_local's C version) with one more test: the page
 * holds blocks asked for with size bytes (tl_page_holds_size).  Anything
 * else, including another owner's page, goes to the full check
 * (tl_free_sized_slow), then to free.
 */
#ifndef TL_FREE_SIZED_WRITTEN_OUT
static inline void tl_free_sized_local(const char *call, void *p, size_t size)
{
#if TL_SECURE
	/* the full check: it knows the size a block was asked for (canary.c) */
	tl_free_sized_slow(call, p, size, 0);
#elif TL_CHECKS
	tl_segment *seg = tl_segment_of(p);
	if (tl_likely((intptr_t)seg >= 0)) {
		tl_page *page = tl_slice_of(seg, p);
		if (tl_likely(tl_page_owner_probe(page, p) == tl_thread_id() &&
			      tl_page_holds_size(page, size))) {
			uintptr_t mark = tl_free_mark(page, p);
			if (tl_likely(tl_free_fast_ok(page, p, mark)))
				tl_page_push_local(page, p, mark);
			else
				tl_free_owned(page, p);
			return;
		}
	}
	tl_free_sized_slow(call, p, size, 0);
#else
	(void)call;
	(void)size;
	tl_free_local(p);
#endif
}
#endif

#endif /* TLMALLOC_FASTPATH_H */
