/*
 * segment.c - segments: TL_SEGMENT_SIZE-aligned mappings and the page
 * geometry inside them.
 *
 * A small segment is cut into 64 KiB pages, a medium one into 1 MiB pages;
 * the first TL_SEGMENT_HEADER bytes hold the header, so page 0 starts after
 * it (a small segment's page 0 is empty and never used).  A huge segment
 * holds one block, at the offset its alignment asks for.  Each page is
 * described by the descriptor of its first 64 KiB slice; the descriptors of
 * its other slices point back to it (followers).
 *
 * A bitmap with one bit per TL_SEGMENT_SIZE of address space says which
 * segment starts are live: tl_segment_is_ours() answers whether a pointer is
 * tlmalloc's without touching the memory it points to.  Set before a segment
 * is handed out, cleared before it is unmapped.
 *
 * The secure build puts guard pages (no access) between the descriptors
 * and the first page, over the last OS page of each segment (the last
 * page's area ends before it), and after the block of a huge segment.
 */
#define _GNU_SOURCE	/* dl_iterate_phdr */
#include <link.h>
#include <string.h>

#include "tlmalloc/internal.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"

tl_atomic_u64 tl_segment_map[TL_MAP_WORDS];

static void map_bit(const tl_segment *seg, size_t *word, uint64_t *bit)
{
	uintptr_t n = (uintptr_t)seg >> TL_SEGMENT_SHIFT;
	*word = (n >> 6) & (TL_MAP_WORDS - 1);
	*bit = (uint64_t)1 << (n & 63);
}

static void map_set(const tl_segment *seg, bool on)
{
	size_t word;
	uint64_t bit;
	map_bit(seg, &word, &bit);
	if (on)
		tl_u64_or_relaxed(&tl_segment_map[word], bit);
	else
		tl_u64_and_relaxed(&tl_segment_map[word], ~bit);
}

/* The largest mapping a huge segment has had: no segment start further
 * below a pointer than this can hold it (tl_segment_holding). */
static tl_atomic_u64 huge_map_max;

void tl_segment_huge_sized(size_t map_size)
{
	tl_u64_max_relaxed(&huge_map_max, map_size);
}

tl_segment *tl_segment_holding(const void *p)
{
	uint64_t reach = tl_u64_load_relaxed(&huge_map_max);
	if ((uintptr_t)p >> TL_ADDRESS_BITS || reach == 0)
		return NULL;
	uintptr_t n = (uintptr_t)p >> TL_SEGMENT_SHIFT;
	uintptr_t low = (uintptr_t)p > reach
				? ((uintptr_t)p - reach) >> TL_SEGMENT_SHIFT : 0;
	size_t word = n >> 6;
	unsigned bit = (unsigned)(n & 63);
	uint64_t w = tl_u64_load_relaxed(&tl_segment_map[word]) &
		     (bit == 63 ? ~(uint64_t)0 : ((uint64_t)2 << bit) - 1);
	while (w == 0) {
		if (word == 0 || ((uintptr_t)word << 6) <= low)
			return NULL;
		w = tl_u64_load_relaxed(&tl_segment_map[--word]);
	}
	uintptr_t start = (((uintptr_t)word << 6) |
			   (uintptr_t)(63 - __builtin_clzll(w)))
			  << TL_SEGMENT_SHIFT;
	if ((uintptr_t)p - start >= reach)
		return NULL;	/* no huge segment reaches that far */
	const tl_segment *seg = (const tl_segment *)start;
	if ((uintptr_t)p - start >= seg->map_size)
		return NULL;
	return (tl_segment *)start;
}

uint8_t *tl_page_area(const tl_segment *seg, const tl_page *page, size_t *size)
{
	size_t slice = (size_t)(page - seg->slices);
	size_t begin = slice << TL_SLICE_SHIFT;
	size_t end = begin + ((size_t)1 << seg->page_shift);
	if (begin < TL_SEGMENT_HEADER)
		begin = TL_SEGMENT_HEADER;
#if TL_SECURE
	if (end == TL_SEGMENT_SIZE)
		end -= tl_os_page_size();	/* the segment's guard page */
#endif
	*size = end > begin ? end - begin : 0;
	return (uint8_t *)seg + begin;
}

