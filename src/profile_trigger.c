/*
 * profile_trigger.c - the heap profiler's set-up and when it writes a
 * profile (docs/profiling.md): the file (TLMALLOC_PROFILE_FILE, checked
 * writable at set-up), the tables mapped on first use, and the dumps: at
 * exit with the leak report, FILE.N on the signal the user chose
 * (profile_signal) or when the sampled live heap has grown by
 * profile_growth MiB (tl_prof_record_locked), and the lock across fork.
 *
 * A signal's handler writes its dump at once when it can take the lock,
 * else leaves it pending for the next refill of a sampling thread (the
 * lock's holder may be the very thread it interrupted).
 */
#include <errno.h>
#include <string.h>

#include "tlmalloc.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"
#include "tlmalloc/profiler.h"

struct tl_prof tl_prof = { .lock = TL_LOCK_INIT };
static tl_page *blocks_direct[TL_DIRECT_SLOTS];

/* One line on stderr: "tlmalloc: " a b c d. */
static void warn(const char *a, const char *b, const char *c, const char *d)
{
	char buf[PROF_PATH_MAX + 256];
	size_t n = 0;
	const char *parts[] = { "tlmalloc: ", a, b, c, d, "\n" };
	for (size_t i = 0; i < 6; i++)
		n = tl_append(buf, n, sizeof(buf), parts[i]);
	tl_write_stderr(buf, n);
}

/* Why a profile's file cannot be written, for the warning at set-up. */
static const char *error_text(int err)
{
	switch (err) {
	case EACCES: return "permission denied; heap profiling off";
	case ENOENT: return "no such directory; heap profiling off";
	case ENOTDIR: return "not a directory; heap profiling off";
	case EROFS: return "read-only file system; heap profiling off";
	case EISDIR: return "is a directory; heap profiling off";
	case ENOSPC: return "no space left; heap profiling off";
	case ENAMETOOLONG: return "name too long; heap profiling off";
	default: return "cannot be written; heap profiling off";
	}
}

static size_t put_decimal(char *out, uint64_t v)
{
	return tl_format_u64(out, v, 10);
}

/* The dump's path: tl_prof.path with %p as the process id, then ".seq" for a
 * numbered dump (seq > 0).  False if it does not fit. */
static bool expand_path(char *out, uint32_t seq)
{
	size_t n = 0;
	for (const char *s = tl_prof.path; *s != '\0'; s++) {
		if (n + 32 > PROF_PATH_MAX)
			return false;
		if (s[0] == '%' && s[1] == 'p') {
			n += put_decimal(out + n, (uint64_t)tl_os_getpid());
			s++;
		} else {
			out[n++] = *s;
		}
	}
	if (seq > 0) {
		out[n++] = '.';
		n += put_decimal(out + n, seq);
	}
	out[n] = '\0';
	return true;
}

extern char **environ;

static void read_path(void)
{
	static const char name[] = "TLMALLOC_PROFILE_FILE=";
	const char *value = "tlmalloc.%p.heap";
	for (char **e = environ; e != NULL && *e != NULL; e++)
		if (strncmp(*e, name, sizeof(name) - 1) == 0 &&
		    (*e)[sizeof(name) - 1] != '\0')
			value = *e + sizeof(name) - 1;
	size_t len = strlen(value);
	if (len + 32 >= PROF_PATH_MAX) {
		warn("TLMALLOC_PROFILE_FILE: ", "too long", "",
		     "; heap profiling off");
		tl_prof.path[0] = '\0';
		return;
	}
	memcpy(tl_prof.path, value, len + 1);
}

/* The exit dump's file can be written (it is created, empty, now). */
static bool path_writable(void)
{
	char path[PROF_PATH_MAX];
	if (tl_prof.path[0] == '\0' || !expand_path(path, 0))
		return false;
	int fd = tl_os_open(path, true);
	if (fd < 0) {
		warn("heap profile '", path, "': ", error_text(-fd));
		return false;
	}
	tl_os_close(fd);
	return true;
}

