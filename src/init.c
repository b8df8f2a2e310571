/*
 * init.c - the process around the heaps: initialisation, thread exit, fork
 * and the purger thread.
 *
 * Initialisation allocates nothing, uses no stdio and no dlsym: it creates
 * the thread-exit key and registers the fork handlers, and may run from the
 * first malloc of the dynamic loader's or libc's start-up, before any
 * constructor.  A call that re-enters malloc while it runs (or that comes
 * from another thread meanwhile) goes on without waiting.
 *
 * Thread exit: the key's destructor parks the heap (tl_heap_park) or hands
 * it back (tl_heap_destroy), and the thread sees tl_heap_exiting: a malloc
 * from a later destructor (of another key, in this or a later round) takes
 * a block from the shared heap, whose blocks anyone may free, instead of
 * making a heap that no destructor would hand back.
 *
 * fork: the prepare handler takes the lock baseline's lock and the pool
 * lock, so no other thread holds them at the fork; the child resets them.
 *
 * Purger: only in a program that has threads already (a single-threaded
 * program never gets one), a detached thread purges due pages while there
 * are any, then exits; the next page given back starts it again.  The pool
 * only asks for it (tl_purger_wake): pthread_create allocates, and a malloc
 * in the middle of a heap's sweep, or under the shared heap's lock, would
 * re-enter what is half done.  The slow paths start it on their way out
 * (tl_purger_poll): those that can have asked for it (a free into another
 * thread's page only after it gave a page away: free.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "tlmalloc.h"
#include "tlmalloc/guarded.h"
#include "tlmalloc/internal.h"
#include "tlmalloc/kept.h"
#include "tlmalloc/options.h"
#include "tlmalloc/os.h"
#include "tlmalloc/profile.h"

enum { INIT_NONE, INIT_RUNNING, INIT_DONE };
static tl_atomic_u32 init_state;
static pthread_key_t heap_key;
static tl_atomic_u32 purger_running;
tl_atomic_u32 tl_purger_wanted;

static void thread_exit(void *arg)
{
	tl_heap *heap = arg;
	tl_heap_set_local(&tl_heap_exiting);
	/* first: its kept blocks go back while it owns its pages, some of
	 * them perhaps theirs (a heap that never kept has none: its
	 * kept_bytes was 0 since its creation) */
	if (heap->kept_bytes != 0) {
		heap->kept_bytes = 0;
		tl_kept_flush(heap);
	}
#if TL_SECURE
	/* its blocks freed for real while the heap still owns its pages */
	tl_quarantine_flush(heap);
#endif
	if (tl_heap_park(heap)) {
		tl_pool_park_heap(heap);
	} else {
		tl_heap_destroy(heap);
		tl_pool_heap_free(heap);
	}
	tl_purger_poll();
}

static void fork_prepare(void)
{
	tl_profile_fork_prepare();	/* taken before the pool lock */
	tl_shared_fork_prepare();
	tl_pool_fork_prepare();
}

static void fork_parent(void)
{
	tl_pool_fork_parent();
	tl_shared_fork_parent();
	tl_profile_fork_parent();
}

static void fork_child(void)
{
	tl_pool_fork_child(tl_shared_heap_id(), tl_profile_heap_id());
	tl_heap_fork_child();
	tl_shared_fork_child();
	tl_profile_fork_child();
	tl_u32_store_relaxed(&purger_running, 0);
	tl_u32_store_relaxed(&tl_purger_wanted, 0);
}

/*
 * glibc's atexit and pthread_atfork are stubs in libc_nonshared.a over
 * __cxa_atexit and __register_atfork, linked after all of the library's
 * code: called directly, start-up touches none of the code at the end
 * (design.md, "What a preload costs").
 */
#if defined(__GLIBC__)
extern void *__dso_handle;
int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
int __register_atfork(void (*prepare)(void), void (*parent)(void),
		      void (*child)(void), void *dso);
