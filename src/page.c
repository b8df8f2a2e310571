/*
 * page.c - the blocks inside one page: formatting for a size class, carving
 * fresh blocks lazily, and collecting the frees.
 *
 * A page has three free lists ("sharded"): free, which malloc pops;
 * local_free, which the owner's free pushes; thread_free, which other
 * threads push with one CAS.  When free runs dry the owner takes what the
 * other two hold (other threads' frees first: tl_page_collect_head).
 * Fresh blocks are carved at most a few KiB at a time, so a page touches
 * its memory only as it is used.  Owner only, except thread_free.
 *
 * fork: the child counts the pages of the parent's other threads (abandoned.c,
 * "orphaned"), whose last update may have been cut in the middle by the
 * fork.  So every update here that takes more than one store is ordered to
 * leave, if cut, blocks that no list reaches (a leak in that child), never
 * a block on two lists or past the carved part: a list is detached from
 * its old place before it is linked into its new one, and capacity grows
 * before fresh blocks are linked.  tl_fork_order() keeps the compiler from
 * moving the stores across, and on arm64 the CPU from making them visible
 * out of that order.
 *
 * Every link stored in a block goes through tl_link_encode/tl_link_decode
 * (internal.h), and every free block carries its free mark (fresh ones
 * too).  The secure build also gives each formatted page a new secret and
 * carves fresh blocks in a random order.
 */
#include "tlmalloc/internal.h"
#include "tlmalloc/os.h"

tl_atomic_u64 tl_remote_frees;
tl_atomic_u64 tl_class_allocs[TL_CLASSES];

void tl_page_retire_counts(tl_page *page)
{
	uint64_t n = __atomic_load_n(&page->allocs, __ATOMIC_RELAXED);
	if (n == 0 || page->size_class == 0)
		return;
	tl_u64_add_relaxed(&tl_class_allocs[page->size_class], n);
	__atomic_store_n(&page->allocs, 0, __ATOMIC_RELAXED);
}

/*
 * Carve at most this many bytes of fresh blocks at a time (an OS page),
 * and one block at least: a block above 1 KiB is carved alone or with one
 * or two others.  Carving writes each block's link and mark, so every
 * block carved is an OS page touched for blocks of 4 KiB and up; four at
 * a time (as before) left a thread that holds one or two blocks of each
 * larger class with three OS pages a class it never used
 * (docs/measurements.md, "Larger blocks carved one at a time").
 */
#define TL_EXTEND_BYTES 4096
#define TL_EXTEND_MIN_BLOCKS 1

void tl_page_format(tl_page *page, unsigned cls)
{
	tl_assert(cls > 0 && cls < TL_CLASSES && page->slice_offset == 0);
	tl_segment *seg = tl_segment_of(page->start);
	size_t area;
	tl_page_area(seg, page, &area);
	tl_page_retire_counts(page);
	page->size_class = (uint8_t)cls;
#if !TL_SECURE
	__atomic_store_n(&page->kept_class, (uint8_t)cls, __ATOMIC_RELAXED);
#endif
	__atomic_store_n(&page->block_size, tl_class_size[cls], __ATOMIC_RELAXED);
	page->reserved = (uint32_t)(area / page->block_size);
	page->slice_magic = tl_slice_magic(page->block_size);
	page->div_magic = UINT64_MAX / page->block_size + 1;
	__atomic_store_n(&page->sized_min, tl_class_min(cls), __ATOMIC_RELAXED);
	__atomic_store_n(&page->purged, 0, __ATOMIC_RELAXED);
#if TL_SECURE
	tl_secure_page_init(page);
#endif
	tl_page_set_capacity(page, 0);
	tl_page_set_avail(page, 0);
	page->uncounted = 0;
	page->free = NULL;
	page->local_free = NULL;
	tl_uptr_store_relaxed(&page->thread_free, 0);
}

#if TL_SECURE
/* The per-process secret the page keys are drawn from (0: not yet). */
static uintptr_t process_secret;

/* splitmix64's finaliser: every input bit moves every output bit. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uintptr_t secret(void)
{
	uintptr_t s = __atomic_load_n(&process_secret, __ATOMIC_RELAXED);
	if (tl_likely(s != 0))
		return s;
	tl_os_random(&s, sizeof(s));
	s |= 1;
	/* Two threads may race here: either value is as good. */
	__atomic_store_n(&process_secret, s, __ATOMIC_RELAXED);
	return s;
}

/* A page keeps its key while formatted; the next format chains a new one,
 * so blocks freed under an old key do not carry a valid mark. */
void tl_secure_page_init(tl_page *page)
{
	page->key = (uintptr_t)mix64(page->key ^ secret() ^ (uintptr_t)page);
}