/* Map the tables (tl_prof.lock held); false, with profiling off, if refused. */
bool tl_prof_setup_locked(void)
{
	if (tl_prof.setup)
		return tl_prof.stacks != NULL;
	tl_prof.setup = true;
	tl_prof.pid = tl_os_getpid();
	if (!TL_HAVE_UNWIND) {
		warn("heap profile: ", "this build has no stack unwinder "
		     "(libgcc's _Unwind_Backtrace did not link)", "",
		     "; heap profiling off");
		goto off;
	}
	if (tl_prof.path[0] == '\0')
		read_path();
	if (!path_writable())
		goto off;
	size_t ss = sizeof(struct prof_stack) * PROF_STACKS;
	size_t sa = sizeof(struct prof_sample) * PROF_SAMPLES;
	tl_prof.stacks = tl_os_map(ss);
	tl_prof.samples = tl_os_map(sa);
	if (tl_prof.stacks == NULL || tl_prof.samples == NULL) {
		warn("heap profile: ", "out of memory for its tables", "",
		     "; heap profiling off");
		if (tl_prof.stacks != NULL)
			tl_os_unmap(tl_prof.stacks, ss);
		if (tl_prof.samples != NULL)
			tl_os_unmap(tl_prof.samples, sa);
		tl_prof.stacks = NULL;
		tl_prof.samples = NULL;
		goto off;
	}
	tl_prof.held = ss + sa;
	tl_heap_init(&tl_profile_blocks, blocks_direct,
		     (uintptr_t)&tl_profile_blocks);
	return true;
off:
	tl_option_set("profile", 0);
	return false;
}

static void on_signal(int sig);

TL_EVERY_PROCESS void tl_profile_init(void)
{
	long sig = tl_option(TL_OPT_profile_signal);
	if (sig != 0 && !tl_os_catch_signal((int)sig, on_signal)) {
		char num[24];
		num[put_decimal(num, (uint64_t)sig)] = '\0';
		warn("TLMALLOC_PROFILE_SIGNAL=", num,
		     ": the signal has a handler already (or cannot have one)",
		     "; heap profiling off");
		tl_option_set("profile", 0);
		return;
	}
	if (!tl_profile_wanted())
		return;
	tl_lock_acquire(&tl_prof.lock);
	tl_prof_setup_locked();
	tl_lock_release(&tl_prof.lock);
}

/* ---- dumps ---- */

/* FILE.N, for a signal or the heap's growth (tl_prof.lock held). */
bool tl_prof_dump_numbered_locked(void)
{
	char path[PROF_PATH_MAX];
	tl_u32_store_relaxed(&tl_prof.dump_pending, 0);
	if (!tl_prof.setup || tl_prof.stacks == NULL ||
	    !expand_path(path, ++tl_prof.seq))
		return false;
	int err = tl_prof_dump_to_locked(path);
	if (err != 0)
		warn("heap profile '", path, "': not written", "");
	return err == 0;
}

/* A signal's dump: written now unless the lock is held (by the thread the
 * signal interrupted, maybe); then at the next sample or refill. */
static void on_signal(int sig)
{
	(void)sig;
	tl_u32_store_relaxed(&tl_prof.dump_pending, 1);
	uint32_t unlocked = 0;
	if (tl_u32_cas_strong_acquire(&tl_prof.lock.state, &unlocked, 1)) {
		tl_prof_dump_numbered_locked();
		tl_lock_release(&tl_prof.lock);
	}
}

void tl_prof_dump_pending(void)
{
	tl_lock_acquire(&tl_prof.lock);
	if (tl_u32_load_relaxed(&tl_prof.dump_pending) != 0)
		tl_prof_dump_numbered_locked();
	tl_lock_release(&tl_prof.lock);
}

/*
 * At exit: the profile to FILE and the leak report, in the process that
 * set the profiler up (a child of fork writes its own only when FILE has
 * %p).  Registered at start-up (init.c) whether or not profiling is on.
 */
TL_EVERY_PROCESS void tl_profile_at_exit(void)
{
	char path[PROF_PATH_MAX];
	tl_lock_acquire(&tl_prof.lock);
	if (tl_prof.stacks != NULL &&
	    (tl_prof.pid == tl_os_getpid() ||
	     strstr(tl_prof.path, "%p") != NULL) &&
	    expand_path(path, 0)) {
		int err = tl_prof_dump_to_locked(path);
		if (err != 0)
			warn("heap profile '", path, "': not written", "");
		tl_prof_leak_report_locked(err == 0 ? path : NULL);
	}
	tl_lock_release(&tl_prof.lock);
}

/* ---- fork ---- */

TL_EVERY_PROCESS void tl_profile_fork_prepare(void)
{
	tl_lock_acquire(&tl_prof.lock);
}

TL_EVERY_PROCESS void tl_profile_fork_parent(void)
{
	tl_lock_release(&tl_prof.lock);
}

TL_EVERY_PROCESS void tl_profile_fork_child(void)
{
	tl_lock_reset(&tl_prof.lock);
	tl_lock_reset(&tl_profile_blocks.full_lock);
}
