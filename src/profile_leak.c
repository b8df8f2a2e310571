/*
 * profile_leak.c - the leak report at exit (docs/profiling.md, "The leak
 * report"): the sampled blocks still allocated, grouped by stack, largest
 * first, as estimated bytes and counts, on stderr, with each frame named
 * by dladdr ("function+0xoff (object)"; tl_profile_append_frame, also
 * used by guarded sampling's reports).
 */
#define _GNU_SOURCE	/* dladdr */
#include <dlfcn.h>
#include <string.h>

#include "tlmalloc/os.h"
#include "tlmalloc/profiler.h"

/* One frame as "function+0xoff (object)", or the address. */
size_t tl_profile_append_frame(char *buf, size_t n, size_t cap, uintptr_t pc)
{
	Dl_info info;
	if (dladdr((void *)(pc - 1), &info) != 0 && info.dli_fname != NULL) {
		const char *obj = strrchr(info.dli_fname, '/');
		obj = obj != NULL ? obj + 1 : info.dli_fname;
		if (info.dli_sname != NULL) {
			n = tl_append(buf, n, cap, info.dli_sname);
			n = tl_append(buf, n, cap, "+");
			n = tl_append_u64(buf, n, cap,
					  pc - (uintptr_t)info.dli_saddr, 16);
		} else {
			n = tl_append_u64(buf, n, cap,
					  pc - (uintptr_t)info.dli_fbase, 16);
		}
		n = tl_append(buf, n, cap, " (");
		n = tl_append(buf, n, cap, obj);
		return tl_append(buf, n, cap, ")");
	}
	return tl_append_u64(buf, n, cap, pc, 16);
}

#define LEAK_LINES 5
#define LEAK_FRAMES 6

void tl_prof_leak_report_locked(const char *path)
{
	char buf[2048];
	size_t cap = sizeof(buf) - 1, n = 0;
	int top[LEAK_LINES];
	unsigned shown = 0, stacks = 0;
	double lc = 0, lb = 0;
	for (uint32_t i = 0; i < PROF_STACKS; i++) {
		const struct prof_stack *st = &tl_prof.stacks[i];
		if (st->hash == 0 || tl_prof_rounded(st->live_bytes) == 0)
			continue;
		stacks++;
		lc += st->live_count;
		lb += st->live_bytes;
		/* keep the LEAK_LINES largest, largest first */
		unsigned at = shown < LEAK_LINES ? shown++ : LEAK_LINES;
		while (at > 0 && tl_prof.stacks[top[at - 1]].live_bytes < st->live_bytes) {
			if (at < LEAK_LINES)
				top[at] = top[at - 1];
			at--;
		}
		if (at < LEAK_LINES)
			top[at] = (int)i;
	}
	n = tl_append(buf, n, cap, "tlmalloc: leak report: ");
	if (stacks == 0) {
		n = tl_append(buf, n, cap, "no sampled block is still allocated "
					"at exit");
	} else {
		n = tl_append(buf, n, cap, "about ");
		n = tl_append_u64(buf, n, cap, tl_prof_rounded(lb), 10);
		n = tl_append(buf, n, cap, " bytes in ");
		n = tl_append_u64(buf, n, cap, tl_prof_rounded(lc), 10);
		n = tl_append(buf, n, cap, " blocks still allocated at exit, from ");
		n = tl_append_u64(buf, n, cap, stacks, 10);
		n = tl_append(buf, n, cap, " stacks (estimates from samples, 1 per ");
		n = tl_append_u64(buf, n, cap,
				  (uint64_t)tl_option(TL_OPT_profile_rate), 10);
		n = tl_append(buf, n, cap, " bytes on average); probably leaked:");
	}
	buf[n++] = '\n';
	tl_write_stderr(buf, n);
	for (unsigned k = 0; k < shown; k++) {
		const struct prof_stack *st = &tl_prof.stacks[top[k]];
		n = tl_append(buf, 0, cap, "tlmalloc:   about ");
		n = tl_append_u64(buf, n, cap, tl_prof_rounded(st->live_bytes), 10);
		n = tl_append(buf, n, cap, " bytes in ");
		n = tl_append_u64(buf, n, cap, tl_prof_rounded(st->live_count), 10);
		n = tl_append(buf, n, cap, " blocks at ");
		for (unsigned f = 0; f < st->depth && f < LEAK_FRAMES; f++) {
			if (f > 0)
				n = tl_append(buf, n, cap, " <- ");
			n = tl_profile_append_frame(buf, n, cap, st->pc[f]);
		}
		buf[n++] = '\n';
		tl_write_stderr(buf, n);
	}
	if (path != NULL) {
		n = tl_append(buf, 0, cap, "tlmalloc: heap profile written to ");
		n = tl_append(buf, n, cap, path);
		n = tl_append(buf, n, cap, " (pprof -inuse_space shows the live "
					"blocks by stack)");
		buf[n++] = '\n';
		tl_write_stderr(buf, n);
	}
}
