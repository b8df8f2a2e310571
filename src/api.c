/*
 * api.c - the public entry points: the tl_ API of tlmalloc.h and, in the
 * same place, every C library name, as aliases of the tl_ functions (the
 * ThreadSanitizer build, TL_NO_OVERRIDE, leaves the aliases out).
 *
 * Argument checks and errno follow glibc: ENOMEM for sizes that cannot be
 * had (calloc and reallocarray check the multiplication), EINVAL for a bad
 * alignment, free(NULL) does nothing, and nothing but a failure sets errno.
 *
 * glibc's statistics calls (mallinfo2, mallinfo, malloc_stats,
 * malloc_info) report tl_stats_get's snapshot in glibc's terms: the arena
 * is what small and medium blocks hold, huge blocks are its "mmap" part.
 * They exist only against glibc, whose <malloc.h> declares them (musl has
 * none of them); every other name is built for every C library.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "tlmalloc.h"
#include "tlmalloc/fastpath.h"
#include "tlmalloc/guarded.h"
#include "tlmalloc/kept.h"
#include "tlmalloc/os.h"

#define TL_STR2(x) #x
#define TL_STR(x) TL_STR2(x)

const char *tl_version(void)
{
	return TL_STR(TLMALLOC_VERSION_MAJOR) "." TL_STR(TLMALLOC_VERSION_MINOR)
		"." TL_STR(TLMALLOC_VERSION_PATCH);
}

void *tl_malloc(size_t size)
{
	return tl_malloc_local(size);
}

void tl_free(void *ptr)
{
	tl_free_local(ptr);
}

void tl_free_sized(void *ptr, size_t size)
{
	tl_free_sized_local("free_sized", ptr, size);
}

void tl_free_aligned_sized(void *ptr, size_t alignment, size_t size)
{
#if TL_CHECKS
	tl_free_sized_slow("free_aligned_sized", ptr, size, alignment);
#else
	(void)alignment;
	(void)size;
	tl_free_local(ptr);
#endif
}

void *tl_calloc(size_t count, size_t size)
{
	return tl_calloc_impl(count, size);
}

void *tl_realloc(void *ptr, size_t size)
{
	return tl_realloc_impl(ptr, size);
}

void *tl_reallocarray(void *ptr, size_t count, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(count, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return tl_realloc_impl(ptr, total);
}

static bool is_power_of_two(size_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

void *tl_aligned_alloc(size_t alignment, size_t size)
{
	if (!is_power_of_two(alignment)) {
		errno = EINVAL;
		return NULL;
	}
	return tl_alloc_aligned(alignment, size);
}

int tl_posix_memalign(void **out, size_t alignment, size_t size)
{
	if (!is_power_of_two(alignment) || alignment < sizeof(void *))
		return EINVAL;
	int saved = errno;
	void *p = tl_alloc_aligned(alignment, size);
	errno = saved;
	if (p == NULL)
		return ENOMEM;
	*out = p;
	return 0;
}

void *tl_memalign(size_t alignment, size_t size)
{
	/* glibc rounds an alignment that is not a power of two up to one. */
	if (alignment > ((size_t)1 << (sizeof(size_t) * 8 - 1))) {
		errno = EINVAL;
		return NULL;
	}
	if (!is_power_of_two(alignment))
		alignment = alignment <= 1 ? 1
			  : (size_t)1 << (64 - __builtin_clzll(alignment - 1));
	return tl_alloc_aligned(alignment, size);
}

void *tl_valloc(size_t size)
{
	return tl_alloc_aligned(tl_os_page_size(), size);
}

void *tl_pvalloc(size_t size)
{
	size_t page = tl_os_page_size();
	if (size > SIZE_MAX - page) {
		errno = ENOMEM;
		return NULL;
	}
	size_t rounded = (size + page - 1) & ~(page - 1);
	return tl_alloc_aligned(page, rounded == 0 ? page : rounded);
}

size_t tl_usable_size(const void *ptr)
{
	if (ptr == NULL)
		return 0;
	if (!tl_segment_is_ours(ptr)) {
		if (tl_guarded_holds(ptr))
			return tl_guarded_usable("malloc_usable_size", ptr);
#if TL_SECURE
		if (tl_zero_holds(ptr)) {
			tl_zero_check("malloc_usable_size", ptr);
			return 0;
		}
#endif
		tl_fatal("malloc_usable_size", ptr, "not allocated by tlmalloc");
	}
	return tl_block_usable("malloc_usable_size", ptr);
}

/*
 * The segment and page of ptr for malloc_object_size: where the segment
 * map names ptr's segment, its page; else a huge segment whose mapping
 * holds ptr (a block past its first 4 MiB, or aligned to 4 MiB or more);
 * else none: a pointer tlmalloc does not manage, whose bound is unknown
 * (SIZE_MAX, as hardened_malloc says).
 */
