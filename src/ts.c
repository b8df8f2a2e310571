/*
 * ts.c - the shared heap behind one lock, and the classic comparison API of
 * include/ts_malloc.h built on it.
 *
 * The shared heap also serves threads past their exit destructor
 * (tl_heap_exiting), whose allocations must not build a new heap.
 *
 * ts_malloc_lock/ts_free_lock run tlmalloc's own heap code on one heap
 * shared by every thread, behind one futex lock: the naive design, with the
 * lock as the only difference from the thread-local path, which
 * ts_malloc_nolock/ts_free_nolock are.  The shared heap's pages are owned
 * by it, so a block freed with plain free() from any thread is a remote
 * free that the shared heap collects, under its lock, when it runs dry.
 */
#include "ts_malloc.h"
#include "tlmalloc/fastpath.h"

static tl_lock ts_lock = TL_LOCK_INIT;
static tl_heap ts_heap;
static tl_page *ts_direct[TL_DIRECT_SLOTS];
static bool ts_ready;	/* under ts_lock */

static tl_heap *ts_heap_locked(void)
{
	if (tl_unlikely(!ts_ready)) {
		tl_process_init();
		tl_heap_init(&ts_heap, ts_direct, (uintptr_t)&ts_heap);
		ts_ready = true;
	}
	return &ts_heap;
}

uintptr_t tl_shared_heap_id(void)
{
	return (uintptr_t)&ts_heap;
}

void *tl_shared_malloc(size_t size)
{
	tl_lock_acquire(&ts_lock);
	void *p = tl_heap_malloc(ts_heap_locked(), size);
	tl_lock_release(&ts_lock);
	return p;
}

void tl_shared_collect(bool release)
{
	tl_lock_acquire(&ts_lock);
	if (ts_ready)
		tl_heap_collect_all(&ts_heap, release);
	tl_lock_release(&ts_lock);
}

void *ts_malloc_lock(size_t size)
{
	void *p = tl_shared_malloc(size);
	tl_purger_poll();
	return p;
}

void ts_free_lock(void *ptr)
{
	tl_lock_acquire(&ts_lock);
	tl_heap_free(ts_heap_locked(), ptr);
	tl_lock_release(&ts_lock);
	tl_purger_poll();
}

void *ts_malloc_nolock(size_t size)
{
	return tl_malloc_local(size);
}

void ts_free_nolock(void *ptr)
{
	tl_free_local(ptr);
}

unsigned long get_data_segment_size(void)
{
	struct tl_pool_stats st;
	tl_stats_counted(&st);
	return (unsigned long)st.held;
}

unsigned long get_data_segment_free_space_size(void)
{
	struct tl_pool_stats st;
	tl_stats_counted(&st);
	return (unsigned long)(st.held > st.live ? st.held - st.live : 0);
}

void tl_ts_fork_prepare(void)
{
	tl_lock_acquire(&ts_lock);
}

void tl_ts_fork_parent(void)
{
	tl_lock_release(&ts_lock);
}

void tl_ts_fork_child(void)
{
	tl_lock_reset(&ts_lock);
}