/* Every slice that is not a page's first points back to that one. */
static void set_followers(tl_segment *seg)
{
	size_t per_page = (size_t)1 << (seg->page_shift - TL_SLICE_SHIFT);
	for (size_t s = 0; s < TL_SLICES; s++) {
		size_t offset = s % per_page;
		if (offset == 0)
			continue;
		seg->slices[s].slice_offset = (uint8_t)offset;
		tl_uptr_store_relaxed(&seg->slices[s].owner, TL_OWNER_FOLLOWER);
	}
}

#if TL_SECURE
/* Guard the header's unused tail (up to the first page; none with OS
 * pages of 64 KiB, where the header fills its page) and the segment's
 * last OS page; false if the OS refuses. */
static bool guard_segment(tl_segment *seg)
{
	size_t ps = tl_os_page_size();
	size_t header = (sizeof(tl_segment) + ps - 1) & ~(ps - 1);
	uint8_t *base = (uint8_t *)seg;
	if (header < TL_SEGMENT_HEADER &&
	    !tl_os_guard(base + header, TL_SEGMENT_HEADER - header))
		return false;
	return tl_os_guard(base + TL_SEGMENT_SIZE - ps, ps);
}
#endif

/*
 * The option huge_pages: 1 advises the mappings of huge blocks to be backed
 * by transparent huge pages, 2 those of every segment too (design.md,
 * "Huge pages").  A huge block's mapping gets huge pages only on the
 * aligned 2 MiB ranges it holds whole, which its program mostly writes
 * whole; a segment's pages are a thread's partly used pages of each class,
 * where a huge page is resident whole for a few of its blocks.
 */
static void advise_huge(void *p, size_t size, long level)
{
	if (p != NULL && tl_option(TL_OPT_huge_pages) >= level)
		tl_os_advise_huge(p, size);
}

tl_segment *tl_segment_create(enum tl_page_kind kind)
{
	tl_segment *seg = tl_os_map_aligned(TL_SEGMENT_SIZE, TL_SEGMENT_SIZE, 0);
	if (seg == NULL)
		return NULL;
	advise_huge(seg, TL_SEGMENT_SIZE, 2);
#if TL_SECURE
	if (!guard_segment(seg)) {
		tl_os_unmap(seg, TL_SEGMENT_SIZE);
		return NULL;
	}
#endif
	seg->map_size = TL_SEGMENT_SIZE;
	seg->kind = kind;
	seg->page_shift = kind == TL_PAGE_SMALL ? TL_SMALL_PAGE_SHIFT
						: TL_MEDIUM_PAGE_SHIFT;
	seg->page_count = (uint32_t)(TL_SEGMENT_SIZE >> seg->page_shift);
	for (uint32_t i = 0; i < seg->page_count; i++) {
		tl_page *page = tl_segment_page(seg, i);
		size_t size;
		page->kind = (uint8_t)kind;
		page->start = tl_page_area(seg, page, &size);
	}
	set_followers(seg);
	map_set(seg, true);
	return seg;
}

/*
 * Mapping boundaries of huge segments.  Pages moved with mremap between
 * segments split the OS mappings they leave and enter: a huge segment cut
 * (tl_segment_split_huge), moved (tl_segment_move_huge) or filled with the
 * pages of others (tl_segment_take_tail) spans several mappings.  Each
 * keeps the offsets where two may meet (its cuts), at most TL_HUGE_CUTS,
 * and the process at most TL_HUGE_CUTS_ALL in all, so the kernel's limit
 * on a process's mappings (65530 by default) stays far: a move that would
 * pass either is refused, and the caller takes fresh memory instead.  The
 * kernel merges some mappings again; the cuts are an upper bound.
 */