static const tl_page *object_page(const void *ptr, const tl_segment **seg)
{
	if (tl_segment_is_ours(ptr)) {
		*seg = tl_segment_of(ptr);
		return tl_page_of(*seg, ptr);
	}
	*seg = tl_segment_holding(ptr);
	if (*seg == NULL || (*seg)->kind != TL_PAGE_HUGE)
		return NULL;
	return tl_segment_page(*seg, 0);
}

size_t tl_object_size(const void *ptr)
{
	static const char call[] = "malloc_object_size";
	if (ptr == NULL)
		return 0;
	if (tl_guarded_holds(ptr))
		return tl_guarded_object_size(call, ptr, true);
#if TL_SECURE
	if (tl_zero_holds(ptr)) {
		tl_zero_check(call, ptr);
		return 0;
	}
#endif
	const tl_segment *seg;
	const tl_page *page = object_page(ptr, &seg);
	return page != NULL ? tl_block_object_size(call, page, ptr) : SIZE_MAX;
}

size_t tl_object_size_fast(const void *ptr)
{
	if (ptr == NULL)
		return 0;
	if (tl_guarded_holds(ptr))
		return tl_guarded_object_size(NULL, ptr, false);
#if TL_SECURE
	if (tl_zero_holds(ptr))
		return 0;
#endif
	const tl_segment *seg;
	const tl_page *page = object_page(ptr, &seg);
	return page != NULL ? tl_block_object_size_fast(seg, page, ptr)
			    : SIZE_MAX;
}

int tl_trim(void)
{
	tl_heap *heap = tl_heap_local;
	if (tl_heap_is_thread_heap(heap)) {
		tl_kept_flush(heap);
		tl_heap_collect_all(heap, true);
	}
	tl_shared_collect(true);
	int purged = tl_pool_purge(true) ? 1 : 0;
	tl_purger_poll();
	return purged;
}

#ifndef TL_NO_OVERRIDE
/*
 * The C library's names.  Each is an alias of its tl_ function: no extra
 * call, one definition.
 */