#define AT_EXIT(fn) __cxa_atexit(fn, NULL, __dso_handle)
#define AT_FORK(prepare, parent, child) \
	__register_atfork(prepare, parent, child, __dso_handle)
#define EXIT_ARG void *arg
#define EXIT_ARG_UNUSED (void)arg
#else
#define AT_EXIT(fn) atexit(fn)
#define AT_FORK(prepare, parent, child) pthread_atfork(prepare, parent, child)
#define EXIT_ARG void
#define EXIT_ARG_UNUSED
#endif

static void exit_profile(EXIT_ARG)
{
	EXIT_ARG_UNUSED;
	tl_profile_at_exit();	/* does nothing unless it profiled */
}

static void exit_stats(EXIT_ARG)
{
	EXIT_ARG_UNUSED;
	tl_stats_print();
}

void tl_process_init(void)
{
	uint32_t state = INIT_NONE;
	/* acquire: INIT_DONE publishes what init wrote (the page size, the
	 * options, heap_key), read by a thread that did not run it */
	if (tl_likely(tl_u32_load_acquire(&init_state) == INIT_DONE))
		return;
	if (!tl_u32_cas_strong_acquire(&init_state, &state, INIT_RUNNING))
		return;
	tl_os_page_size();
	tl_options_init();
	tl_profile_init();
	tl_segment_shadow_objects();
	tl_guarded_init();
	tl_fault_init();
	AT_EXIT(exit_profile);
	if (tl_option(TL_OPT_show_stats))
		AT_EXIT(exit_stats);
	/* reports due at exit: a program may close its stderr before */
	if (tl_option(TL_OPT_show_stats) || tl_option(TL_OPT_profile))
		tl_stderr_keep();
	pthread_key_create(&heap_key, thread_exit);
	AT_FORK(fork_prepare, fork_parent, fork_child);
	tl_u32_store_release(&init_state, INIT_DONE);
}

/*
 * The library's DT_FINI (-Wl,-fini=tl_fini, src/CMakeLists.txt) instead
 * of _fini, which the link puts after all the code (and does nothing: the
 * destructors run from .fini_array): the exit of every process then
 * touches no page of the rarely run code (design.md, "What a preload
 * costs").
 */
TL_EVERY_PROCESS void tl_fini(void);
TL_EVERY_PROCESS void tl_fini(void)
{
}

__attribute__((constructor)) static void tl_constructor(void)
{
	tl_process_init();
}

void tl_thread_register(tl_heap *heap)
{
	if (tl_u32_load_acquire(&init_state) == INIT_DONE)	/* heap_key */
		pthread_setspecific(heap_key, heap);
}

static void *purger_main(void *arg)
{
	(void)arg;
	for (;;) {
		while (tl_pool_purge_pending()) {
			uint32_t zero = 0;
			tl_os_futex_wait_ms(&zero, 0,
					    (uint64_t)tl_option(TL_OPT_purge_delay) + 1);
			tl_pool_purge(false);
		}
		tl_u32_store_release(&purger_running, 0);
		/* A page given back between the check and the store saw us
		 * running and started nobody: go on if we can. */
		uint32_t expected = 0;
		if (!tl_pool_purge_pending() ||
		    !tl_u32_cas_strong_acquire(&purger_running, &expected, 1))
			return NULL;
	}
}

void tl_purger_wake(void)
{
	if (tl_u32_load_relaxed(&purger_running) == 0)
		tl_u32_store_relaxed(&tl_purger_wanted, 1);
}

void tl_purger_start(void)
{
	uint32_t expected = 0;
	tl_u32_store_relaxed(&tl_purger_wanted, 0);
	if (tl_u32_load_relaxed(&purger_running) != 0 ||
	    !tl_u32_cas_strong_acquire(&purger_running, &expected, 1))
		return;
	pthread_attr_t attr;
	pthread_t thread;
	int saved = errno;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	if (pthread_create(&thread, &attr, purger_main, NULL) != 0)
		tl_u32_store_relaxed(&purger_running, 0);
	pthread_attr_destroy(&attr);
	errno = saved;
}