#define TL_HUGE_CUTS_ALL 512
static tl_atomic_u64 cuts_all;

/* Cuts of seg strictly between lo and hi. */
static uint32_t cuts_between(const tl_segment *seg, size_t lo, size_t hi)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < seg->cut_count; i++)
		n += seg->cuts[i] > lo && seg->cuts[i] < hi;
	return n;
}

/* Whether a segment may hold cuts, and the process more of them. */
static bool cuts_room(uint32_t cuts, uint32_t more)
{
	return cuts <= TL_HUGE_CUTS &&
	       tl_u64_load_relaxed(&cuts_all) + more <= TL_HUGE_CUTS_ALL;
}

/* One more cut, at off (the caller knows it is new). */
static void cut_push(tl_segment *seg, size_t off)
{
	tl_assert(seg->cut_count < TL_HUGE_CUTS);
	seg->cuts[seg->cut_count++] = off;
	tl_u64_add_relaxed(&cuts_all, 1);
}

/* A cut at off, unless it is there already or at an end of the mapping. */
static void cut_add(tl_segment *seg, size_t off)
{
	if (off == 0 || off >= seg->map_size)
		return;
	for (uint32_t i = 0; i < seg->cut_count; i++)
		if (seg->cuts[i] == off)
			return;
	cut_push(seg, off);
}

/* The cuts of from strictly between lo and hi, at offset at - lo in to. */
static void cuts_copy(tl_segment *to, const tl_segment *from, size_t lo,
		      size_t hi, size_t at)
{
	for (uint32_t i = 0; i < from->cut_count; i++)
		if (from->cuts[i] > lo && from->cuts[i] < hi)
			cut_add(to, from->cuts[i] - lo + at);
}

/* Drop the cuts of seg at or past off (its mapping ends there now). */
static void cuts_drop_from(tl_segment *seg, size_t off)
{
	uint32_t kept = 0;
	for (uint32_t i = 0; i < seg->cut_count; i++)
		if (seg->cuts[i] < off)
			seg->cuts[kept++] = seg->cuts[i];
	tl_u64_sub_relaxed(&cuts_all, seg->cut_count - kept);
	seg->cut_count = kept;
}

/* Where the block of a huge segment starts, for an alignment. */
static size_t huge_offset(size_t alignment)
{
	if (alignment <= TL_SEGMENT_HEADER)
		return TL_SEGMENT_HEADER;
	if (alignment <= TL_SEGMENT_SIZE)
		return alignment;
	return TL_SEGMENT_SIZE;
}

/* Lay a huge segment over a mapping of map_size bytes, its one block at
 * offset, and mark it live in the bitmap. */
static void huge_init(tl_segment *seg, size_t map_size, size_t offset)
{
	tl_segment_huge_sized(map_size);
	seg->map_size = map_size;
	seg->kind = TL_PAGE_HUGE;
	seg->page_shift = TL_SEGMENT_SHIFT;
	seg->page_count = 1;
	seg->used_pages = 1;
	tl_page *hp = &seg->slices[0];
	hp->kind = TL_PAGE_HUGE;
	hp->start = (uint8_t *)seg + offset;
	hp->capacity = hp->reserved = 1;
	tl_uptr_store_relaxed(&hp->owner, TL_OWNER_HUGE);
	seg->cut_count = 0;
	set_followers(seg);
	map_set(seg, true);
}

size_t tl_segment_huge_map_size(size_t offset, size_t size)
{
	size_t page = tl_os_page_size();
	return ((offset + size + page - 1) & ~(page - 1)) + TL_HUGE_GUARD;
}