static uint64_t xorshift64(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

#define TL_EXTEND_MAX_BLOCKS (TL_EXTEND_BYTES / TL_MIN_ALIGN)

/* Link n fresh blocks from first in a random order in front of free. */
static void carve(tl_page *page, uint8_t *first, uint32_t n)
{
	uint16_t order[TL_EXTEND_MAX_BLOCKS];
	uint64_t state = mix64(page->key + page->capacity) | 1;
	size_t bs = page->block_size;
	for (uint32_t i = 0; i < n; i++)
		order[i] = (uint16_t)i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(xorshift64(&state) % (i + 1));
		uint16_t t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	tl_block *next = page->free;
	for (uint32_t i = n; i-- > 0;) {
		tl_block *b = (tl_block *)(first + order[i] * bs);
		b->next = tl_link_encode(page, b, next);
		b->mark = tl_free_mark(page, b) ^ TL_SECURE_UNFILLED;
		tl_secure_fill_tail(page, b);
		next = b;
	}
	page->free = next;
}
#else
/* Link n fresh blocks from first, in address order, in front of free. */
static void carve(tl_page *page, uint8_t *first, uint32_t n)
{
	size_t bs = page->block_size;
	uint8_t *p = first;
	for (uint32_t i = 1; i < n; i++, p += bs) {
		((tl_block *)p)->next = (tl_block *)(p + bs);
#if TL_CHECKS
		((tl_block *)p)->mark = tl_free_mark(page, p);
#endif
	}
	((tl_block *)p)->next = page->free;
#if TL_CHECKS
	((tl_block *)p)->mark = tl_free_mark(page, p);
#endif
	page->free = (tl_block *)first;
}
#endif

bool tl_page_extend(tl_page *page)
{
	uint32_t left = page->reserved - page->capacity;
	if (left == 0)
		return false;
	uint32_t n = TL_EXTEND_BYTES / page->block_size;
	if (n < TL_EXTEND_MIN_BLOCKS)
		n = TL_EXTEND_MIN_BLOCKS;
	if (n > left)
		n = left;
	uint8_t *first = page->start + (size_t)page->capacity * page->block_size;
	tl_page_set_capacity(page, page->capacity + n);
	tl_fork_order();
	carve(page, first, n);
	tl_page_set_avail(page, page->avail + n);
	return true;
}

/*
 * Put a list in front of free; returns its length.  A page never has more
 * free blocks than it carved: a longer list loops, which only a double
 * free makes, and is reported instead of walked forever.
 */
static uint32_t splice_into_free(tl_page *page, tl_block *list)
{
	uint32_t n = 1;
	tl_block *last = list, *next;
	while ((next = tl_link_decode(page, last, last->next)) != NULL) {
		last = next;
		if (tl_unlikely(++n > page->capacity))
			tl_fatal("free", list, "a page's free list loops "
					       "(double free)");
	}
	last->next = tl_link_encode(page, last, page->free);
	page->free = list;
	return n;
}

/*
 * Other threads' frees first: into an empty free list they go as they are,
 * their count read from the thread_free word (exact: a page has fewer
 * than 2^16 blocks), with no walk.  The walk would take a cache miss a
 * block, one after the other, in blocks last written on another core;
 * malloc's pops read them anyway, spread over the allocations.  Behind
 * other blocks they are spliced (a walk to the list's end), as the
 * owner's own frees always are (their memory is the owner's cache's).
 */
void tl_page_collect(tl_page *page)
{
	if (tl_uptr_load_relaxed(&page->thread_free) != 0) {
		uintptr_t w = tl_uptr_exchange_acquire(&page->thread_free, 0);
		uint32_t n;
		if (page->free == NULL && page->reserved < TL_REMOTE_COUNT_MAX) {
			n = tl_remote_count(w);
			tl_fork_order();
			page->free = tl_remote_list(w);
		} else {
			n = splice_into_free(page, tl_remote_list(w));
		}
		tl_page_set_avail(page, page->avail + n);
		tl_u64_add_relaxed(&tl_remote_frees, n);
	}
	tl_block *local = page->local_free;
	if (local != NULL) {
		page->local_free = NULL;
		tl_fork_order();
		tl_page_set_avail(page, page->avail + splice_into_free(page, local));
	}
}

/*
 * Other threads' frees first, into free, where local_free stays: malloc
 * pops local_free (the owner's latest frees) before free all the same, and
 * the head then has both lists to hand out before it runs dry again.  A
 * page that becomes the head with frees of both kinds waiting (`server`:
 * a quarter of its frees another thread's) took the owner's alone before,
 * and came back here as soon as they were used.
 */
bool tl_page_collect_head(tl_page *page)
{
	if (tl_uptr_load_relaxed(&page->thread_free) != 0) {
		uintptr_t w = tl_uptr_exchange_acquire(&page->thread_free, 0);
		page->free = tl_remote_list(w);
		tl_u64_add_relaxed(&tl_remote_frees, tl_remote_count(w));
		return true;
	}
	tl_block *local = page->local_free;
	if (local == NULL)
		return false;
	page->local_free = NULL;
	tl_fork_order();
	page->free = local;
	return true;
}

void tl_page_purge_free(tl_page *page)
{
	size_t ps = tl_os_page_size();
	size_t bs = page->block_size;
	size_t purged = 0;
	for (tl_block *b = page->free; b != NULL;
	     b = tl_link_decode(page, b, b->next)) {
		uintptr_t lo = ((uintptr_t)b + sizeof(tl_block) + ps - 1) &
			       ~(uintptr_t)(ps - 1);
		uintptr_t end = (uintptr_t)b + bs;
#if TL_SECURE	/* the fill's tail stays (tl_secure_fill_tail) */
		if (tl_secure_tailed(bs))
			end -= TL_SECURE_TAIL;
#endif
		uintptr_t hi = end & ~(uintptr_t)(ps - 1);
		if (hi > lo) {
			tl_os_purge((void *)lo, hi - lo);
			purged += hi - lo;
#if TL_SECURE
			b->mark = tl_free_mark(page, b) ^ TL_SECURE_UNFILLED;
#endif
		}
	}
	__atomic_store_n(&page->purged, (uint32_t)purged, __ATOMIC_RELAXED);
}

static size_t list_length(const tl_page *page, const tl_block *b)
{
	size_t n = 0;
	for (; b != NULL; b = tl_link_decode(page, b, b->next))
		n++;
	return n;
}

void tl_page_count_avail(tl_page *page)
{
	tl_page_set_avail(page, (uint32_t)list_length(page, page->free));
}

#if TL_DEBUG > 0
/* Most blocks a page can hold: a small page of 16-byte blocks. */
#define TL_PAGE_MAX_BLOCKS (TL_SLICE_SIZE / TL_MIN_ALIGN)

/* Which list a block was met on, by tl_page_check's walk (0: none yet). */
enum { ON_FREE = 1, ON_LOCAL, ON_THREAD };

/*
 * Walk one free list of page, marking each block in seen with list;
 * returns what is wrong, or NULL.  A block met twice on the same list is
 * a loop; met on another list, a block on two lists.
 */
static const char *check_list(const tl_page *page, const tl_block *b,
			      uint8_t list, uint8_t *seen, uint32_t *count)
{
	*count = 0;
	for (; b != NULL; b = tl_link_decode(page, b, b->next)) {
		if (!tl_block_in_page(page, b))
			return "a free list leaves the carved part";
		size_t i = (size_t)((const uint8_t *)b - page->start) /
			   page->block_size;
		if (seen[i] == list)
			return "a free list loops";
		if (seen[i] != 0)
			return "a block is on two free lists";
		seen[i] = list;
		(*count)++;
#if TL_CHECKS
		if (!tl_block_marked(page, b))
			return "a free block lacks its free mark";
#endif
	}
	return NULL;
}

static const char *page_broken(const tl_page *page, uintptr_t owner,
			       bool counted)
{
	if (tl_uptr_load_relaxed(&page->owner) != owner)
		return "owner word is not its list's";
	if (page->slice_offset != 0)
		return "a follower slice in a page list";
	unsigned cls = page->size_class;
	if (cls == 0 || cls >= TL_CLASSES)
		return "a listed page without a size class";
	uint8_t kind = (uint8_t)tl_class_kind(cls);
	size_t area;
	tl_page_area(tl_segment_of(page->start), page, &area);
	uint32_t bs = page->block_size;
	if (page->kind != kind || bs != tl_class_size[cls] ||
	    page->reserved != area / bs ||
	    page->slice_magic != tl_slice_magic(bs) ||
	    page->div_magic != UINT64_MAX / bs + 1)
		return "format disagrees with its size class";
	if (page->capacity > page->reserved ||
	    page->reserved > TL_PAGE_MAX_BLOCKS)
		return "capacity beyond the page";
	if (page->avail > page->capacity)
		return "avail beyond capacity";

	uint8_t seen[TL_PAGE_MAX_BLOCKS] = { 0 };
	uint32_t nfree, nlocal, nthread;
	const char *bad;
	if ((bad = check_list(page, page->free, ON_FREE, seen, &nfree)) ||
	    (bad = check_list(page, page->local_free, ON_LOCAL, seen, &nlocal)))
		return bad;
	uintptr_t w = tl_uptr_load_acquire(&page->thread_free);
	if ((bad = check_list(page, tl_remote_list(w), ON_THREAD, seen,
			      &nthread)))
		return bad;
	/* the count wraps at 2^16 (tl_remote_count) */
	if ((nthread & 0xffff) != tl_remote_count(w))
		return "thread_free's count is not its list's length";
	if (counted && page->avail != nfree)
		return "avail is not the length of free";
	if ((owner & TL_OWNER_FULL) && (nfree != 0 || nlocal != 0))
		return "a page flagged full has free blocks";
	return NULL;
}

bool tl_page_check(const tl_page *page, uintptr_t owner, bool counted)
{
	const char *bad = page_broken(page, owner, counted);
	if (bad != NULL)
		tl_fatal("tl_page_check", page, bad);
	return true;
}
#endif
