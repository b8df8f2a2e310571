/*
 * stats.c - what tlmalloc holds and does: the snapshot of tl_stats_get, its
 * JSON form (tl_stats_json), and the same printed for a person
 * (tl_stats_print, and at exit with the show_stats option).
 *
 * The figures come from the pool: tl_pool_stats_get (below) takes the pool
 * lock (pool.h) and walks every segment and page: memory mapped, held and
 * live, what purges gave back, threads, the pool lock, and per size class
 * the pages and blocks.  It reads the counters of pages other heaps own
 * relaxed, as a snapshot.  The calling thread's heap is counted first, so
 * its own figures are exact.
 * Nothing here allocates: the text is made by a formatter of its own into
 * the caller's buffer or onto the stack and written with write(2), so it
 * works at exit and from any state.
 */
#include <string.h>

#include "tlmalloc.h"
#include "tlmalloc/internal.h"
#include "tlmalloc/kept.h"
#include "tlmalloc/os.h"
#include "tlmalloc/guarded.h"
#include "tlmalloc/pool.h"
#include "tlmalloc/profile.h"

_Static_assert(TL_STATS_CLASSES == TL_CLASSES - 1,
	       "one entry of tl_stats.classes per size class");

/* ---- the pool walk ---- */

/*
 * Bytes held and bytes live, page by page: a snapshot that reads other
 * heaps' counters (relaxed).  Held: what has been touched and not given
 * back - the blocks carved of owned pages (less what an abandoned page
 * gave back inside its free blocks), dirty free pages, segment headers,
 * huge blocks, heap structs; never-touched or purged memory is not held.
 * Live: carved blocks not counted free; frees not yet collected count as
 * live, a queue head's uncounted pops do not (see tl_page).
 */
static void stats_huge_locked(struct tl_pool_stats *out, const tl_segment *seg)
{
	out->held += seg->map_size;
	if (seg->used_pages == 0) {
		out->huge_cached += seg->map_size;	/* cached: not live */
		return;
	}
	out->live += seg->map_size;
	out->huge_blocks++;
	out->huge_bytes += seg->map_size;
}

/* A page some heap owns, abandoned, or cached empty by its heap. */
static void stats_page_locked(struct tl_pool_stats *out, const tl_page *page)
{
	uintptr_t owner = tl_uptr_load_acquire(&page->owner);
	/* frees from other threads its owner has not collected yet */
	out->remote_frees +=
		tl_remote_count(tl_uptr_load_relaxed(&page->thread_free));
	size_t cap = __atomic_load_n(&page->capacity, __ATOMIC_RELAXED);
	size_t avail = __atomic_load_n(&page->avail, __ATOMIC_RELAXED);
	size_t bs = __atomic_load_n(&page->block_size, __ATOMIC_RELAXED);
	out->held += cap * bs;
	if (owner == TL_OWNER_FREE || bs == 0 || bs > TL_MEDIUM_MAX)
		return;
	if (owner == TL_OWNER_ABANDONED) {
		out->pages_abandoned++;
		size_t purged = __atomic_load_n(&page->purged,
						__ATOMIC_RELAXED);
		out->held -= purged < cap * bs ? purged : cap * bs;
	}
	/* block_size, not size_class: the owner stores it atomically. */
	struct tl_pool_class_stats *c = &out->classes[tl_size_to_class(bs)];
	c->allocs += __atomic_load_n(&page->allocs, __ATOMIC_RELAXED);
	c->pages++;
	c->carved += cap;
	if (cap > avail) {
		out->live += (cap - avail) * bs;
		c->live += cap - avail;
	}
}

static void stats_walk_locked(struct tl_pool_stats *out)
{
	size_t page_size = tl_os_page_size();
	size_t header = (sizeof(tl_segment) + page_size - 1) & ~(page_size - 1);
	for (const tl_segment *seg = tl_pool.segments; seg != NULL;
	     seg = seg->next) {
		out->segments++;
		if (seg->kind == TL_PAGE_HUGE) {
			stats_huge_locked(out, seg);
			continue;
		}
		out->held += header;
		for (uint32_t i = 0; i < seg->page_count; i++) {
			const tl_page *page = tl_segment_page(seg, i);
			if (!page->in_pool) {
				stats_page_locked(out, page);
				continue;
			}
			out->pages_free++;
			if (page->dirty)
				out->held += tl_page_area_size(page);
		}
	}
}