tl_segment *tl_segment_create_huge(size_t size, size_t alignment)
{
	size_t offset = huge_offset(alignment);
	if (size == 0)
		size = 1;	/* the block must lie inside its mapping */
	if (size > PTRDIFF_MAX - offset - TL_SEGMENT_SIZE - alignment -
		   TL_HUGE_GUARD)
		return NULL;
	size_t map_size = tl_segment_huge_map_size(offset, size);
	tl_segment *seg;
	if (alignment > TL_SEGMENT_SIZE)
		seg = tl_os_map_aligned(map_size, alignment, offset);
	else
		seg = tl_os_map_aligned(map_size, TL_SEGMENT_SIZE, 0);
	if (seg == NULL)
		return NULL;
	advise_huge(seg, map_size, 1);
#if TL_SECURE
	if (!tl_os_guard((uint8_t *)seg + map_size - TL_HUGE_GUARD,
			 TL_HUGE_GUARD)) {
		tl_os_unmap(seg, map_size);
		return NULL;
	}
#endif
	huge_init(seg, map_size, offset);
	return seg;
}

tl_segment *tl_segment_split_huge(tl_segment *seg, size_t keep)
{
	tl_assert(TL_HUGE_GUARD == 0 && keep < seg->map_size &&
		  keep % tl_os_page_size() == 0);
	size_t tail = seg->map_size - keep;
	if (!cuts_room(1 + cuts_between(seg, keep, seg->map_size), 1))
		return NULL;
	tl_segment *rest = tl_os_map_aligned(TL_SEGMENT_HEADER + tail,
					     TL_SEGMENT_SIZE, 0);
	if (rest == NULL)
		return NULL;
	if (!tl_os_move_pages((uint8_t *)seg + keep, tail,
			      (uint8_t *)rest + TL_SEGMENT_HEADER)) {
		tl_os_unmap(rest, TL_SEGMENT_HEADER + tail);
		return NULL;
	}
	huge_init(rest, TL_SEGMENT_HEADER + tail, TL_SEGMENT_HEADER);
	cut_add(rest, TL_SEGMENT_HEADER);
	cuts_copy(rest, seg, keep, seg->map_size, TL_SEGMENT_HEADER);
	cuts_drop_from(seg, keep);
	return rest;
}

tl_segment *tl_segment_move_huge(tl_segment *seg, size_t map_size)
{
	tl_assert(seg->slices[0].start == (uint8_t *)seg + TL_SEGMENT_HEADER &&
		  map_size > seg->map_size);
	if (!cuts_room(seg->cut_count + 2, 2))
		return NULL;
	tl_segment *to = tl_os_map_aligned(map_size, TL_SEGMENT_SIZE, 0);
	if (to == NULL)
		return NULL;
	advise_huge(to, map_size, 1);	/* the pages moved in keep theirs */
	if (!tl_os_move_pages((uint8_t *)seg + TL_SEGMENT_HEADER,
			      seg->map_size - TL_SEGMENT_HEADER,
			      (uint8_t *)to + TL_SEGMENT_HEADER)) {
		tl_os_unmap(to, map_size);
		return NULL;
	}
	/* What the new header takes over, before the old one is unmapped. */
	uint8_t dirty = seg->slices[0].dirty;
	size_t old_size = seg->map_size, cuts[TL_HUGE_CUTS];
	uint32_t cut_count = seg->cut_count;
	memcpy(cuts, seg->cuts, sizeof(cuts));
	map_set(seg, false);
	cuts_drop_from(seg, 0);
	tl_os_unmap(seg, TL_SEGMENT_HEADER);
	huge_init(to, map_size, TL_SEGMENT_HEADER);
	to->slices[0].dirty = dirty;
	cut_add(to, TL_SEGMENT_HEADER);
	for (uint32_t i = 0; i < cut_count; i++)
		cut_add(to, cuts[i]);
	cut_add(to, old_size);
	return to;
}

