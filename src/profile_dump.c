/*
 * profile_dump.c - the heap profile that pprof reads (docs/profiling.md):
 * gperftools' heap-profile text, a first line of totals ("heap profile:
 * live count: live bytes [allocated count: allocated bytes] @
 * heapprofile"), one such line per stack with its return addresses, then
 * the process's mappings (/proc/self/maps), from which pprof finds the
 * files to name the addresses with.
 *
 * Written under tl_prof.lock through a static buffer: no allocation, and
 * safe from the signal handler that takes the lock (profile_trigger.c).
 */
#include <errno.h>
#include <string.h>

#include "tlmalloc.h"
#include "tlmalloc/os.h"
#include "tlmalloc/profiler.h"

struct out {
	int fd;
	bool ok;
	size_t n;
	char buf[4096];
};

static void out_flush(struct out *o)
{
	if (o->n > 0 && o->ok)
		o->ok = tl_os_write_all(o->fd, o->buf, o->n);
	o->n = 0;
}

static void put(struct out *o, const char *s, size_t len)
{
	while (len > 0) {
		if (o->n == sizeof(o->buf))
			out_flush(o);
		size_t k = sizeof(o->buf) - o->n;
		if (k > len)
			k = len;
		memcpy(o->buf + o->n, s, k);
		o->n += k;
		s += k;
		len -= k;
	}
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void put_u64(struct out *o, uint64_t v)
{
	char tmp[24];
	put(o, tmp, tl_format_u64(tmp, v, 10));
}

static void put_hex(struct out *o, uintptr_t v)
{
	char tmp[TL_FORMAT_MAX];
	put(o, "0x", 2);
	put(o, tmp, tl_format_u64(tmp, v, 16));
}

/* "live count: live bytes [allocated count: allocated bytes]" */
static void put_counts(struct out *o, double lc, double lb, double ac,
		       double ab)
{
	put_u64(o, tl_prof_rounded(lc));
	puts_(o, ": ");
	put_u64(o, tl_prof_rounded(lb));
	puts_(o, " [");
	put_u64(o, tl_prof_rounded(ac));
	puts_(o, ": ");
	put_u64(o, tl_prof_rounded(ab));
	puts_(o, "]");
}

/* Write the profile to fd (tl_prof.lock held): the sampled live heap and the
 * sampled allocations since the start, per stack, then the mappings. */
static bool write_profile(int fd)
{
	static struct out o;	/* under tl_prof.lock: off the stack */
	o.fd = fd;
	o.ok = true;
	o.n = 0;
	double lc = 0, lb = 0, ac = 0, ab = 0;
	for (uint32_t i = 0; tl_prof.stacks != NULL && i < PROF_STACKS; i++) {
		const struct prof_stack *st = &tl_prof.stacks[i];
		if (st->hash == 0)
			continue;
		lc += st->live_count;
		lb += st->live_bytes;
		ac += st->alloc_count;
		ab += st->alloc_bytes;
	}
	puts_(&o, "heap profile: ");
	put_counts(&o, lc, lb, ac, ab);
	puts_(&o, " @ heapprofile\n");
	for (uint32_t i = 0; tl_prof.stacks != NULL && i < PROF_STACKS; i++) {
		const struct prof_stack *st = &tl_prof.stacks[i];
		if (st->hash == 0)
			continue;
		put_counts(&o, st->live_count, st->live_bytes, st->alloc_count,
			   st->alloc_bytes);
		puts_(&o, " @");
		for (unsigned k = 0; k < st->depth; k++) {
			puts_(&o, " ");
			put_hex(&o, st->pc[k]);
		}
		puts_(&o, "\n");
	}
	puts_(&o, "\nMAPPED_LIBRARIES:\n");
	int maps = tl_os_open("/proc/self/maps", false);
	if (maps >= 0) {
		char buf[1024];
		long n;
		while ((n = tl_os_read(maps, buf, sizeof(buf))) > 0)
			put(&o, buf, (size_t)n);
		tl_os_close(maps);
	}
	out_flush(&o);
	return o.ok;
}

int tl_prof_dump_to_locked(const char *path)
{
	int fd = tl_os_open(path, true);
	if (fd < 0)
		return -fd;
	bool ok = write_profile(fd);
	ok &= tl_os_close(fd);
	return ok ? 0 : EIO;
}

int tl_profile_dump(const char *path)
{
	if (path == NULL)
		return EINVAL;
	tl_lock_acquire(&tl_prof.lock);
	int err = tl_prof_dump_to_locked(path);
	tl_lock_release(&tl_prof.lock);
	return err;
}