void tl_pool_stats_get(struct tl_pool_stats *out)
{
	*out = (struct tl_pool_stats){ 0 };
	tl_lock_acquire(&tl_pool.lock);
	out->mapped = tl_pool.mapped;
	out->mapped_peak = tl_pool.mapped_peak;
	out->segments_peak = tl_pool.segments_peak;
	out->remote_frees = tl_u64_load_relaxed(&tl_remote_frees);
	out->purged = tl_pool.purged;
	out->segments_unmapped = tl_pool.unmapped;
	out->threads_seen = tl_pool.threads_seen;
	out->threads_live = tl_pool.heaps_live;
	out->pages_given_away = tl_pool.given_away;
	out->lock_acquired = tl_pool.lock.acquired;
	out->lock_waited = tl_u64_load_relaxed(&tl_pool.lock.waited);
	out->held = tl_pool.heaps_made * sizeof(tl_heap);
	for (unsigned cls = 1; cls < TL_CLASSES; cls++)
		out->classes[cls].allocs =
			tl_u64_load_relaxed(&tl_class_allocs[cls]);
	tl_pool_count_abandoned_locked();	/* exact counts to read */
	stats_walk_locked(out);
	tl_lock_release(&tl_pool.lock);
}

/* ---- the snapshot ---- */

static void copy_classes(struct tl_stats *st, const struct tl_pool_stats *ps)
{
	st->class_count = TL_STATS_CLASSES;
	for (unsigned i = 0; i < TL_STATS_CLASSES; i++) {
		const struct tl_pool_class_stats *c = &ps->classes[i + 1];
		st->classes[i] = (struct tl_stats_class){
			.block_size = tl_class_size[i + 1],
			.pages = c->pages,
			.blocks_carved = c->carved,
			.blocks_live = c->live,
		};
		st->class_ops[i] = (struct tl_stats_class_ops){
			.allocs = c->allocs,
			.frees = c->allocs > c->live ? c->allocs - c->live : 0,
		};
	}
}

void tl_stats_counted(struct tl_pool_stats *ps)
{
	tl_heap *heap = tl_heap_local;
	if (tl_heap_is_thread_heap(heap)) {
		tl_kept_flush(heap);	/* its counts exact */
		tl_heap_collect_all(heap, false);
	}
	tl_shared_collect(false);
	tl_pool_stats_get(ps);
	tl_purger_poll();	/* the collects may have given pages back */
}

static void snapshot(struct tl_stats *st)
{
	struct tl_pool_stats ps;
	tl_stats_counted(&ps);
	*st = (struct tl_stats){
		.version = TL_STATS_VERSION,
		.mapped = ps.mapped,
		.held = ps.held,
		.live = ps.live,
		.purged = ps.purged,
		.segments = ps.segments,
		.segments_unmapped = ps.segments_unmapped,
		.threads_seen = ps.threads_seen,
		.threads_live = ps.threads_live,
		.lock_acquired = ps.lock_acquired,
		.lock_waited = ps.lock_waited,
		.pages_abandoned = ps.pages_abandoned,
		.pages_free = ps.pages_free,
		.huge_blocks = ps.huge_blocks,
		.huge_bytes = ps.huge_bytes,
		.huge_cached = ps.huge_cached,
		.mapped_peak = ps.mapped_peak,
		.segments_peak = ps.segments_peak,
		.remote_frees = ps.remote_frees,
		.class_ops_counted = TL_COUNTS,
	};
	copy_classes(st, &ps);
	struct tl_profile_stats prof;
	tl_profile_stats_get(&prof);
	st->profile_samples = prof.samples;
	st->profile_samples_total = prof.samples_total;
	st->profile_dropped = prof.dropped;
	st->profile_held = prof.held;
	struct tl_guarded_stats g;
	tl_guarded_stats_get(&g);
	st->guarded_live = g.live;
	st->guarded_total = g.total;
	st->guarded_missed = g.missed;
	st->guarded_mapped = g.mapped;
	st->pages_given_away = ps.pages_given_away;
}

size_t tl_stats_get(struct tl_stats *out, size_t size)
{
	struct tl_stats st;
	if (out == NULL || size < sizeof(st.version))
		return 0;
	snapshot(&st);
	if (size > sizeof(st))
		size = sizeof(st);
	memcpy(out, &st, size);
	return size;
}

/* ---- text without allocating ---- */

/*
 * Text goes into buf (cap bytes); total counts everything produced.  When
 * buf is full, a printing out flushes it to stderr, any other drops the
 * rest (and total still counts it).
 */
struct out {
	char *buf;
	size_t cap;
	size_t n;
	size_t total;
	bool flush;
};

