/*
 * stats.c - what tlmalloc holds and does, printed for a person
 * (tl_stats_print, and at exit with the show_stats option).
 *
 * The figures are a snapshot of the pool (see tl_pool_stats_get): memory
 * mapped, held and live, what purges gave back, threads, and the pool
 * lock.  Written with write(2) and a formatter of its own: printing
 * allocates nothing, so it works at exit and from any state.
 */
#include <string.h>

#include "tlmalloc.h"
#include "tlmalloc/internal.h"
#include "tlmalloc/os.h"

struct out {
	char buf[1024];
	size_t n;
};

static void put(struct out *o, const char *s)
{
	size_t len = strlen(s);
	if (len > sizeof(o->buf) - o->n)
		len = sizeof(o->buf) - o->n;
	memcpy(o->buf + o->n, s, len);
	o->n += len;
}

static void put_u64(struct out *o, uint64_t v)
{
	char digits[24];
	size_t d = 0;
	do {
		digits[d++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	while (d > 0 && o->n < sizeof(o->buf))
		o->buf[o->n++] = digits[--d];
}

/* Bytes as KiB with one decimal. */
static void put_kib(struct out *o, uint64_t bytes)
{
	put_u64(o, bytes / 1024);
	put(o, ".");
	put_u64(o, (bytes % 1024) * 10 / 1024);
	put(o, " KiB");
}

static void line_kib(struct out *o, const char *label, uint64_t bytes,
		     const char *note)
{
	put(o, label);
	put_kib(o, bytes);
	put(o, note);
}

void tl_stats_print(void)
{
	struct tl_pool_stats st;
	struct out o = { .n = 0 };
	tl_pool_stats_get(&st);
	put(&o, "tlmalloc ");
	put(&o, tl_version());
	put(&o, " statistics\n");
	line_kib(&o, "  mapped:  ", st.mapped, " of address space\n");
	line_kib(&o, "  held:    ", st.held, " touched and not given back\n");
	line_kib(&o, "  live:    ", st.live, " in blocks handed out\n");
	line_kib(&o, "  purged:  ", st.purged, " given back with madvise, in all\n");
	put(&o, "  segments: ");
	put_u64(&o, st.segments);
	put(&o, " mapped, ");
	put_u64(&o, st.segments_unmapped);
	put(&o, " unmapped by purges\n  threads: ");
	put_u64(&o, st.threads_seen);
	put(&o, " seen, ");
	put_u64(&o, st.threads_live);
	put(&o, " live\n  pool lock: ");
	put_u64(&o, st.lock_acquired);
	put(&o, " acquisitions, ");
	put_u64(&o, st.lock_waited);
	put(&o, " had to wait\n");
	tl_os_write_stderr(o.buf, o.n);
}