bool tl_segment_take_tail(tl_segment *seg, size_t end, tl_segment *from,
			  size_t n)
{
	size_t at = from->map_size - n;
	tl_assert(n % tl_os_page_size() == 0 && at >= TL_SEGMENT_HEADER &&
		  end >= TL_SEGMENT_HEADER + n && end <= seg->map_size);
	uint32_t moved = cuts_between(from, at, from->map_size);
	/* half the cuts at most: the rest for the block's growth later */
	if (!cuts_room(seg->cut_count + 2 + moved + TL_HUGE_CUTS / 2, 2) ||
	    !tl_os_move_pages((uint8_t *)from + at, n, (uint8_t *)seg + end - n))
		return false;
	cut_add(seg, end - n);
	cut_add(seg, end);
	cuts_copy(seg, from, at, from->map_size, end - n);
	cuts_drop_from(from, at);
	return true;
}

bool tl_segment_resize_huge(tl_segment *seg, size_t map_size)
{
	size_t old = seg->map_size;
	if (map_size < old) {
		tl_os_unmap((uint8_t *)seg + map_size, old - map_size);
		cuts_drop_from(seg, map_size);
		return true;
	}
	if (tl_os_remap_in_place(seg, old, map_size))
		return true;
	/* Several mappings, which mremap cannot grow as one: the last grows
	 * (it begins at the last cut, or earlier where the kernel merged
	 * some), else fresh pages are mapped after it. */
	size_t last = 0;
	for (uint32_t i = 0; i < seg->cut_count; i++)
		if (seg->cuts[i] > last)
			last = seg->cuts[i];
	if (last != 0 && tl_os_remap_in_place((uint8_t *)seg + last,
					      old - last, map_size - last))
		return true;
	if (!cuts_room(seg->cut_count + 1, 1) ||
	    !tl_os_map_at((uint8_t *)seg + old, map_size - old))
		return false;
	advise_huge((uint8_t *)seg + old, map_size - old, 1);
	cut_push(seg, old);	/* at the mapping's end still: not cut_add */
	return true;
}

void tl_segment_cut_back(tl_segment *seg, size_t map_size)
{
	tl_assert(seg->kind == TL_PAGE_HUGE && map_size > TL_SEGMENT_HEADER &&
		  map_size < seg->map_size);
	cuts_drop_from(seg, map_size);
	seg->map_size = map_size;
}

void tl_segment_forget(tl_segment *seg)
{
	map_set(seg, false);
}

void tl_segment_remember(tl_segment *seg)
{
	map_set(seg, true);
}

void tl_segment_unmap(tl_segment *seg)
{
	cuts_drop_from(seg, 0);
	map_set(seg, false);
	tl_os_unmap(seg, seg->map_size);
}

bool tl_segment_retire(tl_segment *seg)
{
	cuts_drop_from(seg, 0);
	map_set(seg, false);
	if (tl_os_reserve(seg, seg->map_size))
		return true;
	tl_os_unmap(seg, seg->map_size);
	return false;
}

/*
 * free(p) reads the descriptor at p's 4 MiB-aligned base before anything
 * else (the fast path: one load, then the owner compare).  For a pointer
 * tlmalloc never returned, that base may be unmapped, and the load faults:
 * a static array's or a string literal's, in the executable or a library
 * mapped above an empty 4 MiB boundary.  At start-up, each loaded object's
 * bases get a read-only page of zeros where nothing is mapped, so such a
 * free reads owner 0, takes the slow path and is reported (tl_free_slow:
 * "not allocated by tlmalloc").  Objects loaded later (dlopen) are not
 * covered.  Cost: one mapping of 8 KiB of address space per object and 4
 * MiB boundary, never touched but by such a free.
 */
static int shadow_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || ph->p_memsz == 0)
			continue;
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		uintptr_t end = start + ph->p_memsz;
		/* free(p) looks at the base of p - 1 (tl_segment_of) */
		uintptr_t base = (start - 1) & ~(uintptr_t)TL_SEGMENT_MASK;
		for (; base < end; base += TL_SEGMENT_SIZE)
			tl_os_map_shadow(base, sizeof(((tl_segment *)0)->slices));
	}
	return 0;
}

void tl_segment_shadow_objects(void)
{
	dl_iterate_phdr(shadow_object, NULL);
}