static void put_mem(struct out *o, const char *s, size_t len)
{
	o->total += len;
	while (len > 0) {
		if (o->n == o->cap) {
			if (!o->flush)
				return;
			tl_write_stderr(o->buf, o->n);
			o->n = 0;
		}
		size_t k = o->cap - o->n < len ? o->cap - o->n : len;
		memcpy(o->buf + o->n, s, k);
		o->n += k;
		s += k;
		len -= k;
	}
}

static void put(struct out *o, const char *s)
{
	put_mem(o, s, strlen(s));
}

/* v in decimal, right-aligned in width columns (0: as long as needed). */
static void put_u64_w(struct out *o, uint64_t v, unsigned width)
{
	char digits[TL_FORMAT_MAX];
	size_t d = tl_format_u64(digits, v, 10);
	for (; width > d; width--)
		put_mem(o, " ", 1);
	put_mem(o, digits, d);
}

static void put_u64(struct out *o, uint64_t v)
{
	put_u64_w(o, v, 0);
}

/* Bytes as KiB with one decimal. */
static void put_kib(struct out *o, uint64_t bytes)
{
	put_u64(o, bytes / 1024);
	put(o, ".");
	put_u64(o, (bytes % 1024) * 10 / 1024);
}

/* ---- JSON ---- */

static void json_field(struct out *o, const char *key, uint64_t v)
{
	put(o, ",\"");
	put(o, key);
	put(o, "\":");
	put_u64(o, v);
}

static void json_class(struct out *o, const struct tl_stats_class *c,
		       const struct tl_stats_class_ops *ops, bool first)
{
	put(o, first ? "{\"block_size\":" : ",{\"block_size\":");
	put_u64(o, c->block_size);
	json_field(o, "pages", c->pages);
	json_field(o, "blocks_carved", c->blocks_carved);
	json_field(o, "blocks_live", c->blocks_live);
	json_field(o, "allocs", ops->allocs);
	json_field(o, "frees", ops->frees);
	put(o, "}");
}

/* A class appears once it has pages or counted allocations. */
static bool class_shown(const struct tl_stats *st, unsigned i)
{
	return st->classes[i].pages != 0 || st->class_ops[i].allocs != 0;
}

static void json_write(struct out *o, const struct tl_stats *st)
{
	put(o, "{\"version\":");
	put_u64(o, st->version);
	json_field(o, "mapped", st->mapped);
	json_field(o, "held", st->held);
	json_field(o, "live", st->live);
	json_field(o, "purged", st->purged);
	json_field(o, "segments", st->segments);
	json_field(o, "segments_unmapped", st->segments_unmapped);
	json_field(o, "threads_seen", st->threads_seen);
	json_field(o, "threads_live", st->threads_live);
	json_field(o, "lock_acquired", st->lock_acquired);
	json_field(o, "lock_waited", st->lock_waited);
	json_field(o, "pages_abandoned", st->pages_abandoned);
	json_field(o, "pages_free", st->pages_free);
	json_field(o, "huge_blocks", st->huge_blocks);
	json_field(o, "huge_bytes", st->huge_bytes);
	json_field(o, "huge_cached", st->huge_cached);
	json_field(o, "mapped_peak", st->mapped_peak);
	json_field(o, "segments_peak", st->segments_peak);
	json_field(o, "remote_frees", st->remote_frees);
	json_field(o, "class_ops_counted", st->class_ops_counted);
	json_field(o, "profile_samples", st->profile_samples);
	json_field(o, "profile_samples_total", st->profile_samples_total);
	json_field(o, "profile_dropped", st->profile_dropped);
	json_field(o, "profile_held", st->profile_held);
	json_field(o, "guarded_live", st->guarded_live);
	json_field(o, "guarded_total", st->guarded_total);
	json_field(o, "guarded_missed", st->guarded_missed);
	json_field(o, "guarded_mapped", st->guarded_mapped);
	json_field(o, "pages_given_away", st->pages_given_away);
	put(o, ",\"classes\":[");
	bool first = true;
	for (unsigned i = 0; i < st->class_count; i++) {
		if (!class_shown(st, i))
			continue;
		json_class(o, &st->classes[i], &st->class_ops[i], first);
		first = false;
	}
	put(o, "]}");
}

size_t tl_stats_json(char *buf, size_t size)
{
	struct tl_stats st;
	struct out o = { .buf = buf, .cap = size > 0 ? size - 1 : 0 };
	snapshot(&st);
	json_write(&o, &st);
	if (size > 0)
		buf[o.n] = '\0';
	return o.total;
}

