/*
 * shared_heap.c - the shared heap: one heap of tlmalloc's own heap code
 * used by every thread behind one futex lock.
 *
 * It serves threads past their exit destructor (tl_heap_exiting), whose
 * allocations must not build a new heap, and the lock baseline of the
 * comparison API (ts_malloc.c).  Its pages are owned by it, so a block
 * freed with plain free() from any thread is a remote free that the
 * shared heap collects, under its lock, when it runs dry.
 */
#include "tlmalloc/fastpath.h"

static tl_lock shared_lock = TL_LOCK_INIT;
static tl_heap shared_heap;
static tl_page *shared_direct[TL_DIRECT_SLOTS];
static bool shared_ready;	/* under shared_lock */

static tl_heap *shared_heap_locked(void)
{
	if (tl_unlikely(!shared_ready)) {
		tl_process_init();
		tl_heap_init(&shared_heap, shared_direct,
			     (uintptr_t)&shared_heap);
		shared_ready = true;
	}
	return &shared_heap;
}

uintptr_t tl_shared_heap_id(void)
{
	return (uintptr_t)&shared_heap;
}

void *tl_shared_malloc(size_t size)
{
	tl_lock_acquire(&shared_lock);
	void *p = tl_heap_malloc_counted(shared_heap_locked(), size);
	tl_lock_release(&shared_lock);
	return p;
}

void tl_shared_collect(bool release)
{
	tl_lock_acquire(&shared_lock);
	if (shared_ready)
		tl_heap_collect_all(&shared_heap, release);
	tl_lock_release(&shared_lock);
}

void tl_shared_free(void *p)
{
	tl_lock_acquire(&shared_lock);
	tl_heap_free(shared_heap_locked(), p);
	tl_lock_release(&shared_lock);
}

void tl_shared_fork_prepare(void)
{
	tl_lock_acquire(&shared_lock);
}

void tl_shared_fork_parent(void)
{
	tl_lock_release(&shared_lock);
}

void tl_shared_fork_child(void)
{
	tl_lock_reset(&shared_lock);
	tl_lock_reset(&shared_heap.full_lock);
}