#define TL_ALIAS(name, target) \
	extern __typeof__(target) name \
		__attribute__((alias(#target), visibility("default")))

void free_sized(void *ptr, size_t size);
void free_aligned_sized(void *ptr, size_t alignment, size_t size);
void cfree(void *ptr);
void *pvalloc(size_t size) TL_MALLOC_ATTR;
int malloc_trim(size_t pad);
size_t malloc_object_size(void *ptr);
size_t malloc_object_size_fast(void *ptr);

TL_ALIAS(malloc, tl_malloc);
TL_ALIAS(free, tl_free);
TL_ALIAS(cfree, tl_free);
TL_ALIAS(free_sized, tl_free_sized);
TL_ALIAS(free_aligned_sized, tl_free_aligned_sized);
TL_ALIAS(calloc, tl_calloc);
TL_ALIAS(realloc, tl_realloc);
TL_ALIAS(reallocarray, tl_reallocarray);
TL_ALIAS(aligned_alloc, tl_aligned_alloc);
TL_ALIAS(posix_memalign, tl_posix_memalign);
TL_ALIAS(memalign, tl_memalign);
TL_ALIAS(valloc, tl_valloc);
TL_ALIAS(pvalloc, tl_pvalloc);

#if defined(__GLIBC__)
/*
 * glibc's own entry points, which it exports beside the standard names: a
 * program or library that calls one by name (a tracing wrapper's "real"
 * malloc, code written for glibc's old hooks) would otherwise get a block
 * of glibc's heap, which tlmalloc's free refuses as not its own, or hand
 * one of tlmalloc's to glibc's free.  tcmalloc, mimalloc and rpmalloc take
 * them too.  musl has no such names (its internal __libc_malloc is its
 * own, left alone).
 */
void *__libc_malloc(size_t size) TL_MALLOC_ATTR;
void *__libc_calloc(size_t count, size_t size) TL_MALLOC_ATTR;
void *__libc_realloc(void *ptr, size_t size);
void __libc_free(void *ptr);
void *__libc_memalign(size_t alignment, size_t size) TL_MALLOC_ATTR;
void *__libc_valloc(size_t size) TL_MALLOC_ATTR;
void *__libc_pvalloc(size_t size) TL_MALLOC_ATTR;

TL_ALIAS(__libc_malloc, tl_malloc);
TL_ALIAS(__libc_calloc, tl_calloc);
TL_ALIAS(__libc_realloc, tl_realloc);
TL_ALIAS(__libc_free, tl_free);
TL_ALIAS(__libc_memalign, tl_memalign);
TL_ALIAS(__libc_valloc, tl_valloc);
TL_ALIAS(__libc_pvalloc, tl_pvalloc);
#endif

/* glibc declares it with a non-const pointer. */
TL_API size_t malloc_usable_size(void *ptr)
{
	return tl_usable_size(ptr);
}

/* hardened_malloc's names (non-const pointers, as its header has them). */
TL_API size_t malloc_object_size(void *ptr)
{
	return tl_object_size(ptr);
}

TL_API size_t malloc_object_size_fast(void *ptr)
{
	return tl_object_size_fast(ptr);
}

TL_API int malloc_trim(size_t pad)
{
	(void)pad;
	return tl_trim();
}

#if defined(__GLIBC__)
/* The arena: held and live bytes without the huge blocks (glibc's mmap). */
static void arena_of(const struct tl_stats *st, size_t *held, size_t *live)
{
	*held = st->held > st->huge_bytes ? st->held - st->huge_bytes : 0;
	*live = st->live > st->huge_bytes ? st->live - st->huge_bytes : 0;
	if (*live > *held)
		*live = *held;
}

TL_API struct mallinfo2 mallinfo2(void)
{
	struct tl_stats st;
	size_t held, live;
	tl_stats_get(&st, sizeof(st));
	arena_of(&st, &held, &live);
	return (struct mallinfo2){
		.arena = held,
		.ordblks = st.pages_free + st.pages_abandoned,
		.hblks = st.huge_blocks,
		.hblkhd = st.huge_bytes,
		.uordblks = live,
		.fordblks = held - live,
		.keepcost = 0,
	};
}

static int saturate(size_t v)
{
	return v > INT_MAX ? INT_MAX : (int)v;
}

TL_API struct mallinfo mallinfo(void)
{
	struct mallinfo2 m = mallinfo2();
	return (struct mallinfo){
		.arena = saturate(m.arena),
		.ordblks = saturate(m.ordblks),
		.hblks = saturate(m.hblks),
		.hblkhd = saturate(m.hblkhd),
		.uordblks = saturate(m.uordblks),
		.fordblks = saturate(m.fordblks),
		.keepcost = 0,
	};
}

/* glibc's layout: the arena, then everything with the huge blocks. */
TL_API void malloc_stats(void)
{
	struct tl_stats st;
	size_t held, live;
	tl_stats_get(&st, sizeof(st));
	arena_of(&st, &held, &live);
	fprintf(stderr, "Arena 0:\n"
			"system bytes     = %10zu\n"
			"in use bytes     = %10zu\n"
			"Total (incl. mmap):\n"
			"system bytes     = %10" PRIu64 "\n"
			"in use bytes     = %10" PRIu64 "\n"
			"max mmap regions = %10" PRIu64 "\n"
			"max mmap bytes   = %10" PRIu64 "\n",
		held, live, st.held, st.live, st.segments_peak,
		st.mapped_peak);
}

/* Free blocks by class: <size from to total count/> as glibc's bins. */
static void malloc_info_sizes(FILE *fp, const struct tl_stats *st)
{
	uint64_t from = 1;
	fputs("<sizes>\n", fp);
	for (unsigned i = 0; i < st->class_count; i++) {
		const struct tl_stats_class *c = &st->classes[i];
		uint64_t count = c->blocks_carved - c->blocks_live;
		if (count != 0)
			fprintf(fp, "  <size from=\"%" PRIu64 "\" to=\"%" PRIu64
				    "\" total=\"%" PRIu64 "\" count=\"%"
				    PRIu64 "\"/>\n", from, c->block_size,
				count * c->block_size, count);
		from = c->block_size + 1;
	}
	fputs("</sizes>\n", fp);
}

/*
 * The totals, as glibc writes them for its heap (the arena) and for the
 * whole (with the huge blocks, glibc's mmap part).
 */
static void malloc_info_totals(FILE *fp, const struct tl_stats *st,
			       bool whole)
{
	size_t held, live;
	uint64_t free_blocks = 0;
	arena_of(st, &held, &live);
	for (unsigned i = 0; i < st->class_count; i++)
		free_blocks += st->classes[i].blocks_carved -
			       st->classes[i].blocks_live;
	fprintf(fp, "<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
		    "<total type=\"rest\" count=\"%" PRIu64 "\" size=\"%zu\"/>\n",
		free_blocks, held - live);
	if (whole)
		fprintf(fp, "<total type=\"mmap\" count=\"%" PRIu64
			    "\" size=\"%" PRIu64 "\"/>\n",
			st->huge_blocks, st->huge_bytes);
	fprintf(fp, "<system type=\"current\" size=\"%" PRIu64 "\"/>\n"
		    "<system type=\"max\" size=\"%" PRIu64 "\"/>\n"
		    "<aspace type=\"total\" size=\"%" PRIu64 "\"/>\n"
		    "<aspace type=\"mprotect\" size=\"%" PRIu64 "\"/>\n",
		whole ? st->held : (uint64_t)held, st->mapped_peak,
		st->mapped, st->mapped);
}

TL_API int malloc_info(int options, FILE *fp)
{
	struct tl_stats st;
	if (options != 0 || fp == NULL)
		return EINVAL;
	tl_stats_get(&st, sizeof(st));
	fputs("<malloc version=\"1\">\n<heap nr=\"0\">\n", fp);
	malloc_info_sizes(fp, &st);
	malloc_info_totals(fp, &st, false);
	fputs("</heap>\n", fp);
	malloc_info_totals(fp, &st, true);
	fputs("</malloc>\n", fp);
	return 0;
}
#endif /* __GLIBC__ */
#endif /* TL_NO_OVERRIDE */