/* ---- printed for a person ---- */

static void line_kib(struct out *o, const char *label, uint64_t bytes,
		     const char *note)
{
	put(o, label);
	put_kib(o, bytes);
	put(o, " KiB");
	put(o, note);
}

static void print_counts(struct out *o, const struct tl_stats *st)
{
	put(o, "  segments: ");
	put_u64(o, st->segments);
	put(o, " mapped (at most ");
	put_u64(o, st->segments_peak);
	put(o, "), ");
	put_u64(o, st->segments_unmapped);
	put(o, " unmapped by purges\n  pages:   ");
	put_u64(o, st->pages_free);
	put(o, " free in the pool, ");
	put_u64(o, st->pages_abandoned);
	put(o, " abandoned by exited threads, ");
	put_u64(o, st->pages_given_away);
	put(o, " given away by waiting ones\n  huge:    ");
	put_u64(o, st->huge_blocks);
	put(o, " blocks, ");
	put_kib(o, st->huge_bytes);
	put(o, " KiB; ");
	put_kib(o, st->huge_cached);
	put(o, " KiB cached for reuse\n  threads: ");
	put_u64(o, st->threads_seen);
	put(o, " seen, ");
	put_u64(o, st->threads_live);
	put(o, " live; ");
	put_u64(o, st->remote_frees);
	put(o, " frees from other threads\n  pool lock: ");
	put_u64(o, st->lock_acquired);
	put(o, " acquisitions, ");
	put_u64(o, st->lock_waited);
	put(o, " had to wait\n");
	if (st->guarded_mapped != 0) {
		put(o, "  guarded sampling: ");
		put_u64(o, st->guarded_live);
		put(o, " blocks live, ");
		put_u64(o, st->guarded_total);
		put(o, " guarded, ");
		put_u64(o, st->guarded_missed);
		put(o, " samples found no slot\n");
	}
	if (st->profile_samples_total == 0 && st->profile_held == 0)
		return;
	put(o, "  heap profile: ");
	put_u64(o, st->profile_samples);
	put(o, " samples live, ");
	put_u64(o, st->profile_samples_total);
	put(o, " taken, ");
	put_u64(o, st->profile_dropped);
	put(o, " dropped; ");
	put_kib(o, st->profile_held);
	put(o, " KiB mapped for its tables\n");
}

/* One line per class shown: its size, pages, blocks, allocations and
 * frees (when counted) and live bytes. */
static void print_classes(struct out *o, const struct tl_stats *st)
{
	put(o, "  size class   pages     carved       live");
	put(o, st->class_ops_counted ? "       allocs        frees   live KiB\n"
				     : "   live KiB  (allocs, frees: not "
				       "counted by libtlmalloc-fast)\n");
	for (unsigned i = 0; i < st->class_count; i++) {
		const struct tl_stats_class *c = &st->classes[i];
		if (!class_shown(st, i))
			continue;
		put(o, "  ");
		put_u64_w(o, c->block_size, 10);
		put_u64_w(o, c->pages, 8);
		put_u64_w(o, c->blocks_carved, 11);
		put_u64_w(o, c->blocks_live, 11);
		if (st->class_ops_counted) {
			put_u64_w(o, st->class_ops[i].allocs, 13);
			put_u64_w(o, st->class_ops[i].frees, 13);
		}
		put(o, " ");
		put_u64_w(o, c->blocks_live * c->block_size / 1024, 8);
		put(o, ".");
		put_u64(o, (c->blocks_live * c->block_size % 1024) * 10 / 1024);
		put(o, "\n");
	}
}

void tl_stats_print(void)
{
	struct tl_stats st;
	char buf[2048];
	struct out o = { .buf = buf, .cap = sizeof(buf), .flush = true };
	snapshot(&st);
	put(&o, "tlmalloc ");
	put(&o, tl_version());
	put(&o, " statistics\n");
	line_kib(&o, "  mapped:  ", st.mapped, " of address space (at most ");
	put_kib(&o, st.mapped_peak);
	put(&o, " KiB)\n");
	line_kib(&o, "  held:    ", st.held, " touched and not given back\n");
	line_kib(&o, "  live:    ", st.live, " in blocks handed out\n");
	line_kib(&o, "  purged:  ", st.purged, " given back with madvise, in all\n");
	print_counts(&o, &st);
	print_classes(&o, &st);
	tl_write_stderr(o.buf, o.n);
}
